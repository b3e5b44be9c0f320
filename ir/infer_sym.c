/* infer_sym.c: the shapes of a graph compiled for every size of its named dims, as
 * expressions over them (issue 28; dim_expr.h).
 *
 * The builder reads such a graph once with each symbolic dim at a probe size
 * (ir/build.c, `bind_inputs`), so every tensor has concrete dims as before and the
 * search, the kernels and their launches are made from them. This pass walks the
 * ops in order and gives each tensor dim its expression, by the op's shape rule
 * written over expressions: broadcasting, views, reductions, matmul and
 * attention, cat and gather. An op whose inputs have no symbolic dim keeps its
 * concrete shape. An op whose result the rules cannot write (a slice of a
 * symbolic dim, a window over one) is an error that names it.
 *
 * The expressions must agree with the concrete dims at the probe; ir_sym_check
 * makes sure that two different expressions never share a size there, so that the
 * relative form, which names dims by their size, gives each expression its own
 * shape id (the rebinding of codegen depends on it). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

typedef struct {
	const Graph *g;
	IrSymbolic *s;
	const Op *op;
	int opi;
	Diag *d;
} SymInfer;

static int fail(SymInfer *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(SymInfer *c, const char *fmt, ...)
{
	char ref[160], msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	ir_op_ref(c->g, c->opi, ref, sizeof ref);
	diag_set(c->d, c->g->file, c->op->line, c->op->col,
		 "%s (%s): %s; not supported yet for a graph compiled for every size of "
		 "its named dims (bind them with --input-shape)", ref, ir_ops[c->op->kind].file,
		 msg);
	return -1;
}

static const DimExpr *in_dim(SymInfer *c, int k, int i)
{
	return &c->s->dim[c->op->in[k]][i];
}

static const char *text(SymInfer *c, const DimExpr *e)
{
	static char out[2][96];
	static int which;
	Buf b = {0};
	ir_dim_print(&b, e, c->s->name);
	char *o = out[which ^= 1];
	snprintf(o, sizeof out[0], "%s", b.len ? b.data : "");
	buf_free(&b);
	return o;
}

/* Broadcast two dims: equal, or one of them the constant 1. */
static int bcast(SymInfer *c, const DimExpr *a, const DimExpr *b, DimExpr *out)
{
	int64_t v;
	if (ir_dim_equal(a, b) || (ir_dim_is_const(b, &v) && v == 1))
		*out = *a;
	else if (ir_dim_is_const(a, &v) && v == 1)
		*out = *b;
	else
		return fail(c, "dims %s and %s broadcast only when they are equal", text(c, a),
			    text(c, b));
	return 0;
}

static int product(SymInfer *c, const DimExpr *d, int n, DimExpr *out)
{
	*out = ir_dim_const(1);
	for (int i = 0; i < n; i++)
		if (ir_dim_mul(out, &d[i], out))
			return fail(c, "the size expression grows too large");
	return 0;
}

DimExpr ir_sym_code(const IrSymbolic *s, int code)
{
	return code > IR_SYM_MAX ? s->aexpr[code - 1 - IR_SYM_MAX] : ir_dim_sym(code - 1);
}

/* An attribute's shape entry: the name written there or the expression found for
 * it (Attrs.sym), else the number. */
static DimExpr attr_dim(SymInfer *c, int i)
{
	int s = c->op->attr->sym[i];
	return s ? ir_sym_code(c->s, s) : ir_dim_const(c->op->attr->shape[i]);
}

