/* matmul_wgmma.c: the compute of a stage with wgmma (sm_90a).
 *
 * On sm_90a, the default arch, f16 and bf16 matmuls (M > 16) take the wgmma
 * configurations: wg128x256x64s4 from three waves of 128x256 tiles, wg128x128x64s4
 * from half a wave of 128x128 tiles, the mma.sync rule below that (matmul_pick.c).
 * The tile loop is that of mma.sync (matmul_kernel.c) with these differences:
 *   - cp.async fills the 4 stages in 128-byte panels with the 128-byte swizzle
 *     (mm_swz with Mm.panel: a tile's rows cut into panels of 128 bytes, each panel
 *     outer rows x 128 bytes, chunk XOR row % 8), the stages aligned at run time to
 *     MM_WG_ALIGN (1024 bytes, where the swizzle repeats; mm_smem asks for the room);
 *   - wgmma.mma_async m64nNk16 (N = BN) reads both operands from shared memory
 *     through matrix descriptors (wg_desc): K-major or MN-major, so operands kept
 *     transposed need no other path. Each warpgroup of 4 warps takes 64 rows of the
 *     block tile; the 8 x 1 warp grid of the configurations is wgmma's accumulator
 *     layout (warp w holds rows 16w..16w+15, the fragment-to-element map of
 *     mma.sync's m16n8 repeated along N), so the epilogue reads the accumulators
 *     through mm_tc_pos as for mma.sync;
 *   - a stage's BK / 16 instructions are issued as one group, and one group is kept
 *     in flight (wgmma.wait_group 1) while the next step is issued: the stage a
 *     group reads is refilled two steps later (the tile loop's lead is STAGES - 2,
 *     not STAGES - 1), and fence.proxy.async orders the copies that landed before
 *     wgmma reads them; after the last step wait_group 0 pins the accumulators
 *     (mm_wg_wait).
 * Under --allow-tf32 a conv channels last takes wgtf32x128x{128,256}x32s4: m64nNk8
 * tf32, both operands K-major (the only layout tf32 wgmma reads), each stage rounded
 * to tf32 in shared memory by the threads that copied it (mm_wg_round_tf32).
 * --arch sm_90 keeps mma.sync (PTX that later GPUs can still load). The host backend
 * runs the same tiling (configuration, panels, stages) with the scalar fragment of
 * mm_tc_compute_host (matmul_mma.c), so the cpu backend checks the plan the GPU
 * runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matmul.h"

/* wgmma's matrix descriptor of the shared tile at 32-bit shared address addr: the
 * address, the leading and the stride byte offsets (16-byte units) and the 128-byte
 * swizzle (mode 1, bits 62-63). K-major tiles (rows of 128 bytes along K): the
 * stride offset is the 1024 bytes between groups of 8 rows, the leading one unused
 * (16). MN-major tiles (panels of 64 elements along M or N, K rows each): the
 * leading offset is the stride between panels, the stride offset again the 1024
 * bytes between groups of 8 rows of K. */
static LLVMValueRef wg_desc(Mm *x, LLVMValueRef addr, int64_t lbo, int64_t sbo)
{
	CgModule *m = x->kb->m;
	LLVMValueRef a = LLVMBuildLShr(x->b, LLVMBuildAnd(x->b, addr, mm_i32c(x, 0x3ffff), ""),
				       mm_i32c(x, 4), "");
	a = LLVMBuildZExt(x->b, a, m->t_i64, "");
	uint64_t hi = ((uint64_t)(lbo >> 4) & 0x3fff) << 16 |
		      ((uint64_t)(sbo >> 4) & 0x3fff) << 32 | (uint64_t)1 << 62;
	return LLVMBuildOr(x->b, a, LLVMConstInt(m->t_i64, hi, 0), "");
}

/* Inline PTX over the accumulators a0 .. a0+n-1: text with $0 .. $n-1 those
 * (read and written), then the extra inputs; returns nothing, the accumulators are
 * stored back. An empty text pins them: no use of them moves above it. */
