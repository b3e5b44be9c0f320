/* matmul_epilogue.c: the epilogue of the tiled matmul kernels, and the split-K
 * combine that runs before it.
 *
 * The epilogue runs in registers: every accumulator of a thread becomes the
 * matmul's value at its (batch, row, column) in the evaluator's memo, and every
 * written tensor of the kernel is evaluated there (bias, residual, activation,
 * cast: anything the elementwise evaluator does) and stored, predicated on the
 * edges. The accumulators go through a staged f32 tile in shared memory first, so
 * that the stores are coalesced and, where they can be, vectors (mm_epilogue).
 *
 * Under a wave of output tiles the split-K configurations (`...skS`) give each tile
 * S blocks over contiguous shares of K: each writes its accumulators to the launch's
 * scratch, and the last block of the tile to finish sums the S partials in split
 * order, zeroes them, and runs the epilogue (mm_split_combine): the same bytes from
 * run to run, no float atomics; the host runs the same units in order. */
#include "matmul.h"

/* The output index of the GEMM's (gr, gc) in the current tile's batch, and the op's
 * value there from accumulator v: the matmul's as cg_eval_matmul gives it (f32 for
 * f16/bf16); a conv's with its bias (matmul_conv.c). */
static CgIdx out_at(Mm *x, LLVMValueRef gr, LLVMValueRef gc)
{
	CgIdx at;
	if (x->is_conv) {
		mm_conv_out_at(x, gr, gc, &at);
		return at;
	}
	at = cg_idx_of(x->rank, x->to->shape);
	at.has_dims = true;
	for (int d = 0; d < x->rank - 2; d++)
		at.i[d] = x->bpos[d];
	at.i[x->rank - 2] = gr;
	at.i[x->rank - 1] = gc;
	return at;
}

static LLVMValueRef out_value(Mm *x, const CgIdx *at, LLVMValueRef v)
{
	return x->is_conv ? mm_conv_value(x, at, v) : v;
}

/* The index of written tensor w for the op's output position at: the same position,
 * or for a permute or swap_dims of the output (what the Matmul fuser takes after an
 * attention op: passes/fuser_matmul.c) the position the view moves it to. Evaluated
 * there, the view maps it back to at, whose value the memo holds. */
static CgIdx written_at(Mm *x, int w, const CgIdx *at)
{
	CgKb *kb = x->kb;
	CgIdx y = *at;
	y.shape = kb->tinfo[w]->shape;
	int p = kb->producer[w];
	const RelOp *op = p >= 0 ? &kb->spec->ops[p] : NULL;
	if (!op || op->t[0].id != x->to->id || !at->has_dims)
		return y;
	if (op->kind == OP_PERMUTE) {
		y.flat = NULL;
		for (int d = 0; d < op->attr.n && d < y.rank; d++)
			y.i[d] = at->i[op->attr.axes[d]];
	} else if (op->kind == OP_SWAP_DIMS) {
		int a = op->attr.axes[0], b = op->attr.axes[1];
		y.flat = NULL;
		y.i[a] = at->i[b];
		y.i[b] = at->i[a];
	}
	return y;
}

/* The epilogue of one element at output position (gr, gc) of the current tile's batch
 * with accumulator v: every written tensor is evaluated there and stored. */
static void epi_one(Mm *x, LLVMValueRef gr, LLVMValueRef gc, LLVMValueRef v, const int *wr,
		    int nw)
{
	CgKb *kb = x->kb;
	int mark = cg_memo_mark(kb);
	CgIdx at = out_at(x, gr, gc);
	cg_memo_add(kb, x->to->id, &at, out_value(x, &at, v));
	for (int k = 0; k < nw; k++) {
		CgIdx y = written_at(x, wr[k], &at);
		LLVMValueRef val = cg_eval(kb, wr[k], &y);
		cg_store(kb, wr[k], cg_offset(kb, &y), val);
	}
	cg_memo_release(kb, mark);
}

/* The storage bits of compute value v of a written tensor of dtype dt, for the
 * vector stores: NULL where dt has none. */
