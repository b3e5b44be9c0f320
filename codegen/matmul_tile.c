/* matmul_tile.c: the tiled matmul kernel (cg_matmul_tiled) and the builder's helpers
 * the family shares (matmul.h): value numbering and integer helpers, phases and
 * accumulators, the swizzled shared layout, operand layout, stage loads, and the loop
 * over output tiles with its K pipeline. The compute of a stage is in matmul_mma.c
 * (mma.sync, tf32), matmul_wgmma.c (wgmma, sm_90a) and matmul_simt.c (SIMT FMA, and
 * the gemv configuration's own tile loop); the epilogue and the split-K combine in
 * matmul_epilogue.c; the table and the launch rule in matmul_pick.c.
 *
 * Structure, the same on both targets:
 *   - a block of MM_THREADS threads takes BM x BN output tiles in a block-stride
 *     loop over batch x tile rows x tile columns (tile rows grouped by 8 so that a
 *     wave of blocks shares operand tiles in L2);
 *   - K advances BK at a time through STAGES shared-memory stages: the A tile (BM x
 *     BK) and the B tile (BK x BN) are copied row-major in 16-byte chunks, each chunk
 *     at its column chunk XOR a few bits of its row (the swizzle: the 8 rows an
 *     ldmatrix or a column read touches fall in 8 different 16-byte bank groups);
 *     out-of-range rows and columns are filled with zeros, so edges need no other
 *     test until the store. When the leading dimension is a multiple of 16 bytes and
 *     the buffer is 16-byte aligned (checked at run time per operand) a chunk is one
 *     cp.async of 16 bytes (zero-filled past the edge); otherwise it is assembled
 *     element by element;
 *   - each stage is multiplied into the accumulators by tensor cores (mma.sync:
 *     matmul_mma.c; wgmma: matmul_wgmma.c) or by SIMT FMAs (matmul_simt.c);
 *   - the epilogue runs in registers (matmul_epilogue.c).
 *
 * On the host (the `cpu` backend) a block's threads become loops: each stretch
 * between two barriers (a phase) runs as a loop over the thread ids, thread-private
 * accumulators live in an array indexed by thread id, shared memory is a stack
 * array with the same swizzled layout, cp.async is a plain copy, and the mma.sync
 * fragment is replaced by its scalar definition (matmul_mma.c): the thread's
 * accumulator at (row, col) of the warp tile gains sum_k A[row][k] * B[k][col] over
 * the stage, read from the same shared layout. So tile edges, swizzles,
 * fragment-to-element maps, batch broadcasting and epilogues are checked against the
 * interpreter without a GPU; ldmatrix's and mma's register layouts are checked by the
 * numeric check on the GPU (tests/bench/gpu/run_gpu.sh check).
 *
 * Operands may arrive through swap_dims / permute views (the Matmul fuser takes them
 * in front of the matmul): mm_operand_layout turns the view into strides of the
 * tensor it reads; an operand whose rows are contiguous (transposed) is kept
 * transposed in shared memory and read with the other ldmatrix form. Tiny M (M <= 16)
 * takes the gemv configuration (matmul_simt.c); --allow-tf32 the tf32 configurations
 * (matmul_mma.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matmul.h"

enum { MM_GROUP_M = 8 };         /* tile rows per L2 group */

/* ---- value numbering while building ----
 *
 * The tile code computes the same index arithmetic many times over (a shared
 * address per element of every unrolled K step, each from the thread id), and
 * LLVM's InstCombine and GVN spent most of a kernel's optimization time merging it
 * again. The integer helpers below (and matmul.h's wrappers of mm_bin) build an
 * instruction only once per basic block: an operation on the same operands in the
 * same block returns the instruction built before (the builder only ever appends,
 * so that one precedes the use), and the neutral cases (x + 0, x * 1, x ^ 0, x / 1, ...) return their operand. Only pure
 * integer operations are numbered; loads, stores and calls never. */
typedef struct MmCse {
	int op;                   /* LLVMOpcode, or MM_CSE_* below */
	void *a, *b;
	LLVMBasicBlockRef bb;
	LLVMValueRef r;           /* NULL: a free slot */
} MmCse;

enum { MM_CSE_ICMP = 1000, MM_CSE_GEP = 2000 };

static size_t cse_slot(const Mm *x, int op, const void *a, const void *b, LLVMBasicBlockRef bb)
{
	uint64_t h = hash_u64(HASH_SEED, (uint64_t)op);
	h = hash_u64(h, (uint64_t)(uintptr_t)a);
	h = hash_u64(h, (uint64_t)(uintptr_t)b);
	h = hash_u64(h, (uint64_t)(uintptr_t)bb);
	size_t mask = x->capcse - 1, i = (size_t)h & mask;
	while (x->cse[i].r && !(x->cse[i].op == op && x->cse[i].a == a && x->cse[i].b == b &&
				x->cse[i].bb == bb))
		i = (i + 1) & mask;
	return i;
}

/* The value built before for (op, a, b) in the current block, or NULL; *slot: where
 * to record a new one (cse_put). */
static LLVMValueRef cse_get(Mm *x, int op, const void *a, const void *b)
{
	if (2 * (x->ncse + 1) > x->capcse) {
		size_t old = x->capcse;
		MmCse *t = x->cse;
		x->capcse = old ? 2 * old : 1024;
		x->cse = xcalloc(x->capcse, sizeof *x->cse);
		for (size_t i = 0; i < old; i++)
			if (t[i].r)
				x->cse[cse_slot(x, t[i].op, t[i].a, t[i].b, t[i].bb)] = t[i];
		free(t);
	}
	MmCse *e = &x->cse[cse_slot(x, op, a, b, LLVMGetInsertBlock(x->b))];
	return e->r;
}

