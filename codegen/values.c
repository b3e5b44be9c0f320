/* values.c: arithmetic on compute values, per dtype: the binary ops, compares,
 * integer unaries, and NaN-aware max / min. The elementwise family applies them to
 * operands; reductions, matmul and the windowed ops accumulate with them. Float math
 * beyond + - * / goes to math.c.
 *
 * Integer semantics follow the reference interpreter: division by zero gives 0,
 * MIN / -1 wraps, the remainder is floored, and powers wrap. */
#include "cg_impl.h"

LLVMValueRef cg_select_max(CgKb *kb, DType t, LLVMValueRef a, LLVMValueRef b, bool max)
{
	LLVMBuilderRef bd = kb->b;
	if (ir_dtype_is_float(t)) {
		/* NaN in a wins by the uno test, NaN in b because the compare fails */
		LLVMValueRef gt = LLVMBuildFCmp(bd, max ? LLVMRealOGT : LLVMRealOLT, a, b, "");
		LLVMValueRef nan = LLVMBuildFCmp(bd, LLVMRealUNO, a, a, "");
		return LLVMBuildSelect(bd, LLVMBuildOr(bd, gt, nan, ""), a, b, "");
	}
	LLVMIntPredicate p = cg_dtype_unsigned(t) ? (max ? LLVMIntUGT : LLVMIntULT)
					    : (max ? LLVMIntSGT : LLVMIntSLT);
	return LLVMBuildSelect(bd, LLVMBuildICmp(bd, p, a, b, ""), a, b, "");
}

/* Integer a / b or floored a mod b, 0 where b is 0, no trap for MIN / -1. */
static LLVMValueRef int_divrem(CgKb *kb, DType t, LLVMValueRef a, LLVMValueRef b, bool rem)
{
	LLVMBuilderRef bd = kb->b;
	LLVMTypeRef ty = LLVMTypeOf(a);
	LLVMValueRef zero = LLVMConstInt(ty, 0, 0), one = LLVMConstInt(ty, 1, 0);
	LLVMValueRef bz = LLVMBuildICmp(bd, LLVMIntEQ, b, zero, "");
	if (cg_dtype_unsigned(t)) {
		LLVMValueRef sb = LLVMBuildSelect(bd, bz, one, b, "");
		LLVMValueRef r = rem ? LLVMBuildURem(bd, a, sb, "") : LLVMBuildUDiv(bd, a, sb, "");
		return LLVMBuildSelect(bd, bz, zero, r, "");
	}
	LLVMValueRef allones = LLVMConstAllOnes(ty);
	unsigned w = LLVMGetIntTypeWidth(ty);
	LLVMValueRef minv = LLVMConstInt(ty, 1ULL << (w - 1), 0);
	LLVMValueRef ovf = LLVMBuildAnd(bd, LLVMBuildICmp(bd, LLVMIntEQ, a, minv, ""),
					LLVMBuildICmp(bd, LLVMIntEQ, b, allones, ""), "");
	LLVMValueRef bad = LLVMBuildOr(bd, bz, ovf, "");
	LLVMValueRef sb = LLVMBuildSelect(bd, bad, one, b, "");
	if (!rem) {
		LLVMValueRef q = LLVMBuildSDiv(bd, a, sb, "");
		return LLVMBuildSelect(bd, bz, zero, q, ""); /* MIN / -1 -> a / 1 = MIN (wraps) */
	}
	LLVMValueRef r = LLVMBuildSRem(bd, a, sb, "");
	r = LLVMBuildSelect(bd, bad, zero, r, "");
	/* floored: a nonzero remainder takes the divisor's sign */
	LLVMValueRef rneg = LLVMBuildICmp(bd, LLVMIntSLT, r, zero, "");
	LLVMValueRef bneg = LLVMBuildICmp(bd, LLVMIntSLT, b, zero, "");
	LLVMValueRef fix = LLVMBuildAnd(bd, LLVMBuildICmp(bd, LLVMIntNE, r, zero, ""),
					LLVMBuildXor(bd, rneg, bneg, ""), "");
	return LLVMBuildSelect(bd, fix, LLVMBuildAdd(bd, r, b, ""), r, "");
}

