/* coop.c: the cooperative-kernel builder (coop.h): one algorithm lowered for NVPTX
 * (threads at once, barriers, shuffles, addrspace(3)) and for the host (blocks in
 * turn, each phase a loop over the block's threads). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_impl.h"

static LLVMValueRef sreg(CgKb *kb, const char *name)
{
	LLVMValueRef v = cg_intrinsic(kb, name, NULL, 0, NULL, 0);
	return LLVMBuildZExt(kb->b, v, kb->m->t_i64, "");
}

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

static LLVMTypeRef param_type(CgModule *m, const CgParam *p)
{
	return p->kind == CG_PARAM_SCALAR ? m->t_f64 : p->kind == CG_PARAM_DIM ? m->t_i64 : m->t_ptr;
}

/* Split linear t into (x, y, z) over dims n[0], n[1]. */
static void split3(CgKb *kb, LLVMValueRef t, LLVMValueRef *n, LLVMValueRef *out)
{
	LLVMBuilderRef b = kb->b;
	out[0] = LLVMBuildURem(b, t, n[0], "");
	LLVMValueRef r = LLVMBuildUDiv(b, t, n[0], "");
	out[1] = LLVMBuildURem(b, r, n[1], "");
	out[2] = LLVMBuildUDiv(b, r, n[1], "");
}