static LLVMValueRef cse_put(Mm *x, int op, void *a, void *b, LLVMValueRef r)
{
	/* a constant-folded result needs no record */
	if (!LLVMIsAInstruction(r))
		return r;
	LLVMBasicBlockRef bb = LLVMGetInsertBlock(x->b);
	MmCse *e = &x->cse[cse_slot(x, op, a, b, bb)];
	*e = (MmCse){op, a, b, bb, r};
	x->ncse++;
	return r;
}

/* v is the integer constant k */
static bool is_int(LLVMValueRef v, long long k)
{
	return LLVMIsAConstantInt(v) && LLVMConstIntGetSExtValue(v) == k;
}

LLVMValueRef mm_bin(Mm *x, LLVMOpcode op, LLVMValueRef a, LLVMValueRef b)
{
	switch (op) {
	case LLVMAdd: case LLVMOr: case LLVMXor:
		if (is_int(b, 0))
			return a;
		if (is_int(a, 0))
			return b;
		break;
	case LLVMSub:
		if (is_int(b, 0))
			return a;
		break;
	case LLVMMul:
		if (is_int(b, 1))
			return a;
		if (is_int(a, 1))
			return b;
		if (is_int(b, 0))
			return b;
		break;
	case LLVMUDiv:
		if (is_int(b, 1))
			return a;
		break;
	case LLVMURem:
		if (is_int(b, 1))
			return LLVMConstNull(LLVMTypeOf(a));
		break;
	case LLVMAnd:
		if (is_int(b, 0))
			return b;
		break;
	default:
		break;
	}
	LLVMValueRef r = cse_get(x, (int)op, a, b);
	if (r)
		return r;
	return cse_put(x, (int)op, a, b, LLVMBuildBinOp(x->b, op, a, b, ""));
}

static LLVMValueRef cast(Mm *x, LLVMOpcode op, LLVMValueRef a, LLVMTypeRef t)
{
	LLVMValueRef r = cse_get(x, (int)op, a, t);
	if (r)
		return r;
	return cse_put(x, (int)op, a, t, LLVMBuildCast(x->b, op, a, t, ""));
}

LLVMValueRef mm_lt(Mm *x, LLVMValueRef a, LLVMValueRef b)
{
	LLVMValueRef r = cse_get(x, MM_CSE_ICMP + LLVMIntSLT, a, b);
	if (r)
		return r;
	return cse_put(x, MM_CSE_ICMP + LLVMIntSLT, a, b, LLVMBuildICmp(x->b, LLVMIntSLT, a, b, ""));
}

/* a shared-memory offset (x->ot) as i64, or the other way */
LLVMValueRef mm_to64(Mm *x, LLVMValueRef a)
{
	return LLVMTypeOf(a) == x->kb->m->t_i64 ? a : cast(x, LLVMZExt, a, x->kb->m->t_i64);
}

LLVMValueRef mm_to_ot(Mm *x, LLVMValueRef a)
{
	return LLVMTypeOf(a) == x->ot ? a : cast(x, LLVMTrunc, a, x->ot);
}

/* ---- phases, accumulators, shared memory ------------------------------------- */

/* A phase: code between two barriers. On the GPU the calling thread runs it; on the
 * host it is a loop over every thread id of the block. Returns the thread id. */
LLVMValueRef mm_phase_begin(Mm *x)
{
	if (x->gpu)
		return x->tid;
	cg_loop_begin(x->kb, &x->phase, mm_i64c(x, 0), mm_i64c(x, MM_THREADS), mm_i64c(x, 1));
	x->tid = x->phase.i;
	return x->tid;
}

/* GPU: the thread id through an opaque move, so that what the epilogue derives from
 * it is computed where it is used, not hoisted out of the tile loop to occupy
 * registers through the main loop. */
LLVMValueRef mm_opaque_tid(Mm *x, LLVMValueRef tid)
{
	if (!x->gpu)
		return tid;
	CgModule *m = x->kb->m;
	LLVMValueRef t32 = LLVMBuildTrunc(x->b, tid, m->t_i32, "");
	LLVMTypeRef ft = LLVMFunctionType(m->t_i32, &m->t_i32, 1, 0);
	const char *text = "mov.u32 $0, $1;", *cons = "=r,r";
	LLVMValueRef fn = LLVMGetInlineAsm(ft, text, strlen(text), cons, strlen(cons), 1, 0,
					   LLVMInlineAsmDialectATT, 0);
	LLVMValueRef r = LLVMBuildCall2(x->b, ft, fn, &t32, 1, "");
	return LLVMBuildZExt(x->b, r, m->t_i64, "");
}

void mm_phase_end(Mm *x)
{
	if (!x->gpu)
		cg_loop_end(x->kb, &x->phase);
}

/* Pointer to accumulator e (constant or i64) of thread tid. */
static LLVMValueRef acc_ptr(Mm *x, LLVMValueRef e)
{
	LLVMValueRef i = x->gpu ? e : mm_add(x, mm_mul(x, x->tid, mm_i64c(x, x->nacc)), e);
	return LLVMBuildGEP2(x->b, x->kb->m->t_f32, x->acc, &i, 1, "");
}

LLVMValueRef mm_acc_load(Mm *x, LLVMValueRef e)
{
	return LLVMBuildLoad2(x->b, x->kb->m->t_f32, acc_ptr(x, e), "");
}

void mm_acc_store(Mm *x, LLVMValueRef e, LLVMValueRef v)
{
	LLVMBuildStore(x->b, v, acc_ptr(x, e));
}

/* Byte offset in a shared tile with cpr 16-byte chunks per row of (row, chunk):
 * the chunk is XORed with bits of the row so that 8 consecutive rows at one chunk
 * fall in 8 different 16-byte groups of a 128-byte line. */
