/* kernel_elemwise.c: the kernel frame and the elementwise evaluator.
 *
 * cg_build turns a CgKernelSpec into one LLVM function. It finds the kernel's global
 * tensors, placeholders and shape ids (which become parameters, see codegen.h), the
 * iteration space (the broadcast of the written tensors' shapes), and emits
 * grid-stride loops over it. Each written tensor is evaluated at the loop's index by
 * cg_eval, which recurses through the producing ops: elementwise ops map the index by
 * broadcasting (a size-1 dim reads position 0), views by their index arithmetic, and
 * the ops with loops live in kernel_single.c. A written tensor smaller than the
 * iteration space (a broadcast dim) is evaluated and stored only where its broadcast
 * positions are 0.
 *
 * Row mode: when a reduction's result is broadcast back over its own axis (softmax,
 * layer norm: a ReduceBroadcasted block), each thread takes whole rows. Per row it
 * evaluates every reduction once, then loops over the axis writing the row, and the
 * memo hands the row's reductions to every element. The launch rule then counts rows.
 *
 * When every op is elementwise and every global tensor has exactly the iteration shape,
 * the kernel gets a vector path: all buffers 16-byte aligned (checked at run time),
 * each thread takes V = 16 / (widest element) consecutive elements per step, loads and
 * stores them as one 16-byte (or narrower, for narrower dtypes) access, and a scalar
 * loop finishes the tail. The launch rule then asks for ceil(n / V) threads.
 *
 * Values travel in compute types: f16, bf16 and f32 as float, f64 as double, ints in
 * their width, bool as i1. Loads widen, stores round (bf16 by integer round to nearest
 * even, so no target needs bf16 instructions). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_impl.h"

/* ---- small helpers --------------------------------------------------------- */

int cg_fail(CgKb *kb, const char *fmt, ...)
{
	if (kb->failed)
		return -1;
	char msg[700];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	diag_set(kb->d, "codegen", 0, 0, "%s", msg);
	kb->failed = true;
	return -1;
}

LLVMValueRef cg_i64(CgKb *kb, int64_t v)
{
	return LLVMConstInt(kb->m->t_i64, (unsigned long long)v, 1);
}

LLVMValueRef cg_dim(CgKb *kb, uint32_t id)
{
	if (id == 0 || (int)id >= kb->ndims || !kb->dim[id])
		return cg_i64(kb, 1);
	return kb->dim[id];
}

LLVMValueRef cg_and(CgKb *kb, LLVMValueRef a, LLVMValueRef b)
{
	return a ? LLVMBuildAnd(kb->b, a, b, "") : b;
}

LLVMValueRef cg_intrinsic(CgKb *kb, const char *name, LLVMTypeRef *types, int ntypes,
			  LLVMValueRef *args, int nargs)
{
	unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
	if (!id)
		die("unknown intrinsic %s", name);
	LLVMValueRef fn = LLVMGetIntrinsicDeclaration(kb->m->mod, id, types, (size_t)ntypes);
	LLVMTypeRef ft = LLVMIntrinsicGetType(kb->m->ctx, id, types, (size_t)ntypes);
	return LLVMBuildCall2(kb->b, ft, fn, args, (unsigned)nargs, "");
}

static bool is_float(DType t)
{
	return ir_dtype_is_float(t);
}

static bool is_unsigned(DType t)
{
	return t == DT_U8 || t == DT_BOOL;
}

LLVMTypeRef cg_ctype(CgModule *m, DType t)
{
	switch (t) {
	case DT_F64: return m->t_f64;
	case DT_F32: case DT_F16: case DT_BF16: return m->t_f32;
	case DT_I64: return m->t_i64;
	case DT_I32: return m->t_i32;
	case DT_I16: return m->t_i16;
	case DT_I8: case DT_U8: return m->t_i8;
	case DT_BOOL: return m->t_i1;
	default: die("bad dtype %d", (int)t);
	}
}

LLVMTypeRef cg_stype(CgModule *m, DType t)
{
	switch (t) {
	case DT_F16: return m->t_f16;
	case DT_BF16: return m->t_i16;
	case DT_BOOL: return m->t_i8;
	default: return cg_ctype(m, t);
	}
}

/* storage value -> compute value */
static LLVMValueRef widen(CgKb *kb, LLVMValueRef v, DType t)
{
	CgModule *m = kb->m;
	switch (t) {
	case DT_F16:
		return LLVMBuildFPExt(kb->b, v, m->t_f32, "");
	case DT_BF16: {
		LLVMValueRef w = LLVMBuildZExt(kb->b, v, m->t_i32, "");
		w = LLVMBuildShl(kb->b, w, LLVMConstInt(m->t_i32, 16, 0), "");
		return LLVMBuildBitCast(kb->b, w, m->t_f32, "");
	}
	case DT_BOOL:
		return LLVMBuildICmp(kb->b, LLVMIntNE, v, LLVMConstInt(m->t_i8, 0, 0), "");
	default:
		return v;
	}
}

/* compute value -> storage value (rounding to nearest even) */
static LLVMValueRef narrow(CgKb *kb, LLVMValueRef v, DType t)
{
	CgModule *m = kb->m;
	LLVMBuilderRef b = kb->b;
	switch (t) {
	case DT_F16:
		return LLVMBuildFPTrunc(b, v, m->t_f16, "");
	case DT_BF16: {
		LLVMValueRef u = LLVMBuildBitCast(b, v, m->t_i32, "");
		LLVMValueRef hi = LLVMBuildLShr(b, u, LLVMConstInt(m->t_i32, 16, 0), "");
		LLVMValueRef odd = LLVMBuildAnd(b, hi, LLVMConstInt(m->t_i32, 1, 0), "");
		LLVMValueRef r = LLVMBuildAdd(b, u, LLVMConstInt(m->t_i32, 0x7fff, 0), "");
		r = LLVMBuildAdd(b, r, odd, "");
		r = LLVMBuildLShr(b, r, LLVMConstInt(m->t_i32, 16, 0), "");
		LLVMValueRef qnan = LLVMBuildOr(b, hi, LLVMConstInt(m->t_i32, 0x40, 0), "");
		LLVMValueRef nan = LLVMBuildFCmp(b, LLVMRealUNO, v, v, "");
		r = LLVMBuildSelect(b, nan, qnan, r, "");
		return LLVMBuildTrunc(b, r, m->t_i16, "");
	}
	case DT_BOOL:
		return LLVMBuildZExt(b, v, m->t_i8, "");
	default:
		return v;
	}
}

