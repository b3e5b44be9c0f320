/* kernel_matmul.c: the matmul family: batched a[..., m, k] x b[..., k, n], batch
 * dims broadcast.
 *
 * cg_eval_matmul is an evaluator node (see eval.c): given the output index it emits
 * the loop over k that computes that one element, reading both operands through
 * cg_eval (so elementwise producers fuse on read). This is the plain version: one
 * thread per output element, the accumulator in a register (the input's float type,
 * or i64 for integers). It serves the dtypes and archs the tiled kernel below does
 * not take.
 *
 * The tiled kernel (cg_matmul_tiled) and its tile-configuration table follow it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_impl.h"

LLVMValueRef cg_eval_matmul(CgKb *kb, const RelOp *op, CgIdx *out)
{
	const RelTensor *a = &op->t[0], *b = &op->t[1];
	DType it = (DType)a->dtype;
	DType t = ir_dtype_is_float(it) ? it : DT_I64;  /* accumulator dtype */
	int r = a->rank;
	CgLoop l;
	cg_loop_begin(kb, &l, cg_i64(kb, 0), cg_dim(kb, a->shape[r - 1]), cg_i64(kb, 1));
	LLVMValueRef acc = cg_carry(kb, &l, cg_zero(kb, t));
	LLVMValueRef pa[IR_MAX_RANK], pb[IR_MAX_RANK];
	for (int d = 0; d < r - 2; d++) {
		pa[d] = a->shape[d] == 0 ? cg_i64(kb, 0) : out->i[d];
		pb[d] = b->shape[d] == 0 ? cg_i64(kb, 0) : out->i[d];
	}
	pa[r - 2] = out->i[r - 2];
	pa[r - 1] = l.i;
	pb[r - 2] = l.i;
	pb[r - 1] = out->i[r - 1];
	CgIdx xa = cg_idx_at(a, pa), xb = cg_idx_at(b, pb);
	LLVMValueRef va = cg_convert(kb, cg_eval(kb, a->id, &xa), it, t);
	LLVMValueRef vb = cg_convert(kb, cg_eval(kb, b->id, &xb), it, t);
	cg_carry_next(kb, &l, acc, cg_binary_value(kb, OP_ADD, t, acc, cg_binary_value(kb, OP_MUL, t, va, vb)));
	cg_loop_end(kb, &l);
	return cg_convert(kb, acc, t, it);
}

/* ---- the tiled kernel ----------------------------------------------------------
 *
 * A Matmul kernel (a matmul and its elementwise epilogue, or a matmul alone) whose
 * operands are f16, bf16 or f32 runs as a tiled kernel when lower.c picks a tile
 * configuration for it (cg_matmul_variant; 0 keeps the one-thread-per-element
 * evaluator of kernel_single.c, for the other dtypes and archs before sm_80).
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
 *   - tensor-core configurations (f16, bf16): 8 warps in a WM x WN grid, each warp
 *     computing (BM/WM) x (BN/WN) with mma.sync m16n8k16 (f32 accumulators), its A
 *     fragments read with ldmatrix.x4 and its B fragments with ldmatrix.x4.trans;
 *   - SIMT configurations (f32): 16 x 16 threads, each computing (BM/16) x (BN/16)
 *     outputs with FMAs from shared memory (rows ty*4+i and 64 + ty*4+i, the same for
 *     columns, so that B reads are 16-byte vectors);
 *   - the epilogue runs in registers: every accumulator of a thread becomes the
 *     matmul's value at its (batch, row, column) in the evaluator's memo, and every
 *     written tensor of the kernel is evaluated there (bias, residual, activation,
 *     cast: anything the elementwise evaluator does) and stored, predicated on the
 *     edges.
 *
 * On the host (the `cpu` backend) a block's threads become loops: each stretch
 * between two barriers (a phase) runs as a loop over the thread ids, thread-private
 * accumulators live in an array indexed by thread id, shared memory is a stack
 * array with the same swizzled layout, cp.async is a plain copy, and the mma.sync
 * fragment is replaced by its scalar definition: the thread's accumulator at (row,
 * col) of the warp tile gains sum_k A[row][k] * B[k][col] over the stage, read from
 * the same shared layout. So tile edges, swizzles, fragment-to-element maps, batch
 * broadcasting and epilogues are checked against the interpreter without a GPU;
 * ldmatrix's and mma's register layouts are checked by the numeric check on the
 * GPU (tests/bench/gpu/run_gpu.sh check).
 *
 * Operands may arrive through swap_dims / permute views (the Matmul fuser takes them
 * in front of the matmul): operand_layout turns the view into strides of the tensor
 * it reads; an operand whose rows are contiguous (transposed) is kept transposed in
 * shared memory and read with the other ldmatrix form. Tiny M (M <= 16) takes the
 * gemv configuration (gemv_tile_loop below); --allow-tf32 the tf32 configurations
 * (mma.sync m16n8k8, operands rounded by cvt.rna.tf32.f32, the host rounding the
 * same way before the scalar fragment).
 *
 * Under a wave of output tiles the split-K configurations (`...skS`) give each tile
 * S blocks over contiguous shares of K: each writes its accumulators to the launch's
 * scratch, and the last block of the tile to finish sums the S partials in split
 * order, zeroes them, and runs the epilogue (split_combine): the same bytes from run
 * to run, no float atomics; the host runs the same units in order.
 *
 * Launch: a cooperative launch (codegen.h) of MM_THREADS threads per block and one
 * block per output tile, S per tile for split-K (mm_rule, which also asks for the
 * scratch); the loop over tiles makes any grid correct. Shared
 * memory is static up to 48 KiB; configurations needing more take the launch's
 * dynamic shared memory (mm_rule sets its bytes). On the host the
 * function keeps the plain signature: called as thread 0 of 1 it runs every tile. */


enum {
	MM_THREADS = 256,        /* = CG_BLOCK, the kernels' maxntid */
	MM_GROUP_M = 8,          /* tile rows per L2 group */
	MM_SMEM_STATIC = 48 * 1024, /* static shared memory limit; above it, dynamic */
	MM_WAVE = 132,           /* H200 multiprocessors: tiles below this favour smaller tiles */
	MM_GEMV_M = 16,          /* rows up to which the gemv configuration is chosen */
	MM_GEMV = 7,             /* its index in the table */
	MM_TC256 = 8,            /* tc128x256x32s4's index */
	MM_LONG_K = 2048,        /* K from which tc128x256x32s4 is taken (given a wave) */
	/* the rule under a wave (cg_matmul_variant, measured: docs/benchmarks.md,
	 * "Matmul under a wave"); indices of the split entries below */
	MM_F64SK3 = 9, MM_F64SK4 = 10, MM_F128SK4 = 11, MM_TCSK2 = 12, MM_TCSK4 = 13,
	MM_FULL = 118,           /* blocks counted as a wave (0.9 x 132) for fma128x128 */
	MM_SPLIT_FEW = 33,       /* 64x64 tiles up to which K splits 4 ways (4 x 33 = 132) */
	MM_SPLIT_SOME = 96,      /* f32: 64x64 tiles below which K splits 3 ways */
	MM_SPLIT_STEPS = 4,      /* BK steps a split keeps at least */
	MM_SPLIT_STEPS128 = 16,  /* the same for fma128x128x16s3sk4 */
	MM_TINY_K = 64,          /* f32 matmuls of K up to this ... */
	MM_TINY_OUT = 65536,     /* ... and up to this many outputs run plain */
	MM_WG128 = 14, MM_WG256 = 15, /* the wgmma entries (sm_90a) */
	MM_WG_ALIGN = 1024,      /* wgmma's 128-byte swizzle repeats every 1024 bytes */
};

/* The tile-configuration table (docs/design.md, "Matmul tiles"). Index 0 is "no
 * tiling". Every entry fits MM_THREADS threads; entries whose shared memory (mm_smem)
 * exceeds MM_SMEM_STATIC take it as the launch's dynamic shared memory. */
typedef struct {
	const char *name;
	bool tc;                 /* tensor cores (f16/bf16, or tf32) or SIMT FMA (f32) */
	bool tf32;               /* tc over f32 operands rounded to tf32 (--allow-tf32) */
	bool gemv;               /* tiny M: BM rows x BN columns per block, K split over
				    the 8 warps (bk = 8), summed in warp order */
	int min_blocks;          /* blocks per SM to ask of ptxas (minnctapersm), 0: none */
	int bm, bn, bk;          /* block tile */
	int wm, wn;              /* tc: warps along M and N (wm * wn = 8) */
	int stages;              /* shared-memory pipeline depth */
	int split;               /* split-K: blocks per output tile (0: one) */
	bool wg;                 /* sm_90a: wgmma from shared memory (panel layout) */
} MmConfig;

static const MmConfig mm_configs[] = {
	{"plain", false, false, false, 0, 0, 0, 0, 0, 0, 0, 0, false},
	/* 2 blocks per SM: ptxas fits 128 registers (a few hundred bytes of spills), and
	 * 16 warps hide ldmatrix and mma latency better than 8; BK = 64 and 96 KiB of
	 * dynamic shared memory: half the barriers of BK = 32, and a short K (G7,
	 * K = 256) is in flight after the prologue */
	{"tc128x128x64s3", true, false, false, 2, 128, 128, 64, 2, 4, 3, 0, false},
	{"tc64x64x32s3", true, false, false, 0, 64, 64, 32, 2, 4, 3, 0, false},
	{"fma128x128x16s3", false, false, false, 0, 128, 128, 16, 0, 0, 3, 0, false},
	{"fma64x64x16s3", false, false, false, 0, 64, 64, 16, 0, 0, 3, 0, false},
	/* --allow-tf32: mma.sync m16n8k8 tf32; f32 stages are twice the bytes, so the
	 * large tile takes half the K of the bf16 tiles to stay within 48 KiB */
	{"tf32x128x128x16s3", true, true, false, 0, 128, 128, 16, 2, 4, 3, 0, false},
	{"tf32x64x64x32s3", true, true, false, 0, 64, 64, 32, 2, 4, 3, 0, false},
	/* M <= MM_GEMV_M (decode): no shared operand tiles, every dtype and arch */
	{"gemv16x64k8", false, false, true, 0, 16, 64, 8, 0, 0, 0, 0, false},
	/* long K with a wave of 128x256 tiles (G5): 64x64 warp tiles (8 ldmatrix.x4
	 * per 32 mma), 4 stages (96 KiB), 255 registers, one block per SM */
	{"tc128x256x32s4", true, false, false, 1, 128, 256, 32, 2, 4, 4, 0, false},
	/* split-K (under a wave of output tiles): `split` blocks share an output tile,
	 * each taking a contiguous share of K; their partial tiles go to the launch's
	 * scratch and the last of them sums the partials in split order, then runs the
	 * epilogue (split_combine). Two blocks per SM asked of ptxas (128 registers):
	 * unbounded, the combine's loads took up to 207 (docs/benchmarks.md, "Matmul
	 * under a wave") */
	{"fma64x64x16s3sk3", false, false, false, 2, 64, 64, 16, 0, 0, 3, 3, false},
	{"fma64x64x16s3sk4", false, false, false, 2, 64, 64, 16, 0, 0, 3, 4, false},
	{"fma128x128x16s3sk4", false, false, false, 0, 128, 128, 16, 0, 0, 3, 4, false},
	{"tc64x64x32s3sk2", true, false, false, 2, 64, 64, 32, 2, 4, 3, 2, false},
	{"tc64x64x32s3sk4", true, false, false, 2, 64, 64, 32, 2, 4, 3, 4, false},
	/* sm_90a (the default arch): wgmma.mma_async m64nBNk16 straight from the
	 * stages, one warpgroup per 64 rows (the warp grid 8 x 1 is the accumulator
	 * layout of wgmma: warp w holds rows 16w..16w+15 of the block tile, the same
	 * fragment-to-element map as mma.sync's m16n8 repeated along N); operand
	 * tiles in 128-byte panels with the 128-byte swizzle (wg_desc) */
	{"wg128x128x64s4", true, false, false, 1, 128, 128, 64, 8, 1, 4, 0, true},
	{"wg128x256x64s4", true, false, false, 1, 128, 256, 64, 8, 1, 4, 0, true},
};
enum { MM_NCONFIGS = (int)(sizeof mm_configs / sizeof mm_configs[0]) };

/* Shared bytes of configuration c over elements of es bytes: its stages, or for gemv
 * the staged tile and one partial tile per warp. */
static int mm_stages_bytes(const MmConfig *c, int es)
{
	if (c->gemv)
		return c->bm * (c->bn + 8) * 4 + (MM_THREADS / 32) * c->bm * c->bn * 4;
	return (c->bm * c->bk + c->bk * c->bn) * es * c->stages;
}

/* What the launch asks for: the stages, and for wgmma room to align them to
 * MM_WG_ALIGN at run time. */
