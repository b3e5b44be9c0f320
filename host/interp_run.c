/* interp_run.c: a whole graph through the reference interpreter (interp.h): the
 * inputs checked and copied, each op run in order by interp.c and, when bounds
 * are asked for, its result's error bound worked out by bounds.c; a value is freed
 * after its last reader, and the outputs (with their bounds) are copies handed
 * to the caller. Also the most memory such a run holds at once
 * (interp_peak_bytes). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp_impl.h"

int interp_check_input(const Graph *g, int i, const HostTensor *t, Diag *d)
{
	const Tensor *want = &g->tensors[g->inputs[i]];
	bool ok = t->dtype == want->dtype && t->rank == want->rank;
	for (int k = 0; ok && k < t->rank; k++)
		ok = t->dim[k] == want->dim[k];
	if (!ok) {
		char a[128], b[128];
		diag_set(d, "", 0, 0, "input '%s' needs %s, got %s", want->name,
			 host_shape_text(want->dtype, want->rank, want->dim, a, sizeof a),
			 host_shape_text(t->dtype, t->rank, t->dim, b, sizeof b));
		return -1;
	}
	return 0;
}

static void free_values(HostTensor *val, int n)
{
	for (int t = 0; t < n; t++)
		host_free(&val[t]);
	free(val);
}

/* Copy src into a fresh tensor *dst of the same dtype and shape. */
static int copy_tensor(HostTensor *dst, const HostTensor *src, Diag *d)
{
	if (host_alloc(dst, src->dtype, src->rank, src->dim, d))
		return -1;
	memcpy(dst->data, src->data, (size_t)src->n * (size_t)ir_dtype_size(src->dtype));
	return 0;
}

int interp_run(const Graph *g, const HostTensor *inputs, HostTensor *outputs, Diag *d)
{
	return interp_run_bounds(g, inputs, outputs, NULL, d);
}

int interp_run_bounds(const Graph *g, const HostTensor *inputs, HostTensor *outputs,
		      HostTensor *bounds, Diag *d)
{
	return interp_run_bounds_tf32(g, inputs, outputs, bounds, false, d);
}

/* v rounded to t as --precision converts a constant: saturated at t's largest
 * finite value (passes/precision.c). */
static double round_saturated(DType t, double v)
{
	double r = host_round(t, v);
	if (isinf(r) && isfinite(v))
		r = copysign(t == DT_F16 ? 65504.0 : 0x1.fep127, v);
	return r;
}

/* The bound of an input: 0 (exact), or for a constant the kernels hold in a
 * narrower dtype than its value's, its rounding to that dtype, which is a real
 * error of the kernels (tight). */
static int input_bound(Interp *ip, int t, bool tight, Diag *d)
{
	const HostTensor *v = &ip->val[t];
	if (host_alloc(&ip->err[t], DT_F64, v->rank, v->dim, d))   /* zero-filled */
		return -1;
	DType st = interp_stored(ip, t);
	if (st == v->dtype || !ir_dtype_is_float(st))
		return 0;
	if (tight && host_alloc(&ip->tight[t], DT_F64, v->rank, v->dim, d))
		return -1;
	double *e = ip->err[t].data, *r = ip->tight[t].data;
	for (int64_t i = 0; i < v->n; i++) {
		double x = host_get(v, i);
		e[i] = isfinite(x) ? fabs(round_saturated(st, x) - x) : 0;
		if (r)
			r[i] = e[i];
	}
	return 0;
}

int interp_run_bounds_tf32(const Graph *g, const HostTensor *inputs, HostTensor *outputs,
			   HostTensor *bounds, int tf32, Diag *d)
{
	return interp_run_bounds_stored(g, NULL, inputs, outputs, bounds, tf32, d);
}

