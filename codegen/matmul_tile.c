/* matmul_tile.c: the builder's primitives, the ground floor of the matmul family
 * (matmul.h): value numbering and the integer helpers built on it, phases and
 * accumulators, the swizzled shared layout and an element of a shared tile, inline
 * PTX, a kernel's shared memory and blocks-per-SM request, and the units of sibling
 * matmuls in one tile loop (mm_group_units). Every other room of
 * the family builds with these, and this one calls none of them. The tiled kernel
 * (its structure on both targets, the host's phases as loops over the threads) is in
 * matmul_kernel.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matmul.h"

/* ---- value numbering while building ----
 *
 * The tile code computes the same index arithmetic many times over (a shared
 * address per element of every unrolled K step, each from the thread id), and
 * LLVM's InstCombine and GVN spent most of a kernel's optimization time merging it
 * again. The integer helpers below (mm_bin and its wrappers) build an
 * instruction only once per basic block: an operation on the same operands in the
 * same block returns the instruction built before (the builder only ever appends,
 * so that one precedes the use), and the neutral cases (x + 0, x * 1, x ^ 0, x / 1, ...) return their operand. Only pure
 * integer operations are numbered; loads, stores and calls never. */

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

LLVMValueRef mm_add(Mm *x, LLVMValueRef a, LLVMValueRef b)
{
	return mm_bin(x, LLVMAdd, a, b);
}

LLVMValueRef mm_mul(Mm *x, LLVMValueRef a, LLVMValueRef b)
{
	return mm_bin(x, LLVMMul, a, b);
}

LLVMValueRef mm_addc(Mm *x, LLVMValueRef a, int64_t c)
{
	return mm_bin(x, LLVMAdd, a, mm_cst(a, c));
}

LLVMValueRef mm_mulc(Mm *x, LLVMValueRef a, int64_t c)
{
	return mm_bin(x, LLVMMul, a, mm_cst(a, c));
}

LLVMValueRef mm_udivc(Mm *x, LLVMValueRef a, int64_t c)
{
	return mm_bin(x, LLVMUDiv, a, mm_cst(a, c));
}

LLVMValueRef mm_uremc(Mm *x, LLVMValueRef a, int64_t c)
{
	return mm_bin(x, LLVMURem, a, mm_cst(a, c));
}

LLVMValueRef mm_ceil_div(Mm *x, LLVMValueRef a, int64_t c)
{
	return mm_udivc(x, mm_add(x, a, mm_i64c(x, c - 1)), c);
}

