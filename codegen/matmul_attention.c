/* matmul_attention.c: the attention op (ir/ops.def) as one flash-attention kernel on
 * the matmul tiles: softmax(scale * q kt + bias) v, the scores never in memory.
 *
 * A block takes 128 rows of q of one batch (8 warps, 16 rows each) and walks the
 * keys 64 at a time. Two tile builders share its shared memory: S (the scores:
 * A = q's rows, the whole head dim in one stage; B = 64 columns of kt) and O (the
 * result: A = the weights P, written by the threads; B = 64 rows of v), each with
 * one A tile and two B buffers (Mm.a_fixed). Per key tile:
 *   - the next tile's K and V are copied (cp.async) while this one's are used; q's
 *     once per block tile;
 *   - S = q kt on the tensor cores (mm_compute_stage, mma.sync m16n8k16), into
 *     registers laid out as mma's accumulators: a thread holds two rows of its warp's
 *     16, four threads (a quad) share each row;
 *   - the online softmax in registers: each score scaled and its bias added (keys
 *     past the end are -inf; a tile no mask reaches skips the tests, `scores`), the
 *     row's max over the quad (two butterfly shuffles; NaN ignored, it reaches the
 *     row through its weight), the new running max m, alpha = exp(m_old - m),
 *     p = exp(s - m), each exp one ex2.approx on the GPU (`exp_`); the thread's
 *     running sum l = l * alpha + its p's; O's accumulators of the row times alpha;
 *     p rounded to the operands' dtype into P's tile in shared memory, and l sums
 *     those rounded weights (the result is a weighted mean of v's rows);
 *   - O += P v on the tensor cores.
 * At the end each row's sum over the quad (the same butterfly), O / l, and the
 * matmul epilogue (matmul_epilogue.c) writes O and what the kernel computes from it.
 *
 * A causal op (attribute causal = c: key j of row i is masked where j > i + c) walks
 * only the key tiles its block's last row reaches, masks the scores past each row's
 * last key in the tiles it walks, and takes its block tiles last rows first, so that
 * the longest walks start first.
 *
 * On the host (the `cpu` backend) the same kernel runs with phases as loops over
 * the threads (matmul.h): a quad's shuffles become an exchange through shared
 * memory between two phases, in the butterfly's order, so the sums are the GPU's.
 * Per-thread state that crosses a phase (the scores, m and l) lives in arrays
 * indexed by thread id there, in registers on the GPU.
 *
 * The configurations: head dims (D of q and kt, E of v) up to 64 or up to 128,
 * f16 and bf16 on sm_80 and later, and f32 under --allow-tf32 (both products on
 * tf32 mma.sync, P rounded to tf32 and l summing those; its stages twice the
 * bytes, one block an SM, head dims past 64 on sm_90 alone) (cg_matmul_variant);
 * the rest runs on the plain evaluator (kernel_matmul.c). On sm_90a the products
 * run on wgmma (attwg*), and the pp configurations let the two warpgroups run out
 * of step: three K/V buffers handed over by mbarriers (key_steps_pp). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matmul.h"

enum {
	AT_NSTATE = 4,           /* per thread: m of its two rows, then l of them */
	AT_RED = MM_THREADS * 2 * 4, /* host: the quad exchange, two floats a thread */
};

typedef struct {
	Mm s, o;                 /* the scores' and the result's tile builders */
	CgKb *kb;
	LLVMBuilderRef b;
	bool gpu;
	int dmax;                /* head dims up to this (64 or 128) */
	int bn;                  /* keys a step (the configuration's BN) */
	MmConfig cs, co;         /* their configurations */
	LLVMValueRef state;      /* float array: GPU [AT_NSTATE], host [threads][AT_NSTATE] */
	LLVMValueRef red;        /* host: the quad exchange (float pointer) */
	LLVMValueRef scale;      /* f32 */
	LLVMValueRef fill;       /* f32: a mask's scores (attribute min) */
	const RelTensor *bias;   /* NULL: none */
	int64_t causal;          /* RelAttrs.causal: 1 + c, or 0 */
	bool zero_nan;           /* RelAttrs.zero_nan: a row of NaN weights gives 0 */
	LLVMValueRef bst[IR_MAX_RANK]; /* its element strides, 0 where it broadcasts */
	LLVMValueRef j0;         /* the first key of the current step */
	bool full;               /* score() builds for a tile no mask reaches */
	bool pp;                 /* the configuration's pp: three K/V buffers (key_steps_pp) */
	bool tma;                /* GPU, pp and the configuration's tma: K and V by TMA,
				    thread 0 issuing them (pp_fill) */
	LLVMValueRef gslot;      /* pp: i32 alloca, the block's next step of all its tiles */
	int bars;                /* pp, GPU: byte offset of full[0]; empty[b] 3 later */
	int kbytes, vbytes;      /* one K tile, one V tile */
	bool preg;               /* GPU, wgmma: P stays in registers, O's A fragments */
	LLVMValueRef p[MM_ATT_BNMAX / 4]; /* its pairs of 16-bit weights, in S's order */
	LLVMValueRef bcache[32]; /* a row-broadcast bias's values of the current step, per
				    column of the thread (softmax_step) */
} Att;

static LLVMValueRef f32c(Att *A, double v)
{
	return LLVMConstReal(A->kb->m->t_f32, v);
}

/* Per-thread state slot k (m of the rows, l of the rows). */
static LLVMValueRef state_ptr(Att *A, int k)
{
	Mm *x = &A->s;
	LLVMValueRef i = A->gpu ? mm_i64c(x, k) : mm_addc(x, mm_mulc(x, x->tid, AT_NSTATE), k);
	return LLVMBuildGEP2(A->b, A->kb->m->t_f32, A->state, &i, 1, "");
}

static LLVMValueRef state_load(Att *A, int k)
{
	return LLVMBuildLoad2(A->b, A->kb->m->t_f32, state_ptr(A, k), "");
}

static void state_store(Att *A, int k, LLVMValueRef v)
{
	LLVMBuildStore(A->b, v, state_ptr(A, k));
}

/* A phase of both builders (their thread id the same). */
static void phase_begin(Att *A)
{
	A->o.tid = mm_phase_begin(&A->s);
}

static void phase_end(Att *A)
{
	mm_phase_end(&A->s);
}

/* The larger of two scores, NaN ignored (PTX max.f32): a NaN score still makes its
 * row NaN, through its weight exp(NaN - m) in l and in P v. */
static LLVMValueRef fmax_(Att *A, LLVMValueRef a, LLVMValueRef b)
{
	LLVMValueRef args[2] = {a, b};
	LLVMTypeRef t = A->kb->m->t_f32;
	return mm_intrinsic(&A->s, "llvm.maxnum", &t, 1, args, 2);
}

