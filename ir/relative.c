/* relative.c: the relative form of a segment (SPEC §2).
 *
 * The search and the plan store only ever compare relative ops, so two segments
 * that differ in tensor names, scalar values or in the concrete size of their dims
 * (while keeping the same pattern of equal dims) look the same:
 *   - tensor ids are renumbered by first appearance (operands, then results);
 *   - dim values become shape ids, 1 always being id 0;
 *   - scalars, clamp bounds and slice ranges become placeholders #0, #1, ...
 *     whose values are kept beside the segment;
 *   - the status of every operand (ReadOnly / ReadWrite / NotInit) is part of it.
 *
 * The converter keeps its maps across a whole segment and is reset in O(1) by
 * bumping a stamp, because the search re-converts the queue after every plan it
 * executes. */
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "ir.h"

typedef struct {
	int64_t key;      /* dim value */
	uint32_t id;      /* shape id */
	uint32_t stamp;   /* valid when equal to the converter's stamp */
} DimSlot;

struct RelConv {
	const Graph *g;
	uint32_t stamp;
	uint32_t *tstamp;     /* per global tensor: stamp of its rel id */
	int *trel;            /* per global tensor: relative id */
	int *tglobal;         /* per relative id: global tensor */
	int ntensors;
	DimSlot *slots;       /* open addressing, power-of-two size */
	uint32_t nslots;
	int64_t *dims;        /* per shape id: dim value */
	int32_t *dsrc;        /* per shape id: the global tensor and axis it was first
				 seen at (2 entries) */
	int ndims, capdims;
	double *values;       /* per placeholder: value */
	int nvalues, capvalues;
};

RelConv *ir_rel_new(const Graph *g)
{
	RelConv *c = xcalloc(1, sizeof *c);
	c->g = g;
	int n = g->ntensors > 0 ? g->ntensors : 1;
	c->tstamp = xcalloc((size_t)n, sizeof *c->tstamp);
	c->trel = xcalloc((size_t)n, sizeof *c->trel);
	c->tglobal = xcalloc((size_t)n, sizeof *c->tglobal);
	c->nslots = 64;
	c->slots = xcalloc(c->nslots, sizeof *c->slots);
	c->capdims = 16;
	c->dims = xmalloc(sizeof *c->dims * (size_t)c->capdims);
	c->dsrc = xcalloc((size_t)c->capdims * 2, sizeof *c->dsrc);
	c->capvalues = 16;
	c->values = xmalloc(sizeof *c->values * (size_t)c->capvalues);
	ir_rel_reset(c);
	return c;
}

void ir_rel_free(RelConv *c)
{
	if (!c)
		return;
	free(c->tstamp);
	free(c->trel);
	free(c->tglobal);
	free(c->slots);
	free(c->dims);
	free(c->dsrc);
	free(c->values);
	free(c);
}

void ir_rel_reset(RelConv *c)
{
	if (++c->stamp == 0) {
		/* wrapped after 4 billion resets: really clear once */
		memset(c->tstamp, 0, sizeof *c->tstamp * (size_t)(c->g->ntensors > 0 ? c->g->ntensors : 1));
		memset(c->slots, 0, sizeof *c->slots * c->nslots);
		c->stamp = 1;
	}
	c->ntensors = 0;
	c->ndims = 1;
	c->dims[0] = 1;
	c->nvalues = 0;
}

static uint32_t dim_slot(const RelConv *c, int64_t v)
{
	uint32_t mask = c->nslots - 1;
	uint32_t i = (uint32_t)hash_u64(HASH_SEED, (uint64_t)v) & mask;
	while (c->slots[i].stamp == c->stamp && c->slots[i].key != v)
		i = (i + 1) & mask;
	return i;
}

static void dim_grow(RelConv *c)
{
	DimSlot *old = c->slots;
	uint32_t nold = c->nslots;
	c->nslots *= 2;
	c->slots = xcalloc(c->nslots, sizeof *c->slots);
	for (uint32_t i = 0; i < nold; i++)
		if (old[i].stamp == c->stamp)
			c->slots[dim_slot(c, old[i].key)] = old[i];
	free(old);
}