LLVMValueRef cg_load(CgKb *kb, int tensor, LLVMValueRef offset)
{
	DType t = (DType)kb->tinfo[tensor]->dtype;
	LLVMTypeRef st = cg_stype(kb->m, t);
	LLVMValueRef p = LLVMBuildGEP2(kb->b, st, kb->buf[tensor], &offset, 1, "");
	LLVMValueRef v = LLVMBuildLoad2(kb->b, st, p, "");
	LLVMSetAlignment(v, (unsigned)ir_dtype_size(t));
	return widen(kb, v, t);
}

void cg_store(CgKb *kb, int tensor, LLVMValueRef offset, LLVMValueRef v)
{
	DType t = (DType)kb->tinfo[tensor]->dtype;
	LLVMTypeRef st = cg_stype(kb->m, t);
	LLVMValueRef p = LLVMBuildGEP2(kb->b, st, kb->buf[tensor], &offset, 1, "");
	LLVMValueRef s = LLVMBuildStore(kb->b, narrow(kb, v, t), p);
	LLVMSetAlignment(s, (unsigned)ir_dtype_size(t));
}

/* Round a float compute value to the precision of f16 / bf16. */
static LLVMValueRef round_to(CgKb *kb, LLVMValueRef v, DType t)
{
	if (t != DT_F16 && t != DT_BF16)
		return v;
	return widen(kb, narrow(kb, v, t), t);
}

static LLVMValueRef float_to_int(CgKb *kb, LLVMValueRef v, DType to)
{
	LLVMTypeRef types[2] = {cg_ctype(kb->m, to), LLVMTypeOf(v)};
	return cg_intrinsic(kb, is_unsigned(to) ? "llvm.fptoui.sat" : "llvm.fptosi.sat", types,
			    2, &v, 1);
}

LLVMValueRef cg_convert(CgKb *kb, LLVMValueRef v, DType from, DType to)
{
	CgModule *m = kb->m;
	LLVMBuilderRef b = kb->b;
	if (from == to)
		return v;
	LLVMTypeRef ct = cg_ctype(m, to);
	if (to == DT_BOOL) {
		if (is_float(from))
			return LLVMBuildFCmp(b, LLVMRealUNE, v, LLVMConstReal(LLVMTypeOf(v), 0), "");
		return LLVMBuildICmp(b, LLVMIntNE, v, LLVMConstInt(LLVMTypeOf(v), 0, 0), "");
	}
	if (is_float(to)) {
		LLVMValueRef r;
		if (is_float(from)) {
			LLVMTypeRef ft = LLVMTypeOf(v);
			if (ft == ct)
				r = v;
			else if (ct == m->t_f64)
				r = LLVMBuildFPExt(b, v, ct, "");
			else
				r = LLVMBuildFPTrunc(b, v, ct, "");
		} else if (is_unsigned(from)) {
			r = LLVMBuildUIToFP(b, v, ct, "");
		} else {
			r = LLVMBuildSIToFP(b, v, ct, "");
		}
		return round_to(kb, r, to);
	}
	if (is_float(from))
		return float_to_int(kb, v, to);
	unsigned wf = LLVMGetIntTypeWidth(LLVMTypeOf(v)), wt = LLVMGetIntTypeWidth(ct);
	if (wf == wt)
		return v;
	if (wf > wt)
		return LLVMBuildTrunc(b, v, ct, "");
	return is_unsigned(from) ? LLVMBuildZExt(b, v, ct, "") : LLVMBuildSExt(b, v, ct, "");
}

LLVMValueRef cg_placeholder(CgKb *kb, int n)
{
	if (n < 0 || n >= kb->nplace || !kb->scalar[n])
		die("placeholder #%d has no parameter", n);
	return kb->scalar[n];
}

LLVMValueRef cg_scalar_as(CgKb *kb, int n, DType t)
{
	return cg_convert(kb, cg_placeholder(kb, n), DT_F64, t);
}

/* ---- indices --------------------------------------------------------------- */

CgIdx cg_idx_of(int rank, const uint32_t *shape)
{
	CgIdx x;
	memset(&x, 0, sizeof x);
	x.rank = rank;
	x.shape = shape;
	x.lane = -1;
	return x;
}

void cg_idx_dims(CgKb *kb, CgIdx *x)
{
	if (x->has_dims)
		return;
	if (!x->flat)
		die("index with neither flat nor dims");
	LLVMValueRef f = x->flat;
	for (int d = x->rank - 1; d >= 0; d--) {
		if (x->shape[d] == 0) {
			x->i[d] = cg_i64(kb, 0);
			continue;
		}
		bool outer = true;
		for (int e = 0; e < d; e++)
			if (x->shape[e] != 0)
				outer = false;
		if (outer) {
			x->i[d] = f;
			continue;
		}
		LLVMValueRef n = cg_dim(kb, x->shape[d]);
		x->i[d] = LLVMBuildURem(kb->b, f, n, "");
		f = LLVMBuildUDiv(kb->b, f, n, "");
	}
	x->has_dims = true;
}

static LLVMValueRef idx_linear(CgKb *kb, CgIdx *x)
{
	if (x->flat)
		return x->flat;
	LLVMValueRef f = cg_i64(kb, 0);
	for (int d = 0; d < x->rank; d++) {
		f = LLVMBuildMul(kb->b, f, cg_dim(kb, x->shape[d]), "");
		f = LLVMBuildAdd(kb->b, f, x->i[d], "");
	}
	x->flat = f;
	return f;
}

LLVMValueRef cg_offset(CgKb *kb, CgIdx *x)
{
	return idx_linear(kb, x);
}

static bool same_shape(int ra, const uint32_t *a, int rb, const uint32_t *b)
{
	return ra == rb && !memcmp(a, b, sizeof *a * (size_t)ra);
}

/* The index of operand `in` of an elementwise op whose output index is out. */
static CgIdx idx_broadcast(CgKb *kb, CgIdx *out, const RelTensor *in)
{
	CgIdx x = *out;
	x.shape = in->shape;
	if (same_shape(out->rank, out->shape, in->rank, in->shape))
		return x;
	if (in->rank != out->rank)
		die("broadcast between ranks %d and %d", in->rank, out->rank);
	cg_idx_dims(kb, out);
	x = cg_idx_of(in->rank, in->shape);
	x.has_dims = true;
	x.lane = out->lane;
	for (int d = 0; d < in->rank; d++)
		x.i[d] = in->shape[d] == 0 && out->shape[d] != 0 ? cg_i64(kb, 0) : out->i[d];
	return x;
}