static LLVMValueRef store_bits(Mm *x, LLVMValueRef v, DType dt)
{
	CgModule *m = x->kb->m;
	switch (dt) {
	case DT_BF16: {
		LLVMValueRef r = cg_convert(x->kb, v, DT_F32, DT_BF16);
		r = LLVMBuildLShr(x->b, LLVMBuildBitCast(x->b, r, m->t_i32, ""), mm_i32c(x, 16), "");
		return LLVMBuildTrunc(x->b, r, m->t_i16, "");
	}
	case DT_F16:
		return LLVMBuildBitCast(x->b, LLVMBuildFPTrunc(x->b, v, m->t_f16, ""), m->t_i16, "");
	case DT_F32:
		return LLVMBuildBitCast(x->b, v, m->t_i32, "");
	case DT_I32: case DT_I16:
		return v;
	default:
		return NULL;
	}
}

static bool vector_dtype(DType dt)
{
	return dt == DT_BF16 || dt == DT_F16 || dt == DT_F32 || dt == DT_I32 || dt == DT_I16;
}

/* Whether the epilogue's vector stores apply: every written tensor of a vector dtype,
 * N a multiple of MM_EPI_V, every written buffer aligned to a vector. */
LLVMValueRef mm_vector_ok(Mm *x, const int *wr, int nw)
{
	CgKb *kb = x->kb;
	LLVMValueRef no = LLVMConstInt(kb->m->t_i1, 0, 0);
	if (nw > MM_EPI_MAXW)
		return no;
	LLVMValueRef ok = LLVMBuildICmp(x->b, LLVMIntEQ, mm_uremc(x, x->N, MM_EPI_V), mm_i64c(x, 0), "");
	for (int k = 0; k < nw; k++) {
		DType dt = (DType)kb->tinfo[wr[k]]->dtype;
		if (!vector_dtype(dt))
			return no;
		LLVMValueRef p = LLVMBuildPtrToInt(x->b, kb->buf[wr[k]], kb->m->t_i64, "");
		ok = LLVMBuildAnd(x->b, ok, LLVMBuildICmp(x->b, LLVMIntEQ,
			mm_uremc(x, p, MM_EPI_V * ir_dtype_size(dt)), mm_i64c(x, 0), ""), "");
	}
	return ok;
}

/* Pointer to staged float (row, col) of the epilogue buffer (ot values). */
LLVMValueRef mm_staged(Mm *x, LLVMValueRef row, LLVMValueRef col)
{
	int ld = x->c->bn + MM_EPI_PAD;
	LLVMValueRef e = mm_add(x, mm_mulc(x, mm_to_ot(x, row), ld), mm_to_ot(x, col));
	LLVMValueRef o = mm_addc(x, mm_mulc(x, e, 4), x->epi_base);
	return mm_smem_at(x, x->epi_off ? mm_add(x, o, x->epi_off) : o);
}

