/* run_cuda.c: the `cuda` backend of `fusec run`: compile the graph (search, PTX,
 * plan) into a private temporary folder, then run the plan on GPU 0 through the
 * runtime (lib/fusecrt.h), which reaches the driver through dlopen. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../codegen/plan.h"
#include "../lib/fusecrt.h"
#include "run.h"

typedef struct {
	char dir[256];
	char plan[640], ptx[640];
	RtNamed *out;
} CudaState;

static int write_file(const char *path, const char *text, size_t len, Diag *d)
{
	FILE *f = fopen(path, "w");
	if (!f || fwrite(text, 1, len, f) != len || fclose(f)) {
		diag_set(d, path, 0, 0, "cannot write the compiled plan");
		return -1;
	}
	return 0;
}

static int cuda_prepare(RunCtx *c, Diag *d)
{
	CudaState *st = xcalloc(1, sizeof *st);
	c->state = st;
	const char *tmp = getenv("TMPDIR");
	snprintf(st->dir, sizeof st->dir, "%s/fusec-run-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(st->dir)) {
		diag_set(d, st->dir, 0, 0, "cannot create a temporary folder");
		st->dir[0] = 0;
		return -1;
	}
	SearchOptions so;
	pass_default_options(&so);
	Schedule *s = pass_search(c->g, &so);
	char ptxname[300];
	snprintf(ptxname, sizeof ptxname, "%s.ptx", c->g->name);
	PlanFileInfo info = {"sm_90", ptxname, NULL};
	CgOutputs co;
	int rc = cg_compile_schedule(s, &info, false, &co, d);
	pass_free_schedule(s);
	if (rc)
		return -1;
	snprintf(st->plan, sizeof st->plan, "%s/%s.plan.json", st->dir, c->g->name);
	snprintf(st->ptx, sizeof st->ptx, "%s/%s", st->dir, ptxname);
	rc = write_file(st->plan, co.plan, strlen(co.plan), d) ||
	     write_file(st->ptx, co.ptx.data, co.ptx.len, d) ? -1 : 0;
	cg_outputs_free(&co);
	return rc;
}

static int cuda_run(RunCtx *c, Diag *d)
{
	CudaState *st = c->state;
	const Graph *g = c->g;
	RtNamed *in = xcalloc((size_t)g->ninputs + 1, sizeof *in);
	for (int i = 0; i < g->ninputs; i++) {
		in[i].name = g->tensors[g->inputs[i]].name;
		in[i].t = c->inputs[i];    /* borrowed: rt_cuda_run only reads inputs */
	}
	st->out = xcalloc((size_t)g->noutputs + 1, sizeof *st->out);
	for (int i = 0; i < g->noutputs; i++)
		st->out[i].name = g->tensors[g->outputs[i]].name;
	RtStatus rs = rt_cuda_run(st->plan, in, g->ninputs, st->out, g->noutputs, d);
	free(in);
	return rs == RT_OK ? 0 : -1;
}

static int cuda_outputs(RunCtx *c, HostTensor *outs, Diag *d)
{
	CudaState *st = c->state;
	for (int i = 0; i < c->g->noutputs; i++) {
		outs[i] = st->out[i].t;
		memset(&st->out[i].t, 0, sizeof st->out[i].t);
	}
	return 0;
}

static void cuda_release(RunCtx *c)
{
	CudaState *st = c->state;
	if (!st)
		return;
	for (int i = 0; st->out && i < c->g->noutputs; i++)
		host_free(&st->out[i].t);
	free(st->out);
	if (st->plan[0])
		unlink(st->plan);
	if (st->ptx[0])
		unlink(st->ptx);
	if (st->dir[0])
		rmdir(st->dir);
	free(st);
	c->state = NULL;
}

const RunBackend run_cuda_backend = {cuda_prepare, cuda_run, cuda_outputs, cuda_release};
