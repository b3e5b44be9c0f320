/* kernel_join_window.c: the joins (cat, gather) and the windowed ops (conv2d and the
 * pools).
 *
 * Each is an evaluator node (see eval.c): given the output index (with its per-dim
 * positions) it emits the branch or loops that compute that one element, reading its
 * operands through cg_eval. Cat branches to the input that holds the position, gather
 * reads its index tensor then the source (indices wrap once from the end and clamp),
 * conv2d and the pools loop over the window, zero outside the padding. One thread per
 * output element (chunked: frame.c), accumulators in registers; a conv's window is
 * the op's attribute, so its loops unroll. A conv with more than 16 output channels
 * per group runs on the matmul tiles instead (matmul_conv.c); this one serves
 * depthwise convs NCHW (channels last: matmul_depthwise.c), few channels per group,
 * and the dtypes the tiles do not take. */
#include <stdlib.h>

#include "cg_impl.h"

static LLVMValueRef eval_cat(CgKb *kb, const RelOp *op, CgIdx *out)
{
	LLVMContextRef c = kb->m->ctx;
	int axis = op->attr.axis;
	const RelTensor *res = &op->t[op->nin];
	LLVMBasicBlockRef merge = LLVMAppendBasicBlockInContext(c, kb->fn, "cat.merge");
	LLVMValueRef *vals = xmalloc(sizeof *vals * (size_t)op->nin);
	LLVMBasicBlockRef *from = xmalloc(sizeof *from * (size_t)op->nin);
	LLVMValueRef off = cg_i64(kb, 0);
	for (int j = 0; j < op->nin; j++) {
		const RelTensor *in = &op->t[j];
		LLVMValueRef end = LLVMBuildAdd(kb->b, off, cg_dim(kb, in->shape[axis]), "");
		LLVMBasicBlockRef take = LLVMAppendBasicBlockInContext(c, kb->fn, "cat.take");
		LLVMBasicBlockRef next = NULL;
		if (j + 1 < op->nin) {
			next = LLVMAppendBasicBlockInContext(c, kb->fn, "cat.next");
			LLVMValueRef in_j = LLVMBuildICmp(kb->b, LLVMIntSLT, out->i[axis], end, "");
			LLVMBuildCondBr(kb->b, in_j, take, next);
		} else {
			LLVMBuildBr(kb->b, take);
		}
		LLVMPositionBuilderAtEnd(kb->b, take);
		int mark = cg_memo_mark(kb);
		LLVMValueRef pos[IR_MAX_RANK];
		for (int d = 0; d < in->rank; d++)
			pos[d] = d == axis ? LLVMBuildSub(kb->b, out->i[d], off, "") : out->i[d];
		CgIdx x = cg_idx_at(in, pos);
		vals[j] = cg_eval(kb, in->id, &x);
		cg_memo_release(kb, mark);
		from[j] = LLVMGetInsertBlock(kb->b);
		LLVMBuildBr(kb->b, merge);
		if (next)
			LLVMPositionBuilderAtEnd(kb->b, next);
		off = end;
	}
	LLVMPositionBuilderAtEnd(kb->b, merge);
	LLVMValueRef phi = LLVMBuildPhi(kb->b, cg_ctype(kb->m, (DType)res->dtype), "cat");
	LLVMAddIncoming(phi, vals, from, (unsigned)op->nin);
	free(vals);
	free(from);
	return phi;
}

static LLVMValueRef eval_gather(CgKb *kb, const RelOp *op, CgIdx *out)
{
	const RelTensor *x = &op->t[0], *ix = &op->t[1];
	int axis = op->attr.axis;
	CgIdx ii = *out;
	ii.shape = ix->shape;
	LLVMValueRef iv = cg_eval(kb, ix->id, &ii);
	iv = cg_convert(kb, iv, (DType)ix->dtype, DT_I64);
	LLVMValueRef size = cg_dim(kb, x->shape[axis]);
	LLVMValueRef zero = cg_i64(kb, 0);
	LLVMValueRef neg = LLVMBuildICmp(kb->b, LLVMIntSLT, iv, zero, "");
	iv = LLVMBuildSelect(kb->b, neg, LLVMBuildAdd(kb->b, iv, size, ""), iv, "");
	iv = LLVMBuildSelect(kb->b, LLVMBuildICmp(kb->b, LLVMIntSLT, iv, zero, ""), zero, iv, "");
	LLVMValueRef last = LLVMBuildSub(kb->b, size, cg_i64(kb, 1), "");
	iv = LLVMBuildSelect(kb->b, LLVMBuildICmp(kb->b, LLVMIntSGT, iv, last, ""), last, iv, "");
	LLVMValueRef pos[IR_MAX_RANK];
	for (int d = 0; d < x->rank; d++)
		pos[d] = d == axis ? iv : out->i[d];
	CgIdx xi = cg_idx_at(x, pos);
	return cg_eval(kb, x->id, &xi);
}