static void wg_asm(Mm *x, const char *text, LLVMValueRef *extra, int nextra, int a0, int n)
{
	CgModule *m = x->kb->m;
	LLVMTypeRef *ft = xmalloc(sizeof *ft * (size_t)n);
	LLVMValueRef *args = xmalloc(sizeof *args * (size_t)(n + nextra));
	LLVMTypeRef *at = xmalloc(sizeof *at * (size_t)(n + nextra));
	char *cons = xmalloc((size_t)n * 10 + (size_t)nextra * 4 + 16);
	size_t len = 0;
	for (int i = 0; i < n; i++) {
		ft[i] = m->t_f32;
		len += (size_t)sprintf(cons + len, "%s=f", i ? "," : "");
	}
	for (int i = 0; i < nextra; i++) {
		args[i] = extra[i];
		at[i] = LLVMTypeOf(extra[i]);
		len += (size_t)sprintf(cons + len, ",%s", at[i] == m->t_i64 ? "l" : "r");
	}
	for (int i = 0; i < n; i++) {
		args[nextra + i] = mm_acc_load(x, mm_i64c(x, a0 + i));
		at[nextra + i] = m->t_f32;
		len += (size_t)sprintf(cons + len, ",%d", i);
	}
	len += (size_t)sprintf(cons + len, ",~{memory}");
	LLVMTypeRef st = LLVMStructTypeInContext(m->ctx, ft, (unsigned)n, 0);
	LLVMTypeRef fty = LLVMFunctionType(st, at, (unsigned)(n + nextra), 0);
	LLVMValueRef fn = LLVMGetInlineAsm(fty, (char *)text, strlen(text), cons, len, 1, 0,
					   LLVMInlineAsmDialectATT, 0);
	LLVMValueRef r = LLVMBuildCall2(x->b, fty, fn, args, (unsigned)(n + nextra), "");
	for (int i = 0; i < n; i++)
		mm_acc_store(x, mm_i64c(x, a0 + i), LLVMBuildExtractValue(x->b, r, (unsigned)i, ""));
	free(ft);
	free(args);
	free(at);
	free(cons);
}

/* Wait until at most n groups of wgmma are in flight; at 0 the accumulators are
 * final, and pinned there (wg_asm with no text) so that nothing reads them sooner. */
void mm_wg_wait(Mm *x, int n)
{
	CgModule *m = x->kb->m;
	char text[64];
	int len = snprintf(text, sizeof text, "wgmma.wait_group.sync.aligned %d;", n);
	LLVMTypeRef vt = LLVMFunctionType(m->t_void, NULL, 0, 0);
	LLVMValueRef w = LLVMGetInlineAsm(vt, text, (size_t)len, "~{memory}", 9, 1, 0,
					  LLVMInlineAsmDialectATT, 0);
	LLVMBuildCall2(x->b, vt, w, NULL, 0, "");
	if (n == 0)
		wg_asm(x, "", NULL, 0, 0, x->nacc);
}

/* tf32: the chunks this thread copied into the stage at s (load_tile's share of
 * each operand: chunks tid, tid + MM_THREADS, ... by mm_chunk_at), rounded in place to tf32
 * (cvt.rna, as mma.sync rounds its fragments and the host its scalar ones): wgmma
 * would read the f32 bits as they lie. 3xTF32 (MmConfig.x3) also writes each
 * element's rest, the tf32 of what the rounding left, half a stage further on.
 * Called once this thread's copies landed, before the barrier that hands the stage
 * to every warp. */
void mm_wg_round_tf32(Mm *x, LLVMValueRef s)
{
	CgModule *m = x->kb->m;
	const MmConfig *c = x->c;
	LLVMTypeRef vt = LLVMVectorType(m->t_f32, 4);
	LLVMValueRef tid = mm_to_ot(x, x->tid);
	for (int w = 0; w < 2; w++) {
		int rows = w ? c->bk : c->bm, cols = w ? c->bn : c->bk;
		int total = (x->trans[w] ? cols : rows) * x->cpr[w];
		LLVMValueRef soff = mm_stage_off(x, s, w);
		if (total % MM_THREADS)
			die("internal: %s: a tile of %d chunks", c->name, total);
		for (int i = 0; i * MM_THREADS < total; i++) {
			LLVMValueRef r, ch, q = mm_addc(x, tid, (int64_t)i * MM_THREADS);
			LLVMValueRef off = mm_chunk_at(x, w, soff, q, &r, &ch);
			LLVMValueRef p = mm_smem_at(x, off);
			LLVMValueRef v = LLVMBuildLoad2(x->b, vt, p, ""), rest = v;
			LLVMSetAlignment(v, 16);
			for (int e = 0; e < 4; e++) {
				LLVMValueRef f = LLVMBuildExtractElement(x->b, v, mm_i32c(x, e), "");
				LLVMValueRef t = LLVMBuildBitCast(x->b, mm_intrinsic(x,
					"llvm.nvvm.f2tf32.rna", NULL, 0, &f, 1), m->t_f32, "");
				v = LLVMBuildInsertElement(x->b, v, t, mm_i32c(x, e), "");
				if (c->x3) {
					/* f - t is exact; its tf32 is the next 11 bits */
					LLVMValueRef d = LLVMBuildFSub(x->b, f, t, "");
					d = LLVMBuildBitCast(x->b, mm_intrinsic(x, "llvm.nvvm.f2tf32.rna",
						NULL, 0, &d, 1), m->t_f32, "");
					rest = LLVMBuildInsertElement(x->b, rest, d, mm_i32c(x, e), "");
				}
			}
			LLVMSetAlignment(LLVMBuildStore(x->b, v, p), 16);
			if (c->x3) {
				LLVMValueRef pr = mm_smem_at(x, mm_addc(x, off, x->stage_bytes / 2));
				LLVMSetAlignment(LLVMBuildStore(x->b, rest, pr), 16);
			}
		}
	}
}

