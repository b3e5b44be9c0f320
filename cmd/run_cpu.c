/* run_cpu.c: the `cpu` backend of `fusec run`: the fusion search and its verifier
 * (pl_schedule, the compile pipeline's first steps), the kernels built
 * for the host and JIT-compiled, and the plan's launches run in order (codegen.h,
 * cg_host_*). It proves that the generated kernels and the plan compute the graph. */
#include <stdlib.h>
#include <string.h>

#include "../codegen/codegen.h"
#include "../lib/pipeline.h"
#include "run.h"

typedef struct {
	Schedule *s;
	CgHost *h;
	HostTensor *buf;       /* per tensor: owned buffers of outputs and intermediates */
	void **data;           /* per tensor: what the kernels see */
} CpuState;

static int cpu_prepare(RunCtx *c, Diag *d)
{
	CpuState *st = xcalloc(1, sizeof *st);
	c->state = st;
	SearchOptions so;
	pass_default_options(&so);
	so.burn_exact = c->burn_exact;
	st->s = pl_schedule(c->gsym ? c->gsym : c->g, &so, d);
	st->h = st->s ? cg_host_new(st->s, c->allow_tf32, c->allow_3xtf32, d) : NULL;
	return st->h ? 0 : -1;
}

/* --dynamic: what was compiled once and what it runs at, on stderr:
 * "fusec: compiled for every batch in 1..64, seq in 1..2048 (built at batch=61,
 * seq=2039); run at batch=8, seq=100". */
static void print_binding(const IrSymbolic *s, const int64_t *val)
{
	Buf b = {0};
	buf_puts(&b, "fusec: compiled for every ");
	for (int k = 0; k < s->nsym; k++)
		if (s->hi[k] == IR_DIM_TOP)   /* no range given */
			buf_printf(&b, "%s%s ≥ %lld", k ? ", " : "", s->name[k], (long long)s->lo[k]);
		else
			buf_printf(&b, "%s%s in %lld..%lld", k ? ", " : "", s->name[k],
				   (long long)s->lo[k], (long long)s->hi[k]);
	buf_puts(&b, " (built at ");
	for (int k = 0; k < s->nsym; k++)
		buf_printf(&b, "%s%s=%lld", k ? ", " : "", s->name[k], (long long)s->probe[k]);
	buf_puts(&b, "); run at ");
	for (int k = 0; k < s->nsym; k++)
		buf_printf(&b, "%s%s=%lld", k ? ", " : "", s->name[k], (long long)val[k]);
	fprintf(stderr, "%s\n", b.data);
	buf_free(&b);
}

static int cpu_run(RunCtx *c, Diag *d)
{
	CpuState *st = c->state;
	const Graph *g = c->g;
	const bool *need = cg_host_buffers(st->h);
	int n = g->ntensors ? g->ntensors : 1;
	st->buf = xcalloc((size_t)n, sizeof *st->buf);
	st->data = xcalloc((size_t)n, sizeof *st->data);
	for (int i = 0; i < g->ninputs; i++)
		st->data[g->inputs[i]] = c->inputs[i].data;
	for (int t = 0; t < g->ntensors; t++) {
		const Tensor *gt = &g->tensors[t];
		if (!need[t] || gt->role == ROLE_INPUT)
			continue;
		if (host_alloc(&st->buf[t], gt->dtype, gt->rank, gt->dim, d))
			return -1;
		st->data[t] = st->buf[t].data;
	}
	if (c->gsym) {
		int64_t val[IR_SYM_MAX];
		if (ir_sym_bind(c->gsym, g, val, d) || cg_host_bind(st->h, g, d))
			return -1;
		print_binding(c->gsym->sym, val);
	}
	return cg_host_run(st->h, st->data, d);
}

static int cpu_outputs(RunCtx *c, HostTensor *outs, Diag *d)
{
	CpuState *st = c->state;
	const Graph *g = c->g;
	for (int i = 0; i < g->noutputs; i++) {
		int t = g->outputs[i];
		const Tensor *gt = &g->tensors[t];
		if (gt->role == ROLE_INPUT || !st->buf[t].data) {
			/* an input listed as an output: hand over a copy */
			if (host_alloc(&outs[i], gt->dtype, gt->rank, gt->dim, d))
				return -1;
			memcpy(outs[i].data, st->data[t],
			       (size_t)outs[i].n * (size_t)ir_dtype_size(gt->dtype));
		} else {
			outs[i] = st->buf[t];
			memset(&st->buf[t], 0, sizeof st->buf[t]);
		}
	}
	return 0;
}

static void cpu_release(RunCtx *c)
{
	CpuState *st = c->state;
	if (!st)
		return;
	for (int t = 0; st->buf && t < c->g->ntensors; t++)
		host_free(&st->buf[t]);
	free(st->buf);
	free(st->data);
	cg_host_free(st->h);
	pass_free_schedule(st->s);
	free(st);
	c->state = NULL;
}

const RunBackend run_cpu_backend = {cpu_prepare, cpu_run, cpu_outputs, cpu_release};