void cg_coop_function(CgKb *kb, const char *name, const CgParam *ps, int np,
		      int max_threads, CgCoop *c)
{
	CgModule *m = kb->m;
	LLVMBuilderRef b = kb->b;
	memset(c, 0, sizeof *c);
	c->kb = kb;
	c->gpu = m->opt.target == CG_TARGET_NVPTX;
	LLVMTypeRef *types = xmalloc(sizeof *types * ((size_t)np + 1));
	for (int i = 0; i < np; i++)
		types[i] = param_type(m, &ps[i]);
	LLVMTypeRef host[3] = {m->t_ptr, m->t_i64, m->t_i64};
	LLVMTypeRef ft = c->gpu ? LLVMFunctionType(m->t_void, types, (unsigned)np, 0)
				: LLVMFunctionType(m->t_void, host, 3, 0);
	kb->fn = LLVMAddFunction(m->mod, name, ft);
	if (c->gpu) {
		LLVMSetFunctionCallConv(kb->fn, LLVMPTXKernelCallConv);
		annotate(m, kb->fn, "maxntidx", max_threads);
	}
	c->allocas = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "entry");
	LLVMPositionBuilderAtEnd(b, c->allocas);
	LLVMValueRef *vals = xmalloc(sizeof *vals * ((size_t)np + 1));
	for (int i = 0; i < np; i++) {
		if (c->gpu) {
			vals[i] = LLVMGetParam(kb->fn, (unsigned)i);
			continue;
		}
		LLVMValueRef k = cg_i64(kb, i);
		LLVMValueRef slot = LLVMBuildGEP2(b, m->t_ptr, LLVMGetParam(kb->fn, 0), &k, 1, "");
		LLVMValueRef at = LLVMBuildLoad2(b, m->t_ptr, slot, "");
		vals[i] = LLVMBuildLoad2(b, types[i], at, "");
	}
	for (int i = 0; i < np; i++) {
		const CgParam *p = &ps[i];
		char nm[32];
		snprintf(nm, sizeof nm, "%s%d", p->kind == CG_PARAM_BUFFER ? "t" :
			 p->kind == CG_PARAM_SCALAR ? "s" : p->kind == CG_PARAM_DIM ? "d" : "scratch",
			 p->id);
		LLVMSetValueName2(vals[i], nm, strlen(nm));
		if (p->kind == CG_PARAM_BUFFER)
			kb->buf[p->id] = vals[i];
		else if (p->kind == CG_PARAM_SCALAR)
			kb->scalar[p->id] = vals[i];
		else if (p->kind == CG_PARAM_DIM)
			kb->dim[p->id] = vals[i];
		else if (p->id >= 0 && p->id < 4)
			c->scratch[p->id] = vals[i];
		else
			die("scratch parameter %d out of range", p->id);
	}
	static const char *const axes = "xyz";
	if (c->gpu) {
		for (int d = 0; d < 3; d++) {
			char nm[48];
			snprintf(nm, sizeof nm, "llvm.nvvm.read.ptx.sreg.ntid.%c", axes[d]);
			c->ntid[d] = sreg(kb, nm);
			snprintf(nm, sizeof nm, "llvm.nvvm.read.ptx.sreg.nctaid.%c", axes[d]);
			c->nctaid[d] = sreg(kb, nm);
			snprintf(nm, sizeof nm, "llvm.nvvm.read.ptx.sreg.ctaid.%c", axes[d]);
			c->ctaid[d] = sreg(kb, nm);
			snprintf(nm, sizeof nm, "llvm.nvvm.read.ptx.sreg.tid.%c", axes[d]);
			c->gpu_tidx[d] = sreg(kb, nm);
		}
	} else {
		/* args[np] points to grid x y z, block x y z, dynamic shared bytes */
		LLVMValueRef k = cg_i64(kb, np);
		LLVMValueRef slot = LLVMBuildGEP2(b, m->t_ptr, LLVMGetParam(kb->fn, 0), &k, 1, "");
		LLVMValueRef geom = LLVMBuildLoad2(b, m->t_ptr, slot, "geom");
		LLVMValueRef g[7];
		for (int i = 0; i < 7; i++) {
			LLVMValueRef ki = cg_i64(kb, i);
			g[i] = LLVMBuildLoad2(b, m->t_i64, LLVMBuildGEP2(b, m->t_i64, geom, &ki, 1, ""), "");
		}
		for (int d = 0; d < 3; d++) {
			c->nctaid[d] = g[d];
			c->ntid[d] = g[3 + d];
		}
		c->dyn_shared = LLVMBuildArrayAlloca(b, m->t_i8, g[6], "dynshared");
		LLVMSetAlignment(c->dyn_shared, 16);
		c->dyn_bytes = g[6];
	}
	c->nthreads = LLVMBuildMul(b, LLVMBuildMul(b, c->ntid[0], c->ntid[1], ""), c->ntid[2],
				   "nthreads");
	c->nblocks = LLVMBuildMul(b, LLVMBuildMul(b, c->nctaid[0], c->nctaid[1], ""),
				  c->nctaid[2], "nblocks");
	free(types);
	free(vals);

	/* the body starts in a block of its own: allocas keep going to the entry block */
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "body");
	LLVMPositionBuilderAtEnd(b, body);
	if (c->gpu) {
		c->block = LLVMBuildAdd(b, c->ctaid[0], LLVMBuildMul(b, c->nctaid[0],
			LLVMBuildAdd(b, c->ctaid[1], LLVMBuildMul(b, c->nctaid[1], c->ctaid[2], ""), ""),
			""), "block");
		c->gpu_tid = LLVMBuildAdd(b, c->gpu_tidx[0], LLVMBuildMul(b, c->ntid[0],
			LLVMBuildAdd(b, c->gpu_tidx[1], LLVMBuildMul(b, c->ntid[1], c->gpu_tidx[2], ""), ""),
			""), "tid");
		return;
	}
	/* host: blocks b = thread, thread + nthreads, ... of the grid */
	LLVMBasicBlockRef pre = LLVMGetInsertBlock(b);
	c->host_blk_header = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "blocks");
	LLVMBasicBlockRef blk = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "block");
	c->host_blk_exit = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "blocks.done");
	LLVMBuildBr(b, c->host_blk_header);
	LLVMPositionBuilderAtEnd(b, c->host_blk_header);
	c->host_blk_i = LLVMBuildPhi(b, m->t_i64, "blk");
	LLVMValueRef first = LLVMGetParam(kb->fn, 1);
	LLVMAddIncoming(c->host_blk_i, &first, &pre, 1);
	c->host_blk_step = LLVMGetParam(kb->fn, 2);
	LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, c->host_blk_i, c->nblocks, ""), blk,
			c->host_blk_exit);
	LLVMPositionBuilderAtEnd(b, blk);
	c->block = c->host_blk_i;
	split3(kb, c->block, c->nctaid, c->ctaid);
}