static int rule(SymInfer *c, DimExpr *out, int rank)
{
	const Op *op = c->op;
	const Attrs *at = op->attr;
	const Tensor *x = &c->g->tensors[op->in[0]];
	switch (op->kind) {
	case OP_RESHAPE: {
		DimExpr total, known = ir_dim_const(1);
		if (product(c, c->s->dim[op->in[0]], x->rank, &total))
			return -1;
		int at_minus1 = -1;
		for (int i = 0; i < rank; i++) {
			if (at->shape[i] == -1) {
				at_minus1 = i;
				continue;
			}
			out[i] = attr_dim(c, i);
			if (ir_dim_mul(&known, &out[i], &known))
				return fail(c, "the size expression grows too large");
		}
		if (at_minus1 >= 0 && ir_dim_div(&total, &known, &out[at_minus1]))
			return fail(c, "-1 would be %s / %s", text(c, &total), text(c, &known));
		if (at_minus1 < 0 && !ir_dim_equal(&total, &known))
			return fail(c, "%s elements reshaped into %s", text(c, &total),
				    text(c, &known));
		return 0;
	}
	case OP_PERMUTE:
		for (int i = 0; i < rank; i++)
			out[i] = *in_dim(c, 0, at->axes[i]);
		return 0;
	case OP_SWAP_DIMS:
		for (int i = 0; i < rank; i++)
			out[i] = *in_dim(c, 0, i);
		out[at->axes[0]] = *in_dim(c, 0, at->axes[1]);
		out[at->axes[1]] = *in_dim(c, 0, at->axes[0]);
		return 0;
	case OP_EXPAND:
		for (int i = 0; i < rank; i++) {
			DimExpr to = attr_dim(c, i);
			if (bcast(c, in_dim(c, 0, i), &to, &out[i]))
				return -1;
			if (!ir_dim_equal(&out[i], &to))
				return fail(c, "dim %d expands %s to %s", i, text(c, in_dim(c, 0, i)),
					    text(c, &to));
		}
		return 0;
	case OP_SLICE:
		for (int i = 0; i < rank; i++) {
			out[i] = *in_dim(c, 0, i);
			if (i >= at->n)
				continue;
			if (at->rsym[i]) {
				/* a length that is a size: the whole of a dim of that size, or the
				 * head of a fixed one that its largest size fits */
				DimExpr len = ir_sym_code(c->s, at->rsym[i]);
				int64_t in, top;
				if (ir_dim_equal(&len, &out[i]) && at->range[i][0] == 0)
					continue;
				if (!ir_dim_is_const(&out[i], &in))
					return fail(c, "dim %d of size %s is sliced to %s", i,
						    text(c, &out[i]), text(c, &len));
				if (ir_dim_eval(&len, c->s->hi, &top) || top > in - at->range[i][0])
					return fail(c, "dim %d takes %s of its %lld from %lld: give the "
						    "named dims ranges it fits (--dims)", i, text(c, &len),
						    (long long)in, (long long)at->range[i][0]);
				out[i] = len;
				continue;
			}
			if (!ir_dim_is_const(&out[i], NULL))
				return fail(c, "dim %d of size %s is sliced", i, text(c, &out[i]));
			out[i] = ir_dim_const(at->range[i][1] - at->range[i][0]);
		}
		return 0;
	case OP_MATMUL:
	case OP_ATTENTION: {
		int last = op->kind == OP_MATMUL ? 1 : 2;   /* the operand giving the columns */
		for (int i = 0; i < rank - 2; i++) {
			out[i] = *in_dim(c, 0, i);
			for (int k = 1; k <= last; k++)
				if (bcast(c, &out[i], in_dim(c, k, i), &out[i]))
					return -1;
		}
		out[rank - 2] = *in_dim(c, 0, rank - 2);
		out[rank - 1] = *in_dim(c, last, rank - 1);
		/* the inner dims must be one expression, as they are one size */
		const DimExpr *inner_a = in_dim(c, 0, rank - 1), *inner_b = in_dim(c, 1, rank - 2);
		if (!ir_dim_equal(inner_a, inner_b))
			return fail(c, "inner dims %s and %s differ", text(c, inner_a),
				    text(c, inner_b));
		if (op->kind == OP_ATTENTION && !ir_dim_equal(in_dim(c, 1, rank - 1), in_dim(c, 2, rank - 2)))
			return fail(c, "key and value lengths %s and %s differ",
				    text(c, in_dim(c, 1, rank - 1)), text(c, in_dim(c, 2, rank - 2)));
		return 0;
	}
	case OP_CAT:
		for (int i = 0; i < rank; i++)
			out[i] = *in_dim(c, 0, i);
		for (int k = 1; k < op->nin; k++)
			for (int i = 0; i < rank; i++) {
				if (i == at->axis) {
					if (ir_dim_add(&out[i], in_dim(c, k, i), &out[i]))
						return fail(c, "the size expression grows too large");
				} else if (!ir_dim_equal(&out[i], in_dim(c, k, i))) {
					return fail(c, "dims %s and %s differ outside the axis",
						    text(c, &out[i]), text(c, in_dim(c, k, i)));
				}
			}
		return 0;
	case OP_GATHER:
		for (int i = 0; i < rank; i++)
			out[i] = *in_dim(c, 1, i);
		return 0;
	default:
		break;
	}
	switch (ir_ops[op->kind].family) {
	case FAM_BINARY:
	case FAM_COMPARE:
	case FAM_SELECT:
		for (int i = 0; i < rank; i++) {
			out[i] = *in_dim(c, 0, i);
			for (int k = 1; k < op->nin; k++)
				if (bcast(c, &out[i], in_dim(c, k, i), &out[i]))
					return -1;
		}
		return 0;
	case FAM_SCALAR:
	case FAM_UNARY:
	case FAM_CAST:
		for (int i = 0; i < rank; i++)
			out[i] = *in_dim(c, 0, i);
		return 0;
	case FAM_REDUCE:
		for (int i = 0; i < rank; i++)
			out[i] = i == at->axis ? ir_dim_const(1) : *in_dim(c, 0, i);
		return 0;
	case FAM_MODULE: {
		/* conv2d and the pools: the images may be symbolic, nothing else */
		int ch = at && at->layout == LAYOUT_NHWC ? 3 : 1;
		for (int i = 1; i < 4; i++)
			if (!ir_dim_is_const(in_dim(c, 0, i), NULL))
				return fail(c, "input dim %d of size %s is %s", i,
					    text(c, in_dim(c, 0, i)), i == ch ? "channels" : "spatial");
		const Tensor *y = &c->g->tensors[op->out[0]];
		out[0] = *in_dim(c, 0, 0);
		for (int i = 1; i < 4; i++)
			out[i] = ir_dim_const(y->dim[i]);
		return 0;
	}
	default:
		return fail(c, "no shape rule over named dims");
	}
}