static int mm_smem(const MmConfig *c, int es)
{
	return mm_stages_bytes(c, es) + (c->wg ? MM_WG_ALIGN : 0);
}

const char *cg_matmul_variant_name(int v)
{
	return v > 0 && v < MM_NCONFIGS ? mm_configs[v].name : "plain";
}

bool cg_matmul_splits(int v)
{
	return v > 0 && v < MM_NCONFIGS && mm_configs[v].split > 1;
}

int cg_matmul_nvariants(void)
{
	return MM_NCONFIGS;
}

/* The index of the matmul in spec's ops, after its leading views: swap_dims or
 * permute ops that read a tensor from memory and whose result is an operand of the
 * matmul and nothing else (the Matmul fuser's transposed operands); -1 if the ops do
 * not start that way. */
int cg_matmul_index(const CgKernelSpec *s)
{
	int i = 0;
	while (i < s->nops && (s->ops[i].kind == OP_SWAP_DIMS || s->ops[i].kind == OP_PERMUTE))
		i++;
	if (i >= s->nops || s->ops[i].kind != OP_MATMUL || i > 2)
		return -1;
	const RelOp *mm = &s->ops[i];
	for (int v = 0; v < i; v++) {
		const RelOp *op = &s->ops[v];
		int id = op->t[1].id;
		if (mm->t[0].id != id && mm->t[1].id != id)
			return -1;
		if (id < s->nwritten && s->written[id])
			return -1;
		for (int u = 0; u < v; u++)
			if (s->ops[u].t[1].id == op->t[0].id)
				return -1;
		if (op->kind == OP_PERMUTE && op->attr.n != op->t[1].rank)
			return -1;
		for (int d = 0; d < op->attr.n && op->kind == OP_PERMUTE; d++)
			if (op->attr.axes[d] >= op->t[1].rank)
				return -1;
		if (op->kind == OP_SWAP_DIMS && (op->attr.axes[0] >= op->t[1].rank ||
						 op->attr.axes[1] >= op->t[1].rank))
			return -1;
	}
	return i;
}

/* Whether spec is a matmul the tiled kernel takes: the matmul (after its leading
 * views, cg_matmul_index) of f16, bf16 or f32 operands, every later op elementwise,
 * every written tensor of the matmul's output shape. */
static bool eligible(const CgKernelSpec *s)
{
	int mi = cg_matmul_index(s);
	if (mi < 0)
		return false;
	const RelOp *mm = &s->ops[mi];
	DType t = (DType)mm->t[0].dtype;
	if (t != DT_F16 && t != DT_BF16 && t != DT_F32)
		return false;
	if (mm->t[1].dtype != t || mm->t[0].rank < 2 || mm->t[1].rank != mm->t[0].rank)
		return false;
	const RelTensor *out = &mm->t[mm->nin];
	for (int i = mi + 1; i < s->nops; i++) {
		const RelOp *op = &s->ops[i];
		OpFamily f = ir_ops[op->kind].family;
		if (f != FAM_BINARY && f != FAM_SCALAR && f != FAM_UNARY && f != FAM_COMPARE &&
		    f != FAM_SELECT && f != FAM_CAST)
			return false;
		for (int k = 0; k < op->nin + op->nout; k++)
			if (op->t[k].rank != out->rank)
				return false;
		for (int k = 0; k < op->nout; k++) {
			const RelTensor *r = &op->t[op->nin + k];
			if (memcmp(r->shape, out->shape, sizeof *r->shape * (size_t)out->rank))
				return false;
		}
	}
	for (int i = 0; i < s->nwritten; i++) {
		if (!s->written[i])
			continue;
		bool found = false;
		for (int j = mi; j < s->nops && !found; j++) {
			const RelOp *op = &s->ops[j];
			for (int k = 0; k < op->nout; k++)
				if (op->t[op->nin + k].id == i)
					found = true;
		}
		if (!found)
			return false;
	}
	return true;
}

static int64_t dim_of(uint32_t id, const int64_t *dims, int ndims)
{
	return id == 0 || (int)id >= ndims ? 1 : dims[id];
}

/* Whether configuration c computes operands of dtype t (tf32: when allowed). */
static bool fits(const MmConfig *c, DType t, bool tf32)
{
	if (c->gemv)
		return true;
	if (t != DT_F32)
		return c->tc && !c->tf32;
	return !c->tc || (c->tf32 && tf32);
}

/* f32 and f16/bf16 (tc) below a wave of 128x128 tiles; big: 128x128 tiles, small:
 * 64x64 tiles, k: K. The table (docs/benchmarks.md, "Matmul under a wave"):
 *   - f32: fma128x128x16s3 from 0.9 of a wave of 128x128 tiles (MLP up of G6, 128
 *     tiles: 133 us against 169 with 64x64 tiles); fma128x128x16s3sk4 where 4 splits
 *     of at least 16 steps bring it there (G6's projections and MLP down);
 *   - else 64x64 tiles, K split 4 ways up to 33 tiles (4 x 33 blocks: one per SM;
 *     the base models' 768-wide outputs at M = 128, 24 tiles), 3 ways below 96
 *     tiles (2304 wide: 72 tiles), not from 96 (3072 wide: splitting was slower);
 *   - tc: K split 4 ways up to 33 tiles, 2 ways below two waves when K >= 2048 (G6's
 *     MLP down in bf16, 128 tiles: 33 us against 48), else none;
 * each split keeping at least MM_SPLIT_STEPS steps of BK (fewer splits where K is
 * short). */
static int under_wave(DType t, int64_t big, int64_t small, int64_t k)
{
	if (t == DT_F32) {
		if (big >= MM_FULL)
			return 3;
		if (big * 4 >= MM_FULL && k >= 4 * 16 * MM_SPLIT_STEPS128)
			return MM_F128SK4;
		if (small <= MM_SPLIT_FEW && k >= 4 * 16 * MM_SPLIT_STEPS)
			return MM_F64SK4;
		if (small < MM_SPLIT_SOME && k >= 3 * 16 * MM_SPLIT_STEPS)
			return MM_F64SK3;
		return 4;
	}
	if (small <= MM_SPLIT_FEW && k >= 4 * 32 * MM_SPLIT_STEPS)
		return MM_TCSK4;
	if (small < 2 * MM_WAVE && k >= MM_LONG_K)
		return MM_TCSK2;
	return 2;
}

int cg_matmul_variant(const CgKernelSpec *s, const char *arch, bool host, bool allow_tf32,
		      const int64_t *dims, int ndims)
{
	if ((s->kind != CG_KERNEL_MATMUL && s->kind != CG_KERNEL_SINGLE) || !eligible(s))
		return 0;
	const RelOp *mm = &s->ops[cg_matmul_index(s)];
	const RelTensor *out = &mm->t[mm->nin];
	DType t = (DType)mm->t[0].dtype;
	int r = out->rank;
	int64_t batch = 1;
	for (int d = 0; d < r - 2; d++)
		batch *= dim_of(out->shape[d], dims, ndims);
	int64_t m = dim_of(out->shape[r - 2], dims, ndims);
	int64_t n = dim_of(out->shape[r - 1], dims, ndims);
	int64_t big = batch * ((m + 127) / 128) * ((n + 127) / 128);
	/* measuring the table (docs/benchmarks.md): FUSEC_MATMUL_TILES=NAME forces the
	 * configuration NAME wherever its kind (tc or fma) applies; "plain" the
	 * one-thread-per-output evaluator */
	/* mma.sync (m16n8k16, m16n8k8 tf32) and cp.async need sm_80: every tile
	 * configuration but gemv stages its operands with cp.async; wgmma sm_90a (the
	 * host runs the arch's tiling: the cpu backend checks what the GPU plan runs) */
	bool sm80 = host || (arch && !strncmp(arch, "sm_", 3) && atoi(arch + 3) >= 80);
	bool wg = arch && !strcmp(arch, "sm_90a");
	bool tf32 = allow_tf32 && sm80;
	const char *force = getenv("FUSEC_MATMUL_TILES");
	if (force && !strcmp(force, "plain"))
		return 0;
	for (int v = 1; force && v < MM_NCONFIGS; v++)
		if (!strcmp(force, mm_configs[v].name) && fits(&mm_configs[v], t, tf32) &&
		    (mm_configs[v].gemv || sm80) && (!mm_configs[v].wg || wg) &&
		    (!mm_configs[v].gemv || m <= MM_GEMV_M))
			return v;
	int64_t k = dim_of(mm->t[0].shape[r - 1], dims, ndims);
	/* a tiny f32 problem runs plain: one thread per output, at most MM_TINY_K FMAs
	 * each, is as fast as a tile (the launch is most of the time) and up to 3.5x
	 * faster than gemv at short K; its code is a tenth of a tile kernel's to
	 * compile (docs/benchmarks.md, "Tiny matmuls") */
	if (t == DT_F32 && !tf32 && k <= MM_TINY_K && batch * m * n <= MM_TINY_OUT)
		return 0;
	if (m <= MM_GEMV_M)
		return MM_GEMV;
	if (t == DT_F32 && tf32)
		return big >= MM_WAVE ? 5 : 6;
	if (!sm80)
		return 0;
	int64_t small = batch * ((m + 63) / 64) * ((n + 63) / 64);
	if (t == DT_F32)
		return under_wave(t, big, small, k);
	int64_t big256 = batch * ((m + 127) / 128) * ((n + 255) / 256);
	/* sm_90a (docs/benchmarks.md, "wgmma"): 128x256 tiles from three waves of
	 * them (8192^3, 4096^3), 128x128 from half a wave of those (BERT at batch 8:
	 * 96 to 384 tiles, 1.3 to 2x faster than 128x256 there and than mma.sync's
	 * split-K under a wave), the mma.sync rule below that */
	if (wg && big256 >= 3 * MM_WAVE)
		return MM_WG256;
	if (wg && 2 * big >= MM_WAVE)
		return MM_WG128;
	if (big256 >= MM_WAVE && k >= MM_LONG_K)
		return MM_TC256;
	return big >= MM_WAVE ? 1 : under_wave(t, big, small, k);
}

/* ---- the builder ------------------------------------------------------------- */

typedef struct {
	CgKb *kb;
	LLVMBuilderRef b;
	const MmConfig *c;
	bool gpu;
	DType dt;
	int es;                   /* element bytes */
	int ce;                   /* elements per 16-byte chunk */
	const RelOp *op;
	const RelTensor *ta, *tb, *to;
	int rank;
	/* per operand (0 = A, 1 = B): the buffer it is read from (its own, or the one
	 * its leading view reads) and the element strides of its dims there (i64):
	 * batch dims, then the tile's rows (dim rank-2) and columns (dim rank-1) */
	LLVMValueRef src[2];
	LLVMValueRef ost[2][IR_MAX_RANK];
	/* operand w is stored transposed (its rows contiguous: a swap_dims or permute
	 * of the last two dims): its shared tile is kept in that layout, columns x
	 * rows, and read with the other ldmatrix form */
	bool trans[2];
	LLVMValueRef M, N, K;
	LLVMValueRef smem;        /* i8 pointer: shared memory (GPU) or a stack array */
	LLVMTypeRef sptr;         /* its pointer type */
	LLVMValueRef acc;         /* float array: GPU [nacc], host [MM_THREADS * nacc] */
	int nacc;
	LLVMValueRef tid;         /* i64 thread id within the block (current phase on the host) */
	LLVMTypeRef ot;           /* shared-memory offsets: i32 on the GPU, i64 on the host */
	LLVMValueRef sbase;       /* GPU: the shared array's address, i32 */
	LLVMValueRef soff[2];     /* stage offsets (ot) read and refilled by this K step */
	CgLoop phase;
	LLVMValueRef fast[2];     /* i1 per operand: 16-byte chunks may be copied whole */
	bool all_fast;            /* this copy of the tile loop knows both are */
	LLVMValueRef vecok;       /* i1: the epilogue may store column vectors */
	int epi_rows;             /* rows of the block tile per epilogue pass */
	LLVMValueRef base[2];     /* element offset of the current tile's batch in A, B */
	LLVMValueRef bpos[IR_MAX_RANK]; /* batch position of the current tile */
	LLVMValueRef m0, n0;
	int a_bytes, stage_bytes;
	int cpr[2];               /* chunks per shared row: A (BK), B (BN) */
	int outer[2];             /* rows of each shared tile (its outer dimension) */
	bool panel;               /* wgmma: tiles in 128-byte panels (swz) */
	int wtm, wtn, mi, ni;     /* tc: warp tile and its m16 / n8 counts */
	int rm, rn;               /* simt: rows and columns per thread */
	/* the builder's value numbering (mm_cse below) */
	struct MmCse *cse;
	size_t ncse, capcse;
} Mm;

static LLVMValueRef i64c(Mm *x, int64_t v)
{
	return cg_i64(x->kb, v);
}

static LLVMValueRef i32c(Mm *x, int v)
{
	return LLVMConstInt(x->kb->m->t_i32, (unsigned)v, 0);
}

