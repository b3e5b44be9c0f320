/* matmul_pick.c: which tile configuration a matmul gets, and how it is launched.
 *
 * A Matmul kernel (a matmul and its elementwise epilogue, or a matmul alone) whose
 * operands are f16, bf16 or f32 runs as a tiled kernel (matmul_kernel.c) when lower.c
 * picks a tile configuration for it (cg_matmul_variant; 0 keeps the
 * one-thread-per-element evaluator, cg_eval_matmul in kernel_matmul.c, for the other
 * dtypes and archs before sm_80). Here, on top of the family: the table of
 * configurations, which kernels are eligible (mm_eligible), the picker with its rule
 * under a wave (under_wave), the launch rule, and the hand-over of a kernel to the
 * builder its configuration names (cg_matmul_tiled: depthwise, attention or tiles).
 * The matmul's op in a kernel (cg_matmul_index), which configurations fit a dtype
 * (mm_fits) and the sizes the builders share are matmul_shape.c's.
 *
 * Launch: a cooperative launch (codegen.h) of MM_THREADS threads per block and one
 * block per output tile, S per tile for split-K (mm_rule, which also asks for the
 * scratch); the loop over tiles makes any grid correct. Shared
 * memory is static up to 48 KiB; configurations needing more take the launch's
 * dynamic shared memory (mm_rule sets its bytes). On the host the
 * function keeps the plain signature: called as thread 0 of 1 it runs every tile. */
#include <stdlib.h>
#include <string.h>

#include "matmul.h"

enum {
	MM_WAVE = 132,           /* H200 multiprocessors: tiles below this favour smaller tiles */
	MM_GEMV_M = 16,          /* rows up to which the gemv configuration is chosen */
	MM_GEMV_M_TC = 8,        /* (for f16/bf16 on tensor cores, this many) */
	MM_GEMV = 7,             /* its index in the table */
	MM_TC256 = 8,            /* tc128x256x32s4's index */
	MM_LONG_K = 2048,        /* K from which tc128x256x32s4 is taken (given a wave) */
	/* the rule under a wave (cg_matmul_variant, measured: docs/benchmarks.md,
	 * "Matmul under a wave"); indices of the split entries below */
	MM_F64SK3 = 9, MM_F64SK4 = 10, MM_F128SK4 = 11, MM_TCSK2 = 12, MM_TCSK4 = 13,
	MM_FULL = 118,           /* blocks counted as a wave (0.9 x 132) for fma128x128 */
	MM_NEAR = 92,            /* f32 matmul: 128x128 tiles from 0.7 of a wave */
	MM_FILL_PCT = 75,        /* f32 matmul: the share of its last wave below which */
	MM_FILL_SPLIT_PCT = 80,  /* (this one for K from MM_SPLIT_K128) K splits 4 ways */
	MM_SPLIT_K128 = 2048,    /* from this K, else 64x64 tiles are taken */
	MM_SPLIT_FEW = 33,       /* 64x64 tiles up to which K splits 4 ways (4 x 33 = 132) */
	MM_SPLIT_FEW_F32 = 48,   /* f32: the same (a transformer's 768-wide projections
				  * at 197 rows: 48 tiles, 20 % faster 4 ways than 3) */
	MM_SPLIT_SOME = 145,     /* f32: 64x64 tiles below which K splits 3 ways (144:
				  * 197x2304x768, 19 % faster than unsplit) */
	MM_SPLIT_STEPS = 4,      /* BK steps a split keeps at least */
	MM_SPLIT_STEPS128 = 16,  /* the same for fma128x128x16s3sk4 */
	MM_TINY_K = 64,          /* f32 matmuls of K up to this ... */
	MM_TINY_OUT = 65536,     /* ... and up to this many outputs run plain */
	MM_WG128 = 14, MM_WG256 = 15, /* the wgmma entries (sm_90a) */
	MM_TC32 = 16,            /* tc128x32x32s3 */
	MM_DW4 = 17, MM_DW2 = 18, MM_DW1 = 19, /* depthwise channels last */
	MM_WGT128 = 20, MM_WGT256 = 21, /* wgmma tf32 (sm_90a, --allow-tf32) */
	MM_WGT64 = 53,           /* wgtf32x128x64x32s4 */
	MM_ATT64 = 22, MM_ATT128 = 23,  /* the attention op (matmul_attention.c) */
	MM_GEMVSK4 = 24, MM_GEMVSK16 = 25, /* gemv split over 4 and 16 blocks */
	MM_GEMVW = 26,           /* gemv8x128k8 (then its sk4, sk16) */
	MM_ATT64T = 31, MM_ATT128T = 32, /* the attention op in tf32 */
	MM_ATT256 = 33,          /* the attention op, head dims up to 256 (sm_90) */
	MM_ATTWG64 = 35,         /* the attention op on wgmma (sm_90a), 64 keys a step */
	MM_ATTWGK128 = 38,       /* the same, 128 keys a step, head dims up to 128 */
	MM_ATTWGK128PP = 50,     /* attwg128x128d128pp: the warpgroups out of step */
	MM_GEMV_SPLIT_K = 128,   /* gemv: K a split keeps at least */
	MM_WG96WS = 41,          /* wg128x96x64s6ws (six stages: the H100, session 53,
				    4 to 13 % faster than wg128x96x64s4ws, index 39) */
	MM_WG192WS = 46,         /* wg128x192x64s4ws */
	MM_WG64WS = 51,          /* wg128x64x64s6ws */
	MM_WG64 = 52,            /* wg128x64x64s4 */
	MM_WG64WSSK = 58,        /* wg128x64x64s6wssk2, then sk3, sk4, sk8 */
	MM_X3_128 = 62, MM_X3_64 = 63, MM_X3_96 = 64, /* 3xTF32 (matmul_wgmma.c) */
	MM_X3_64SK2 = 65, MM_X3_64SK3 = 66, /* the 64-wide one split 2 and 3 ways */
	MM_WS_SPLIT_RULE = 0,    /* 1: the rule splits K on the 64-wide ws tile under
				    a wave (ws_split); 0 (measured: split, GPT-2's
				    batch-1 products each took 3-4 us more, the model
				    655 -> 809 us on the H100; docs/benchmarks.md,
				    session 58): it keeps the tile whole */
	MM_WG128WS = 29, MM_WG256WS = 30, /* wg128x128x64s4ws, wg128x256x64s4ws */
	MM_ATTWGK128PPT = 57,    /* attwg128x128d128ppt: pp with K and V by TMA */
	MM_ATT_TMA_RULE = 1,     /* 1: the rule takes attwg128x128d128ppt where the
				    tensor maps describe K and V (session 56, H100:
				    32x2048^2x128 f16 188 -> 157 us, causal
				    8x16x4096^2x128 1478 -> 1249); 0: the pp kernel */
	MM_CONV_WS_RULE = 1,     /* 1: the rule takes the ws tiles for a conv read in
				    place (measured in session 56; 0 puts the plain
				    loop back) */
};

/* The tile-configuration table (docs/design.md, "Matmul tiles"). Index 0 is "no
 * tiling". Every entry fits MM_THREADS threads; entries whose shared memory (mm_smem)
 * exceeds MM_SMEM_STATIC take it as the launch's dynamic shared memory. */