/* wgmma on the GPU over the stage at s: each warpgroup (threads 128g..128g+127)
 * multiplies its 64 rows of the A tile by the whole B tile, BK / 16 instructions of
 * m64nBNk16 issued back to back as one group, then waits until only that group is
 * in flight (the stage it reads is refilled two steps later: tile_loop's lead, matmul_kernel.c); the
 * accumulators are Mm.acc (mm_tc_pos maps them, as for mma.sync with warps 8 x 1).
 * A ping-pong warpgroup (its Mm.tid 0..127: matmul_ws.c) multiplies all BM rows,
 * two instructions a K step, each over its half of the accumulators. */
void mm_wg_compute_gpu(Mm *x, LLVMValueRef s)
{
	CgModule *m = x->kb->m;
	const MmConfig *c = x->c;
	LLVMValueRef g = mm_udivc(x, mm_to_ot(x, x->tid), 128);
	LLVMValueRef sa = mm_saddr(x, mm_stage_off(x, s, 0)), sb = mm_saddr(x, mm_stage_off(x, s, 1));
	/* warpgroup g's 64 rows: 64 rows of 128 bytes (K-major) or panel g (MN-major) */
	sa = mm_add(x, sa, mm_mul(x, g, mm_i32c(x, x->trans[0] ? c->bk * 128 : 64 * 128)));
	/* tf32: k8 a step, both operands K-major (the configuration's rule), no
	 * transpose immediates */
	const char *ty = c->tf32 ? "tf32" : x->dt == DT_F16 ? "f16" : "bf16";
	int kstep = c->tf32 ? 8 : 16;
	int halves = x->gpu && c->pp ? c->bm / 64 : 1, na = x->nacc / halves;
	char *text = xmalloc((size_t)na * 8 + 256);
	size_t len = (size_t)sprintf(text, "wgmma.mma_async.sync.aligned.m64n%dk%d.f32.%s.%s {",
				     c->bn, kstep, ty, ty);
	for (int i = 0; i < na; i++)
		len += (size_t)sprintf(text + len, "%s$%d", i ? ", " : "", i);
	if (c->tf32)
		sprintf(text + len, "}, $%d, $%d, p, 1, 1;", na, na + 1);
	else
		sprintf(text + len, "}, $%d, $%d, p, 1, 1, %d, %d;", na, na + 1,
			x->trans[0] ? 1 : 0, x->trans[1] ? 0 : 1);
	char *full = xmalloc(strlen(text) + 128);
	/* one line: a line of its own starting with '}' would read as the end of the
	 * kernel's function to emit_par.c (find_function, which copies twins) */
	sprintf(full, "{ .reg .pred p; setp.ne.b32 p, $%d, 0; %s }", na + 2, text);
	LLVMTypeRef vt = LLVMFunctionType(m->t_void, NULL, 0, 0);
	LLVMValueRef fence = LLVMGetInlineAsm(vt, "wgmma.fence.sync.aligned;", 25, "~{memory}", 9,
					      1, 0, LLVMInlineAsmDialectATT, 0);
	LLVMBuildCall2(x->b, vt, fence, NULL, 0, "");
	for (int kk = 0; kk < c->bk / kstep; kk++) {
		/* K-major: the next 32 bytes of each row (16 halves, 8 tf32), in the
		 * next panel every 128 bytes (a K step past 64 halves: the attention's
		 * head dims, matmul_attention.c); MN-major: the next 16 rows */
		int64_t kpan = kk * 32 / 128, kin = kk * 32 % 128;
		LLVMValueRef b = mm_addc(x, sb, x->trans[1] ?
					 kpan * x->outer[1] * 128 + kin : kk * 16 * 128);
		for (int h = 0; h < halves; h++) {
			/* half h's 64 rows, as warpgroup h's above */
			int64_t rows = h * (x->trans[0] ? (int64_t)c->bk * 128 : 64 * 128);
			LLVMValueRef a = mm_addc(x, sa, rows + (x->trans[0] ? kk * 16 * 128 :
							       kpan * x->outer[0] * 128 + kin));
			/* 3xTF32: rest x part and part x rest, the small terms first,
			 * then part x part, into the stage's own accumulators (the
			 * first product of the stage overwrites them: scale-d 0) */
			for (int p = c->x3 ? 0 : 2; p < 3; p++) {
				int64_t ra = p == 0 ? x->stage_bytes / 2 : 0;
				int64_t rb = p == 1 ? x->stage_bytes / 2 : 0;
				LLVMValueRef ex[3] = {
					wg_desc(x, mm_addc(x, a, ra), x->trans[0] ?
						(int64_t)c->bk * 128 : 16, 1024),
					wg_desc(x, mm_addc(x, b, rb), x->trans[1] ? 16 :
						(int64_t)c->bk * 128, 1024),
					mm_i32c(x, c->x3 && kk == 0 && p == 0 ? 0 : 1),
				};
				wg_asm(x, full, ex, 3, c->x3 ? x->nacc : h * na, na);
			}
		}
	}
	LLVMValueRef commit = LLVMGetInlineAsm(vt, "wgmma.commit_group.sync.aligned;", 32,
					       "~{memory}", 9, 1, 0, LLVMInlineAsmDialectATT, 0);
	LLVMBuildCall2(x->b, vt, commit, NULL, 0, "");
	if (c->x3) {
		/* the tensor cores add with truncation, far from f32's rounding over a
		 * long K (the H100: a relative error of 2.9e-5 at K = 4096 against
		 * cuBLAS's 1.2e-6): each stage's 3 x BK / 8 products are summed there,
		 * the stages here, rounded to nearest as the host's scalar definition
		 * does (mm_tc_compute_host) */
		mm_wg_wait(x, 0);
		wg_asm(x, "", NULL, 0, x->nacc, x->nacc);
		for (int i = 0; i < x->nacc; i++)
			mm_acc_store(x, mm_i64c(x, i), LLVMBuildFAdd(x->b,
				mm_acc_load(x, mm_i64c(x, i)), mm_acc_load(x, mm_i64c(x, x->nacc + i)), ""));
	} else {
		mm_wg_wait(x, 1);
	}
	free(text);
	free(full);
}

