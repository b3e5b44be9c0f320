/* verify.c: the schedule verifier (pass_verify), in the spirit of QBE's ssacheck.
 *
 * It checks what the rest of the compiler takes on trust from the search, over the
 * launches in schedule order (steps in order, launches of a step in order):
 *   - every op of the graph except syncs runs in exactly one launch, and syncs in
 *     none;
 *   - within a launch, an op's operand is either made by an earlier op of the same
 *     launch or read from memory, listed in the launch's inputs;
 *   - a launch reads from memory only graph inputs and tensors that an earlier launch
 *     wrote;
 *   - a launch writes every result that a later launch reads or that the graph
 *     outputs, so each launch's outputs reach their readers;
 *   - each launch's unit names a fuser that exists (or none);
 *   - and what code generation reads besides (codegen/lower.c): a view launch that
 *     sinks into its readers (pass_view_sink) writes nothing, so every launch,
 *     with the sunk views it reads through (pass_view_chain) in front of its ops,
 *     reads from memory only graph inputs and results of earlier launches that
 *     keep their kernel.
 * It reads the schedule only; the first fault found is reported in *d. It runs on
 * every compile, between the search and code generation (lib/pipeline.c). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "search.h"

typedef struct {
	const Schedule *s;
	const Graph *g;
	int *ran_in;         /* op -> launch number (0-based over the schedule), -1 */
	int *made_in;        /* tensor -> launch whose ops make it, -1 */
	bool *written;       /* tensor -> in memory: a graph input or an earlier launch's output */
	int *reads;          /* tensor -> operand reads by the graph's ops */
	int *reads_here;     /* tensor -> operand reads by the current launch's ops */
	Diag *d;
} Verify;

