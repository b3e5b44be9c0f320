/* kernel_single.c: the ops whose value at one output position needs a loop or a
 * branch: reductions, matmul, cat, gather, conv2d and the pools.
 *
 * Each is an evaluator node (see cg_impl.h): given the output index (with its per-dim
 * positions), it emits the loop that computes that one element and returns its value.
 * Operands are read through cg_eval, so the same code serves an op alone (operands are
 * loads) and an op with elementwise ops fused on read. These are the plain versions:
 * one thread per output element, accumulators in registers (f32 for f16/bf16/f32, f64
 * for f64, i64 for every integer type, wrapped to the result's width at the end); a later issue may give them shared-memory and
 * warp-shuffle variants behind the same contract. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cg_impl.h"

static LLVMValueRef zero_of(CgKb *kb, DType t)
{
	LLVMTypeRef ty = cg_ctype(kb->m, t);
	return ir_dtype_is_float(t) ? LLVMConstReal(ty, 0) : LLVMConstInt(ty, 0, 0);
}

static LLVMValueRef one_of(CgKb *kb, DType t)
{
	LLVMTypeRef ty = cg_ctype(kb->m, t);
	return ir_dtype_is_float(t) ? LLVMConstReal(ty, 1) : LLVMConstInt(ty, 1, 0);
}

/* The most negative (max = true) or most positive value of t. */
static LLVMValueRef extreme(CgKb *kb, DType t, bool lowest)
{
	LLVMTypeRef ty = cg_ctype(kb->m, t);
	if (ir_dtype_is_float(t))
		return LLVMConstReal(ty, lowest ? -INFINITY : INFINITY);
	unsigned w = LLVMGetIntTypeWidth(ty);
	unsigned long long top = w == 64 ? ~0ULL : (1ULL << w) - 1;
	if (t == DT_U8 || t == DT_BOOL)
		return LLVMConstInt(ty, lowest ? 0 : top, 0);
	unsigned long long minv = 1ULL << (w - 1);
	return LLVMConstInt(ty, lowest ? minv : minv - 1, 0);
}

static LLVMValueRef add_values(CgKb *kb, DType t, LLVMValueRef a, LLVMValueRef b)
{
	return cg_binary_value(kb, OP_ADD, t, a, b);
}

static LLVMValueRef mul_values(CgKb *kb, DType t, LLVMValueRef a, LLVMValueRef b)
{
	return cg_binary_value(kb, OP_MUL, t, a, b);
}

/* An index into `t` holding the given per-dim positions. */
static CgIdx idx_dims(const RelTensor *t, LLVMValueRef *pos)
{
	CgIdx x = cg_idx_of(t->rank, t->shape);
	x.has_dims = true;
	for (int d = 0; d < t->rank; d++)
		x.i[d] = pos[d];
	return x;
}