static bool all_const(const IrSymbolic *s, const Graph *g, const Op *op)
{
	/* a shape that names a symbol (an expand of a constant to the batch), a slice
	 * as long as one */
	for (int i = 0; op->attr && i < op->attr->n; i++)
		if (((op->attr->has & A_SHAPE) && op->attr->sym[i]) ||
		    ((op->attr->has & A_RANGES) && op->attr->rsym[i]))
			return false;
	for (int k = 0; k < op->nin; k++)
		for (int i = 0; i < g->tensors[op->in[k]].rank; i++)
			if (!ir_dim_is_const(&s->dim[op->in[k]][i], NULL))
				return false;
	return true;
}

int ir_infer_symbolic(const Graph *g, IrSymbolic *s, Diag *d)
{
	SymInfer c = {g, s, NULL, 0, d};
	for (int i = 0; i < g->nops; i++) {
		const Op *op = &g->ops[i];
		if (op->kind == OP_SYNC)
			continue;
		c.op = op;
		c.opi = i;
		for (int j = 0; j < op->nout; j++) {
			const Tensor *y = &g->tensors[op->out[j]];
			DimExpr *out = s->dim[op->out[j]];
			if (all_const(s, g, op)) {
				for (int k = 0; k < y->rank; k++)
					out[k] = ir_dim_const(y->dim[k]);
				continue;
			}
			if (rule(&c, out, y->rank))
				return -1;
			/* the rule must give the size the concrete inference gave */
			for (int k = 0; k < y->rank; k++) {
				int64_t v;
				if (ir_dim_eval(&out[k], s->probe, &v) || v != y->dim[k])
					return fail(&c, "internal: dim %d is %s, which is not %lld at "
						    "the probe sizes", k, text(&c, &out[k]),
						    (long long)y->dim[k]);
			}
		}
	}
	return 0;
}

int ir_sym_refresh(Graph *g, Diag *d)
{
	IrSymbolic *s = (IrSymbolic *)g->sym;
	if (!s)
		return 0;
	DimExpr **dim = ARENA_NEW(g->arena, DimExpr *, g->ntensors + 1);
	for (int t = 0; t < g->ntensors; t++) {
		const Tensor *x = &g->tensors[t];
		if (x->producer < 0 && t < s->ndim) {
			dim[t] = s->dim[t];
			continue;
		}
		dim[t] = ARENA_NEW(g->arena, DimExpr, x->rank + 1);
		for (int k = 0; k < x->rank; k++)
			dim[t][k] = ir_dim_const(x->dim[k]);
	}
	s->dim = dim;
	s->ndim = g->ntensors;
	return ir_infer_symbolic(g, s, d);
}

typedef struct {
	int64_t v;
	const DimExpr *e;
} ValExpr;

static int by_value(const void *a, const void *b)
{
	const ValExpr *x = a, *y = b;
	return (x->v > y->v) - (x->v < y->v);
}

