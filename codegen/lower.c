/* lower.c: from a Schedule to kernels and bound launches (codegen.h, cg_lower).
 *
 * Every launch the search produced runs a list of global ops. Its kernel is built
 * from the relative form of exactly those ops, converted as a segment of their own,
 * so the kernel is a function of the launch's structure alone and cg_kernel's
 * deduplication gives every repeated launch (cache hits, repeated layers, other
 * sizes with the same dim pattern) the one kernel. The converter's maps then bind
 * the kernel's parameters: relative tensor ids to global tensors, placeholders to
 * scalar values, shape ids to dim values. The results it writes to memory are the
 * launch's `out` list, as the search made it and pass_verify checked it. */
#include <stdlib.h>
#include <string.h>

#include "codegen.h"

static bool is_pool(const Op *op)
{
	return pass_op_is_pool(op->kind);
}

static CgKernelKind kernel_kind(const Graph *g, int fuser, const Launch *l)
{
	switch (pass_fuser_kind(fuser)) {
	case FK_NONE:
		return CG_KERNEL_SINGLE;
	case FK_NHWC:
		/* NHWCRelayout runs its trace as an elementwise kernel, then the pool
		 * alone */
		return l->nops == 1 && is_pool(&g->ops[l->ops[0]]) ? CG_KERNEL_SINGLE
								   : CG_KERNEL_ELEMWISE;
	case FK_ELEMWISE:
		return CG_KERNEL_ELEMWISE;
	case FK_MATMUL:
		return CG_KERNEL_MATMUL;
	case FK_REDUCE:
		return CG_KERNEL_REDUCE;
	}
	return CG_KERNEL_SINGLE;
}

/* A launch of one reshape whose input is in memory: no kernel, the output shares
 * the input's buffer (codegen.h). Returns whether it was made an alias. */
static bool alias_launch(const Graph *g, const Launch *l, bool *ready, CgProgram *out,
			 int step)
{
	if (l->nops != 1)
		return false;
	const Op *op = &g->ops[l->ops[0]];
	if (op->kind != OP_RESHAPE || !ready[op->in[0]])
		return false;
	int x = op->in[0], y = op->out[0];
	int root = out->alias[x] >= 0 ? out->alias[x] : x;
	out->alias[y] = root;
	out->buffer[y] = false;
	ready[y] = true;
	out->aliases[out->naliases++] = (CgAlias){step, l->ops[0], y, root};
	return true;
}

/* The kernel kind of a launch that reads through sunk views: a lone op gains ops,
 * so it becomes the kernel of its family. */
static CgKernelKind kind_with_views(const Graph *g, const Launch *l, CgKernelKind k)
{
	if (k != CG_KERNEL_SINGLE)
		return k;
	switch (ir_ops[g->ops[l->ops[0]].kind].family) {
	case FAM_MATMUL: return CG_KERNEL_MATMUL;
	case FAM_REDUCE: return CG_KERNEL_REDUCE;
	default: return CG_KERNEL_ELEMWISE;
	}
}

/* A launch of a view that sinks into its readers (passes.h, pass_view_sink): no
 * kernel, no buffer for its result. */
static bool sink_launch(const Graph *g, const Launch *l, const ViewSink *vs, CgProgram *out,
			int step)
{
	if (l->nops != 1 || !vs->sunk[l->ops[0]])
		return false;
	int op = l->ops[0], y = g->ops[op].out[0], x = g->ops[op].in[0];
	while (vs->producer[x] >= 0 && vs->sunk[vs->producer[x]])
		x = g->ops[vs->producer[x]].in[0];
	out->buffer[y] = false;
	out->views[out->nviews++] = (CgView){step, op, y, x};
	return true;
}

