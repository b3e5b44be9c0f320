/* matmul_stage.c: a K step's stage of a tile kernel, between the builder's
 * primitives (matmul_tile.c) and the kernels that loop over K (matmul_kernel.c, the
 * attention's in matmul_attention.c):
 *   - the copy of both operands' tiles into a shared stage (mm_load_tile,
 *     mm_load_stage): 16-byte chunks by cp.async where the operand allows
 *     (mm_is_aligned16), else element by element, zeros past the edges; a conv's
 *     gathered operand through its gather (matmul_conv.c);
 *   - where the operands are read: the buffer and strides behind a swap_dims or
 *     permute in front of the matmul (mm_operand_layout), the offset of a batch
 *     (mm_batch_base), and which output tile and batch a block takes (mm_tile_grid,
 *     mm_tile_batch; a conv's batches are images x groups);
 *   - the compute of a stage by the configuration's kind (mm_compute_stage:
 *     mma.sync in matmul_mma.c, wgmma in matmul_wgmma.c, SIMT FMA in
 *     matmul_simt.c). */
#include "matmul.h"

/* ---- stage loads ------------------------------------------------------------- */

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
	int nthr = x->nthr ? x->nthr : MM_THREADS;
	int per = (total + nthr - 1) / nthr;
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
	/* SIMT and the attention (Mm.opaque_copy): what the copy derives from the
	 * thread id is computed at each copy, not hoisted out of the K loop: held
	 * through it, those values took the registers that two blocks per SM leave
	 * (128 with 64 accumulators) */
	LLVMValueRef tids = mm_phase_begin(x);
	if (x->padded || x->opaque_copy)
		tids = mm_opaque_tid(x, tids);
	tids = mm_to_ot(x, tids);
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
			LLVMValueRef q = mm_addc(x, tids, (int64_t)i * nthr);
			if (i == per - 1 && total % nthr) {
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

/* ---- operands and output tiles ----------------------------------------------- */

/* Element offset, in the buffer operand w (A or B) is read from, of the first
 * element of the matrix at batch position bpos (size-1 batch dims broadcast). */
LLVMValueRef mm_batch_base(Mm *x, int w)
{
	const RelTensor *t = w ? x->tb : x->ta;
	LLVMValueRef o = mm_i64c(x, 0);
	for (int d = 0; d < t->rank - 2; d++)
		if (t->shape[d] != 0)
			o = mm_add(x, o, mm_mul(x, mm_batch_pos(x, w, d), x->ost[w][d]));
	return o;
}

LLVMValueRef mm_batch_pos(Mm *x, int w, int d)
{
	const RelTensor *t = w ? x->tb : x->ta;
	if (t->shape[d] == x->to->shape[d])
		return x->bpos[d];
	/* grouped (an attention's kt or v): the output's O heads read T, O / T in a row */
	return LLVMBuildUDiv(x->b, x->bpos[d], LLVMBuildUDiv(x->b, cg_dim(x->kb, x->to->shape[d]),
							     cg_dim(x->kb, t->shape[d]), ""), "");
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

enum { MM_GROUP_M = 8 };         /* tile rows per L2 group */

/* Tile t (of batch x tile rows x tile columns, per_batch = ntm x ntn in a batch) as
 * the current one: Mm.m0, n0, its batch (mm_tile_batch) and a conv's columns. The
 * tile rows go in groups of MM_GROUP_M, column by column within a group, so that a
 * wave of blocks shares operand tiles in L2. */
void mm_tile_at(Mm *x, LLVMValueRef t, LLVMValueRef per_batch, LLVMValueRef ntm,
		LLVMValueRef ntn)
{
	const MmConfig *c = x->c;
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
	const RelTensor *t = w ? x->tb : x->ta;
	int r = t->rank, perm[IR_MAX_RANK];
	const RelTensor *src = mm_operand_view(s, mi, t, perm);
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

/* ---- the compute of a stage -------------------------------------------------- */

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