/* Integer power by square and multiply, wrapping; a negative exponent gives 1 for
 * base 1, +-1 for base -1 and 0 otherwise (as the reference interpreter). */
static LLVMValueRef int_pow(CgKb *kb, DType t, LLVMValueRef a, LLVMValueRef e)
{
	LLVMBuilderRef bd = kb->b;
	LLVMTypeRef ty = LLVMTypeOf(a);
	unsigned w = LLVMGetIntTypeWidth(ty);
	LLVMValueRef zero = LLVMConstInt(ty, 0, 0), one = LLVMConstInt(ty, 1, 0);
	CgLoop l;
	cg_loop_begin(kb, &l, cg_i64(kb, 0), cg_i64(kb, w), cg_i64(kb, 1));
	LLVMValueRef r = cg_carry(kb, &l, one);
	LLVMValueRef base = cg_carry(kb, &l, a);
	LLVMValueRef ee = cg_carry(kb, &l, e);
	LLVMValueRef bit = LLVMBuildICmp(bd, LLVMIntNE, LLVMBuildAnd(bd, ee, one, ""), zero, "");
	cg_carry_next(kb, &l, r, LLVMBuildSelect(bd, bit, LLVMBuildMul(bd, r, base, ""), r, ""));
	cg_carry_next(kb, &l, base, LLVMBuildMul(bd, base, base, ""));
	cg_carry_next(kb, &l, ee, LLVMBuildLShr(bd, ee, one, ""));
	cg_loop_end(kb, &l);
	if (cg_dtype_unsigned(t))
		return r;
	LLVMValueRef minus = LLVMConstAllOnes(ty);
	LLVMValueRef odd = LLVMBuildICmp(bd, LLVMIntNE, LLVMBuildAnd(bd, e, one, ""), zero, "");
	LLVMValueRef negres = LLVMBuildSelect(bd, LLVMBuildICmp(bd, LLVMIntEQ, a, one, ""), one,
		LLVMBuildSelect(bd, LLVMBuildICmp(bd, LLVMIntEQ, a, minus, ""),
				LLVMBuildSelect(bd, odd, minus, one, ""), zero, ""), "");
	return LLVMBuildSelect(bd, LLVMBuildICmp(bd, LLVMIntSLT, e, zero, ""), negres, r, "");
}

/* x / s for a float s the same in a thread's whole loop (a scalar, a row's
 * reduction in a reduce kernel). x · (1/s) is within 1 ulp of x / s, and the reciprocal
 * is loop-invariant, so the kernel multiplies instead of dividing per element; but
 * only while 1/s is a normal number of the type: for a subnormal s the reciprocal
 * overflows to inf, and for |s| above 2^126 (f32) it loses bits as a subnormal.
 *
 * f32 and f64 stay branch-free: such an s is first scaled by a power of two into the
 * normal range, and the product scaled back, q = (x · 1/(s·c)) · c, exact steps but
 * for the final one into the subnormals; in range c = 1, and q is x · (1/s) bit for
 * bit. (A branch per element to an exact division stopped the scheduler at every
 * lane of the norms' write loops.) s = 0, inf or NaN give what x / s gives. Other
 * types keep that branch, on the scalar alone. */