/* ---- value numbering while building ----
 *
 * The tile code computes the same index arithmetic many times over (a shared
 * address per element of every unrolled K step, each from the thread id), and
 * LLVM's InstCombine and GVN spent most of a kernel's optimization time merging it
 * again. The integer helpers below build an instruction only once per basic block:
 * an operation on the same operands in the same block returns the instruction built
 * before (the builder only ever appends, so that one precedes the use), and the
 * neutral cases (x + 0, x * 1, x ^ 0, x / 1, ...) return their operand. Only pure
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
 * to record a new one (mm_cse_put). */
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

static LLVMValueRef bin(Mm *x, LLVMOpcode op, LLVMValueRef a, LLVMValueRef b)
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

static LLVMValueRef add(Mm *x, LLVMValueRef a, LLVMValueRef b)
{
	return bin(x, LLVMAdd, a, b);
}

static LLVMValueRef mul(Mm *x, LLVMValueRef a, LLVMValueRef b)
{
	return bin(x, LLVMMul, a, b);
}

static LLVMValueRef lt(Mm *x, LLVMValueRef a, LLVMValueRef b)
{
	LLVMValueRef r = cse_get(x, MM_CSE_ICMP + LLVMIntSLT, a, b);
	if (r)
		return r;
	return cse_put(x, MM_CSE_ICMP + LLVMIntSLT, a, b, LLVMBuildICmp(x->b, LLVMIntSLT, a, b, ""));
}

/* the constant v of a's integer type */
static LLVMValueRef cst(LLVMValueRef a, int64_t v)
{
	return LLVMConstInt(LLVMTypeOf(a), (unsigned long long)v, 1);
}

static LLVMValueRef addc(Mm *x, LLVMValueRef a, int64_t c)
{
	return bin(x, LLVMAdd, a, cst(a, c));
}

static LLVMValueRef mulc(Mm *x, LLVMValueRef a, int64_t c)
{
	return bin(x, LLVMMul, a, cst(a, c));
}

static LLVMValueRef udivc(Mm *x, LLVMValueRef a, int64_t c)
{
	return bin(x, LLVMUDiv, a, cst(a, c));
}

static LLVMValueRef uremc(Mm *x, LLVMValueRef a, int64_t c)
{
	return bin(x, LLVMURem, a, cst(a, c));
}

/* a shared-memory offset (x->ot) as i64, or the other way */
static LLVMValueRef to64(Mm *x, LLVMValueRef a)
{
	return LLVMTypeOf(a) == x->kb->m->t_i64 ? a : cast(x, LLVMZExt, a, x->kb->m->t_i64);
}

static LLVMValueRef to_ot(Mm *x, LLVMValueRef a)
{
	return LLVMTypeOf(a) == x->ot ? a : cast(x, LLVMTrunc, a, x->ot);
}

static LLVMValueRef ceil_div(Mm *x, LLVMValueRef a, int64_t c)
{
	return udivc(x, add(x, a, i64c(x, c - 1)), c);
}

static LLVMValueRef min64(Mm *x, LLVMValueRef a, LLVMValueRef b)
{
	return LLVMBuildSelect(x->b, lt(x, a, b), a, b, "");
}

static LLVMValueRef intrinsic(Mm *x, const char *name, LLVMTypeRef *types, int ntypes,
			      LLVMValueRef *args, int nargs)
{
	return cg_intrinsic(x->kb, name, types, ntypes, args, nargs);
}

