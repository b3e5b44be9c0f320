/* matmul_simt.c: the SIMT compute of a stage (f32 without tensor cores), and the
 * map from a thread's accumulators to the block tile.
 *
 * SIMT configurations (f32): 16 x 16 threads, each computing (BM/16) x (BN/16)
 * outputs with FMAs from shared memory (rows ty*4+i and 64 + ty*4+i, the same for
 * columns); the same code on both targets. Every shared read is a 16-byte chunk:
 * an operand whose tile runs along its own dim (B as stored, A transposed) gives
 * four of the thread's rows or columns at one k; one that runs along K (A as
 * stored, B transposed) gives one row or column at four k. Per four k and 64 FMAs
 * that is at most 16 loads, where reading A element by element took 40: the loop
 * was bound by shared-memory issue (docs/benchmarks.md, "f32 SIMT").
 *
 * The tiles are not swizzled but padded (mm_swz with Mm.padded), so every chunk a
 * thread reads lies at a constant distance from one base per operand (thread_base:
 * the stage's offset plus ty*272 or tx*16 bytes), the loads' immediate offsets.
 * With the swizzle each (row, chunk) pair had its own address, some 64 of them held
 * in registers through the K loop (255 registers, one block per SM); without them
 * the 128x128 tile fits the 128 registers of two blocks per SM. Bank conflicts:
 * along K a warp reads one chunk of 2 rows (A: ty) or 16 rows (B transposed: tx),
 * 4 rows apart, which the padding puts in different 16-byte groups; the other way
 * a warp reads 2 or 16 consecutive chunks of one row.
 * Tiny M (M <= 16, every dtype and arch) takes the gemv configuration, whose loop
 * is the kernel's (matmul_kernel.c). */
#include "matmul.h"

/* simt: the (row, col) in the block tile of accumulator e of thread tid. */
void mm_simt_pos(Mm *x, LLVMValueRef tid, int e, LLVMValueRef *row, LLVMValueRef *col)
{
	int i = e / x->rn, j = e % x->rn;
	LLVMValueRef tx = mm_uremc(x, tid, 16), ty = mm_udivc(x, tid, 16);
	*row = mm_add(x, mm_mul(x, ty, mm_i64c(x, 4)), mm_i64c(x, (i / 4) * 64 + i % 4));
	*col = mm_add(x, mm_mul(x, tx, mm_i64c(x, 4)), mm_i64c(x, (j / 4) * 64 + j % 4));
}

/* Whether operand w's shared tile runs along K (its chunks hold consecutive k). */
static bool along_k(const Mm *x, int w)
{
	return (w == 0) != x->trans[w];
}

/* The 16-byte chunk at byte `delta` (a constant) from base, as 4 floats: an offset
 * from the base's pointer, which the load takes as its immediate (an offset added
 * to the base before it is widened to the pointer's width would not fold). */
static LLVMValueRef chunk(Mm *x, LLVMValueRef base, LLVMValueRef delta)
{
	LLVMTypeRef v4 = LLVMVectorType(x->kb->m->t_f32, 4);
	LLVMValueRef p = LLVMBuildInBoundsGEP2(x->b, x->kb->m->t_i8, mm_smem_at(x, base), &delta, 1, "");
	LLVMValueRef v = LLVMBuildLoad2(x->b, v4, p, "");
	LLVMSetAlignment(v, 16);
	return v;
}

/* The thread's base in operand w's tile at soff, t its index along its rows (ty) or
 * columns (tx): along K the start of its first row 4t, else its first chunk, t, of
 * row 0. */
static LLVMValueRef thread_base(Mm *x, int w, LLVMValueRef soff, LLVMValueRef t)
{
	LLVMValueRef zero = mm_cst(t, 0);
	LLVMValueRef off = along_k(x, w) ? mm_swz(x, w, mm_mulc(x, t, 4), zero) :
			   mm_swz(x, w, zero, t);
	return mm_add(x, soff, off);
}

/* f32: the thread's values of operand w at k = 4 kc + kk, v[p] for its cnt rows (A)
 * or columns (B), read at constant offsets from its base (thread_base). Along K a
 * chunk holds a row's four k: it is read at kk = 0 and kept in held[]; the other
 * way a chunk holds four rows or columns at one k, read for this kk only. */
static void fragment(Mm *x, int w, LLVMValueRef base, int kc, int kk, int cnt,
		     LLVMValueRef held[8], LLVMValueRef v[8])
{
	for (int p = 0; p < cnt; p += along_k(x, w) ? 1 : 4) {
		if (along_k(x, w)) {
			/* row 4t + (p / 4) * 64 + p % 4, chunk kc */
			if (kk == 0)
				held[p] = chunk(x, base, mm_swz(x, w, mm_cst(base, (p / 4) * 64 + p % 4),
								mm_cst(base, kc)));
			v[p] = LLVMBuildExtractElement(x->b, held[p], mm_i32c(x, kk), "");
			continue;
		}
		/* row 4 kc + kk, chunk t + (p / 4) * 16 */
		LLVMValueRef c = chunk(x, base, mm_swz(x, w, mm_cst(base, 4 * kc + kk),
						       mm_cst(base, (p / 4) * 16)));
		for (int e = 0; e < 4; e++)
			v[p + e] = LLVMBuildExtractElement(x->b, c, mm_i32c(x, e), "");
	}
}

/* simt, both targets: FMAs from shared memory. */
void mm_simt_compute(Mm *x, LLVMValueRef s)
{
	CgModule *m = x->kb->m;
	LLVMValueRef sa = mm_stage_off(x, s, 0), sb = mm_stage_off(x, s, 1);
	LLVMValueRef tid = mm_to_ot(x, mm_phase_begin(x));
	LLVMValueRef tx = mm_uremc(x, tid, 16), ty = mm_udivc(x, tid, 16);
	LLVMTypeRef f32 = m->t_f32;
	LLVMValueRef accv[64];
	for (int e = 0; e < x->nacc; e++)
		accv[e] = mm_acc_load(x, mm_i64c(x, e));
	LLVMValueRef ba = thread_base(x, 0, sa, ty), bb = thread_base(x, 1, sb, tx);
	LLVMValueRef held[2][8];
	for (int kc = 0; kc < x->c->bk / 4; kc++)
		for (int kk = 0; kk < 4; kk++) {
			LLVMValueRef av[8], bv[8];
			fragment(x, 0, ba, kc, kk, x->rm, held[0], av);
			fragment(x, 1, bb, kc, kk, x->rn, held[1], bv);
			for (int i = 0; i < x->rm; i++)
				for (int j = 0; j < x->rn; j++) {
					LLVMValueRef args[3] = {av[i], bv[j], accv[i * x->rn + j]};
					accv[i * x->rn + j] = mm_intrinsic(x, "llvm.fmuladd.f32",
									   &f32, 1, args, 3);
				}
		}
	for (int e = 0; e < x->nacc; e++)
		mm_acc_store(x, mm_i64c(x, e), accv[e]);
	mm_phase_end(x);
}
