/* eval.c: the op evaluator.
 *
 * cg_eval(kb, t, idx) returns the value of relative tensor t at index idx. A tensor
 * no op of the kernel produces is loaded from its buffer (one lane of a 16-byte load
 * on the vector path); otherwise the producing op's family evaluator computes it
 * (the table below), asking cg_eval again for its operands at the indices it maps
 * to. The memo keeps each (tensor, index) computed once. This recursion, through
 * the kernel_*.c families and back, is the one circle of codegen/.
 *
 * cg_store_written evaluates every tensor a kernel writes at one iteration index and
 * stores it; the frame and the families' schedules call it from their loops. */
#include "cg_impl.h"

static LLVMValueRef load_global(CgKb *kb, int t, CgIdx *x)
{
	if (!kb->buf[t]) {
		cg_fail(kb, "internal: tensor t%d has no buffer", t);
		return LLVMGetUndef(cg_ctype(kb->m, (DType)kb->tinfo[t]->dtype));
	}
	const RelTensor *ti = kb->tinfo[t];
	bool row_scalar = kb->vrow && (kb->vrow_axis >= ti->rank || ti->shape[kb->vrow_axis] == 0);
	if (x->lane < 0 || row_scalar)
		return cg_load(kb, t, cg_offset_of(kb, t, x));
	DType dt = (DType)ti->dtype;
	if (!kb->vload[t]) {
		CgModule *m = kb->m;
		int bytes = kb->vec * ir_dtype_size(dt);
		LLVMTypeRef it = bytes == 16 ? LLVMVectorType(m->t_i32, 4)
					     : LLVMIntTypeInContext(m->ctx, (unsigned)bytes * 8);
		LLVMTypeRef st = cg_stype(m, dt);
		LLVMValueRef base = kb->vbase;
		if (kb->vrow)   /* reduce rows: lane 0 is `lane` elements before this one */
			base = LLVMBuildSub(kb->b, cg_offset(kb, x), cg_i64(kb, x->lane), "");
		LLVMValueRef p = LLVMBuildGEP2(kb->b, st, kb->buf[t], &base, 1, "");
		LLVMValueRef v = LLVMBuildLoad2(kb->b, it, p, "");
		LLVMSetAlignment(v, (unsigned)bytes);
		kb->vload[t] = LLVMBuildBitCast(kb->b, v, LLVMVectorType(st, (unsigned)kb->vec), "");
	}
	LLVMValueRef e = LLVMBuildExtractElement(kb->b, kb->vload[t],
						 LLVMConstInt(kb->m->t_i32, (unsigned)x->lane, 0), "");
	return cg_widen(kb, e, dt);
}

/* The evaluator of each op family, by OpFamily. `dims`: the evaluator needs the
 * output index's per-dim positions (cg_idx_dims runs before it). A family without an
 * evaluator cannot be part of a kernel. */
static const struct {
	LLVMValueRef (*fn)(CgKb *kb, const RelOp *op, CgIdx *out);
	bool dims;
} eval_family[] = {
	[FAM_BINARY] = {cg_eval_elementwise, false},
	[FAM_SCALAR] = {cg_eval_elementwise, false},
	[FAM_UNARY] = {cg_eval_elementwise, false},
	[FAM_COMPARE] = {cg_eval_elementwise, false},
	[FAM_SELECT] = {cg_eval_elementwise, false},
	[FAM_CAST] = {cg_eval_elementwise, false},
	[FAM_VIEW] = {cg_eval_view, false},
	[FAM_REDUCE] = {cg_eval_reduce, true},
	[FAM_MATMUL] = {cg_eval_matmul, true},
	[FAM_JOIN] = {cg_eval_join, true},
	[FAM_MODULE] = {cg_eval_window, true},
	[FAM_CONTROL] = {NULL, false},
};
_Static_assert(sizeof eval_family / sizeof *eval_family == FAM_COUNT,
	       "eval_family: one entry per OpFamily");

LLVMValueRef cg_eval(CgKb *kb, int t, CgIdx *x)
{
	if (kb->failed)
		return LLVMGetUndef(cg_ctype(kb->m, (DType)kb->tinfo[t]->dtype));
	LLVMValueRef v = cg_memo_find(kb, t, x);
	if (v)
		return v;
	CgIdx key = *x;
	int p = kb->producer[t];
	if (p < 0) {
		v = load_global(kb, t, x);
	} else {
		const RelOp *op = &kb->spec->ops[p];
		OpFamily f = ir_ops[op->kind].family;
		if (!eval_family[f].fn) {
			cg_fail(kb, "op '%s' cannot be part of a kernel", ir_ops[op->kind].file);
			return LLVMGetUndef(cg_ctype(kb->m, (DType)kb->tinfo[t]->dtype));
		}
		if (eval_family[f].dims)
			cg_idx_dims(kb, x);
		v = eval_family[f].fn(kb, op, x);
		/* An f16/bf16 result is rounded to its dtype where it is made, as the
		 * reference rounds every tensor it stores: an op that is discontinuous in
		 * its input (rem, floor, round, a cast, a comparison) fused after it then
		 * sees the value the reference sees (docs/tolerances.md). A view moves
		 * values already rounded. */
		if (f != FAM_VIEW && !kb->failed)
			v = cg_round_to(kb, v, (DType)kb->tinfo[t]->dtype);
	}
	cg_memo_add(kb, t, &key, v);
	return v;
}

/* Evaluate and store every written tensor at the iteration index. */
void cg_store_written(CgKb *kb, CgIdx *ref, const int *wr, int nw)
{
	for (int k = 0; k < nw; k++) {
		const RelTensor *w = kb->tinfo[wr[k]];
		if (cg_same_shape(w->rank, w->shape, ref->rank, ref->shape)) {
			CgIdx x = *ref;
			x.shape = w->shape;
			LLVMValueRef v = cg_eval(kb, w->id, &x);
			LLVMValueRef at = w->id == kb->nhwc && kb->nhwc_flat ? kb->nhwc_flat
									     : cg_offset_of(kb, w->id, &x);
			cg_store(kb, w->id, at, v);
			continue;
		}
		cg_idx_dims(kb, ref);
		LLVMValueRef cond = NULL;
		for (int d = 0; d < ref->rank; d++)
			if (w->shape[d] == 0 && ref->shape[d] != 0)
				cond = cg_and(kb, cond, LLVMBuildICmp(kb->b, LLVMIntEQ, ref->i[d],
								     cg_i64(kb, 0), ""));
		LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(kb->m->ctx, kb->fn, "store");
		LLVMBasicBlockRef cont = LLVMAppendBasicBlockInContext(kb->m->ctx, kb->fn, "next");
		LLVMBuildCondBr(kb->b, cond, then, cont);
		LLVMPositionBuilderAtEnd(kb->b, then);
		int mark = cg_memo_mark(kb);
		CgIdx x = cg_idx_broadcast(kb, ref, w);
		LLVMValueRef v = cg_eval(kb, w->id, &x);
		cg_store(kb, w->id, cg_offset_of(kb, w->id, &x), v);
		cg_memo_release(kb, mark);
		LLVMBuildBr(kb->b, cont);
		LLVMPositionBuilderAtEnd(kb->b, cont);
	}
}