LLVMValueRef cg_div_uniform(CgKb *kb, LLVMValueRef x, LLVMValueRef s)
{
	LLVMBuilderRef bd = kb->b;
	LLVMTypeRef ty = LLVMTypeOf(s);
	LLVMTypeKind tk = LLVMGetTypeKind(ty);
	if (tk == LLVMFloatTypeKind || tk == LLVMDoubleTypeKind) {
		bool f = tk == LLVMFloatTypeKind;
		/* the normal range's ends, and the scale that brings s back inside */
		double tiny = f ? 0x1p-126 : 0x1p-1022, huge = f ? 0x1p126 : 0x1p1022;
		double up = f ? 0x1p64 : 0x1p512, down = f ? 0x1p-64 : 0x1p-512;
		LLVMValueRef as = cg_intrinsic(kb, "llvm.fabs", &ty, 1, &s, 1);
		LLVMValueRef c = LLVMBuildSelect(bd,
			LLVMBuildFCmp(bd, LLVMRealOLT, as, LLVMConstReal(ty, tiny), ""), LLVMConstReal(ty, up),
			LLVMBuildSelect(bd, LLVMBuildFCmp(bd, LLVMRealOGT, as, LLVMConstReal(ty, huge), ""),
					LLVMConstReal(ty, down), LLVMConstReal(ty, 1.0), ""), "scale");
		LLVMValueRef r = LLVMBuildFDiv(bd, LLVMConstReal(ty, 1.0), LLVMBuildFMul(bd, s, c, ""), "recip");
		return LLVMBuildFMul(bd, LLVMBuildFMul(bd, x, r, ""), c, "");
	}
	double lo, hi;
	switch (tk) {
	case LLVMHalfTypeKind: lo = 6.103515625e-05; hi = 65504.0; break;
	default: lo = 1.1754943508222875e-38; hi = 3.3895313892515355e38; break;
	}
	LLVMValueRef r = LLVMBuildFDiv(bd, LLVMConstReal(ty, 1.0), s, "recip");
	LLVMValueRef ar = cg_intrinsic(kb, "llvm.fabs", &ty, 1, &r, 1);
	LLVMValueRef ok = LLVMBuildAnd(bd, LLVMBuildFCmp(bd, LLVMRealOGE, ar, LLVMConstReal(ty, lo), ""),
				       LLVMBuildFCmp(bd, LLVMRealOLE, ar, LLVMConstReal(ty, hi), ""), "");
	LLVMContextRef ctx = kb->m->ctx;
	LLVMBasicBlockRef bmul = LLVMAppendBasicBlockInContext(ctx, kb->fn, "recip_mul");
	LLVMBasicBlockRef bdiv = LLVMAppendBasicBlockInContext(ctx, kb->fn, "div");
	LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(ctx, kb->fn, "div_done");
	LLVMBuildCondBr(bd, ok, bmul, bdiv);
	LLVMPositionBuilderAtEnd(bd, bmul);
	LLVMValueRef vm = LLVMBuildFMul(bd, x, r, "");
	LLVMBuildBr(bd, join);
	LLVMPositionBuilderAtEnd(bd, bdiv);
	LLVMValueRef vd = LLVMBuildFDiv(bd, x, s, "");
	LLVMBuildBr(bd, join);
	LLVMPositionBuilderAtEnd(bd, join);
	LLVMValueRef phi = LLVMBuildPhi(bd, LLVMTypeOf(x), "q");
	LLVMValueRef vals[2] = {vm, vd};
	LLVMBasicBlockRef from[2] = {bmul, bdiv};
	LLVMAddIncoming(phi, vals, from, 2);
	return phi;
}

LLVMValueRef cg_binary_value(CgKb *kb, OpKind op, DType t, LLVMValueRef a, LLVMValueRef b)
{
	LLVMBuilderRef bd = kb->b;
	bool fl = ir_dtype_is_float(t);
	switch (op) {
	case OP_ADD: case OP_ADD_SCALAR:
		return fl ? LLVMBuildFAdd(bd, a, b, "") : LLVMBuildAdd(bd, a, b, "");
	case OP_SUB: case OP_SUB_SCALAR:
		return fl ? LLVMBuildFSub(bd, a, b, "") : LLVMBuildSub(bd, a, b, "");
	case OP_MUL: case OP_MUL_SCALAR:
		return fl ? LLVMBuildFMul(bd, a, b, "") : LLVMBuildMul(bd, a, b, "");
	case OP_DIV:
		return fl ? LLVMBuildFDiv(bd, a, b, "") : int_divrem(kb, t, a, b, false);
	case OP_DIV_SCALAR:
		if (fl)
			return cg_div_uniform(kb, a, b);
		return int_divrem(kb, t, a, b, false);
	case OP_REM: case OP_REM_SCALAR:
		return fl ? cg_math_binary(&kb->math, op, a, b) : int_divrem(kb, t, a, b, true);
	case OP_POW: case OP_POWF: case OP_POW_SCALAR:
		return fl ? cg_math_binary(&kb->math, op, a, b) : int_pow(kb, t, a, b);
	case OP_MAX: case OP_CLAMP_MIN:
		return cg_select_max(kb, t, a, b, true);
	case OP_MIN: case OP_CLAMP_MAX:
		return cg_select_max(kb, t, a, b, false);
	case OP_AND: return LLVMBuildAnd(bd, a, b, "");
	case OP_OR: return LLVMBuildOr(bd, a, b, "");
	case OP_XOR: return LLVMBuildXor(bd, a, b, "");
	default: die("not a binary op: %s", ir_ops[op].file);
	}
}