static void barrier(Mm *x)
{
	if (x->gpu)
		intrinsic(x, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
}

/* A phase: code between two barriers. On the GPU the calling thread runs it; on the
 * host it is a loop over every thread id of the block. Returns the thread id. */
static LLVMValueRef phase_begin(Mm *x)
{
	if (x->gpu)
		return x->tid;
	cg_loop_begin(x->kb, &x->phase, i64c(x, 0), i64c(x, MM_THREADS), i64c(x, 1));
	x->tid = x->phase.i;
	return x->tid;
}

/* GPU: the thread id through an opaque move, so that what the epilogue derives from
 * it is computed where it is used, not hoisted out of the tile loop to occupy
 * registers through the main loop. */
static LLVMValueRef opaque_tid(Mm *x, LLVMValueRef tid)
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

static void phase_end(Mm *x)
{
	if (!x->gpu)
		cg_loop_end(x->kb, &x->phase);
}

/* Pointer to accumulator e (constant or i64) of thread tid. */
static LLVMValueRef acc_ptr(Mm *x, LLVMValueRef e)
{
	LLVMValueRef i = x->gpu ? e : add(x, mul(x, x->tid, i64c(x, x->nacc)), e);
	return LLVMBuildGEP2(x->b, x->kb->m->t_f32, x->acc, &i, 1, "");
}

static LLVMValueRef acc_load(Mm *x, LLVMValueRef e)
{
	return LLVMBuildLoad2(x->b, x->kb->m->t_f32, acc_ptr(x, e), "");
}

static void acc_store(Mm *x, LLVMValueRef e, LLVMValueRef v)
{
	LLVMBuildStore(x->b, v, acc_ptr(x, e));
}

/* Byte offset in a shared tile with cpr 16-byte chunks per row of (row, chunk):
 * the chunk is XORed with bits of the row so that 8 consecutive rows at one chunk
 * fall in 8 different 16-byte groups of a 128-byte line. */
static LLVMValueRef swz(Mm *x, int w, LLVMValueRef row, LLVMValueRef ch)
{
	int cpr = x->cpr[w];
	if (x->panel) {
		/* wgmma's layout: the tile's rows cut into panels of 128 bytes (8
		 * chunks), each panel outer rows x 128 bytes, chunk XOR row % 8 (the
		 * 128-byte swizzle; a row of 128 bytes is one panel, the layout above) */
		row = to_ot(x, row);
		ch = to_ot(x, ch);
		LLVMValueRef phys = bin(x, LLVMXor, bin(x, LLVMAnd, ch, cst(ch, 7)),
					bin(x, LLVMAnd, row, cst(row, 7)));
		LLVMValueRef pan = mulc(x, udivc(x, ch, 8), (int64_t)x->outer[w] * 128);
		return add(x, add(x, pan, mulc(x, row, 128)), mulc(x, phys, 16));
	}
	int per_line = cpr >= 8 ? 1 : 8 / cpr;   /* rows per 128-byte line */
	int mask = (cpr >= 8 ? 8 : cpr) - 1;
	row = to_ot(x, row);
	ch = to_ot(x, ch);
	LLVMValueRef bits = bin(x, LLVMAnd, udivc(x, row, per_line), cst(row, mask));
	LLVMValueRef phys = bin(x, LLVMXor, ch, bits);
	return add(x, mulc(x, row, (int64_t)cpr * 16), mulc(x, phys, 16));
}

static LLVMValueRef smem_at(Mm *x, LLVMValueRef byte)
{
	LLVMValueRef r = cse_get(x, MM_CSE_GEP, x->smem, byte);
	if (r)
		return r;
	return cse_put(x, MM_CSE_GEP, x->smem, byte,
		       LLVMBuildGEP2(x->b, x->kb->m->t_i8, x->smem, &byte, 1, ""));
}

/* GPU: the 32-bit shared address of a byte offset */
static LLVMValueRef saddr(Mm *x, LLVMValueRef byte)
{
	return add(x, x->sbase, byte);
}

/* Byte offset (ot) of the shared copy of operand w (0 = A, 1 = B) in a stage whose
 * offset is s (ot). */
static LLVMValueRef stage_off(Mm *x, LLVMValueRef s, int w)
{
	return w ? addc(x, s, x->a_bytes) : s;
}

/* Inline PTX (GPU): sideeffect keeps it in order with barriers and cp.async waits. */
static LLVMValueRef asm_call(Mm *x, LLVMTypeRef ret, const char *text, const char *cons,
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

/* ldmatrix .x4 (trans for B) at a 32-bit shared address: four b32 registers */
static LLVMValueRef ldmatrix4(Mm *x, LLVMValueRef addr, bool trans)
{
	CgModule *m = x->kb->m;
	LLVMTypeRef el[4] = {m->t_i32, m->t_i32, m->t_i32, m->t_i32};
	LLVMTypeRef st = LLVMStructTypeInContext(m->ctx, el, 4, 0);
	return asm_call(x, st, trans ?
		"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {$0, $1, $2, $3}, [$4];" :
		"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {$0, $1, $2, $3}, [$4];",
		"=r,=r,=r,=r,r,~{memory}", &addr, 1);
}

/* raw storage integer of one element: i16 or i32 */
static LLVMTypeRef raw_type(Mm *x)
{
	return x->es == 2 ? x->kb->m->t_i16 : x->kb->m->t_i32;
}

/* Copy the tile of operand w for K step kt into stage s (one phase). A: rows m0.., cols
 * kt*BK..; B: rows kt*BK.., cols n0... Out-of-range elements are zeros. */
static void load_tile(Mm *x, int w, LLVMValueRef s, LLVMValueRef kt)
{
	CgKb *kb = x->kb;
	CgModule *m = kb->m;
	const MmConfig *c = x->c;
	bool tr = x->trans[w];
	int rows = w ? c->bk : c->bm, cols = w ? c->bn : c->bk;
	int cpr = x->cpr[w];
	int per = (tr ? cols : rows) * cpr / MM_THREADS;
	LLVMValueRef r0 = w ? mulc(x, kt, c->bk) : x->m0;
	LLVMValueRef c0 = w ? x->n0 : mulc(x, kt, c->bk);
	LLVMValueRef nrows = w ? x->K : x->M, ncols = w ? x->N : x->K;
	LLVMValueRef ldr = x->ost[w][x->rank - 2], ldc = x->ost[w][x->rank - 1];
	/* the shared tile's rows (outer) and contiguous columns (inner): the operand's
	 * rows and columns, or the other way round when it is stored transposed */
	LLVMValueRef o0 = tr ? c0 : r0, i0 = tr ? r0 : c0;
	LLVMValueRef obound = tr ? ncols : nrows, ibound = tr ? nrows : ncols;
	LLVMValueRef ostr = tr ? ldc : ldr, istr = tr ? ldr : ldc;
	LLVMValueRef buf = x->src[w];
	LLVMValueRef soff = stage_off(x, s, w);
	LLVMValueRef tids = to_ot(x, phase_begin(x));
	LLVMTypeRef vt = LLVMVectorType(m->t_i32, 4);
	LLVMTypeRef rt = raw_type(x);

	LLVMBasicBlockRef bfast = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "ld.fast");
	LLVMBasicBlockRef bslow = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "ld.elem");
	LLVMBasicBlockRef bdone = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "ld.done");
	LLVMBuildCondBr(x->b, x->all_fast ? LLVMConstInt(m->t_i1, 1, 0) : x->fast[w], bfast, bslow);
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1 && x->all_fast) {
			/* unreachable in this copy of the loop */
			LLVMPositionBuilderAtEnd(x->b, bslow);
			LLVMBuildBr(x->b, bdone);
			break;
		}
		LLVMPositionBuilderAtEnd(x->b, pass ? bslow : bfast);
		for (int i = 0; i < per; i++) {
			LLVMValueRef q = addc(x, tids, (int64_t)i * MM_THREADS);
			LLVMValueRef r = udivc(x, q, cpr), ch = uremc(x, q, cpr);
			LLVMValueRef go = add(x, o0, to64(x, r));
			LLVMValueRef gi = add(x, i0, to64(x, mulc(x, ch, x->ce)));
			LLVMValueRef rowok = lt(x, go, obound);
			LLVMValueRef doff = add(x, soff, swz(x, w, r, ch));
			LLVMValueRef dst = smem_at(x, doff);
			LLVMValueRef goff = add(x, x->base[w], mul(x, go, ostr));
			if (pass == 0) {
				/* the leading dimension is a multiple of a chunk: the chunk
				 * is wholly inside or wholly outside */
				LLVMValueRef ok = LLVMBuildAnd(x->b, rowok, lt(x, gi, ibound), "");
				goff = LLVMBuildSelect(x->b, ok, add(x, goff, gi), i64c(x, 0), "");
				LLVMValueRef src = LLVMBuildGEP2(x->b, rt, buf, &goff, 1, "");
				if (x->gpu) {
					LLVMValueRef args[3] = {saddr(x, doff), src,
						LLVMBuildSelect(x->b, ok, i32c(x, 16), i32c(x, 0), "")};
					asm_call(x, m->t_void,
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
			LLVMValueRef vec = LLVMConstNull(LLVMVectorType(rt, (unsigned)x->ce));
			for (int e = 0; e < x->ce; e++) {
				LLVMValueRef gie = add(x, gi, i64c(x, e));
				LLVMValueRef ok = LLVMBuildAnd(x->b, rowok, lt(x, gie, ibound), "");
				LLVMValueRef o = LLVMBuildSelect(x->b, ok, add(x, goff, mul(x, gie, istr)),
								 i64c(x, 0), "");
				LLVMValueRef p = LLVMBuildGEP2(x->b, rt, buf, &o, 1, "");
				LLVMValueRef v = LLVMBuildLoad2(x->b, rt, p, "");
				LLVMSetAlignment(v, (unsigned)x->es);
				v = LLVMBuildSelect(x->b, ok, v, LLVMConstNull(rt), "");
				vec = LLVMBuildInsertElement(x->b, vec, v, i32c(x, e), "");
			}
			LLVMSetAlignment(LLVMBuildStore(x->b, vec, dst), 16);
		}
		LLVMBuildBr(x->b, bdone);
	}
	LLVMPositionBuilderAtEnd(x->b, bdone);
	phase_end(x);
}

static void load_stage(Mm *x, LLVMValueRef s, LLVMValueRef kt)
{
	load_tile(x, 0, s, kt);
	load_tile(x, 1, s, kt);
}

/* Load of element (row, col) of a shared tile of operand w, widened to f32. */
static LLVMValueRef smem_elem(Mm *x, int w, LLVMValueRef soff, LLVMValueRef row,
			      LLVMValueRef col)
{
	CgModule *m = x->kb->m;
	if (x->trans[w]) {
		LLVMValueRef t = row;
		row = col;
		col = t;
	}
	row = to_ot(x, row);
	col = to_ot(x, col);
	LLVMValueRef ch = udivc(x, col, x->ce), within = uremc(x, col, x->ce);
	LLVMValueRef off = add(x, add(x, soff, swz(x, w, row, ch)),
			       mulc(x, within, x->es));
	LLVMValueRef p = smem_at(x, off);
	if (x->dt == DT_F32) {
		LLVMValueRef v = LLVMBuildLoad2(x->b, m->t_f32, p, "");
		LLVMSetAlignment(v, 4);
		return v;
	}
	LLVMValueRef v = LLVMBuildLoad2(x->b, m->t_i16, p, "");
	LLVMSetAlignment(v, 2);
	if (x->dt == DT_F16)
		return LLVMBuildFPExt(x->b, LLVMBuildBitCast(x->b, v, m->t_f16, ""), m->t_f32, "");
	v = LLVMBuildShl(x->b, LLVMBuildZExt(x->b, v, m->t_i32, ""), i32c(x, 16), "");
	return LLVMBuildBitCast(x->b, v, m->t_f32, "");
}

/* tf32 (round to nearest, ties away from zero: cvt.rna.tf32.f32) of the f32 v, as the
 * f32 it stands for: GPU the conversion instruction, host its definition (the 13 low
 * mantissa bits rounded off; infinities and NaNs kept). */
static LLVMValueRef to_tf32(Mm *x, LLVMValueRef v)
{
	CgModule *m = x->kb->m;
	if (x->gpu) {
		LLVMValueRef r = intrinsic(x, "llvm.nvvm.f2tf32.rna", NULL, 0, &v, 1);
		return LLVMBuildBitCast(x->b, r, m->t_f32, "");
	}
	LLVMValueRef bits = LLVMBuildBitCast(x->b, v, m->t_i32, "");
	LLVMValueRef exp = LLVMBuildAnd(x->b, bits, i32c(x, 0x7f800000), "");
	LLVMValueRef special = LLVMBuildICmp(x->b, LLVMIntEQ, exp, i32c(x, 0x7f800000), "");
	LLVMValueRef r = LLVMBuildAnd(x->b, add(x, bits, i32c(x, 0x1000)),
				      LLVMConstInt(m->t_i32, 0xffffe000u, 0), "");
	r = LLVMBuildSelect(x->b, special, bits, r, "");
	return LLVMBuildBitCast(x->b, r, m->t_f32, "");
}

/* tc: the (row, col) in the block tile of accumulator e of thread tid. */
static void tc_pos(Mm *x, LLVMValueRef tid, LLVMValueRef e, LLVMValueRef *row, LLVMValueRef *col)
{
	LLVMValueRef lane = uremc(x, tid, 32), warp = udivc(x, tid, 32);
	LLVMValueRef wmi = udivc(x, warp, x->c->wn), wni = uremc(x, warp, x->c->wn);
	LLVMValueRef mi = udivc(x, e, (int64_t)x->ni * 4);
	LLVMValueRef ni = uremc(x, udivc(x, e, 4), x->ni);
	LLVMValueRef cc = uremc(x, e, 4);
	*row = add(x, add(x, mul(x, wmi, i64c(x, x->wtm)), mul(x, mi, i64c(x, 16))),
		   add(x, udivc(x, lane, 4), mul(x, udivc(x, cc, 2), i64c(x, 8))));
	*col = add(x, add(x, mul(x, wni, i64c(x, x->wtn)), mul(x, ni, i64c(x, 8))),
		   add(x, mul(x, uremc(x, lane, 4), i64c(x, 2)), uremc(x, cc, 2)));
}

/* simt: the (row, col) in the block tile of accumulator e of thread tid. */
static void simt_pos(Mm *x, LLVMValueRef tid, int e, LLVMValueRef *row, LLVMValueRef *col)
{
	int i = e / x->rn, j = e % x->rn;
	LLVMValueRef tx = uremc(x, tid, 16), ty = udivc(x, tid, 16);
	*row = add(x, mul(x, ty, i64c(x, 4)), i64c(x, (i / 4) * 64 + i % 4));
	*col = add(x, mul(x, tx, i64c(x, 4)), i64c(x, (j / 4) * 64 + j % 4));
}

/* tc on the GPU: ldmatrix and mma.sync over the stage. */
static void tc_compute_gpu(Mm *x, LLVMValueRef s)
{
	CgModule *m = x->kb->m;
	const MmConfig *c = x->c;
	LLVMValueRef tid = to_ot(x, x->tid);
	LLVMValueRef lane = uremc(x, tid, 32), warp = udivc(x, tid, 32);
	LLVMValueRef wmi = udivc(x, warp, c->wn), wni = uremc(x, warp, c->wn);
	LLVMValueRef l8 = uremc(x, lane, 8);
	LLVMValueRef j1 = mulc(x, uremc(x, udivc(x, lane, 8), 2), 8);  /* (j&1)*8 */
	LLVMValueRef j2 = udivc(x, lane, 16);                           /* j>>1 */
	LLVMValueRef sa = saddr(x, stage_off(x, s, 0)), sb = saddr(x, stage_off(x, s, 1));
	LLVMTypeRef h2 = LLVMVectorType(m->t_f16, 2);
	LLVMValueRef afr[8][4], bfr[16][2];
	/* tf32 (m16n8k8): a fragment element is one f32, an ldmatrix 8x8 b16 matrix
	 * is 8 x 4 of them, which gives A's fragment (row lane/4, k lane%4) from an
	 * m x k tile and B's (k lane%4, n lane/4) from an n x k tile; ldmatrix cannot
	 * transpose 32-bit elements, so the other two layouts load fragments element by
	 * element */
	LLVMValueRef g = udivc(x, lane, 4), t4 = uremc(x, lane, 4);
	LLVMValueRef ssa = stage_off(x, s, 0), ssb = stage_off(x, s, 1);
	int kstep = c->tf32 ? 8 : 16;
	for (int kk = 0; kk < c->bk / kstep; kk++) {
		if (c->tf32 && x->trans[0]) {
			for (int mi = 0; mi < x->mi; mi++)
				for (int q = 0; q < 4; q++) {
					LLVMValueRef row = add(x, addc(x, mulc(x, wmi, x->wtm),
								  mi * 16 + (q % 2) * 8), g);
					LLVMValueRef col = addc(x, t4, kk * 8 + (q / 2) * 4);
					afr[mi][q] = LLVMBuildBitCast(x->b,
						smem_elem(x, 0, ssa, row, col), m->t_i32, "");
				}
		}
		if (c->tf32 && !x->trans[1]) {
			for (int ni = 0; ni < x->ni; ni++)
				for (int q = 0; q < 2; q++) {
					LLVMValueRef col = add(x, addc(x, mulc(x, wni, x->wtn), ni * 8), g);
					LLVMValueRef row = addc(x, t4, kk * 8 + q * 4);
					bfr[ni][q] = LLVMBuildBitCast(x->b,
						smem_elem(x, 1, ssb, row, col), m->t_i32, "");
				}
		}
		/* A fragments: the four 8x8 matrices (rows 0-7 | 8-15) x (k 0-7 | 8-15),
		 * lanes 8q..8q+7 giving the rows of matrix q; stored transposed (k x m)
		 * they are read as k rows and transposed by ldmatrix */
		for (int mi = 0; mi < x->mi && !(c->tf32 && x->trans[0]); mi++) {
			LLVMValueRef mrow = addc(x, mulc(x, wmi, x->wtm), mi * 16);
			LLVMValueRef row, ch;
			if (x->trans[0]) {
				row = add(x, addc(x, mulc(x, j2, 8), kk * 16), l8);
				ch = add(x, udivc(x, mrow, 8), udivc(x, j1, 8));
			} else {
				row = add(x, mrow, add(x, l8, j1));
				ch = addc(x, j2, kk * 2);
			}
			LLVMValueRef r = ldmatrix4(x, add(x, sa, swz(x, 0, row, ch)),
						   x->trans[0]);
			for (int q = 0; q < 4; q++)
				afr[mi][q] = LLVMBuildExtractValue(x->b, r, (unsigned)q, "");
		}
		/* B fragments of two n8 tiles: matrices (k 0-7, n 0-7), (k 8-15, n 0-7),
		 * (k 0-7, n 8-15), (k 8-15, n 8-15); stored k x n they are transposed by
		 * ldmatrix, stored transposed (n x k) they are read as they are */
		for (int nj = 0; nj < x->ni / 2 && !(c->tf32 && !x->trans[1]); nj++) {
			LLVMValueRef ncol = addc(x, mulc(x, wni, x->wtn), nj * 16);
			LLVMValueRef row, ch;
			if (x->trans[1]) {
				row = add(x, add(x, ncol, mulc(x, j2, 8)), l8);
				ch = addc(x, udivc(x, j1, 8), kk * 2);
			} else {
				row = addc(x, add(x, l8, j1), kk * 16);
				ch = add(x, udivc(x, ncol, 8), j2);
			}
			LLVMValueRef r = ldmatrix4(x, add(x, sb, swz(x, 1, row, ch)),
						   !x->trans[1]);
			for (int q = 0; q < 4; q++)
				bfr[2 * nj + q / 2][q % 2] = LLVMBuildExtractValue(x->b, r, (unsigned)q, "");
		}
		for (int mi = 0; mi < x->mi; mi++)
			for (int ni = 0; ni < x->ni; ni++) {
				LLVMValueRef args[10];
				for (int q = 0; q < 4; q++)
					args[q] = afr[mi][q];
				args[4] = bfr[ni][0];
				args[5] = bfr[ni][1];
				if (x->dt == DT_F16)
					for (int q = 0; q < 6; q++)
						args[q] = LLVMBuildBitCast(x->b, args[q], h2, "");
				if (c->tf32)
					for (int q = 0; q < 6; q++)
						args[q] = LLVMBuildBitCast(x->b, to_tf32(x,
							LLVMBuildBitCast(x->b, args[q], m->t_f32, "")),
							m->t_i32, "");
				int e0 = (mi * x->ni + ni) * 4;
				for (int q = 0; q < 4; q++)
					args[6 + q] = acc_load(x, i64c(x, e0 + q));
				LLVMValueRef r = intrinsic(x, c->tf32 ?
					"llvm.nvvm.mma.m16n8k8.row.col.tf32" : x->dt == DT_F16 ?
					"llvm.nvvm.mma.m16n8k16.row.col.f32.f32" :
					"llvm.nvvm.mma.m16n8k16.row.col.bf16", NULL, 0, args, 10);
				for (int q = 0; q < 4; q++)
					acc_store(x, i64c(x, e0 + q),
						  LLVMBuildExtractValue(x->b, r, (unsigned)q, ""));
			}
	}
}

/* tc on the host: the scalar definition of the same fragments. */
static void tc_compute_host(Mm *x, LLVMValueRef s)
{
	CgKb *kb = x->kb;
	LLVMValueRef sa = stage_off(x, s, 0), sb = stage_off(x, s, 1);
	LLVMValueRef tid = phase_begin(x);
	CgLoop le, lk;
	cg_loop_begin(kb, &le, i64c(x, 0), i64c(x, x->nacc), i64c(x, 1));
	LLVMValueRef row, col;
	tc_pos(x, tid, le.i, &row, &col);
	cg_loop_begin(kb, &lk, i64c(x, 0), i64c(x, x->c->bk), i64c(x, 1));
	LLVMValueRef sum = cg_carry(kb, &lk, LLVMConstReal(kb->m->t_f32, 0));
	LLVMValueRef a = smem_elem(x, 0, sa, row, lk.i);
	LLVMValueRef bv = smem_elem(x, 1, sb, lk.i, col);
	if (x->c->tf32) {
		a = to_tf32(x, a);
		bv = to_tf32(x, bv);
	}
	cg_carry_next(kb, &lk, sum, LLVMBuildFAdd(x->b, sum, LLVMBuildFMul(x->b, a, bv, ""), ""));
	cg_loop_end(kb, &lk);
	acc_store(x, le.i, LLVMBuildFAdd(x->b, acc_load(x, le.i), sum, ""));
	cg_loop_end(kb, &le);
	phase_end(x);
}


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
	LLVMValueRef a = LLVMBuildLShr(x->b, LLVMBuildAnd(x->b, addr, i32c(x, 0x3ffff), ""),
				       i32c(x, 4), "");
	a = LLVMBuildZExt(x->b, a, m->t_i64, "");
	uint64_t hi = ((uint64_t)(lbo >> 4) & 0x3fff) << 16 |
		      ((uint64_t)(sbo >> 4) & 0x3fff) << 32 | (uint64_t)1 << 62;
	return LLVMBuildOr(x->b, a, LLVMConstInt(m->t_i64, hi, 0), "");
}