/* MM_EPI_V consecutive columns from (gr, gc) whose staged values start at (r, cc). */
static void epi_vector(Mm *x, LLVMValueRef r, LLVMValueRef cc, LLVMValueRef gr,
		       LLVMValueRef gc, const int *wr, int nw)
{
	CgKb *kb = x->kb;
	CgModule *m = kb->m;
	LLVMTypeRef v4 = LLVMVectorType(m->t_f32, 4);
	LLVMValueRef val[MM_EPI_V];
	for (int h = 0; h < MM_EPI_V / 4; h++) {
		LLVMValueRef v = LLVMBuildLoad2(x->b, v4, mm_staged(x, r, mm_addc(x, cc, h * 4)), "");
		LLVMSetAlignment(v, 16);
		for (int q = 0; q < 4; q++)
			val[h * 4 + q] = LLVMBuildExtractElement(x->b, v, mm_i32c(x, q), "");
	}
	LLVMValueRef bits[MM_EPI_MAXW][MM_EPI_V];
	/* each written tensor's offset of the first column (the columns are its last
	 * axis: a view written_at follows keeps it) */
	LLVMValueRef off[MM_EPI_MAXW];
	for (int e = 0; e < MM_EPI_V; e++) {
		int mark = cg_memo_mark(kb);
		CgIdx at = out_at(x, gr, e ? mm_addc(x, gc, e) : gc);
		cg_memo_add(kb, x->to->id, &at, out_value(x, &at, val[e]));
		for (int k = 0; k < nw; k++) {
			CgIdx y = written_at(x, wr[k], &at);
			bits[k][e] = store_bits(x, cg_eval(kb, wr[k], &y), (DType)kb->tinfo[wr[k]]->dtype);
			if (e == 0)
				off[k] = cg_offset(kb, &y);
		}
		cg_memo_release(kb, mark);
	}
	for (int k = 0; k < nw; k++) {
		LLVMTypeRef et = LLVMTypeOf(bits[k][0]);
		LLVMValueRef v = LLVMGetUndef(LLVMVectorType(et, MM_EPI_V));
		for (int e = 0; e < MM_EPI_V; e++)
			v = LLVMBuildInsertElement(x->b, v, bits[k][e], mm_i32c(x, e), "");
		LLVMValueRef p = LLVMBuildGEP2(x->b, et, kb->buf[wr[k]], &off[k], 1, "");
		LLVMSetAlignment(LLVMBuildStore(x->b, v, p), MM_EPI_V * LLVMGetIntTypeWidth(et) / 8);
	}
}

/* The epilogue, through shared memory: in passes of epi_rows rows of the block tile,
 * every thread writes its accumulators of those rows to a staged f32 tile; then the
 * threads walk the staged rows MM_EPI_V consecutive columns at a time (coalesced),
 * evaluate the written tensors there and store them, as one vector per tensor where
 * the columns are inside and the buffers allow, else element by element. One copy
 * of the epilogue's code serves the vector step, one the edge. */
void mm_epilogue(Mm *x, const int *wr, int nw)
{
	CgKb *kb = x->kb;
	CgModule *m = kb->m;
	const MmConfig *c = x->c;
	int R = x->epi_rows;
	LLVMTypeRef f2 = LLVMVectorType(m->t_f32, 2);
	/* a warp-specialized kernel's passes (a few rows each, beside the stages: 4 of
	 * 32 rows for 128x256) run as a loop, not one copy of the code each */
	bool loop = x->gpu && c->ws && c->bm / R > 1;
	CgLoop lh;
	if (loop) {
		cg_loop_begin(kb, &lh, mm_i64c(x, 0), mm_i64c(x, c->bm / R), mm_i64c(x, 1));
		x->epi_h = mm_mulc(x, lh.i, R);
	}
	for (int h = 0; h < (loop ? 1 : c->bm / R); h++) {
		/* nobody reads the stages (or the previous pass) any more */
		mm_barrier(x);
		LLVMValueRef tid = mm_opaque_tid(x, mm_phase_begin(x));
		for (int e = 0; e < x->nacc; e += 2) {
			LLVMValueRef row, col;
			if (c->tc)
				mm_tc_pos(x, tid, mm_i64c(x, e), &row, &col);
			else
				mm_simt_pos(x, tid, e, &row, &col);
			LLVMValueRef lr = LLVMBuildSub(x->b, row, loop ? x->epi_h :
						       mm_i64c(x, (int64_t)h * R), "");
			LLVMValueRef in = LLVMBuildICmp(x->b, LLVMIntULT, lr, mm_i64c(x, R), "");
			LLVMBasicBlockRef bw = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "epi.stage");
			LLVMBasicBlockRef bn = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "epi.staged");
			LLVMBuildCondBr(x->b, in, bw, bn);
			LLVMPositionBuilderAtEnd(x->b, bw);
			LLVMValueRef v = LLVMGetUndef(f2);
			v = LLVMBuildInsertElement(x->b, v, mm_acc_load(x, mm_i64c(x, e)),
						   mm_i32c(x, 0), "");
			v = LLVMBuildInsertElement(x->b, v, mm_acc_load(x, mm_i64c(x, e + 1)),
						   mm_i32c(x, 1), "");
			LLVMSetAlignment(LLVMBuildStore(x->b, v, mm_staged(x, lr, col)), 8);
			LLVMBuildBr(x->b, bn);
			LLVMPositionBuilderAtEnd(x->b, bn);
		}
		mm_phase_end(x);
		mm_barrier(x);
		mm_epi_walk(x, h, wr, nw);
	}
	if (loop) {
		cg_loop_end(kb, &lh);
		x->epi_h = NULL;
	}
}