/* exp(s - m) of a score s below the running max m (or NaN): on the GPU one
 * ex2.approx of an fma (cg_math_exp_diff_half), since the weights are rounded to
 * the operands' dtype (f16, bf16, or tf32) before they are used; the host keeps the
 * full exp. */
static LLVMValueRef exp_(Att *A, LLVMValueRef s, LLVMValueRef m)
{
	return cg_math_exp_diff_half(&A->kb->math, s, m);
}

static LLVMValueRef op2(Att *A, LLVMValueRef a, LLVMValueRef b, bool sum)
{
	return sum ? LLVMBuildFAdd(A->b, a, b, "") : fmax_(A, a, b);
}

/* The quad's max (sum) of the two values v[0], v[1] of every thread, by the
 * butterfly: (v_t op v_t^1) op (v_t^2 op v_t^3). GPU: two shuffles each. Host: the
 * values go through shared memory and the phase ends; a new one begins (its thread
 * id in the builders), so nothing built before the call may be used after it but
 * what is in memory: the results come back in v. */
static void quad(Att *A, LLVMValueRef v[2], bool sum)
{
	Mm *x = &A->s;
	CgModule *m = A->kb->m;
	if (A->gpu) {
		for (int r = 0; r < 2; r++)
			for (int k = 1; k <= 2; k *= 2) {
				LLVMValueRef args[4] = {mm_i32c(x, -1), v[r], mm_i32c(x, k),
							mm_i32c(x, 0x1f)};
				LLVMValueRef o = mm_intrinsic(x, "llvm.nvvm.shfl.sync.bfly.f32",
							      NULL, 0, args, 4);
				v[r] = op2(A, v[r], o, sum);
			}
		return;
	}
	for (int r = 0; r < 2; r++) {
		LLVMValueRef i = mm_addc(x, mm_mulc(x, x->tid, 2), r);
		LLVMBuildStore(A->b, v[r], LLVMBuildGEP2(A->b, m->t_f32, A->red, &i, 1, ""));
	}
	phase_end(A);
	phase_begin(A);
	LLVMValueRef q0 = mm_mulc(x, mm_udivc(x, x->tid, 4), 4), t4 = mm_uremc(x, x->tid, 4);
	for (int r = 0; r < 2; r++) {
		LLVMValueRef e[4];
		for (int k = 0; k < 4; k++) {
			/* lane t ^ k of the quad */
			LLVMValueRef lane = mm_add(x, q0, mm_bin(x, LLVMXor, t4, mm_i64c(x, k)));
			LLVMValueRef i = mm_addc(x, mm_mulc(x, lane, 2), r);
			e[k] = LLVMBuildLoad2(A->b, m->t_f32,
					      LLVMBuildGEP2(A->b, m->t_f32, A->red, &i, 1, ""), "");
		}
		v[r] = op2(A, op2(A, e[0], e[1], sum), op2(A, e[2], e[3], sum), sum);
	}
}

/* The score of S's accumulator e of the current thread at (row, col) of the block
 * tile: scale * acc + bias (or the fill where a mask is true), -inf past the last
 * key. */
static LLVMValueRef score(Att *A, int e)
{
	Mm *x = &A->s;
	CgKb *kb = A->kb;
	LLVMValueRef row, col;
	mm_tc_pos(x, x->tid, mm_i64c(x, e), &row, &col);
	LLVMValueRef gc = mm_add(x, A->j0, col);
	LLVMValueRef s = LLVMBuildFMul(A->b, mm_acc_load(x, mm_i64c(x, e)), A->scale, "");
	/* in a full tile every key is in range and none past a causal limit */
	LLVMValueRef inn = A->full ? LLVMConstInt(kb->m->t_i1, 1, 0) : mm_lt(x, gc, x->N);
	LLVMValueRef in = inn;
	if (A->causal && !A->full)   /* and key gc <= row + c */
		in = LLVMBuildAnd(A->b, in, mm_lt(x, gc, mm_addc(x, mm_add(x, x->m0, row),
								 A->causal)), "");
	if (A->bias) {
		const RelTensor *t = A->bias;
		int r = x->rank;
		/* a bias the same for every row (a padding mask, [B,1,1,N]): a thread's
		 * two rows share each column's value, loaded once */
		bool rows1 = t->shape[r - 2] == 0;
		LLVMValueRef *cached = &A->bcache[(e / 4) * 2 + e % 2];
		if (rows1 && *cached)
			return LLVMBuildSelect(A->b, in, t->dtype == DT_BOOL ?
				LLVMBuildSelect(A->b, *cached, A->fill, s, "") :
				LLVMBuildFAdd(A->b, s, *cached, ""), f32c(A, -INFINITY), "");
		LLVMValueRef gr = mm_add(x, x->m0, row);
		/* (a cached value serves both rows: not masked by either's causal limit) */
		LLVMValueRef ok = rows1 ? inn : LLVMBuildAnd(A->b, inn, mm_lt(x, gr, x->M), "");
		LLVMValueRef off = mm_add(x, mm_mul(x, gr, A->bst[r - 2]), mm_mul(x, gc, A->bst[r - 1]));
		for (int d = 0; d < r - 2; d++)
			off = mm_add(x, off, mm_mul(x, x->bpos[d], A->bst[d]));
		off = LLVMBuildSelect(A->b, ok, off, mm_i64c(x, 0), "");
		LLVMTypeRef st = cg_stype(kb->m, (DType)t->dtype);
		LLVMValueRef p = LLVMBuildGEP2(A->b, st, kb->buf[t->id], &off, 1, "");
		LLVMValueRef bv = LLVMBuildLoad2(A->b, st, p, "");
		LLVMSetAlignment(bv, (unsigned)ir_dtype_size((DType)t->dtype));
		if (t->dtype == DT_BOOL) {
			/* a mask: the fill value where it is true */
			LLVMValueRef on = LLVMBuildICmp(A->b, LLVMIntNE, bv, LLVMConstNull(st), "");
			on = LLVMBuildAnd(A->b, ok, on, "");
			if (rows1)
				*cached = on;
			s = LLVMBuildSelect(A->b, on, A->fill, s, "");
		} else {
			bv = cg_convert(kb, cg_widen(kb, bv, (DType)t->dtype), (DType)t->dtype, DT_F32);
			bv = LLVMBuildSelect(A->b, ok, bv, f32c(A, 0), "");
			if (rows1)
				*cached = bv;
			s = LLVMBuildFAdd(A->b, s, bv, "");
		}
	}
	return LLVMBuildSelect(A->b, in, s, f32c(A, -INFINITY), "");
}

