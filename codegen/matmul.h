/* matmul.h: the matmul family's internal contract, shared by its rooms and nobody
 * outside codegen/ (kernel_matmul.c points here).
 *
 * It holds what a kernel built from matmul tiles needs: the tile configuration
 * (MmConfig: block tile, warp grid, stages, split, the compute kind), the builder
 * state (Mm: the operands, the shared stages, the accumulators, the current tile)
 * and the helpers that build a tile kernel for both targets. The rooms stand in
 * floors, each calling only rooms below it; the sections of this header follow them
 * from the ground up:
 *   - the builder's primitives (matmul_tile.c): integer and address helpers with
 *     value numbering (mm_add, mm_mul, mm_lt, mm_bin ...), phases and accumulators
 *     (mm_phase_begin / mm_phase_end, mm_barrier, mm_acc_load / mm_acc_store: on the
 *     host a phase is a loop over the block's threads and the accumulators an array
 *     indexed by thread id), shared-memory offsets (mm_swz, mm_smem_at,
 *     mm_stage_off, mm_saddr), shared element reads (mm_smem_elem), inline PTX
 *     (mm_asm_call); beside them what the picker and the builders both derive from
 *     a configuration (matmul_shape.c: the matmul's op, shared and split-K bytes, a
 *     launch of tiles);
 *   - a conv's gathered operand and output index (matmul_conv.c), and the compute of
 *     one stage (mma.sync, wgmma, SIMT FMA: matmul_mma.c, matmul_wgmma.c,
 *     matmul_simt.c) with the map from an accumulator to its (row, column) in the
 *     block tile (mm_tc_pos, mm_simt_pos);
 *   - a K step's stage (matmul_stage.c): operand strides (mm_operand_layout,
 *     mm_batch_base, mm_is_aligned16), the output tiles (mm_tile_grid,
 *     mm_tile_batch), the stage loads (mm_load_stage: cp.async or element by element
 *     into mm_swz's layout) and the compute by kind (mm_compute_stage); the
 *     epilogue (matmul_epilogue.c: mm_epilogue, mm_epi_walk: the written tensors
 *     evaluated on the matmul's values) and the split-K combine (mm_split_combine);
 *   - the kernels: the tiles' (matmul_kernel.c), the attention op's
 *     (matmul_attention.c), a depthwise conv's channels last (matmul_depthwise.c);
 *   - on top the table of configurations and the picker (matmul_pick.c), which hands
 *     a kernel to the builder its configuration names (cg_matmul_tiled).
 * A convolution or attention kernel can reuse them by filling an Mm with its own
 * MmConfig and operands: a stage filled in the layout mm_swz describes (by
 * mm_load_stage, or by an im2col load written against the same layout) is
 * multiplied by mm_compute_stage, and mm_epilogue evaluates and stores the written
 * tensors at the accumulators' positions (Mm.to, Mm.m0, Mm.n0, Mm.bpos). The conv
 * (matmul_conv.c) is such a kernel: its own operands and gather (MmConv), the rest
 * the matmul's. */
#ifndef FUSEC_MATMUL_H
#define FUSEC_MATMUL_H

#include "cg_impl.h"