LLVMValueRef mm_swz(Mm *x, int w, LLVMValueRef row, LLVMValueRef ch)
{
	int cpr = x->cpr[w];
	if (x->panel) {
		/* wgmma's layout: the tile's rows cut into panels of 128 bytes (8
		 * chunks), each panel outer rows x 128 bytes, chunk XOR row % 8 (the
		 * 128-byte swizzle; a row of 128 bytes is one panel, the layout above) */
		row = mm_to_ot(x, row);
		ch = mm_to_ot(x, ch);
		LLVMValueRef phys = mm_bin(x, LLVMXor, mm_bin(x, LLVMAnd, ch, mm_cst(ch, 7)),
					   mm_bin(x, LLVMAnd, row, mm_cst(row, 7)));
		LLVMValueRef pan = mm_mulc(x, mm_udivc(x, ch, 8), (int64_t)x->outer[w] * 128);
		return mm_add(x, mm_add(x, pan, mm_mulc(x, row, 128)), mm_mulc(x, phys, 16));
	}
	int per_line = cpr >= 8 ? 1 : 8 / cpr;   /* rows per 128-byte line */
	int mask = (cpr >= 8 ? 8 : cpr) - 1;
	row = mm_to_ot(x, row);
	ch = mm_to_ot(x, ch);
	LLVMValueRef bits = mm_bin(x, LLVMAnd, mm_udivc(x, row, per_line), mm_cst(row, mask));
	LLVMValueRef phys = mm_bin(x, LLVMXor, ch, bits);
	return mm_add(x, mm_mulc(x, row, (int64_t)cpr * 16), mm_mulc(x, phys, 16));
}

LLVMValueRef mm_chunk_at(Mm *x, int w, LLVMValueRef soff, LLVMValueRef q, LLVMValueRef *row,
			 LLVMValueRef *ch)
{
	*row = mm_udivc(x, q, x->cpr[w]);
	*ch = mm_uremc(x, q, x->cpr[w]);
	return mm_add(x, soff, mm_swz(x, w, *row, *ch));
}

LLVMValueRef mm_smem_at(Mm *x, LLVMValueRef byte)
{
	LLVMValueRef r = cse_get(x, MM_CSE_GEP, x->smem, byte);
	if (r)
		return r;
	return cse_put(x, MM_CSE_GEP, x->smem, byte,
		       LLVMBuildGEP2(x->b, x->kb->m->t_i8, x->smem, &byte, 1, ""));
}

/* Inline PTX (GPU): sideeffect keeps it in order with barriers and cp.async waits. */
LLVMValueRef mm_asm_call(Mm *x, LLVMTypeRef ret, const char *text, const char *cons,
			 LLVMValueRef *args, int nargs)
{
	LLVMTypeRef at[8];
	for (int i = 0; i < nargs; i++)
		at[i] = LLVMTypeOf(args[i]);
	LLVMTypeRef ft = LLVMFunctionType(ret, at, (unsigned)nargs, 0);
	LLVMValueRef fn = LLVMGetInlineAsm(ft, text, strlen(text), cons, strlen(cons), 1, 0,
					   LLVMInlineAsmDialectATT, 0);
	return LLVMBuildCall2(x->b, ft, fn, args, (unsigned)nargs, "");
}

/* ---- stage loads and operands ------------------------------------------------ */

/* Copy the tile of operand w for K step kt into stage s (one phase). A: rows m0.., cols
 * kt*BK..; B: rows kt*BK.., cols n0... Out-of-range elements are zeros. */