/* wgmma on the GPU with A from registers: each warpgroup multiplies its 64 rows,
 * held by its threads as mma.sync's m16n8k16 A fragments (a[4 kk .. 4 kk + 3] for
 * K step kk: rows g and g + 8 of the warp's 16, columns 2t, 2t + 1 and 8 more,
 * as pairs of 16-bit values), by the B tile of the stage at s; then waits for the
 * products if `wait` (else the caller does, before it reads the accumulators or
 * writes a). The attention's O = P v (matmul_attention.c): P never goes to shared
 * memory. */
void mm_wg_compute_regs(Mm *x, LLVMValueRef s, LLVMValueRef *a, bool wait)
{
	CgModule *m = x->kb->m;
	const MmConfig *c = x->c;
	LLVMValueRef sb = mm_saddr(x, mm_stage_off(x, s, 1));
	const char *ty = x->dt == DT_F16 ? "f16" : "bf16";
	int na = x->nacc;
	char *text = xmalloc((size_t)na * 8 + 256);
	size_t len = (size_t)sprintf(text, "wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {",
				     c->bn, ty, ty);
	for (int i = 0; i < na; i++)
		len += (size_t)sprintf(text + len, "%s$%d", i ? ", " : "", i);
	sprintf(text + len, "}, {$%d, $%d, $%d, $%d}, $%d, p, 1, 1, %d;", na, na + 1, na + 2,
		na + 3, na + 4, x->trans[1] ? 0 : 1);
	char *full = xmalloc(strlen(text) + 128);
	sprintf(full, "{ .reg .pred p; setp.ne.b32 p, $%d, 0; %s }", na + 5, text);
	mm_asm_call(x, m->t_void, "wgmma.fence.sync.aligned;", "~{memory}", NULL, 0);
	for (int kk = 0; kk < c->bk / 16; kk++) {
		int64_t kpan = kk * 32 / 128, kin = kk * 32 % 128;
		LLVMValueRef b = mm_addc(x, sb, x->trans[1] ?
					 kpan * x->outer[1] * 128 + kin : kk * 16 * 128);
		LLVMValueRef ex[6] = {a[4 * kk], a[4 * kk + 1], a[4 * kk + 2], a[4 * kk + 3],
				      wg_desc(x, b, x->trans[1] ? 16 : (int64_t)c->bk * 128, 1024),
				      mm_i32c(x, 1)};
		wg_asm(x, full, ex, 6, 0, na);
	}
	mm_asm_call(x, m->t_void, "wgmma.commit_group.sync.aligned;", "~{memory}", NULL, 0);
	if (wait)
		mm_wg_wait(x, 0);
	free(text);
	free(full);
}