static int fault(Verify *v, int step, int launch, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fault(Verify *v, int step, int launch, const char *fmt, ...)
{
	char msg[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	diag_set(v->d, "verify", 0, 0, "step %d, launch %d: %s", step, launch, msg);
	return -1;
}

static const char *tname(const Verify *v, int t)
{
	return v->g->tensors[t].name;
}

static int check_launch(Verify *v, int si, int li, int nl)
{
	const Graph *g = v->g;
	const Launch *l = &v->s->steps[si].launch[li];
	if (l->kernel < 0 || l->kernel >= v->s->nkernels)
		return fault(v, si, li, "kernel %d does not exist", l->kernel);
	if (l->nops < 1)
		return fault(v, si, li, "no op (%d)", l->nops);
	int fuser = v->s->kernels[l->kernel].fuser;
	if (fuser < -1 || fuser >= pass_nfusers())
		return fault(v, si, li, "unit %d names fuser %d, which does not exist", l->kernel,
			     fuser);
	/* every op once; the results each op makes */
	for (int k = 0; k < l->nops; k++) {
		int o = l->ops[k];
		if (o < 0 || o >= g->nops)
			return fault(v, si, li, "op %d does not exist", o);
		if (g->ops[o].kind == OP_SYNC)
			return fault(v, si, li, "sync op %d runs in a launch", o);
		if (v->ran_in[o] >= 0)
			return fault(v, si, li, "op %d runs a second time", o);
		v->ran_in[o] = nl;
	}
	/* operands: made earlier in this launch, or read from memory */
	for (int k = 0; k < l->nops; k++) {
		const Op *op = &g->ops[l->ops[k]];
		for (int j = 0; j < op->nin; j++) {
			int t = op->in[j];
			if (v->made_in[t] == nl)
				continue;
			int p = g->tensors[t].producer;
			if (p >= 0 && v->ran_in[p] == nl)
				return fault(v, si, li, "'%s' (t%d) is read before the op that makes it",
					     tname(v, t), t);
			if (!launch_reads(l, t))
				return fault(v, si, li, "'%s' (t%d) is read but is not an input of the launch",
					     tname(v, t), t);
		}
		for (int j = 0; j < op->nout; j++)
			v->made_in[op->out[j]] = nl;
	}
	for (int i = 0; i < l->nin; i++) {
		int t = l->in[i];
		if (t < 0 || t >= g->ntensors)
			return fault(v, si, li, "input tensor %d does not exist", t);
		if (!v->written[t])
			return fault(v, si, li, "reads '%s' (t%d), which no earlier launch wrote",
				     tname(v, t), t);
	}
	for (int i = 0; i < l->nout; i++) {
		int t = l->out[i];
		if (t < 0 || t >= g->ntensors || v->made_in[t] != nl)
			return fault(v, si, li, "output tensor %d is not made by the launch", t);
	}
	/* results read later or output by the graph go to memory */
	for (int k = 0; k < l->nops; k++) {
		const Op *op = &g->ops[l->ops[k]];
		for (int j = 0; j < op->nin; j++)
			v->reads_here[op->in[j]]++;
	}
	int rc = 0;
	for (int k = 0; k < l->nops && !rc; k++) {
		const Op *op = &g->ops[l->ops[k]];
		for (int j = 0; j < op->nout && !rc; j++) {
			int t = op->out[j];
			bool needed = g->tensors[t].is_output || v->reads[t] > v->reads_here[t];
			if (needed && !launch_writes(l, t))
				rc = fault(v, si, li, "'%s' (t%d) is read after the launch but not written",
					   tname(v, t), t);
		}
	}
	for (int k = 0; k < l->nops; k++) {
		const Op *op = &g->ops[l->ops[k]];
		for (int j = 0; j < op->nin; j++)
			v->reads_here[op->in[j]] = 0;
	}
	if (rc)
		return rc;
	for (int i = 0; i < l->nout; i++)
		v->written[l->out[i]] = true;
	return 0;
}

/* What lower.c reads once views sink: a launch's ops and its chain of sunk views
 * read from memory only what an earlier launch with a kernel wrote (or an input). */
static int check_sunk_views(Verify *v)
{
	const Schedule *s = v->s;
	const Graph *g = v->g;
	ViewSink *vs = pass_view_sink(s);
	int *chain = xmalloc(sizeof *chain * (size_t)(g->nops + 1));
	bool *mem = v->written;   /* reused: in memory */
	int *here = v->made_in;   /* reused: made by the ops of launch nl */
	for (int t = 0; t < g->ntensors; t++) {
		mem[t] = g->tensors[t].producer < 0;
		here[t] = -1;
	}
	int rc = 0, nl = 0;
	for (int si = 0; si < s->nsteps && !rc; si++)
		for (int li = 0; li < s->steps[si].nlaunch && !rc; li++, nl++) {
			const Launch *l = &s->steps[si].launch[li];
			if (l->nops == 1 && vs->sunk[l->ops[0]])
				continue;   /* no kernel: its result is never in memory */
			int nchain = pass_view_chain(vs, l, chain);
			for (int k = 0; k < nchain + l->nops && !rc; k++) {
				const Op *op = &g->ops[k < nchain ? chain[k] : l->ops[k - nchain]];
				for (int j = 0; j < op->nin && !rc; j++) {
					int t = op->in[j];
					if (here[t] != nl && !mem[t])
						rc = fault(v, si, li, "reads '%s' (t%d) through %d sunk "
							   "view%s, but no launch with a kernel wrote it",
							   tname(v, t), t, nchain, nchain == 1 ? "" : "s");
				}
				for (int j = 0; j < op->nout; j++)
					here[op->out[j]] = nl;
			}
			for (int k = 0; k < l->nops; k++) {
				const Op *op = &g->ops[l->ops[k]];
				for (int j = 0; j < op->nout; j++)
					mem[op->out[j]] = true;
			}
		}
	free(chain);
	pass_view_sink_free(vs);
	return rc;
}

int pass_verify(const Schedule *s, Diag *d)
{
	const Graph *g = s->g;
	Verify v = {s, g, NULL, NULL, NULL, NULL, NULL, d};
	v.ran_in = xmalloc(sizeof *v.ran_in * (size_t)(g->nops + 1));
	v.made_in = xmalloc(sizeof *v.made_in * (size_t)(g->ntensors + 1));
	v.written = xcalloc((size_t)g->ntensors + 1, sizeof *v.written);
	v.reads = xcalloc((size_t)g->ntensors + 1, sizeof *v.reads);
	v.reads_here = xcalloc((size_t)g->ntensors + 1, sizeof *v.reads_here);
	for (int i = 0; i < g->nops; i++)
		if (g->ops[i].kind != OP_SYNC)
			for (int j = 0; j < g->ops[i].nin; j++)
				v.reads[g->ops[i].in[j]]++;
	for (int i = 0; i < g->nops; i++)
		v.ran_in[i] = -1;
	for (int i = 0; i < g->ntensors; i++) {
		v.made_in[i] = -1;
		v.written[i] = g->tensors[i].producer < 0;
	}
	int rc = 0, nl = 0;
	for (int si = 0; si < s->nsteps && !rc; si++)
		for (int li = 0; li < s->steps[si].nlaunch && !rc; li++)
			rc = check_launch(&v, si, li, nl++);
	for (int i = 0; i < g->nops && !rc; i++)
		if (g->ops[i].kind != OP_SYNC && v.ran_in[i] < 0) {
			diag_set(d, "verify", 0, 0, "op %d (%s) runs in no launch", i,
				 ir_ops[g->ops[i].kind].file);
			rc = -1;
		}
	if (!rc)
		rc = check_sunk_views(&v);
	free(v.ran_in);
	free(v.made_in);
	free(v.written);
	free(v.reads);
	free(v.reads_here);
	return rc;
}