int ir_sym_check(const Graph *g, const IrSymbolic *s, int64_t *clash)
{
	int64_t n = 0;
	for (int t = 0; t < g->ntensors; t++)
		n += g->tensors[t].rank;
	ValExpr *all = xcalloc((size_t)n + 1, sizeof *all);
	int64_t k = 0;
	for (int t = 0; t < g->ntensors; t++)
		for (int i = 0; i < g->tensors[t].rank; i++)
			all[k++] = (ValExpr){g->tensors[t].dim[i], &s->dim[t][i]};
	qsort(all, (size_t)n, sizeof *all, by_value);
	int rc = 0;
	for (int64_t i = 1; i < n && !rc; i++)
		if (all[i].v == all[i - 1].v && !ir_dim_equal(all[i].e, all[i - 1].e)) {
			*clash = all[i].v;
			rc = -1;
		}
	free(all);
	return rc;
}

void ir_sym_text(Buf *b, const IrSymbolic *s, const DimExpr *d, int rank)
{
	buf_putc(b, '[');
	for (int i = 0; i < rank; i++) {
		if (i)
			buf_putc(b, ',');
		ir_dim_print(b, &d[i], s->name);
	}
	buf_putc(b, ']');
}

int ir_sym_bind(const Graph *gs, const Graph *g, int64_t *val, Diag *d)
{
	const IrSymbolic *s = gs->sym;
	if (g->ntensors < gs->ntensors || g->ninputs != gs->ninputs) {
		diag_set(d, g->file, 0, 0, "internal: the graph at its sizes is not the graph "
			 "read for every size");
		return -1;
	}
	for (int k = 0; k < s->nsym; k++)
		val[k] = 0;
	for (int i = 0; i < gs->ninputs; i++) {
		int t = gs->inputs[i];
		for (int j = 0; j < gs->tensors[t].rank; j++) {
			int k;
			if (ir_dim_is_sym(&s->dim[t][j], &k))
				val[k] = g->tensors[t].dim[j];
		}
	}
	for (int t = 0; t < gs->ntensors; t++) {
		const Tensor *x = &g->tensors[t];
		for (int j = 0; j < x->rank; j++) {
			int64_t v;
			if (x->rank != gs->tensors[t].rank || ir_dim_eval(&s->dim[t][j], val, &v) ||
			    v != x->dim[j]) {
				Buf b = {0};
				ir_sym_text(&b, s, s->dim[t], gs->tensors[t].rank);
				diag_set(d, g->file, 0, 0, "tensor '%s' is %s at these sizes, but its "
					 "shape for every size, %s, says otherwise", x->name,
					 ir_shape_text(x->rank, x->dim).s, b.data);
				buf_free(&b);
				return -1;
			}
		}
	}
	return 0;
}

Graph *ir_sym_instance(const Graph *gs, const Graph *g, Diag *d)
{
	const IrSymbolic *s = gs->sym;
	int64_t val[IR_SYM_MAX] = {0};
	/* the symbols' sizes from g's inputs, matched by name */
	for (int i = 0; i < gs->ninputs; i++) {
		const Tensor *x = &gs->tensors[gs->inputs[i]];
		if (x->data || x->src)
			continue;
		const Tensor *y = NULL;
		for (int j = 0; j < g->ninputs && !y; j++)
			if (!strcmp(g->tensors[g->inputs[j]].name, x->name))
				y = &g->tensors[g->inputs[j]];
		if (!y || y->rank != x->rank) {
			diag_set(d, g->file, 0, 0, "internal: input '%s' of the graph for every size "
				 "is not an input of rank %d here", x->name, x->rank);
			return NULL;
		}
		for (int k = 0; k < x->rank; k++) {
			int sy;
			int64_t c;
			if (ir_dim_is_sym(&s->dim[gs->inputs[i]][k], &sy)) {
				int64_t v = y->dim[k];
				if (v < s->lo[sy] || v > s->hi[sy]) {
					diag_set(d, g->file, 0, 0, "input '%s' dim %d is %lld: '%s' is "
						 "compiled for %lld..%lld", x->name, k, (long long)v,
						 s->name[sy], (long long)s->lo[sy], (long long)s->hi[sy]);
					return NULL;
				}
				if (val[sy] && val[sy] != v) {
					diag_set(d, g->file, 0, 0, "input '%s' dim %d is %lld, but another "
						 "input made '%s' %lld", x->name, k, (long long)v,
						 s->name[sy], (long long)val[sy]);
					return NULL;
				}
				val[sy] = v;
			} else if (ir_dim_is_const(&s->dim[gs->inputs[i]][k], &c) && c != y->dim[k]) {
				diag_set(d, g->file, 0, 0, "input '%s' dim %d is %lld, not %lld", x->name,
					 k, (long long)y->dim[k], (long long)c);
				return NULL;
			}
		}
	}
	for (int k = 0; k < s->nsym; k++)
		if (!val[k]) {
			diag_set(d, g->file, 0, 0, "internal: no input gives '%s'", s->name[k]);
			return NULL;
		}
	return ir_sym_at(gs, val, false, d);
}

