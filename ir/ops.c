/* ops.c: the op table expanded from ops.def, dtype names, and display names.
 *
 * Display names follow burn: the category prefix depends on the op's category
 * and on the dtype of its value operand (NumericFloat:: vs NumericInt::). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

const OpInfo ir_ops[OP_COUNT] = {
#define X(e, file, variant, cat, fam, nmin, nmax, req, opt, rule) \
	[e] = {file, variant, cat, fam, nmin, nmax, req, opt, rule},
#include "ops.def"
#undef X
};

static const char *const dtype_names[] = {
	[DT_F64] = "f64", [DT_F32] = "f32", [DT_F16] = "f16", [DT_BF16] = "bf16",
	[DT_I64] = "i64", [DT_I32] = "i32", [DT_I16] = "i16", [DT_I8] = "i8",
	[DT_U8] = "u8", [DT_BOOL] = "bool",
};
static const int dtype_sizes[] = {8, 4, 2, 2, 8, 4, 2, 1, 1, 1};
_Static_assert(COUNTOF(dtype_names) == DT_COUNT, "dtype_names: one per DType");
_Static_assert(COUNTOF(dtype_sizes) == DT_COUNT, "dtype_sizes: one per DType");

/* ORDER ATTR */
static const char *const attr_names[] = {
	"scalar", "min", "max", "dtype", "shape", "axes", "dims", "ranges", "axis",
	"stride", "padding", "dilation", "groups", "kernel", "approximate", "layout",
	"causal", "zero_nan",
};
_Static_assert(COUNTOF(attr_names) == A_COUNT_, "attr_names: one per attribute bit");

const char *ir_dtype_name(DType t)
{
	return (unsigned)t < DT_COUNT ? dtype_names[t] : "?";
}

int ir_dtype_parse(const char *s, DType *out)
{
	for (int i = 0; i < DT_COUNT; i++)
		if (!strcmp(s, dtype_names[i])) {
			*out = (DType)i;
			return 0;
		}
	return -1;
}

int ir_dtype_size(DType t)
{
	return dtype_sizes[t];
}

bool ir_dtype_is_float(DType t)
{
	return t == DT_F64 || t == DT_F32 || t == DT_F16 || t == DT_BF16;
}

bool ir_dtype_is_int(DType t)
{
	return t >= DT_I64 && t <= DT_U8;
}

bool ir_dtype_is_signed(DType t)
{
	return ir_dtype_is_float(t) || (t >= DT_I64 && t <= DT_I8);
}

IrShapeText ir_shape_text(int rank, const int64_t *dim)
{
	IrShapeText t;
	size_t n = 0;
	t.s[n++] = '[';
	for (int i = 0; i < rank && i < IR_MAX_RANK; i++)
		n += (size_t)snprintf(t.s + n, sizeof t.s - n, i ? ",%lld" : "%lld",
				      (long long)dim[i]);
	t.s[n++] = ']';
	t.s[n] = 0;
	return t;
}

const char *ir_attr_name(unsigned bit)
{
	for (int i = 0; i < A_COUNT_; i++)
		if (bit == 1u << i)
			return attr_names[i];
	return "?";
}

bool ir_family_is_elementwise(OpFamily f)
{
	switch (f) {
	case FAM_BINARY: case FAM_SCALAR: case FAM_UNARY: case FAM_COMPARE:
	case FAM_SELECT: case FAM_CAST:
		return true;
	default:
		return false;
	}
}

bool ir_op_is_elementwise(int kind)
{
	return kind >= 0 && kind < OP_COUNT && ir_family_is_elementwise(ir_ops[kind].family);
}

int ir_op_lookup(const char *name)
{
	for (int i = 0; i < OP_COUNT; i++)
		if (ir_ops[i].file[0] == name[0] && !strcmp(ir_ops[i].file, name))
			return i;
	return -1;
}

const char *ir_status_name(TensorStatus s)
{
	switch (s) {
	case ST_READ_ONLY: return "ReadOnly";
	case ST_READ_WRITE: return "ReadWrite";
	case ST_NOT_INIT: return "NotInit";
	}
	return "?";
}

DType ir_op_value_dtype(const Graph *g, const Op *op)
{
	if (op->nin == 0)
		return DT_F32;
	int t = op->kind == OP_WHERE ? op->in[1] : op->in[0];
	return g->tensors[t].dtype;
}