void mm_load_tile(Mm *x, int w, LLVMValueRef s, LLVMValueRef kt)
{
	CgKb *kb = x->kb;
	CgModule *m = kb->m;
	const MmConfig *c = x->c;
	bool tr = x->trans[w];
	int rows = w ? c->bk : c->bm, cols = w ? c->bn : c->bk;
	int cpr = x->cpr[w];
	/* chunks a thread copies; a tile of fewer chunks than threads (the B tile of
	 * tc128x32x32s3: 128) leaves the last threads idle in its last round */
	int total = (tr ? cols : rows) * cpr;
	int per = (total + MM_THREADS - 1) / MM_THREADS;
	LLVMValueRef r0 = w ? mm_mulc(x, kt, c->bk) : x->m0;
	LLVMValueRef c0 = w ? x->n0 : mm_mulc(x, kt, c->bk);
	LLVMValueRef nrows = w ? x->K : x->M, ncols = w ? x->N : x->K;
	LLVMValueRef ldr = x->ost[w][x->rank - 2], ldc = x->ost[w][x->rank - 1];
	/* the shared tile's rows (outer) and contiguous columns (inner): the operand's
	 * rows and columns, or the other way round when it is stored transposed */
	LLVMValueRef o0 = tr ? c0 : r0, i0 = tr ? r0 : c0;
	LLVMValueRef obound = tr ? ncols : nrows, ibound = tr ? nrows : ncols;
	LLVMValueRef ostr = tr ? ldc : ldr, istr = tr ? ldr : ldc;
	LLVMValueRef buf = x->src[w];
	LLVMValueRef soff = mm_stage_off(x, s, w);
	LLVMValueRef tids = mm_to_ot(x, mm_phase_begin(x));
	LLVMTypeRef vt = LLVMVectorType(m->t_i32, 4);
	LLVMTypeRef rt = mm_raw_type(x);

	/* a conv's gathered operand (matmul_conv.c): NCHW's B has only the element
	 * path, channels last A copies whole chunks of channels where they are */
	bool gather = x->is_conv && x->cv.gather && w == x->cv.gw;
	bool gather_whole = gather && x->cv.nhwc;
	LLVMBasicBlockRef bfast = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "ld.fast");
	LLVMBasicBlockRef bslow = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "ld.elem");
	LLVMBasicBlockRef bdone = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "ld.done");
	LLVMBuildCondBr(x->b, x->all_fast ? LLVMConstInt(m->t_i1, 1, 0) : x->fast[w], bfast, bslow);
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 0 && gather && !gather_whole) {
			/* unreachable: fast[1] is false */
			LLVMPositionBuilderAtEnd(x->b, bfast);
			LLVMBuildBr(x->b, bdone);
			continue;
		}
		if (pass == 1 && x->all_fast) {
			/* unreachable in this copy of the loop */
			LLVMPositionBuilderAtEnd(x->b, bslow);
			LLVMBuildBr(x->b, bdone);
			break;
		}
		LLVMPositionBuilderAtEnd(x->b, pass ? bslow : bfast);
		LLVMBasicBlockRef skip = NULL;
		for (int i = 0; i < per; i++) {
			LLVMValueRef q = mm_addc(x, tids, (int64_t)i * MM_THREADS);
			if (i == per - 1 && total % MM_THREADS) {
				LLVMBasicBlockRef in = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "ld.part");
				skip = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "ld.rest");
				LLVMBuildCondBr(x->b, mm_lt(x, q, LLVMConstInt(LLVMTypeOf(q),
						(unsigned long long)total, 0)), in, skip);
				LLVMPositionBuilderAtEnd(x->b, in);
			}
			LLVMValueRef r = mm_udivc(x, q, cpr), ch = mm_uremc(x, q, cpr);
			LLVMValueRef go = mm_add(x, o0, mm_to64(x, r));
			LLVMValueRef gi = mm_add(x, i0, mm_to64(x, mm_mulc(x, ch, x->ce)));
			LLVMValueRef rowok = mm_lt(x, go, obound);
			/* (the same r and ch, numbered once) */
			LLVMValueRef doff = mm_chunk_at(x, w, soff, q, &r, &ch);
			LLVMValueRef dst = mm_smem_at(x, doff);
			if (gather_whole) {
				mm_conv_load_a(x, i, go, gi, doff, dst, pass == 0);
				continue;
			}
			LLVMValueRef goff = mm_add(x, x->base[w], mm_mul(x, go, ostr));
			if (pass == 0) {
				/* the leading dimension is a multiple of a chunk: the chunk
				 * is wholly inside or wholly outside */
				LLVMValueRef ok = LLVMBuildAnd(x->b, rowok, mm_lt(x, gi, ibound), "");
				goff = LLVMBuildSelect(x->b, ok, mm_add(x, goff, gi), mm_i64c(x, 0), "");
				LLVMValueRef src = LLVMBuildGEP2(x->b, rt, buf, &goff, 1, "");
				if (x->gpu) {
					LLVMValueRef args[3] = {mm_saddr(x, doff), src,
						LLVMBuildSelect(x->b, ok, mm_i32c(x, 16), mm_i32c(x, 0),
								"")};
					mm_asm_call(x, m->t_void,
						    "cp.async.cg.shared.global [$0], [$1], 16, $2;",
						    "r,l,r,~{memory}", args, 3);
				} else {
					LLVMValueRef v = LLVMBuildLoad2(x->b, vt, src, "");
					LLVMSetAlignment(v, 16);
					v = LLVMBuildSelect(x->b, ok, v, LLVMConstNull(vt), "");
					LLVMSetAlignment(LLVMBuildStore(x->b, v, dst), 16);
				}
				continue;
			}
			if (gather) {
				LLVMValueRef vec = mm_conv_chunk(x, go, gi);
				LLVMSetAlignment(LLVMBuildStore(x->b, vec, dst), 16);
				continue;
			}
			LLVMValueRef vec = LLVMConstNull(LLVMVectorType(rt, (unsigned)x->ce));
			for (int e = 0; e < x->ce; e++) {
				LLVMValueRef gie = mm_add(x, gi, mm_i64c(x, e));
				LLVMValueRef ok = LLVMBuildAnd(x->b, rowok, mm_lt(x, gie, ibound), "");
				LLVMValueRef o = LLVMBuildSelect(x->b, ok,
								 mm_add(x, goff, mm_mul(x, gie, istr)),
								 mm_i64c(x, 0), "");
				LLVMValueRef p = LLVMBuildGEP2(x->b, rt, buf, &o, 1, "");
				LLVMValueRef v = LLVMBuildLoad2(x->b, rt, p, "");
				LLVMSetAlignment(v, (unsigned)x->es);
				v = LLVMBuildSelect(x->b, ok, v, LLVMConstNull(rt), "");
				vec = LLVMBuildInsertElement(x->b, vec, v, mm_i32c(x, e), "");
			}
			LLVMSetAlignment(LLVMBuildStore(x->b, vec, dst), 16);
		}
		if (skip) {
			LLVMBuildBr(x->b, skip);
			LLVMPositionBuilderAtEnd(x->b, skip);
		}
		LLVMBuildBr(x->b, bdone);
	}
	LLVMPositionBuilderAtEnd(x->b, bdone);
	mm_phase_end(x);
}

void mm_load_stage(Mm *x, LLVMValueRef s, LLVMValueRef kt)
{
	mm_load_tile(x, 0, s, kt);
	mm_load_tile(x, 1, s, kt);
}

/* Load of element (row, col) of a shared tile of operand w, widened to f32. */
LLVMValueRef mm_smem_elem(Mm *x, int w, LLVMValueRef soff, LLVMValueRef row,
			  LLVMValueRef col)
{
	CgModule *m = x->kb->m;
	if (x->trans[w]) {
		LLVMValueRef t = row;
		row = col;
		col = t;
	}
	row = mm_to_ot(x, row);
	col = mm_to_ot(x, col);
	LLVMValueRef ch = mm_udivc(x, col, x->ce), within = mm_uremc(x, col, x->ce);
	LLVMValueRef off = mm_add(x, mm_add(x, soff, mm_swz(x, w, row, ch)),
				  mm_mulc(x, within, x->es));
	LLVMValueRef p = mm_smem_at(x, off);
	if (x->dt == DT_F32) {
		LLVMValueRef v = LLVMBuildLoad2(x->b, m->t_f32, p, "");
		LLVMSetAlignment(v, 4);
		return v;
	}
	LLVMValueRef v = LLVMBuildLoad2(x->b, m->t_i16, p, "");
	LLVMSetAlignment(v, 2);
	if (x->dt == DT_F16)
		return LLVMBuildFPExt(x->b, LLVMBuildBitCast(x->b, v, m->t_f16, ""), m->t_f32, "");
	v = LLVMBuildShl(x->b, LLVMBuildZExt(x->b, v, m->t_i32, ""), mm_i32c(x, 16), "");
	return LLVMBuildBitCast(x->b, v, m->t_f32, "");
}

