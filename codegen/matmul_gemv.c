/* matmul_gemv.c: tiny M (M <= 16, decode and batch-1 inference): the gemv
 * configurations' loop over output tiles (mm_gemv_tile_loop; the picker's rule is
 * matmul_pick.c's).
 *
 * A block takes BM (8) rows x BN (64, or 128 for `gemv8x128k8...`) columns of the
 * output, and with a split (`...skS`) one of S contiguous shares of K. Thread (warp
 * w, lane l) owns BN / 32 consecutive columns of the tile (Mm.gcols, from column
 * l * gcols) and sums k = w, w + 8, w + 16 ... of its share: B is read once, a warp
 * reading BN consecutive columns of a row, and the A element of a row is one
 * broadcast load.
 *
 * The time is the latency of those loads, not their bytes, so the K loop issues
 * the loads of U steps of k (gemv_steps: 16 for up to 2 live rows, down to 4 for
 * 8, half that with 4 columns a thread) before the first FMA, with no branch
 * between them (the last steps of a share that U does not divide go one at a
 * time); a column past N and a row past M read
 * column 0 and row m0, whose sums are never stored. The tile's live rows
 * (min(M - m0, BM)) pick one of the copies of the loop, for 1, 2, 4 or 8 rows, so
 * M = 1 loads one A element a step, not 8.
 *
 * That is the element path (gemv_elem_sum). Where B is not stored transposed, its
 * chunks are aligned and N is a multiple of a chunk (a uniform test at run time
 * picks one of two copies of the tile loop, mm_gemv_tile_loop), B's rows are read
 * as 16-byte chunks instead (the vector path, gemv_vec_sum): a thread owns the V
 * consecutive columns of a chunk (8 f16/bf16, 4 f32) and loads them with one load
 * a step, the BN / V lanes of a tile row reading it whole and the other lanes of
 * the warp taking other steps of k. So a block has 256 V / BN "slots" of k (32 for
 * bf16 on 64-wide tiles), and U steps ahead hold 16 U bytes of B: as much in
 * flight for bf16 as for f32, and a quarter of the load instructions. Each slot's
 * partial tile goes to shared memory and they are summed in slot order.
 *
 * On the element path every warp writes its partial tile to shared memory and the
 * threads sum the 8 partials of each element in warp order. With a split each
 * block's summed tile goes to the scratch and the last block of the tile adds the S
 * of them in split order (mm_split_combine). The reduction order is fixed by the
 * configuration alone (no atomics, no dependence on block order), and the epilogue
 * runs as for the other tiles from the summed tile. */
#include "matmul.h"

enum {
	GEMV_MAX_U = 16,
	GEMV_MAX_COLS = 4,      /* columns a thread: BN / 32 */
	GEMV_MAX_ROWS = 8,      /* BM */
	GEMV_VEC_REGS = 96,     /* vector path: registers for the values in flight and
				   the sums (4 a chunk of B, one an element of A or a
				   sum), under the 128 of two blocks per SM */
};

/* How a tile is summed: element by element, the same beside the vector path in
 * one kernel (light: half the steps ahead; ptxas spilled up to 288 bytes in the
 * two loops where they had all), or by 16-byte chunks of B. */
typedef enum { GEMV_ELEM, GEMV_ELEM_LIGHT, GEMV_VEC } GemvPath;

/* Steps of k loaded ahead by the copy of the K loop for R live rows: R * U A
 * elements and U * x->gcols B elements held at once (light: half) */
static int gemv_steps(int R, int cols, bool light)
{
	return (R <= 2 ? 16 : R == 4 ? 8 : 4) * 2 / cols / (light ? 2 : 1);
}

/* Element (row, col) of operand w of the current tile's batch, from global memory,
 * as f32 (row, col inside the operand). */