Graph *ir_sym_at(const Graph *gs, const int64_t *val, bool keep_sym, Diag *d)
{
	const IrSymbolic *s = gs->sym;
	Arena *a = gs->arena;
	Graph *gi = ARENA_NEW(a, Graph, 1);
	*gi = *gs;
	gi->sym = keep_sym ? s : NULL;
	gi->tensors = ARENA_NEW(a, Tensor, gs->ntensors + 1);
	for (int t = 0; t < gs->ntensors; t++) {
		Tensor *x = &gi->tensors[t];
		*x = gs->tensors[t];
		for (int k = 0; k < x->rank; k++)
			if (ir_dim_eval(&s->dim[t][k], val, &x->dim[k]) || x->dim[k] < 1) {
				diag_set(d, gs->file, 0, 0, "tensor '%s' has no size at these sizes "
					 "(dim %d)", x->name, k);
				return NULL;
			}
	}
	gi->ops = ARENA_NEW(a, Op, gs->nops + 1);
	for (int i = 0; i < gs->nops; i++) {
		Op *op = &gi->ops[i];
		*op = gs->ops[i];
		if (!op->attr || !(op->attr->has & (A_SHAPE | A_RANGES)))
			continue;
		Attrs *at = ARENA_NEW(a, Attrs, 1);
		*at = *op->attr;
		for (int k = 0; k < at->n; k++) {
			int64_t v;
			int code = (at->has & A_SHAPE) ? at->sym[k] : 0;
			int rcode = (at->has & A_RANGES) ? at->rsym[k] : 0;
			DimExpr e = ir_sym_code(s, code ? code : rcode ? rcode : 1);
			if ((code || rcode) && ir_dim_eval(&e, val, &v)) {
				diag_set(d, gs->file, 0, 0, "a size of op %d overflows at these sizes", i);
				return NULL;
			}
			if (code)
				at->shape[k] = v;
			if (rcode)
				at->range[k][1] = at->range[k][0] + v;
			at->sym[k] = at->rsym[k] = 0;
		}
		op->attr = at;
	}
	return gi;
}

bool ir_is_prime(int64_t v)
{
	if (v < 2)
		return false;
	for (int64_t p = 2; p * p <= v; p++)
		if (v % p == 0)
			return false;
	return true;
}

static bool taken(int64_t v, const int64_t *used, int nused)
{
	for (int i = 0; i < nused; i++)
		if (used[i] == v)
			return true;
	return false;
}

int64_t ir_sym_probe(int64_t lo, int64_t hi, const int64_t *used, int nused)
{
	int64_t top = hi < IR_PROBE_TOP ? hi : IR_PROBE_TOP, bottom = lo > 2 ? lo : 2;
	for (int64_t x = top; x >= bottom; x--)
		if (ir_is_prime(x) && !taken(x, used, nused))
			return x;
	for (int64_t x = top; x >= bottom; x--)
		if (!taken(x, used, nused))
			return x;
	return 0;
}

const DimExpr *ir_sym_of_size(const Graph *g, int64_t v)
{
	const IrSymbolic *s = g->sym;
	for (int t = 0; s && t < g->ntensors && t < s->ndim; t++)
		for (int k = 0; k < g->tensors[t].rank; k++)
			if (g->tensors[t].dim[k] == v)
				return &s->dim[t][k];
	return NULL;
}

void ir_sym_header(Buf *b, const Graph *g)
{
	const IrSymbolic *s = g->sym;
	if (!s)
		return;
	buf_puts(b, "for every ");
	for (int k = 0; k < s->nsym; k++)
		if (s->hi[k] == IR_DIM_TOP)
			buf_printf(b, "%s%s ≥ %lld", k ? ", " : "", s->name[k], (long long)s->lo[k]);
		else
			buf_printf(b, "%s%s in %lld..%lld", k ? ", " : "", s->name[k],
				   (long long)s->lo[k], (long long)s->hi[k]);
	buf_puts(b, " (built at ");
	for (int k = 0; k < s->nsym; k++)
		buf_printf(b, "%s%s=%lld", k ? ", " : "", s->name[k], (long long)s->probe[k]);
	buf_puts(b, ")\n");
}