int interp_run_bounds_stored(const Graph *g, const DType *store, const HostTensor *inputs,
			     HostTensor *outputs, HostTensor *bounds, int tf32, Diag *d)
{
	for (int i = 0; i < g->ninputs; i++)
		if (interp_check_input(g, i, &inputs[i], d))
			return -1;
	size_t nt = (size_t)g->ntensors + 1;
	Interp ip = {g, xcalloc(nt, sizeof(HostTensor)), d, -1,
		     bounds ? xcalloc(nt, sizeof(HostTensor)) : NULL,
		     bounds ? xcalloc(nt, sizeof(HostTensor)) : NULL, tf32, store};
	int *last = xmalloc(nt * sizeof *last);
	bool *has_tight = xcalloc(nt, sizeof *has_tight);
	interp_tight_tensors(g, store, has_tight);
	for (int t = 0; t < g->ntensors; t++)
		last[t] = g->tensors[t].is_output ? g->nops : -1;
	for (int i = 0; i < g->nops; i++)
		for (int k = 0; k < g->ops[i].nin; k++)
			if (last[g->ops[i].in[k]] < i)
				last[g->ops[i].in[k]] = i;
	int rc = 0;
	for (int i = 0; i < g->ninputs && !rc; i++) {
		HostTensor *v = &ip.val[g->inputs[i]];
		rc = copy_tensor(v, &inputs[i], d);
		if (!rc && bounds)
			rc = input_bound(&ip, g->inputs[i], has_tight[g->inputs[i]], d);
	}
	for (int i = 0; i < g->nops && !rc; i++) {
		const Op *op = &g->ops[i];
		if (op->kind == OP_SYNC)
			continue;
		ip.opi = i;
		const Tensor *t = &g->tensors[op->out[0]];
		HostTensor *out = &ip.val[op->out[0]];
		rc = host_alloc(out, t->dtype, t->rank, t->dim, d);
		if (!rc)
			rc = interp_run_op(&ip, op, out);
		if (!rc && bounds) {
			HostTensor *e = &ip.err[op->out[0]], *r = &ip.tight[op->out[0]];
			rc = host_alloc(e, DT_F64, t->rank, t->dim, d) ||
			     (has_tight[op->out[0]] && host_alloc(r, DT_F64, t->rank, t->dim, d));
			if (!rc)
				bounds_op(&ip, op, out, e, r);
		}
		for (int k = 0; k < op->nin && !rc; k++)
			if (last[op->in[k]] == i && g->tensors[op->in[k]].producer >= 0) {
				host_free(&ip.val[op->in[k]]);
				if (bounds) {
					host_free(&ip.err[op->in[k]]);
					host_free(&ip.tight[op->in[k]]);
				}
			}
	}
	for (int i = 0; i < g->noutputs && !rc; i++) {
		rc = copy_tensor(&outputs[i], &ip.val[g->outputs[i]], d);
		if (!rc && bounds && (rc = copy_tensor(&bounds[i], &ip.err[g->outputs[i]], d)))
			host_free(&outputs[i]);
		if (rc)
			while (i-- > 0) {
				host_free(&outputs[i]);
				if (bounds)
					host_free(&bounds[i]);
			}
	}
	free(last);
	free(has_tight);
	free_values(ip.val, g->ntensors);
	if (bounds) {
		free_values(ip.err, g->ntensors);
		free_values(ip.tight, g->ntensors);
	}
	return rc;
}

/* a + b, saturating */
static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

uint64_t interp_tensor_bytes(const Tensor *t, DType dtype)
{
	uint64_t n = (uint64_t)ir_dtype_size(dtype);
	for (int k = 0; k < t->rank; k++)
		if (t->dim[k] < 0 || __builtin_mul_overflow(n, (uint64_t)t->dim[k], &n))
			return UINT64_MAX;
	return n;
}

uint64_t interp_peak_bytes(const Graph *g, bool bounds)
{
	size_t nt = (size_t)g->ntensors + 1;
	uint64_t *size = xcalloc(nt, sizeof *size);
	int *last = xmalloc(nt * sizeof *last);
	bool *has_tight = xcalloc(nt, sizeof *has_tight);
	interp_tight_tensors(g, NULL, has_tight);
	for (int t = 0; t < g->ntensors; t++) {
		const Tensor *x = &g->tensors[t];
		uint64_t e = bounds ? interp_tensor_bytes(x, DT_F64) : 0;   /* err */
		size[t] = add_sat(interp_tensor_bytes(x, x->dtype),
				  add_sat(e, has_tight[t] ? e : 0));          /* tight */
		last[t] = x->is_output ? g->nops : -1;
	}
	for (int i = 0; i < g->nops; i++)
		for (int k = 0; k < g->ops[i].nin; k++)
			if (last[g->ops[i].in[k]] < i)
				last[g->ops[i].in[k]] = i;
	/* as interp_run_bounds_tf32 allocates and frees: its copies of the inputs, each
	 * op's value as it runs, values freed after their last reader, then the copies
	 * of the outputs handed back */
	uint64_t live = 0, peak = 0;
	for (int i = 0; i < g->ninputs; i++)
		live = add_sat(live, size[g->inputs[i]]);
	for (int i = 0; i < g->nops; i++) {
		const Op *op = &g->ops[i];
		if (op->kind == OP_SYNC)
			continue;
		live = add_sat(live, size[op->out[0]]);
		peak = live > peak ? live : peak;
		for (int k = 0; k < op->nin; k++) {
			int t = op->in[k];
			if (last[t] == i && g->tensors[t].producer >= 0 && live != UINT64_MAX) {
				live -= size[t];
				size[t] = 0;   /* freed once, however often it is read */
			}
		}
	}
	for (int i = 0; i < g->noutputs; i++)
		live = add_sat(live, size[g->outputs[i]]);
	free(size);
	free(has_tight);
	free(last);
	return live > peak ? live : peak;
}