static const MmConfig mm_configs[] = {
	{"plain", false, false, false, 0, 0, 0, 0, 0, 0, 0, 0, false, 0, false, false, false, 0, false, false},
	/* 2 blocks per SM: ptxas fits 128 registers (a few hundred bytes of spills), and
	 * 16 warps hide ldmatrix and mma latency better than 8; BK = 64 and 96 KiB of
	 * dynamic shared memory: half the barriers of BK = 32, and a short K (G7,
	 * K = 256) is in flight after the prologue */
	{"tc128x128x64s3", true, false, false, 2, 128, 128, 64, 2, 4, 3, 0, false, 0, false, false, false, 0, false, false},
	{"tc64x64x32s3", true, false, false, 0, 64, 64, 32, 2, 4, 3, 0, false, 0, false, false, false, 0, false, false},
	/* f32 SIMT: 2 blocks per SM, 128 registers without spills once the padded
	 * tiles read at immediate offsets (matmul_simt.c; a conv with a gather asks
	 * for none, matmul_kernel.c) */
	{"fma128x128x16s3", false, false, false, 2, 128, 128, 16, 0, 0, 3, 0, false, 0, false, false, false, 0, false, false},
	{"fma64x64x16s3", false, false, false, 0, 64, 64, 16, 0, 0, 3, 0, false, 0, false, false, false, 0, false, false},
	/* --allow-tf32: mma.sync m16n8k8 tf32; f32 stages are twice the bytes, so the
	 * large tile takes half the K of the bf16 tiles to stay within 48 KiB */
	{"tf32x128x128x16s3", true, true, false, 0, 128, 128, 16, 2, 4, 3, 0, false, 0, false, false, false, 0, false, false},
	{"tf32x64x64x32s3", true, true, false, 0, 64, 64, 32, 2, 4, 3, 0, false, 0, false, false, false, 0, false, false},
	/* M <= MM_GEMV_M (decode): no shared operand tiles, every dtype and arch; 8
	 * rows a block (M of 9 to 16 takes two rows of tiles) */
	{"gemv8x64k8", false, false, true, 2, 8, 64, 8, 0, 0, 0, 0, false, 0, false, false, false, 0, false, false},
	/* long K with a wave of 128x256 tiles (G5): 64x64 warp tiles (8 ldmatrix.x4
	 * per 32 mma), 4 stages (96 KiB), 255 registers, one block per SM */
	{"tc128x256x32s4", true, false, false, 1, 128, 256, 32, 2, 4, 4, 0, false, 0, false, false, false, 0, false, false},
	/* split-K (under a wave of output tiles): `split` blocks share an output tile,
	 * each taking a contiguous share of K; their partial tiles go to the launch's
	 * scratch and the last of them sums the partials in split order, then runs the
	 * epilogue (mm_split_combine). Two blocks per SM asked of ptxas (128 registers):
	 * unbounded, the combine's loads took up to 207 (docs/benchmarks.md, "Matmul
	 * under a wave") */
	{"fma64x64x16s3sk3", false, false, false, 2, 64, 64, 16, 0, 0, 3, 3, false, 0, false, false, false, 0, false, false},
	{"fma64x64x16s3sk4", false, false, false, 2, 64, 64, 16, 0, 0, 3, 4, false, 0, false, false, false, 0, false, false},
	/* the large SIMT tile split: no blocks per SM asked (157 registers with a bias
	 * epilogue; at 128 it spilled 64 bytes and ran 2048x768x3072 in 0.365 ms
	 * against 0.281 with none: docs/benchmarks.md, session 40) */
	{"fma128x128x16s3sk4", false, false, false, 0, 128, 128, 16, 0, 0, 3, 4, false, 0, false, false, false, 0, false, false},
	{"tc64x64x32s3sk2", true, false, false, 2, 64, 64, 32, 2, 4, 3, 2, false, 0, false, false, false, 0, false, false},
	{"tc64x64x32s3sk4", true, false, false, 2, 64, 64, 32, 2, 4, 3, 4, false, 0, false, false, false, 0, false, false},
	/* sm_90a (the default arch): wgmma.mma_async m64nBNk16 straight from the
	 * stages, one warpgroup per 64 rows (the warp grid 8 x 1 is the accumulator
	 * layout of wgmma: warp w holds rows 16w..16w+15 of the block tile, the same
	 * fragment-to-element map as mma.sync's m16n8 repeated along N); operand
	 * tiles in 128-byte panels with the 128-byte swizzle (wg_desc, matmul_wgmma.c) */
	{"wg128x128x64s4", true, false, false, 1, 128, 128, 64, 8, 1, 4, 0, true, 0, false, false, false, 0, false, false},
	{"wg128x256x64s4", true, false, false, 1, 128, 256, 64, 8, 1, 4, 0, true, 0, false, false, false, 0, false, false},
	/* a channels-last conv of few output channels per group (MobileNetV3's 1x1
	 * convs of 16 to 40 channels on 112x112 to 28x28 planes): rows are pixels,
	 * so a tall narrow tile wastes fewer columns than 64x64 (the warp tile is
	 * tc64x64x32s3's, 32x16); on the H200 the 16-channel ones ran 1.5-1.7x
	 * faster on it */
	{"tc128x32x32s3", true, false, false, 0, 128, 32, 32, 4, 2, 3, 0, false, 0, false, false, false, 0, false, false},
	/* not tiles: a depthwise conv channels last (matmul_depthwise.c), 16 bytes of
	 * channels of 4, 2 or 1 output columns a thread (the rule: 1 for a 3x3, 2
	 * from 5x5 on) */
	{"dwc4", false, false, false, 0, 0, 0, 0, 0, 0, 0, 0, false, 4, false, false, false, 0, false, false},
	{"dwc2", false, false, false, 0, 0, 0, 0, 0, 0, 0, 0, false, 2, false, false, false, 0, false, false},
	{"dwc1", false, false, false, 0, 0, 0, 0, 0, 0, 0, 0, false, 1, false, false, false, 0, false, false},
	/* sm_90a, --allow-tf32: wgmma m64nBNk8 tf32 over f32 stages, whose rows of
	 * BK = 32 elements are one 128-byte panel; tf32 wgmma takes both operands
	 * K-major only (A rows along K, B stored transposed: a conv channels last), and
	 * reads the f32 bits as they lie, so each thread rounds the chunks it copied
	 * to tf32 in shared memory before the stage is read (matmul_wgmma.c) */
	{"wgtf32x128x128x32s4", true, true, false, 1, 128, 128, 32, 8, 1, 4, 0, true, 0, false, false, false, 0, false, false},
	{"wgtf32x128x256x32s4", true, true, false, 1, 128, 256, 32, 8, 1, 4, 0, true, 0, false, false, false, 0, false, false},
	/* not tiles: the attention op, 128 rows of q a block, 64 keys a step, head
	 * dims (of q and of v) up to 64 or 128 (matmul_attention.c); two blocks per
	 * SM asked of ptxas (128 registers, a hundred bytes of spills against 216 or
	 * 255 registers, one block): on the H200 BERT's attention 44 -> 30 us, issue
	 * 24's 32x2048^2x128 562 -> 523 us (docs/benchmarks.md) */
	{"att128x64d64", true, false, false, 2, 128, 64, 64, 8, 1, 1, 0, false, 0, true, false, false, 0, false, false},
	{"att128x64d128", true, false, false, 2, 128, 64, 128, 8, 1, 1, 0, false, 0, true, false, false, 0, false, false},
	/* gemv with K split over blocks (matmul_gemv.c): a 768-wide output of one
	 * token is 12 tiles, 12 of 132 SMs; split, each block's summed tile goes to
	 * the scratch and the last adds them in split order (gemv_rule). Every gemv
	 * asks for 2 blocks per SM: 128 registers without spills for 8 rows (16
	 * rows a block spilled there) */
	{"gemv8x64k8sk4", false, false, true, 2, 8, 64, 8, 0, 0, 0, 4, false, 0, false, false, false, 0, false, false},
	{"gemv8x64k8sk16", false, false, true, 2, 8, 64, 8, 0, 0, 0, 16, false, 0, false, false, false, 0, false, false},
	/* the same 128 wide, four columns a thread (fewer steps of k in flight: M
	 * from 9; 184 bytes of spills at 128 registers for 8 rows, none for 1) */
	{"gemv8x128k8", false, false, true, 2, 8, 128, 8, 0, 0, 0, 0, false, 0, false, false, false, 0, false, false},
	{"gemv8x128k8sk4", false, false, true, 2, 8, 128, 8, 0, 0, 0, 4, false, 0, false, false, false, 0, false, false},
	{"gemv8x128k8sk16", false, false, true, 2, 8, 128, 8, 0, 0, 0, 16, false, 0, false, false, false, 0, false, false},
	/* wgmma warp-specialized and persistent (matmul_ws.c): a third warpgroup
	 * copies the stages by TMA (one thread, handed over through mbarriers) while
	 * the two others multiply, one block per SM loops over the tiles, and the
	 * epilogue stages through a region of its own, so the next tile's copies run
	 * under it. 2-27 % faster than wg's on every shape of the sweep (8192^3 +
	 * bias: 1.51 against 1.86 ms, 94 % of cuBLAS; docs/benchmarks.md, session
	 * 46), so the rule takes them wherever every operand has a tensor map */
	{"wg128x128x64s4ws", true, false, false, 1, 128, 128, 64, 8, 1, 4, 0, true, 0, false, true, false, 0, false, false},
	{"wg128x256x64s4ws", true, false, false, 1, 128, 256, 64, 8, 1, 4, 0, true, 0, false, true, false, 0, false, false},
	/* the attention op over f32 under --allow-tf32: tf32 mma.sync, stages of four
	 * bytes an element (128 KB for head dims up to 64, 224 KB up to 128, which
	 * only sm_90's 227 KB holds), one block an SM */
	{"att128x64d64t", true, true, false, 1, 128, 64, 64, 8, 1, 1, 0, false, 0, true, false, false, 0, false, false},
	{"att128x64d128t", true, true, false, 1, 128, 64, 128, 8, 1, 1, 0, false, 0, true, false, false, 0, false, false},
	/* head dims up to 256 (f16/bf16): 208 KB of stages, which only sm_90 holds, one
	 * block an SM */
	{"att128x64d256", true, false, false, 1, 128, 64, 256, 8, 1, 1, 0, false, 0, true, false, false, 0, false, false},
	/* ws ping-pong (matmul_ws.c): each multiplying warpgroup takes whole 128x128
	 * tiles, every other one of the block's, so that the epilogue of one runs
	 * while the other multiplies (a GELU epilogue of a K = 768 tile takes about
	 * as long as its products) */
	{"wg128x128x64s4pp", true, false, false, 1, 128, 128, 64, 8, 1, 4, 0, true, 0, false, true, true, 0, false, false},
	/* the attention op on wgmma (sm_90a): the same block tile and softmax as
	 * att128x64d*, 64 or 128 keys a step, S = q kt from shared memory in
	 * 128-byte panels, O += P v with P from registers (matmul_attention.c).
	 * Head dims up to 64 ask for two blocks an SM (128 registers, 8 bytes of
	 * spills): on the H100 BERT's attention (8x12x256^2x64, a padding mask) took
	 * 29.0 us so against 39.4 with one block (175 registers) and 30.5 on
	 * mma.sync; up to 128 one block an SM, 128 keys a step (216 to 255
	 * registers): 32x2048^2x128 363 us against 396 with 64 keys and 412 with 64
	 * keys and two blocks (docs/benchmarks.md, session 49) */
	{"attwg128x64d64", true, false, false, 2, 128, 64, 64, 8, 1, 1, 0, true, 0, true, false, false, 0, false, false},
	{"attwg128x64d128", true, false, false, 1, 128, 64, 128, 8, 1, 1, 0, true, 0, true, false, false, 0, false, false},
	{"attwg128x128d64", true, false, false, 2, 128, 128, 64, 8, 1, 1, 0, true, 0, true, false, false, 0, false, false},
	{"attwg128x128d128", true, false, false, 1, 128, 128, 128, 8, 1, 1, 0, true, 0, true, false, false, 0, false, false},
	/* ws, 96 columns (B K-major only: a 128-byte panel of 96 rows; MN-major
	 * panels are 64 columns wide): a matmul of 768 columns at 2048 rows has 128
	 * tiles of these for 132 SMs where 128x128 leaves 36 of them idle */
	{"wg128x96x64s4ws", true, false, false, 1, 128, 96, 64, 8, 1, 4, 0, true, 0, false, true, false, 0, false, false},
	/* the same two with six stages: the epilogue's region shrinks to make room
	 * (mm_ws_epi_rows); the rule takes the 96-wide one (MM_WG96WS), the
	 * 128-wide one is forced only (FUSEC_MATMUL_TILES: not faster) */
	{"wg128x128x64s6ws", true, false, false, 1, 128, 128, 64, 8, 1, 6, 0, true, 0, false, true, false, 0, false, false},
	{"wg128x96x64s6ws", true, false, false, 1, 128, 96, 64, 8, 1, 6, 0, true, 0, false, true, false, 0, false, false},
	/* ws in clusters of two blocks (forced only so far): the two take tiles side
	 * by side in a row of tiles, so they read the same A tile, and each loads
	 * half of it for both (TMA multicast): a quarter to a third less read from
	 * L2, which bounds these tiles' K loop at K >= 2048 */
	{"wg128x128x64s4wsc2", true, false, false, 1, 128, 128, 64, 8, 1, 4, 0, true, 0, false, true, false, 2, false, false},
	{"wg128x96x64s4wsc2", true, false, false, 1, 128, 96, 64, 8, 1, 4, 0, true, 0, false, true, false, 2, false, false},
	{"wg128x96x64s6wsc2", true, false, false, 1, 128, 96, 64, 8, 1, 6, 0, true, 0, false, true, false, 2, false, false},
	{"wg128x256x64s4wsc2", true, false, false, 1, 128, 256, 64, 8, 1, 4, 0, true, 0, false, true, false, 2, false, false},
	/* ws, 192 columns (m64n192k16; an MN-major B in three 64-column panels):
	 * 3152 rows by 768 columns in one wave of 100 tiles (MM_WG192WS) */
	{"wg128x192x64s4ws", true, false, false, 1, 128, 192, 64, 8, 1, 4, 0, true, 0, false, true, false, 0, false, false},
	/* the attention op on wgmma with its two warpgroups out of step
	 * (matmul_attention.c, `pp`): three K and V buffers handed over by
	 * mbarriers instead of block barriers, and the warpgroups issuing their
	 * scores' products in turn, so that one's softmax runs under the other's
	 * products; the host runs them as attwg's */
	{"attwg128x64d64pp", true, false, false, 2, 128, 64, 64, 8, 1, 3, 0, true, 0, true, false, true, 0, false, false},
	{"attwg128x64d128pp", true, false, false, 1, 128, 64, 128, 8, 1, 3, 0, true, 0, true, false, true, 0, false, false},
	{"attwg128x128d64pp", true, false, false, 2, 128, 128, 64, 8, 1, 3, 0, true, 0, true, false, true, 0, false, false},
	{"attwg128x128d128pp", true, false, false, 1, 128, 128, 128, 8, 1, 3, 0, true, 0, true, false, true, 0, false, false},
	/* ws, 64 columns, six stages: a conv channels last of 64 output channels
	 * read in place (ResNet-50's first stage: 100352 rows at batch 32), where
	 * 128 columns would waste half the tile */
	{"wg128x64x64s6ws", true, false, false, 1, 128, 64, 64, 8, 1, 6, 0, true, 0, false, true, false, 0, false, false},
	/* the plain wgmma loop 64 columns wide, two blocks an SM (forced only so
	 * far): a gathered conv channels last of 64 output channels (ResNet-50's
	 * first-stage 3x3s) */
	{"wg128x64x64s4", true, false, false, 2, 128, 64, 64, 8, 1, 4, 0, true, 0, false, false, false, 0, false, false},
	/* its tf32 twin (forced only so far): ResNet-50's 64-channel convs under
	 * --allow-tf32, which run on mma.sync's tf32x64x64x32s3 (session 35: 12
	 * layers, 1.31 of 4.16 ms) */
	{"wgtf32x128x64x32s4", true, true, false, 2, 128, 64, 32, 8, 1, 4, 0, true, 0, false, false, false, 0, false, false},
	/* the pp attention kernels with K and V by TMA (the rule takes
	 * attwg128x128d128ppt, MM_ATT_TMA_RULE; the others forced): one
	 * thread copies a key tile's K and V panels where 256 threads copied
	 * 16-byte chunks, which freed the softmax step of the copies' address
	 * math; where the tensor maps cannot describe K or V the pp kernel runs */
	{"attwg128x64d64ppt", true, false, false, 2, 128, 64, 64, 8, 1, 3, 0, true, 0, true, false, true, 0, true, false},
	{"attwg128x64d128ppt", true, false, false, 1, 128, 64, 128, 8, 1, 3, 0, true, 0, true, false, true, 0, true, false},
	{"attwg128x128d64ppt", true, false, false, 2, 128, 128, 64, 8, 1, 3, 0, true, 0, true, false, true, 0, true, false},
	{"attwg128x128d128ppt", true, false, false, 1, 128, 128, 128, 8, 1, 3, 0, true, 0, true, false, true, 0, true, false},
	/* the 64-wide ws tile with K split 2, 3, 4 or 8 ways (matmul_ws.c; forced
	 * only, MM_WS_SPLIT_RULE): a product of 65 to 256 rows has a few dozen of
	 * its tiles (GPT-2 at batch 1: 12 to 48), each block of which loads a whole
	 * row of A and a column of B panels; split, more blocks share those loads
	 * (mm_split_combine), but on the H100 each of GPT-2's took 3-4 us longer:
	 * at K of 768 to 3072 a launch's fixed costs outweigh its K loop */
	{"wg128x64x64s6wssk2", true, false, false, 1, 128, 64, 64, 8, 1, 6, 2, true, 0, false, true, false, 0, false, false},
	{"wg128x64x64s6wssk3", true, false, false, 1, 128, 64, 64, 8, 1, 6, 3, true, 0, false, true, false, 0, false, false},
	{"wg128x64x64s6wssk4", true, false, false, 1, 128, 64, 64, 8, 1, 6, 4, true, 0, false, true, false, 0, false, false},
	{"wg128x64x64s6wssk8", true, false, false, 1, 128, 64, 64, 8, 1, 6, 8, true, 0, false, true, false, 0, false, false},
	/* f32 at f32's accuracy on wgmma (3xTF32, matmul_wgmma.c): both operands
	 * K-major as for tf32, each stage twice the bytes (the parts and the rests) */
	{"wgx3x128x128x32s3", true, true, false, 1, 128, 128, 32, 8, 1, 3, 0, true, 0, false, false, false, 0, false, true},
	{"wgx3x128x64x32s4", true, true, false, 1, 128, 64, 32, 8, 1, 4, 0, true, 0, false, false, false, 0, false, true},
	{"wgx3x128x96x32s4", true, true, false, 1, 128, 96, 32, 8, 1, 4, 0, true, 0, false, false, false, 0, false, true},
	/* the 64-wide one with K split 2 or 3 ways (forced only): a product of 128
	 * rows (a transformer at batch 1: 12 to 48 tiles) over more SMs */
	{"wgx3x128x64x32s4sk2", true, true, false, 1, 128, 64, 32, 8, 1, 4, 2, true, 0, false, false, false, 0, false, true},
	{"wgx3x128x64x32s4sk3", true, true, false, 1, 128, 64, 32, 8, 1, 4, 3, true, 0, false, false, false, 0, false, true},
	/* and 4 or 8 ways (forced only): 12 tiles of 128 rows by 768 columns */
	{"wgx3x128x64x32s4sk4", true, true, false, 1, 128, 64, 32, 8, 1, 4, 4, true, 0, false, false, false, 0, false, true},
	{"wgx3x128x64x32s4sk8", true, true, false, 1, 128, 64, 32, 8, 1, 4, 8, true, 0, false, false, false, 0, false, true},
};
enum { MM_NCONFIGS = (int)(sizeof mm_configs / sizeof mm_configs[0]) };

