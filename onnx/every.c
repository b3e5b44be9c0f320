/* every.c: an ONNX model read for every size of its dim_params (issue 28).
 *
 * An exporter writes a model's shape arithmetic as nodes (Shape, Gather, Concat,
 * then Reshape or Expand): the sizes flow through values, which the importer folds
 * into constants. So a model is imported twice, each dim_param at a different
 * probe size (import_every_size in import.c), and the two graphs are compared here:
 *  - they must have the same ops on the same tensors, with the same attributes
 *    except sizes;
 *  - a size in a reshape's or an expand's shape, or a slice's length, that differs
 *    between the two is a symbol when it is that symbol's probe in both, or a
 *    product of them and a number (found by factoring over the probes, which are
 *    primes: IrSymbolic.aexpr); else a reshape's entry is written -1, for the
 *    shape rule to infer (one per reshape);
 *  - a constant, a scalar or any other attribute that differs depends on the
 *    sizes in a way the plan cannot follow: refused, named (the importer keeps
 *    the common cases in the graph instead: values.c, builders.c, ops.c);
 * then the shape rules over expressions (ir/infer_sym.c) give every tensor its
 * dims, which must also be the second graph's at the second probe sizes. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "values.h"

static int fail(Diag *d, const Graph *g, int op, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(Diag *d, const Graph *g, int op, const char *fmt, ...)
{
	char ref[200] = "", msg[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (op >= 0)
		ir_op_ref(g, op, ref, sizeof ref);
	diag_set(d, g->file, 0, 0, "%s%s%s; not supported yet in a model compiled for every "
		 "size of its dim_params (fix them with --input-shape)", ref, op >= 0 ? ": " : "",
		 msg);
	return -1;
}

/* Whether two ops' attributes agree in everything but their sizes (shape, range);
 * numbers bit for bit (a NaN fill is the same NaN in both imports). */
static bool same_but_sizes(const Attrs *a, const Attrs *b)
{
	if (!a || !b)
		return a == b;
	return a->has == b->has && !memcmp(&a->scalar, &b->scalar, sizeof a->scalar) &&
	       !memcmp(&a->min, &b->min, sizeof a->min) &&
	       !memcmp(&a->max, &b->max, sizeof a->max) && a->dtype == b->dtype &&
	       a->axis == b->axis && a->n == b->n &&
	       !memcmp(a->axes, b->axes, sizeof a->axes) &&
	       !memcmp(a->stride, b->stride, sizeof a->stride) &&
	       !memcmp(a->padding, b->padding, sizeof a->padding) &&
	       !memcmp(a->dilation, b->dilation, sizeof a->dilation) &&
	       !memcmp(a->kernel, b->kernel, sizeof a->kernel) && a->groups == b->groups &&
	       a->approx == b->approx && a->layout == b->layout;
}

static bool same_op(const Op *a, const Op *b)
{
	if (a->kind != b->kind || a->nin != b->nin || a->nout != b->nout)
		return false;
	for (int k = 0; k < a->nin; k++)
		if (a->in[k] != b->in[k])
			return false;
	for (int k = 0; k < a->nout; k++)
		if (a->out[k] != b->out[k])
			return false;
	return true;
}

/* va, a size at the probes pa, as a monomial c * s0^e0 * s1^e1 ... over the
 * symbols (the probes are primes: it is va's factoring), which must also give vb
 * at the probes pb. */
static bool monomial(int64_t va, int64_t vb, const int64_t *pa, const int64_t *pb, int n,
		     DimExpr *out)
{
	DimExpr e = ir_dim_const(1);
	__int128 at_b = 1;
	for (int s = 0; s < n; s++) {
		if (!ir_is_prime(pa[s]))
			return false;
		while (va % pa[s] == 0) {
			va /= pa[s];
			DimExpr x = ir_dim_sym(s);
			if (ir_dim_mul(&e, &x, &e))
				return false;
			at_b *= pb[s];
			if (at_b > INT64_MAX)
				return false;
		}
	}
	DimExpr c = ir_dim_const(va);
	return at_b * va == vb && !ir_dim_mul(&e, &c, out) && !ir_dim_is_const(out, NULL);
}

/* The Attrs.sym code of the size that is va at the first probes and vb at the
 * second: one symbol, or a monomial (IrSymbolic.aexpr); 0 when neither, -1 when
 * the table is full. */
