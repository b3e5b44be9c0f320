/* launch_rule.h: how a kernel is launched for the sizes of a segment, as plain C
 * that the compiler and the runtime share.
 *
 * A kernel's launch is a pure function of its CgLaunch (set when the kernel is
 * built) and the segment's dims (dims[shape id], as ir_rel_dims gives them). The
 * compiler evaluates it at the sizes it compiles; a plan for every size
 * (fusec-plan/2, docs/plan-format.md) records the CgLaunch and each launch's dims
 * as expressions, and the runtime evaluates the same function once it knows the
 * sizes (runtime/plan_read.c, rt_plan_bind). So nothing here may depend on LLVM,
 * the graph or the module.
 *
 * The constants the rules use (the reduce kernels' schedule) live here too, as the
 * kernel builders (kernel_reduce.c) build for them.
 *
 * Prefix: cg_. */
#ifndef FUSEC_LAUNCH_RULE_H
#define FUSEC_LAUNCH_RULE_H

#include <stdbool.h>
#include <stdint.h>

#include "../ir/ir.h"

/* The constants of the reduce kernels' schedule, measured on the H200 (variants of
 * G3, G4, G7, G8 side by side: docs/benchmarks.md, "Reductions"). */
#ifndef FUSEC_RED_ELEMS          /* a build knob for measuring the rule */
#define FUSEC_RED_ELEMS 32
#endif
#ifndef FUSEC_RED_CACHE          /* a build knob for measuring the rule */
#define FUSEC_RED_CACHE 32
#endif
#ifndef FUSEC_RED_CACHE_BLOCK    /* a build knob for measuring the rule */
#define FUSEC_RED_CACHE_BLOCK 256
#endif
#ifndef FUSEC_RED_TRIPS          /* a build knob for measuring the rule */
#define FUSEC_RED_TRIPS 2
#endif
#ifndef FUSEC_RED_MAXNREG        /* a build knob for measuring the rule */
#define FUSEC_RED_MAXNREG 48
#endif
#ifndef FUSEC_RED_LONG_ROW       /* a build knob for measuring the rule */
#define FUSEC_RED_LONG_ROW 4096
#endif
#ifndef FUSEC_RED_LONG_TRIPS     /* a build knob for measuring the rule */
#define FUSEC_RED_LONG_TRIPS 4
#endif
#ifndef FUSEC_RED_LONG_MAXNREG   /* a build knob for measuring the rule */
#define FUSEC_RED_LONG_MAXNREG 64
#endif
enum {
	CG_LAUNCH_ARGS = 16,     /* CgLaunch.arg: a rule's inputs */
	CG_RED_MAX = 16,         /* reductions in one cooperative kernel */
	CG_RED_ELEMS = FUSEC_RED_ELEMS, /* rows mode: elements per thread of a block-per-row row */
	CG_RED_UNROLL = 4,       /* scalar path: positions of a row a thread loads a trip */
	CG_RED_THREADS = 512,    /* the most threads of a reduce block */
	CG_RED_MAXNREG = FUSEC_RED_MAXNREG, /* registers per thread (.maxnreg): occupancy over spills */
	CG_RED_CACHE = FUSEC_RED_CACHE, /* cached rows: elements per thread */
	CG_RED_CACHE_BLOCK = FUSEC_RED_CACHE_BLOCK, /* cached rows: threads of a block */
	CG_RED_TRIPS = FUSEC_RED_TRIPS, /* cached rows: V-groups a trip loads together,
					   without long math (reduce_plan.c, heavy_math) */
	/* long f32 rows (CgKernelSpec.red_long, cg_reduce_long_rows): four trips and 64
	 * registers ran f32 softmax on the H200 with rows of 8192 170 -> 157 us and of
	 * 16384 247 -> 239 us, but rows of 1000 171 -> 192 us and bf16 rows 2-12 %
	 * slower (docs/benchmarks.md, "The trips rule again") */
	CG_RED_LONG_ROW = FUSEC_RED_LONG_ROW,       /* elements of the reduced axis, at least */
	CG_RED_LONG_TRIPS = FUSEC_RED_LONG_TRIPS,   /* V-groups a trip loads together */
	CG_RED_LONG_MAXNREG = FUSEC_RED_LONG_MAXNREG, /* registers per thread (.maxnreg) */
	/* long f32 rows keep their row cache in the launch's dynamic shared memory, so
	 * that rows past CG_RED_CACHE_BLOCK * CG_RED_CACHE elements (8192) still fit:
	 * up to CG_RED_DYN_THREADS threads a row, CG_RED_DYN_BYTES a block at most (the
	 * H100's and H200's 227 KiB less room for the static part) */
	CG_RED_DYN_THREADS = 1024,
	CG_RED_DYN_BYTES = 196608,
	CG_RED_DYN_GROUPS = 8,   /* 16-byte groups of the row a thread holds there */
	CG_RED_TARGET_BLOCKS = 528,  /* split rows below it: 4 blocks per SM of the H200 */
	/* few rows (under a wave of blocks: GPT-2's layer norms at batch 1, 128 rows
	 * of 768, took 8 us in 16 blocks of 8 rows, a warp a row loading three
	 * 16-byte groups a thread in turn): a block a row, threads enough for about
	 * CG_RED_FEW_ELEMS elements each */
	CG_RED_FEW_WAVE = 132,
	CG_RED_FEW_ELEMS = 8,
	/* a kernel built for them (CgKernelSpec.red_long CG_RED_FEW) has registers to
	 * spare: at 48 GPT-2's layer norm at batch 1 spilled (10,624 local requests a
	 * launch); at 96 it did not, 6.1 -> 5.7 us under ncu, the model 570 -> 555 us
	 * on the H100 (session 60, the PTX's .maxnreg edited) */
	CG_RED_FEW_MAXNREG = 96,
	CG_MM_THREADS = 256,     /* a tiled matmul's or conv's block (matmul.h MM_THREADS) */
	CG_MM_WS_THREADS = 384,  /* a warp-specialized one's (matmul_ws.c) */
	CG_MM_PERSIST = 132,     /* its blocks at most: one per SM of the H200 */
};

