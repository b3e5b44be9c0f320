/* interp_impl.h: what host/interp.c (the reference interpreter) and host/bounds.c
 * (the error bounds it carries, docs/tolerances.md) share; not for other files.
 * interp.c computes each op's values; bounds.c, given the values of an op's
 * operands and result, the bound of each result element. */
#ifndef FUSEC_INTERP_IMPL_H
#define FUSEC_INTERP_IMPL_H

#include "interp.h"

static const double pi = 3.14159265358979323846;

typedef struct Interp {
	const Graph *g;
	HostTensor *val;       /* one per graph tensor; empty until computed */
	Diag *d;
	int opi;               /* the op being run, for messages */
	HostTensor *err;       /* NULL, or one f64 error bound per value (bounds.c) */
	HostTensor *tight;     /* with err: the tight part of each bound, or empty
				  where it is all 0 (bounds.c) */
	bool tf32;             /* f32 matmul operands rounded to tf32 (--allow-tf32) */
	const DType *store;    /* NULL, or per tensor the dtype a kernel stores it in,
				  where the values are computed in another (--precision's
				  shadow graph: interp_run_bounds_stored) */
} Interp;

/* Strides of a dense C-order tensor. */
void interp_contiguous_strides(const HostTensor *t, int64_t *st);
/* Strides of x read as a tensor of out's shape (equal ranks): size-1 dims repeat. */
void interp_broadcast_strides(const HostTensor *x, int64_t *st);
/* The offset of element i of a tensor shaped like out, read through strides st. */
int64_t interp_offset_of(const HostTensor *out, int64_t i, const int64_t *st);
/* The multi-index of flat element i of t. */
void interp_coords_of(const HostTensor *t, int64_t i, int64_t *c);
double interp_attr_scalar(const Op *op);
/* One float elementwise result of op on operands a, b (value dtype vt). */
double interp_float_elem(const Op *op, DType vt, double a, double b);
/* The views and cat, on ip->val (bounds.c runs them on the bounds). */
void interp_run_view(Interp *ip, const Op *op, HostTensor *out);
void interp_run_cat(Interp *ip, const Op *op, HostTensor *out);
/* The input position that window position k of output position o reads along
 * spatial axis ax; -1 in the padding. */
int64_t interp_window_pos(const Attrs *at, int ax, int64_t o, int64_t k, int dilation,
			  int64_t size);

/* bounds.c: which tensors carry tight parts (has, one per tensor): an f16/bf16
 * result and what an op makes of one; the others' tight parts are all 0 and are
 * not kept (ip->tight[t] empty), so f32 and f64 graphs need no memory for them. */
void interp_tight_tensors(const Graph *g, const DType *store, bool *has);
/* The dtype tensor t is stored in by the kernels: ip->store's, else its own. */
DType interp_stored(const Interp *ip, int t);
/* bounds.c: fill eout (f64, out's shape) with the error bound of op's result out,
 * and rout (the same; empty when out carries no tight part) with the tight part of
 * each. */
void bounds_op(Interp *ip, const Op *op, const HostTensor *out, HostTensor *eout,
	       HostTensor *rout);

#endif