enum {
	MM_THREADS = CG_MM_THREADS, /* = CG_BLOCK, the kernels' maxntid (launch_rule.h) */
	MM_WS_THREADS = CG_MM_WS_THREADS, /* ws: MM_THREADS multiplying, a warpgroup copying */
	/* ws: registers a thread of the multiplying and of the copying warpgroups
	 * (setmaxnreg; 2 x 128 x 232 + 128 x 40 = 64,512 of the SM's 65,536) */
	MM_WS_MUL_REGS = 232,
	MM_WS_COPY_REGS = 40,
	/* a ws conv whose copiers gather its input keep each row's window origin
	 * (matmul_conv.c): 2 x 128 x 216 + 128 x 72, the same 64,512 (the block's
	 * pool: 384 threads of 168 registers; setmaxnreg.inc waits for registers
	 * the others gave back, so a split past it never starts) */
	MM_WS_GATHER_MUL_REGS = 216,
	MM_WS_GATHER_REGS = 72,
	MM_WS_GATHERERS = 128,       /* its copying threads */
	MM_WS_PREFETCH = 64,         /* K steps of B a ws block prefetches into L2 before
					its grid wait (matmul_ws.c prefetch_b), at most */
	MM_WS_PREFETCH_BYTES = 16 << 20, /* and bytes a whole grid asks for, at most */
	MM_SMEM_STATIC = 48 * 1024, /* static shared memory limit; above it, dynamic */
	MM_WG_ALIGN = 1024,      /* wgmma's 128-byte swizzle repeats every 1024 bytes */
	MM_WS_SMEM = 227 * 1024, /* the most shared memory of a block (sm_90) */
	MM_GEMV_WARPS = MM_THREADS / 32,
	MM_EPI_V = 8,            /* epilogue: consecutive columns per thread and step */
	MM_EPI_PAD = 8,          /* floats after each staged row: no bank conflicts */
	MM_EPI_MAXW = 8,         /* written tensors the vector stores take */
	MM_NHWC_MIN_N = 8,       /* a channels-last conv with fewer output channels per
				    group runs plain (matmul_pick.c) */
	MM_ATT_BM = 128,         /* attention: rows of q a block takes, */
	MM_ATT_BNMAX = 128,      /* keys per step at most (MmConfig.bn of the att
				    configurations: matmul_attention.c) */
	MM_ATT_BARS = 64,        /* attention pp: its mbarriers' bytes (full[], empty[]) */
	MM_PAD_ROWS = 4,         /* SIMT: rows along K between two padding chunks (mm_swz) */
};

/* A tile configuration (the table is in matmul_pick.c; docs/design.md, "Matmul
 * tiles"). */
typedef struct {
	const char *name;
	bool tc;                 /* tensor cores (f16/bf16, or tf32) or SIMT FMA (f32) */
	bool tf32;               /* tc over f32 operands rounded to tf32 (--allow-tf32) */
	bool gemv;               /* tiny M: BM rows x BN columns per block, K split over
				    the 8 warps (bk = 8), summed in warp order, and
				    with `split` over blocks */
	int min_blocks;          /* blocks per SM to ask of ptxas (minnctapersm), 0: none */
	int bm, bn, bk;          /* block tile */
	int wm, wn;              /* tc: warps along M and N (wm * wn = 8) */
	int stages;              /* shared-memory pipeline depth */
	int split;               /* split-K: blocks per output tile (0: one) */
	bool wg;                 /* sm_90a: wgmma from shared memory (panel layout) */
	int dw;                  /* > 0: not a tile but a depthwise conv channels last,
				    this many output columns a thread
				    (matmul_depthwise.c) */
	bool att;                /* the attention op's kernel (matmul_attention.c): BM
				    rows of q, BN keys a step, head dims up to BK */
	bool ws;                 /* wg, warp-specialized and persistent on the GPU
				    (matmul_ws.c): MM_WS_THREADS threads, the last
				    warpgroup copying; the host runs the tiles as wg's */
	bool pp;                 /* ws, ping-pong (matmul_ws.c): each multiplying
				    warpgroup takes whole tiles, every other one of the
				    block's, so that one's epilogue runs under the
				    other's products; the host runs them as wg's */
	int cluster;             /* ws: blocks of a cluster (2) or 0; a cluster's blocks
				    take tiles side by side in a row of tiles and load
				    their shared A tile once, each half of it multicast
				    to both (matmul_ws.c); the host runs them as wg's */
	bool tma;                /* att and pp: K and V tiles by TMA, one thread issuing
				    both (matmul_attention.c, pp_fill); the host runs
				    them as pp's */
	bool x3;                 /* tf32 wg over f32 at f32's accuracy (3xTF32): each
				    operand split into a tf32 part and a tf32 rest
				    in shared memory (mm_wg_round_tf32), three
				    products a K step, rest x part, part x rest,
				    part x part (matmul_wgmma.c); no --allow-tf32 */
} MmConfig;