LLVMValueRef cg_eval_reduce(CgKb *kb, const RelOp *op, CgIdx *out)
{
	const RelTensor *in = &op->t[0];
	DType it = (DType)in->dtype;
	DType t = ir_dtype_is_float(it) ? it : DT_I64;  /* accumulator dtype */
	OpKind k = (OpKind)op->kind;
	int axis = op->attr.axis;
	LLVMValueRef n = cg_dim(kb, in->shape[axis]);
	bool arg = k == OP_ARGMAX || k == OP_ARGMIN;
	bool max = k == OP_MAX_DIM || k == OP_ARGMAX;
	LLVMValueRef init;
	if (k == OP_SUM || k == OP_MEAN)
		init = zero_of(kb, t);
	else if (k == OP_PROD)
		init = one_of(kb, t);
	else
		init = extreme(kb, it, max);
	init = cg_convert(kb, init, it, t);

	CgLoop l;
	cg_loop_begin(kb, &l, cg_i64(kb, 0), n, cg_i64(kb, 1));
	LLVMValueRef acc = cg_carry(kb, &l, init);
	LLVMValueRef best = arg ? cg_carry(kb, &l, cg_i64(kb, 0)) : NULL;
	LLVMValueRef pos[IR_MAX_RANK];
	for (int d = 0; d < in->rank; d++)
		pos[d] = d == axis ? l.i : out->i[d];
	CgIdx x = idx_dims(in, pos);
	LLVMValueRef v = cg_convert(kb, cg_eval(kb, in->id, &x), it, t);
	LLVMValueRef next;
	switch (k) {
	case OP_SUM: case OP_MEAN:
		next = add_values(kb, t, acc, v);
		break;
	case OP_PROD:
		next = mul_values(kb, t, acc, v);
		break;
	case OP_MAX_DIM: case OP_MIN_DIM:
		next = cg_select_max(kb, t, acc, v, max);
		break;
	default: {
		/* strict: the first extreme wins; a NaN counts as the extreme */
		LLVMValueRef take;
		if (ir_dtype_is_float(t)) {
			take = LLVMBuildFCmp(kb->b, max ? LLVMRealOGT : LLVMRealOLT, v, acc, "");
			LLVMValueRef vnan = LLVMBuildFCmp(kb->b, LLVMRealUNO, v, v, "");
			LLVMValueRef anan = LLVMBuildFCmp(kb->b, LLVMRealUNO, acc, acc, "");
			take = LLVMBuildOr(kb->b, take,
					   LLVMBuildAnd(kb->b, vnan, LLVMBuildNot(kb->b, anan, ""), ""), "");
		} else {
			bool u = false; /* u8 values were widened to i64 */
			LLVMIntPredicate p = max ? (u ? LLVMIntUGT : LLVMIntSGT) : (u ? LLVMIntULT : LLVMIntSLT);
			take = LLVMBuildICmp(kb->b, p, v, acc, "");
		}
		next = LLVMBuildSelect(kb->b, take, v, acc, "");
		cg_carry_next(kb, &l, best, LLVMBuildSelect(kb->b, take, l.i, best, ""));
		break;
	}
	}
	cg_carry_next(kb, &l, acc, next);
	cg_loop_end(kb, &l);

	DType ot = (DType)op->t[op->nin].dtype;
	if (arg)
		return cg_convert(kb, best, DT_I64, ot);
	if (k == OP_MEAN)
		acc = cg_binary_value(kb, OP_DIV, t, acc, cg_convert(kb, n, DT_I64,
					t == DT_F16 || t == DT_BF16 ? DT_F32 : t));
	return cg_convert(kb, acc, t, ot);
}

LLVMValueRef cg_eval_matmul(CgKb *kb, const RelOp *op, CgIdx *out)
{
	const RelTensor *a = &op->t[0], *b = &op->t[1];
	DType it = (DType)a->dtype;
	DType t = ir_dtype_is_float(it) ? it : DT_I64;  /* accumulator dtype */
	int r = a->rank;
	CgLoop l;
	cg_loop_begin(kb, &l, cg_i64(kb, 0), cg_dim(kb, a->shape[r - 1]), cg_i64(kb, 1));
	LLVMValueRef acc = cg_carry(kb, &l, zero_of(kb, t));
	LLVMValueRef pa[IR_MAX_RANK], pb[IR_MAX_RANK];
	for (int d = 0; d < r - 2; d++) {
		pa[d] = a->shape[d] == 0 ? cg_i64(kb, 0) : out->i[d];
		pb[d] = b->shape[d] == 0 ? cg_i64(kb, 0) : out->i[d];
	}
	pa[r - 2] = out->i[r - 2];
	pa[r - 1] = l.i;
	pb[r - 2] = l.i;
	pb[r - 1] = out->i[r - 1];
	CgIdx xa = idx_dims(a, pa), xb = idx_dims(b, pb);
	LLVMValueRef va = cg_convert(kb, cg_eval(kb, a->id, &xa), it, t);
	LLVMValueRef vb = cg_convert(kb, cg_eval(kb, b->id, &xb), it, t);
	cg_carry_next(kb, &l, acc, add_values(kb, t, acc, mul_values(kb, t, va, vb)));
	cg_loop_end(kb, &l);
	return cg_convert(kb, acc, t, it);
}

LLVMValueRef cg_eval_cat(CgKb *kb, const RelOp *op, CgIdx *out)
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
		CgIdx x = idx_dims(in, pos);
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

LLVMValueRef cg_eval_gather(CgKb *kb, const RelOp *op, CgIdx *out)
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
	CgIdx xi = idx_dims(x, pos);
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