const char *ir_category_prefix(OpCategory cat, DType t)
{
	switch (cat) {
	case CAT_NUMERIC: return ir_dtype_is_float(t) ? "NumericFloat" : "NumericInt";
	case CAT_FLOAT: return "Float";
	case CAT_BASE:
		return ir_dtype_is_float(t) ? "BaseFloat" : t == DT_BOOL ? "BaseBool" : "BaseInt";
	case CAT_BOOL: return "Bool";
	case CAT_ACTIVATION: return "Activation";
	case CAT_MODULE: return "Module";
	case CAT_CONTROL: return "Control";
	}
	return "?";
}

const char *ir_op_display(const Graph *g, const Op *op, char *buf, size_t size)
{
	const OpInfo *info = &ir_ops[op->kind];
	snprintf(buf, size, "%s::%s", ir_category_prefix(info->cat, ir_op_value_dtype(g, op)),
		 info->variant);
	return buf;
}

const char *ir_op_ref(const Graph *g, int op, char *buf, size_t size)
{
	const Op *o = &g->ops[op];
	int n = snprintf(buf, size, "ops[%d]", op);
	if (o->name && n >= 0 && (size_t)n < size)
		n += snprintf(buf + n, size - (size_t)n, " '%s'", o->name);
	if (o->nout > 0 && n >= 0 && (size_t)n < size)
		snprintf(buf + n, size - (size_t)n, " → %s", g->tensors[o->out[0]].name);
	return buf;
}

/* ORDER SR: one entry per ShapeRule, checked against the rules of infer.c. */
static const char *const rule_dtypes[] = {
	"-",                              /* SR_NONE */
	"numeric (not bool)",             /* SR_BINARY */
	"float",                          /* SR_BINARY_FLOAT */
	"bool",                           /* SR_BINARY_BOOL */
	"numeric (not bool)",             /* SR_UNARY */
	"float, signed int",              /* SR_UNARY_SIGNED */
	"numeric (not bool)",             /* SR_UNARY_NUMERIC */
	"float",                          /* SR_UNARY_FLOAT */
	"float -> bool",                  /* SR_UNARY_FLOAT_TO_BOOL */
	"bool",                           /* SR_UNARY_BOOL */
	"any -> bool",                    /* SR_COMPARE */
	"any -> bool",                    /* SR_COMPARE_SCALAR */
	"bool mask, any",                 /* SR_WHERE */
	"any, bool mask",                 /* SR_MASK_FILL */
	"any -> dtype",                   /* SR_CAST */
	"any", "any", "any", "any", "any", /* SR_RESHAPE .. SR_SLICE */
	"numeric (not bool)",             /* SR_REDUCE */
	"numeric -> i64",                 /* SR_ARG_REDUCE */
	"numeric (not bool)",             /* SR_MATMUL */
	"float",                          /* SR_ATTENTION */
	"any",                            /* SR_CAT */
	"any, index i32 or i64",          /* SR_GATHER */
	"float",                          /* SR_CONV2D */
	"float",                          /* SR_POOL2D */
};
_Static_assert(COUNTOF(rule_dtypes) == SR_COUNT_, "rule_dtypes: one per ShapeRule");

const char *ir_rule_dtypes(ShapeRule r)
{
	return (unsigned)r < SR_COUNT_ ? rule_dtypes[r] : "?";
}

int ir_parse_shape(Arena *a, const char *spec, IrInputShape *s, char *msg, size_t size)
{
	const char *eq = strrchr(spec, '=');
	if (!eq || eq == spec || !eq[1]) {
		snprintf(msg, size, "expected NAME=DxDx..., got '%.80s'", spec);
		return -1;
	}
	s->name = arena_strndup(a, spec, (size_t)(eq - spec));
	s->rank = 0;
	s->from = NULL;
	const char *p = eq + 1;
	if (!strcmp(p, "scalar"))
		return 0;
	for (;;) {
		char *end;
		errno = 0;
		long long v = strtoll(p, &end, 10);
		if (end == p || errno || v < 1 || v > IR_DIM_TOP || (*end && *end != 'x') ||
		    *p < '0' || *p > '9') {
			snprintf(msg, size, "expected dims from 1 to 2^40 separated by 'x' in '%.80s'",
				 spec);
			return -1;
		}
		if (s->rank == IR_MAX_RANK) {
			snprintf(msg, size, "more than %d dims in '%.80s'", IR_MAX_RANK, spec);
			return -1;
		}
		s->dim[s->rank++] = v;
		if (!*end)
			return 0;
		p = end + 1;
	}
}