const char *cg_matmul_variant_name(int v)
{
	return v > 0 && v < MM_NCONFIGS ? mm_configs[v].name : "plain";
}

bool cg_matmul_splits(int v)
{
	return v > 0 && v < MM_NCONFIGS && mm_configs[v].split > 1;
}

bool cg_matmul_waits_late(int v)
{
	return v > 0 && v < MM_NCONFIGS && mm_configs[v].ws && !mm_configs[v].att &&
	       !mm_configs[v].dw && !mm_configs[v].gemv;
}

int cg_matmul_nvariants(void)
{
	return MM_NCONFIGS;
}

const MmConfig *mm_config(int v)
{
	return v > 0 && v < MM_NCONFIGS ? &mm_configs[v] : NULL;
}

/* Whether spec is a matmul the tiled kernel takes: the matmul (after its leading
 * views, cg_matmul_index) of f16, bf16 or f32 operands, every later op elementwise,
 * every written tensor of the matmul's output shape; after an attention op the
 * permute or swap_dims of its output that merges the heads back, the last axis
 * kept (passes/fuser_matmul.c; the epilogue stores through it, written_at). */
bool mm_eligible(const CgKernelSpec *s)
{
	int mi = cg_matmul_index(s);
	if (mi < 0)
		return false;
	const RelOp *mm = &s->ops[mi];
	DType t = (DType)mm->t[0].dtype;
	if (mm->kind == OP_CONV2D) {
		if (!mm_conv_eligible(mm))
			return false;
	} else if (mm->kind == OP_ATTENTION) {
		/* f16 and bf16 (f32 in tf32: the rule), a bias read from memory (no op
		 * of the kernel makes it) */
		if (t != DT_F16 && t != DT_BF16 && t != DT_F32)
			return false;
		for (int k = 1; k < mm->nin; k++)
			if (mm->t[k].dtype != t && !(k == 3 && mm->t[k].dtype == DT_BOOL))
				return false;
		for (int i = 0; i < mi && mm->nin == 4; i++)
			if (s->ops[i].t[1].id == mm->t[3].id)
				return false;
	} else if (t != DT_F16 && t != DT_BF16 && t != DT_F32) {
		return false;
	} else if (mm->t[1].dtype != t || mm->t[0].rank < 2 || mm->t[1].rank != mm->t[0].rank) {
		return false;
	}
	const RelTensor *out = &mm->t[mm->nin];
	for (int i = mi + 1; i < s->nops; i++) {
		const RelOp *op = &s->ops[i];
		OpFamily f = ir_ops[op->kind].family;
		if (mm->kind == OP_ATTENTION && i == mi + 1 && s->nops == mi + 2 &&
		    ir_rel_head_merge(op, out->id) && op->t[1].rank == out->rank)
			continue;
		if (op->kind == OP_MATMUL) {
			/* a sibling (mm_members): the same first operand, an output of
			 * this shape */
			if (mm->kind != OP_MATMUL || op->t[0].id != mm->t[0].id ||
			    op->t[1].dtype != t || !ir_rel_shape_equal(&op->t[op->nin], out))
				return false;
			continue;
		}
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
 * short).
 * An f32 matmul (not a conv: not measured again) weighs the waves of 128x128 tiles
 * (28 shapes of 1k-4k tokens by transformer widths, docs/benchmarks.md, "f32 SIMT
 * tiles"): over a wave, where the last wave is under MM_FILL_SPLIT_PCT full, K
 * from MM_SPLIT_K128 splits 4 ways (ViT-B/16's MLP down, 150 tiles: 0.666 -> 0.451
 * ms), and where it is under MM_FILL_PCT full, shorter K takes 64x64 tiles (BERT's
 * QKV at 2048 tokens, 288 tiles: 0.262 -> 0.238); under a wave, where K is too
 * short to split, 128x128 tiles from MM_NEAR (2048x768x768, 96 tiles: 0.107 ->
 * 0.090 ms). */
static int under_wave(DType t, bool conv, int64_t big, int64_t small, int64_t k)
{
	if (t == DT_F32) {
		if (!conv && big >= MM_FULL) {
			int64_t full = (big + MM_WAVE - 1) / MM_WAVE * MM_WAVE;
			bool longk = k >= MM_SPLIT_K128;
			if (big * 100 < full * (longk ? MM_FILL_SPLIT_PCT : MM_FILL_PCT))
				return longk ? MM_F128SK4 : 4;
		}
		if (big >= MM_FULL)
			return 3;
		if (big * 4 >= MM_FULL && k >= 4 * 16 * MM_SPLIT_STEPS128)
			return MM_F128SK4;
		if (!conv && big >= MM_NEAR)
			return 3;
		if (small <= MM_SPLIT_FEW_F32 && k >= 4 * 16 * MM_SPLIT_STEPS)
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

/* Tiny M: gemv over tiles of 8 rows, 64 columns (two a thread) up to 8 rows and
 * 128 (four a thread) above, K split so that the blocks come to at most one wave
 * of two per SM, each split keeping MM_GEMV_SPLIT_K of K at least. On the H200
 * (docs/benchmarks.md, "Tiny M"): the 128-wide tiles were 1.2-2x slower at M = 1
 * and 4 (half the steps of k in flight) and faster at M = 16 on 6 of 7 shapes (up
 * to 1.8x: 16x4096x4096, whose 64-wide tiles read B twice, once per row of
 * tiles). */
/* 3xTF32 (--allow-3xtf32): of the tiles 128 rows by 128, 96 or 64 columns, the one
 * whose waves of tiles hold the fewest columns a block (its waves times its width;
 * the wider at a tie). On the H100 that picked the fastest of the three on all 8
 * K-major f32 shapes of issue 22's sweep (docs/benchmarks.md, session 61). Where
 * that tile has under half a wave of tiles (the f32 transformers at batch 1: 128
 * to 256 rows, 12 to 48 tiles a matmul, on which the whole tiles ran 1.1-2.1x as
 * long as the SIMT rule's), the 64-wide tile with K split 3 ways, else 2, where
 * the blocks stay within a wave and fill half of one, each split keeping
 * MM_SPLIT_STEPS steps of K: on the H100 (session 64) 128x2304x768 0.0272 ->
 * 0.0220 ms (sk3), 128x3072x768 + GELU 0.0387 -> 0.0275 (sk2), 197x768x768
 * 0.0247 -> 0.0220 (sk3), 197x768x3072 0.0609 -> 0.0482 (sk3); at 12 tiles
 * (128x768, 36 blocks split 3 ways) the SIMT rule's were faster. Not for a conv
 * (none was measured split: ResNet-50 at batch 1 would take it for 4 of its 19
 * conv shapes). 0 otherwise. */
static int x3_rule(int64_t batch, int64_t m, int64_t n, int64_t k, bool conv)
{
	int64_t tiles = 0;
	static const int v[3] = {MM_X3_128, MM_X3_96, MM_X3_64};
	int best = v[0];
	int64_t cost = -1;
	for (int i = 0; i < 3; i++) {
		int w = mm_configs[v[i]].bn;
		int64_t t = batch * ((m + 127) / 128) * ((n + w - 1) / w);
		int64_t c = (t + MM_WAVE - 1) / MM_WAVE * w;
		if (cost < 0 || c < cost) {
			cost = c;
			best = v[i];
			tiles = t;
		}
	}
	if (2 * tiles >= MM_WAVE)
		return best;
	if (conv)
		return 0;
	int64_t t64 = batch * ((m + 127) / 128) * ((n + 63) / 64);
	for (int s = 3; s >= 2; s--) {
		int64_t steps = (k + mm_configs[MM_X3_64].bk - 1) / mm_configs[MM_X3_64].bk;
		if (s * t64 <= MM_WAVE && 2 * s * t64 >= MM_WAVE && steps >= s * MM_SPLIT_STEPS)
			return s == 3 ? MM_X3_64SK3 : MM_X3_64SK2;
	}
	return 0;
}

static int gemv_rule(int64_t batch, int64_t m, int64_t n, int64_t k)
{
	bool wide = m > 8;
	int64_t bn = wide ? 128 : 64;
	int64_t tiles = batch * ((m + 7) / 8) * ((n + bn - 1) / bn);
	int v = wide ? MM_GEMVW : MM_GEMV;
	if (tiles * 16 <= 2 * MM_WAVE && k >= 16 * MM_GEMV_SPLIT_K)
		return wide ? v + 2 : MM_GEMVSK16;
	if (tiles * 4 <= 2 * MM_WAVE && k >= 4 * MM_GEMV_SPLIT_K)
		return wide ? v + 1 : MM_GEMVSK4;
	return v;
}

/* The share of a tile dimension of t that x fills over its ceil(x / t) tiles. */
static double tile_fill(int64_t x, int64_t t)
{
	return x < 1 ? 1 : (double)x / (double)(((x + t - 1) / t) * t);
}

/* Whether the warp-specialized loop (matmul_ws.c) takes the kernel: a matmul, alone
 * or with alike siblings (one tile loop runs them: matmul_kernel.c; other siblings
 * run a tile loop each, whose steps the loop's mbarriers cannot follow), or a conv
 * channels last of one group, read in place or gathered in whole chunks
 * (mm_conv_tmap). Its operands arrive by TMA (a gathered conv's input by its
 * copiers' cp.async), so each needs a tensor map at these dims. */
static bool ws_applies(const CgKernelSpec *s, const MmConfig *c, const int64_t *dims, int ndims)
{
	if (!mm_tmaps_ok(s, c, dims, ndims))
		return false;
	int mem[IR_MM_GROUP_MAX];
	const RelOp *mm = &s->ops[cg_matmul_index(s)];
	int ng = mm_members(s, mem);
	if (mm->kind == OP_CONV2D)
		return !c->cluster && !c->pp;
	if (mm->kind != OP_MATMUL)
		return false;
	/* a cluster's size is the launch rule's last input (matmul_rule) */
	if (c->cluster && 10 + mm->t[mm->nin].rank - 2 >= CG_LAUNCH_ARGS)
		return false;
	/* a tile narrower than a panel of 64 columns reads B K-major only */
	for (int g = 0; g < ng && c->bn % 64; g++) {
		const RelTensor *b = &s->ops[mem[g]].t[1];
		int perm[IR_MAX_RANK];
		mm_operand_view(s, mem[g], b, perm);
		if (perm[b->rank - 2] != b->rank - 1)
			return false;
	}
	if (ng < 2)
		return true;
	int nt = 1;
	for (int i = 0; i < s->nops; i++)
		for (int k = 0; k < s->ops[i].nin + s->ops[i].nout; k++)
			if (s->ops[i].t[k].id >= nt)
				nt = s->ops[i].t[k].id + 1;
	int *map = xmalloc(sizeof *map * (size_t)(ng * nt));
	bool ok = mm_alike(s, mem, ng, nt, map);
	free(map);
	return ok;
}

/* Whether ws configuration c takes the kernel at every size of the plan: at dims,
 * and, in a plan for every size, with each shape id at the divisor every size of it
 * has (divs): a map's strides are products of sizes, so they are multiples of 16
 * bytes at every size when they are at the divisors. */
static bool ws_every_size(const CgKernelSpec *s, const MmConfig *c, const int64_t *divs,
			  const int64_t *dims, int ndims)
{
	if (divs && s->ops[cg_matmul_index(s)].kind == OP_CONV2D)
		return false;   /* its maps' dims are no shape ids (mm_conv_tmap) */
	return ws_applies(s, c, dims, ndims) && (!divs || mm_tmaps_ok(s, c, divs, ndims));
}

/* Configuration v's warp-specialized twin (the same tiles, stages and K step) where
 * it takes the kernel at every size (ws_every_size), else v. */
static int ws_or(const CgKernelSpec *s, int v, const int64_t *divs, const int64_t *dims,
		 int ndims)
{
	const MmConfig *c = &mm_configs[v];
	for (int w = 1; w < MM_NCONFIGS; w++) {
		const MmConfig *t = &mm_configs[w];
		if (t->ws && !t->pp && !t->cluster && t->split == c->split && t->wg == c->wg &&
		    t->tf32 == c->tf32 && t->bm == c->bm &&
		    t->bn == c->bn && t->bk == c->bk && t->stages == c->stages)
			return ws_every_size(s, t, divs, dims, ndims) ? w : v;
	}
	return v;
}

/* A ws tile of width bn, weighed per column (weight, in hundredths). */
typedef struct {
	int v, bn, weight;
} WsWidth;

/* Of the ws tiles of widths w (each of BM 128), the one whose waves are shortest:
 * the rounds of MM_WAVE tiles a block takes times the tile's width, weighed per
 * column; the first of equals; 0 where none takes the kernel at every size.
 * *tiles: the chosen one's tiles. */
static int ws_shortest(const CgKernelSpec *s, const WsWidth *w, int nw, int64_t batch,
		       int64_t m, int64_t n, const int64_t *divs, const int64_t *dims, int ndims,
		       int64_t *tiles)
{
	int v = 0;
	int64_t best = 0;
	for (int i = 0; i < nw; i++) {
		int64_t t = batch * ((m + 127) / 128) * ((n + w[i].bn - 1) / w[i].bn);
		int64_t cost = (t + MM_WAVE - 1) / MM_WAVE * w[i].bn * w[i].weight;
		if ((!v || cost < best) && ws_every_size(s, &mm_configs[w[i].v], divs, dims, ndims)) {
			v = w[i].v;
			best = cost;
			*tiles = t;
		}
	}
	return v;
}

/* The 64-wide ws tile for `tiles` of its tiles over K: split the most ways of 2,
 * 3, 4 and 8 that keep the units within a wave (MM_WAVE) and MM_SPLIT_STEPS K
 * steps a unit, else whole (GPT-2 at batch 1: q, k and v 36 tiles, 3 ways; the
 * output projection 12 tiles of K 768, 3 ways; the MLP's 48 tiles 2 ways, and its
 * second 12 of K 3072, 8 ways). */
static int ws_split(int64_t tiles, int64_t k)
{
	static const int ways[] = {8, 4, 3, 2};
	int64_t steps = (k + 63) / 64;
	for (int i = 0; i < 4; i++)
		if (tiles * ways[i] <= MM_WAVE && steps >= (int64_t)ways[i] * MM_SPLIT_STEPS) {
			int v = MM_WG64WSSK + 3 - i;
			return v;
		}
	return MM_WG64WS;
}

/* An attention configuration with K and V by TMA (MmConfig.tma) applies where its
 * tensor maps describe K and V at the sizes (and at every size of the plan). */
static bool att_maps(const CgKernelSpec *s, const MmConfig *c, const int64_t *divs,
		     const int64_t *dims, int ndims)
{
	return mm_tmaps_ok(s, c, dims, ndims) && (!divs || mm_tmaps_ok(s, c, divs, ndims));
}

/* The pp configuration of a ppt one (its name less the t). */
static int att_untwin(int v)
{
	size_t n = strlen(mm_configs[v].name) - 1;
	for (int u = 1; u < MM_NCONFIGS; u++)
		if (strlen(mm_configs[u].name) == n && !strncmp(mm_configs[u].name, mm_configs[v].name, n))
			return u;
	return v;
}

/* A kernel of siblings (mm_members, every output of one shape) runs their tiles one
 * matmul after the other in one launch (matmul_kernel.c, mm_group_units), so its
 * rule is that of one matmul of as many times the columns; the plain evaluator
 * computes each written tensor where it is. */
int cg_matmul_variant(const CgKernelSpec *s, const char *arch, bool host, bool allow_tf32,
		      bool allow_3xtf32, const int64_t *divs, const int64_t *dims, int ndims)
{
	if ((s->kind != CG_KERNEL_MATMUL && s->kind != CG_KERNEL_SINGLE) || s->nhwc ||
	    !mm_eligible(s))
		return 0;
	const RelOp *mm = &s->ops[cg_matmul_index(s)];
	const RelTensor *out = &mm->t[mm->nin];
	DType t = (DType)mm->t[0].dtype;
	int r = out->rank;
	bool conv = mm->kind == OP_CONV2D;
	int64_t batch = 1, m, n, k;
	/* measuring the table (docs/benchmarks.md): FUSEC_MATMUL_TILES=NAME forces the
	 * configuration NAME wherever its kind (tc, fma or dw) applies; "plain" the
	 * one-thread-per-output evaluator. A 3xTF32 one only where the compile allows
	 * them (not under --no-3xtf32, nor --allow-tf32): forcing a tile changes
	 * speed, never what the options promise of the numbers */
	const char *force = getenv("FUSEC_MATMUL_TILES");
	if (force && !strcmp(force, "plain"))
		return 0;
	int nwr = 0;
	for (int i = 0; i < s->nwritten; i++)
		nwr += s->written[i];
	if (mm->kind == OP_ATTENTION) {
		/* the flash kernel: mma.sync and cp.async (sm_80), head dims up to 128,
		 * up to 256 on sm_90; past them the evaluator */
		int64_t d = mm_dim_of(mm->t[0].shape[r - 1], dims, ndims);
		int64_t e = mm_dim_of(out->shape[r - 1], dims, ndims);
		bool ok80 = host || (arch && !strncmp(arch, "sm_", 3) && atoi(arch + 3) >= 80);
		bool ok90 = host || (arch && !strncmp(arch, "sm_", 3) && atoi(arch + 3) >= 90);
		if (!ok80 || d > 256 || e > 256)
			return 0;
		if (d > 128 || e > 128)   /* 16-bit only: f32's stages would not fit */
			return t != DT_F32 && ok90 ? MM_ATT256 : 0;
		if (t == DT_F32) {
			/* tf32 when allowed; the wide stages need sm_90's shared memory */
			if (!allow_tf32 || ((d > 64 || e > 64) && !ok90))
				return 0;
			if (force && !strcmp(force, mm_configs[MM_ATT128T].name) && ok90)
				return MM_ATT128T;
			return d <= 64 && e <= 64 ? MM_ATT64T : MM_ATT128T;
		}
		/* forced: a 16-bit configuration that holds the head dims (wgmma's on
		 * sm_90a alone) */
		bool wga = arch && !strcmp(arch, "sm_90a");
		for (int v = 1; force && v < MM_NCONFIGS; v++) {
			const MmConfig *c = &mm_configs[v];
			if (c->att && !c->tf32 && c->bk <= 128 && d <= c->bk && e <= c->bk &&
			    (!c->wg || wga) && !strcmp(force, c->name))
				return c->tma && !att_maps(s, c, divs, dims, ndims) ? att_untwin(v) : v;
		}
		/* sm_90a: wgmma; head dims up to 64 two blocks an SM, 64 keys a step,
		 * in step (on the H100 BERT's attention 30.5 us on mma.sync, 29.0 so;
		 * with session 54's softmax 20.1, and 19.4 out of step alone, but
		 * BERT, GPT-2, Llama and ViT each ran 1.5-5 % slower with that);
		 * past them one block, 128 keys, out of step (32x2048^2x128 f16 553 us
		 * on mma.sync, 363 in step, 264 and 234 out of step with session 54's
		 * softmax), K and V by TMA where the maps describe them (ppt) */
		if (wga && MM_ATT_TMA_RULE && (d > 64 || e > 64) &&
		    att_maps(s, &mm_configs[MM_ATTWGK128PPT], divs, dims, ndims))
			return MM_ATTWGK128PPT;
		if (wga)
			return d <= 64 && e <= 64 ? MM_ATTWG64 : MM_ATTWGK128PP;
		return d <= 64 && e <= 64 ? MM_ATT64 : MM_ATT128;
	}
	if (conv && nwr <= MM_EPI_MAXW && mm_dw_eligible(mm, dims, ndims)) {
		/* a depthwise conv channels last: its own kernel, one output column
		 * a thread for a 3x3 window, two from 5x5 on (MobileNetV3 at batch
		 * 32, bf16, per layer: the 3x3 layers 14-47 us with one, 17-54 with
		 * two; the 5x5 layers 26-77 us with one, 26-47 with two, where two
		 * halve the blocks that copy the weights; four were slower on both:
		 * docs/benchmarks.md, "Depthwise convolutions") */
		for (int v = MM_DW4; force && v <= MM_DW1; v++)
			if (!strcmp(force, mm_configs[v].name))
				return v;
		return mm->attr.kernel[0] * mm->attr.kernel[1] >= 25 ? MM_DW2 : MM_DW1;
	}
	if (conv) {
		mm_conv_sizes(mm, dims, ndims, &batch, &m, &n, &k);
		/* depthwise and few channels per group: the GEMM has too few rows for
		 * a tile; the evaluator (kernel_join_window.c) keeps them. Channels
		 * last the rows are every pixel and a group's channels the columns:
		 * a tile wastes columns past 8 channels (MobileNetV3's 16-channel stem
		 * and 1x1: 172 and 86 us plain at batch 32, bf16) but runs on the
		 * tensor cores */
		if (mm->attr.layout == LAYOUT_NCHW ? m <= MM_GEMV_M : n < MM_NHWC_MIN_N)
			return 0;
	} else {
		for (int d = 0; d < r - 2; d++)
			batch *= mm_dim_of(out->shape[d], dims, ndims);
		m = mm_dim_of(out->shape[r - 2], dims, ndims);
		int mem[IR_MM_GROUP_MAX];
		n = mm_dim_of(out->shape[r - 1], dims, ndims) * mm_members(s, mem);
		k = mm_dim_of(mm->t[0].shape[r - 1], dims, ndims);
	}
	int64_t big = batch * ((m + 127) / 128) * ((n + 127) / 128);
	/* mma.sync (m16n8k16, m16n8k8 tf32) and cp.async need sm_80: every tile
	 * configuration but gemv stages its operands with cp.async; wgmma sm_90a (the
	 * host runs the arch's tiling: the cpu backend checks what the GPU plan runs) */
	bool sm80 = host || (arch && !strncmp(arch, "sm_", 3) && atoi(arch + 3) >= 80);
	bool wg = arch && !strcmp(arch, "sm_90a");
	bool tf32 = allow_tf32 && sm80;
	for (int v = 1; force && v < MM_NCONFIGS; v++)
		if (!strcmp(force, mm_configs[v].name) && !mm_configs[v].dw && !mm_configs[v].att &&
		    mm_fits(&mm_configs[v], t, tf32) &&
		    (mm_configs[v].gemv || sm80) && (!mm_configs[v].wg || wg) &&
		    (!mm_configs[v].x3 || (allow_3xtf32 && !tf32)) &&
		    (!mm_configs[v].wg || !mm_configs[v].tf32 ||
		     (mm_configs[v].x3 ? mm_kmajor_at(s, cg_matmul_index(s)) : mm_kmajor(mm))) &&
		    (!mm_configs[v].gemv || (m <= MM_GEMV_M && !conv)) &&
		    (!mm_configs[v].ws || ws_every_size(s, &mm_configs[v], divs, dims, ndims)))
			return v;
	/* a tiny f32 problem runs plain: one thread per output, at most MM_TINY_K FMAs
	 * each, is as fast as a tile (the launch is most of the time) and up to 3.5x
	 * faster than gemv at short K; its code is a tenth of a tile kernel's to
	 * compile (docs/benchmarks.md, "Tiny matmuls") */
	if (t == DT_F32 && !tf32 && k <= MM_TINY_K && batch * m * n <= MM_TINY_OUT)
		return 0;
	/* f16/bf16 from 9 rows take the tensor cores (sm_80 on): at 16 rows the tile
	 * rule below was 2.1x faster than gemv over 7 transformer and Llama shapes on
	 * the H200, at 4 rows about even and gemv faster on 6 of 7 (docs/benchmarks.md,
	 * "Tiny M") */
	if (m <= MM_GEMV_M && !conv && (t == DT_F32 || m <= MM_GEMV_M_TC || !sm80))
		return gemv_rule(batch, m, n, k);
	/* f32 on wgmma as three tf32 products a step (the default, not under tf32),
	 * where both operands are read K-major: a constant weight is (passes/kmajor.c),
	 * and a conv channels last reads its window along K and its weight [OC][K]
	 * (passes/layout.c takes f32 convs channels last for it) */
	int x3 = t == DT_F32 && !tf32 && allow_3xtf32 && wg &&
		 (conv ? mm_kmajor(mm) : mm_kmajor_at(s, cg_matmul_index(s)))
		 ? x3_rule(batch, m, n, k, conv) : 0;
	if (x3)
		return x3;
	/* a conv (docs/benchmarks.md, "Convolutions as implicit GEMMs"): its planes
	 * (N = OH*OW per image: 7x7 = 49 columns) and channels (M: 64) are often far
	 * from multiples of the big tiles, so a 128-wide tile is taken only where it
	 * wastes at most a quarter of its rows and columns, a 256-wide one a tenth;
	 * else the 64x64 tiles */
	double u128 = tile_fill(m, 128) * tile_fill(n, 128);
	double u256 = tile_fill(m, 128) * tile_fill(n, 256);
	/* tf32 on sm_90a: wgmma for a conv channels last (both operands K-major),
	 * by the bf16 rule's thresholds; mma.sync below them and for the rest */
	if (t == DT_F32 && tf32 && wg && mm_kmajor(mm)) {
		int64_t big256 = batch * ((m + 127) / 128) * ((n + 255) / 256);
		/* a conv of at most 64 output channels over a wave of 128x64 tiles:
		 * the 64-wide tile, as bf16's (ResNet-50's first stage) */
		int64_t t64 = batch * ((m + 127) / 128) * ((n + 63) / 64);
		if (conv && mm->attr.layout == LAYOUT_NHWC && n <= 64 && t64 >= MM_WAVE)
			return MM_WGT64;
		if (u256 >= 0.9 && big256 >= MM_WAVE)
			return MM_WGT256;
		if (big > 0 && u128 >= 0.75 && 2 * big >= MM_WAVE)
			return MM_WGT128;
	}
	if (t == DT_F32 && tf32)
		return big >= MM_WAVE && (!conv || u128 >= 0.75) ? 5 : 6;
	if (!sm80)
		return 0;
	int64_t small = batch * ((m + 63) / 64) * ((n + 63) / 64);
	if (conv && u128 < 0.75)
		big = 0;
	if (t == DT_F32)
		return under_wave(t, conv, big, small, k);
	int64_t big256 = batch * ((m + 127) / 128) * ((n + 255) / 256);
	/* sm_90a (docs/benchmarks.md, "wgmma on sm_90a"): 128x256 tiles from three waves of
	 * them (8192^3, 4096^3), 128x128 from half a wave of those (BERT at batch 8:
	 * 96 to 384 tiles, 1.3 to 2x faster than 128x256 there and than mma.sync's
	 * split-K under a wave), the mma.sync rule below that */
	if (conv) {
		/* channels last, a group of at most 32 output channels (MobileNetV3's
		 * thin 1x1 convs: 16 to 24 columns of a 64-wide tile) takes the narrow
		 * tile over a wave of its blocks (MobileNetV3-L at batch 32, bf16:
		 * those convs 1.5-1.7x faster, the model 6 %; docs/benchmarks.md,
		 * "The narrow tile by default, tf32 on wgmma ...") */
		if (mm->attr.layout == LAYOUT_NHWC && n <= 32 &&
		    batch * ((m + 127) / 128) >= MM_WAVE)
			return MM_TC32;
		/* channels last, on the wgmma tiles 64 columns wide (the plain loop,
		 * two blocks an SM) over a wave of them: a conv of at most 64 output
		 * channels that gathers its windows, and a 1x1 read in place of K
		 * at most 128 (ResNet-50 bf16 at batch 32 on the H100, session 56,
		 * per layer: the stem 229 -> 181 us, the 64-channel 3x3s 190 -> 120,
		 * the 64 -> 256 expansions 306 -> 261 (the ws 128 tile 282), the
		 * 128 -> 512 ones 190 -> 165); the rest read in place on the ws
		 * tiles by TMA, the width by the matmul's weights (ws_shortest),
		 * where that fills half a wave (the 1x1s of K 256 to 2048: 2048 ->
		 * 512 at 7x7 70 -> 31 us, 1024 -> 256 at 14x14 76 -> 69, 256 ->
		 * 1024 187 -> 152; docs/benchmarks.md, session 56) */
		int64_t t64 = batch * ((m + 127) / 128) * ((n + 63) / 64);
		bool in_place = mm->attr.layout == LAYOUT_NHWC && batch == 1 && mm_conv_in_place(mm);
		if (wg && mm->attr.layout == LAYOUT_NHWC && t64 >= MM_WAVE &&
		    (in_place ? k <= 128 : n <= 64))
			return MM_WG64;
		if (MM_CONV_WS_RULE && wg && in_place) {
			static const WsWidth alt[] = {
				{MM_WG128WS, 128, 100}, {MM_WG64WS, 64, 120}, {MM_WG96WS, 96, 110},
				{MM_WG192WS, 192, 95}, {MM_WG256WS, 256, 100},
			};
			int64_t tiles = 0;
			int v = ws_shortest(s, alt, 5, batch, m, n, divs, dims, ndims, &tiles);
			if (v && 2 * tiles >= MM_WAVE)
				return v;
		}
		/* gathered (3x3, strided): the plain wgmma loop; under half a wave
		 * of 128-wide tiles 64 columns wide where those fill half a wave
		 * (ResNet-50's 512-channel 3x3s at 7x7, batch 32: 148 -> 87 us, the
		 * strided one 75 -> 44, against mma.sync's split-K) */
		if (wg && u256 >= 0.9 && big256 >= MM_WAVE)
			return MM_WG256;
		if (wg && big > 0 && 2 * big >= MM_WAVE)
			return MM_WG128;
		if (wg && mm->attr.layout == LAYOUT_NHWC && 2 * t64 >= MM_WAVE)
			return MM_WG64;
		return under_wave(t, conv, big, small, k);
	}
	/* the warp-specialized twins where TMA can copy every operand (a row stride of
	 * a multiple of 16 bytes) and the sizes are the launch's own (a plan for every
	 * size has no tensor maps) */
	if (wg && big256 >= 3 * MM_WAVE)
		return ws_or(s, MM_WG256, divs, dims, ndims);
	if (wg && 2 * big >= MM_WAVE) {
		/* the ws tile whose waves are shortest: the tiles a block takes
		 * (rounds of 132) times the tile's width, weighed per column: 96
		 * columns 1.1, 128 1.0, 192 0.95 (sessions 52 and 53, bf16:
		 * 2048x2048x768 took 22.3 us on 352 tiles of 96, 18.5 on 256 of
		 * 128; 3152x768x3072 + bias + residual 37.4 us on 100 tiles of 192,
		 * 46.7 on 200 of 96, 48.4 on 150 of 128; 3152x3072x768 + GELU 54.7
		 * on 400 of 192, 49.9 on 600 of 128). So 2048 rows by 768 columns
		 * take 96 (128 tiles in one wave where 96 of 128 leave 36 SMs
		 * idle), 3152 by 768 and 2048 by 1536 take 192 (one wave) */
		int v = ws_or(s, MM_WG128, divs, dims, ndims);
		if (!mm_configs[v].ws)
			return v;
		static const WsWidth alt[] = {
			{MM_WG128WS, 128, 100}, {MM_WG96WS, 96, 110}, {MM_WG192WS, 192, 95},
		};
		int64_t tiles;
		return ws_shortest(s, alt, 3, batch, m, n, divs, dims, ndims, &tiles);
	}
	/* 9 to 16 rows on the tensor cores: K split 4 ways wherever the blocks stay
	 * within a wave of two per SM (16x4096x4096 bf16: 25 us against 31 split 2
	 * ways; docs/benchmarks.md, "Tiny M") */
	if (m <= MM_GEMV_M && small * 4 <= 2 * MM_WAVE && k >= 4 * 32 * MM_SPLIT_STEPS)
		return MM_TCSK4;
	/* 65 to 256 rows (one or two 128-row tiles), under half a wave of 128x128
	 * tiles, K and N from 512: the 64-wide ws tile where TMA takes the operands
	 * (GPT-2 at batch 1, 128 rows, bf16, H100: q, k and v 14.6 -> 10.2 us, the
	 * output projection 11.6 -> 9.8, the MLP's 15.4 -> 10.9 and 18.0 -> 17.1,
	 * against mma.sync's 64x64 tiles split 4 ways where K is long; the model 799
	 * -> 659 us; docs/benchmarks.md, session 57). Other sizes were not measured
	 * and keep mma.sync. */
	if (wg && m > 64 && m <= 256 && k >= 512 && n >= 512 &&
	    ws_every_size(s, &mm_configs[MM_WG64WS], divs, dims, ndims))
		return MM_WS_SPLIT_RULE ? ws_split(batch * ((m + 127) / 128) * ((n + 63) / 64), k)
					: MM_WG64WS;
	if (big256 >= MM_WAVE && k >= MM_LONG_K)
		return MM_TC256;
	return big >= MM_WAVE ? 1 : under_wave(t, conv, big, small, k);
}

/* The launch: one block of MM_THREADS per output tile, by launch_rule.c's
 * matmul_rule (shared with the runtime), whose arg[] is written here. */
void cg_matmul_launch(int variant, const CgKernelSpec *s, CgLaunch *l)
{
	const RelOp *mm = &s->ops[cg_matmul_index(s)];
	const MmConfig *c = &mm_configs[variant];
	if (c->dw) {   /* the frame's grid-stride launch, R*V outputs a thread */
		l->vec = mm_dw_outputs(c, mm);
		return;
	}
	const RelTensor *out = &mm->t[mm->nin];
	int r = out->rank;
	memset(l, 0, sizeof *l);
	l->coop = true;
	l->rule = CG_RULE_MATMUL;
	l->block = MM_THREADS;
	l->max_grid = (int64_t)1 << 30;
	l->vec = 1;
	if (mm->kind == OP_CONV2D) {
		mm_conv_launch(c, mm, l);
		return;
	}
	if (c->att) {
		/* a block per BM rows of q of a batch: the tiles of a matmul of one
		 * column (shape id 0 has size 1) */
		l->arg[0] = c->bm;
		l->arg[1] = 1;
		l->arg[2] = out->shape[r - 2];
		l->arg[3] = 0;
		l->arg[4] = r - 2;
		for (int d = 0; d < r - 2; d++)
			l->arg[5 + d] = out->shape[d];
		int smem = mm_smem(c, ir_dtype_size((DType)mm->t[0].dtype));
		l->arg[5 + r - 2] = smem > MM_SMEM_STATIC ? smem : 0;
		return;
	}
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
		l->arg[7 + r - 2] = mm_partial_bytes(c);
	}
	/* siblings: each matmul's tiles, one after the other */
	int mem[IR_MM_GROUP_MAX], ng = mm_members(s, mem);
	if (ng > 1)
		l->arg[8 + r - 2] = ng;
	/* warp-specialized: a block per SM, each looping over the tiles */
	if (c->ws) {
		l->block = MM_WS_THREADS;
		l->arg[9 + r - 2] = CG_MM_PERSIST;
		if (c->cluster)
			l->arg[10 + r - 2] = c->cluster;
	}
}

int cg_matmul_tmaps(const CgKernelSpec *s, bool gpu)
{
	const MmConfig *c = mm_config(s->variant);
	int mem[IR_MM_GROUP_MAX];
	if (!gpu || !c || (!c->ws && !c->tma))
		return 0;
	return 1 + mm_members(s, mem);   /* an attention: K's and V's */
}

bool cg_matmul_tmap(const CgKernelSpec *s, int id, const int64_t *dims, int ndims,
		    int *tensor, CgTmap *tm)
{
	return mm_tmap(s, mm_config(s->variant), id, dims, ndims, tensor, tm);
}

int cg_matmul_cluster(int variant)
{
	const MmConfig *c = mm_config(variant);
	return c && c->cluster > 1 ? c->cluster : 1;
}

int cg_matmul_threads(int variant)
{
	const MmConfig *c = mm_config(variant);
	return c && c->ws ? MM_WS_THREADS : MM_THREADS;
}

/* The body of a kernel that configuration `variant` takes (cg_impl.h): the builder
 * its entry names, depthwise (matmul_depthwise.c), attention (matmul_attention.c)
 * or tiles (matmul_kernel.c). */
int cg_matmul_tiled(CgKb *kb, int variant, const int *wr, int nw)
{
	const MmConfig *cfg = mm_config(variant);
	if (!cfg || !mm_eligible(kb->spec))
		return cg_fail(kb, "internal: matmul tile configuration %d does not apply", variant);
	if (cfg->dw)
		return mm_dw_kernel(kb, cfg, wr, nw);
	if (cfg->att)
		return mm_attention_kernel(kb, cfg, wr, nw);
	return mm_tile_kernel(kb, cfg, wr, nw);
}