/* The scores of the current key tile in place of S's accumulators, and the max of
 * each of the thread's two rows in mx. A tile no mask reaches (every key before N,
 * and for a causal op before the limit of the block's first row) skips the tests:
 * in a causal walk all but the last one or two tiles. */
static void scores(Att *A, LLVMValueRef mx[2])
{
	Mm *x = &A->s;
	CgModule *m = A->kb->m;
	LLVMValueRef end = mm_addc(x, A->j0, A->bn);
	LLVMValueRef full = LLVMBuildNot(A->b, mm_lt(x, x->N, end), "");
	if (A->causal)
		full = LLVMBuildAnd(A->b, full, LLVMBuildNot(A->b, mm_lt(x, mm_addc(x, x->m0,
					A->causal), end), ""), "");
	LLVMBasicBlockRef arm[2] = {
		LLVMAppendBasicBlockInContext(m->ctx, A->kb->fn, "att.full"),
		LLVMAppendBasicBlockInContext(m->ctx, A->kb->fn, "att.edge")};
	LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(m->ctx, A->kb->fn, "att.scored");
	LLVMBuildCondBr(A->b, full, arm[0], arm[1]);
	LLVMValueRef v[2][2];
	LLVMBasicBlockRef from[2];
	for (int k = 0; k < 2; k++) {
		LLVMPositionBuilderAtEnd(A->b, arm[k]);
		A->full = k == 0;
		memset(A->bcache, 0, sizeof A->bcache);
		v[k][0] = v[k][1] = f32c(A, -INFINITY);
		for (int e = 0; e < x->nacc; e++) {
			LLVMValueRef s = score(A, e);
			mm_acc_store(x, mm_i64c(x, e), s);
			v[k][(e % 4) / 2] = fmax_(A, v[k][(e % 4) / 2], s);
		}
		from[k] = LLVMGetInsertBlock(A->b);
		LLVMBuildBr(A->b, join);
	}
	A->full = false;
	LLVMPositionBuilderAtEnd(A->b, join);
	for (int r = 0; r < 2; r++) {
		mx[r] = LLVMBuildPhi(A->b, m->t_f32, "");
		LLVMValueRef in[2] = {v[0][r], v[1][r]};
		LLVMAddIncoming(mx[r], in, from, 2);
	}
}

/* The softmax step of the current key tile, from S's accumulators to P's tile and the
 * rescaled O (one phase on the GPU, two on the host). */
static void softmax_step(Att *A)
{
	Mm *x = &A->s, *o = &A->o;
	CgKb *kb = A->kb;
	CgModule *m = kb->m;
	LLVMValueRef ninf = f32c(A, -INFINITY);
	phase_begin(A);
	/* GPU: what derives from the thread id here is computed here, not hoisted out
	 * of the key loop to hold registers through it */
	LLVMValueRef tid0 = x->tid;
	x->tid = o->tid = mm_opaque_tid(x, tid0);
	LLVMValueRef mx[2];
	scores(A, mx);
	quad(A, mx, false);
	LLVMValueRef shift[2], alpha[2], lsum[2];
	for (int r = 0; r < 2; r++) {
		LLVMValueRef mold = state_load(A, r);
		LLVMValueRef mnew = fmax_(A, mold, mx[r]);
		state_store(A, r, mnew);
		/* 0 while every score of the row so far is -inf: then both exps are 0 */
		shift[r] = LLVMBuildSelect(A->b, LLVMBuildFCmp(A->b, LLVMRealOEQ, mnew, ninf, ""),
					   f32c(A, 0), mnew, "");
		alpha[r] = exp_(A, mold, shift[r]);
		lsum[r] = f32c(A, 0);
	}
	/* p = exp(s - m) into P's tile (o's A operand, rows x keys), two columns at once
	 * (one 4-byte store of two 16-bit weights; tf32: 8 bytes of two f32) */
	LLVMValueRef so = mm_stage_off(o, LLVMConstInt(o->ot, 0, 0), 0);
	for (int e = 0; e < x->nacc; e += 2) {
		int r = (e % 4) / 2;
		LLVMValueRef pv[2], bits[2], pair = NULL;
		for (int h = 0; h < 2; h++) {
			LLVMValueRef s = mm_acc_load(x, mm_i64c(x, e + h));
			pv[h] = exp_(A, s, shift[r]);
		}
		if (A->gpu && o->dt != DT_F32) {
			/* both weights rounded by one instruction (cvt.rn.f16x2.f32 or
			 * .bf16x2): a vector of two, as NVPTX selects it */
			LLVMTypeRef ht = o->dt == DT_F16 ? m->t_f16 : LLVMBFloatTypeInContext(m->ctx);
			LLVMTypeRef v2 = LLVMVectorType(m->t_f32, 2);
			LLVMValueRef w = LLVMBuildInsertElement(A->b, LLVMGetUndef(v2), pv[0],
								mm_i32c(x, 0), "");
			w = LLVMBuildInsertElement(A->b, w, pv[1], mm_i32c(x, 1), "");
			w = LLVMBuildFPTrunc(A->b, w, LLVMVectorType(ht, 2), "");
			for (int h = 0; h < 2; h++)
				lsum[r] = LLVMBuildFAdd(A->b, lsum[r], LLVMBuildFPExt(A->b,
					LLVMBuildExtractElement(A->b, w, mm_i32c(x, h), ""), m->t_f32, ""), "");
			pair = LLVMBuildBitCast(A->b, w, m->t_i32, "");
		}
		for (int h = 0; h < 2 && !pair; h++) {
			/* l sums the weights P v multiplies: rounded (to tf32 for f32), so
			 * that the result is a weighted mean of v's rows */
			if (o->dt == DT_F32) {
				bits[h] = mm_to_tf32(o, pv[h]);
				lsum[r] = LLVMBuildFAdd(A->b, lsum[r], bits[h], "");
				continue;
			}
			bits[h] = cg_narrow(kb, pv[h], o->dt);
			lsum[r] = LLVMBuildFAdd(A->b, lsum[r], cg_widen(kb, bits[h], o->dt), "");
			if (LLVMTypeOf(bits[h]) != m->t_i16)
				bits[h] = LLVMBuildBitCast(A->b, bits[h], m->t_i16, "");
			bits[h] = LLVMBuildZExt(A->b, bits[h], m->t_i32, "");
		}
		if (!pair && o->dt == DT_F32) {
			LLVMTypeRef v2 = LLVMVectorType(m->t_f32, 2);
			pair = LLVMBuildInsertElement(A->b, LLVMGetUndef(v2), bits[0], mm_i32c(x, 0), "");
			pair = LLVMBuildInsertElement(A->b, pair, bits[1], mm_i32c(x, 1), "");
		} else if (!pair) {
			pair = LLVMBuildOr(A->b, bits[0], LLVMBuildShl(A->b, bits[1], mm_i32c(x, 16), ""),
					   "");
		}
		if (A->preg) {
			/* S's accumulators e, e + 1 are (row, 2t), (row, 2t + 1) of an
			 * 8-column block: in S's order the pairs are mma's A fragments
			 * (mm_wg_compute_regs) */
			A->p[e / 2] = pair;
			continue;
		}
		LLVMValueRef row, col;
		mm_tc_pos(x, x->tid, mm_i64c(x, e), &row, &col);
		LLVMValueRef off = mm_add(x, so, mm_add(x, mm_swz(o, 0, row, mm_udivc(x, col, o->ce)),
							mm_to_ot(x, mm_mulc(x, mm_uremc(x, col, o->ce),
									    o->es))));
		LLVMSetAlignment(LLVMBuildStore(A->b, pair, mm_smem_at(o, off)), 2 * (unsigned)o->es);
	}
	for (int r = 0; r < 2; r++)
		state_store(A, 2 + r, LLVMBuildFAdd(A->b, LLVMBuildFMul(A->b, state_load(A, 2 + r),
							     alpha[r], ""), lsum[r], ""));
	/* O's rows rescaled to the new max */
	for (int e = 0; e < o->nacc; e++) {
		LLVMValueRef i = mm_i64c(o, e);
		mm_acc_store(o, i, LLVMBuildFMul(A->b, mm_acc_load(o, i), alpha[(e % 4) / 2], ""));
	}
	if (A->gpu)
		x->tid = o->tid = tid0;
	/* wgmma reads P through the async proxy (the barrier after this phase then
	 * hands it over) */
	if (A->gpu && o->c->wg && !A->preg)
		mm_asm_call(x, m->t_void, "fence.proxy.async.shared::cta;", "~{memory}", NULL, 0);
	phase_end(A);
}