/* Inline PTX over the accumulators: text with $0 .. $nacc-1 the accumulators
 * (read and written), then the extra inputs; returns nothing, the accumulators are
 * stored back. An empty text pins them: no use of them moves above it. */
static void wg_asm(Mm *x, const char *text, LLVMValueRef *extra, int nextra)
{
	CgModule *m = x->kb->m;
	int n = x->nacc;
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
		args[nextra + i] = acc_load(x, i64c(x, i));
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
		acc_store(x, i64c(x, i), LLVMBuildExtractValue(x->b, r, (unsigned)i, ""));
	free(ft);
	free(args);
	free(at);
	free(cons);
}

/* Wait until at most n groups of wgmma are in flight; at 0 the accumulators are
 * final, and pinned there (wg_asm with no text) so that nothing reads them sooner. */
static void wg_wait(Mm *x, int n)
{
	CgModule *m = x->kb->m;
	char text[64];
	int len = snprintf(text, sizeof text, "wgmma.wait_group.sync.aligned %d;", n);
	LLVMTypeRef vt = LLVMFunctionType(m->t_void, NULL, 0, 0);
	LLVMValueRef w = LLVMGetInlineAsm(vt, text, (size_t)len, "~{memory}", 9, 1, 0,
					  LLVMInlineAsmDialectATT, 0);
	LLVMBuildCall2(x->b, vt, w, NULL, 0, "");
	if (n == 0)
		wg_asm(x, "", NULL, 0);
}

/* wgmma on the GPU over the stage at s: each warpgroup (threads 128g..128g+127)
 * multiplies its 64 rows of the A tile by the whole B tile, BK / 16 instructions of
 * m64nBNk16 issued back to back as one group, then waits until only that group is
 * in flight (the stage it reads is refilled two steps later, tile_loop's lead); the
 * accumulators are Mm.acc (tc_pos maps them, as for mma.sync with warps 8 x 1). */
static void wg_compute_gpu(Mm *x, LLVMValueRef s)
{
	CgModule *m = x->kb->m;
	const MmConfig *c = x->c;
	LLVMValueRef g = udivc(x, to_ot(x, x->tid), 128);
	LLVMValueRef sa = saddr(x, stage_off(x, s, 0)), sb = saddr(x, stage_off(x, s, 1));
	/* warpgroup g's 64 rows: 64 rows of 128 bytes (K-major) or panel g (MN-major) */
	sa = add(x, sa, mul(x, g, i32c(x, x->trans[0] ? c->bk * 128 : 64 * 128)));
	const char *ty = x->dt == DT_F16 ? "f16" : "bf16";
	char *text = xmalloc((size_t)x->nacc * 8 + 256);
	size_t len = (size_t)sprintf(text, "wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {",
				     c->bn, ty, ty);
	for (int i = 0; i < x->nacc; i++)
		len += (size_t)sprintf(text + len, "%s$%d", i ? ", " : "", i);
	sprintf(text + len, "}, $%d, $%d, p, 1, 1, %d, %d;", x->nacc, x->nacc + 1,
		x->trans[0] ? 1 : 0, x->trans[1] ? 0 : 1);
	char *full = xmalloc(strlen(text) + 128);
	sprintf(full, "{\n.reg .pred p;\nsetp.ne.b32 p, $%d, 0;\n%s\n}", x->nacc + 2, text);
	LLVMTypeRef vt = LLVMFunctionType(m->t_void, NULL, 0, 0);
	LLVMValueRef fence = LLVMGetInlineAsm(vt, "wgmma.fence.sync.aligned;", 25, "~{memory}", 9,
					      1, 0, LLVMInlineAsmDialectATT, 0);
	LLVMBuildCall2(x->b, vt, fence, NULL, 0, "");
	for (int kk = 0; kk < c->bk / 16; kk++) {
		/* K-major: the next 32 bytes of each row; MN-major: the next 16 rows */
		LLVMValueRef a = addc(x, sa, x->trans[0] ? kk * 16 * 128 : kk * 32);
		LLVMValueRef b = addc(x, sb, x->trans[1] ? kk * 32 : kk * 16 * 128);
		LLVMValueRef ex[3] = {
			wg_desc(x, a, x->trans[0] ? (int64_t)c->bk * 128 : 16, 1024),
			wg_desc(x, b, x->trans[1] ? 16 : (int64_t)c->bk * 128, 1024),
			i32c(x, 1),
		};
		wg_asm(x, full, ex, 3);
	}
	LLVMValueRef commit = LLVMGetInlineAsm(vt, "wgmma.commit_group.sync.aligned;", 32,
					       "~{memory}", 9, 1, 0, LLVMInlineAsmDialectATT, 0);
	LLVMBuildCall2(x->b, vt, commit, NULL, 0, "");
	wg_wait(x, 1);
	free(text);
	free(full);
}

/* simt, both targets: FMAs from shared memory, B read as 4-float vectors. */
static void simt_compute(Mm *x, LLVMValueRef s)
{
	CgModule *m = x->kb->m;
	LLVMValueRef sa = stage_off(x, s, 0), sb = stage_off(x, s, 1);
	LLVMValueRef tid = to_ot(x, phase_begin(x));
	LLVMValueRef tx = uremc(x, tid, 16), ty = udivc(x, tid, 16);
	LLVMTypeRef v4 = LLVMVectorType(m->t_f32, 4);
	LLVMTypeRef f32 = m->t_f32;
	LLVMValueRef accv[64];
	for (int e = 0; e < x->nacc; e++)
		accv[e] = acc_load(x, i64c(x, e));
	for (int k = 0; k < x->c->bk; k++) {
		LLVMValueRef av[8], bv[8];
		LLVMValueRef kr = cst(tid, k);
		for (int i = 0; i < x->rm; i++) {
			LLVMValueRef row = addc(x, mulc(x, ty, 4), (i / 4) * 64 + i % 4);
			av[i] = smem_elem(x, 0, sa, row, kr);
		}
		for (int j = 0; j < x->rn && x->trans[1]; j++) {
			LLVMValueRef col = addc(x, mulc(x, tx, 4), (j / 4) * 64 + j % 4);
			bv[j] = smem_elem(x, 1, sb, kr, col);
		}
		for (int j = 0; j < x->rn && !x->trans[1]; j += 4) {
			LLVMValueRef ch = addc(x, tx, (j / 4) * 16);
			LLVMValueRef p = smem_at(x, add(x, sb, swz(x, 1, kr, ch)));
			LLVMValueRef v = LLVMBuildLoad2(x->b, v4, p, "");
			LLVMSetAlignment(v, 16);
			for (int q = 0; q < 4; q++)
				bv[j + q] = LLVMBuildExtractElement(x->b, v, i32c(x, q), "");
		}
		for (int i = 0; i < x->rm; i++)
			for (int j = 0; j < x->rn; j++) {
				LLVMValueRef args[3] = {av[i], bv[j], accv[i * x->rn + j]};
				accv[i * x->rn + j] = intrinsic(x, "llvm.fmuladd.f32", &f32, 1, args, 3);
			}
	}
	for (int e = 0; e < x->nacc; e++)
		acc_store(x, i64c(x, e), accv[e]);
	phase_end(x);
}

static void compute_stage(Mm *x, LLVMValueRef s)
{
	if (!x->c->tc)
		simt_compute(x, s);
	else if (x->gpu && x->c->wg)
		wg_compute_gpu(x, s);
	else if (x->gpu)
		tc_compute_gpu(x, s);
	else
		tc_compute_host(x, s);
}

/* The epilogue of one element at output position (gr, gc) of the current tile's batch
 * with matmul value v: every written tensor is evaluated there and stored. */
static void epi_one(Mm *x, LLVMValueRef gr, LLVMValueRef gc, LLVMValueRef v, const int *wr,
		    int nw)
{
	CgKb *kb = x->kb;
	int mark = cg_memo_mark(kb);
	CgIdx at = cg_idx_of(x->rank, x->to->shape);
	at.has_dims = true;
	for (int d = 0; d < x->rank - 2; d++)
		at.i[d] = x->bpos[d];
	at.i[x->rank - 2] = gr;
	at.i[x->rank - 1] = gc;
	/* the matmul's value, as cg_eval_matmul gives it: f32 for f16/bf16 */
	cg_memo_add(kb, x->to->id, &at, v);
	for (int k = 0; k < nw; k++) {
		CgIdx y = at;
		y.shape = kb->tinfo[wr[k]]->shape;
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
		r = LLVMBuildLShr(x->b, LLVMBuildBitCast(x->b, r, m->t_i32, ""), i32c(x, 16), "");
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

enum {
	MM_EPI_V = 8,            /* epilogue: consecutive columns per thread and step */
	MM_EPI_PAD = 8,          /* floats after each staged row: no bank conflicts */
	MM_EPI_MAXW = 8,         /* written tensors the vector stores take */
};

/* Whether the epilogue's vector stores apply: every written tensor of a vector dtype,
 * N a multiple of MM_EPI_V, every written buffer aligned to a vector. */
static LLVMValueRef vector_ok(Mm *x, const int *wr, int nw)
{
	CgKb *kb = x->kb;
	LLVMValueRef no = LLVMConstInt(kb->m->t_i1, 0, 0);
	if (nw > MM_EPI_MAXW)
		return no;
	LLVMValueRef ok = LLVMBuildICmp(x->b, LLVMIntEQ, uremc(x, x->N, MM_EPI_V), i64c(x, 0), "");
	for (int k = 0; k < nw; k++) {
		DType dt = (DType)kb->tinfo[wr[k]]->dtype;
		if (!vector_dtype(dt))
			return no;
		LLVMValueRef p = LLVMBuildPtrToInt(x->b, kb->buf[wr[k]], kb->m->t_i64, "");
		ok = LLVMBuildAnd(x->b, ok, LLVMBuildICmp(x->b, LLVMIntEQ,
			uremc(x, p, MM_EPI_V * ir_dtype_size(dt)), i64c(x, 0), ""), "");
	}
	return ok;
}

/* Pointer to staged float (row, col) of the epilogue buffer (ot values). */
static LLVMValueRef staged(Mm *x, LLVMValueRef row, LLVMValueRef col)
{
	int ld = x->c->bn + MM_EPI_PAD;
	return smem_at(x, mulc(x, add(x, mulc(x, to_ot(x, row), ld), to_ot(x, col)), 4));
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
		LLVMValueRef v = LLVMBuildLoad2(x->b, v4, staged(x, r, addc(x, cc, h * 4)), "");
		LLVMSetAlignment(v, 16);
		for (int q = 0; q < 4; q++)
			val[h * 4 + q] = LLVMBuildExtractElement(x->b, v, i32c(x, q), "");
	}
	LLVMValueRef bits[MM_EPI_MAXW][MM_EPI_V];
	CgIdx at = cg_idx_of(x->rank, x->to->shape);
	at.has_dims = true;
	for (int d = 0; d < x->rank - 2; d++)
		at.i[d] = x->bpos[d];
	at.i[x->rank - 2] = gr;
	LLVMValueRef off = NULL;
	for (int e = 0; e < MM_EPI_V; e++) {
		int mark = cg_memo_mark(kb);
		at.i[x->rank - 1] = e ? addc(x, gc, e) : gc;
		at.flat = NULL;
		cg_memo_add(kb, x->to->id, &at, val[e]);
		for (int k = 0; k < nw; k++) {
			CgIdx y = at;
			y.shape = kb->tinfo[wr[k]]->shape;
			bits[k][e] = store_bits(x, cg_eval(kb, wr[k], &y), (DType)kb->tinfo[wr[k]]->dtype);
			if (e == 0 && k == 0)
				off = cg_offset(kb, &y);
		}
		cg_memo_release(kb, mark);
	}
	for (int k = 0; k < nw; k++) {
		LLVMTypeRef et = LLVMTypeOf(bits[k][0]);
		LLVMValueRef v = LLVMGetUndef(LLVMVectorType(et, MM_EPI_V));
		for (int e = 0; e < MM_EPI_V; e++)
			v = LLVMBuildInsertElement(x->b, v, bits[k][e], i32c(x, e), "");
		LLVMValueRef p = LLVMBuildGEP2(x->b, et, kb->buf[wr[k]], &off, 1, "");
		LLVMSetAlignment(LLVMBuildStore(x->b, v, p), MM_EPI_V * LLVMGetIntTypeWidth(et) / 8);
	}
}

/* The epilogue, through shared memory: in passes of epi_rows rows of the block tile,
 * every thread writes its accumulators of those rows to a staged f32 tile; then the
 * threads walk the staged rows MM_EPI_V consecutive columns at a time (coalesced),
 * evaluate the written tensors there and store them, as one vector per tensor where
 * the columns are inside and the buffers allow, else element by element. One copy
 * of the epilogue's code serves the vector step, one the edge. */
static void epi_walk(Mm *x, int h, const int *wr, int nw);

static void epilogue(Mm *x, const int *wr, int nw)
{
	CgKb *kb = x->kb;
	CgModule *m = kb->m;
	const MmConfig *c = x->c;
	int R = x->epi_rows;
	LLVMTypeRef f2 = LLVMVectorType(m->t_f32, 2);
	for (int h = 0; h < c->bm / R; h++) {
		/* nobody reads the stages (or the previous pass) any more */
		barrier(x);
		LLVMValueRef tid = opaque_tid(x, phase_begin(x));
		for (int e = 0; e < x->nacc; e += 2) {
			LLVMValueRef row, col;
			if (c->tc)
				tc_pos(x, tid, i64c(x, e), &row, &col);
			else
				simt_pos(x, tid, e, &row, &col);
			LLVMValueRef lr = LLVMBuildSub(x->b, row, i64c(x, (int64_t)h * R), "");
			LLVMValueRef in = LLVMBuildICmp(x->b, LLVMIntULT, lr, i64c(x, R), "");
			LLVMBasicBlockRef bw = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "epi.stage");
			LLVMBasicBlockRef bn = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "epi.staged");
			LLVMBuildCondBr(x->b, in, bw, bn);
			LLVMPositionBuilderAtEnd(x->b, bw);
			LLVMValueRef v = LLVMGetUndef(f2);
			v = LLVMBuildInsertElement(x->b, v, acc_load(x, i64c(x, e)), i32c(x, 0), "");
			v = LLVMBuildInsertElement(x->b, v, acc_load(x, i64c(x, e + 1)), i32c(x, 1), "");
			LLVMSetAlignment(LLVMBuildStore(x->b, v, staged(x, lr, col)), 8);
			LLVMBuildBr(x->b, bn);
			LLVMPositionBuilderAtEnd(x->b, bn);
		}
		phase_end(x);
		barrier(x);
		epi_walk(x, h, wr, nw);
	}
}

