/* ops_util.h: the builders ops.c's handlers use, shared with the handlers that
 * live in their own files (ops_resize.c, ops_more.c). Every builder goes through
 * imp_emit, so ops on constants fold; each returns NULL (or -1) with the Diag
 * filled on error and passes a NULL operand through. Private to onnx/. */
#ifndef FUSEC_ONNX_OPS_UTIL_H
#define FUSEC_ONNX_OPS_UTIL_H

#include "import.h"

struct Onnx__AttributeProto;

/* attributes of the node being imported */
const struct Onnx__AttributeProto *attr(Imp *m, const char *name);
int64_t ai(Imp *m, const char *name, int64_t def);
double af(Imp *m, const char *name, double def);
/* an ints attribute: its count (at most max), -1 when absent, -2 (error set) */
int aints(Imp *m, const char *name, int64_t *v, int max);
void astr(Imp *m, const char *name, char *out, size_t size, const char *def);

/* constants */
Val *kfull(Imp *m, DType t, int rank, const int64_t *dim, double v);
Val *kints(Imp *m, const int64_t *v, int n);
int ints_of(Imp *m, const Val *v, const char *what, int64_t *out, int max);
int scalar_of(Imp *m, const Val *v, const char *what, double *out);
int norm_axis(Imp *m, int64_t *axis, int rank);
int64_t count(const Val *v);

/* ops */
Val *reshape(Imp *m, Val *x, int rank, const int64_t *dim);
Val *lift(Imp *m, Val *x, int r);
Val *expand(Imp *m, Val *x, int rank, const int64_t *dim);
Val *permute(Imp *m, Val *x, const int *axes);
Val *cast(Imp *m, Val *x, DType t);
Val *un(Imp *m, OpKind k, Val *x);
Val *gelu(Imp *m, Val *x, GeluApprox approx);
Val *sc(Imp *m, OpKind k, Val *x, double s);
Val *clampv(Imp *m, Val *x, double lo, double hi);
Val *bin(Imp *m, OpKind k, Val *a, Val *b);    /* ONNX broadcasting */
Val *where3(Imp *m, Val *c, Val *a, Val *b);
Val *reduce(Imp *m, OpKind k, Val *x, int axis);
Val *reduce_axes(Imp *m, OpKind k, Val *x, const bool *on, bool keep);
Val *slice1(Imp *m, Val *x, int axis, int64_t start, int64_t end);
Val *cat(Imp *m, Val **in, int n, int axis);
Val *take(Imp *m, Val *x, int axis, const int64_t *idx, int64_t k);
/* ops_resize.c: a computed zero [1, .., 1] (expands to a view, not a constant);
 * a gather at constant positions along one axis through an expanded index */
Val *zero_of(Imp *m, Val *x, DType dt);
Val *take_axis(Imp *m, Val *x, int axis, const int64_t *idx, int64_t n);
Val *pad_axis(Imp *m, Val *x, int a, int64_t before, int64_t after, double value);
Val *fix_index(Imp *m, Val *idx, int64_t size);
Val *matmul(Imp *m, Val *a, Val *b);

int need_in(Imp *m, Val **in, int nin, int want);
int need_float(Imp *m, const Val *x);
int one_output(Imp *m, int nout);

#define H(name) static int name(Imp *m, const OnnxHandler *h, Val **in, int nin, Val **out, \
				int nout)
#define NEED(n) do { if (need_in(m, in, nin, (n)) || one_output(m, nout)) return -1; } while (0)
#define OUT(v) do { out[0] = (v); return out[0] ? 0 : -1; } while (0)

/* handlers defined outside ops.c, for its table */
#define HANDLER(name) int name(Imp *m, const OnnxHandler *h, Val **in, int nin, Val **out, \
			       int nout)
HANDLER(h_arc);
HANDLER(h_conv_transpose);
HANDLER(h_dequantize);
HANDLER(h_dyn_quantize);
HANDLER(h_cumsum);
HANDLER(h_einsum);
HANDLER(h_eyelike);
HANDLER(h_gathernd);
HANDLER(h_hardmax);
HANDLER(h_hyperbolic);
HANDLER(h_lrn);
HANDLER(h_mvn);
HANDLER(h_nllloss);
HANDLER(h_onehot);
HANDLER(h_quantize);
HANDLER(h_shrink);
HANDLER(h_window);
HANDLER(h_resize);
HANDLER(h_scatter_elements);
HANDLER(h_scatternd);
HANDLER(h_sce_loss);
HANDLER(h_upsample);

#endif