static void pp_turn(Att *A, int w, const char *text);

/* One step's products over the K and V tiles at sk and sv: S = q kt, the softmax
 * step, O += P v. turns (pp, GPU): the scores' products issued in the
 * warpgroups' turn (named barriers 2 and 3, as immediates: with a register ptxas
 * counts all 16). */
static void step_products(Att *A, LLVMValueRef sk, LLVMValueRef sv, bool turns)
{
	Mm *x = &A->s, *o = &A->o;
	phase_begin(A);
	for (int e = 0; e < x->nacc; e++)
		mm_acc_store(x, mm_i64c(x, e), f32c(A, 0));
	phase_end(A);
	if (turns) {
		pp_turn(A, 0, "bar.sync 2, 256;");
		pp_turn(A, 1, "bar.sync 3, 256;");
	}
	mm_compute_stage(x, sk);
	if (turns) {
		pp_turn(A, 0, "bar.arrive 3, 256;");
		pp_turn(A, 1, "bar.arrive 2, 256;");
	}
	if (A->gpu && x->c->wg)
		mm_wg_wait(x, 0);
	softmax_step(A);
	if (A->preg) {
		/* each warpgroup's own rows of P, from its registers; pp waits for
		 * them after its next copies are issued (key_steps_pp) */
		mm_wg_compute_regs(o, sv, A->p, !turns);
	} else {
		mm_barrier(x);
		mm_compute_stage(o, sv);
		if (A->gpu && o->c->wg)
			mm_wg_wait(o, 0);
	}
}

/* The walk over the block tile's nt key tiles, the two warpgroups in step: two K
 * and V buffers, the next tile copied (cp.async) while this one is used, block
 * barriers between the steps. q's copy is in flight. */
static void key_steps(Att *A, LLVMValueRef nt)
{
	Mm *x = &A->s, *o = &A->o;
	CgKb *kb = A->kb;
	LLVMValueRef s0 = LLVMConstInt(x->ot, 0, 0);
	mm_load_tile(x, 1, s0, mm_i64c(x, 0));
	mm_load_tile(o, 1, s0, mm_i64c(x, 0));
	if (A->gpu)
		mm_intrinsic(x, "llvm.nvvm.cp.async.commit.group", NULL, 0, NULL, 0);
	CgLoop lj;
	cg_loop_begin(kb, &lj, mm_i64c(x, 0), nt, mm_i64c(x, 1));
	/* this step's buffer, and the next step's tile into the other one (a group of
	 * its own, empty past the last tile: then wait for all but the newest) */
	LLVMValueRef odd = mm_to_ot(x, mm_uremc(x, lj.i, 2));
	LLVMValueRef sk = mm_mulc(x, odd, A->kbytes), sv = mm_mulc(x, odd, A->vbytes);
	LLVMValueRef nk = mm_mulc(x, mm_bin(x, LLVMXor, odd, mm_cst(odd, 1)), A->kbytes);
	LLVMValueRef nv = mm_mulc(x, mm_bin(x, LLVMXor, odd, mm_cst(odd, 1)), A->vbytes);
	LLVMValueRef jn = mm_addc(x, lj.i, 1);
	LLVMBasicBlockRef bl = LLVMAppendBasicBlockInContext(kb->m->ctx, kb->fn, "att.next");
	LLVMBasicBlockRef bc = LLVMAppendBasicBlockInContext(kb->m->ctx, kb->fn, "att.commit");
	LLVMBuildCondBr(A->b, mm_lt(x, jn, nt), bl, bc);
	LLVMPositionBuilderAtEnd(A->b, bl);
	x->n0 = mm_mulc(x, jn, A->bn);
	mm_load_tile(x, 1, nk, mm_i64c(x, 0));
	mm_load_tile(o, 1, nv, jn);
	LLVMBuildBr(A->b, bc);
	LLVMPositionBuilderAtEnd(A->b, bc);
	A->j0 = x->n0 = mm_mulc(x, lj.i, A->bn);
	if (A->gpu) {
		mm_intrinsic(x, "llvm.nvvm.cp.async.commit.group", NULL, 0, NULL, 0);
		LLVMValueRef n = mm_i32c(x, 1);
		mm_intrinsic(x, "llvm.nvvm.cp.async.wait.group", NULL, 0, &n, 1);
		/* wgmma reads the tiles through the async proxy */
		if (x->c->wg)
			mm_asm_call(x, kb->m->t_void, "fence.proxy.async.shared::cta;", "~{memory}",
				    NULL, 0);
	}
	mm_barrier(x);
	step_products(A, sk, sv, false);
	/* nobody refills K, V or P before every warp is done with them */
	mm_barrier(x);
	cg_loop_end(kb, &lj);
}