/* The second half of an epilogue pass h: the threads walk the staged rows
 * h*epi_rows .. MM_EPI_V columns at a time, evaluate the written tensors and store
 * them. */
static void epi_walk(Mm *x, int h, const int *wr, int nw)
{
	CgKb *kb = x->kb;
	CgModule *m = kb->m;
	const MmConfig *c = x->c;
	int R = x->epi_rows;
	int per_row = c->bn / MM_EPI_V;
	int steps = (R * per_row + MM_THREADS - 1) / MM_THREADS;
	{
		LLVMValueRef tid = opaque_tid(x, phase_begin(x));
		CgLoop ls;
		cg_loop_begin(kb, &ls, i64c(x, 0), i64c(x, steps), i64c(x, 1));
		LLVMValueRef q = add(x, tid, mulc(x, ls.i, MM_THREADS));
		LLVMValueRef r = udivc(x, q, per_row), cc = mulc(x, uremc(x, q, per_row), MM_EPI_V);
		LLVMValueRef gr = add(x, x->m0, addc(x, r, (int64_t)h * R));
		LLVMValueRef gc = add(x, x->n0, cc);
		LLVMValueRef inside = LLVMBuildAnd(x->b, lt(x, q, i64c(x, (int64_t)R * per_row)),
						   lt(x, gr, x->M), "");
		LLVMBasicBlockRef bin = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "epi.row");
		LLVMBasicBlockRef bvec = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "epi.vec");
		LLVMBasicBlockRef bedge = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "epi.edge");
		LLVMBasicBlockRef bdone = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "epi.done");
		LLVMBuildCondBr(x->b, inside, bin, bdone);
		LLVMPositionBuilderAtEnd(x->b, bin);
		LLVMValueRef full = LLVMBuildICmp(x->b, LLVMIntSLE, addc(x, gc, MM_EPI_V), x->N, "");
		LLVMBuildCondBr(x->b, LLVMBuildAnd(x->b, full, x->vecok, ""), bvec, bedge);
		LLVMPositionBuilderAtEnd(x->b, bvec);
		epi_vector(x, r, cc, gr, gc, wr, nw);
		LLVMBuildBr(x->b, bdone);
		LLVMPositionBuilderAtEnd(x->b, bedge);
		CgLoop le;
		LLVMValueRef left = LLVMBuildSub(x->b, x->N, gc, "");
		cg_loop_begin(kb, &le, i64c(x, 0), min64(x, left, i64c(x, MM_EPI_V)), i64c(x, 1));
		LLVMValueRef pv = LLVMBuildLoad2(x->b, m->t_f32, staged(x, r, add(x, cc, le.i)), "");
		LLVMSetAlignment(pv, 4);
		epi_one(x, gr, add(x, gc, le.i), pv, wr, nw);
		cg_loop_end(kb, &le);
		LLVMBuildBr(x->b, bdone);
		LLVMPositionBuilderAtEnd(x->b, bdone);
		cg_loop_end(kb, &ls);
		phase_end(x);
	}
}

/* Element offset, in the buffer operand w (A or B) is read from, of the first
 * element of the matrix at batch position bpos (size-1 batch dims broadcast). */
static LLVMValueRef batch_base(Mm *x, int w)
{
	const RelTensor *t = w ? x->tb : x->ta;
	LLVMValueRef o = i64c(x, 0);
	for (int d = 0; d < t->rank - 2; d++)
		if (t->shape[d] != 0)
			o = add(x, o, mul(x, x->bpos[d], x->ost[w][d]));
	return o;
}

/* The buffer and strides of operand w (Mm.src, Mm.ost): a tensor the kernel reads
 * is dense in C order; a swap_dims or permute in front of the matmul only reorders
 * the strides of the tensor it reads. */
static void operand_layout(Mm *x, const CgKernelSpec *s, int mi, int w)
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
	sst[r - 1] = i64c(x, 1);
	for (int d = r - 2; d >= 0; d--)
		sst[d] = mul(x, sst[d + 1], cg_dim(kb, src->shape[d + 1]));
	for (int d = 0; d < r; d++)
		x->ost[w][d] = sst[perm[d]];
	x->src[w] = kb->buf[src->id];
	x->trans[w] = perm[r - 2] == r - 1;
}

/* Whether operand w's tile rows may be copied as whole 16-byte chunks: its columns
 * are contiguous, and its buffer, row stride and batch strides are 16-byte aligned. */
static LLVMValueRef is_aligned16(Mm *x, int w)
{
	CgKb *kb = x->kb;
	const RelTensor *t = w ? x->tb : x->ta;
	LLVMValueRef p = LLVMBuildPtrToInt(x->b, x->src[w], kb->m->t_i64, "");
	LLVMValueRef ok = LLVMBuildICmp(x->b, LLVMIntEQ, uremc(x, p, 16), i64c(x, 0), "");
	int inner = x->trans[w] ? x->rank - 2 : x->rank - 1;
	ok = LLVMBuildAnd(x->b, ok, LLVMBuildICmp(x->b, LLVMIntEQ, x->ost[w][inner],
						  i64c(x, 1), ""), "");
	for (int d = 0; d < x->rank; d++) {
		if (d == inner || (d < x->rank - 2 && t->shape[d] == 0))
			continue;
		LLVMValueRef ldok = LLVMBuildICmp(x->b, LLVMIntEQ, uremc(x, x->ost[w][d], x->ce),
						  i64c(x, 0), "");
		ok = LLVMBuildAnd(x->b, ok, ldok, "");
	}
	return ok;
}

static LLVMValueRef sreg(Mm *x, const char *name)
{
	return LLVMBuildZExt(x->b, intrinsic(x, name, NULL, 0, NULL, 0), x->kb->m->t_i64, "");
}

static void fence(Mm *x)
{
	if (x->gpu)
		intrinsic(x, "llvm.nvvm.membar.gl", NULL, 0, NULL, 0);
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
static LLVMBasicBlockRef split_combine(Mm *x, LLVMValueRef tile, LLVMValueRef split,
				       LLVMValueRef total)
{
	CgKb *kb = x->kb;
	CgModule *m = kb->m;
	int S = x->c->split;
	LLVMValueRef scratch = kb->scratch;
	LLVMValueRef cbytes = bin(x, LLVMAnd, addc(x, mulc(x, total, 4), 15), i64c(x, ~(int64_t)15));
	LLVMValueRef unit = add(x, mulc(x, tile, S), split);
	int64_t ubytes = (int64_t)x->nacc * MM_THREADS * 4;
	/* this block's partial */
	LLVMValueRef tid = phase_begin(x);
	LLVMValueRef ubase = add(x, cbytes, mulc(x, unit, ubytes));
	for (int e = 0; e < x->nacc; e++) {
		LLVMValueRef off = add(x, ubase, mulc(x, addc(x, tid, (int64_t)e * MM_THREADS), 4));
		LLVMValueRef p = LLVMBuildGEP2(x->b, m->t_i8, scratch, &off, 1, "");
		LLVMSetAlignment(LLVMBuildStore(x->b, acc_load(x, i64c(x, e)), p), 4);
	}
	fence(x);
	phase_end(x);
	/* everyone's partial is out (and nobody reads the stages any more) */
	barrier(x);
	LLVMValueRef flagp = smem_at(x, LLVMConstInt(x->ot, 0, 0));
	tid = phase_begin(x);
	LLVMBasicBlockRef bcount = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "split.count");
	LLVMBasicBlockRef bcounted = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "split.counted");
	LLVMBuildCondBr(x->b, LLVMBuildICmp(x->b, LLVMIntEQ, tid, i64c(x, 0), ""), bcount, bcounted);
	LLVMPositionBuilderAtEnd(x->b, bcount);
	LLVMValueRef cnt = LLVMBuildGEP2(x->b, m->t_i32, scratch, &tile, 1, "");
	LLVMValueRef old = LLVMBuildAtomicRMW(x->b, LLVMAtomicRMWBinOpAdd, cnt, i32c(x, 1),
					      LLVMAtomicOrderingMonotonic, 0);
	LLVMValueRef last = LLVMBuildICmp(x->b, LLVMIntEQ, old, i32c(x, S - 1), "");
	/* the last arrival sets the counter back to zero for the next launch */
	LLVMBasicBlockRef breset = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "split.reset");
	LLVMBasicBlockRef bflag = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "split.flag");
	LLVMBuildCondBr(x->b, last, breset, bflag);
	LLVMPositionBuilderAtEnd(x->b, breset);
	LLVMBuildStore(x->b, i32c(x, 0), cnt);
	LLVMBuildBr(x->b, bflag);
	LLVMPositionBuilderAtEnd(x->b, bflag);
	LLVMValueRef fs = LLVMBuildStore(x->b, LLVMBuildZExt(x->b, last, m->t_i32, ""), flagp);
	LLVMSetVolatile(fs, 1);
	LLVMBuildBr(x->b, bcounted);
	LLVMPositionBuilderAtEnd(x->b, bcounted);
	phase_end(x);
	barrier(x);
	LLVMValueRef flag = LLVMBuildLoad2(x->b, m->t_i32, flagp, "");
	LLVMSetVolatile(flag, 1);
	LLVMBasicBlockRef blast = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "split.last");
	LLVMBasicBlockRef bafter = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "split.done");
	LLVMBuildCondBr(x->b, LLVMBuildICmp(x->b, LLVMIntNE, flag, i32c(x, 0), ""), blast, bafter);
	LLVMPositionBuilderAtEnd(x->b, blast);
	fence(x);
	/* the last block: accumulator e = partial 0 + partial 1 + ... in split order;
	 * the loop over the splits kept a loop (its count opaque on the GPU): unrolled,
	 * ptxas issued every load before the first add and spilled at 128 registers */
	tid = phase_begin(x);
	LLVMValueRef tbase = add(x, cbytes, mulc(x, mulc(x, tile, S), ubytes));
	LLVMValueRef toff = add(x, tbase, mulc(x, tid, 4));
	for (int q = 0; q < 2; q++) {
		CgLoop lq;
		if (q == 1)
			cg_loop_begin(kb, &lq, i64c(x, 1), opaque_tid(x, i64c(x, S)), i64c(x, 1));
		LLVMValueRef qoff = q ? add(x, toff, mul(x, lq.i, i64c(x, ubytes))) : toff;
		for (int e = 0; e < x->nacc; e++) {
			LLVMValueRef o = addc(x, qoff, (int64_t)e * MM_THREADS * 4);
			LLVMValueRef p = LLVMBuildGEP2(x->b, m->t_i8, scratch, &o, 1, "");
			LLVMValueRef v = LLVMBuildLoad2(x->b, m->t_f32, p, "");
			LLVMSetAlignment(v, 4);
			LLVMSetVolatile(v, 1);
			/* read once: back to zero, for the launches after this one */
			LLVMSetAlignment(LLVMBuildStore(x->b, LLVMConstReal(m->t_f32, 0), p), 4);
			acc_store(x, i64c(x, e), q ? LLVMBuildFAdd(x->b, acc_load(x, i64c(x, e)), v, "") : v);
		}
		if (q == 1)
			cg_loop_end(kb, &lq);
	}
	phase_end(x);
	return bafter;
}