LLVMValueRef cg_eval_conv2d(CgKb *kb, const RelOp *op, CgIdx *out)
{
	const RelTensor *x = &op->t[0], *w = &op->t[1];
	DType t = (DType)x->dtype;
	const RelAttrs *at = &op->attr;
	int groups = at->groups > 0 ? at->groups : 1;
	LLVMBuilderRef b = kb->b;
	LLVMValueRef cg = cg_dim(kb, w->shape[1]);
	LLVMValueRef og = LLVMBuildUDiv(b, cg_dim(kb, w->shape[0]), cg_i64(kb, groups), "");
	LLVMValueRef cbase = LLVMBuildMul(b, LLVMBuildUDiv(b, out->i[1], og, ""), cg, "");
	LLVMValueRef zero = zero_of(kb, t);

	CgLoop lc, lh, lw;
	cg_loop_begin(kb, &lc, cg_i64(kb, 0), cg, cg_i64(kb, 1));
	LLVMValueRef acc_c = cg_carry(kb, &lc, zero);
	cg_loop_begin(kb, &lh, cg_i64(kb, 0), cg_dim(kb, w->shape[2]), cg_i64(kb, 1));
	LLVMValueRef acc_h = cg_carry(kb, &lh, acc_c);
	cg_loop_begin(kb, &lw, cg_i64(kb, 0), cg_dim(kb, w->shape[3]), cg_i64(kb, 1));
	LLVMValueRef acc_w = cg_carry(kb, &lw, acc_h);
	LLVMValueRef inside = NULL;
	LLVMValueRef ih = window_pos(kb, out->i[2], at->stride[0], at->padding[0], lh.i,
				     at->dilation[0], cg_dim(kb, x->shape[2]), &inside);
	LLVMValueRef iw = window_pos(kb, out->i[3], at->stride[1], at->padding[1], lw.i,
				     at->dilation[1], cg_dim(kb, x->shape[3]), &inside);
	LLVMValueRef px[4] = {out->i[0], LLVMBuildAdd(b, cbase, lc.i, ""), ih, iw};
	LLVMValueRef pw[4] = {out->i[1], lc.i, lh.i, lw.i};
	CgIdx xi = idx_dims(x, px), wi = idx_dims(w, pw);
	LLVMValueRef prod = mul_values(kb, t, cg_eval(kb, x->id, &xi), cg_eval(kb, w->id, &wi));
	prod = LLVMBuildSelect(b, inside, prod, zero, "");
	cg_carry_next(kb, &lw, acc_w, add_values(kb, t, acc_w, prod));
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
		pbias[d] = bias->shape[d] == 0 ? cg_i64(kb, 0) : out->i[1];
	CgIdx bi = idx_dims(bias, pbias);
	return add_values(kb, t, acc_c, cg_eval(kb, bias->id, &bi));
}

LLVMValueRef cg_eval_pool2d(CgKb *kb, const RelOp *op, CgIdx *out)
{
	const RelTensor *x = &op->t[0];
	DType t = (DType)x->dtype;
	const RelAttrs *at = &op->attr;
	bool max = op->kind == OP_MAX_POOL2D;
	LLVMBuilderRef b = kb->b;
	LLVMValueRef init = max ? extreme(kb, t, true) : zero_of(kb, t);
	CgLoop lh, lw;
	cg_loop_begin(kb, &lh, cg_i64(kb, 0), cg_i64(kb, at->kernel[0]), cg_i64(kb, 1));
	LLVMValueRef acc_h = cg_carry(kb, &lh, init);
	cg_loop_begin(kb, &lw, cg_i64(kb, 0), cg_i64(kb, at->kernel[1]), cg_i64(kb, 1));
	LLVMValueRef acc_w = cg_carry(kb, &lw, acc_h);
	LLVMValueRef inside = NULL;
	LLVMValueRef ih = window_pos(kb, out->i[2], at->stride[0], at->padding[0], lh.i, 1,
				     cg_dim(kb, x->shape[2]), &inside);
	LLVMValueRef iw = window_pos(kb, out->i[3], at->stride[1], at->padding[1], lw.i, 1,
				     cg_dim(kb, x->shape[3]), &inside);
	LLVMValueRef px[4] = {out->i[0], out->i[1], ih, iw};
	CgIdx xi = idx_dims(x, px);
	LLVMValueRef v = cg_eval(kb, x->id, &xi);
	LLVMValueRef next = max ? cg_select_max(kb, t, acc_w, v, true) : add_values(kb, t, acc_w, v);
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
