/* toolbox.c: the LLVM toolbox every kernel family builds with.
 *
 * Diagnostics and constants; compute and storage types; widening loads and rounding
 * stores; dtype conversions; placeholders; index math (flat and per-dim positions,
 * broadcasting); the memo of values already computed; and counted loops with
 * loop-carried values. Nothing here knows an op: the evaluator (eval.c) and the
 * kernel families (kernel_*.c) say what to compute, this file says how to spell it
 * in LLVM.
 *
 * Values travel in compute types: f16, bf16 and f32 as float, f64 as double, ints in
 * their width, bool as i1. Loads widen, stores round (bf16 by integer round to nearest
 * even, so no target needs bf16 instructions). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_impl.h"

/* ---- diagnostics, constants, intrinsics ------------------------------------- */

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

/* Whether the target rounds f32 to bf16 in one instruction (cvt.rn.bf16.f32: NVPTX,
 * sm_80 and later). */
static bool narrow_in_one(const CgModule *m)
{
	const char *arch = m->opt.arch;
	return m->opt.target == CG_TARGET_NVPTX && arch && !strncmp(arch, "sm_", 3) &&
	       atoi(arch + 3) >= 80;
}

/* storage value -> compute value */
LLVMValueRef cg_widen(CgKb *kb, LLVMValueRef v, DType t)
{
	CgModule *m = kb->m;
	switch (t) {
	case DT_F16:
		return LLVMBuildFPExt(kb->b, v, m->t_f32, "");
	case DT_BF16: {
		/* sm_80 and later: as an fpext of bfloat (cvt.f32.bf16 on sm_90), which
		 * lets LLVM see that narrowing it again is the value it came from: a bf16
		 * result stored as bf16 (widened after its rounding, narrowed at the store)
		 * is no longer unpacked and rounded twice. The same bits as the shift. */
		if (narrow_in_one(m)) {
			LLVMTypeRef bf = LLVMBFloatTypeInContext(m->ctx);
			return LLVMBuildFPExt(kb->b, LLVMBuildBitCast(kb->b, v, bf, ""), m->t_f32, "");
		}
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
LLVMValueRef cg_narrow(CgKb *kb, LLVMValueRef v, DType t)
{
	CgModule *m = kb->m;
	LLVMBuilderRef b = kb->b;
	switch (t) {
	case DT_F16:
		return LLVMBuildFPTrunc(b, v, m->t_f16, "");
	case DT_BF16: {
		/* sm_80 and later round in one instruction (cvt.rn.bf16.f32): the same
		 * value, a NaN's payload aside (a NaN either way); the bit sequence
		 * below is ten, and bf16 epilogues of matmuls were made of them */
		if (narrow_in_one(m)) {
			LLVMValueRef h = LLVMBuildFPTrunc(b, v, LLVMBFloatTypeInContext(m->ctx), "");
			return LLVMBuildBitCast(b, h, m->t_i16, "");
		}
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
	return cg_widen(kb, v, t);
}

void cg_store(CgKb *kb, int tensor, LLVMValueRef offset, LLVMValueRef v)
{
	DType t = (DType)kb->tinfo[tensor]->dtype;
	LLVMTypeRef st = cg_stype(kb->m, t);
	LLVMValueRef p = LLVMBuildGEP2(kb->b, st, kb->buf[tensor], &offset, 1, "");
	LLVMValueRef s = LLVMBuildStore(kb->b, cg_narrow(kb, v, t), p);
	LLVMSetAlignment(s, (unsigned)ir_dtype_size(t));
}

/* Round a float compute value to the precision of f16 / bf16. */
LLVMValueRef cg_round_to(CgKb *kb, LLVMValueRef v, DType t)
{
	if (t != DT_F16 && t != DT_BF16)
		return v;
	return cg_widen(kb, cg_narrow(kb, v, t), t);
}

static LLVMValueRef float_to_int(CgKb *kb, LLVMValueRef v, DType to)
{
	LLVMTypeRef types[2] = {cg_ctype(kb->m, to), LLVMTypeOf(v)};
	return cg_intrinsic(kb, cg_dtype_unsigned(to) ? "llvm.fptoui.sat" : "llvm.fptosi.sat", types,
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
		if (ir_dtype_is_float(from))
			return LLVMBuildFCmp(b, LLVMRealUNE, v, LLVMConstReal(LLVMTypeOf(v), 0), "");
		return LLVMBuildICmp(b, LLVMIntNE, v, LLVMConstInt(LLVMTypeOf(v), 0, 0), "");
	}
	if (ir_dtype_is_float(to)) {
		LLVMValueRef r;
		if (ir_dtype_is_float(from)) {
			LLVMTypeRef ft = LLVMTypeOf(v);
			if (ft == ct)
				r = v;
			else if (ct == m->t_f64)
				r = LLVMBuildFPExt(b, v, ct, "");
			else
				r = LLVMBuildFPTrunc(b, v, ct, "");
		} else if (cg_dtype_unsigned(from)) {
			r = LLVMBuildUIToFP(b, v, ct, "");
		} else {
			r = LLVMBuildSIToFP(b, v, ct, "");
		}
		return cg_round_to(kb, r, to);
	}
	if (ir_dtype_is_float(from))
		return float_to_int(kb, v, to);
	unsigned wf = LLVMGetIntTypeWidth(LLVMTypeOf(v)), wt = LLVMGetIntTypeWidth(ct);
	if (wf == wt)
		return v;
	if (wf > wt)
		return LLVMBuildTrunc(b, v, ct, "");
	return cg_dtype_unsigned(from) ? LLVMBuildZExt(b, v, ct, "") : LLVMBuildSExt(b, v, ct, "");
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

LLVMValueRef cg_zero(CgKb *kb, DType t)
{
	LLVMTypeRef ty = cg_ctype(kb->m, t);
	return ir_dtype_is_float(t) ? LLVMConstReal(ty, 0) : LLVMConstInt(ty, 0, 0);
}

LLVMValueRef cg_one(CgKb *kb, DType t)
{
	LLVMTypeRef ty = cg_ctype(kb->m, t);
	return ir_dtype_is_float(t) ? LLVMConstReal(ty, 1) : LLVMConstInt(ty, 1, 0);
}

/* The most negative (max = true) or most positive value of t. */
LLVMValueRef cg_extreme(CgKb *kb, DType t, bool lowest)
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

LLVMValueRef cg_offset(CgKb *kb, CgIdx *x)
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

/* Channel-last: the dims (N, C, H, W) are laid out in memory as N, H, W, C. */
LLVMValueRef cg_offset_of(CgKb *kb, int t, CgIdx *x)
{
	if (t != kb->nhwc || x->rank != 4)
		return cg_offset(kb, x);
	cg_idx_dims(kb, x);
	static const int order[4] = {0, 2, 3, 1};
	LLVMValueRef f = cg_i64(kb, 0);
	for (int k = 0; k < 4; k++) {
		int d = order[k];
		f = LLVMBuildMul(kb->b, f, cg_dim(kb, x->shape[d]), "");
		f = LLVMBuildAdd(kb->b, f, x->i[d], "");
	}
	return f;
}

bool cg_same_shape(int ra, const uint32_t *a, int rb, const uint32_t *b)
{
	return ra == rb && !memcmp(a, b, sizeof *a * (size_t)ra);
}

/* The index of operand `in` of an elementwise op whose output index is out. */
CgIdx cg_idx_broadcast(CgKb *kb, CgIdx *out, const RelTensor *in)
{
	CgIdx x = *out;
	x.shape = in->shape;
	if (cg_same_shape(out->rank, out->shape, in->rank, in->shape))
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

/* An index into `t` holding the given per-dim positions. */
CgIdx cg_idx_at(const RelTensor *t, LLVMValueRef *pos)
{
	CgIdx x = cg_idx_of(t->rank, t->shape);
	x.has_dims = true;
	for (int d = 0; d < t->rank; d++)
		x.i[d] = pos[d];
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

LLVMValueRef cg_memo_find(CgKb *kb, int t, const CgIdx *x)
{
	for (int k = kb->nmemo - 1; k >= 0; k--)
		if (kb->memo[k].tensor == t && idx_same(&kb->memo[k].idx, x))
			return kb->memo[k].v;
	return NULL;
}

void cg_memo_add(CgKb *kb, int t, const CgIdx *x, LLVMValueRef v)
{
	if (kb->nmemo == kb->capmemo) {
		kb->capmemo = kb->capmemo ? 2 * kb->capmemo : 64;
		kb->memo = xrealloc(kb->memo, sizeof *kb->memo * (size_t)kb->capmemo);
	}
	kb->memo[kb->nmemo++] = (CgMemo){t, *x, v};
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