/* The block-stride loop over output tiles. */
static void tile_loop(Mm *x, LLVMValueRef block, LLVMValueRef nblocks, const int *wr, int nw)
{
	CgKb *kb = x->kb;
	CgModule *m = kb->m;
	const MmConfig *c = x->c;
	int r = x->rank;
	/* tiles: batch x tile rows x tile columns, rows grouped by MM_GROUP_M */
	LLVMValueRef nb = i64c(x, 1);
	for (int d = 0; d < r - 2; d++)
		nb = mul(x, nb, cg_dim(kb, x->to->shape[d]));
	LLVMValueRef ntm = ceil_div(x, x->M, c->bm), ntn = ceil_div(x, x->N, c->bn);
	LLVMValueRef per_batch = mul(x, ntm, ntn);
	LLVMValueRef total = mul(x, nb, per_batch);
	LLVMValueRef nk = ceil_div(x, x->K, c->bk);
	/* split-K: unit u is split u % S of tile u / S; split s takes the K steps
	 * [s * ks, min(nk, (s + 1) * ks)), ks = ceil(nk / S) (empty ones sum zeros) */
	int S = c->split > 1 ? c->split : 1;
	LLVMValueRef kbeg = i64c(x, 0);
	CgLoop lt_;
	cg_loop_begin(kb, &lt_, block, mul(x, total, i64c(x, S)), nblocks);
	kb->nmemo = 0;
	LLVMValueRef t = lt_.i;
	LLVMValueRef split = NULL;
	if (S > 1) {
		split = LLVMBuildURem(x->b, t, i64c(x, S), "");
		t = LLVMBuildUDiv(x->b, t, i64c(x, S), "");
		LLVMValueRef ks = ceil_div(x, nk, S);
		kbeg = mul(x, split, ks);
		LLVMValueRef kend = min64(x, add(x, kbeg, ks), nk);
		LLVMValueRef has = lt(x, kbeg, kend);
		nk = LLVMBuildSelect(x->b, has, LLVMBuildSub(x->b, kend, kbeg, ""), i64c(x, 0), "");
	}
	LLVMValueRef bflat = LLVMBuildUDiv(x->b, t, per_batch, "");
	LLVMValueRef within = LLVMBuildURem(x->b, t, per_batch, "");
	LLVMValueRef gsize = mul(x, ntn, i64c(x, MM_GROUP_M));
	LLVMValueRef group = LLVMBuildUDiv(x->b, within, gsize, "");
	LLVMValueRef first = mul(x, group, i64c(x, MM_GROUP_M));
	LLVMValueRef rows_in = min64(x, LLVMBuildSub(x->b, ntm, first, ""), i64c(x, MM_GROUP_M));
	LLVMValueRef ing = LLVMBuildURem(x->b, within, gsize, "");
	LLVMValueRef tm = add(x, first, LLVMBuildURem(x->b, ing, rows_in, ""));
	LLVMValueRef tn = LLVMBuildUDiv(x->b, ing, rows_in, "");
	x->m0 = mul(x, tm, i64c(x, c->bm));
	x->n0 = mul(x, tn, i64c(x, c->bn));
	LLVMValueRef f = bflat;
	for (int d = r - 3; d >= 0; d--) {
		LLVMValueRef n = cg_dim(kb, x->to->shape[d]);
		x->bpos[d] = LLVMBuildURem(x->b, f, n, "");
		f = LLVMBuildUDiv(x->b, f, n, "");
	}
	x->base[0] = batch_base(x, 0);
	x->base[1] = batch_base(x, 1);

	/* accumulators to zero */
	phase_begin(x);
	for (int e = 0; e < x->nacc; e++)
		acc_store(x, i64c(x, e), LLVMConstReal(m->t_f32, 0));
	phase_end(x);

	/* the K steps loaded ahead of the one computed: STAGES - 1, so that the stage
	 * refilled at step kt is the one read at kt - 1; wgmma on the GPU leaves its
	 * group of step kt in flight while step kt + 1 is issued (wg_compute_gpu), so
	 * there the stage refilled is the one read at kt - 2 */
	int lead = x->gpu && c->wg ? c->stages - 2 : c->stages - 1;
	/* prologue: stages 0 .. lead-1 */
	for (int s = 0; s < lead; s++) {
		LLVMBasicBlockRef bl = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "pro.load");
		LLVMBasicBlockRef bc = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "pro.commit");
		LLVMBuildCondBr(x->b, lt(x, i64c(x, s), nk), bl, bc);
		LLVMPositionBuilderAtEnd(x->b, bl);
		load_stage(x, LLVMConstInt(x->ot, (unsigned long long)s * x->stage_bytes, 0),
			   add(x, kbeg, i64c(x, s)));
		LLVMBuildBr(x->b, bc);
		LLVMPositionBuilderAtEnd(x->b, bc);
		if (x->gpu)
			intrinsic(x, "llvm.nvvm.cp.async.commit.group", NULL, 0, NULL, 0);
	}
	/* main loop: wait for stage kt, then refill the stage read at kt - 1 */
	CgLoop lk;
	cg_loop_begin(kb, &lk, i64c(x, 0), nk, i64c(x, 1));
	/* the stage read at this step and the one refilled (read at the step before) */
	LLVMValueRef rd = cg_carry(kb, &lk, LLVMConstInt(x->ot, 0, 0));
	LLVMValueRef wrs = cg_carry(kb, &lk, LLVMConstInt(x->ot, (unsigned long long)
					 lead * x->stage_bytes, 0));
	LLVMValueRef wrap = LLVMConstInt(x->ot, (unsigned long long)c->stages * x->stage_bytes, 0);
	if (x->gpu) {
		LLVMValueRef n = i32c(x, lead - 1);
		intrinsic(x, "llvm.nvvm.cp.async.wait.group", NULL, 0, &n, 1);
		/* wgmma reads the stage through the async proxy: the copies this
		 * thread saw land are ordered before it (then the barrier orders all) */
		if (c->wg)
			asm_call(x, m->t_void, "fence.proxy.async.shared::cta;", "~{memory}", NULL, 0);
	}
	barrier(x);
	LLVMValueRef kn = add(x, lk.i, i64c(x, lead));
	LLVMBasicBlockRef bl = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "main.load");
	LLVMBasicBlockRef bc = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "main.commit");
	LLVMBuildCondBr(x->b, lt(x, kn, nk), bl, bc);
	LLVMPositionBuilderAtEnd(x->b, bl);
	load_stage(x, wrs, add(x, kbeg, kn));
	LLVMBuildBr(x->b, bc);
	LLVMPositionBuilderAtEnd(x->b, bc);
	if (x->gpu)
		intrinsic(x, "llvm.nvvm.cp.async.commit.group", NULL, 0, NULL, 0);
	compute_stage(x, rd);
	LLVMValueRef rn = addc(x, rd, x->stage_bytes), wn = addc(x, wrs, x->stage_bytes);
	cg_carry_next(kb, &lk, rd, LLVMBuildSelect(x->b, LLVMBuildICmp(x->b, LLVMIntEQ, rn, wrap, ""),
						   LLVMConstInt(x->ot, 0, 0), rn, ""));
	cg_carry_next(kb, &lk, wrs, LLVMBuildSelect(x->b, LLVMBuildICmp(x->b, LLVMIntEQ, wn, wrap, ""),
						    LLVMConstInt(x->ot, 0, 0), wn, ""));
	cg_loop_end(kb, &lk);
	if (x->gpu) {
		LLVMValueRef n = i32c(x, 0);
		intrinsic(x, "llvm.nvvm.cp.async.wait.group", NULL, 0, &n, 1);
	}
	if (x->gpu && c->wg)
		wg_wait(x, 0);
	LLVMBasicBlockRef after = NULL;
	if (S > 1)
		after = split_combine(x, t, split, total);
	epilogue(x, wr, nw);
	if (after) {
		LLVMBuildBr(x->b, after);
		LLVMPositionBuilderAtEnd(x->b, after);
	}
	/* nobody refills shared memory for the next tile before everyone is done */
	barrier(x);
	cg_loop_end(kb, &lt_);
}

/* ---- tiny M: the gemv configuration ---------------------------------------------
 *
 * A block takes BM (16) rows x BN (64) columns of the output. Thread (warp w, lane l)
 * owns columns 2l and 2l+1 of the tile for all BM rows and sums k = w, w + 8, w + 16
 * ... in order: B is read once, coalesced (a warp reads 64 consecutive columns of a
 * row of B), and the A element of a row is one broadcast load. Rows past M end the
 * thread's row loop early, so M = 1 costs one row. Then every warp writes its
 * partial tile to shared memory and the threads sum the 8 partials of each element
 * in warp order: the reduction order is fixed by the configuration alone (no
 * atomics, no dependence on block order), and the epilogue runs as for the other
 * tiles from the summed tile. */
enum { MM_GEMV_COLS = 2, MM_GEMV_WARPS = MM_THREADS / 32 };

/* Element (row, col) of operand w of the current tile's batch, from global memory,
 * as f32 (row, col inside the operand). */
static LLVMValueRef gload(Mm *x, int w, LLVMValueRef row, LLVMValueRef col)
{
	CgModule *m = x->kb->m;
	LLVMValueRef off = add(x, x->base[w], add(x, mul(x, row, x->ost[w][x->rank - 2]),
						 mul(x, col, x->ost[w][x->rank - 1])));
	LLVMTypeRef rt = raw_type(x);
	LLVMValueRef v = LLVMBuildLoad2(x->b, rt, LLVMBuildGEP2(x->b, rt, x->src[w], &off, 1, ""), "");
	LLVMSetAlignment(v, (unsigned)x->es);
	if (x->dt == DT_F32)
		return LLVMBuildBitCast(x->b, v, m->t_f32, "");
	if (x->dt == DT_F16)
		return LLVMBuildFPExt(x->b, LLVMBuildBitCast(x->b, v, m->t_f16, ""), m->t_f32, "");
	v = LLVMBuildShl(x->b, LLVMBuildZExt(x->b, v, m->t_i32, ""), i32c(x, 16), "");
	return LLVMBuildBitCast(x->b, v, m->t_f32, "");
}

/* Byte offset of warp w's partial of tile element (row, col): after the staged tile. */
static LLVMValueRef gemv_partial(Mm *x, LLVMValueRef w, LLVMValueRef row, LLVMValueRef col)
{
	const MmConfig *c = x->c;
	int base = c->bm * (c->bn + MM_EPI_PAD) * 4;
	LLVMValueRef i = add(x, mulc(x, add(x, mulc(x, w, c->bm), row), c->bn), col);
	return smem_at(x, to_ot(x, addc(x, mulc(x, i, 4), base)));
}