/* Element offset, in the buffer operand w (A or B) is read from, of the first
 * element of the matrix at batch position bpos (size-1 batch dims broadcast). */
LLVMValueRef mm_batch_base(Mm *x, int w)
{
	const RelTensor *t = w ? x->tb : x->ta;
	LLVMValueRef o = mm_i64c(x, 0);
	for (int d = 0; d < t->rank - 2; d++)
		if (t->shape[d] != 0)
			o = mm_add(x, o, mm_mul(x, x->bpos[d], x->ost[w][d]));
	return o;
}

/* The output tiles of the block tile: *nb batches (the output's batch dims
 * multiplied), *ntm x *ntn tiles in each; returns the tiles per batch. */
LLVMValueRef mm_tile_grid(Mm *x, LLVMValueRef *nb, LLVMValueRef *ntm, LLVMValueRef *ntn)
{
	LLVMValueRef n = mm_i64c(x, 1);
	for (int d = 0; d < x->rank - 2 && !x->is_conv; d++)
		n = mm_mul(x, n, cg_dim(x->kb, x->to->shape[d]));
	*nb = x->is_conv ? mm_conv_batches(x) : n;
	*ntm = mm_ceil_div(x, x->M, x->c->bm);
	*ntn = mm_ceil_div(x, x->N, x->c->bn);
	return mm_mul(x, *ntm, *ntn);
}

/* The current tile's batch position (Mm.bpos) from its flat batch index f, and the
 * operands' offsets there (Mm.base). */
void mm_tile_batch(Mm *x, LLVMValueRef f)
{
	if (x->is_conv) {
		mm_conv_batch(x, f);
		return;
	}
	for (int d = x->rank - 3; d >= 0; d--) {
		LLVMValueRef n = cg_dim(x->kb, x->to->shape[d]);
		x->bpos[d] = LLVMBuildURem(x->b, f, n, "");
		f = LLVMBuildUDiv(x->b, f, n, "");
	}
	x->base[0] = mm_batch_base(x, 0);
	x->base[1] = mm_batch_base(x, 1);
}

/* The buffer and strides of operand w (Mm.src, Mm.ost): a tensor the kernel reads
 * is dense in C order; a swap_dims or permute in front of the matmul only reorders
 * the strides of the tensor it reads. */
void mm_operand_layout(Mm *x, const CgKernelSpec *s, int mi, int w)
{
	CgKb *kb = x->kb;
	const RelTensor *t = w ? x->tb : x->ta, *src = t;
	int r = t->rank, perm[IR_MAX_RANK];
	for (int d = 0; d < r; d++)
		perm[d] = d;
	for (int v = 0; v < mi; v++) {
		const RelOp *op = &s->ops[v];
		if (op->t[1].id != t->id)
			continue;
		src = &op->t[0];
		if (op->kind == OP_SWAP_DIMS) {
			perm[op->attr.axes[0]] = op->attr.axes[1];
			perm[op->attr.axes[1]] = op->attr.axes[0];
		} else {
			for (int d = 0; d < r; d++)
				perm[d] = op->attr.axes[d];
		}
	}
	LLVMValueRef sst[IR_MAX_RANK];
	sst[r - 1] = mm_i64c(x, 1);
	for (int d = r - 2; d >= 0; d--)
		sst[d] = mm_mul(x, sst[d + 1], cg_dim(kb, src->shape[d + 1]));
	for (int d = 0; d < r; d++)
		x->ost[w][d] = sst[perm[d]];
	x->src[w] = kb->buf[src->id];
	x->trans[w] = perm[r - 2] == r - 1;
}

/* Whether operand w's tile rows may be copied as whole 16-byte chunks: its columns
 * are contiguous, and its buffer, row stride and batch strides are 16-byte aligned. */
LLVMValueRef mm_is_aligned16(Mm *x, int w)
{
	CgKb *kb = x->kb;
	const RelTensor *t = w ? x->tb : x->ta;
	LLVMValueRef p = LLVMBuildPtrToInt(x->b, x->src[w], kb->m->t_i64, "");
	LLVMValueRef ok = LLVMBuildICmp(x->b, LLVMIntEQ, mm_uremc(x, p, 16), mm_i64c(x, 0), "");
	int inner = x->trans[w] ? x->rank - 2 : x->rank - 1;
	ok = LLVMBuildAnd(x->b, ok, LLVMBuildICmp(x->b, LLVMIntEQ, x->ost[w][inner],
						  mm_i64c(x, 1), ""), "");
	for (int d = 0; d < x->rank; d++) {
		if (d == inner || (d < x->rank - 2 && t->shape[d] == 0))
			continue;
		LLVMValueRef ldok = LLVMBuildICmp(x->b, LLVMIntEQ, mm_uremc(x, x->ost[w][d], x->ce),
						  mm_i64c(x, 0), "");
		ok = LLVMBuildAnd(x->b, ok, ldok, "");
	}
	return ok;
}

/* ---- the tile loop ----------------------------------------------------------- */

/* The compute of the stage at s, by the configuration's kind and the target. */
void mm_compute_stage(Mm *x, LLVMValueRef s)
{
	if (!x->c->tc)
		mm_simt_compute(x, s);
	else if (x->gpu && x->c->wg)
		mm_wg_compute_gpu(x, s);
	else if (x->gpu)
		mm_tc_compute_gpu(x, s);
	else
		mm_tc_compute_host(x, s);
}

static LLVMValueRef sreg(Mm *x, const char *name)
{
	return LLVMBuildZExt(x->b, mm_intrinsic(x, name, NULL, 0, NULL, 0), x->kb->m->t_i64, "");
}