int cg_lower(CgModule *m, const Schedule *s, Arena *a, CgProgram *out, Diag *d)
{
	const Graph *g = s->g;
	int nt = g->ntensors ? g->ntensors : 1;
	ViewSink *vs = pass_view_sink(s);
	int *chain = xmalloc(sizeof *chain * (size_t)(g->nops ? g->nops : 1));
	int *lops = NULL;   /* the launch's ops after its chain */
	int cap_lops = 0;
	RelConv *conv = ir_rel_new(g);
	bool *ready = xcalloc((size_t)nt, sizeof *ready);   /* in memory by now */
	for (int t = 0; t < g->ntensors; t++)
		ready[t] = g->tensors[t].role == ROLE_INPUT;
	int status = 0;

	memset(out, 0, sizeof *out);
	int total = 0;
	for (int i = 0; i < s->nsteps; i++)
		total += s->steps[i].nlaunch;
	out->launch = ARENA_NEW(a, CgBound, total);
	out->kernels = ARENA_NEW(a, const CgKernel *, total);
	out->buffer = ARENA_NEW(a, bool, nt);
	out->alias = ARENA_NEW(a, int, nt);
	out->aliases = ARENA_NEW(a, CgAlias, total);
	out->views = ARENA_NEW(a, CgView, total);
	out->nhwc = ARENA_NEW(a, bool, nt);
	for (int t = 0; t < g->ntensors; t++) {
		out->buffer[t] = g->tensors[t].role == ROLE_INPUT || g->tensors[t].is_output;
		out->alias[t] = -1;
	}

	int cap_ops = 16;
	RelOp *rel = xmalloc(sizeof *rel * (size_t)cap_ops);
	bool *written = NULL;
	int cap_written = 0;
	bool *seen = NULL;          /* per module kernel index: already listed */
	int cap_seen = 0;

	for (int si = 0; si < s->nsteps && !status; si++) {
		const Step *st = &s->steps[si];
		for (int li = 0; li < st->nlaunch && !status; li++) {
			const Launch *l = &st->launch[li];
			if (sink_launch(g, l, vs, out, si) || alias_launch(g, l, ready, out, si))
				continue;
			Arena *scratch = arena_new();
			int nchain = pass_view_chain(vs, l, chain);
			int nops = nchain + l->nops;
			if (nops > cap_ops) {
				cap_ops = nops;
				rel = xrealloc(rel, sizeof *rel * (size_t)cap_ops);
			}
			if (nops > cap_lops) {
				cap_lops = nops;
				lops = xrealloc(lops, sizeof *lops * (size_t)cap_lops);
			}
			memcpy(lops, chain, sizeof *lops * (size_t)nchain);
			memcpy(lops + nchain, l->ops, sizeof *lops * (size_t)l->nops);
			ir_rel_reset(conv);
			for (int k = 0; k < nops; k++)
				ir_rel_op(conv, scratch, lops[k], &rel[k]);
			int nrel;
			const int *global = ir_rel_tensors(conv, &nrel);
			if (nrel > cap_written) {
				cap_written = nrel;
				written = xrealloc(written, sizeof *written * (size_t)cap_written);
			}
			memset(written, 0, sizeof *written * (size_t)nrel);
			/* what the search says goes to memory (Launch.out) */
			bool any = false;
			for (int k = nchain; k < nops; k++) {
				const Op *op = &g->ops[lops[k]];
				for (int j = 0; j < op->nout; j++) {
					int t = op->out[j];
					if (launch_writes(l, t)) {
						written[rel[k].t[op->nin + j].id] = true;
						out->buffer[t] = true;
						any = true;
					}
				}
			}
			/* a launch whose results nobody reads (dead ops) still gets its
			 * kernel: it writes the last op's results to a buffer of their own */
			for (int j = 0; !any && j < g->ops[l->ops[l->nops - 1]].nout; j++) {
				const Op *op = &g->ops[l->ops[l->nops - 1]];
				written[rel[nops - 1].t[op->nin + j].id] = true;
				out->buffer[op->out[j]] = true;
			}

			const Kernel *unit = &s->kernels[l->kernel];
			int ndims, nvals;
			const int64_t *dims = ir_rel_dims(conv, &ndims);
			const double *vals = ir_rel_values(conv, &nvals);
			CgKernelKind kind = kernel_kind(g, unit->fuser, l);
			if (nchain)
				kind = kind_with_views(g, l, kind);
			CgKernelSpec spec = {kind, rel, nops, written, nrel, 0, 0, false, 0, 0, 0};
			/* the channel-last tensor: written by an NHWCRelayout trace, read
			 * by its pool (the launch after it) */
			int xl = pass_nhwc_relayout(s, st, li);
			if (xl < 0 && unit->fuser == pass_nhwc_fuser() && l->nops == 1 &&
			    is_pool(&g->ops[l->ops[0]]) && out->nhwc[g->ops[l->ops[0]].in[0]])
				xl = g->ops[l->ops[0]].in[0];
			for (int r = 0; xl >= 0 && r < nrel; r++)
				if (global[r] == xl) {
					spec.nhwc = r + 1;
					out->nhwc[xl] = true;
				}
			/* a plan for every size: what divides every size of each shape
			 * id (the ws tiles' maps must hold at all of them) */
			int64_t *divs = NULL;
			if (g->sym) {
				int nsrc;
				const int32_t *src = ir_rel_dim_sources(conv, &nsrc);
				divs = ARENA_NEW(scratch, int64_t, ndims + 1);
				for (int id = 0; id < ndims; id++)
					divs[id] = id == 0 || id >= nsrc ? 1 : ir_dim_divisor(
						&g->sym->dim[src[2 * id]][src[2 * id + 1]]);
			}
			spec.variant = cg_matmul_variant(&spec, cg_module_arch(m),
							 cg_module_is_host(m),
							 cg_module_allow_tf32(m),
							 cg_module_allow_3xtf32(m), divs, dims, ndims);
			/* long f32 rows: the relative form has no row length, so the
			 * choice is the concrete dims', made here (reduce_plan.c); in
			 * a plan of concrete sizes the row length and block too */
			int64_t row[3] = {0, 0, 0};
			spec.red_long = cg_reduce_long_rows(&spec, dims, ndims,
							    !strcmp(cg_module_arch(m), "sm_90a"),
							    g->sym ? NULL : row);
			spec.red_row = row[0];
			spec.red_g = (int)row[1];
			spec.red_r = (int)row[2];
			const CgKernel *k = cg_kernel(m, &spec, d);
			if (!k) {
				status = -1;
				arena_free(scratch);
				break;
			}
			if (k->index >= cap_seen) {
				int n = k->index * 2 + 16;
				seen = xrealloc(seen, sizeof *seen * (size_t)n);
				memset(seen + cap_seen, 0, sizeof *seen * (size_t)(n - cap_seen));
				cap_seen = n;
			}
			if (!seen[k->index]) {
				seen[k->index] = true;
				out->kernels[out->nkernels++] = k;
			}

			CgBound *b = &out->launch[out->nlaunch++];
			b->kernel = k;
			b->step = si;
			b->unit = l->kernel;
			cg_launch_dims(k, dims, ndims, &b->at);
			if (g->sym) {
				int nsrc;
				const int32_t *src = ir_rel_dim_sources(conv, &nsrc);
				int32_t *copy = ARENA_NEW(a, int32_t, 2 * nsrc + 2);
				memcpy(copy, src, sizeof *copy * 2 * (size_t)nsrc);
				b->dsrc = copy;
				b->ndims = nsrc;
			}
			b->nargs = k->nparams;
			b->args = ARENA_NEW(a, CgArg, k->nparams);
			for (int p = 0; p < k->nparams; p++) {
				const CgParam *pp = &k->params[p];
				CgArg *arg = &b->args[p];
				switch (pp->kind) {
				case CG_PARAM_BUFFER:
					arg->kind = CG_ARG_TENSOR;
					arg->tensor = global[pp->id];
					if (pp->read && !ready[arg->tensor]) {
						/* the schedule ordered a read before its write */
						diag_set(d, "codegen", 0, 0, "internal: launch %d (%s) reads "
							 "tensor '%s' before any launch writes it",
							 out->nlaunch - 1, k->name,
							 g->tensors[arg->tensor].name);
						status = -1;
					}
					break;
				case CG_PARAM_SCALAR:
					arg->kind = CG_ARG_F64;
					arg->f = pp->id < nvals ? vals[pp->id] : 0;
					break;
				case CG_PARAM_DIM:
					arg->kind = CG_ARG_I64;
					arg->i = pp->id < ndims ? dims[pp->id] : 1;
					break;
				case CG_PARAM_SCRATCH:
					arg->kind = CG_ARG_SCRATCH;
					arg->i = b->at.scratch_bytes;
					break;
				case CG_PARAM_TMAP: {
					int rid = -1;
					arg->kind = CG_ARG_TMAP;
					/* in a plan for every size, the map at the probe
					 * sizes: the plan writes its shape ids (plan.c) */
					if (!cg_matmul_tmap(&spec, pp->id, dims, ndims, &rid,
								   &arg->tm) || rid < 0 || rid >= nrel) {
						diag_set(d, "codegen", 0, 0, "internal: launch %d (%s): no "
							 "tensor map for operand %d", out->nlaunch - 1,
							 k->name, pp->id);
						status = -1;
					} else {
						arg->tensor = global[rid];
					}
					break;
				}
				}
			}
			for (int p = 0; p < k->nparams; p++)
				if (k->params[p].kind == CG_PARAM_BUFFER && k->params[p].written)
					ready[b->args[p].tensor] = true;
			arena_free(scratch);
		}
	}
	free(ready);
	free(rel);
	free(lops);
	free(chain);
	pass_view_sink_free(vs);
	free(written);
	free(seen);
	ir_rel_free(conv);
	return status;
}