static void gemv_tile_loop(Mm *x, LLVMValueRef block, LLVMValueRef nblocks, const int *wr, int nw)
{
	CgKb *kb = x->kb;
	CgModule *m = kb->m;
	const MmConfig *c = x->c;
	int r = x->rank;
	LLVMValueRef nb = i64c(x, 1);
	for (int d = 0; d < r - 2; d++)
		nb = mul(x, nb, cg_dim(kb, x->to->shape[d]));
	LLVMValueRef ntm = ceil_div(x, x->M, c->bm), ntn = ceil_div(x, x->N, c->bn);
	LLVMValueRef per_batch = mul(x, ntm, ntn);
	CgLoop lt_;
	cg_loop_begin(kb, &lt_, block, mul(x, nb, per_batch), nblocks);
	kb->nmemo = 0;
	LLVMValueRef t = lt_.i;
	LLVMValueRef f = LLVMBuildUDiv(x->b, t, per_batch, "");
	LLVMValueRef within = LLVMBuildURem(x->b, t, per_batch, "");
	x->m0 = mulc(x, LLVMBuildUDiv(x->b, within, ntn, ""), c->bm);
	x->n0 = mulc(x, LLVMBuildURem(x->b, within, ntn, ""), c->bn);
	for (int d = r - 3; d >= 0; d--) {
		LLVMValueRef n = cg_dim(kb, x->to->shape[d]);
		x->bpos[d] = LLVMBuildURem(x->b, f, n, "");
		f = LLVMBuildUDiv(x->b, f, n, "");
	}
	x->base[0] = batch_base(x, 0);
	x->base[1] = batch_base(x, 1);
	LLVMValueRef rows = min64(x, LLVMBuildSub(x->b, x->M, x->m0, ""), i64c(x, c->bm));

	/* every thread: its columns of every row, over its share of K */
	LLVMValueRef tid = phase_begin(x);
	LLVMValueRef warp = udivc(x, tid, 32), lane = uremc(x, tid, 32);
	for (int e = 0; e < x->nacc; e++)
		acc_store(x, i64c(x, e), LLVMConstReal(m->t_f32, 0));
	LLVMValueRef col[MM_GEMV_COLS], cok[MM_GEMV_COLS];
	for (int j = 0; j < MM_GEMV_COLS; j++) {
		col[j] = add(x, x->n0, addc(x, mulc(x, lane, MM_GEMV_COLS), j));
		cok[j] = lt(x, col[j], x->N);
	}
	CgLoop lk;
	cg_loop_begin(kb, &lk, warp, x->K, i64c(x, MM_GEMV_WARPS));
	LLVMValueRef bv[MM_GEMV_COLS];
	for (int j = 0; j < MM_GEMV_COLS; j++) {
		LLVMValueRef cc = LLVMBuildSelect(x->b, cok[j], col[j], i64c(x, 0), "");
		bv[j] = LLVMBuildSelect(x->b, cok[j], gload(x, 1, lk.i, cc),
					LLVMConstReal(m->t_f32, 0), "");
	}
	LLVMBasicBlockRef bend = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "gemv.rows");
	for (int i = 0; i < c->bm; i++) {
		LLVMBasicBlockRef brow = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "gemv.row");
		LLVMBuildCondBr(x->b, lt(x, i64c(x, i), rows), brow, bend);
		LLVMPositionBuilderAtEnd(x->b, brow);
		LLVMValueRef a = gload(x, 0, addc(x, x->m0, i), lk.i);
		for (int j = 0; j < MM_GEMV_COLS; j++) {
			LLVMValueRef e = i64c(x, i * MM_GEMV_COLS + j);
			LLVMValueRef args[3] = {a, bv[j], acc_load(x, e)};
			acc_store(x, e, intrinsic(x, "llvm.fmuladd.f32", &m->t_f32, 1, args, 3));
		}
	}
	LLVMBuildBr(x->b, bend);
	LLVMPositionBuilderAtEnd(x->b, bend);
	cg_loop_end(kb, &lk);
	/* the partial tile of this warp */
	for (int i = 0; i < c->bm; i++)
		for (int j = 0; j < MM_GEMV_COLS; j++) {
			LLVMValueRef p = gemv_partial(x, warp, i64c(x, i),
						      addc(x, mulc(x, lane, MM_GEMV_COLS), j));
			LLVMSetAlignment(LLVMBuildStore(x->b, acc_load(x, i64c(x, i * MM_GEMV_COLS + j)),
							p), 4);
		}
	phase_end(x);
	barrier(x);

	/* the 8 partials of every element, summed in warp order, staged */
	tid = phase_begin(x);
	for (int q0 = 0; q0 < c->bm * c->bn; q0 += MM_THREADS) {
		LLVMValueRef q = addc(x, tid, q0);
		LLVMValueRef row = udivc(x, q, c->bn), cc = uremc(x, q, c->bn);
		LLVMValueRef sum = NULL;
		for (int w = 0; w < MM_GEMV_WARPS; w++) {
			LLVMValueRef v = LLVMBuildLoad2(x->b, m->t_f32,
							gemv_partial(x, i64c(x, w), row, cc), "");
			LLVMSetAlignment(v, 4);
			sum = sum ? LLVMBuildFAdd(x->b, sum, v, "") : v;
		}
		LLVMSetAlignment(LLVMBuildStore(x->b, sum, staged(x, row, cc)), 4);
	}
	phase_end(x);
	barrier(x);
	epi_walk(x, 0, wr, nw);
	/* nobody writes the partials of the next tile before everyone is done */
	barrier(x);
	cg_loop_end(kb, &lt_);
}

int cg_matmul_tiled(CgKb *kb, int variant, const int *wr, int nw)
{
	if (variant <= 0 || variant >= MM_NCONFIGS || !eligible(kb->spec))
		return cg_fail(kb, "internal: matmul tile configuration %d does not apply", variant);
	CgModule *m = kb->m;
	Mm x0, *x = &x0;
	memset(x, 0, sizeof *x);
	x->kb = kb;
	x->b = kb->b;
	x->c = &mm_configs[variant];
	x->gpu = m->opt.target == CG_TARGET_NVPTX;
	int mi = cg_matmul_index(kb->spec);
	x->op = &kb->spec->ops[mi];
	x->ta = &x->op->t[0];
	x->tb = &x->op->t[1];
	x->to = &x->op->t[x->op->nin];
	x->dt = (DType)x->ta->dtype;
	x->es = ir_dtype_size(x->dt);
	x->ce = 16 / x->es;
	x->rank = x->to->rank;
	const MmConfig *c = x->c;
	if (!fits(c, x->dt, true))
		return cg_fail(kb, "internal: tile configuration %s does not fit %s", c->name,
			       ir_dtype_name(x->dt));
	int r = x->rank;
	x->M = cg_dim(kb, x->to->shape[r - 2]);
	x->N = cg_dim(kb, x->to->shape[r - 1]);
	x->K = cg_dim(kb, x->ta->shape[r - 1]);
	operand_layout(x, kb->spec, mi, 0);
	operand_layout(x, kb->spec, mi, 1);
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
	bool dynamic = smem_bytes > MM_SMEM_STATIC;

	/* storage: shared memory and accumulators */
	LLVMBasicBlockRef entry = LLVMGetInsertBlock(x->b);
	LLVMTypeRef sty = LLVMArrayType(m->t_i8, (unsigned)smem_bytes);
	if (x->gpu && c->min_blocks > 0) {
		LLVMMetadataRef md[3] = {
			LLVMValueAsMetadata(kb->fn),
			LLVMMDStringInContext2(m->ctx, "minctasm", 8),
			LLVMValueAsMetadata(LLVMConstInt(m->t_i32, (unsigned)c->min_blocks, 0)),
		};
		LLVMAddNamedMetadataOperand(m->mod, "nvvm.annotations",
			LLVMMetadataAsValue(m->ctx, LLVMMDNodeInContext2(m->ctx, md, 3)));
	}
	if (x->gpu) {
		char name[128];
		LLVMValueRef g;
		if (dynamic) {
			/* the launch's dynamic shared memory (mm_rule asks for smem_bytes);
			 * the kernel has no static shared memory, so it starts at the
			 * window's base, 128-byte aligned as the swizzle assumes */
			snprintf(name, sizeof name, "fusec_dynamic_shared");
			g = LLVMGetNamedGlobal(m->mod, name);
			if (!g) {
				g = LLVMAddGlobalInAddressSpace(m->mod, LLVMArrayType2(m->t_i8, 0),
								name, 3);
				LLVMSetLinkage(g, LLVMExternalLinkage);
				LLVMSetAlignment(g, 16);
			}
		} else {
			snprintf(name, sizeof name, "%s_smem", LLVMGetValueName(kb->fn));
			g = LLVMAddGlobalInAddressSpace(m->mod, sty, name, 3);
			LLVMSetLinkage(g, LLVMInternalLinkage);
			LLVMSetInitializer(g, LLVMGetUndef(sty));
			LLVMSetAlignment(g, 128);
		}
		x->smem = g;
		x->sptr = LLVMPointerTypeInContext(m->ctx, 3);
		x->ot = m->t_i32;
		x->sbase = LLVMBuildTrunc(x->b, LLVMBuildPtrToInt(x->b, g, m->t_i64, ""), m->t_i32, "");
		if (c->wg) {
			/* the stages start at the next multiple of MM_WG_ALIGN (mm_smem
			 * asked for the room) */
			LLVMValueRef al = LLVMBuildAnd(x->b, LLVMBuildAdd(x->b, x->sbase,
				i32c(x, MM_WG_ALIGN - 1), ""), i32c(x, -MM_WG_ALIGN), "");
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
	x->fast[0] = is_aligned16(x, 0);
	x->fast[1] = is_aligned16(x, 1);
	x->vecok = vector_ok(x, wr, nw);
	x->epi_rows = c->bm;
	while (x->epi_rows * (c->bn + MM_EPI_PAD) * 4 > mm_stages_bytes(c, x->es))
		x->epi_rows /= 2;
	if (c->gemv) {
		gemv_tile_loop(x, block, nblocks, wr, nw);
		free(x->cse);
		return kb->failed ? -1 : 0;
	}

	/* two copies of the tile loop: one where both operands are copied by whole
	 * chunks (its registers and code hold nothing of the element path), one for
	 * the rest */
	LLVMBasicBlockRef bf = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "tiles.fast");
	LLVMBasicBlockRef bg = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "tiles.any");
	LLVMBasicBlockRef bd = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "tiles.done");
	LLVMBuildCondBr(x->b, LLVMBuildAnd(x->b, x->fast[0], x->fast[1], ""), bf, bg);
	for (int copy = 0; copy < 2; copy++) {
		LLVMPositionBuilderAtEnd(x->b, copy ? bg : bf);
		x->all_fast = copy == 0;
		tile_loop(x, block, nblocks, wr, nw);
		LLVMBuildBr(x->b, bd);
	}
	LLVMPositionBuilderAtEnd(x->b, bd);
	free(x->cse);
	return kb->failed ? -1 : 0;
}


/* The launch rule of tiled kernels (a cooperative launch, codegen.h): one block of
 * MM_THREADS per output tile, grid.x = batch x tile rows x tile columns (times the
 * split for split-K); dynamic shared memory only for configurations past
 * MM_SMEM_STATIC. arg: BM, BN, the shape ids of M and N, the number of batch dims,
 * their shape ids, the dynamic shared bytes (0: static), then for split-K the split
 * and the bytes of one block's partial (the scratch: counters, then partials). */
static void mm_rule(const CgKernel *k, const int64_t *dims, int ndims, CgDims *out)
{
	const int64_t *a = k->launch.arg;
	int64_t m = dim_of((uint32_t)a[2], dims, ndims), n = dim_of((uint32_t)a[3], dims, ndims);
	int64_t tiles = ((m + a[0] - 1) / a[0]) * ((n + a[1] - 1) / a[1]);
	for (int d = 0; d < a[4]; d++)
		tiles *= dim_of((uint32_t)a[5 + d], dims, ndims);
	int64_t split = a[6 + a[4]];
	if (split > 1)
		/* the counters (16-byte rounded), then a partial tile per unit */
		out->scratch_bytes = ((4 * tiles + 15) & ~(int64_t)15) + tiles * split * a[7 + a[4]];
	tiles *= split > 1 ? split : 1;
	if (tiles < 1)
		tiles = 1;
	if (tiles > (int64_t)1 << 30)
		tiles = (int64_t)1 << 30;   /* the kernel loops over the rest */
	out->grid[0] = tiles;
	out->block[0] = MM_THREADS;
	out->shared_bytes = a[5 + a[4]];
	out->threads = tiles * MM_THREADS;
}

void cg_matmul_launch(int variant, const CgKernelSpec *s, CgLaunch *l)
{
	const RelOp *mm = &s->ops[cg_matmul_index(s)];
	const MmConfig *c = &mm_configs[variant];
	const RelTensor *out = &mm->t[mm->nin];
	int r = out->rank;
	memset(l, 0, sizeof *l);
	l->coop = true;
	l->rule = mm_rule;
	l->block = MM_THREADS;
	l->max_grid = (int64_t)1 << 30;
	l->vec = 1;
	l->arg[0] = c->bm;
	l->arg[1] = c->bn;
	l->arg[2] = out->shape[r - 2];
	l->arg[3] = out->shape[r - 1];
	l->arg[4] = r - 2;
	for (int d = 0; d < r - 2; d++)
		l->arg[5 + d] = out->shape[d];
	int smem = mm_smem(c, ir_dtype_size((DType)mm->t[0].dtype));
	l->arg[5 + r - 2] = smem > MM_SMEM_STATIC ? smem : 0;
	if (c->split > 1) {
		l->arg[6 + r - 2] = c->split;
		/* a unit's partial: every accumulator of every thread */
		int nacc = c->tc ? (c->bm / c->wm / 16) * (c->bn / c->wn / 8) * 4 :
			   (c->bm / 16) * (c->bn / 16);
		l->arg[7 + r - 2] = (int64_t)nacc * MM_THREADS * 4;
	}
}
