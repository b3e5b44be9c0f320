/* interp_impl.h: what host/interp.c (the reference interpreter), host/bounds.c
 * (the error bounds it carries, docs/tolerances.md) and host/interp_run.c (the run
 * of a whole graph) share; not for other files. interp.c computes each op's
 * values; bounds.c, given the values of an op's operands and result, the bound of
 * each result element; interp_run.c runs the two op by op. */
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
	int tf32;              /* INTERP_TF32: f32 matmul operands rounded to tf32
				  (--allow-tf32); INTERP_3XTF32: their products as
				  three tf32 ones (--allow-3xtf32); interp.h */
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
/* Each operand of an elementwise op (x[k]) and its strides (st[k]) read as a
 * tensor of the output's shape. */
void interp_operands(const Interp *ip, const Op *op, const HostTensor **x,
		     int64_t (*st)[IR_MAX_RANK]);
/* The sizes of x before, along and after axis. */
void interp_axis_split(const HostTensor *x, int axis, int64_t *outer, int64_t *len,
		       int64_t *inner);
/* A matmul [.., m, k] x [.., k, n] -> out: its sizes, its nbatch products, and the
 * operands' strides read as tensors of out's shape (batch dims broadcast). */
typedef struct {
	int64_t m, k, n, nbatch;
	int64_t as[IR_MAX_RANK], bs[IR_MAX_RANK];
} MatmulShape;
void interp_matmul_shape(const HostTensor *a, const HostTensor *b, const HostTensor *out,
			 MatmulShape *s);
/* Where the dot product of out's flat element o starts: in a (its row, read with
 * step 1) and in b (its column, read with step n). */
void interp_matmul_at(const MatmulShape *s, const HostTensor *out, int64_t o, int64_t *a0,
		      int64_t *b0);
/* An attention (q, kt, v[, bias | mask]) -> out [.., m, e]: its operands and their
 * strides read as tensors of out's rank (batch dims broadcast), the head dim d and
 * the keys n. */
typedef struct {
	const HostTensor *t[4];
	int64_t st[4][IR_MAX_RANK];
	int64_t m, e, d, n;
} AttShape;
void interp_attention_shape(const Interp *ip, const Op *op, const HostTensor *out,
			    AttShape *s);
/* For row `row` of out (its flat index over all dims but the last): each operand's
 * offset of that row's batch in base; returns the row within the batch. */
int64_t interp_attention_row(const AttShape *s, const Op *op, const HostTensor *out,
			     int64_t row, int64_t *base);
/* Whether key j of row i is masked by the op's `causal` c (j > i + c; Attrs.causal
 * holds 1 + c). */
static inline bool interp_att_masked(const Op *op, int64_t i, int64_t j)
{
	return op->attr->causal && j >= i + op->attr->causal;
}
/* The flat index in x (NCHW) that position (kh, kw) of the 2-d pool window of
 * output position c (n, c, h, w) reads; -1 in the padding. */
/* A conv's or pool's tensors in the op's layout (Attrs.layout): the flat index of
 * element (n, channel, h, w) of t, and output coordinates c (in the layout's
 * order) as (n, channel, h, w) in l. */
int64_t interp_layout_index(const Attrs *at, const HostTensor *t, int64_t n, int64_t ch,
			    int64_t h, int64_t w);
void interp_layout_coords(const Attrs *at, const int64_t *c, int64_t *l);
int64_t interp_pool_at(const Attrs *at, const HostTensor *x, const int64_t *c, int64_t kh,
		       int64_t kw);
/* Run one op (not sync) into out, allocated with its shape: 0, or -1 with ip->d
 * set (a gather index out of range). */
int interp_run_op(Interp *ip, const Op *op, HostTensor *out);
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
static inline DType interp_stored(const Interp *ip, int t)
{
	return ip->store ? ip->store[t] : ip->g->tensors[t].dtype;
}
/* bounds.c: fill eout (f64, out's shape) with the error bound of op's result out,
 * and rout (the same; empty when out carries no tight part) with the tight part of
 * each. */
void bounds_op(Interp *ip, const Op *op, const HostTensor *out, HostTensor *eout,
	       HostTensor *rout);

#endif