static void tile_loop(Mm *x, LLVMValueRef block, LLVMValueRef nblocks, const int *wr, int nw)
{
	CgKb *kb = x->kb;
	CgModule *m = kb->m;
	const MmConfig *c = x->c;
	/* tiles: batch x tile rows x tile columns, rows grouped by MM_GROUP_M */
	LLVMValueRef nb, ntm, ntn;
	LLVMValueRef per_batch = mm_tile_grid(x, &nb, &ntm, &ntn);
	LLVMValueRef total = mm_mul(x, nb, per_batch);
	LLVMValueRef nk = mm_ceil_div(x, x->K, c->bk);
	/* split-K: unit u is split u % S of tile u / S; split s takes the K steps
	 * [s * ks, min(nk, (s + 1) * ks)), ks = ceil(nk / S) (empty ones sum zeros) */
	int S = c->split > 1 ? c->split : 1;
	LLVMValueRef kbeg = mm_i64c(x, 0);
	CgLoop lt_;
	cg_loop_begin(kb, &lt_, block, mm_mul(x, total, mm_i64c(x, S)), nblocks);
	kb->nmemo = 0;
	LLVMValueRef t = lt_.i;
	LLVMValueRef split = NULL;
	if (S > 1) {
		split = LLVMBuildURem(x->b, t, mm_i64c(x, S), "");
		t = LLVMBuildUDiv(x->b, t, mm_i64c(x, S), "");
		LLVMValueRef ks = mm_ceil_div(x, nk, S);
		kbeg = mm_mul(x, split, ks);
		LLVMValueRef kend = mm_min64(x, mm_add(x, kbeg, ks), nk);
		LLVMValueRef has = mm_lt(x, kbeg, kend);
		nk = LLVMBuildSelect(x->b, has, LLVMBuildSub(x->b, kend, kbeg, ""), mm_i64c(x, 0), "");
	}
	LLVMValueRef bflat = LLVMBuildUDiv(x->b, t, per_batch, "");
	LLVMValueRef within = LLVMBuildURem(x->b, t, per_batch, "");
	LLVMValueRef gsize = mm_mul(x, ntn, mm_i64c(x, MM_GROUP_M));
	LLVMValueRef group = LLVMBuildUDiv(x->b, within, gsize, "");
	LLVMValueRef first = mm_mul(x, group, mm_i64c(x, MM_GROUP_M));
	LLVMValueRef rows_in = mm_min64(x, LLVMBuildSub(x->b, ntm, first, ""), mm_i64c(x, MM_GROUP_M));
	LLVMValueRef ing = LLVMBuildURem(x->b, within, gsize, "");
	LLVMValueRef tm = mm_add(x, first, LLVMBuildURem(x->b, ing, rows_in, ""));
	LLVMValueRef tn = LLVMBuildUDiv(x->b, ing, rows_in, "");
	x->m0 = mm_mul(x, tm, mm_i64c(x, c->bm));
	x->n0 = mm_mul(x, tn, mm_i64c(x, c->bn));
	mm_tile_batch(x, bflat);
	if (x->is_conv)
		mm_conv_tile_cols(x);

	/* accumulators to zero */
	mm_phase_begin(x);
	for (int e = 0; e < x->nacc; e++)
		mm_acc_store(x, mm_i64c(x, e), LLVMConstReal(m->t_f32, 0));
	mm_phase_end(x);

	/* the K steps loaded ahead of the one computed: STAGES - 1, so that the stage
	 * refilled at step kt is the one read at kt - 1; wgmma on the GPU leaves its
	 * group of step kt in flight while step kt + 1 is issued (mm_wg_compute_gpu), so
	 * there the stage refilled is the one read at kt - 2 */
	int lead = x->gpu && c->wg ? c->stages - 2 : c->stages - 1;
	/* prologue: stages 0 .. lead-1 */
	for (int s = 0; s < lead; s++) {
		LLVMBasicBlockRef bl = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "pro.load");
		LLVMBasicBlockRef bc = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "pro.commit");
		LLVMBuildCondBr(x->b, mm_lt(x, mm_i64c(x, s), nk), bl, bc);
		LLVMPositionBuilderAtEnd(x->b, bl);
		mm_load_stage(x, LLVMConstInt(x->ot, (unsigned long long)s * x->stage_bytes, 0),
			      mm_add(x, kbeg, mm_i64c(x, s)));
		LLVMBuildBr(x->b, bc);
		LLVMPositionBuilderAtEnd(x->b, bc);
		if (x->gpu)
			mm_intrinsic(x, "llvm.nvvm.cp.async.commit.group", NULL, 0, NULL, 0);
	}
	/* main loop: wait for stage kt, then refill the stage read at kt - 1 */
	CgLoop lk;
	cg_loop_begin(kb, &lk, mm_i64c(x, 0), nk, mm_i64c(x, 1));
	/* the stage read at this step and the one refilled (read at the step before) */
	LLVMValueRef rd = cg_carry(kb, &lk, LLVMConstInt(x->ot, 0, 0));
	LLVMValueRef wrs = cg_carry(kb, &lk, LLVMConstInt(x->ot, (unsigned long long)
					 lead * x->stage_bytes, 0));
	LLVMValueRef wrap = LLVMConstInt(x->ot, (unsigned long long)c->stages * x->stage_bytes, 0);
	if (x->gpu) {
		LLVMValueRef n = mm_i32c(x, lead - 1);
		mm_intrinsic(x, "llvm.nvvm.cp.async.wait.group", NULL, 0, &n, 1);
		if (c->wg && c->tf32)
			mm_wg_round_tf32(x, rd);
		/* wgmma reads the stage through the async proxy: the copies this
		 * thread saw land are ordered before it (then the barrier orders all) */
		if (c->wg)
			mm_asm_call(x, m->t_void, "fence.proxy.async.shared::cta;", "~{memory}", NULL, 0);
	}
	mm_barrier(x);
	LLVMValueRef kn = mm_add(x, lk.i, mm_i64c(x, lead));
	LLVMBasicBlockRef bl = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "main.load");
	LLVMBasicBlockRef bc = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "main.commit");
	LLVMBuildCondBr(x->b, mm_lt(x, kn, nk), bl, bc);
	LLVMPositionBuilderAtEnd(x->b, bl);
	mm_load_stage(x, wrs, mm_add(x, kbeg, kn));
	LLVMBuildBr(x->b, bc);
	LLVMPositionBuilderAtEnd(x->b, bc);
	if (x->gpu)
		mm_intrinsic(x, "llvm.nvvm.cp.async.commit.group", NULL, 0, NULL, 0);
	mm_compute_stage(x, rd);
	LLVMValueRef rn = mm_addc(x, rd, x->stage_bytes), wn = mm_addc(x, wrs, x->stage_bytes);
	cg_carry_next(kb, &lk, rd, LLVMBuildSelect(x->b, LLVMBuildICmp(x->b, LLVMIntEQ, rn, wrap, ""),
						   LLVMConstInt(x->ot, 0, 0), rn, ""));
	cg_carry_next(kb, &lk, wrs, LLVMBuildSelect(x->b, LLVMBuildICmp(x->b, LLVMIntEQ, wn, wrap, ""),
						    LLVMConstInt(x->ot, 0, 0), wn, ""));
	cg_loop_end(kb, &lk);
	if (x->gpu) {
		LLVMValueRef n = mm_i32c(x, 0);
		mm_intrinsic(x, "llvm.nvvm.cp.async.wait.group", NULL, 0, &n, 1);
	}
	if (x->gpu && c->wg)
		mm_wg_wait(x, 0);
	LLVMBasicBlockRef after = NULL;
	if (S > 1)
		after = mm_split_combine(x, t, split, total);
	mm_epilogue(x, wr, nw);
	if (after) {
		LLVMBuildBr(x->b, after);
		LLVMPositionBuilderAtEnd(x->b, after);
	}
	/* nobody refills shared memory for the next tile before everyone is done */
	mm_barrier(x);
	cg_loop_end(kb, &lt_);
}