/* A convolution run as an implicit GEMM on the tiles (matmul_conv.c): per image n
 * and group g, out[n][g*OCg + m][p] = sum_k W[g*OCg + m][k] * X~[k][p], k = (c, kh,
 * kw) over the group's Cg channels and the window, p = (oh, ow); A is the weight
 * (rows contiguous), B the input's window gathered as it is loaded. */
typedef struct {
	const RelTensor *x, *w, *bias;   /* bias: NULL when the conv has none */
	/* i32: channels per group, input height and width, its plane (H*W), the
	 * output width, the window (KH, KW, KH*KW), output channels per group;
	 * channels last also the input's channels and the output's height */
	LLVMValueRef Cg, H, W, HW, OW, KW, KK, OCg, C, OH;
	LLVMValueRef G;                  /* i64: groups */
	int stride[2], pad[2], dil[2];
	/* channels last (layout nhwc): the GEMM is per group g, over all images,
	 * out[(n,oh,ow)][g*OCg + j] = sum_k X~[(n,oh,ow)][k] * W[g*OCg + j][k], k = (kh,
	 * kw, c): A is the input's window, gathered, its chunks whole runs of channels;
	 * B the weight [OC][K], read transposed */
	bool nhwc;
	int gw;                          /* the operand gathered: 1 (B), or 0 with nhwc */
	bool gather;                     /* gw gathered (not 1x1, stride 1, unpadded) */
	/* GPU (mm_conv_tile_cols): per element of the thread's chunk column, its
	 * window origin (i32) and whether it is inside the plane; channels last, per
	 * chunk row the thread copies (i), the row's image offset (i64) and window
	 * origin (i32; far outside when the row is past M) */
	bool cols;
	LLVMValueRef ih0[8], iw0[8], pok[8];
	LLVMValueRef rbase[8];
} MmConv;

/* An entry of the builder's value numbering (matmul_tile.c): the instruction r built
 * for the operation op on (a, b) in the basic block bb. */
typedef struct MmCse {
	int op;                   /* LLVMOpcode, or matmul_tile.c's MM_CSE_* */
	void *a, *b;
	LLVMBasicBlockRef bb;
	LLVMValueRef r;           /* NULL: a free slot */
} MmCse;

/* The builder state of one tiled kernel. */
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
	bool is_conv;             /* op is a conv2d: the implicit GEMM (cv) */
	MmConv cv;
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
	int gcols;                /* gemv: columns a thread (BN / 32, matmul_gemv.c) */
	LLVMValueRef tid;         /* i64 thread id within the block (current phase on the host) */
	LLVMTypeRef ot;           /* shared-memory offsets: i32 on the GPU, i64 on the host */
	LLVMValueRef sbase;       /* GPU: the shared array's address, i32 */
	LLVMValueRef soff[2];     /* stage offsets (ot) read and refilled by this K step */
	CgLoop phase;
	LLVMValueRef fast[2];     /* i1 per operand: 16-byte chunks may be copied whole */
	bool all_fast;            /* this copy of the tile loop knows both are */
	LLVMValueRef vecok;       /* i1: the epilogue may store column vectors */
	int ngroup;               /* matmuls of the kernel (siblings: mm_members) */
	int gi;                   /* the one whose tiles this tile loop runs; -1: every
				     one, chosen per tile (alike siblings: gmap) */
	LLVMValueRef grt;         /* gi -1: the current tile's matmul */
	int *gmap;                /* alike siblings: per matmul g and tensor id of the
				     first matmul's ops, the id in g's (gmap[g * ntensors
				     + id]), -1 where none */
	LLVMValueRef *gsaved;     /* kb->buf as it was, while the tile's choice holds */
	int epi_rows;             /* rows of the block tile per epilogue pass */
	LLVMValueRef base[2];     /* element offset of the current tile's batch in A, B */
	LLVMValueRef bpos[IR_MAX_RANK]; /* batch position of the current tile */
	LLVMValueRef m0, n0;
	int a_bytes, stage_bytes;
	bool a_fixed;             /* one A tile at offset 0, the stages B tiles after it
				     (the attention kernel's q and P: matmul_attention.c) */
	int cpr[2];               /* chunks per shared row: A (BK), B (BN) */
	int outer[2];             /* rows of each shared tile (its outer dimension) */
	bool panel;               /* wgmma: tiles in 128-byte panels (mm_swz) */
	bool padded;              /* simt: tiles unswizzled, rows along K padded (mm_swz) */
	bool opaque_copy;         /* GPU: mm_load_tile derives the copy's addresses from
				     an opaque thread id at each copy (the attention's
				     K and V: held through its key loop, those addresses
				     made ptxas spill 200-500 bytes) */
	int nthr;                 /* threads that copy a stage's tiles (mm_load_tile,
				     mm_conv_tile_cols): 0 for MM_THREADS; a ws conv's
				     gathering warpgroup, 128 */
	bool wsbar;               /* ws on the GPU: barriers among the MM_THREADS
				     multiplying threads only (named barrier 1) */
	int epi_base;             /* byte offset of the epilogue's staged tile (ws: past
				     the stages; else 0, over them) */
	LLVMValueRef epi_h;       /* i64: the first row of the epilogue's pass when the
				     passes run as a loop (ws), else NULL */
	LLVMValueRef epi_off;     /* ot: a ping-pong warpgroup's staged region past
				     epi_base, else NULL */
	LLVMValueRef ppbar;       /* i32: a ping-pong warpgroup's named barrier (its
				     128 threads), else NULL */
	int wtm, wtn, mi, ni;     /* tc: warp tile and its m16 / n8 counts */
	int rm, rn;               /* simt: rows and columns per thread */
	/* the builder's value numbering (matmul_tile.c; freed by the kernel's builder) */
	struct MmCse *cse;
	size_t ncse, capcse;
} Mm;