/* A concrete launch: what cuLaunchKernel gets, plus the launch's workspace. */
typedef struct {
	int64_t grid[3];
	int block[3];
	int64_t shared_bytes;       /* dynamic shared memory */
	int64_t scratch_bytes;      /* per CG_PARAM_SCRATCH parameter (0 without) */
	int64_t threads;            /* grid-stride rule: threads asked (before the cap) */
} CgDims;

/* The rule of a cooperative kernel (CgLaunch.rule). */
typedef enum {
	CG_RULE_NONE,            /* a grid-stride kernel (the rule of CgLaunch below) */
	CG_RULE_REDUCE,          /* cooperative reduce kernels (kernel_reduce.c) */
	CG_RULE_MATMUL,          /* tiled matmuls and attention (matmul_pick.c) */
	CG_RULE_CONV,            /* convs on the matmul tiles (matmul_conv.c) */
	CG_RULE_COUNT
} CgRule;

/* How to launch.
 * Grid-stride kernels (rule CG_RULE_NONE): threads = ceil(product of dims of
 * work[] / vec), blocks of `block` threads, grid.x = min(ceil(threads / block),
 * max_grid), grid.y = grid.z = 1, no shared memory, no scratch.
 * Cooperative kernels (coop): `rule` gives grid, block, shared and scratch bytes;
 * `block` is the most threads a block may have (the kernel is annotated with it),
 * and arg[] holds whatever the rule reads (shape ids, tile sizes), set by the
 * kernel's builder; each rule's function below says what. */
typedef struct {
	uint32_t work[IR_MAX_RANK]; /* shape ids whose dims multiply to the work items */
	int nwork;                  /* 0: one work item */
	int vec;                    /* work items per thread on the vector path */
	int block;                  /* threads per block (coop: at most) */
	int64_t max_grid;           /* cap on grid.x (the kernels are grid-stride) */
	bool coop;                  /* a cooperative kernel (see above) */
	CgRule rule;                /* coop: the launch rule */
	int64_t arg[CG_LAUNCH_ARGS]; /* coop: the rule's inputs */
} CgLaunch;

/* The launch l gives for the dims of a segment (dims[shape id]; id 0 and ids past
 * ndims are 1). Deterministic. */
void cg_launch_eval(const CgLaunch *l, const int64_t *dims, int ndims, CgDims *out);
const char *cg_rule_name(CgRule r);      /* "reduce"; "stride" for CG_RULE_NONE */
int cg_rule_parse(const char *s);        /* CgRule, or -1 */

/* Threads per row of a reduce kernel in rows mode, and with the row cache
 * (launch_rule.c says how they were measured). */
int64_t cg_reduce_row_threads(int64_t n);
int64_t cg_reduce_cache_threads(int64_t n);
/* The same for a kernel whose row cache is in dynamic shared memory, per_thread bytes
 * and `each` elements of the row a thread: up to cg_reduce_dyn_threads(per_thread)
 * threads a row. */
int64_t cg_reduce_dyn_cache_threads(int64_t n, int64_t per_thread, int64_t each);
/* The most threads (a power of two, 32 to CG_RED_DYN_THREADS; 0: none) a block of
 * such a kernel may cache for, per_thread bytes each, in CG_RED_DYN_BYTES. */
int64_t cg_reduce_dyn_threads(int64_t per_thread);
/* Whether `rows` rows of n (not split, no dynamic cache) take the few-rows geometry:
 * a row over 32 elements, and the blocks of the rows mode (R = 256 / G rows each, G
 * the threads above) under CG_RED_FEW_WAVE. The launch rule and the kernel built
 * for it (CG_RED_FEW, reduce_plan.c) both ask. */
bool cg_reduce_few_rows(int64_t n, int64_t rows, bool cache);
/* The block of rows mode without a split or a dynamic row cache: G threads a row
 * (cg_reduce_cache_threads with the cache, else cg_reduce_row_threads) and R = 256 /
 * G rows (1 from 256 threads); on the few-rows geometry R = 1 and G raised to
 * pow2ceil(n / CG_RED_FEW_ELEMS), at most 256 with the cache (its slots), 512
 * without. The launch rule and a kernel built for one geometry
 * (CgKernelSpec.red_row, cg_reduce_long_rows) both ask. */
void cg_reduce_rows_block(int64_t n, int64_t rows, bool cache, int64_t *G, int64_t *R);

#endif