static int size_code(int64_t va, int64_t vb, const OnnxEvery *ea, const int64_t *pb,
		     IrSymbolic *sy)
{
	for (int s = 0; s < ea->nsym; s++)
		if (ea->probe[s] == va && pb[s] == vb)
			return s + 1;
	DimExpr e;
	if (!monomial(va, vb, ea->probe, pb, ea->nsym, &e))
		return 0;
	int j = 0;
	while (j < sy->naexpr && !ir_dim_equal(&sy->aexpr[j], &e))
		j++;
	if (j == IR_AEXPR_MAX)
		return -1;
	if (j == sy->naexpr)
		sy->aexpr[sy->naexpr++] = e;
	return 1 + IR_SYM_MAX + j;
}

/* A slice's bounds: equal starts; an end that differs is the start plus a size
 * (Attrs.rsym). */
static int range_symbols(Diag *d, Graph *ga, const Graph *gb, int i, const OnnxEvery *ea,
			 const int64_t *pb, IrSymbolic *sy)
{
	Attrs *a = (Attrs *)ga->ops[i].attr;
	const Attrs *b = gb->ops[i].attr;
	for (int k = 0; k < a->n; k++) {
		if (a->range[k][0] != b->range[k][0])
			return fail(d, ga, i, "the start of its dim %d depends on the sizes of the "
				    "dim_params", k);
		if (a->range[k][1] == b->range[k][1])
			continue;
		int code = size_code(a->range[k][1] - a->range[k][0], b->range[k][1] - b->range[k][0],
				     ea, pb, sy);
		if (code <= 0)
			return fail(d, ga, i, "the length of its dim %d, %lld here and %lld at other "
				    "sizes, is not a product of dim_params", k,
				    (long long)(a->range[k][1] - a->range[k][0]),
				    (long long)(b->range[k][1] - b->range[k][0]));
		a->rsym[k] = (uint8_t)code;
	}
	return 0;
}

/* The sizes of op i's shape attribute in terms of the symbols (Attrs.sym): one
 * symbol, or a monomial (IrSymbolic.aexpr), or -1 for one other size in a
 * reshape. */
static int shape_symbols(Diag *d, Graph *ga, const Graph *gb, int i, const OnnxEvery *ea,
			 const int64_t *pb, IrSymbolic *sy)
{
	Attrs *a = (Attrs *)ga->ops[i].attr;
	const Attrs *b = gb->ops[i].attr;
	bool reshape = ga->ops[i].kind == OP_RESHAPE;
	for (int k = 0; k < a->n; k++) {
		if (a->shape[k] == b->shape[k])
			continue;
		int code = size_code(a->shape[k], b->shape[k], ea, pb, sy);
		if (code < 0)
			return fail(d, ga, i, "more than %d different sizes in the shapes of the "
				    "model's ops", IR_AEXPR_MAX);
		if (code) {
			a->sym[k] = (uint8_t)code;
			continue;
		}
		int minus = -1;
		for (int j = 0; j < a->n; j++)
			if (a->shape[j] == -1)
				minus = j;
		if (!reshape)
			return fail(d, ga, i, "entry %d of its shape, %lld here and %lld at other "
				    "sizes, is not a product of dim_params", k, (long long)a->shape[k],
				    (long long)b->shape[k]);
		if (minus >= 0)
			return fail(d, ga, i, "entry %d of its shape, %lld here and %lld at other "
				    "sizes, is not a product of dim_params, and entry %d is already "
				    "left to be computed (-1): a reshape can leave one", k,
				    (long long)a->shape[k], (long long)b->shape[k], minus);
		a->shape[k] = -1;
	}
	return 0;
}