static LLVMValueRef gload(Mm *x, int w, LLVMValueRef row, LLVMValueRef col)
{
	CgModule *m = x->kb->m;
	LLVMValueRef off = mm_add(x, x->base[w], mm_add(x, mm_mul(x, row, x->ost[w][x->rank - 2]),
						 mm_mul(x, col, x->ost[w][x->rank - 1])));
	LLVMTypeRef rt = mm_raw_type(x);
	LLVMValueRef v = LLVMBuildLoad2(x->b, rt, LLVMBuildGEP2(x->b, rt, x->src[w], &off, 1, ""), "");
	LLVMSetAlignment(v, (unsigned)x->es);
	if (x->dt == DT_F32)
		return LLVMBuildBitCast(x->b, v, m->t_f32, "");
	if (x->dt == DT_F16)
		return LLVMBuildFPExt(x->b, LLVMBuildBitCast(x->b, v, m->t_f16, ""), m->t_f32, "");
	v = LLVMBuildShl(x->b, LLVMBuildZExt(x->b, v, m->t_i32, ""), mm_i32c(x, 16), "");
	return LLVMBuildBitCast(x->b, v, m->t_f32, "");
}

/* Byte offset of warp w's partial of tile element (row, col): after the staged tile. */
static LLVMValueRef gemv_partial(Mm *x, LLVMValueRef w, LLVMValueRef row, LLVMValueRef col)
{
	const MmConfig *c = x->c;
	int base = c->bm * (c->bn + MM_EPI_PAD) * 4;
	LLVMValueRef i = mm_add(x, mm_mulc(x, mm_add(x, mm_mulc(x, w, c->bm), row), c->bn), col);
	return mm_smem_at(x, mm_to_ot(x, mm_addc(x, mm_mulc(x, i, 4), base)));
}

/* The tile's rows for the copy of R live rows (rows, the live ones, at most R): a
 * row past them reads row m0, whose sums are never stored. */
static void gemv_rows(Mm *x, int R, LLVMValueRef rows, LLVMValueRef *row)
{
	for (int r = 0; r < R; r++)
		row[r] = r ? LLVMBuildSelect(x->b, mm_lt(x, mm_i64c(x, r), rows),
					     mm_addc(x, x->m0, r), x->m0, "") : x->m0;
}

/* The steps of k of a thread that starts at *start = kbeg + first and steps by
 * `stride` up to kend: ceil((kend - *start) / stride), none past kend. */
static LLVMValueRef gemv_nsteps(Mm *x, LLVMValueRef kbeg, LLVMValueRef kend, LLVMValueRef first,
				int stride, LLVMValueRef *start)
{
	*start = mm_add(x, kbeg, first);
	LLVMValueRef has = mm_lt(x, *start, kend);
	LLVMValueRef len = LLVMBuildSelect(x->b, has, LLVMBuildSub(x->b, kend, *start, ""),
					   mm_i64c(x, 0), "");
	return mm_ceil_div(x, len, stride);
}

/* Opens the copy of the K loop for R live rows (R = 1, 2, 4 ... BM, in turn):
 * the tile goes there where its live rows are at most R. Returns the block that
 * tests the next R (NULL after BM), to be entered when this copy is built. */
static LLVMBasicBlockRef gemv_copy_begin(Mm *x, int R, LLVMValueRef rows)
{
	CgKb *kb = x->kb;
	LLVMContextRef ctx = kb->m->ctx;
	LLVMBasicBlockRef bthis = LLVMAppendBasicBlockInContext(ctx, kb->fn, "gemv.rows");
	LLVMBasicBlockRef bnext = R < x->c->bm ?
		LLVMAppendBasicBlockInContext(ctx, kb->fn, "gemv.more") : NULL;
	if (bnext)
		LLVMBuildCondBr(x->b, mm_lt(x, rows, mm_i64c(x, R + 1)), bthis, bnext);
	else
		LLVMBuildBr(x->b, bthis);
	LLVMPositionBuilderAtEnd(x->b, bthis);
	return bnext;
}

/* Closes a copy: on to bjoin, and the builder to the next test. */
static void gemv_copy_end(Mm *x, LLVMBasicBlockRef bnext, LLVMBasicBlockRef bjoin)
{
	LLVMBuildBr(x->b, bjoin);
	if (bnext)
		LLVMPositionBuilderAtEnd(x->b, bnext);
}