/* The second half of an epilogue pass h: the threads walk the staged rows
 * h*epi_rows .. MM_EPI_V columns at a time, evaluate the written tensors and store
 * them. */
void mm_epi_walk(Mm *x, int h, const int *wr, int nw)
{
	CgKb *kb = x->kb;
	CgModule *m = kb->m;
	const MmConfig *c = x->c;
	int R = x->epi_rows;
	int per_row = c->bn / MM_EPI_V, T = mm_epi_threads(x);
	int steps = (R * per_row + T - 1) / T;
	{
		LLVMValueRef tid = mm_opaque_tid(x, mm_phase_begin(x));
		CgLoop ls;
		cg_loop_begin(kb, &ls, mm_i64c(x, 0), mm_i64c(x, steps), mm_i64c(x, 1));
		LLVMValueRef q = mm_add(x, tid, mm_mulc(x, ls.i, T));
		LLVMValueRef r = mm_udivc(x, q, per_row);
		LLVMValueRef cc = mm_mulc(x, mm_uremc(x, q, per_row), MM_EPI_V);
		LLVMValueRef gr = mm_add(x, x->m0, x->epi_h ? mm_add(x, r, x->epi_h) :
					 mm_addc(x, r, (int64_t)h * R));
		LLVMValueRef gc = mm_add(x, x->n0, cc);
		LLVMValueRef inside = LLVMBuildAnd(x->b, mm_lt(x, q, mm_i64c(x, (int64_t)R * per_row)),
						   mm_lt(x, gr, x->M), "");
		LLVMBasicBlockRef bin = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "epi.row");
		LLVMBasicBlockRef bvec = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "epi.vec");
		LLVMBasicBlockRef bedge = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "epi.edge");
		LLVMBasicBlockRef bdone = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "epi.done");
		LLVMBuildCondBr(x->b, inside, bin, bdone);
		LLVMPositionBuilderAtEnd(x->b, bin);
		LLVMValueRef full = LLVMBuildICmp(x->b, LLVMIntSLE, mm_addc(x, gc, MM_EPI_V), x->N, "");
		LLVMBuildCondBr(x->b, LLVMBuildAnd(x->b, full, x->vecok, ""), bvec, bedge);
		LLVMPositionBuilderAtEnd(x->b, bvec);
		epi_vector(x, r, cc, gr, gc, wr, nw);
		LLVMBuildBr(x->b, bdone);
		LLVMPositionBuilderAtEnd(x->b, bedge);
		CgLoop le;
		LLVMValueRef left = LLVMBuildSub(x->b, x->N, gc, "");
		cg_loop_begin(kb, &le, mm_i64c(x, 0), mm_min64(x, left, mm_i64c(x, MM_EPI_V)),
			      mm_i64c(x, 1));
		LLVMValueRef pv = LLVMBuildLoad2(x->b, m->t_f32, mm_staged(x, r, mm_add(x, cc, le.i)), "");
		LLVMSetAlignment(pv, 4);
		epi_one(x, gr, mm_add(x, gc, le.i), pv, wr, nw);
		cg_loop_end(kb, &le);
		LLVMBuildBr(x->b, bdone);
		LLVMPositionBuilderAtEnd(x->b, bdone);
		cg_loop_end(kb, &ls);
		mm_phase_end(x);
	}
}

/* ---- split-K ----------------------------------------------------------------- */

static void fence(Mm *x)
{
	if (x->gpu)
		mm_intrinsic(x, "llvm.nvvm.membar.gl", NULL, 0, NULL, 0);
}