/* Threads that share the epilogue of a tile: a ping-pong warpgroup on the GPU,
 * else the block's MM_THREADS. */
static inline int mm_epi_threads(const Mm *x)
{
	return x->gpu && x->c->pp ? MM_THREADS / 2 : MM_THREADS;
}

/* Whether op's operands are both K-major in shared memory (A rows along K, B stored
 * transposed), the only layout tf32 wgmma reads: a conv channels last. */
static inline bool mm_kmajor(const RelOp *op)
{
	return op->kind == OP_CONV2D && op->attr.layout == LAYOUT_NHWC;
}

/* The size of shape id `id` among a launch's dims (id 0: size 1). */
static inline int64_t mm_dim_of(uint32_t id, const int64_t *dims, int ndims)
{
	return id == 0 || (int)id >= ndims ? 1 : dims[id];
}

static inline LLVMValueRef mm_i64c(Mm *x, int64_t v)
{
	return cg_i64(x->kb, v);
}

static inline LLVMValueRef mm_i32c(Mm *x, int v)
{
	return LLVMConstInt(x->kb->m->t_i32, (unsigned)v, 0);
}

/* the constant v of a's integer type */
static inline LLVMValueRef mm_cst(LLVMValueRef a, int64_t v)
{
	return LLVMConstInt(LLVMTypeOf(a), (unsigned long long)v, 1);
}

static inline LLVMValueRef mm_intrinsic(Mm *x, const char *name, LLVMTypeRef *types,
					int ntypes, LLVMValueRef *args, int nargs)
{
	return cg_intrinsic(x->kb, name, types, ntypes, args, nargs);
}


/* raw storage integer of one element: i16 or i32 */
static inline LLVMTypeRef mm_raw_type(Mm *x)
{
	return x->es == 2 ? x->kb->m->t_i16 : x->kb->m->t_i32;
}

/* ---- matmul_tile.c: the builder's primitives ---- */

/* GPU: ask ptxas for n blocks per SM (n > 0), and the kernel's shared memory of
 * `bytes` (past MM_SMEM_STATIC the launch's dynamic shared memory). */
void mm_min_blocks(CgKb *kb, int n);
LLVMValueRef mm_shared_global(CgKb *kb, int bytes);
/* Integer operations, built once per basic block (value numbering) and folded where
 * an operand is neutral. */