void cg_coop_annotate(CgCoop *c, const char *key, int value)
{
	if (c->gpu)
		annotate(c->kb->m, c->kb->fn, key, value);
}

void cg_coop_finish(CgCoop *c)
{
	CgKb *kb = c->kb;
	LLVMBuilderRef b = kb->b;
	if (c->in_phase)
		die("cg_coop_finish inside a phase");
	if (!c->gpu) {
		LLVMValueRef next = LLVMBuildAdd(b, c->host_blk_i, c->host_blk_step, "");
		LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
		LLVMBuildBr(b, c->host_blk_header);
		LLVMAddIncoming(c->host_blk_i, &next, &latch, 1);
		LLVMPositionBuilderAtEnd(b, c->host_blk_exit);
	}
	LLVMBuildRetVoid(b);
	/* the entry block falls through to the body */
	LLVMPositionBuilderAtEnd(b, c->allocas);
	LLVMBuildBr(b, LLVMGetNextBasicBlock(c->allocas));
}

/* Emit an alloca in the entry block, whatever block the builder is in. */
static LLVMValueRef entry_alloca(CgCoop *c, LLVMTypeRef t, LLVMValueRef count, const char *nm)
{
	LLVMBuilderRef b = c->kb->b;
	LLVMBasicBlockRef here = LLVMGetInsertBlock(b);
	LLVMPositionBuilderAtEnd(b, c->allocas);
	LLVMValueRef a = count ? LLVMBuildArrayAlloca(b, t, count, nm) : LLVMBuildAlloca(b, t, nm);
	LLVMSetAlignment(a, 16);
	LLVMPositionBuilderAtEnd(b, here);
	return a;
}

CgVar cg_coop_var(CgCoop *c, LLVMTypeRef type)
{
	CgVar v = {type, entry_alloca(c, type, c->gpu ? NULL : c->nthreads, "priv")};
	return v;
}

static LLVMValueRef var_ptr(CgCoop *c, CgVar v, LLVMValueRef tid)
{
	if (!c->in_phase)
		die("thread-private variable used outside a phase");
	if (c->gpu)
		return v.slot;
	return LLVMBuildGEP2(c->kb->b, v.type, v.slot, &tid, 1, "");
}

LLVMValueRef cg_coop_get(CgCoop *c, CgVar v)
{
	return LLVMBuildLoad2(c->kb->b, v.type, var_ptr(c, v, c->tid), "");
}

void cg_coop_set(CgCoop *c, CgVar v, LLVMValueRef value)
{
	LLVMBuildStore(c->kb->b, value, var_ptr(c, v, c->tid));
}

void cg_coop_phase_begin(CgCoop *c)
{
	CgKb *kb = c->kb;
	LLVMBuilderRef b = kb->b;
	if (c->in_phase)
		die("nested phase");
	c->in_phase = true;
	c->phase_mark = cg_memo_mark(kb);
	if (c->gpu) {
		c->tid = c->gpu_tid;
		memcpy(c->tidx, c->gpu_tidx, sizeof c->tidx);
	} else {
		LLVMContextRef ctx = kb->m->ctx;
		LLVMBasicBlockRef pre = LLVMGetInsertBlock(b);
		c->phase.header = LLVMAppendBasicBlockInContext(ctx, kb->fn, "phase");
		LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(ctx, kb->fn, "thread");
		c->phase.exit = LLVMAppendBasicBlockInContext(ctx, kb->fn, "phase.done");
		LLVMBuildBr(b, c->phase.header);
		LLVMPositionBuilderAtEnd(b, c->phase.header);
		c->phase.i = LLVMBuildPhi(b, kb->m->t_i64, "tid");
		LLVMValueRef zero = cg_i64(kb, 0);
		LLVMAddIncoming(c->phase.i, &zero, &pre, 1);
		LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, c->phase.i, c->nthreads, ""), body,
				c->phase.exit);
		LLVMPositionBuilderAtEnd(b, body);
		c->tid = c->phase.i;
		split3(kb, c->tid, c->ntid, c->tidx);
	}
	c->lane = LLVMBuildAnd(b, c->tid, cg_i64(kb, 31), "lane");
	c->warp = LLVMBuildLShr(b, c->tid, cg_i64(kb, 5), "warp");
}