/* U steps of k from k0 (all inside the thread's share), every load before the
 * first FMA: accumulator r * x->gcols + j gains A[row r][k] * B[k][col j] in k
 * order. A row past the tile's live rows reads row m0, a column past N column 0:
 * their sums are never stored. */
static void gemv_steps_at(Mm *x, int R, int U, LLVMValueRef k0, const LLVMValueRef *row,
			  const LLVMValueRef *col)
{
	CgModule *m = x->kb->m;
	LLVMValueRef a[GEMV_MAX_ROWS][GEMV_MAX_U], bv[GEMV_MAX_U][GEMV_MAX_COLS];
	for (int u = 0; u < U; u++) {
		LLVMValueRef k = u ? mm_addc(x, k0, (int64_t)u * MM_GEMV_WARPS) : k0;
		for (int j = 0; j < x->gcols; j++)
			bv[u][j] = gload(x, 1, k, col[j]);
		for (int r = 0; r < R; r++)
			a[r][u] = gload(x, 0, row[r], k);
	}
	for (int u = 0; u < U; u++)
		for (int r = 0; r < R; r++)
			for (int j = 0; j < x->gcols; j++) {
				LLVMValueRef e = mm_i64c(x, r * x->gcols + j);
				LLVMValueRef args[3] = {a[r][u], bv[u][j], mm_acc_load(x, e)};
				mm_acc_store(x, e, mm_intrinsic(x, "llvm.fmuladd.f32", &m->t_f32, 1, args, 3));
			}
}

/* The K loop of a thread for R live rows of its tile (R a power of two; rows, the
 * tile's live rows, is at most R): k from kbeg + warp to kend by MM_GEMV_WARPS, U
 * steps an iteration while U fit, then one at a time. */
static void gemv_k_loop(Mm *x, int R, bool light, LLVMValueRef rows, LLVMValueRef kbeg,
			LLVMValueRef kend, LLVMValueRef warp, const LLVMValueRef *col,
			const LLVMValueRef *cok)
{
	CgKb *kb = x->kb;
	int U = gemv_steps(R, x->gcols, light);
	LLVMValueRef row[GEMV_MAX_ROWS], cc[GEMV_MAX_COLS];
	gemv_rows(x, R, rows, row);
	for (int j = 0; j < x->gcols; j++)
		cc[j] = LLVMBuildSelect(x->b, cok[j], col[j], mm_i64c(x, 0), "");
	/* the thread's steps from start, in nfull groups of U and the rest */
	LLVMValueRef start;
	LLVMValueRef nsteps = gemv_nsteps(x, kbeg, kend, warp, MM_GEMV_WARPS, &start);
	LLVMValueRef nfull = mm_udivc(x, nsteps, U);
	CgLoop lk;
	cg_loop_begin(kb, &lk, mm_i64c(x, 0), nfull, mm_i64c(x, 1));
	gemv_steps_at(x, R, U, mm_add(x, start, mm_mulc(x, lk.i, (int64_t)U * MM_GEMV_WARPS)), row, cc);
	cg_loop_end(kb, &lk);
	CgLoop lr;
	cg_loop_begin(kb, &lr, mm_add(x, start, mm_mulc(x, nfull, (int64_t)U * MM_GEMV_WARPS)), kend,
		      mm_i64c(x, MM_GEMV_WARPS));
	gemv_steps_at(x, R, 1, lr.i, row, cc);
	cg_loop_end(kb, &lr);
}

/* After the barrier that ends the K loop: the n partial tiles of every element
 * summed in order (warps, or slots of k); element q0 + tid of the tile is then the
 * thread's accumulator q0 / MM_THREADS (x->nacc set so). With `rows` only the
 * tile's live rows are read (the others are zero; their partials were not
 * written). */