LLVMValueRef cg_compare(CgKb *kb, OpKind op, DType t, LLVMValueRef a, LLVMValueRef b)
{
	int k;
	switch (op) {
	case OP_EQ: case OP_EQ_SCALAR: k = 0; break;
	case OP_NE: case OP_NE_SCALAR: k = 1; break;
	case OP_LT: case OP_LT_SCALAR: k = 2; break;
	case OP_LE: case OP_LE_SCALAR: k = 3; break;
	case OP_GT: case OP_GT_SCALAR: k = 4; break;
	default: k = 5; break;
	}
	if (ir_dtype_is_float(t)) {
		static const LLVMRealPredicate fp[] = {LLVMRealOEQ, LLVMRealUNE, LLVMRealOLT,
						       LLVMRealOLE, LLVMRealOGT, LLVMRealOGE};
		return LLVMBuildFCmp(kb->b, fp[k], a, b, "");
	}
	static const LLVMIntPredicate sp[] = {LLVMIntEQ, LLVMIntNE, LLVMIntSLT,
					      LLVMIntSLE, LLVMIntSGT, LLVMIntSGE};
	static const LLVMIntPredicate up[] = {LLVMIntEQ, LLVMIntNE, LLVMIntULT,
					      LLVMIntULE, LLVMIntUGT, LLVMIntUGE};
	return LLVMBuildICmp(kb->b, cg_dtype_unsigned(t) ? up[k] : sp[k], a, b, "");
}

LLVMValueRef cg_int_unary(CgKb *kb, OpKind op, DType t, LLVMValueRef x)
{
	LLVMBuilderRef bd = kb->b;
	LLVMTypeRef ty = LLVMTypeOf(x);
	LLVMValueRef zero = LLVMConstInt(ty, 0, 0);
	bool u = cg_dtype_unsigned(t);
	switch (op) {
	case OP_NEG:
		return LLVMBuildSub(bd, zero, x, "");
	case OP_ABS:
		if (u)
			return x;
		return LLVMBuildSelect(bd, LLVMBuildICmp(bd, LLVMIntSLT, x, zero, ""),
				       LLVMBuildSub(bd, zero, x, ""), x, "");
	case OP_RELU:
		if (u)
			return x;
		return LLVMBuildSelect(bd, LLVMBuildICmp(bd, LLVMIntSLT, x, zero, ""), zero, x, "");
	case OP_SIGN: {
		LLVMValueRef pos = LLVMBuildZExt(bd, LLVMBuildICmp(bd, u ? LLVMIntUGT : LLVMIntSGT,
								   x, zero, ""), ty, "");
		if (u)
			return pos;
		LLVMValueRef neg = LLVMBuildZExt(bd, LLVMBuildICmp(bd, LLVMIntSLT, x, zero, ""), ty, "");
		return LLVMBuildSub(bd, pos, neg, "");
	}
	default:
		cg_fail(kb, "op '%s' is not defined on %s", ir_ops[op].file, ir_dtype_name(t));
		return zero;
	}
}