/* pp, GPU: the shared address of full[b] (or empty[b]), b an i32 buffer. */
static LLVMValueRef pp_bar(Att *A, LLVMValueRef b, bool empty)
{
	Mm *x = &A->s;
	return mm_saddr(x, mm_addc(x, mm_mulc(x, b, 8), A->bars + (empty ? 3 * 8 : 0)));
}

/* pp_fill by TMA: thread 0 alone waits for the buffer, tells full[b] the bytes to
 * come and copies K's and V's panels (maps 0 and 1: mm_tmap); the copies complete
 * on full[b], whose one arrival is that thread's. */
static void pp_fill_tma(Att *A, LLVMValueRef jt, LLVMValueRef gs, LLVMValueRef b)
{
	Mm *x = &A->s, *o = &A->o;
	CgKb *kb = A->kb;
	LLVMBasicBlockRef bi = LLVMAppendBasicBlockInContext(kb->m->ctx, kb->fn, "att.tma");
	LLVMBasicBlockRef bs = LLVMAppendBasicBlockInContext(kb->m->ctx, kb->fn, "att.tma.done");
	LLVMBuildCondBr(A->b, LLVMBuildICmp(A->b, LLVMIntEQ, x->tid, mm_i64c(x, 0), ""), bi, bs);
	LLVMPositionBuilderAtEnd(A->b, bi);
	LLVMValueRef u = LLVMBuildUDiv(A->b, gs, mm_i32c(x, 3), "");
	u = LLVMBuildXor(A->b, LLVMBuildAnd(A->b, u, mm_i32c(x, 1), ""), mm_i32c(x, 1), "");
	mm_mbar_wait(x, pp_bar(A, b, true), u);
	LLVMValueRef full = pp_bar(A, b, false);
	mm_mbar_expect(x, full, A->kbytes + A->vbytes);
	LLVMValueRef bo = LLVMBuildZExt(A->b, b, x->ot, "");
	LLVMValueRef n0 = x->n0;
	x->n0 = mm_mulc(x, jt, A->bn);
	mm_tma_tile(x, 1, kb->tmap[0], NULL, mm_mulc(x, bo, A->kbytes), mm_i64c(x, 0), full);
	mm_tma_tile(o, 1, kb->tmap[1], NULL, mm_mulc(x, bo, A->vbytes), jt, full);
	x->n0 = n0;
	LLVMBuildBr(A->b, bs);
	LLVMPositionBuilderAtEnd(A->b, bs);
}

/* pp: key tile jt (i64) into buffer b (i32) of the block's step gs (i32), once
 * every thread is done with the buffer's previous use (step gs - 3); on the GPU
 * each thread's copies then arrive on full[b] as they land. */
static void pp_fill(Att *A, LLVMValueRef jt, LLVMValueRef gs)
{
	Mm *x = &A->s, *o = &A->o;
	CgModule *m = A->kb->m;
	LLVMValueRef b = LLVMBuildURem(A->b, gs, mm_i32c(x, 3), "");
	if (A->tma) {
		pp_fill_tma(A, jt, gs, b);
		return;
	}
	if (A->gpu) {
		LLVMValueRef u = LLVMBuildUDiv(A->b, gs, mm_i32c(x, 3), "");
		u = LLVMBuildXor(A->b, LLVMBuildAnd(A->b, u, mm_i32c(x, 1), ""), mm_i32c(x, 1), "");
		mm_mbar_wait(x, pp_bar(A, b, true), u);
	}
	LLVMValueRef bo = LLVMBuildZExt(A->b, b, x->ot, "");
	x->n0 = mm_mulc(x, jt, A->bn);
	mm_load_tile(x, 1, mm_mulc(x, bo, A->kbytes), mm_i64c(x, 0));
	mm_load_tile(o, 1, mm_mulc(x, bo, A->vbytes), jt);
	if (A->gpu) {
		LLVMValueRef a = pp_bar(A, b, false);
		mm_asm_call(x, m->t_void, "cp.async.mbarrier.arrive.noinc.shared::cta.b64 [$0];",
			    "r,~{memory}", &a, 1);
	}
}

/* The walk over the block tile's nt key tiles with the warpgroups out of step
 * (the pp configurations, where every copy is of whole chunks). Three K and V
 * buffers; step gs of the block (over all its tiles, Att.gslot) uses buffer
 * gs % 3, in its round gs / 3. Two mbarriers a buffer, in shared memory past the
 * buffers (Att.bars): full[b], to which each of the 256 threads' copies of the
 * buffer arrive as they land (cp.async.mbarrier.arrive.noinc), and empty[b], on
 * which every thread arrives once its step's products over the buffer are done.
 * A step waits on full[] (round parity) and, while its P v runs, copies tile
 * j + 2 into the buffer of step j - 1 once empty[] says both warpgroups are done
 * with it; no block barrier, so the warpgroups drift apart. They issue
 * their scores' products in turn (named barriers 2 and 3: warpgroup w waits on
 * 2 + w, then lets the other go), so that one's softmax runs while the other's
 * products keep the tensor cores busy. With K and V by TMA (Att.tma) thread 0
 * alone copies, full[b] counting its one arrival and the bytes (pp_fill_tma),
 * and q's copies are awaited by a block barrier before the first step. On the
 * host the same buffers and order, without the barriers. */