static uint32_t shape_id(RelConv *c, int64_t v, int t, int axis)
{
	if (v == 1)
		return 0;
	uint32_t i = dim_slot(c, v);
	if (c->slots[i].stamp == c->stamp)
		return c->slots[i].id;
	if (c->ndims == c->capdims) {
		c->capdims *= 2;
		c->dims = xrealloc(c->dims, sizeof *c->dims * (size_t)c->capdims);
		c->dsrc = xrealloc(c->dsrc, sizeof *c->dsrc * 2 * (size_t)c->capdims);
	}
	c->slots[i] = (DimSlot){v, (uint32_t)c->ndims, c->stamp};
	c->dims[c->ndims] = v;
	c->dsrc[2 * c->ndims] = t;
	c->dsrc[2 * c->ndims + 1] = axis;
	uint32_t id = (uint32_t)c->ndims++;
	if ((uint32_t)c->ndims * 2 > c->nslots)
		dim_grow(c);
	return id;
}

static int tensor_id(RelConv *c, int t)
{
	if (c->tstamp[t] != c->stamp) {
		c->tstamp[t] = c->stamp;
		c->trel[t] = c->ntensors;
		c->tglobal[c->ntensors++] = t;
	}
	return c->trel[t];
}

static void place(RelConv *c, double v)
{
	if (c->nvalues == c->capvalues) {
		c->capvalues *= 2;
		c->values = xrealloc(c->values, sizeof *c->values * (size_t)c->capvalues);
	}
	c->values[c->nvalues++] = v;
}

static void rel_tensor(RelConv *c, int t, TensorStatus st, RelTensor *out)
{
	const Tensor *gt = &c->g->tensors[t];
	out->id = tensor_id(c, t);
	out->dtype = (uint8_t)gt->dtype;
	out->rank = (uint8_t)gt->rank;
	out->status = (uint8_t)st;
	for (int i = 0; i < gt->rank; i++)
		out->shape[i] = shape_id(c, gt->dim[i], t, i);
}

void ir_rel_op(RelConv *c, Arena *a, int opi, RelOp *out)
{
	const Op *op = &c->g->ops[opi];
	if (op->nin > IR_MAX_IN || op->nout > IR_MAX_OUT)
		die("op %d has %d operands and %d results", opi, op->nin, op->nout);
	memset(out, 0, sizeof *out);
	out->kind = (uint16_t)op->kind;
	out->nin = (uint8_t)op->nin;
	out->nout = (uint8_t)op->nout;
	out->t = ARENA_NEW(a, RelTensor, op->nin + op->nout);
	for (int k = 0; k < op->nin; k++)
		rel_tensor(c, op->in[k], (TensorStatus)op->in_status[k], &out->t[k]);
	for (int k = 0; k < op->nout; k++)
		rel_tensor(c, op->out[k], ST_NOT_INIT, &out->t[op->nin + k]);

	out->place0 = c->nvalues;
	const Attrs *at = op->attr;
	if (at) {
		if (at->has & A_SCALAR)
			place(c, at->scalar);
		if (at->has & A_MIN)
			place(c, at->min);
		if (at->has & A_MAX)
			place(c, at->max);
		if (at->has & A_RANGES)
			for (int i = 0; i < at->n; i++) {
				place(c, (double)at->range[i][0]);
				place(c, (double)at->range[i][1]);
			}
		RelAttrs *r = &out->attr;
		if (at->has & A_DTYPE)
			r->dtype = (uint8_t)at->dtype;
		if (at->has & A_APPROX)
			r->approx = (uint8_t)at->approx;
		if (at->has & A_AXIS)
			r->axis = (uint8_t)at->axis;
		if (at->has & (A_AXES | A_DIMS)) {
			int n = at->has & A_DIMS ? 2 : at->n;
			r->n = (uint8_t)n;
			for (int i = 0; i < n; i++)
				r->axes[i] = (uint8_t)at->axes[i];
		}
		for (int i = 0; i < 2; i++) {
			r->stride[i] = at->stride[i];
			r->padding[i] = at->padding[i];
			r->dilation[i] = at->dilation[i];
			r->kernel[i] = at->kernel[i];
		}
		r->groups = at->groups;
		r->layout = at->layout;
		r->causal = at->causal;
		r->zero_nan = at->zero_nan;
	}
	out->attr.lone = op->lone;
	out->nplace = (uint16_t)(c->nvalues - out->place0);
	out->hash = ir_rel_hash(out);
}