static void gemv_sum_partials(Mm *x, int n, LLVMValueRef rows)
{
	CgKb *kb = x->kb;
	CgModule *m = kb->m;
	const MmConfig *c = x->c;
	x->nacc = c->bm * c->bn / MM_THREADS;
	LLVMValueRef tid = mm_phase_begin(x);
	for (int q0 = 0; q0 < c->bm * c->bn; q0 += MM_THREADS) {
		LLVMValueRef q = mm_addc(x, tid, q0);
		LLVMValueRef row = mm_udivc(x, q, c->bn), cc = mm_uremc(x, q, c->bn);
		LLVMValueRef e = mm_i64c(x, q0 / MM_THREADS);
		LLVMBasicBlockRef bnext = NULL;
		if (rows) {
			mm_acc_store(x, e, LLVMConstReal(m->t_f32, 0));
			LLVMBasicBlockRef blive = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "gemv.live");
			bnext = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "gemv.next");
			LLVMBuildCondBr(x->b, mm_lt(x, row, rows), blive, bnext);
			LLVMPositionBuilderAtEnd(x->b, blive);
		}
		LLVMValueRef sum = NULL;
		for (int w = 0; w < n; w++) {
			LLVMValueRef v = LLVMBuildLoad2(x->b, m->t_f32,
							gemv_partial(x, mm_i64c(x, w), row, cc), "");
			LLVMSetAlignment(v, 4);
			sum = sum ? LLVMBuildFAdd(x->b, sum, v, "") : v;
		}
		mm_acc_store(x, e, sum);
		if (bnext) {
			LLVMBuildBr(x->b, bnext);
			LLVMPositionBuilderAtEnd(x->b, bnext);
		}
	}
	mm_phase_end(x);
}

/* The summed tile element by element: thread (warp w, lane l) owns x->gcols
 * consecutive columns from l * gcols and the steps k = w, w + 8 ... of the share
 * [kbeg, kend); each warp's partial tile goes to shared memory and the 8 are added
 * in warp order. Element q0 + tid of the tile is then the thread's accumulator q0 /
 * MM_THREADS (x->nacc set so). */
static void gemv_elem_sum(Mm *x, bool light, LLVMValueRef rows, LLVMValueRef kbeg,
			  LLVMValueRef kend)
{
	CgKb *kb = x->kb;
	CgModule *m = kb->m;
	const MmConfig *c = x->c;
	LLVMValueRef tid = mm_phase_begin(x);
	LLVMValueRef warp = mm_udivc(x, tid, 32), lane = mm_uremc(x, tid, 32);
	for (int e = 0; e < c->bm * x->gcols; e++)
		mm_acc_store(x, mm_i64c(x, e), LLVMConstReal(m->t_f32, 0));
	LLVMValueRef col[GEMV_MAX_COLS], cok[GEMV_MAX_COLS];
	for (int j = 0; j < x->gcols; j++) {
		col[j] = mm_add(x, x->n0, mm_addc(x, mm_mulc(x, lane, x->gcols), j));
		cok[j] = mm_lt(x, col[j], x->N);
	}
	/* the copy of the K loop for the tile's live rows */
	LLVMBasicBlockRef bjoin = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "gemv.k.done");
	for (int R = 1; R <= c->bm; R *= 2) {
		LLVMBasicBlockRef bnext = gemv_copy_begin(x, R, rows);
		gemv_k_loop(x, R, light, rows, kbeg, kend, warp, col, cok);
		gemv_copy_end(x, bnext, bjoin);
	}
	LLVMPositionBuilderAtEnd(x->b, bjoin);
	/* the partial tile of this warp */
	for (int i = 0; i < c->bm; i++)
		for (int j = 0; j < x->gcols; j++) {
			LLVMValueRef p = gemv_partial(x, warp, mm_i64c(x, i),
						      mm_addc(x, mm_mulc(x, lane, x->gcols), j));
			LLVMValueRef v = mm_acc_load(x, mm_i64c(x, i * x->gcols + j));
			LLVMSetAlignment(LLVMBuildStore(x->b, v, p), 4);
		}
	mm_phase_end(x);
	mm_barrier(x);

	/* the 8 partials summed in warp order */
	gemv_sum_partials(x, MM_GEMV_WARPS, NULL);
}

/* Vector path: steps of k a thread loads ahead for R live rows, V columns a
 * thread: the most (16 down to 1) whose values in flight and sums fit
 * GEMV_VEC_REGS (a chunk of B takes 4 registers, an element of A or a sum one,
 * a row's address two). */