static void key_steps_pp(Att *A, LLVMValueRef nt)
{
	Mm *x = &A->s;
	CgKb *kb = A->kb;
	CgModule *m = kb->m;
	LLVMValueRef g0 = LLVMBuildLoad2(A->b, m->t_i32, A->gslot, "");
	LLVMValueRef nt32 = LLVMBuildTrunc(A->b, nt, m->t_i32, "");
	/* tiles 0 and 1 (where there are that many) */
	for (int k = 0; k < 2; k++) {
		LLVMBasicBlockRef bl = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "att.pre");
		LLVMBasicBlockRef bn = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "att.pre.done");
		LLVMBuildCondBr(A->b, LLVMBuildICmp(A->b, LLVMIntSLT, mm_i64c(x, k), nt, ""), bl, bn);
		LLVMPositionBuilderAtEnd(A->b, bl);
		pp_fill(A, mm_i64c(x, k), LLVMBuildAdd(A->b, g0, mm_i32c(x, k), ""));
		LLVMBuildBr(A->b, bn);
		LLVMPositionBuilderAtEnd(A->b, bn);
	}
	if (A->tma) {
		/* q's copies (the threads', cp.async) land before anyone's first
		 * product reads them; full[] tracks K and V alone */
		mm_intrinsic(x, "llvm.nvvm.cp.async.wait.all", NULL, 0, NULL, 0);
		mm_asm_call(x, m->t_void, "fence.proxy.async.shared::cta;", "~{memory}", NULL, 0);
		mm_barrier(x);
	}
	CgLoop lj;
	cg_loop_begin(kb, &lj, mm_i64c(x, 0), nt, mm_i64c(x, 1));
	LLVMValueRef gs = LLVMBuildAdd(A->b, g0, LLVMBuildTrunc(A->b, lj.i, m->t_i32, ""), "");
	LLVMValueRef b = LLVMBuildURem(A->b, gs, mm_i32c(x, 3), "");
	LLVMValueRef bo = LLVMBuildZExt(A->b, b, x->ot, "");
	LLVMValueRef sk = mm_mulc(x, bo, A->kbytes), sv = mm_mulc(x, bo, A->vbytes);
	A->j0 = x->n0 = mm_mulc(x, lj.i, A->bn);
	if (A->gpu) {
		LLVMValueRef u = LLVMBuildUDiv(A->b, gs, mm_i32c(x, 3), "");
		mm_mbar_wait(x, pp_bar(A, b, false), LLVMBuildAnd(A->b, u, mm_i32c(x, 1), ""));
		/* the copies (generic proxy) before wgmma's reads (async proxy); TMA's
		 * are the async proxy's */
		if (!A->tma)
			mm_asm_call(x, m->t_void, "fence.proxy.async.shared::cta;", "~{memory}",
				    NULL, 0);
	}
	step_products(A, sk, sv, A->gpu);
	/* tile j + 2 into the buffer of step j - 1, while this step's P v runs */
	LLVMValueRef j2 = mm_addc(x, lj.i, 2);
	LLVMBasicBlockRef bl = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "att.fill");
	LLVMBasicBlockRef bn = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "att.filled");
	LLVMBuildCondBr(A->b, mm_lt(x, j2, nt), bl, bn);
	LLVMPositionBuilderAtEnd(A->b, bl);
	pp_fill(A, j2, LLVMBuildAdd(A->b, gs, mm_i32c(x, 2), ""));
	LLVMBuildBr(A->b, bn);
	LLVMPositionBuilderAtEnd(A->b, bn);
	if (A->gpu) {
		if (A->preg)
			mm_wg_wait(&A->o, 0);
		mm_mbar_arrive(x, pp_bar(A, b, true));
	}
	cg_loop_end(kb, &lj);
	LLVMBuildStore(A->b, LLVMBuildAdd(A->b, g0, nt32, ""), A->gslot);
	/* the epilogue stages O over the buffers: every warp done with them */
	mm_barrier(x);
}

/* One block tile: rows m0.. of batch bflat. */
static void block_tile(Att *A, LLVMValueRef t, LLVMValueRef ntm, const int *wr, int nw)
{
	Mm *x = &A->s, *o = &A->o;
	LLVMValueRef bflat = LLVMBuildUDiv(A->b, t, ntm, "");
	LLVMValueRef tm = LLVMBuildURem(A->b, t, ntm, "");
	if (A->causal)   /* the longest walks first */
		tm = LLVMBuildSub(A->b, mm_addc(x, ntm, -1), tm, "");
	x->m0 = o->m0 = mm_mulc(x, tm, MM_ATT_BM);
	x->n0 = o->n0 = mm_i64c(x, 0);
	mm_tile_batch(x, bflat);
	mm_tile_batch(o, bflat);
	LLVMValueRef s0 = LLVMConstInt(x->ot, 0, 0);
	/* O, m and l of the thread's rows */
	phase_begin(A);
	for (int e = 0; e < o->nacc; e++)
		mm_acc_store(o, mm_i64c(o, e), f32c(A, 0));
	for (int k = 0; k < AT_NSTATE; k++)
		state_store(A, k, f32c(A, k < 2 ? -INFINITY : 0));
	phase_end(A);
	/* q's tile, once, and the first key tile into buffer 0 */
	LLVMValueRef nt = mm_ceil_div(x, x->N, A->bn);
	if (A->causal) {
		/* the block's last row m0 + BM - 1 reaches key m0 + BM - 1 + c */
		LLVMValueRef reach = mm_ceil_div(x, mm_addc(x, x->m0, MM_ATT_BM - 1 + A->causal),
						 A->bn);
		nt = LLVMBuildSelect(A->b, mm_lt(x, reach, nt), reach, nt, "");
	}
	mm_load_tile(x, 0, s0, mm_i64c(x, 0));
	if (A->pp && x->all_fast)
		key_steps_pp(A, nt);
	else
		key_steps(A, nt);
	x->n0 = mm_i64c(x, 0);
	/* O / l, l summed over the quad */
	phase_begin(A);
	LLVMValueRef l[2] = {state_load(A, 2), state_load(A, 3)}, bad[2] = {NULL, NULL};
	quad(A, l, true);
	for (int r = 0; r < 2; r++) {
		/* zero_nan: a row of NaN weights (a NaN score: l is NaN; every key -inf:
		 * l is 0) gives 0 */
		if (A->zero_nan)
			bad[r] = LLVMBuildOr(A->b, LLVMBuildFCmp(A->b, LLVMRealUNO, l[r], l[r], ""),
					     LLVMBuildFCmp(A->b, LLVMRealOEQ, l[r], f32c(A, 0), ""), "");
		l[r] = LLVMBuildFDiv(A->b, f32c(A, 1), l[r], "");
	}
	for (int e = 0; e < o->nacc; e++) {
		LLVMValueRef i = mm_i64c(o, e);
		LLVMValueRef y = LLVMBuildFMul(A->b, mm_acc_load(o, i), l[(e % 4) / 2], "");
		if (bad[(e % 4) / 2])
			y = LLVMBuildSelect(A->b, bad[(e % 4) / 2], f32c(A, 0), y, "");
		mm_acc_store(o, i, y);
	}
	phase_end(A);
	/* the epilogue stages O over the whole shared memory (mm_attention_kernel sized
	 * its passes so) */
	LLVMValueRef osm = o->smem, osb = o->sbase;
	o->smem = x->smem;
	o->sbase = x->sbase;
	mm_epilogue(o, wr, nw);
	o->smem = osm;
	o->sbase = osb;
	/* TMA (the async proxy) refills the buffers the epilogue staged O in */
	if (A->tma && x->all_fast)
		mm_asm_call(x, A->kb->m->t_void, "fence.proxy.async.shared::cta;", "~{memory}",
			    NULL, 0);
	mm_barrier(x);
}