LLVMValueRef mm_bin(Mm *x, LLVMOpcode op, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef mm_lt(Mm *x, LLVMValueRef a, LLVMValueRef b);
/* a shared-memory offset (x->ot) as i64, or the other way */
LLVMValueRef mm_to64(Mm *x, LLVMValueRef a);
LLVMValueRef mm_to_ot(Mm *x, LLVMValueRef a);
LLVMValueRef mm_add(Mm *x, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef mm_mul(Mm *x, LLVMValueRef a, LLVMValueRef b);
/* with a constant c of a's type */
LLVMValueRef mm_addc(Mm *x, LLVMValueRef a, int64_t c);
LLVMValueRef mm_mulc(Mm *x, LLVMValueRef a, int64_t c);
LLVMValueRef mm_udivc(Mm *x, LLVMValueRef a, int64_t c);
LLVMValueRef mm_uremc(Mm *x, LLVMValueRef a, int64_t c);
/* i64: ceil(a / c), min(a, b) */
LLVMValueRef mm_ceil_div(Mm *x, LLVMValueRef a, int64_t c);
LLVMValueRef mm_min64(Mm *x, LLVMValueRef a, LLVMValueRef b);
/* Phases (code between two barriers; the host loops over the thread ids), the
 * thread id hidden from hoisting (GPU), the accumulators of the current thread. */
LLVMValueRef mm_phase_begin(Mm *x);
void mm_phase_end(Mm *x);
/* A barrier of the block's threads; in a ws kernel's multiplying warpgroups, of
 * those (Mm.wsbar: the copying warpgroup never waits there). */
void mm_barrier(Mm *x);
LLVMValueRef mm_opaque_tid(Mm *x, LLVMValueRef tid);
LLVMValueRef mm_acc_load(Mm *x, LLVMValueRef e);
void mm_acc_store(Mm *x, LLVMValueRef e, LLVMValueRef v);
/* Shared memory: the byte offset of (row, chunk) in operand w's tile (swizzled, or
 * for SIMT padded), a pointer to a byte offset, and inline PTX. */
LLVMValueRef mm_swz(Mm *x, int w, LLVMValueRef row, LLVMValueRef ch);
/* Chunk q of operand w's tile (the share of a thread: q = tid + i * MM_THREADS): its
 * row and chunk in the shared tile, and its byte offset in the stage whose operand
 * w starts at soff. */
LLVMValueRef mm_chunk_at(Mm *x, int w, LLVMValueRef soff, LLVMValueRef q, LLVMValueRef *row,
			 LLVMValueRef *ch);
LLVMValueRef mm_smem_at(Mm *x, LLVMValueRef byte);
LLVMValueRef mm_asm_call(Mm *x, LLVMTypeRef ret, const char *text, const char *cons,
			 LLVMValueRef *args, int nargs);
/* GPU: the 32-bit shared address of a byte offset */
LLVMValueRef mm_saddr(Mm *x, LLVMValueRef byte);
void mm_wg_align(Mm *x, LLVMValueRef g);
/* Byte offset (ot) of the shared copy of operand w (0 = A, 1 = B) in a stage whose
 * offset is s (ot); A at 0 whatever the stage where one A tile serves every stage
 * (Mm.a_fixed). */
LLVMValueRef mm_stage_off(Mm *x, LLVMValueRef s, int w);
/* The f32 value of element (row, col) of operand w's tile in the stage at soff. */
LLVMValueRef mm_smem_elem(Mm *x, int w, LLVMValueRef soff, LLVMValueRef row,
			  LLVMValueRef col);

/* ---- matmul_shape.c: what the picker and the builders derive ---- */

/* (and cg_matmul_index, declared in cg_impl.h: the matmul's op in a kernel) */
/* Whether the siblings mem[0..ng) of s (mm_members) are alike op for op (kind,
 * attributes, no scalars, operands of the same dtypes and shapes, the same ones
 * written and read from memory), so that one tile loop runs them all with the
 * buffers of the tile's matmul (mm_group_units); fills map (ng x nt, nt above every
 * tensor id of s: the id in matmul g of each id of the first's ops, the first's row
 * the identity; -1 elsewhere). */
bool mm_alike(const CgKernelSpec *s, const int *mem, int ng, int nt, int *map);
/* The tensor operand t of the matmul at s->ops[mi] is read from in memory: t itself,
 * or what its leading swap_dims / permute view reads; perm[d] (rank entries) the dim
 * of that tensor which is t's dim d. */
bool mm_kmajor_at(const CgKernelSpec *s, int mi);
const RelTensor *mm_operand_view(const CgKernelSpec *s, int mi, const RelTensor *t, int *perm);
/* The TMA tensor map of parameter id of s's kernel under configuration c at these
 * dims (cg_matmul_tmap). */
bool mm_tmap(const CgKernelSpec *s, const MmConfig *c, int id, const int64_t *dims, int ndims,
	     int *tensor, CgTmap *tm);
/* Whether every operand of s (the first, each sibling's second) has a TMA tensor map
 * under configuration c at the launch's dims (cg_matmul_tmap). */
bool mm_tmaps_ok(const CgKernelSpec *s, const MmConfig *c, const int64_t *dims, int ndims);
/* Whether configuration c computes operands of dtype t (tf32: when allowed). */
bool mm_fits(const MmConfig *c, DType t, bool tf32);
/* Shared bytes of operand w's tile in a stage, of the stages (gemv: its staged and
 * partial tiles) over elements of es bytes, and what the launch asks for (wgmma:
 * room to align the stages). */
int mm_tile_bytes(const MmConfig *c, int es, int w);
int mm_stages_bytes(const MmConfig *c, int es);
int mm_smem(const MmConfig *c, int es);
int mm_ws_epi_rows(const MmConfig *c, int es);
/* the attention kernel's (matmul_attention.c) */
int mm_attention_smem(const MmConfig *c, int es);
/* Bytes of one split-K unit's partial tile in the scratch. */
int64_t mm_partial_bytes(const MmConfig *c);

/* ---- matmul_conv.c: convolution as an implicit GEMM ---- */

/* Fill M, N, K, the operands and their fast-copy tests for the conv at x->op. */
void mm_conv_setup(Mm *x);
LLVMValueRef mm_conv_aligned16(Mm *x, int w);
/* Tiles: images x groups batches; a batch's position (n, g) and operand offsets. */
LLVMValueRef mm_conv_batches(Mm *x);
void mm_conv_batch(Mm *x, LLVMValueRef f);
/* GPU, at the start of a tile: the window origin of each column of the chunk
 * column this thread copies in every row of B's tile (tid % cpr: MM_THREADS is a
 * multiple of cpr), so that the K loop divides by nothing but the window. */
void mm_conv_tile_cols(Mm *x);
/* B's chunk of ce elements at row k, columns p.. (i64): a vector of raw elements,
 * zeros outside the input. */
LLVMValueRef mm_conv_chunk(Mm *x, LLVMValueRef k, LLVMValueRef p);
/* Channels last: A's chunk (i, the thread's i-th chunk of the stage) at row m,
 * columns k.. copied to shared offset doff (pointer dst): whole, by cp.async on
 * the GPU, when whole chunks may be copied (x->all_fast), else element by element. */
void mm_conv_load_a(Mm *x, int i, LLVMValueRef m, LLVMValueRef k, LLVMValueRef doff,
		    LLVMValueRef dst, bool whole);
/* The output index of the GEMM's (row, column) in the current batch, and the value
 * of the conv there from the accumulator v (its bias added). */
void mm_conv_out_at(Mm *x, LLVMValueRef gr, LLVMValueRef gc, CgIdx *at);
LLVMValueRef mm_conv_value(Mm *x, const CgIdx *at, LLVMValueRef v);
/* Whether spec's conv (the first op) is one the tiles take, and its GEMM sizes. */
bool mm_conv_eligible(const RelOp *op);
void mm_conv_sizes(const RelOp *op, const int64_t *dims, int ndims, int64_t *batch,
		   int64_t *m, int64_t *n, int64_t *k);
void mm_conv_launch(const MmConfig *c, const RelOp *op, CgLaunch *l);
/* Whether the conv reads its input in place (a 1x1 window of stride 1 without
 * padding: no gather), and, channels last in one group, the TMA map of its input
 * (id 0) or weight (id 1) for the ws tiles, at a plan's own sizes (mm_tmap). */
bool mm_conv_in_place(const RelOp *op);
bool mm_conv_tmap(const RelOp *op, const MmConfig *c, int id, const int64_t *dims, int ndims,
		  int *tensor, CgTmap *tm);

/* ---- matmul_mma.c, matmul_wgmma.c, matmul_simt.c: the compute of a stage ---- */

void mm_tc_compute_gpu(Mm *x, LLVMValueRef s);
void mm_tc_compute_host(Mm *x, LLVMValueRef s);
void mm_tc_pos(Mm *x, LLVMValueRef tid, LLVMValueRef e, LLVMValueRef *row, LLVMValueRef *col);
void mm_wg_compute_gpu(Mm *x, LLVMValueRef s);
void mm_wg_wait(Mm *x, int n);
void mm_wg_compute_regs(Mm *x, LLVMValueRef s, LLVMValueRef *a, bool wait);
void mm_wg_round_tf32(Mm *x, LLVMValueRef s);
/* tf32 (cvt.rna.tf32.f32) of the f32 v, as the f32 it stands for (matmul_mma.c). */
LLVMValueRef mm_to_tf32(Mm *x, LLVMValueRef v);
void mm_simt_compute(Mm *x, LLVMValueRef s);
void mm_simt_pos(Mm *x, LLVMValueRef tid, int e, LLVMValueRef *row, LLVMValueRef *col);

/* ---- matmul_stage.c: a K step's stage ---- */

/* Stage loads (both operands for K step kt into the stage at s). */
void mm_load_stage(Mm *x, LLVMValueRef s, LLVMValueRef kt);
/* One operand's tile of it (w: 0 = A, 1 = B), in one phase. */
void mm_load_tile(Mm *x, int w, LLVMValueRef s, LLVMValueRef kt);
/* Operands: the buffer and strides of operand w of the matmul at spec->ops[mi],
 * the offset of the current tile's batch, whether 16-byte chunks may be copied. */
void mm_operand_layout(Mm *x, const CgKernelSpec *s, int mi, int w);
LLVMValueRef mm_batch_base(Mm *x, int w);
/* Operand w's position along batch dim d (a dim the operand has) at the current
 * tile's Mm.bpos: a grouped operand's O / T output positions share one. */
LLVMValueRef mm_batch_pos(Mm *x, int w, int d);
LLVMValueRef mm_is_aligned16(Mm *x, int w);
/* Output tiles: the batch count and tile rows and columns (returns the tiles per
 * batch), and for a tile's flat batch index its batch position and operand offsets
 * (Mm.bpos, Mm.base). */
LLVMValueRef mm_tile_grid(Mm *x, LLVMValueRef *nb, LLVMValueRef *ntm, LLVMValueRef *ntn);
void mm_tile_batch(Mm *x, LLVMValueRef f);
/* Tile t as the current one: its rows and columns (Mm.m0, n0), batch and operands. */
void mm_tile_at(Mm *x, LLVMValueRef t, LLVMValueRef per_batch, LLVMValueRef ntm,
		LLVMValueRef ntn);
/* The compute of the stage at s, by the configuration's kind. */
void mm_compute_stage(Mm *x, LLVMValueRef s);

/* ---- matmul_epilogue.c ---- */

LLVMValueRef mm_vector_ok(Mm *x, const int *wr, int nw);
LLVMValueRef mm_staged(Mm *x, LLVMValueRef row, LLVMValueRef col);
void mm_epilogue(Mm *x, const int *wr, int nw);
void mm_epi_walk(Mm *x, int h, const int *wr, int nw);
LLVMValueRef mm_split_share(Mm *x, LLVMValueRef *t, int S, LLVMValueRef n, LLVMValueRef *beg,
			    LLVMValueRef *end);
LLVMBasicBlockRef mm_split_combine(Mm *x, LLVMValueRef tile, LLVMValueRef split,
				   LLVMValueRef total);

/* ---- matmul_kernel.c, matmul_gemv.c, matmul_attention.c, matmul_depthwise.c ---- */

/* The kernel body of a tile configuration (after the frame made the function), and
 * the gemv configurations' loop over output tiles (tiny M, matmul_gemv.c). */
int mm_tile_kernel(CgKb *kb, const MmConfig *c, const int *wr, int nw);
/* (matmul_tile.c) Siblings (mm_members) in a loop over every matmul's units (tiles x
 * split), n each:
 * *t becomes the unit of matmul x->gi; returns the block the other units go to
 * (NULL for one matmul, or for every matmul at once: then the tile's matmul's
 * buffers stand in for the first's until mm_group_end). mm_group_tile: the launch's
 * tile of tile t of the current matmul. */
LLVMBasicBlockRef mm_group_units(Mm *x, LLVMValueRef *t, LLVMValueRef n);
void mm_group_end(Mm *x);
LLVMValueRef mm_group_tile(Mm *x, LLVMValueRef t, LLVMValueRef total);
void mm_gemv_tile_loop(Mm *x, LLVMValueRef block, LLVMValueRef nblocks, const int *wr,
		       int nw);
/* (matmul_ws.c) mbarriers at 32-bit shared addresses: set one up for `count`
 * arrivals, arrive on one, wait until its phase of parity `parity` (i32)
 * completed. */
void mm_mbar_init(Mm *x, LLVMValueRef a, int count);
void mm_mbar_arrive(Mm *x, LLVMValueRef a);
void mm_mbar_wait(Mm *x, LLVMValueRef a, LLVMValueRef parity);
/* Arrive on the mbarrier at a, expecting `bytes` more of copies to land on it. */
void mm_mbar_expect(Mm *x, LLVMValueRef a, int bytes);
/* Copy operand w's tile of K step kt into the stage at so by TMA, a 128-byte panel
 * a copy (the map's box), completing on the mbarrier at bar; map the tensor map
 * (NULL: operand w's of the kernel, Mm.grt's among siblings). In a cluster (rank:
 * the block's, else NULL) A's tile is shared: this block copies its half (panels
 * r*P/2.. of P panels, or with one panel rows r*BM/2.., the map's box then BM/2
 * rows: mm_tmap) into both blocks. The batch coordinates are mm_batch_pos's. */
void mm_tma_tile(Mm *x, int w, LLVMValueRef map, LLVMValueRef rank, LLVMValueRef so,
		 LLVMValueRef kt, LLVMValueRef bar);
/* (matmul_ws.c) The tile loop of a warp-specialized configuration on the GPU. */
void mm_ws_tile_loop(Mm *x, LLVMValueRef block, LLVMValueRef nblocks, const int *wr, int nw);
/* The attention op's kernel body. */
int mm_attention_kernel(CgKb *kb, const MmConfig *c, const int *wr, int nw);
/* Whether op is a channels-last conv of one input and one output channel per group
 * (dims: the launch's, for the output channels). */
bool mm_dw_eligible(const RelOp *op, const int64_t *dims, int ndims);
/* The outputs one thread of configuration c computes (its launch's vec). */
int mm_dw_outputs(const MmConfig *c, const RelOp *op);
/* The kernel body (a plain grid-stride launch, after the frame made the function). */
int mm_dw_kernel(CgKb *kb, const MmConfig *c, const int *wr, int nw);

/* ---- matmul_pick.c: the table ---- */

/* Configuration variant of the table, NULL for 0 (plain) or out of range. */
const MmConfig *mm_config(int variant);
/* Whether spec is a matmul the tiled kernel takes. */
bool mm_eligible(const CgKernelSpec *s);

/* ---- matmul_shape.c ---- */

/* The op indices of spec's matmuls into mem (at most IR_MM_GROUP_MAX): the first
 * (cg_matmul_index), then its siblings, which read the same first operand and
 * give outputs of its shape (passes/fuser_matmul.c); returns how many. */
int mm_members(const CgKernelSpec *s, int *mem);

#endif