static int gemv_vec_steps(int R, int V)
{
	int U = GEMV_MAX_U;
	while (U > 1 && 4 * U + R * U + R * V + 2 * R > GEMV_VEC_REGS)
		U /= 2;
	return U;
}

/* Element j of a 16-byte chunk of B (four i32 words) as f32. */
static LLVMValueRef gemv_unpack(Mm *x, LLVMValueRef chunk, int j)
{
	CgModule *m = x->kb->m;
	if (x->es == 4)
		return LLVMBuildBitCast(x->b, LLVMBuildExtractElement(x->b, chunk, mm_i32c(x, j), ""),
					m->t_f32, "");
	LLVMValueRef w = LLVMBuildExtractElement(x->b, chunk, mm_i32c(x, j / 2), "");
	if (x->dt == DT_BF16) {
		/* the low half shifted up, the high half kept in place */
		LLVMValueRef v = j % 2 ? LLVMBuildAnd(x->b, w, mm_i32c(x, (int)0xffff0000u), "")
				       : LLVMBuildShl(x->b, w, mm_i32c(x, 16), "");
		return LLVMBuildBitCast(x->b, v, m->t_f32, "");
	}
	if (j % 2)
		w = LLVMBuildLShr(x->b, w, mm_i32c(x, 16), "");
	LLVMValueRef h = LLVMBuildBitCast(x->b, LLVMBuildTrunc(x->b, w, m->t_i16, ""), m->t_f16, "");
	return LLVMBuildFPExt(x->b, h, m->t_f32, "");
}

/* The 16-byte chunk of B at (k, col): col a multiple of V, B's chunks aligned. */
static LLVMValueRef gemv_chunk(Mm *x, LLVMValueRef k, LLVMValueRef col)
{
	CgModule *m = x->kb->m;
	LLVMValueRef off = mm_add(x, x->base[1], mm_add(x, mm_mul(x, k, x->ost[1][x->rank - 2]), col));
	LLVMTypeRef rt = mm_raw_type(x), vt = LLVMVectorType(m->t_i32, 4);
	LLVMValueRef v = LLVMBuildLoad2(x->b, vt, LLVMBuildGEP2(x->b, rt, x->src[1], &off, 1, ""), "");
	LLVMSetAlignment(v, 16);
	return v;
}

/* U steps of k from k0, nslots apart, every load before the first FMA: sum r * V +
 * j gains A[row r][k] * B[k][col + j] in k order. */
static void gemv_vec_steps_at(Mm *x, int R, int U, int nslots, LLVMValueRef k0,
			      const LLVMValueRef *row, LLVMValueRef col)
{
	CgModule *m = x->kb->m;
	int V = x->ce;
	LLVMValueRef a[GEMV_MAX_ROWS][GEMV_MAX_U], bw[GEMV_MAX_U];
	for (int u = 0; u < U; u++) {
		LLVMValueRef k = u ? mm_addc(x, k0, (int64_t)u * nslots) : k0;
		bw[u] = gemv_chunk(x, k, col);
		for (int r = 0; r < R; r++)
			a[r][u] = gload(x, 0, row[r], k);
	}
	for (int u = 0; u < U; u++)
		for (int j = 0; j < V; j++) {
			LLVMValueRef bj = gemv_unpack(x, bw[u], j);
			for (int r = 0; r < R; r++) {
				LLVMValueRef e = mm_i64c(x, r * V + j);
				LLVMValueRef args[3] = {a[r][u], bj, mm_acc_load(x, e)};
				mm_acc_store(x, e, mm_intrinsic(x, "llvm.fmuladd.f32", &m->t_f32, 1, args, 3));
			}
		}
}

/* The summed tile by 16-byte chunks of B (see the top of the file): thread (warp
 * w, lane l) owns the V columns from (l mod L) V, L = BN / V, and the steps k =
 * kbeg + s, s + nslots ... of slot s = w * (32 / L) + l / L; each slot's partial
 * rows (the live ones) go to shared memory and are added in slot order. Element q0
 * + tid of the tile is then the thread's accumulator q0 / MM_THREADS. */