const double *ir_rel_values(const RelConv *c, int *n)
{
	*n = c->nvalues;
	return c->values;
}

const int64_t *ir_rel_dims(const RelConv *c, int *n)
{
	*n = c->ndims;
	return c->dims;
}

const int32_t *ir_rel_dim_sources(const RelConv *c, int *n)
{
	*n = c->ndims;
	return c->dsrc;
}

const int *ir_rel_tensors(const RelConv *c, int *n)
{
	*n = c->ntensors;
	return c->tglobal;
}

static bool tensor_equal(const RelTensor *a, const RelTensor *b)
{
	if (a->id != b->id || a->dtype != b->dtype || a->rank != b->rank || a->status != b->status)
		return false;
	return !memcmp(a->shape, b->shape, sizeof a->shape[0] * a->rank);
}

bool ir_rel_equal(const RelOp *a, const RelOp *b)
{
	if (a->hash != b->hash || a->kind != b->kind || a->nin != b->nin || a->nout != b->nout ||
	    a->nplace != b->nplace)
		return false;
	if (memcmp(&a->attr, &b->attr, sizeof a->attr))
		return false;
	for (int i = 0; i < a->nin + a->nout; i++)
		if (!tensor_equal(&a->t[i], &b->t[i]))
			return false;
	return true;
}

uint64_t ir_rel_hash(const RelOp *op)
{
	uint64_t h = HASH_SEED;
	h = hash_u64(h, (uint64_t)op->kind << 32 | (uint64_t)op->nin << 16 | op->nout);
	h = hash_u64(h, op->nplace);
	for (int i = 0; i < op->nin + op->nout; i++) {
		const RelTensor *t = &op->t[i];
		h = hash_u64(h, (uint64_t)t->id << 24 | (uint64_t)t->dtype << 16 |
				(uint64_t)t->rank << 8 | t->status);
		for (int k = 0; k < t->rank; k++)
			h = hash_u64(h, t->shape[k]);
	}
	/* RelAttrs is zero-filled (ir_rel_op), so its bytes are canonical; the layout
	 * and the lone mark, added last, count only when set, so that hashes (and the
	 * kernel names made from them) stay those of the graphs before them */
	h = hash_bytes(h, &op->attr, offsetof(RelAttrs, layout));
	h = op->attr.layout ? hash_u64(h, (uint64_t)op->attr.layout) : h;
	h = op->attr.causal ? hash_u64(h, 0x63617573ull << 32 ^ (uint64_t)op->attr.causal) : h;
	h = op->attr.zero_nan ? hash_u64(h, 0x7a6e616eull) : h;
	return op->attr.lone ? hash_u64(h, 0x6c6f6e65) : h;
}

/* Decimal digits of v; the plan prints every relative op, so no printf here. */
static void put_uint(Buf *b, uint32_t v)
{
	char d[10];
	int n = 0;
	do
		d[n++] = (char)('0' + v % 10);
	while (v /= 10);
	while (n)
		buf_putc(b, d[--n]);
}

static void print_tensor(Buf *b, const RelTensor *t, bool status)
{
	buf_putc(b, 't');
	put_uint(b, (uint32_t)t->id);
	buf_putc(b, ':');
	buf_puts(b, ir_dtype_name((DType)t->dtype));
	buf_putc(b, '[');
	for (int k = 0; k < t->rank; k++) {
		if (k)
			buf_putc(b, ',');
		put_uint(b, t->shape[k]);
	}
	buf_putc(b, ']');
	if (status) {
		buf_putc(b, ' ');
		buf_puts(b, ir_status_name((TensorStatus)t->status));
	}
}

static void print_pair(Buf *b, const char *name, const int32_t v[2], int32_t dflt)
{
	if (v[0] != dflt || v[1] != dflt)
		buf_printf(b, ", %s=[%d,%d]", name, v[0], v[1]);
}