LLVMValueRef mm_min64(Mm *x, LLVMValueRef a, LLVMValueRef b)
{
	return LLVMBuildSelect(x->b, mm_lt(x, a, b), a, b, "");
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

void mm_barrier(Mm *x)
{
	_Static_assert(MM_THREADS == 256, "the named barrier counts the multiplying threads");
	if (x->gpu && x->ppbar)
		mm_asm_call(x, x->kb->m->t_void, "bar.sync $0, 128;", "r,~{memory}", &x->ppbar, 1);
	else if (x->gpu && x->wsbar)
		mm_asm_call(x, x->kb->m->t_void, "bar.sync 1, 256;", "~{memory}", NULL, 0);
	else if (x->gpu)
		mm_intrinsic(x, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
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
 * fall in 8 different 16-byte groups of a 128-byte line (ldmatrix's rows).
 *
 * SIMT tiles (Mm.padded) are not swizzled, so that the chunks a thread reads lie at
 * constant distances from one base (immediate offsets of its loads, matmul_simt.c):
 * rows of 128 bytes or more (B as stored, A transposed; a warp reads consecutive
 * chunks of a row) are plain, and rows along K of 64 bytes (A as stored, B
 * transposed; a warp reads one chunk of rows 4 apart) have a chunk of padding after
 * every MM_PAD_ROWS rows: row 4t starts at 272 t bytes, 16 t past a multiple of 128,
 * so 8 such rows fall in 8 different 16-byte groups of a 128-byte line. The offset
 * is linear: that of (4t + r, c) is that of (4t, 0) plus that of (r, c). */
LLVMValueRef mm_swz(Mm *x, int w, LLVMValueRef row, LLVMValueRef ch)
{
	int cpr = x->cpr[w];
	if (x->padded) {
		row = mm_to_ot(x, row);
		ch = mm_to_ot(x, ch);
		LLVMValueRef off = mm_add(x, mm_mulc(x, row, (int64_t)cpr * 16), mm_mulc(x, ch, 16));
		if (cpr * 16 < 128)
			off = mm_add(x, off, mm_mulc(x, mm_udivc(x, row, MM_PAD_ROWS), 16));
		return off;
	}
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

/* GPU, wgmma: the stages start at the next multiple of MM_WG_ALIGN after the
 * shared array g (where the 128-byte swizzle repeats; the kernel's shared size
 * asked for the room): x->smem and x->sbase move there. */
void mm_wg_align(Mm *x, LLVMValueRef g)
{
	CgModule *m = x->kb->m;
	LLVMValueRef al = LLVMBuildAnd(x->b, LLVMBuildAdd(x->b, x->sbase,
		mm_i32c(x, MM_WG_ALIGN - 1), ""), mm_i32c(x, -MM_WG_ALIGN), "");
	LLVMValueRef pad = LLVMBuildSub(x->b, al, x->sbase, "");
	x->smem = LLVMBuildGEP2(x->b, m->t_i8, g, &pad, 1, "");
	x->sbase = al;
}

/* GPU: the 32-bit shared address of a byte offset */
LLVMValueRef mm_saddr(Mm *x, LLVMValueRef byte)
{
	return mm_add(x, x->sbase, byte);
}

/* Byte offset (ot) of the shared copy of operand w (0 = A, 1 = B) in a stage whose
 * offset is s (ot); A at 0 whatever the stage where one A tile serves every stage
 * (Mm.a_fixed). */
LLVMValueRef mm_stage_off(Mm *x, LLVMValueRef s, int w)
{
	if (!w && x->a_fixed)
		return LLVMConstNull(LLVMTypeOf(s));
	return w ? mm_addc(x, s, x->a_bytes) : s;
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

/* ---- siblings: units of several matmuls in one tile loop ------------------- */

/* Siblings (mm_members): the units of matmul g (its tiles, times the split) are
 * g*n .. (g+1)*n - 1 of the launch's; in a loop over them all, *t becomes the unit
 * of matmul x->gi it is, and the block returned is where the other matmuls' units
 * go (the caller branches there at the end of the body); NULL for one matmul. */
LLVMBasicBlockRef mm_group_units(Mm *x, LLVMValueRef *t, LLVMValueRef n)
{
	if (x->ngroup < 2)
		return NULL;
	CgKb *kb = x->kb;
	CgModule *m = kb->m;
	if (x->gi < 0) {
		/* every matmul in this loop: the tile's own buffers in the first's
		 * place (the ids gmap maps), the second operand's among them */
		LLVMValueRef g = LLVMBuildUDiv(x->b, *t, n, "");
		*t = LLVMBuildSub(x->b, *t, mm_mul(x, g, n), "");
		x->grt = g;
		for (int id = 0; id < kb->ntensors; id++) {
			x->gsaved[id] = kb->buf[id];
			if (!kb->buf[id] || x->gmap[id] != id)
				continue;
			LLVMValueRef v = kb->buf[id];
			for (int k = 1; k < x->ngroup; k++) {
				LLVMValueRef is = LLVMBuildICmp(x->b, LLVMIntEQ, g, mm_i64c(x, k), "");
				v = LLVMBuildSelect(x->b, is, kb->buf[x->gmap[k * kb->ntensors + id]],
						    v, "");
			}
			kb->buf[id] = v;
		}
		x->src[1] = kb->buf[x->tb->id];
		return NULL;
	}
	LLVMValueRef tl = LLVMBuildSub(x->b, *t, mm_mul(x, n, mm_i64c(x, x->gi)), "");
	LLVMBasicBlockRef run = LLVMAppendBasicBlockInContext(m->ctx, x->kb->fn, "tile.mine");
	LLVMBasicBlockRef skip = LLVMAppendBasicBlockInContext(m->ctx, x->kb->fn, "tile.other");
	LLVMBuildCondBr(x->b, LLVMBuildICmp(x->b, LLVMIntULT, tl, n, ""), run, skip);
	LLVMPositionBuilderAtEnd(x->b, run);
	*t = tl;
	return skip;
}

void mm_group_end(Mm *x)
{
	if (x->ngroup < 2 || x->gi >= 0)
		return;
	memcpy(x->kb->buf, x->gsaved, sizeof *x->gsaved * (size_t)x->kb->ntensors);
	x->src[1] = x->kb->buf[x->tb->id];
}

/* The tile of the launch that tile t of the current matmul is: split-K counts its
 * units by it (mm_split_combine over every matmul's tiles). */
LLVMValueRef mm_group_tile(Mm *x, LLVMValueRef t, LLVMValueRef total)
{
	if (x->ngroup < 2)
		return t;
	return mm_add(x, t, mm_mul(x, total, x->gi < 0 ? x->grt : mm_i64c(x, x->gi)));
}