/* pp: the block's step count from 0; on the GPU thread 0 sets up the six
 * mbarriers (256 arrivals each; full[] by TMA one, thread 0's) before anyone uses
 * them. */
static void pp_init(Att *A)
{
	Mm *x = &A->s;
	CgKb *kb = A->kb;
	CgModule *m = kb->m;
	LLVMBuildStore(A->b, mm_i32c(x, 0), A->gslot);
	if (!A->gpu)
		return;
	LLVMBasicBlockRef bi = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "att.init");
	LLVMBasicBlockRef bs = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "att.inited");
	LLVMBuildCondBr(A->b, LLVMBuildICmp(A->b, LLVMIntEQ, x->tid, mm_i64c(x, 0), ""), bi, bs);
	LLVMPositionBuilderAtEnd(A->b, bi);
	for (int k = 0; k < 6; k++)   /* full[] by TMA: thread 0's one arrival */
		mm_mbar_init(x, mm_saddr(x, mm_i32c(x, A->bars + 8 * k)),
			     A->tma && k < 3 ? 1 : MM_THREADS);
	mm_asm_call(x, m->t_void, "fence.mbarrier_init.release.cluster;", "~{memory}", NULL, 0);
	LLVMBuildBr(A->b, bs);
	LLVMPositionBuilderAtEnd(A->b, bs);
	mm_intrinsic(x, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
}

/* pp, GPU: warpgroup w alone runs the named-barrier instruction text. */
static void pp_turn(Att *A, int w, const char *text)
{
	Mm *x = &A->s;
	CgModule *m = A->kb->m;
	LLVMBasicBlockRef bt = LLVMAppendBasicBlockInContext(m->ctx, A->kb->fn, "att.turn");
	LLVMBasicBlockRef bn = LLVMAppendBasicBlockInContext(m->ctx, A->kb->fn, "att.turned");
	LLVMValueRef is = LLVMBuildICmp(A->b, LLVMIntEQ, mm_udivc(x, x->tid, 128), mm_i64c(x, w), "");
	LLVMBuildCondBr(A->b, is, bt, bn);
	LLVMPositionBuilderAtEnd(A->b, bt);
	mm_asm_call(x, m->t_void, text, "~{memory}", NULL, 0);
	LLVMBuildBr(A->b, bn);
	LLVMPositionBuilderAtEnd(A->b, bn);
}

/* Fill a builder for one of the two products. */
static void setup(Att *A, Mm *x, const MmConfig *c, const RelOp *op)
{
	memset(x, 0, sizeof *x);
	x->kb = A->kb;
	x->b = A->b;
	x->c = c;
	x->gpu = A->gpu;
	x->op = op;
	x->ta = &op->t[0];
	x->tb = &op->t[x == &A->s ? 1 : 2];
	x->to = &op->t[op->nin];
	x->dt = (DType)x->ta->dtype;
	x->es = ir_dtype_size(x->dt);
	x->ce = 16 / x->es;
	x->rank = x->to->rank;
	x->wtm = c->bm / c->wm;
	x->wtn = c->bn / c->wn;
	x->mi = x->wtm / 16;
	x->ni = x->wtn / 8;
	x->nacc = x->mi * x->ni * 4;
	x->a_bytes = c->bm * c->bk * x->es;
	/* two B buffers, three for pp */
	x->stage_bytes = x->a_bytes + (A->pp ? 3 : 2) * c->bk * c->bn * x->es;
	x->a_fixed = true;
}