void ir_rel_print(Buf *b, const RelOp *op)
{
	const OpInfo *info = &ir_ops[op->kind];
	DType vt = op->nin == 0 ? DT_F32 : (DType)op->t[op->kind == OP_WHERE ? 1 : 0].dtype;
	buf_printf(b, "%s::%s(", ir_category_prefix(info->cat, vt), info->variant);
	for (int k = 0; k < op->nin; k++) {
		if (k)
			buf_puts(b, ", ");
		print_tensor(b, &op->t[k], true);
	}
	for (int k = 0; k < op->nplace; k++)
		buf_printf(b, ", #%d", op->place0 + k);
	const RelAttrs *r = &op->attr;
	unsigned has = info->required | info->optional;
	if (has & A_DTYPE)
		buf_printf(b, ", dtype=%s", ir_dtype_name((DType)r->dtype));
	if (has & A_AXIS)
		buf_printf(b, ", axis=%d", r->axis);
	if (has & (A_AXES | A_DIMS)) {
		buf_puts(b, has & A_DIMS ? ", dims=[" : ", axes=[");
		for (int i = 0; i < r->n; i++)
			buf_printf(b, i ? ",%d" : "%d", r->axes[i]);
		buf_putc(b, ']');
	}
	if ((has & A_APPROX) && r->approx == GELU_TANH)
		buf_puts(b, ", approximate=tanh");
	if (has & A_KERNEL)
		buf_printf(b, ", kernel=[%d,%d]", r->kernel[0], r->kernel[1]);
	if (has & A_STRIDE)
		print_pair(b, "stride", r->stride, 1);
	if (has & A_PADDING)
		print_pair(b, "padding", r->padding, 0);
	if (has & A_DILATION)
		print_pair(b, "dilation", r->dilation, 1);
	if ((has & A_GROUPS) && r->groups > 1)
		buf_printf(b, ", groups=%d", r->groups);
	if ((has & A_LAYOUT) && r->layout == LAYOUT_NHWC)
		buf_puts(b, ", layout=nhwc");
	if (r->causal)
		buf_printf(b, ", causal=%lld", (long long)(r->causal - 1));
	if (r->zero_nan)
		buf_puts(b, ", zero_nan");
	if (r->lone)
		buf_puts(b, ", lone");
	buf_puts(b, ") -> ");
	for (int k = 0; k < op->nout; k++) {
		if (k)
			buf_puts(b, ", ");
		print_tensor(b, &op->t[op->nin + k], false);
	}
}

/* ---- small helpers on relative ops -------------------------------------- */

bool ir_rel_head_merge(const RelOp *op, int32_t id)
{
	int r = op->t[1].rank;
	if ((op->kind != OP_PERMUTE && op->kind != OP_SWAP_DIMS) || op->t[0].id != id || r < 2 ||
	    op->t[0].rank != r)
		return false;
	if (op->kind == OP_SWAP_DIMS)
		return op->attr.axes[0] < r - 1 && op->attr.axes[1] < r - 1;
	if (op->attr.n != r || op->attr.axes[r - 1] != r - 1)
		return false;
	for (int d = 0; d < r; d++)
		if (op->attr.axes[d] >= r)
			return false;
	return true;
}

bool ir_rel_shape_equal(const RelTensor *a, const RelTensor *b)
{
	if (a->rank != b->rank)
		return false;
	for (int i = 0; i < a->rank; i++)
		if (a->shape[i] != b->shape[i])
			return false;
	return true;
}

void ir_rel_copy(Arena *a, RelOp *dst, const RelOp *src)
{
	*dst = *src;
	int n = src->nin + src->nout;
	dst->t = ARENA_NEW(a, RelTensor, n ? n : 1);
	memcpy(dst->t, src->t, sizeof(RelTensor) * (size_t)n);
}

int ir_rel_max_shape_id(const RelOp *op)
{
	int m = 0;
	for (int i = 0; i < op->nin + op->nout; i++)
		for (int d = 0; d < op->t[i].rank; d++)
			if ((int)op->t[i].shape[d] > m)
				m = (int)op->t[i].shape[d];
	return m;
}
