/* run_cuda.c: the `cuda` backend of `fusec run`: compile the graph (search, PTX,
 * plan) into a private temporary folder, then run the plan on GPU 0 through the
 * runtime (runtime/rt.h), which reaches the driver through dlopen. The compile is
 * lib/pipeline.h's, with compile's default arch. `fusec bench`
 * compiles the same way (run_cuda_compile). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/pipeline.h"
#include "../runtime/rt.h"
#include "cmd.h"
#include "run.h"

enum { PLAN_PATH_MAX = 1024 };  /* DIR/NAME.npy of an input of a plan */

typedef struct {
	RunTemp tmp;
	RtNamed *out;
} CudaState;

static int write_file(const char *path, const char *text, size_t len, Diag *d)
{
	FILE *f = fopen(path, "w");
	bool bad = !f || fwrite(text, 1, len, f) != len;
	if ((f && fclose(f)) || bad) {
		diag_set(d, path, 0, 0, "cannot write the compiled plan");
		return -1;
	}
	return 0;
}

int run_cuda_compile(const Graph *g, bool allow_tf32, bool allow_3xtf32, bool burn_exact,
		     RunTemp *t, Diag *d)
{
	memset(t, 0, sizeof *t);
	const char *tmp = getenv("TMPDIR");
	snprintf(t->dir, sizeof t->dir, "%s/fusec-run-", tmp && *tmp ? tmp : "/tmp");
	/* registered: a signal takes the folder away again (support.h) */
	char *dir = dir_temp(t->dir, &t->undo);
	if (!dir) {
		diag_set(d, t->dir, 0, 0, "cannot create a temporary folder");
		t->dir[0] = 0;
		return -1;
	}
	chmod(dir, 0700);   /* private, as mkdtemp makes it */
	snprintf(t->dir, sizeof t->dir, "%s", dir);
	free(dir);
	/* the compile pipeline with compile's defaults (its arch; no kernel cache), and
	 * no weights file named in the plan */
	PlOptions po;
	pl_default_options(&po);
	po.search.burn_exact = burn_exact;
	po.allow_tf32 = allow_tf32;
	po.allow_3xtf32 = allow_3xtf32;
	po.weights = false;
	po.precision = cmd_precision_name();
	po.keep_f32 = cmd_precision_keep();
	PlResult r;
	if (pl_compile(g, &po, &r, d))
		return -1;
	const CgOutputs co = r.out;
	int rc;
	snprintf(t->plan, sizeof t->plan, "%s/%s.plan.json", t->dir, g->name);
	snprintf(t->ptx, sizeof t->ptx, "%s/%.299s", t->dir, r.ptx_name[0]);
	rc = write_file(t->plan, co.plan, strlen(co.plan), d) ||
	     write_file(t->ptx, co.ptx[0].data, co.ptx[0].len, d) ? -1 : 0;
	pl_result_free(&r);
	return rc;
}

void run_cuda_cleanup(RunTemp *t)
{
	if (t->plan[0])
		unlink(t->plan);
	if (t->ptx[0])
		unlink(t->ptx);
	if (t->dir[0])
		rmdir(t->dir);
	undo_drop(t->undo);
	memset(t, 0, sizeof *t);
}

static int cuda_prepare(RunCtx *c, Diag *d)
{
	CudaState *st = xcalloc(1, sizeof *st);
	c->state = st;
	/* --dynamic: a plan for every size, which the runtime binds to the inputs */
	return run_cuda_compile(c->gsym ? c->gsym : c->g, c->allow_tf32, c->allow_3xtf32, c->burn_exact,
				&st->tmp, d);
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
	RtStatus rs = rt_cuda_run(st->tmp.plan, in, g->ninputs, st->out, g->noutputs, d);
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
	run_cuda_cleanup(&st->tmp);
	free(st);
	c->state = NULL;
}

const RunBackend run_cuda_backend = {cuda_prepare, cuda_run, cuda_outputs, cuda_release};

/* ---- compiled plans -------------------------------------------------------- */

bool run_is_plan(const char *path)
{
	struct stat sb;
	size_t n = strlen(path);
	if (strcmp(path, "-") && !stat(path, &sb) && S_ISDIR(sb.st_mode))
		return true;
	return n > 10 && !strcmp(path + n - 10, ".plan.json");
}

/* What can fail before any input is made: two tensors of one file name, too
 * little memory on the host, no driver or device. */