static void gemv_vec_sum(Mm *x, LLVMValueRef rows, LLVMValueRef kbeg, LLVMValueRef kend)
{
	CgKb *kb = x->kb;
	CgModule *m = kb->m;
	const MmConfig *c = x->c;
	int V = x->ce, L = c->bn / V, nslots = MM_THREADS / L;
	LLVMValueRef tid = mm_phase_begin(x);
	LLVMValueRef slot = mm_udivc(x, tid, L), lc = mm_mulc(x, mm_uremc(x, tid, L), V);
	for (int e = 0; e < c->bm * V; e++)
		mm_acc_store(x, mm_i64c(x, e), LLVMConstReal(m->t_f32, 0));
	LLVMValueRef col = mm_add(x, x->n0, lc);
	col = LLVMBuildSelect(x->b, mm_lt(x, col, x->N), col, mm_i64c(x, 0), "");
	/* the slot's steps from start, in groups of U and the rest one at a time */
	LLVMValueRef start;
	LLVMValueRef nsteps = gemv_nsteps(x, kbeg, kend, slot, nslots, &start);
	LLVMBasicBlockRef bjoin = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "gemv.vec.done");
	for (int R = 1; R <= c->bm; R *= 2) {
		LLVMBasicBlockRef bnext = gemv_copy_begin(x, R, rows);
		LLVMValueRef row[GEMV_MAX_ROWS];
		gemv_rows(x, R, rows, row);
		int U = gemv_vec_steps(R, V);
		LLVMValueRef nfull = mm_udivc(x, nsteps, U);
		CgLoop lk;
		cg_loop_begin(kb, &lk, mm_i64c(x, 0), nfull, mm_i64c(x, 1));
		gemv_vec_steps_at(x, R, U, nslots,
				  mm_add(x, start, mm_mulc(x, lk.i, (int64_t)U * nslots)), row, col);
		cg_loop_end(kb, &lk);
		CgLoop lr;
		cg_loop_begin(kb, &lr, mm_add(x, start, mm_mulc(x, nfull, (int64_t)U * nslots)), kend,
			      mm_i64c(x, nslots));
		gemv_vec_steps_at(x, R, 1, nslots, lr.i, row, col);
		cg_loop_end(kb, &lr);
		/* the slot's partial of the R rows, four sums a store */
		LLVMTypeRef v4 = LLVMVectorType(m->t_f32, 4);
		for (int r = 0; r < R; r++)
			for (int j = 0; j < V; j += 4) {
				LLVMValueRef v = LLVMGetUndef(v4);
				for (int i = 0; i < 4; i++)
					v = LLVMBuildInsertElement(x->b, v,
						mm_acc_load(x, mm_i64c(x, r * V + j + i)), mm_i32c(x, i), "");
				LLVMValueRef p = gemv_partial(x, slot, mm_i64c(x, r), mm_addc(x, lc, j));
				LLVMSetAlignment(LLVMBuildStore(x->b, v, p), 16);
			}
		gemv_copy_end(x, bnext, bjoin);
	}
	LLVMPositionBuilderAtEnd(x->b, bjoin);
	mm_phase_end(x);
	mm_barrier(x);

	/* the live rows' partials summed in slot order */
	gemv_sum_partials(x, nslots, rows);
}

/* The loop over the output tiles (and split shares) of this block, the tile summed
 * by the given path. */