/* in-window position: o * stride - pad + k * dil, and whether it is inside [0, n) */
static LLVMValueRef window_pos(CgKb *kb, LLVMValueRef o, int stride, int pad, LLVMValueRef k,
			       int dil, LLVMValueRef n, LLVMValueRef *inside)
{
	LLVMBuilderRef b = kb->b;
	LLVMValueRef p = LLVMBuildMul(b, o, cg_i64(kb, stride), "");
	p = LLVMBuildSub(b, p, cg_i64(kb, pad), "");
	p = LLVMBuildAdd(b, p, LLVMBuildMul(b, k, cg_i64(kb, dil), ""), "");
	LLVMValueRef ok = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntSGE, p, cg_i64(kb, 0), ""),
				       LLVMBuildICmp(b, LLVMIntSLT, p, n, ""), "");
	*inside = cg_and(kb, *inside, ok);
	return LLVMBuildSelect(b, ok, p, cg_i64(kb, 0), "");
}

/* The axes of channels and of the plane in a conv's or pool's layout */
typedef struct {
	int c, h, w;
} Axes;

static Axes layout_axes(const RelAttrs *at)
{
	return at->layout == LAYOUT_NHWC ? (Axes){3, 1, 2} : (Axes){1, 2, 3};
}

/* The position of element (n, ch, h, w) in the layout's order */
static void layout_pos(Axes a, LLVMValueRef n, LLVMValueRef ch, LLVMValueRef h, LLVMValueRef w,
		       LLVMValueRef *pos)
{
	pos[0] = n;
	pos[a.c] = ch;
	pos[a.h] = h;
	pos[a.w] = w;
}

static LLVMValueRef eval_conv2d(CgKb *kb, const RelOp *op, CgIdx *out)
{
	const RelTensor *x = &op->t[0], *w = &op->t[1];
	DType t = (DType)x->dtype;
	const RelAttrs *at = &op->attr;
	int groups = at->groups > 0 ? at->groups : 1;
	LLVMBuilderRef b = kb->b;
	Axes a = layout_axes(at);
	/* the weight is [OC][C/g][KH][KW], or [OC][KH][KW][C/g] channels last */
	int wc = a.c == 1 ? 1 : 3, wh = a.c == 1 ? 2 : 1;
	LLVMValueRef oc = out->i[a.c];
	LLVMValueRef cg = cg_dim(kb, w->shape[wc]);
	LLVMValueRef og = LLVMBuildUDiv(b, cg_dim(kb, w->shape[0]), cg_i64(kb, groups), "");
	LLVMValueRef cbase = LLVMBuildMul(b, LLVMBuildUDiv(b, oc, og, ""), cg, "");
	LLVMValueRef zero = cg_zero(kb, t);

	CgLoop lc, lh, lw;
	cg_loop_begin(kb, &lc, cg_i64(kb, 0), cg, cg_i64(kb, 1));
	LLVMValueRef acc_c = cg_carry(kb, &lc, zero);
	/* the window's size is the op's (ir/infer.c): constant loops, unrolled */
	LLVMValueRef kh = at->kernel[0] > 0 ? cg_i64(kb, at->kernel[0]) : cg_dim(kb, w->shape[wh]);
	LLVMValueRef kw = at->kernel[1] > 0 ? cg_i64(kb, at->kernel[1]) : cg_dim(kb, w->shape[wh + 1]);
	cg_loop_begin(kb, &lh, cg_i64(kb, 0), kh, cg_i64(kb, 1));
	LLVMValueRef acc_h = cg_carry(kb, &lh, acc_c);
	cg_loop_begin(kb, &lw, cg_i64(kb, 0), kw, cg_i64(kb, 1));
	LLVMValueRef acc_w = cg_carry(kb, &lw, acc_h);
	LLVMValueRef inside = NULL;
	LLVMValueRef ih = window_pos(kb, out->i[a.h], at->stride[0], at->padding[0], lh.i,
				     at->dilation[0], cg_dim(kb, x->shape[a.h]), &inside);
	LLVMValueRef iw = window_pos(kb, out->i[a.w], at->stride[1], at->padding[1], lw.i,
				     at->dilation[1], cg_dim(kb, x->shape[a.w]), &inside);
	LLVMValueRef px[4], pw[4];
	layout_pos(a, out->i[0], LLVMBuildAdd(b, cbase, lc.i, ""), ih, iw, px);
	layout_pos(a, oc, lc.i, lh.i, lw.i, pw);
	CgIdx xi = cg_idx_at(x, px), wi = cg_idx_at(w, pw);
	LLVMValueRef prod = cg_binary_value(kb, OP_MUL, t, cg_eval(kb, x->id, &xi), cg_eval(kb, w->id, &wi));
	prod = LLVMBuildSelect(b, inside, prod, zero, "");
	cg_carry_next(kb, &lw, acc_w, cg_binary_value(kb, OP_ADD, t, acc_w, prod));
	cg_loop_end(kb, &lw);
	cg_carry_next(kb, &lh, acc_h, acc_w);
	cg_loop_end(kb, &lh);
	cg_carry_next(kb, &lc, acc_c, acc_h);
	cg_loop_end(kb, &lc);
	if (op->nin < 3)
		return acc_c;
	const RelTensor *bias = &op->t[2];
	LLVMValueRef pbias[IR_MAX_RANK];
	for (int d = 0; d < bias->rank; d++)
		pbias[d] = bias->shape[d] == 0 ? cg_i64(kb, 0) : oc;
	CgIdx bi = cg_idx_at(bias, pbias);
	return cg_binary_value(kb, OP_ADD, t, acc_c, cg_eval(kb, bias->id, &bi));
}