static RtStatus plan_precheck(const RunPlan *rp, const char *inputs, const char *outputs,
			      Diag *d)
{
	const char **names = xcalloc((size_t)rp->plan->ntensors + 1, sizeof *names);
	for (int i = 0; i < rp->nin; i++)
		names[i] = rp->in[i].name;
	int bad = inputs && npy_check_names(inputs, names, NULL, rp->nin, PLAN_PATH_MAX,
					    "--inputs", "read from", d);
	for (int i = 0; i < rp->nout; i++)
		names[i] = rp->out[i].name;
	bad = bad || (outputs && npy_check_names(outputs, names, NULL, rp->nout, SIZE_MAX,
						 "--outputs", "written to", d));
	free(names);
	if (bad)
		return RT_ERR_INPUT;
	RtStatus st = rt_plan_host_check(rp->plan, d);
	return st != RT_OK ? st : rt_device_check(rp->plan, 0, NULL, d);
}

RtStatus run_plan_open(const char *path, const char *inputs, const char *outputs, uint64_t seed,
		       RunPlan *rp, Diag *d)
{
	memset(rp, 0, sizeof *rp);
	rp->plan = rt_plan_load(path, d);
	if (!rp->plan)
		return RT_ERR_INPUT;
	const IrInputShape *sh;
	int nsh = cmd_input_shapes(&sh);
	if (nsh && !rp->plan->ndim_names) {
		diag_set(d, rp->plan->path, 0, 0, "--input-shape applies to a graph, a model or "
			 "a plan for every size; this plan has its shapes");
		return RT_ERR_INPUT;
	}
	if (rp->plan->ndim_names && !inputs && !nsh) {
		diag_set(d, rp->plan->path, 0, 0, "the plan is for every size of its named dims: "
			 "give --inputs, whose shapes bind them, or --input-shape");
		return RT_ERR_INPUT;
	}
	if (nsh) {
		/* the sizes of --input-shape; random inputs of those shapes, or --inputs
		 * files that must have them */
		const char **names = xcalloc((size_t)nsh, sizeof *names);
		int *rank = xcalloc((size_t)nsh, sizeof *rank);
		int64_t (*dim)[IR_MAX_RANK] = xcalloc((size_t)nsh, sizeof *dim);
		for (int i = 0; i < nsh; i++) {
			names[i] = sh[i].name;
			rank[i] = sh[i].rank;
			memcpy(dim[i], sh[i].dim, sizeof dim[i]);
		}
		RtStatus bs = rt_plan_bind_shapes(rp->plan, names, rank,
						  (const int64_t (*)[IR_MAX_RANK])dim, nsh, d);
		free(names);
		free(rank);
		free(dim);
		if (bs != RT_OK)
			return RT_ERR_INPUT;
	} else if (rp->plan->ndim_names && rt_plan_bind_npy(rp->plan, inputs, d) != RT_OK) {
		return RT_ERR_INPUT;
	}
	const RtPlan *p = rp->plan;
	rp->in = xcalloc((size_t)p->ntensors + 1, sizeof *rp->in);
	rp->out = xcalloc((size_t)p->ntensors + 1, sizeof *rp->out);
	for (int t = 0; t < p->ntensors; t++) {
		const RtTensor *rt = &p->tensors[t];
		if (rt->output)
			rp->out[rp->nout++].name = rt->name;
		if (rt->role == ROLE_INPUT && !rt->constant)
			rp->in[rp->nin++].name = rt->name;
	}
	RtStatus st = plan_precheck(rp, inputs, outputs, d);
	if (st != RT_OK)
		return st;
	for (int i = 0; i < rp->nin; i++) {
		RtNamed *in = &rp->in[i];
		const RtTensor *rt = &p->tensors[rt_plan_find_tensor(p, in->name)];
		if (inputs) {
			char file[PLAN_PATH_MAX];
			npy_path(file, sizeof file, inputs, rt->name);
			if (npy_read_file(file, &in->t, d))
				return RT_ERR_INPUT;
			continue;
		}
		if (host_alloc(&in->t, rt->dtype, rt->rank, rt->dim, d))
			return RT_ERR_INPUT;
		HostRng r;
		double lo, hi;
		host_rng_init(&r, seed, host_input_stream(rt->name));
		host_default_range(rt->dtype, &lo, &hi);
		host_fill_random(&in->t, &r, lo, hi);
	}
	return RT_OK;
}

void run_plan_close(RunPlan *rp)
{
	for (int i = 0; i < rp->nin; i++)
		host_free(&rp->in[i].t);
	for (int i = 0; i < rp->nout; i++)
		host_free(&rp->out[i].t);
	free(rp->in);
	free(rp->out);
	rt_plan_free(rp->plan);
	memset(rp, 0, sizeof *rp);
}