int mm_attention_kernel(CgKb *kb, const MmConfig *cfg, const int *wr, int nw)
{
	CgModule *m = kb->m;
	int mi = cg_matmul_index(kb->spec);
	const RelOp *op = &kb->spec->ops[mi];
	Att A0, *A = &A0;
	memset(A, 0, sizeof *A);
	A->kb = kb;
	A->b = kb->b;
	A->gpu = m->opt.target == CG_TARGET_NVPTX;
	A->dmax = cfg->bk;
	A->pp = cfg->pp;
	A->tma = A->gpu && cfg->pp && cfg->tma;
	/* S = q kt: 128 x 64 over the head dim in one stage; O = P v: 128 x E over 64
	 * keys; warps 8 x 1 (a warp's 16 rows, every column) */
	/* f32 (--allow-tf32): both products on tf32 mma.sync (m16n8k8) */
	bool tf = op->t[0].dtype == DT_F32;
	A->bn = cfg->bn;
	A->cs = (MmConfig){"attention.s", true, tf, false, 0, MM_ATT_BM, A->bn, A->dmax,
			   8, 1, 1, 0, cfg->wg, 0, true, false, false, 0, false, false};
	A->co = (MmConfig){"attention.o", true, tf, false, 0, MM_ATT_BM, A->dmax, A->bn,
			   8, 1, 1, 0, cfg->wg, 0, true, false, false, 0, false, false};
	Mm *x = &A->s, *o = &A->o;
	setup(A, x, &A->cs, op);
	setup(A, o, &A->co, op);
	x->panel = o->panel = cfg->wg;
	x->opaque_copy = o->opaque_copy = A->gpu;
	A->preg = A->gpu && cfg->wg && !tf;
	if (A->pp && A->preg) {
		/* no tile for P: it stays in registers */
		o->stage_bytes -= o->a_bytes;
		o->a_bytes = 0;
	}
	A->kbytes = A->dmax * A->bn * x->es;
	A->vbytes = A->bn * A->dmax * x->es;
	int r = x->rank;
	x->M = o->M = cg_dim(kb, x->to->shape[r - 2]);
	x->K = cg_dim(kb, op->t[0].shape[r - 1]);
	x->N = o->K = cg_dim(kb, op->t[1].shape[r - 1]);
	o->N = cg_dim(kb, x->to->shape[r - 1]);
	mm_operand_layout(x, kb->spec, mi, 0);
	mm_operand_layout(x, kb->spec, mi, 1);
	mm_operand_layout(o, kb->spec, mi, 0);
	mm_operand_layout(o, kb->spec, mi, 1);
	o->trans[0] = false;   /* P, as the threads write it */
	for (Mm *y = x; y; y = y == x ? o : NULL) {
		y->cpr[0] = (y->trans[0] ? y->c->bm : y->c->bk) * y->es / 16;
		y->cpr[1] = (y->trans[1] ? y->c->bk : y->c->bn) * y->es / 16;
		y->outer[0] = y->trans[0] ? y->c->bk : y->c->bm;
		y->outer[1] = y->trans[1] ? y->c->bn : y->c->bk;
	}
	if (op->nin == 4) {
		A->bias = &op->t[3];
		LLVMValueRef st = mm_i64c(x, 1);
		for (int d = r - 1; d >= 0; d--) {
			A->bst[d] = A->bias->shape[d] == 0 ? mm_i64c(x, 0) : st;
			st = mm_mul(x, st, cg_dim(kb, A->bias->shape[d]));
		}
	}
	A->scale = cg_scalar_as(kb, op->place0, DT_F32);
	A->causal = op->attr.causal;
	A->zero_nan = op->attr.zero_nan;
	if (A->bias && A->bias->dtype == DT_BOOL)
		A->fill = cg_scalar_as(kb, op->place0 + 1, DT_F32);
	int smem = mm_attention_smem(cfg, x->es);

	/* shared memory: S's stage, then O's; the epilogue's staging over both */
	if (A->gpu) {
		mm_min_blocks(kb, cfg->min_blocks);
		LLVMValueRef g = mm_shared_global(kb, smem);
		x->smem = g;
		x->ot = m->t_i32;
		x->sbase = LLVMBuildTrunc(A->b, LLVMBuildPtrToInt(A->b, g, m->t_i64, ""), m->t_i32, "");
		if (cfg->wg)   /* (mm_attention_smem asked for the room) */
			mm_wg_align(x, g);
		x->acc = LLVMBuildAlloca(A->b, LLVMArrayType(m->t_f32, (unsigned)x->nacc), "acc.s");
		o->acc = LLVMBuildAlloca(A->b, LLVMArrayType(m->t_f32, (unsigned)o->nacc), "acc.o");
		A->state = LLVMBuildAlloca(A->b, LLVMArrayType(m->t_f32, AT_NSTATE), "state");
		x->tid = LLVMBuildZExt(A->b, mm_intrinsic(x, "llvm.nvvm.read.ptx.sreg.tid.x", NULL, 0,
							  NULL, 0), m->t_i64, "");
	} else {
		if (A->pp)   /* the buffers and P's tile; no alignment, no mbarriers */
			smem = x->stage_bytes + o->stage_bytes;
		LLVMValueRef sm = LLVMBuildAlloca(A->b, LLVMArrayType(m->t_i8,
						  (unsigned)(smem + AT_RED)), "smem");
		LLVMSetAlignment(sm, 128);
		x->smem = sm;
		x->ot = m->t_i64;
		LLVMValueRef at = mm_i64c(x, smem);
		A->red = LLVMBuildGEP2(A->b, m->t_i8, sm, &at, 1, "");
		x->acc = LLVMBuildAlloca(A->b, LLVMArrayType(m->t_f32,
					 (unsigned)(x->nacc * MM_THREADS)), "acc.s");
		o->acc = LLVMBuildAlloca(A->b, LLVMArrayType(m->t_f32,
					 (unsigned)(o->nacc * MM_THREADS)), "acc.o");
		A->state = LLVMBuildAlloca(A->b, LLVMArrayType(m->t_f32,
					   AT_NSTATE * MM_THREADS), "state");
	}
	A->gslot = LLVMBuildAlloca(A->b, m->t_i32, "gstep");
	o->tid = x->tid;
	o->ot = x->ot;
	LLVMValueRef ob = LLVMConstInt(x->ot, (unsigned long long)x->stage_bytes, 0);
	o->smem = LLVMBuildGEP2(A->b, m->t_i8, x->smem, &ob, 1, "");
	if (A->gpu)
		o->sbase = LLVMBuildAdd(A->b, x->sbase, ob, "");
	for (Mm *y = x; y; y = y == x ? o : NULL) {
		y->fast[0] = mm_is_aligned16(y, 0);
		y->fast[1] = mm_is_aligned16(y, 1);
	}
	o->vecok = mm_vector_ok(o, wr, nw);
	o->epi_rows = MM_ATT_BM;
	/* past the alignment (and pp's mbarriers) */
	int room = smem - (A->gpu && cfg->wg ? MM_WG_ALIGN : 0) - (A->gpu && A->pp ? MM_ATT_BARS : 0);
	A->bars = x->stage_bytes + o->stage_bytes;
	while (o->epi_rows * (o->c->bn + MM_EPI_PAD) * 4 > room)
		o->epi_rows /= 2;

	LLVMValueRef block = A->gpu ? LLVMBuildZExt(A->b, mm_intrinsic(x,
		"llvm.nvvm.read.ptx.sreg.ctaid.x", NULL, 0, NULL, 0), m->t_i64, "") :
		LLVMGetParam(kb->fn, 1);
	LLVMValueRef nblocks = A->gpu ? LLVMBuildZExt(A->b, mm_intrinsic(x,
		"llvm.nvvm.read.ptx.sreg.nctaid.x", NULL, 0, NULL, 0), m->t_i64, "") :
		LLVMGetParam(kb->fn, 2);
	LLVMValueRef nb, ntm, ntn;
	mm_tile_grid(x, &nb, &ntm, &ntn);
	/* two copies of the loop over block tiles, as the matmul has: one where q, kt
	 * and v are all copied by whole chunks (nothing of the element path in its
	 * registers), one for the rest */
	LLVMBasicBlockRef bf = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "att.fast");
	LLVMBasicBlockRef bg = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "att.any");
	LLVMBasicBlockRef bd = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "att.done");
	LLVMValueRef fast = LLVMBuildAnd(A->b, LLVMBuildAnd(A->b, x->fast[0], x->fast[1], ""),
					 o->fast[1], "");
	if (A->pp)
		pp_init(A);
	LLVMBuildCondBr(A->b, fast, bf, bg);
	for (int copy = 0; copy < 2; copy++) {
		LLVMPositionBuilderAtEnd(A->b, copy ? bg : bf);
		x->all_fast = o->all_fast = copy == 0;
		bool turns = A->gpu && A->pp && copy == 0;
		if (turns)   /* warpgroup 0 takes the first turn */
			pp_turn(A, 1, "bar.arrive 2, 256;");
		CgLoop lt;
		cg_loop_begin(kb, &lt, block, mm_mul(x, nb, ntm), nblocks);
		kb->nmemo = 0;
		block_tile(A, lt.i, ntm, wr, nw);
		cg_loop_end(kb, &lt);
		if (turns)   /* and takes warpgroup 1's last hand-over */
			pp_turn(A, 0, "bar.sync 2, 256;");
		LLVMBuildBr(A->b, bd);
	}
	LLVMPositionBuilderAtEnd(A->b, bd);
	free(x->cse);
	free(o->cse);
	return kb->failed ? -1 : 0;
}