static int compare(Diag *d, Graph *ga, const Graph *gb, const OnnxEvery *ea, const int64_t *pb,
		   IrSymbolic *sy)
{
	int n = ga->nops < gb->nops ? ga->nops : gb->nops;
	for (int i = 0; i < n; i++) {
		const Op *a = &ga->ops[i], *b = &gb->ops[i];
		if (!same_op(a, b))
			return fail(d, ga, i, "the model's ops depend on the sizes of its "
				    "dim_params (at other sizes this op differs)");
		if (a->attr && b->attr && memcmp(&a->attr->scalar, &b->attr->scalar, sizeof(double)))
			return fail(d, ga, i, "its scalar, %g here and %g at other sizes, is computed "
				    "from the sizes of the dim_params (a size used as a value)",
				    a->attr->scalar, b->attr->scalar);
		if (!same_but_sizes(a->attr, b->attr))
			return fail(d, ga, i, "an attribute other than a shape depends on the sizes "
				    "of the dim_params");
		if (a->attr && (a->attr->has & A_SHAPE) && shape_symbols(d, ga, gb, i, ea, pb, sy))
			return -1;
		if (a->attr && (a->attr->has & A_RANGES) && range_symbols(d, ga, gb, i, ea, pb, sy))
			return -1;
	}
	if (ga->nops != gb->nops || ga->ntensors != gb->ntensors || ga->ninputs != gb->ninputs ||
	    ga->noutputs != gb->noutputs)
		return fail(d, ga, n < ga->nops ? n : -1, "the model's ops depend on the sizes of "
			    "its dim_params (%d ops here, %d at other sizes)", ga->nops, gb->nops);
	for (int t = 0; t < ga->ntensors; t++) {
		const Tensor *x = &ga->tensors[t], *y = &gb->tensors[t];
		if (x->dtype != y->dtype || x->rank != y->rank || !x->data != !y->data)
			return fail(d, ga, x->producer, "tensor '%s' depends on the sizes of the "
				    "dim_params", x->name);
		if (!x->data)
			continue;
		int64_t n_el = 1;
		bool same = !memcmp(x->dim, y->dim, sizeof x->dim);
		for (int k = 0; same && k < x->rank; k++)
			n_el *= x->dim[k];
		if (!same || memcmp(x->data, y->data, (size_t)n_el * (size_t)ir_dtype_size(x->dtype)))
			return fail(d, ga, -1, "constant '%s' is computed from the sizes of the "
				    "dim_params (a Range, a ConstantOfShape, a slice or a mask as "
				    "long as one): a value made from a size", x->name);
	}
	return 0;
}

int onnx_every_diff(Graph *ga, const Graph *gb, const OnnxEvery *ea, const int64_t *pb,
		    Diag *d)
{
	IrSymbolic *s = ARENA_NEW(ga->arena, IrSymbolic, 1);
	if (compare(d, ga, gb, ea, pb, s))
		return -1;
	s->nsym = ea->nsym;
	for (int k = 0; k < ea->nsym; k++) {
		s->name[k] = arena_strdup(ga->arena, ea->name[k]);
		s->lo[k] = ea->lo[k];
		s->hi[k] = ea->hi[k];
		s->probe[k] = ea->probe[k];
	}
	s->dim = ARENA_NEW(ga->arena, DimExpr *, ga->ntensors + 1);
	s->ndim = ga->ntensors;
	for (int t = 0; t < ga->ntensors; t++) {
		const Tensor *x = &ga->tensors[t];
		s->dim[t] = ARENA_NEW(ga->arena, DimExpr, x->rank + 1);
		for (int k = 0; k < x->rank; k++) {
			int sym = t < ea->cin && x->producer < 0 ? ea->insym[t * IR_MAX_RANK + k] : -1;
			s->dim[t][k] = sym >= 0 ? ir_dim_sym(sym) : ir_dim_const(x->dim[k]);
		}
	}
	if (ir_infer_symbolic(ga, s, d))
		return -1;
	/* the expressions must give the second import's sizes too */
	for (int t = 0; t < ga->ntensors; t++)
		for (int k = 0; k < ga->tensors[t].rank; k++) {
			int64_t v;
			if (ir_dim_eval(&s->dim[t][k], pb, &v) || v != gb->tensors[t].dim[k]) {
				Buf b = {0};
				ir_dim_print(&b, &s->dim[t][k], s->name);
				int rc = fail(d, ga, ga->tensors[t].producer, "dim %d of '%s' would be "
					      "%s, which the model contradicts at other sizes", k,
					      ga->tensors[t].name, b.data ? b.data : "");
				buf_free(&b);
				return rc;
			}
		}
	int64_t clash;
	if (ir_sym_check(ga, s, &clash))
		return fail(d, ga, -1, "two different sizes are both %lld at the probe sizes",
			    (long long)clash);
	ga->sym = s;
	return 0;
}