static LLVMValueRef eval_pool2d(CgKb *kb, const RelOp *op, CgIdx *out)
{
	const RelTensor *x = &op->t[0];
	DType t = (DType)x->dtype;
	const RelAttrs *at = &op->attr;
	bool max = op->kind == OP_MAX_POOL2D;
	LLVMBuilderRef b = kb->b;
	Axes a = layout_axes(at);
	LLVMValueRef init = max ? cg_extreme(kb, t, true) : cg_zero(kb, t);
	CgLoop lh, lw;
	cg_loop_begin(kb, &lh, cg_i64(kb, 0), cg_i64(kb, at->kernel[0]), cg_i64(kb, 1));
	LLVMValueRef acc_h = cg_carry(kb, &lh, init);
	cg_loop_begin(kb, &lw, cg_i64(kb, 0), cg_i64(kb, at->kernel[1]), cg_i64(kb, 1));
	LLVMValueRef acc_w = cg_carry(kb, &lw, acc_h);
	LLVMValueRef inside = NULL;
	LLVMValueRef ih = window_pos(kb, out->i[a.h], at->stride[0], at->padding[0], lh.i, 1,
				     cg_dim(kb, x->shape[a.h]), &inside);
	LLVMValueRef iw = window_pos(kb, out->i[a.w], at->stride[1], at->padding[1], lw.i, 1,
				     cg_dim(kb, x->shape[a.w]), &inside);
	LLVMValueRef px[4];
	layout_pos(a, out->i[0], out->i[a.c], ih, iw, px);
	CgIdx xi = cg_idx_at(x, px);
	LLVMValueRef v = cg_eval(kb, x->id, &xi);
	LLVMValueRef next = max ? cg_select_max(kb, t, acc_w, v, true) : cg_binary_value(kb, OP_ADD, t, acc_w, v);
	next = LLVMBuildSelect(b, inside, next, acc_w, "");
	cg_carry_next(kb, &lw, acc_w, next);
	cg_loop_end(kb, &lw);
	cg_carry_next(kb, &lh, acc_h, acc_w);
	cg_loop_end(kb, &lh);
	if (max)
		return acc_h;
	LLVMValueRef cnt = LLVMConstReal(cg_ctype(kb->m, t), (double)at->kernel[0] * at->kernel[1]);
	return LLVMBuildFDiv(b, acc_h, cnt, "");
}

LLVMValueRef cg_eval_join(CgKb *kb, const RelOp *op, CgIdx *out)
{
	return op->kind == OP_CAT ? eval_cat(kb, op, out) : eval_gather(kb, op, out);
}

LLVMValueRef cg_eval_window(CgKb *kb, const RelOp *op, CgIdx *out)
{
	return op->kind == OP_CONV2D ? eval_conv2d(kb, op, out) : eval_pool2d(kb, op, out);
}