void mm_min_blocks(CgKb *kb, int n)
{
	CgModule *m = kb->m;
	if (n <= 0)
		return;
	LLVMMetadataRef md[3] = {
		LLVMValueAsMetadata(kb->fn),
		LLVMMDStringInContext2(m->ctx, "minctasm", 8),
		LLVMValueAsMetadata(LLVMConstInt(m->t_i32, (unsigned)n, 0)),
	};
	LLVMAddNamedMetadataOperand(m->mod, "nvvm.annotations",
		LLVMMetadataAsValue(m->ctx, LLVMMDNodeInContext2(m->ctx, md, 3)));
}

LLVMValueRef mm_shared_global(CgKb *kb, int bytes)
{
	CgModule *m = kb->m;
	LLVMValueRef g;
	if (bytes > MM_SMEM_STATIC) {
		/* the launch's dynamic shared memory (the launch rule asks for the
		 * bytes); the kernel has no static shared memory, so it starts at the
		 * window's base, 128-byte aligned as the swizzle assumes */
		g = LLVMGetNamedGlobal(m->mod, "fusec_dynamic_shared");
		if (!g) {
			g = LLVMAddGlobalInAddressSpace(m->mod, LLVMArrayType2(m->t_i8, 0),
							"fusec_dynamic_shared", 3);
			LLVMSetLinkage(g, LLVMExternalLinkage);
			LLVMSetAlignment(g, 16);
		}
		return g;
	}
	char name[128];
	LLVMTypeRef sty = LLVMArrayType(m->t_i8, (unsigned)bytes);
	snprintf(name, sizeof name, "%s_smem", LLVMGetValueName(kb->fn));
	g = LLVMAddGlobalInAddressSpace(m->mod, sty, name, 3);
	LLVMSetLinkage(g, LLVMInternalLinkage);
	LLVMSetInitializer(g, LLVMGetUndef(sty));
	LLVMSetAlignment(g, 128);
	return g;
}

