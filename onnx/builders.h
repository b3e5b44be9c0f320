/* builders.h: what a handler of an ONNX op is, and the builders it makes fusec's
 * ops with (builders.c), shared by the handler rooms: ops.c (its table and the
 * common ops), ops_index.c, ops_math.c, ops_resize.c. Every builder goes through
 * imp_emit, so ops on constants fold; each returns NULL (or -1) with the Diag
 * filled on error and passes a NULL operand through. Prefix: ob_. Private to
 * onnx/. */
#ifndef FUSEC_ONNX_BUILDERS_H
#define FUSEC_ONNX_BUILDERS_H

#include "values.h"

struct Onnx__AttributeProto;

/* One ONNX op's handler: it reads the node (m->n) and its inputs and sets its
 * outputs, 0 or -1 with the Diag filled. */
typedef struct OnnxHandler OnnxHandler;
struct OnnxHandler {
	const char *name;      /* ONNX op_type */
	int (*fn)(Imp *m, const OnnxHandler *h, Val **in, int nin, Val **out, int nout);
	OpKind kind;           /* the primitive op, for handlers shared by several */
	int arg;               /* handler-specific */
};

/* Bounds on what an import computes: the elements of a constant built from a shape
 * or attributes, and of a result folded from constant operands that is larger
 * than they are (a hostile model must not make the import slow or huge). */
enum { SHAPE_CONST_MAX = 1 << 22, FOLD_MAX = 1 << 22 };

/* attributes of the node being imported */
const struct Onnx__AttributeProto *ob_attr(Imp *m, const char *name);
int64_t ob_ai(Imp *m, const char *name, int64_t def);
double ob_af(Imp *m, const char *name, double def);
/* an ints attribute: its count (at most max), -1 when absent, -2 (error set) */
int ob_aints(Imp *m, const char *name, int64_t *v, int max);
void ob_astr(Imp *m, const char *name, char *out, size_t size, const char *def);

/* constants */
/* A constant a handler makes (a fill, a mask, an index table) has at most
 * IMP_MAX_MADE elements, and its elements are spent from the import's budget
 * (values.h): -1 (error set) when one of shape dim may not be made. */
int ob_made_fits(Imp *m, int rank, const int64_t *dim);
/* An index table of n entries for ob_take() (freed by the caller), or NULL (error set). */
int64_t *ob_index_table(Imp *m, int64_t n);
Val *ob_kfull(Imp *m, DType t, int rank, const int64_t *dim, double v);
Val *ob_kints(Imp *m, const int64_t *v, int n);
/* A constant [1.., n at axis, ..1] of rank `rank`, from doubles (v) or ints (iv). */
Val *ob_axis_const(Imp *m, DType dt, int rank, int axis, const double *v,
		   const int64_t *iv, int64_t n);
int ob_ints_of(Imp *m, const Val *v, const char *what, int64_t *out, int max);
int ob_scalar_of(Imp *m, const Val *v, const char *what, double *out);
int ob_norm_axis(Imp *m, int64_t *axis, int rank);
int64_t ob_count(const Val *v);

/* ops */
Val *ob_reshape(Imp *m, Val *x, int rank, const int64_t *dim);
Val *ob_lift(Imp *m, Val *x, int r);
Val *ob_expand(Imp *m, Val *x, int rank, const int64_t *dim);
Val *ob_permute(Imp *m, Val *x, const int *axes);
Val *ob_cast(Imp *m, Val *x, DType t);
/* A constant float operand v of another float dtype than x's, converted to x's (a
 * folded constant): the dynamo exporter leaves batch norms folded into conv weights
 * in f32 beside a bf16 graph. Anything else is v. */
Val *ob_const_as(Imp *m, Val *v, const Val *x);
Val *ob_un(Imp *m, OpKind k, Val *x);
Val *ob_gelu(Imp *m, Val *x, GeluApprox approx);
Val *ob_sc(Imp *m, OpKind k, Val *x, double s);
Val *ob_clampv(Imp *m, Val *x, double lo, double hi);
Val *ob_bin(Imp *m, OpKind k, Val *a, Val *b);    /* ONNX broadcasting */
/* A model read for every size (Imp.every): a constant scalar that may be a size
 * (an integer that a probe divides, met as an operand of a value) counted in the
 * graph, the sum of that many ones, so that every.c finds the size in the expand
 * that makes them; any other value as it is. */
Val *ob_sized(Imp *m, Val *k);
Val *ob_where3(Imp *m, Val *c, Val *a, Val *b);
Val *ob_reduce(Imp *m, OpKind k, Val *x, int axis);
Val *ob_reduce_axes(Imp *m, OpKind k, Val *x, const bool *on, bool keep);
Val *ob_slice1(Imp *m, Val *x, int axis, int64_t start, int64_t end);
Val *ob_cat(Imp *m, Val **in, int n, int axis);
Val *ob_take(Imp *m, Val *x, int axis, const int64_t *idx, int64_t k);
/* a computed zero [1, .., 1] (expands to a view, not a constant); a gather at
 * constant positions along one axis through an expanded index */
Val *ob_zero_of(Imp *m, Val *x, DType dt);
Val *ob_take_axis(Imp *m, Val *x, int axis, const int64_t *idx, int64_t n);
Val *ob_pad_axis(Imp *m, Val *x, int a, int64_t before, int64_t after, double value);
/* x with zeros around axis a, as a view where x is not a constant */
Val *ob_zpad(Imp *m, Val *x, int a, int64_t before, int64_t after);
Val *ob_matmul(Imp *m, Val *a, Val *b);

/* what a handler checks first: its inputs, a float input, a single output */
int ob_need_in(Imp *m, Val **in, int nin, int want);
int ob_need_float(Imp *m, const Val *x);
int ob_one_output(Imp *m, int nout);

#define H(name) static int name(Imp *m, const OnnxHandler *h, Val **in, int nin, Val **out, \
				int nout)
#define NEED(n) do { if (ob_need_in(m, in, nin, (n)) || ob_one_output(m, nout)) return -1; } while (0)
#define OUT(v) do { out[0] = (v); return out[0] ? 0 : -1; } while (0)
/* a handler that ops.c's table names but another room defines */
#define HANDLER(name) int name(Imp *m, const OnnxHandler *h, Val **in, int nin, Val **out, \
			       int nout)

#endif