/* Split-K, before the main loop: unit *t (of a tile loop over tiles x S) is split
 * *t % S of tile *t / S (written back to *t); split s takes [s * ks, min(n, (s +
 * 1) * ks)) of 0..n, ks = ceil(n / S), in *beg and *end (an empty share when S
 * does not fit n). Returns the split. */
LLVMValueRef mm_split_share(Mm *x, LLVMValueRef *t, int S, LLVMValueRef n, LLVMValueRef *beg,
			    LLVMValueRef *end)
{
	LLVMValueRef split = LLVMBuildURem(x->b, *t, mm_i64c(x, S), "");
	*t = LLVMBuildUDiv(x->b, *t, mm_i64c(x, S), "");
	LLVMValueRef ks = mm_ceil_div(x, n, S);
	*beg = mm_mul(x, split, ks);
	*end = mm_min64(x, mm_add(x, *beg, ks), n);
	return split;
}

/* Split-K, after the main loop of split `split` of tile `tile` (of `total`): the
 * block's accumulators go to its partial slot of the scratch, the block counts
 * itself in at the tile's counter, and all but the last block of the tile to arrive
 * are done with it. The last resets the counter and replaces every accumulator by
 * the sum of the S partials in split order (its own read back like the others), so
 * the result depends on neither block order nor timing; the epilogue follows as
 * without a split. Returns the block the other blocks continue at (the caller
 * branches there after the epilogue).
 *
 * The scratch: a u32 counter per tile (rounded up to 16 bytes), then per unit
 * (tile * S + split) nacc x MM_THREADS floats, accumulator e of thread t at
 * e * MM_THREADS + t (coalesced writes and reads). The flag "last" is passed
 * through the first word of shared memory, between barriers. The launches of a plan
 * share one scratch (runtime.c; host_exec.c the same) and a later kernel's counters
 * may lie where these partials were, so the last block sets the partials back to
 * zero as it reads them, and the counter too: the kernel leaves zeros (codegen.h). */