void cg_coop_phase_end(CgCoop *c)
{
	CgKb *kb = c->kb;
	LLVMBuilderRef b = kb->b;
	if (!c->in_phase)
		die("phase end without a phase");
	if (!c->gpu) {
		LLVMValueRef next = LLVMBuildAdd(b, c->phase.i, cg_i64(kb, 1), "");
		LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
		LLVMBuildBr(b, c->phase.header);
		LLVMAddIncoming(c->phase.i, &next, &latch, 1);
		LLVMPositionBuilderAtEnd(b, c->phase.exit);
	}
	cg_memo_release(kb, c->phase_mark);
	c->in_phase = false;
	c->tid = c->lane = c->warp = NULL;
	memset(c->tidx, 0, sizeof c->tidx);
}

void cg_coop_barrier(CgCoop *c)
{
	if (c->in_phase)
		die("barrier inside a phase");
	if (c->gpu)
		cg_intrinsic(c->kb, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
}

LLVMValueRef cg_coop_shared(CgCoop *c, LLVMTypeRef type, int count)
{
	CgKb *kb = c->kb;
	LLVMTypeRef at = LLVMArrayType2(type, (uint64_t)count);
	if (!c->gpu)
		return entry_alloca(c, at, NULL, "shared");
	char nm[160];
	size_t len = 0;
	const char *fn = LLVMGetValueName2(kb->fn, &len);
	snprintf(nm, sizeof nm, "%.*s_shared%d", (int)len, fn, c->nshared++);
	LLVMValueRef g = LLVMAddGlobalInAddressSpace(kb->m->mod, at, nm, 3);
	LLVMSetLinkage(g, LLVMInternalLinkage);
	LLVMSetInitializer(g, LLVMGetUndef(at));
	LLVMSetAlignment(g, 16);
	return g;
}

LLVMValueRef cg_coop_dynamic_shared(CgCoop *c)
{
	if (!c->gpu)
		return c->dyn_shared;
	CgModule *m = c->kb->m;
	const char *nm = "fusec_dynamic_shared";
	LLVMValueRef g = LLVMGetNamedGlobal(m->mod, nm);
	if (!g) {
		g = LLVMAddGlobalInAddressSpace(m->mod, LLVMArrayType2(m->t_i8, 0), nm, 3);
		LLVMSetLinkage(g, LLVMExternalLinkage);
		LLVMSetAlignment(g, 16);
	}
	return g;
}

LLVMValueRef cg_coop_dynamic_bytes(CgCoop *c)
{
	if (!c->gpu)
		return c->dyn_bytes;
	CgModule *m = c->kb->m;
	LLVMTypeRef ft = LLVMFunctionType(m->t_i32, NULL, 0, 0);
	const char *text = "mov.u32 $0, %dynamic_smem_size;", *cons = "=r";
	LLVMValueRef fn = LLVMGetInlineAsm(ft, text, strlen(text), cons, strlen(cons), 0, 0,
					   LLVMInlineAsmDialectATT, 0);
	LLVMValueRef r = LLVMBuildCall2(c->kb->b, ft, fn, NULL, 0, "dynbytes");
	return LLVMBuildZExt(c->kb->b, r, m->t_i64, "");
}

/* GPU: v of the lane tid ^ mask, by 32-bit shuffles. */
static LLVMValueRef shfl_value(CgCoop *c, LLVMValueRef v, LLVMValueRef mask)
{
	CgKb *kb = c->kb;
	CgModule *m = kb->m;
	LLVMBuilderRef b = kb->b;
	LLVMTypeRef t = LLVMTypeOf(v);
	LLVMValueRef full = LLVMConstInt(m->t_i32, 0xffffffffu, 0);
	LLVMValueRef clamp = LLVMConstInt(m->t_i32, 0x1f, 0);
	LLVMValueRef m32 = LLVMBuildTrunc(b, mask, m->t_i32, "");
	unsigned bits = LLVMGetTypeKind(t) == LLVMIntegerTypeKind ? LLVMGetIntTypeWidth(t) :
			t == m->t_f64 ? 64 : t == m->t_f32 ? 32 : 16;
	LLVMTypeRef it = LLVMIntTypeInContext(m->ctx, bits);
	LLVMValueRef x = LLVMTypeOf(v) == it ? v : LLVMBuildBitCast(b, v, it, "");
	LLVMValueRef r;
	if (bits == 64) {
		LLVMValueRef lo = LLVMBuildTrunc(b, x, m->t_i32, "");
		LLVMValueRef hi = LLVMBuildTrunc(b, LLVMBuildLShr(b, x, LLVMConstInt(m->t_i64, 32, 0), ""),
						 m->t_i32, "");
		LLVMValueRef a1[4] = {full, lo, m32, clamp}, a2[4] = {full, hi, m32, clamp};
		lo = cg_intrinsic(kb, "llvm.nvvm.shfl.sync.bfly.i32", NULL, 0, a1, 4);
		hi = cg_intrinsic(kb, "llvm.nvvm.shfl.sync.bfly.i32", NULL, 0, a2, 4);
		r = LLVMBuildOr(b, LLVMBuildZExt(b, lo, m->t_i64, ""),
				LLVMBuildShl(b, LLVMBuildZExt(b, hi, m->t_i64, ""),
					     LLVMConstInt(m->t_i64, 32, 0), ""), "");
	} else {
		LLVMValueRef w = bits == 32 ? x : LLVMBuildZExt(b, x, m->t_i32, "");
		LLVMValueRef a[4] = {full, w, m32, clamp};
		r = cg_intrinsic(kb, "llvm.nvvm.shfl.sync.bfly.i32", NULL, 0, a, 4);
		if (bits != 32)
			r = LLVMBuildTrunc(b, r, it, "");
	}
	return LLVMTypeOf(v) == it ? r : LLVMBuildBitCast(b, r, t, "");
}

void cg_coop_shfl_xor(CgCoop *c, CgVar dst, CgVar src, LLVMValueRef mask)
{
	if (dst.slot == src.slot)
		die("shuffle into its own source");
	cg_coop_phase_begin(c);
	LLVMValueRef v;
	if (c->gpu) {
		v = shfl_value(c, cg_coop_get(c, src), mask);
	} else {
		LLVMValueRef from = LLVMBuildXor(c->kb->b, c->tid, mask, "");
		v = LLVMBuildLoad2(c->kb->b, src.type, var_ptr(c, src, from), "");
	}
	cg_coop_set(c, dst, v);
	cg_coop_phase_end(c);
}

void cg_coop_group_reduce(CgCoop *c, CgVar *v, int n, LLVMValueRef group,
			  CgCombine combine, void *ctx)
{
	CgKb *kb = c->kb;
	LLVMBuilderRef b = kb->b;
	LLVMContextRef cx = kb->m->ctx;
	if (n < 1 || n > 4)
		die("group reduce of %d values", n);
	CgVar tmp[4];
	for (int k = 0; k < n; k++)
		tmp[k] = cg_coop_var(c, v[k].type);

	/* butterfly over the lanes: for (mask = 1; mask < min(group, 32); mask *= 2) */
	LLVMValueRef g32 = cg_i64(kb, 32);
	LLVMValueRef wide = LLVMBuildICmp(b, LLVMIntUGT, group, g32, "");
	LLVMValueRef lanes = LLVMBuildSelect(b, wide, g32, group, "");
	LLVMBasicBlockRef pre = LLVMGetInsertBlock(b);
	LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(cx, kb->fn, "bfly");
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(cx, kb->fn, "bfly.body");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cx, kb->fn, "bfly.done");
	LLVMBuildBr(b, head);
	LLVMPositionBuilderAtEnd(b, head);
	LLVMValueRef mask = LLVMBuildPhi(b, kb->m->t_i64, "mask");
	LLVMValueRef one = cg_i64(kb, 1);
	LLVMAddIncoming(mask, &one, &pre, 1);
	LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, mask, lanes, ""), body, done);
	LLVMPositionBuilderAtEnd(b, body);
	for (int k = 0; k < n; k++)
		cg_coop_shfl_xor(c, tmp[k], v[k], mask);
	cg_coop_phase_begin(c);
	LLVMValueRef acc[4], other[4];
	for (int k = 0; k < n; k++) {
		acc[k] = cg_coop_get(c, v[k]);
		other[k] = cg_coop_get(c, tmp[k]);
	}
	combine(c, acc, other, ctx);
	for (int k = 0; k < n; k++)
		cg_coop_set(c, v[k], acc[k]);
	cg_coop_phase_end(c);
	LLVMValueRef next = LLVMBuildShl(b, mask, one, "");
	LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
	LLVMBuildBr(b, head);
	LLVMAddIncoming(mask, &next, &latch, 1);
	LLVMPositionBuilderAtEnd(b, done);

	/* groups wider than a warp: one value per warp through shared memory */
	LLVMBasicBlockRef across = LLVMAppendBasicBlockInContext(cx, kb->fn, "warps");
	LLVMBasicBlockRef end = LLVMAppendBasicBlockInContext(cx, kb->fn, "warps.done");
	LLVMBuildCondBr(b, wide, across, end);
	LLVMPositionBuilderAtEnd(b, across);
	LLVMValueRef sh[4];
	for (int k = 0; k < n; k++)
		sh[k] = cg_coop_shared(c, v[k].type, 32);
	cg_coop_phase_begin(c);
	LLVMBasicBlockRef put = LLVMAppendBasicBlockInContext(cx, kb->fn, "warps.put");
	LLVMBasicBlockRef put_done = LLVMAppendBasicBlockInContext(cx, kb->fn, "warps.put.done");
	LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, c->lane, cg_i64(kb, 0), ""), put, put_done);
	LLVMPositionBuilderAtEnd(b, put);
	for (int k = 0; k < n; k++) {
		LLVMValueRef idx[2] = {cg_i64(kb, 0), c->warp};
		LLVMValueRef p = LLVMBuildGEP2(b, LLVMArrayType2(v[k].type, 32), sh[k], idx, 2, "");
		LLVMBuildStore(b, cg_coop_get(c, v[k]), p);
	}
	LLVMBuildBr(b, put_done);
	LLVMPositionBuilderAtEnd(b, put_done);
	cg_coop_phase_end(c);
	cg_coop_barrier(c);
	cg_coop_phase_begin(c);
	{
		/* warps first .. first + group/32 - 1, combined in order */
		LLVMValueRef nw = LLVMBuildLShr(b, group, cg_i64(kb, 5), "");
		LLVMValueRef first = LLVMBuildMul(b, LLVMBuildUDiv(b, c->warp, nw, ""), nw, "");
		LLVMValueRef a0[4];
		for (int k = 0; k < n; k++) {
			LLVMValueRef idx[2] = {cg_i64(kb, 0), first};
			LLVMValueRef p = LLVMBuildGEP2(b, LLVMArrayType2(v[k].type, 32), sh[k], idx, 2, "");
			a0[k] = LLVMBuildLoad2(b, v[k].type, p, "");
		}
		CgLoop l;
		cg_loop_begin(kb, &l, cg_i64(kb, 1), nw, cg_i64(kb, 1));
		LLVMValueRef carry[4], o[4];
		for (int k = 0; k < n; k++)
			carry[k] = cg_carry(kb, &l, a0[k]);
		LLVMValueRef w = LLVMBuildAdd(b, first, l.i, "");
		for (int k = 0; k < n; k++) {
			LLVMValueRef idx[2] = {cg_i64(kb, 0), w};
			LLVMValueRef p = LLVMBuildGEP2(b, LLVMArrayType2(v[k].type, 32), sh[k], idx, 2, "");
			o[k] = LLVMBuildLoad2(b, v[k].type, p, "");
		}
		LLVMValueRef acc2[4];
		memcpy(acc2, carry, sizeof acc2);
		combine(c, acc2, o, ctx);
		for (int k = 0; k < n; k++)
			cg_carry_next(kb, &l, carry[k], acc2[k]);
		cg_loop_end(kb, &l);
		for (int k = 0; k < n; k++)
			cg_coop_set(c, v[k], carry[k]);
	}
	cg_coop_phase_end(c);
	cg_coop_barrier(c);   /* the shared slots may be reused next */
	LLVMBuildBr(b, end);
	LLVMPositionBuilderAtEnd(b, end);
}