static void gemv_tiles(Mm *x, GemvPath path, LLVMValueRef block, LLVMValueRef nblocks,
		       const int *wr, int nw)
{
	CgKb *kb = x->kb;
	const MmConfig *c = x->c;
	LLVMValueRef nb, ntm, ntn;
	LLVMValueRef per_batch = mm_tile_grid(x, &nb, &ntm, &ntn);
	LLVMValueRef total = mm_mul(x, nb, per_batch);
	/* split-K as in the tile loop (mm_split_share), over K itself */
	int S = c->split > 1 ? c->split : 1;
	int G = x->ngroup > 1 ? x->ngroup : 1;
	CgLoop lt_;
	cg_loop_begin(kb, &lt_, block, mm_mulc(x, total, (int64_t)S * G), nblocks);
	kb->nmemo = 0;
	LLVMValueRef t = lt_.i, split = NULL;
	LLVMBasicBlockRef skip = mm_group_units(x, &t, mm_mulc(x, total, S));
	LLVMValueRef kbeg = mm_i64c(x, 0), kend = x->K;
	if (S > 1)
		split = mm_split_share(x, &t, S, x->K, &kbeg, &kend);
	LLVMValueRef f = LLVMBuildUDiv(x->b, t, per_batch, "");
	LLVMValueRef within = LLVMBuildURem(x->b, t, per_batch, "");
	x->m0 = mm_mulc(x, LLVMBuildUDiv(x->b, within, ntn, ""), c->bm);
	x->n0 = mm_mulc(x, LLVMBuildURem(x->b, within, ntn, ""), c->bn);
	mm_tile_batch(x, f);
	LLVMValueRef rows = mm_min64(x, LLVMBuildSub(x->b, x->M, x->m0, ""), mm_i64c(x, c->bm));
	int nacc0 = x->nacc;

	if (path == GEMV_VEC)
		gemv_vec_sum(x, rows, kbeg, kend);
	else
		gemv_elem_sum(x, path == GEMV_ELEM_LIGHT, rows, kbeg, kend);
	x->nacc = c->bm * c->bn / MM_THREADS;
	LLVMBasicBlockRef after = NULL;
	if (S > 1) {
		after = mm_split_combine(x, mm_group_tile(x, t, total), split, mm_mulc(x, total, G));
		/* the flag of the last block lies where the tile is staged */
		mm_barrier(x);
	}
	LLVMValueRef tid = mm_phase_begin(x);
	for (int q0 = 0; q0 < c->bm * c->bn; q0 += MM_THREADS) {
		LLVMValueRef q = mm_addc(x, tid, q0);
		LLVMValueRef row = mm_udivc(x, q, c->bn), cc = mm_uremc(x, q, c->bn);
		LLVMValueRef v = mm_acc_load(x, mm_i64c(x, q0 / MM_THREADS));
		LLVMSetAlignment(LLVMBuildStore(x->b, v, mm_staged(x, row, cc)), 4);
	}
	mm_phase_end(x);
	mm_barrier(x);
	mm_epi_walk(x, 0, wr, nw);
	if (after) {
		LLVMBuildBr(x->b, after);
		LLVMPositionBuilderAtEnd(x->b, after);
	}
	x->nacc = nacc0;
	/* nobody writes the partials of the next tile before everyone is done */
	mm_barrier(x);
	if (skip) {
		LLVMBuildBr(x->b, skip);
		LLVMPositionBuilderAtEnd(x->b, skip);
	}
	cg_loop_end(kb, &lt_);
}

/* Two copies of the tile loop, chosen once per launch: the vector path where B's
 * rows may be read as 16-byte chunks (B not stored transposed, its chunks aligned,
 * N a multiple of a chunk), the element path otherwise. Apart, neither holds the
 * other's registers (ptxas spilled where one loop had both paths). */
void mm_gemv_tile_loop(Mm *x, LLVMValueRef block, LLVMValueRef nblocks, const int *wr, int nw)
{
	CgKb *kb = x->kb;
	CgModule *m = kb->m;
	if (x->trans[1]) {
		gemv_tiles(x, GEMV_ELEM, block, nblocks, wr, nw);
		return;
	}
	LLVMBasicBlockRef bvec = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "gemv.vec");
	LLVMBasicBlockRef bel = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "gemv.elem");
	LLVMBasicBlockRef bdone = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "gemv.done");
	LLVMValueRef whole = LLVMBuildICmp(x->b, LLVMIntEQ, mm_uremc(x, x->N, x->ce), mm_i64c(x, 0), "");
	LLVMBuildCondBr(x->b, LLVMBuildAnd(x->b, x->fast[1], whole, ""), bvec, bel);
	for (int vec = 1; vec >= 0; vec--) {
		LLVMPositionBuilderAtEnd(x->b, vec ? bvec : bel);
		gemv_tiles(x, vec ? GEMV_VEC : GEMV_ELEM_LIGHT, block, nblocks, wr, nw);
		LLVMBuildBr(x->b, bdone);
	}
	LLVMPositionBuilderAtEnd(x->b, bdone);
}