LLVMBasicBlockRef mm_split_combine(Mm *x, LLVMValueRef tile, LLVMValueRef split,
				   LLVMValueRef total)
{
	CgKb *kb = x->kb;
	CgModule *m = kb->m;
	int S = x->c->split;
	LLVMValueRef scratch = kb->scratch;
	LLVMValueRef cbytes = mm_bin(x, LLVMAnd, mm_addc(x, mm_mulc(x, total, 4), 15),
				     mm_i64c(x, ~(int64_t)15));
	LLVMValueRef unit = mm_add(x, mm_mulc(x, tile, S), split);
	int64_t ubytes = (int64_t)x->nacc * MM_THREADS * 4;
	/* this block's partial */
	LLVMValueRef tid = mm_phase_begin(x);
	LLVMValueRef ubase = mm_add(x, cbytes, mm_mulc(x, unit, ubytes));
	for (int e = 0; e < x->nacc; e++) {
		LLVMValueRef off = mm_add(x, ubase,
					  mm_mulc(x, mm_addc(x, tid, (int64_t)e * MM_THREADS), 4));
		LLVMValueRef p = LLVMBuildGEP2(x->b, m->t_i8, scratch, &off, 1, "");
		LLVMSetAlignment(LLVMBuildStore(x->b, mm_acc_load(x, mm_i64c(x, e)), p), 4);
	}
	fence(x);
	mm_phase_end(x);
	/* everyone's partial is out (and nobody reads the stages any more) */
	mm_barrier(x);
	/* (a ws kernel's copier may be filling the stages for the next unit: its
	 * flag lies in the epilogue's region, which the epilogue takes after a
	 * barrier) */
	int at = x->gpu && x->c->ws ? x->epi_base : 0;
	LLVMValueRef flagp = mm_smem_at(x, LLVMConstInt(x->ot, (unsigned long long)at, 0));
	tid = mm_phase_begin(x);
	LLVMBasicBlockRef bcount = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "split.count");
	LLVMBasicBlockRef bcounted = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "split.counted");
	LLVMBuildCondBr(x->b, LLVMBuildICmp(x->b, LLVMIntEQ, tid, mm_i64c(x, 0), ""), bcount, bcounted);
	LLVMPositionBuilderAtEnd(x->b, bcount);
	LLVMValueRef cnt = LLVMBuildGEP2(x->b, m->t_i32, scratch, &tile, 1, "");
	LLVMValueRef old = LLVMBuildAtomicRMW(x->b, LLVMAtomicRMWBinOpAdd, cnt, mm_i32c(x, 1),
					      LLVMAtomicOrderingMonotonic, 0);
	LLVMValueRef last = LLVMBuildICmp(x->b, LLVMIntEQ, old, mm_i32c(x, S - 1), "");
	/* the last arrival sets the counter back to zero for the next launch */
	LLVMBasicBlockRef breset = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "split.reset");
	LLVMBasicBlockRef bflag = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "split.flag");
	LLVMBuildCondBr(x->b, last, breset, bflag);
	LLVMPositionBuilderAtEnd(x->b, breset);
	LLVMBuildStore(x->b, mm_i32c(x, 0), cnt);
	LLVMBuildBr(x->b, bflag);
	LLVMPositionBuilderAtEnd(x->b, bflag);
	LLVMValueRef fs = LLVMBuildStore(x->b, LLVMBuildZExt(x->b, last, m->t_i32, ""), flagp);
	LLVMSetVolatile(fs, 1);
	LLVMBuildBr(x->b, bcounted);
	LLVMPositionBuilderAtEnd(x->b, bcounted);
	mm_phase_end(x);
	mm_barrier(x);
	LLVMValueRef flag = LLVMBuildLoad2(x->b, m->t_i32, flagp, "");
	LLVMSetVolatile(flag, 1);
	LLVMBasicBlockRef blast = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "split.last");
	LLVMBasicBlockRef bafter = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "split.done");
	LLVMBuildCondBr(x->b, LLVMBuildICmp(x->b, LLVMIntNE, flag, mm_i32c(x, 0), ""), blast, bafter);
	LLVMPositionBuilderAtEnd(x->b, blast);
	fence(x);
	/* the last block: accumulator e = partial 0 + partial 1 + ... in split order;
	 * the loop over the splits kept a loop (its count opaque on the GPU): unrolled,
	 * ptxas issued every load before the first add and spilled at 128 registers */
	tid = mm_phase_begin(x);
	LLVMValueRef tbase = mm_add(x, cbytes, mm_mulc(x, mm_mulc(x, tile, S), ubytes));
	LLVMValueRef toff = mm_add(x, tbase, mm_mulc(x, tid, 4));
	for (int q = 0; q < 2; q++) {
		CgLoop lq;
		if (q == 1)
			cg_loop_begin(kb, &lq, mm_i64c(x, 1), mm_opaque_tid(x, mm_i64c(x, S)),
				      mm_i64c(x, 1));
		LLVMValueRef qoff = q ? mm_add(x, toff, mm_mul(x, lq.i, mm_i64c(x, ubytes))) : toff;
		for (int e = 0; e < x->nacc; e++) {
			LLVMValueRef o = mm_addc(x, qoff, (int64_t)e * MM_THREADS * 4);
			LLVMValueRef p = LLVMBuildGEP2(x->b, m->t_i8, scratch, &o, 1, "");
			LLVMValueRef v = LLVMBuildLoad2(x->b, m->t_f32, p, "");
			LLVMSetAlignment(v, 4);
			LLVMSetVolatile(v, 1);
			/* read once: back to zero, for the launches after this one */
			LLVMSetAlignment(LLVMBuildStore(x->b, LLVMConstReal(m->t_f32, 0), p), 4);
			mm_acc_store(x, mm_i64c(x, e),
				     q ? LLVMBuildFAdd(x->b, mm_acc_load(x, mm_i64c(x, e)), v, "") : v);
		}
		if (q == 1)
			cg_loop_end(kb, &lq);
	}
	mm_phase_end(x);
	return bafter;
}

/* The block-stride loop over output tiles. */