int cg_matmul_tiled(CgKb *kb, int variant, const int *wr, int nw)
{
	const MmConfig *cfg = mm_config(variant);
	if (!cfg || !mm_eligible(kb->spec))
		return cg_fail(kb, "internal: matmul tile configuration %d does not apply", variant);
	if (cfg->dw)
		return mm_dw_kernel(kb, cfg, wr, nw);
	if (cfg->att)
		return mm_attention_kernel(kb, cfg, wr, nw);
	CgModule *m = kb->m;
	Mm x0, *x = &x0;
	memset(x, 0, sizeof *x);
	x->kb = kb;
	x->b = kb->b;
	x->c = cfg;
	x->gpu = m->opt.target == CG_TARGET_NVPTX;
	int mi = cg_matmul_index(kb->spec);
	x->op = &kb->spec->ops[mi];
	x->is_conv = x->op->kind == OP_CONV2D;
	/* an NCHW conv's A is its weight (matmul_conv.c) */
	bool swap = x->is_conv && x->op->attr.layout == LAYOUT_NCHW;
	x->ta = &x->op->t[swap ? 1 : 0];
	x->tb = &x->op->t[swap ? 0 : 1];
	x->to = &x->op->t[x->op->nin];
	x->dt = (DType)x->ta->dtype;
	x->es = ir_dtype_size(x->dt);
	x->ce = 16 / x->es;
	x->rank = x->to->rank;
	const MmConfig *c = x->c;
	if (!mm_fits(c, x->dt, true))
		return cg_fail(kb, "internal: tile configuration %s does not fit %s", c->name,
			       ir_dtype_name(x->dt));
	if (c->wg && c->tf32 && !mm_kmajor(x->op))
		return cg_fail(kb, "internal: tile configuration %s takes only a conv channels "
			       "last (tf32 wgmma reads both operands K-major)", c->name);
	int r = x->rank;
	if (x->is_conv && !c->gemv) {
		mm_conv_setup(x);
	} else if (x->is_conv) {
		return cg_fail(kb, "internal: tile configuration %s does not take a conv", c->name);
	} else {
		x->M = cg_dim(kb, x->to->shape[r - 2]);
		x->N = cg_dim(kb, x->to->shape[r - 1]);
		x->K = cg_dim(kb, x->ta->shape[r - 1]);
		mm_operand_layout(x, kb->spec, mi, 0);
		mm_operand_layout(x, kb->spec, mi, 1);
	}
	x->cpr[0] = (x->trans[0] ? c->bm : c->bk) * x->es / 16;
	x->cpr[1] = (x->trans[1] ? c->bk : c->bn) * x->es / 16;
	x->outer[0] = x->trans[0] ? c->bk : c->bm;
	x->outer[1] = x->trans[1] ? c->bn : c->bk;
	x->panel = c->wg;
	x->a_bytes = c->bm * c->bk * x->es;
	x->stage_bytes = x->a_bytes + c->bk * c->bn * x->es;
	if (c->gemv) {
		x->nacc = c->bm * MM_GEMV_COLS;
	} else if (c->tc) {
		x->wtm = c->bm / c->wm;
		x->wtn = c->bn / c->wn;
		x->mi = x->wtm / 16;
		x->ni = x->wtn / 8;
		x->nacc = x->mi * x->ni * 4;
	} else {
		x->rm = c->bm / 16;
		x->rn = c->bn / 16;
		x->nacc = x->rm * x->rn;
	}
	int smem_bytes = mm_smem(c, x->es);

	/* storage: shared memory and accumulators */
	LLVMBasicBlockRef entry = LLVMGetInsertBlock(x->b);
	LLVMTypeRef sty = LLVMArrayType(m->t_i8, (unsigned)smem_bytes);
	if (x->gpu)
		mm_min_blocks(kb, c->min_blocks);
	if (x->gpu) {
		LLVMValueRef g = mm_shared_global(kb, smem_bytes);
		x->smem = g;
		x->sptr = LLVMPointerTypeInContext(m->ctx, 3);
		x->ot = m->t_i32;
		x->sbase = LLVMBuildTrunc(x->b, LLVMBuildPtrToInt(x->b, g, m->t_i64, ""), m->t_i32, "");
		if (c->wg) {
			/* the stages start at the next multiple of MM_WG_ALIGN (mm_smem
			 * asked for the room) */
			LLVMValueRef al = LLVMBuildAnd(x->b, LLVMBuildAdd(x->b, x->sbase,
				mm_i32c(x, MM_WG_ALIGN - 1), ""), mm_i32c(x, -MM_WG_ALIGN), "");
			LLVMValueRef pad = LLVMBuildSub(x->b, al, x->sbase, "");
			x->smem = LLVMBuildGEP2(x->b, m->t_i8, g, &pad, 1, "");
			x->sbase = al;
		}
		LLVMValueRef a = LLVMBuildAlloca(x->b, LLVMArrayType(m->t_f32, (unsigned)x->nacc), "acc");
		x->acc = a;
		x->tid = sreg(x, "llvm.nvvm.read.ptx.sreg.tid.x");
	} else {
		LLVMValueRef sm = LLVMBuildAlloca(x->b, sty, "smem");
		LLVMSetAlignment(sm, 128);
		x->smem = sm;
		x->sptr = m->t_ptr;
		x->ot = m->t_i64;
		x->acc = LLVMBuildAlloca(x->b, LLVMArrayType(m->t_f32,
					 (unsigned)(x->nacc * MM_THREADS)), "acc");
	}
	(void)entry;
	LLVMValueRef block = x->gpu ? sreg(x, "llvm.nvvm.read.ptx.sreg.ctaid.x") : LLVMGetParam(kb->fn, 1);
	LLVMValueRef nblocks = x->gpu ? sreg(x, "llvm.nvvm.read.ptx.sreg.nctaid.x") : LLVMGetParam(kb->fn, 2);
	for (int w = 0; w < 2; w++)
		x->fast[w] = x->is_conv ? mm_conv_aligned16(x, w) : mm_is_aligned16(x, w);
	x->vecok = mm_vector_ok(x, wr, nw);
	x->epi_rows = c->bm;
	while (x->epi_rows * (c->bn + MM_EPI_PAD) * 4 > mm_stages_bytes(c, x->es))
		x->epi_rows /= 2;
	if (c->gemv) {
		mm_gemv_tile_loop(x, block, nblocks, wr, nw);
		free(x->cse);
		return kb->failed ? -1 : 0;
	}

	/* two copies of the tile loop: one where both operands are copied by whole
	 * chunks (its registers and code hold nothing of the element path), one for
	 * the rest */
	LLVMBasicBlockRef bf = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "tiles.fast");
	LLVMBasicBlockRef bg = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "tiles.any");
	LLVMBasicBlockRef bd = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "tiles.done");
	/* (an NCHW conv's gathered operand is never copied whole: one copy) */
	bool one = x->is_conv && x->cv.gather && !x->cv.nhwc;
	if (one)
		LLVMBuildBr(x->b, bg);
	else
		LLVMBuildCondBr(x->b, LLVMBuildAnd(x->b, x->fast[0], x->fast[1], ""), bf, bg);
	for (int copy = one; copy < 2; copy++) {
		LLVMPositionBuilderAtEnd(x->b, copy ? bg : bf);
		x->all_fast = copy == 0;
		tile_loop(x, block, nblocks, wr, nw);
		LLVMBuildBr(x->b, bd);
	}
	if (one) {
		LLVMPositionBuilderAtEnd(x->b, bf);
		LLVMBuildUnreachable(x->b);
	}
	LLVMPositionBuilderAtEnd(x->b, bd);
	free(x->cse);
	return kb->failed ? -1 : 0;
}