/* ---- memo ------------------------------------------------------------------ */

int cg_memo_mark(CgKb *kb)
{
	return kb->nmemo;
}

void cg_memo_release(CgKb *kb, int mark)
{
	if (mark < kb->nmemo)
		kb->nmemo = mark;
}

static bool idx_same(const CgIdx *a, const CgIdx *b)
{
	if (a->lane != b->lane)
		return false;
	if (a->flat && b->flat)
		return a->flat == b->flat;
	if (!a->has_dims || !b->has_dims)
		return false;
	for (int d = 0; d < a->rank; d++)
		if (a->i[d] != b->i[d])
			return false;
	return true;
}

static LLVMValueRef memo_find(CgKb *kb, int t, const CgIdx *x)
{
	for (int k = kb->nmemo - 1; k >= 0; k--)
		if (kb->memo[k].tensor == t && idx_same(&kb->memo[k].idx, x))
			return kb->memo[k].v;
	return NULL;
}

static void memo_add(CgKb *kb, int t, const CgIdx *x, LLVMValueRef v)
{
	if (kb->nmemo == kb->capmemo) {
		kb->capmemo = kb->capmemo ? 2 * kb->capmemo : 64;
		kb->memo = xrealloc(kb->memo, sizeof *kb->memo * (size_t)kb->capmemo);
	}
	kb->memo[kb->nmemo++] = (CgMemo){t, *x, v};
}

void cg_memo_put(CgKb *kb, int tensor, const CgIdx *idx, LLVMValueRef v)
{
	memo_add(kb, tensor, idx, v);
}

/* ---- loops ----------------------------------------------------------------- */

void cg_loop_begin(CgKb *kb, CgLoop *l, LLVMValueRef start, LLVMValueRef end, LLVMValueRef step)
{
	LLVMContextRef c = kb->m->ctx;
	memset(l, 0, sizeof *l);
	LLVMBasicBlockRef pre = LLVMGetInsertBlock(kb->b);
	l->header = LLVMAppendBasicBlockInContext(c, kb->fn, "loop");
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c, kb->fn, "body");
	l->exit = LLVMAppendBasicBlockInContext(c, kb->fn, "done");
	LLVMBuildBr(kb->b, l->header);
	LLVMPositionBuilderAtEnd(kb->b, l->header);
	l->i = LLVMBuildPhi(kb->b, kb->m->t_i64, "i");
	LLVMAddIncoming(l->i, &start, &pre, 1);
	l->cmp = LLVMBuildICmp(kb->b, LLVMIntSLT, l->i, end, "");
	LLVMBuildCondBr(kb->b, l->cmp, body, l->exit);
	LLVMPositionBuilderAtEnd(kb->b, body);
	l->step = step;
	l->mark = cg_memo_mark(kb);
}

LLVMValueRef cg_carry(CgKb *kb, CgLoop *l, LLVMValueRef init)
{
	if (l->ncarry == 4)
		die("too many loop-carried values");
	LLVMBasicBlockRef here = LLVMGetInsertBlock(kb->b);
	LLVMBasicBlockRef pre = LLVMGetIncomingBlock(l->i, 0);
	LLVMPositionBuilderBefore(kb->b, l->cmp);
	LLVMValueRef phi = LLVMBuildPhi(kb->b, LLVMTypeOf(init), "acc");
	LLVMAddIncoming(phi, &init, &pre, 1);
	LLVMPositionBuilderAtEnd(kb->b, here);
	l->cphi[l->ncarry] = phi;
	l->cnext[l->ncarry++] = NULL;
	return phi;
}

void cg_carry_next(CgKb *kb, CgLoop *l, LLVMValueRef phi, LLVMValueRef next)
{
	(void)kb;
	for (int k = 0; k < l->ncarry; k++)
		if (l->cphi[k] == phi)
			l->cnext[k] = next;
}

void cg_loop_end(CgKb *kb, CgLoop *l)
{
	LLVMValueRef next = LLVMBuildAdd(kb->b, l->i, l->step, "");
	LLVMBasicBlockRef latch = LLVMGetInsertBlock(kb->b);
	LLVMBuildBr(kb->b, l->header);
	LLVMAddIncoming(l->i, &next, &latch, 1);
	for (int k = 0; k < l->ncarry; k++) {
		LLVMValueRef v = l->cnext[k] ? l->cnext[k] : l->cphi[k];
		LLVMAddIncoming(l->cphi[k], &v, &latch, 1);
	}
	LLVMPositionBuilderAtEnd(kb->b, l->exit);
	cg_memo_release(kb, l->mark);
}

/* ---- the elementwise evaluator --------------------------------------------- */

LLVMValueRef cg_select_max(CgKb *kb, DType t, LLVMValueRef a, LLVMValueRef b, bool max)
{
	LLVMBuilderRef bd = kb->b;
	if (is_float(t)) {
		/* NaN in a wins by the uno test, NaN in b because the compare fails */
		LLVMValueRef gt = LLVMBuildFCmp(bd, max ? LLVMRealOGT : LLVMRealOLT, a, b, "");
		LLVMValueRef nan = LLVMBuildFCmp(bd, LLVMRealUNO, a, a, "");
		return LLVMBuildSelect(bd, LLVMBuildOr(bd, gt, nan, ""), a, b, "");
	}
	LLVMIntPredicate p = is_unsigned(t) ? (max ? LLVMIntUGT : LLVMIntULT)
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
	if (is_unsigned(t)) {
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
	if (is_unsigned(t))
		return r;
	LLVMValueRef minus = LLVMConstAllOnes(ty);
	LLVMValueRef odd = LLVMBuildICmp(bd, LLVMIntNE, LLVMBuildAnd(bd, e, one, ""), zero, "");
	LLVMValueRef negres = LLVMBuildSelect(bd, LLVMBuildICmp(bd, LLVMIntEQ, a, one, ""), one,
		LLVMBuildSelect(bd, LLVMBuildICmp(bd, LLVMIntEQ, a, minus, ""),
				LLVMBuildSelect(bd, odd, minus, one, ""), zero, ""), "");
	return LLVMBuildSelect(bd, LLVMBuildICmp(bd, LLVMIntSLT, e, zero, ""), negres, r, "");
}

LLVMValueRef cg_binary_value(CgKb *kb, OpKind op, DType t, LLVMValueRef a, LLVMValueRef b)
{
	LLVMBuilderRef bd = kb->b;
	bool fl = is_float(t);
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
		/* x · (1/s): the reciprocal is loop-invariant and hoisted, so the kernel
		 * multiplies instead of dividing per element (within 1 ulp of x / s) */
		if (fl)
			return LLVMBuildFMul(bd, a, LLVMBuildFDiv(bd, LLVMConstReal(LLVMTypeOf(b), 1.0),
								  b, ""), "");
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

static LLVMValueRef compare(CgKb *kb, OpKind op, DType t, LLVMValueRef a, LLVMValueRef b)
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
	if (is_float(t)) {
		static const LLVMRealPredicate fp[] = {LLVMRealOEQ, LLVMRealUNE, LLVMRealOLT,
						       LLVMRealOLE, LLVMRealOGT, LLVMRealOGE};
		return LLVMBuildFCmp(kb->b, fp[k], a, b, "");
	}
	static const LLVMIntPredicate sp[] = {LLVMIntEQ, LLVMIntNE, LLVMIntSLT,
					      LLVMIntSLE, LLVMIntSGT, LLVMIntSGE};
	static const LLVMIntPredicate up[] = {LLVMIntEQ, LLVMIntNE, LLVMIntULT,
					      LLVMIntULE, LLVMIntUGT, LLVMIntUGE};
	return LLVMBuildICmp(kb->b, is_unsigned(t) ? up[k] : sp[k], a, b, "");
}

static LLVMValueRef int_unary(CgKb *kb, OpKind op, DType t, LLVMValueRef x)
{
	LLVMBuilderRef bd = kb->b;
	LLVMTypeRef ty = LLVMTypeOf(x);
	LLVMValueRef zero = LLVMConstInt(ty, 0, 0);
	bool u = is_unsigned(t);
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

static LLVMValueRef eval_elementwise(CgKb *kb, const RelOp *op, CgIdx *out)
{
	OpKind k = (OpKind)op->kind;
	const RelTensor *res = &op->t[op->nin];
	LLVMValueRef v[3] = {0};
	for (int i = 0; i < op->nin && i < 3; i++) {
		CgIdx x = idx_broadcast(kb, out, &op->t[i]);
		v[i] = cg_eval(kb, op->t[i].id, &x);
	}
	DType t = (DType)op->t[0].dtype;
	switch (ir_ops[k].family) {
	case FAM_BINARY:
		return cg_binary_value(kb, k, t, v[0], v[1]);
	case FAM_SCALAR:
		switch (k) {
		case OP_CLAMP: {
			LLVMValueRef lo = cg_scalar_as(kb, op->place0, t);
			LLVMValueRef hi = cg_scalar_as(kb, op->place0 + 1, t);
			return cg_select_max(kb, t, cg_select_max(kb, t, v[0], lo, true), hi, false);
		}
		default:
			return cg_binary_value(kb, k, t, v[0], cg_scalar_as(kb, op->place0, t));
		}
	case FAM_COMPARE:
		if (op->nin == 1)
			return compare(kb, k, t, v[0], cg_scalar_as(kb, op->place0, t));
		return compare(kb, k, t, v[0], v[1]);
	case FAM_UNARY:
		if (k == OP_NOT)
			return LLVMBuildNot(kb->b, v[0], "");
		if (is_float(t))
			return cg_math_unary(&kb->math, k, v[0], (GeluApprox)op->attr.approx);
		return int_unary(kb, k, t, v[0]);
	case FAM_SELECT:
		if (k == OP_WHERE)
			return LLVMBuildSelect(kb->b, v[0], v[1], v[2], "");
		return LLVMBuildSelect(kb->b, v[1], cg_scalar_as(kb, op->place0, t), v[0], "");
	case FAM_CAST:
		return cg_convert(kb, v[0], t, (DType)res->dtype);
	default:
		die("not elementwise: %s", ir_ops[k].file);
	}
}

static LLVMValueRef eval_view(CgKb *kb, const RelOp *op, CgIdx *out)
{
	const RelTensor *in = &op->t[0];
	CgIdx x;
	switch ((OpKind)op->kind) {
	case OP_RESHAPE:
		if (same_shape(out->rank, out->shape, in->rank, in->shape)) {
			x = *out;
			x.shape = in->shape;
		} else {
			x = cg_idx_of(in->rank, in->shape);
			x.flat = idx_linear(kb, out);
		}
		break;
	case OP_PERMUTE:
	case OP_SWAP_DIMS:
		cg_idx_dims(kb, out);
		x = cg_idx_of(in->rank, in->shape);
		x.has_dims = true;
		for (int d = 0; d < out->rank; d++)
			x.i[d] = out->i[d];
		if (op->kind == OP_PERMUTE) {
			for (int d = 0; d < op->attr.n && d < out->rank; d++)
				x.i[op->attr.axes[d]] = out->i[d];
		} else {
			int a = op->attr.axes[0], b = op->attr.axes[1];
			x.i[a] = out->i[b];
			x.i[b] = out->i[a];
		}
		break;
	case OP_EXPAND:
		x = idx_broadcast(kb, out, in);
		break;
	case OP_SLICE:
		cg_idx_dims(kb, out);
		x = cg_idx_of(in->rank, in->shape);
		x.has_dims = true;
		for (int d = 0; d < out->rank; d++) {
			x.i[d] = out->i[d];
			if (2 * d < op->nplace) {
				LLVMValueRef s = cg_scalar_as(kb, op->place0 + 2 * d, DT_I64);
				x.i[d] = LLVMBuildAdd(kb->b, x.i[d], s, "");
			}
		}
		break;
	default:
		die("not a view: %s", ir_ops[op->kind].file);
	}
	return cg_eval(kb, in->id, &x);
}

static LLVMValueRef load_global(CgKb *kb, int t, CgIdx *x)
{
	if (!kb->buf[t]) {
		cg_fail(kb, "internal: tensor t%d has no buffer", t);
		return LLVMGetUndef(cg_ctype(kb->m, (DType)kb->tinfo[t]->dtype));
	}
	if (x->lane < 0)
		return cg_load(kb, t, cg_offset(kb, x));
	DType dt = (DType)kb->tinfo[t]->dtype;
	if (!kb->vload[t]) {
		CgModule *m = kb->m;
		int bytes = kb->vec * ir_dtype_size(dt);
		LLVMTypeRef it = bytes == 16 ? LLVMVectorType(m->t_i32, 4)
					     : LLVMIntTypeInContext(m->ctx, (unsigned)bytes * 8);
		LLVMTypeRef st = cg_stype(m, dt);
		LLVMValueRef p = LLVMBuildGEP2(kb->b, st, kb->buf[t], &kb->vbase, 1, "");
		LLVMValueRef v = LLVMBuildLoad2(kb->b, it, p, "");
		LLVMSetAlignment(v, (unsigned)bytes);
		kb->vload[t] = LLVMBuildBitCast(kb->b, v, LLVMVectorType(st, (unsigned)kb->vec), "");
	}
	LLVMValueRef e = LLVMBuildExtractElement(kb->b, kb->vload[t],
						 LLVMConstInt(kb->m->t_i32, (unsigned)x->lane, 0), "");
	return widen(kb, e, dt);
}

LLVMValueRef cg_eval(CgKb *kb, int t, CgIdx *x)
{
	if (kb->failed)
		return LLVMGetUndef(cg_ctype(kb->m, (DType)kb->tinfo[t]->dtype));
	LLVMValueRef v = memo_find(kb, t, x);
	if (v)
		return v;
	CgIdx key = *x;
	int p = kb->producer[t];
	if (p < 0) {
		v = load_global(kb, t, x);
	} else {
		const RelOp *op = &kb->spec->ops[p];
		switch (ir_ops[op->kind].family) {
		case FAM_BINARY: case FAM_SCALAR: case FAM_UNARY: case FAM_COMPARE:
		case FAM_SELECT: case FAM_CAST:
			v = eval_elementwise(kb, op, x);
			break;
		case FAM_VIEW:
			v = eval_view(kb, op, x);
			break;
		case FAM_REDUCE:
			cg_idx_dims(kb, x);
			v = cg_eval_reduce(kb, op, x);
			break;
		case FAM_MATMUL:
			cg_idx_dims(kb, x);
			v = cg_eval_matmul(kb, op, x);
			break;
		case FAM_JOIN:
			cg_idx_dims(kb, x);
			v = op->kind == OP_CAT ? cg_eval_cat(kb, op, x) : cg_eval_gather(kb, op, x);
			break;
		case FAM_MODULE:
			cg_idx_dims(kb, x);
			v = op->kind == OP_CONV2D ? cg_eval_conv2d(kb, op, x) : cg_eval_pool2d(kb, op, x);
			break;
		default:
			cg_fail(kb, "op '%s' cannot be part of a kernel", ir_ops[op->kind].file);
			return LLVMGetUndef(cg_ctype(kb->m, (DType)kb->tinfo[t]->dtype));
		}
	}
	memo_add(kb, t, &key, v);
	return v;
}

/* ---- the frame --------------------------------------------------------------- */

typedef struct {
	int ntensors, maxplace, maxdim;
	bool *read, *written, *placeused, *dimused;
} Usage;

static void usage_free(Usage *u)
{
	free(u->read);
	free(u->written);
	free(u->placeused);
	free(u->dimused);
}

static int analyze(CgKb *kb, const CgKernelSpec *s, Usage *u)
{
	memset(u, 0, sizeof *u);
	for (int i = 0; i < s->nops; i++) {
		const RelOp *op = &s->ops[i];
		OpFamily f = ir_ops[op->kind].family;
		if (op->kind >= OP_COUNT || f == FAM_CONTROL)
			return cg_fail(kb, "op '%s' cannot be part of a kernel",
				       op->kind < OP_COUNT ? ir_ops[op->kind].file : "?");
		for (int k = 0; k < op->nin + op->nout; k++) {
			const RelTensor *t = &op->t[k];
			if (t->id + 1 > u->ntensors)
				u->ntensors = t->id + 1;
			for (int d = 0; d < t->rank; d++)
				if ((int)t->shape[d] + 1 > u->maxdim)
					u->maxdim = (int)t->shape[d] + 1;
		}
		if (op->place0 + op->nplace > u->maxplace)
			u->maxplace = op->place0 + op->nplace;
	}
	int nt = u->ntensors;
	kb->ntensors = nt;
	kb->tinfo = xcalloc((size_t)nt + 1, sizeof *kb->tinfo);
	kb->producer = xmalloc(sizeof *kb->producer * ((size_t)nt + 1));
	for (int i = 0; i < nt; i++)
		kb->producer[i] = -1;
	u->read = xcalloc((size_t)nt + 1, 1);
	u->written = xcalloc((size_t)nt + 1, 1);
	u->placeused = xcalloc((size_t)u->maxplace + 1, 1);
	u->dimused = xcalloc((size_t)u->maxdim + 1, 1);
	for (int i = 0; i < s->nops; i++) {
		const RelOp *op = &s->ops[i];
		for (int k = 0; k < op->nin + op->nout; k++) {
			const RelTensor *t = &op->t[k];
			if (!kb->tinfo[t->id])
				kb->tinfo[t->id] = t;
			for (int d = 0; d < t->rank; d++)
				u->dimused[t->shape[d]] = true;
			if (k < op->nin && kb->producer[t->id] < 0)
				u->read[t->id] = true;
		}
		for (int k = 0; k < op->nout; k++) {
			int id = op->t[op->nin + k].id;
			if (kb->producer[id] >= 0 || u->read[id])
				return cg_fail(kb, "internal: tensor t%d is produced twice or read before it is produced", id);
			kb->producer[id] = i;
			if (id < s->nwritten && s->written[id])
				u->written[id] = true;
		}
		for (int p = 0; p < op->nplace; p++)
			if (op->kind != OP_SLICE || p % 2 == 0)
				u->placeused[op->place0 + p] = true;
	}
	u->dimused[0] = false;
	return 0;
}

static void kernel_name(CgModule *m, const CgKernelSpec *s, uint64_t hash, char *buf, size_t n)
{
	const char *base = cg_kernel_kind_name(s->kind);
	if (s->kind == CG_KERNEL_SINGLE)
		base = ir_ops[s->ops[0].kind].file;
	else if (s->kind != CG_KERNEL_ELEMWISE)
		base = s->kind == CG_KERNEL_MATMUL ? "matmul_fused" : "reduce_fused";
	snprintf(buf, n, "%s_%016llx", base, (unsigned long long)hash);
	for (int k = 1; LLVMGetNamedFunction(m->mod, buf); k++)
		snprintf(buf, n, "%s_%016llx_%d", base, (unsigned long long)hash, k);
}

static LLVMValueRef sreg(CgKb *kb, const char *name)
{
	LLVMValueRef v = cg_intrinsic(kb, name, NULL, 0, NULL, 0);
	return LLVMBuildZExt(kb->b, v, kb->m->t_i64, "");
}

static LLVMTypeRef param_type(CgModule *m, const CgParam *p)
{
	return p->kind == CG_PARAM_BUFFER ? m->t_ptr : p->kind == CG_PARAM_SCALAR ? m->t_f64 : m->t_i64;
}

/* One !nvvm.annotations entry {fn, key, value} (the NVPTX backend reads them). */
static void annotate(CgModule *m, LLVMValueRef fn, const char *key, int value)
{
	LLVMMetadataRef md[3] = {
		LLVMValueAsMetadata(fn),
		LLVMMDStringInContext2(m->ctx, key, strlen(key)),
		LLVMValueAsMetadata(LLVMConstInt(m->t_i32, (unsigned)value, 0)),
	};
	LLVMAddNamedMetadataOperand(m->mod, "nvvm.annotations",
				    LLVMMetadataAsValue(m->ctx, LLVMMDNodeInContext2(m->ctx, md, 3)));
}

static void make_function(CgKb *kb, const char *name, const CgParam *ps, int np)
{
	CgModule *m = kb->m;
	bool gpu = m->opt.target == CG_TARGET_NVPTX;
	LLVMTypeRef *types = xmalloc(sizeof *types * ((size_t)np + 3));
	for (int i = 0; i < np; i++)
		types[i] = param_type(m, &ps[i]);
	LLVMTypeRef host[3] = {m->t_ptr, m->t_i64, m->t_i64};
	LLVMTypeRef ft = gpu ? LLVMFunctionType(m->t_void, types, (unsigned)np, 0)
			     : LLVMFunctionType(m->t_void, host, 3, 0);
	kb->fn = LLVMAddFunction(m->mod, name, ft);
	if (gpu) {
		LLVMSetFunctionCallConv(kb->fn, LLVMPTXKernelCallConv);
		/* Every launch uses CG_BLOCK threads. No minimum of resident blocks is
		 * asked for: on the H200, capping a 40-op fused kernel at 64 registers
		 * made it spill and cost a third of its bandwidth (docs/benchmarks.md). */
		annotate(m, kb->fn, "maxntidx", CG_BLOCK);
	}
	LLVMPositionBuilderAtEnd(kb->b, LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "entry"));
	LLVMValueRef *vals = xmalloc(sizeof *vals * ((size_t)np + 1));
	for (int i = 0; i < np; i++) {
		if (gpu) {
			vals[i] = LLVMGetParam(kb->fn, (unsigned)i);
			continue;
		}
		LLVMValueRef k = cg_i64(kb, i);
		LLVMValueRef slot = LLVMBuildGEP2(kb->b, m->t_ptr, LLVMGetParam(kb->fn, 0), &k, 1, "");
		LLVMValueRef at = LLVMBuildLoad2(kb->b, m->t_ptr, slot, "");
		vals[i] = LLVMBuildLoad2(kb->b, types[i], at, "");
	}
	for (int i = 0; i < np; i++) {
		const CgParam *p = &ps[i];
		char nm[32];
		snprintf(nm, sizeof nm, "%s%d", p->kind == CG_PARAM_BUFFER ? "t" :
			 p->kind == CG_PARAM_SCALAR ? "s" : "d", p->id);
		LLVMSetValueName2(vals[i], nm, strlen(nm));
		if (p->kind == CG_PARAM_BUFFER)
			kb->buf[p->id] = vals[i];
		else if (p->kind == CG_PARAM_SCALAR)
			kb->scalar[p->id] = vals[i];
		else
			kb->dim[p->id] = vals[i];
	}
	if (gpu) {
		LLVMValueRef ctaid = sreg(kb, "llvm.nvvm.read.ptx.sreg.ctaid.x");
		LLVMValueRef ntid = sreg(kb, "llvm.nvvm.read.ptx.sreg.ntid.x");
		LLVMValueRef tid = sreg(kb, "llvm.nvvm.read.ptx.sreg.tid.x");
		LLVMValueRef nctaid = sreg(kb, "llvm.nvvm.read.ptx.sreg.nctaid.x");
		kb->thread = LLVMBuildAdd(kb->b, LLVMBuildMul(kb->b, ctaid, ntid, ""), tid, "thread");
		kb->nthreads = LLVMBuildMul(kb->b, nctaid, ntid, "nthreads");
	} else {
		kb->thread = LLVMGetParam(kb->fn, 1);
		kb->nthreads = LLVMGetParam(kb->fn, 2);
	}
	free(types);
	free(vals);
}

/* Evaluate and store every written tensor at the iteration index. */
static void store_all(CgKb *kb, CgIdx *ref, const int *wr, int nw)
{
	for (int k = 0; k < nw; k++) {
		const RelTensor *w = kb->tinfo[wr[k]];
		if (same_shape(w->rank, w->shape, ref->rank, ref->shape)) {
			CgIdx x = *ref;
			x.shape = w->shape;
			LLVMValueRef v = cg_eval(kb, w->id, &x);
			cg_store(kb, w->id, cg_offset(kb, &x), v);
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
		CgIdx x = idx_broadcast(kb, ref, w);
		LLVMValueRef v = cg_eval(kb, w->id, &x);
		cg_store(kb, w->id, cg_offset(kb, &x), v);
		cg_memo_release(kb, mark);
		LLVMBuildBr(kb->b, cont);
		LLVMPositionBuilderAtEnd(kb->b, cont);
	}
}

/* The vector body: V lanes from vbase, 16-byte accesses. */
static void vector_body(CgKb *kb, int rank, const uint32_t *ref, const int *wr, int nw)
{
	CgModule *m = kb->m;
	memset(kb->vload, 0, sizeof *kb->vload * (size_t)kb->ntensors);
	LLVMValueRef *lanes = xcalloc((size_t)nw * (size_t)kb->vec, sizeof *lanes);
	for (int l = 0; l < kb->vec; l++) {
		kb->nmemo = 0;
		CgIdx x = cg_idx_of(rank, ref);
		x.lane = l;
		x.flat = LLVMBuildAdd(kb->b, kb->vbase, cg_i64(kb, l), "");
		for (int k = 0; k < nw; k++) {
			CgIdx y = x;
			y.shape = kb->tinfo[wr[k]]->shape;
			lanes[k * kb->vec + l] = cg_eval(kb, wr[k], &y);
		}
	}
	kb->nmemo = 0;
	for (int k = 0; k < nw; k++) {
		DType dt = (DType)kb->tinfo[wr[k]]->dtype;
		LLVMTypeRef st = cg_stype(m, dt);
		LLVMValueRef vec = LLVMGetUndef(LLVMVectorType(st, (unsigned)kb->vec));
		for (int l = 0; l < kb->vec; l++)
			vec = LLVMBuildInsertElement(kb->b, vec, narrow(kb, lanes[k * kb->vec + l], dt),
						     LLVMConstInt(m->t_i32, (unsigned)l, 0), "");
		int bytes = kb->vec * ir_dtype_size(dt);
		LLVMTypeRef it = bytes == 16 ? LLVMVectorType(m->t_i32, 4)
					     : LLVMIntTypeInContext(m->ctx, (unsigned)bytes * 8);
		LLVMValueRef p = LLVMBuildGEP2(kb->b, st, kb->buf[wr[k]], &kb->vbase, 1, "");
		LLVMValueRef s = LLVMBuildStore(kb->b, LLVMBuildBitCast(kb->b, vec, it, ""), p);
		LLVMSetAlignment(s, (unsigned)bytes);
	}
	free(lanes);
}

/* Row mode: a grid-stride loop over the rows (the iteration space without `axis`);
 * per row, every reduction of the kernel is evaluated once at the row's position,
 * then an inner loop over `axis` writes the row, finding the reductions in the memo. */
static void row_loops(CgKb *kb, int rank, const uint32_t *ref, int axis, const int *wr, int nw)
{
	uint32_t rows_shape[IR_MAX_RANK];
	memcpy(rows_shape, ref, sizeof *ref * (size_t)rank);
	rows_shape[axis] = 0;
	LLVMValueRef nrows = cg_i64(kb, 1);
	for (int d = 0; d < rank; d++)
		nrows = LLVMBuildMul(kb->b, nrows, cg_dim(kb, rows_shape[d]), "");
	CgLoop lr;
	cg_loop_begin(kb, &lr, kb->thread, nrows, kb->nthreads);
	kb->nmemo = 0;
	CgIdx row = cg_idx_of(rank, rows_shape);
	row.flat = lr.i;
	cg_idx_dims(kb, &row);
	for (int i = 0; i < kb->spec->nops; i++) {
		const RelOp *op = &kb->spec->ops[i];
		const RelTensor *r = &op->t[op->nin];
		if (ir_ops[op->kind].family != FAM_REDUCE || r->rank != rank)
			continue;
		CgIdx x = cg_idx_of(rank, r->shape);
		x.has_dims = true;
		for (int d = 0; d < rank; d++)
			x.i[d] = r->shape[d] == 0 && ref[d] != 0 ? cg_i64(kb, 0) : row.i[d];
		cg_eval(kb, r->id, &x);
	}
	CgLoop la;
	cg_loop_begin(kb, &la, cg_i64(kb, 0), cg_dim(kb, ref[axis]), cg_i64(kb, 1));
	CgIdx x = cg_idx_of(rank, ref);
	x.has_dims = true;
	for (int d = 0; d < rank; d++)
		x.i[d] = d == axis ? la.i : row.i[d];
	store_all(kb, &x, wr, nw);
	cg_loop_end(kb, &la);
	cg_loop_end(kb, &lr);
}

static void kb_free(CgKb *kb)
{
	free(kb->tinfo);
	free(kb->producer);
	free(kb->buf);
	free(kb->scalar);
	free(kb->dim);
	free(kb->vload);
	free(kb->memo);
}

static bool elementwise_family(OpFamily f)
{
	return f == FAM_BINARY || f == FAM_SCALAR || f == FAM_UNARY || f == FAM_COMPARE ||
	       f == FAM_SELECT || f == FAM_CAST;
}

CgKernel *cg_build(CgModule *m, const CgKernelSpec *s, uint64_t hash, Diag *d)
{
	if (s->nops < 1) {
		diag_set(d, "codegen", 0, 0, "internal: a kernel needs at least one op");
		return NULL;
	}
	if (s->kind == CG_KERNEL_SINGLE && s->nops != 1) {
		diag_set(d, "codegen", 0, 0, "internal: a single-op kernel got %d ops", s->nops);
		return NULL;
	}
	CgKb kb0, *kb = &kb0;
	memset(kb, 0, sizeof *kb);
	kb->m = m;
	kb->b = m->b;
	kb->spec = s;
	kb->d = d;
	Usage u;
	CgKernel *k = NULL;
	int *wr = NULL;
	if (analyze(kb, s, &u))
		goto out;

	/* the written tensors and the iteration space */
	wr = xmalloc(sizeof *wr * ((size_t)u.ntensors + 1));
	int nw = 0;
	for (int i = 0; i < u.ntensors; i++)
		if (u.written[i])
			wr[nw++] = i;
	if (nw == 0) {
		cg_fail(kb, "internal: kernel writes no tensor");
		goto out;
	}
	int rank = kb->tinfo[wr[0]]->rank;
	uint32_t ref[IR_MAX_RANK] = {0};
	for (int k2 = 0; k2 < nw; k2++) {
		const RelTensor *w = kb->tinfo[wr[k2]];
		if (w->rank != rank) {
			cg_fail(kb, "kernel writes tensors of ranks %d and %d: not supported yet",
				rank, w->rank);
			goto out;
		}
		for (int dd = 0; dd < rank; dd++) {
			if (w->shape[dd] == 0)
				continue;
			if (ref[dd] != 0 && ref[dd] != w->shape[dd]) {
				cg_fail(kb, "kernel writes tensors whose shapes do not broadcast: not supported yet");
				goto out;
			}
			ref[dd] = w->shape[dd];
		}
	}

	/* vector path? */
	bool vector = rank > 0;
	int maxsize = 1;
	for (int i = 0; i < s->nops && vector; i++)
		if (!elementwise_family(ir_ops[s->ops[i].kind].family))
			vector = false;
	for (int i = 0; i < u.ntensors && vector; i++) {
		if (!u.read[i] && !u.written[i])
			continue;
		const RelTensor *t = kb->tinfo[i];
		if (!same_shape(t->rank, t->shape, rank, ref))
			vector = false;
		if (ir_dtype_size((DType)t->dtype) > maxsize)
			maxsize = ir_dtype_size((DType)t->dtype);
	}
	kb->vec = vector ? CG_VEC_BYTES / maxsize : 1;

	/* row mode: a reduction whose result is broadcast back over its axis (softmax,
	 * layer norm) is computed once per row, then the row's elements are written */
	int row_axis = -1;
	for (int i = 0; i < s->nops && !vector; i++) {
		const RelOp *op = &s->ops[i];
		if (ir_ops[op->kind].family != FAM_REDUCE)
			continue;
		int ax = op->attr.axis;
		if (op->t[0].rank != rank || ax >= rank || ref[ax] == 0)
			continue;
		row_axis = row_axis == -1 || row_axis == ax ? ax : -2;
	}

	/* parameters */
	int np = 0;
	for (int i = 0; i < u.ntensors; i++)
		np += u.read[i] || u.written[i];
	for (int i = 0; i < u.maxplace; i++)
		np += u.placeused[i];
	for (int i = 0; i < u.maxdim; i++)
		np += u.dimused[i];
	k = ARENA_NEW(m->arena, CgKernel, 1);
	k->params = ARENA_NEW(m->arena, CgParam, np + 1);
	for (int i = 0; i < u.ntensors; i++)
		if (u.read[i] || u.written[i])
			k->params[k->nparams++] = (CgParam){CG_PARAM_BUFFER, i,
				(DType)kb->tinfo[i]->dtype, u.read[i], u.written[i]};
	for (int i = 0; i < u.maxplace; i++)
		if (u.placeused[i])
			k->params[k->nparams++] = (CgParam){CG_PARAM_SCALAR, i, DT_F64, false, false};
	for (int i = 0; i < u.maxdim; i++)
		if (u.dimused[i])
			k->params[k->nparams++] = (CgParam){CG_PARAM_DIM, i, DT_I64, false, false};
	char name[96];
	kernel_name(m, s, hash, name, sizeof name);
	k->name = arena_strdup(m->arena, name);
	k->kind = s->kind;
	k->vectorized = vector;
	k->variant = s->variant;
	k->launch.vec = kb->vec;
	k->launch.block = CG_BLOCK;
	k->launch.max_grid = CG_MAX_GRID;
	for (int dd = 0; dd < rank; dd++)
		if (ref[dd] != 0 && dd != row_axis)
			k->launch.work[k->launch.nwork++] = ref[dd];

	kb->buf = xcalloc((size_t)u.ntensors + 1, sizeof *kb->buf);
	kb->vload = xcalloc((size_t)u.ntensors + 1, sizeof *kb->vload);
	kb->nplace = u.maxplace;
	kb->scalar = xcalloc((size_t)u.maxplace + 1, sizeof *kb->scalar);
	kb->ndims = u.maxdim;
	kb->dim = xcalloc((size_t)u.maxdim + 1, sizeof *kb->dim);
	make_function(kb, name, k->params, k->nparams);
	kb->math = (CgMath){m->ctx, m->mod, kb->b, m->opt.target == CG_TARGET_NVPTX,
			    m->opt.libdevice != NULL && m->opt.target == CG_TARGET_NVPTX};

	LLVMValueRef n = cg_i64(kb, 1);
	for (int dd = 0; dd < rank; dd++)
		n = LLVMBuildMul(kb->b, n, cg_dim(kb, ref[dd]), "");
	LLVMValueRef tail = kb->thread;
	if (vector) {
		LLVMValueRef mis = NULL;
		for (int i = 0; i < u.ntensors; i++) {
			if (!kb->buf[i])
				continue;
			LLVMValueRef a = LLVMBuildPtrToInt(kb->b, kb->buf[i], m->t_i64, "");
			mis = mis ? LLVMBuildOr(kb->b, mis, a, "") : a;
		}
		mis = LLVMBuildAnd(kb->b, mis, cg_i64(kb, CG_VEC_BYTES - 1), "");
		LLVMValueRef aligned = LLVMBuildICmp(kb->b, LLVMIntEQ, mis, cg_i64(kb, 0), "");
		LLVMValueRef nvec = LLVMBuildUDiv(kb->b, n, cg_i64(kb, kb->vec), "");
		nvec = LLVMBuildSelect(kb->b, aligned, nvec, cg_i64(kb, 0), "nvec");
		CgLoop l;
		cg_loop_begin(kb, &l, kb->thread, nvec, kb->nthreads);
		kb->vbase = LLVMBuildMul(kb->b, l.i, cg_i64(kb, kb->vec), "");
		vector_body(kb, rank, ref, wr, nw);
		cg_loop_end(kb, &l);
		tail = LLVMBuildAdd(kb->b, LLVMBuildMul(kb->b, nvec, cg_i64(kb, kb->vec), ""),
				    kb->thread, "");
	}
	if (s->variant > 0) {
		cg_matmul_launch(s->variant, &s->ops[0], &k->launch);
		cg_matmul_tiled(kb, s->variant, wr, nw);
	} else if (row_axis >= 0)
		row_loops(kb, rank, ref, row_axis, wr, nw);
	else {
		CgLoop l;
		cg_loop_begin(kb, &l, tail, n, kb->nthreads);
		kb->nmemo = 0;
		CgIdx x = cg_idx_of(rank, ref);
		x.flat = l.i;
		store_all(kb, &x, wr, nw);
		cg_loop_end(kb, &l);
	}
	LLVMBuildRetVoid(kb->b);

	if (!kb->failed && cg_module_check_diag(m, d, "building a kernel"))
		kb->failed = true;
out:
	if (kb->failed) {
		if (kb->fn)
			LLVMDeleteFunction(kb->fn);
		k = NULL;
	}
	if (u.read)
		usage_free(&u);
	free(wr);
	kb_free(kb);
	return k;
}
