/* codegen.h: kernels from relative ops, through the LLVM 19 C API (SPEC §5).
 *
 * In:  per kernel, the relative ops it runs (ir/ir.h RelOp, in execution order), what
 *      kind of kernel it is, and which relative tensor ids must reach global memory.
 * Out: one LLVM module per compile holding every kernel, emitted as PTX text (or LLVM
 *      IR), or handed to the host JIT (codegen/jit.h); and per kernel a CgKernel that
 *      tells the plan writer its entry name, parameter list and launch rule.
 * Memory: a CgModule owns every LLVM object of the compile (context, module, target
 *      machine, builder) and disposes of them in cg_module_free. CgKernel records and
 *      their strings live in the Arena given to cg_module_new and outlive the module.
 *
 * Kernel contract (the same for PTX and host):
 *   - Global tensors are the ones the ops read but no op of the kernel produces, plus
 *     the produced ones whose `written` flag is set. Every other value stays in
 *     registers. Buffers are dense, C order, in the tensor's dtype (f16/bf16 as their
 *     16-bit patterns, bool as one byte 0/1).
 *   - Parameters, in this order: one pointer per global tensor (ascending relative
 *     id), one double per scalar placeholder the ops use (ascending number; the kernel
 *     converts it to the operand's type), one i64 per shape id >= 1 the tensors
 *     mention (ascending id; id 0 is the value 1 and never a parameter). So one kernel
 *     serves every segment with the same relative form (64x64 and 32x32 alike).
 *   - Work: the kernel covers `work` = the product of the dims of launch.work[] items,
 *     with grid-stride loops over 64-bit indices, so any grid is correct; the launch
 *     rule gives the grid that lets every thread do about launch.vec items.
 *   - A kernel whose reduction is broadcast back over its axis (softmax) runs one
 *     thread per row: its work leaves that axis out.
 *   - Vectorization is decided at run time: a kernel whose ops are all elementwise and
 *     whose global tensors all have the iteration shape (no broadcast, no view) checks
 *     that every buffer is 16-byte aligned, then runs 16-byte vector loads/stores over
 *     the body and a scalar loop over the tail; misaligned buffers take the scalar loop.
 *   - Semantics: f16/bf16 are computed in f32 and rounded (to nearest even) on store
 *     and at casts; float->int casts truncate and saturate (NaN gives 0); integer
 *     division or remainder by zero gives 0; rem is floored (sign of the divisor);
 *     max/min propagate NaN; gather clamps its indices into the axis (negative ones
 *     count from the end); avg_pool2d counts padding in the divisor.
 *
 * PTX kernels use the PTX kernel calling convention and read their thread position from
 * the NVVM special registers. On the host (CG_TARGET_HOST) each kernel is the function
 *     void NAME(void **args, int64_t thread, int64_t nthreads)
 * where args[k] points to the value of parameter k (as cuLaunchKernel's kernelParams)
 * and (thread, nthreads) replace (global thread id, grid size): thread 0 of 1 runs the
 * whole grid; T host threads may split it as thread t of T.
 *
 * Cooperative kernels (CgLaunch.coop; the launch contract of issue 11):
 *   - Launched on a 3-D grid of 3-D blocks with dynamic shared memory, all chosen per
 *     launch by the kernel's launch rule (CgLaunch.rule) from the launch's dims
 *     (CgDims). Threads of a block cooperate: barriers, shared memory, warp shuffles.
 *     A block's thread count is a multiple of 32 unless it is below 32.
 *   - Every block runs the same code over the work it finds from its block id, so
 *     the kernel stays correct for any grid the rule gives (blocks loop over their
 *     share of the work when the grid is capped).
 *   - A kernel may have CG_PARAM_SCRATCH parameters, last of all: a device pointer to
 *     a zero-filled workspace of CgDims.scratch_bytes bytes that belongs to this launch
 *     alone. The launches of a plan share one buffer (the largest size asked), zeroed
 *     once when it is allocated, so a kernel leaves zeros in every byte it wrote
 *     before it returns: counters, and partials too, since a later kernel's counters
 *     may lie where they were (the host executor shares it the same way). Results
 *     never depend on block order (no float atomics): split reductions write partials
 *     to the scratch and the last block to finish combines them in a fixed order.
 *   - On the host, the same function signature; args[nparams] (one slot after the
 *     last parameter) points to an int64_t[7]: grid x, y, z, block x, y, z, dynamic
 *     shared bytes. Host thread t of T runs the linear block ids b = t, t + T, ...
 *     (b = x + gx*(y + gy*z)), each block as its threads in phases between barriers
 *     (codegen/coop.h), so `run --backend cpu` executes the GPU's algorithm: the
 *     same tiles, rows per block and reduction tree.
 *
 * Errors: every function returning int gives 0, or -1 with *d filled (file "codegen").
 * A diagnostic handler is installed on the context: any error-severity diagnostic of
 * LLVM fails the step it happened in. Before emission every called declaration is
 * checked: calls to functions the backend cannot resolve (libm names, llvm.exp and
 * the other transcendental intrinsics) are refused with a message naming them.
 *
 * Prefix: cg_. */
#ifndef FUSEC_CODEGEN_H
#define FUSEC_CODEGEN_H

#include <stdbool.h>
#include <stdint.h>

#include <llvm-c/Core.h>

#include "../ir/ir.h"
#include "../passes/passes.h"
#include "launch_rule.h"

/* The arch of compile's default (--arch): Hopper's own, so that matmuls take wgmma
 * (matmul_wgmma.c); --arch sm_90 gives PTX that later GPUs can still load. The host
 * backend runs the same arch's kernel choices. */
#define CG_DEFAULT_ARCH "sm_90a"

typedef enum {
	CG_TARGET_NVPTX,   /* nvptx64-nvidia-cuda, PTX text */
	CG_TARGET_HOST,    /* the host CPU, for the JIT */
} CgTarget;

typedef struct {
	CgTarget target;
	const char *arch;        /* CG_DEFAULT_ARCH when NULL */
	const char *libdevice;   /* libdevice .bc to link for precise math, or NULL */
	const char *name;        /* module name; "fusec" when NULL */
	bool no_call_check;      /* tests only: skip the unresolved-call check */
	bool allow_tf32;         /* f32 matmuls may run on tensor cores as tf32 */
	bool allow_3xtf32;       /* f32 matmuls may run on tensor cores as three tf32
				    products a step (matmul_wgmma.c), when not tf32 */
} CgOptions;

typedef enum {
	CG_KERNEL_ELEMWISE,  /* an ElementWise-fused block */
	CG_KERNEL_SINGLE,    /* exactly one op, of any family */
	CG_KERNEL_MATMUL,    /* matmul and its elementwise epilogue */
	CG_KERNEL_REDUCE,    /* reduce block(s): ops fused on read and on write */
} CgKernelKind;

typedef struct {
	CgKernelKind kind;
	const RelOp *ops;        /* in execution order */
	int nops;
	const bool *written;     /* per relative tensor id: must reach global memory */
	int nwritten;            /* entries in written; ids beyond it are not written */
	int variant;             /* matmul tile configuration (cg_matmul_variant); 0: none */
	int nhwc;                /* 1 + the relative id of the rank-4 tensor kept channel-last
				    in memory (NCHW dims at [0, 2, 3, 1]), 0: none. Written: the
				    kernel's threads run over it in that order; read (a pool):
				    over the output in NHWC order. NHWCRelayout (lower.c) */
	uint8_t red_long;        /* a cooperative reduce kernel for long rows
				    (cg_reduce_long_rows): CG_RED_LONG_F32, f32 rows
				    of at least 4096, more V-groups a trip and more
				    registers; on sm_90a CG_RED_LONG_F32_DYN, the
				    same with the row cache in dynamic shared memory,
				    and CG_RED_LONG_DYN, other rows past the static
				    row cache (8192); CG_RED_FEW, rows few enough for
				    a block each (more registers). 0: every other
				    kernel */
	int64_t red_row;         /* a cooperative reduce kernel in rows mode, not split,
				    without a dynamic row cache, in a plan of concrete
				    sizes: the reduced axis's length the kernel is built
				    for, and its block, red_g threads a row by red_r rows
				    (cg_reduce_rows_block); the kernel traps at another.
				    0: all three read at launch */
	int red_g, red_r;
} CgKernelSpec;

/* CG_PARAM_TMAP: a TMA tensor map (CUtensorMap, 128 bytes passed by value) of a
 * warp-specialized matmul's operand (matmul_ws.c); id 0 the first operand, 1 + g the
 * second of matmul g of the kernel's siblings (mm_members). GPU only: the launch
 * describes the map (CgTmap) and the runtime encodes it. */
typedef enum { CG_PARAM_BUFFER, CG_PARAM_SCALAR, CG_PARAM_DIM, CG_PARAM_SCRATCH,
	       CG_PARAM_TMAP } CgParamKind;

enum { CG_TMAP_BYTES = 128, CG_TMAP_ALIGN = 64, CG_TMAP_MAXRANK = 5 };

/* A tiled TMA tensor map over a tensor's buffer (docs/plan-format.md, "tmap"): dims
 * innermost first (elements), the byte strides of dims 1.. (dim 0 is contiguous),
 * the box copied at a time, 128-byte swizzle, zeros outside. Each dim is the size
 * of one shape id of the launch's dims (dim_id), each stride the element size times
 * the sizes of shape ids (sid): what a plan for every size writes instead of the
 * numbers. */
typedef struct {
	int rank;
	int64_t dim[CG_TMAP_MAXRANK];
	int64_t stride[CG_TMAP_MAXRANK];   /* [0] unused */
	int box[CG_TMAP_MAXRANK];
	int es;                            /* element bytes */
	int dim_id[CG_TMAP_MAXRANK];
	int nsid[CG_TMAP_MAXRANK];         /* [0] unused */
	int sid[CG_TMAP_MAXRANK][IR_MAX_RANK];
} CgTmap;

typedef struct {
	CgParamKind kind;
	int id;          /* relative tensor id, placeholder number, shape id; scratch: 0..;
			    tmap: the operand (above) */
	DType dtype;     /* buffer: element dtype; scalar: DT_F64; dim: DT_I64 */
	bool read;       /* buffer: loaded from */
	bool written;    /* buffer: stored to */
} CgParam;

/* CgDims, CgLaunch and the launch rules: launch_rule.h. */
typedef struct CgKernel CgKernel;

struct CgKernel {
	const char *name;        /* entry point, deterministic: "<kind>_<16 hex>" */
	CgKernelKind kind;
	CgParam *params;
	int nparams;
	CgLaunch launch;
	bool vectorized;         /* has the run-time checked 16-byte path */
	int variant;             /* matmul tile configuration, 0: none (CgKernelSpec) */
	int index;               /* order of creation in the module */
	const char *shape;       /* coop: the kernel's algorithm in words, for the plan
				    ("rows: block per row"); NULL otherwise */
	bool pdl;                /* waits at its start for the grids before it
				    (griddepcontrol, sm_90 on: cg_module_pdl), so a
				    runtime may launch it before they complete */
};

typedef struct CgModule CgModule;

/* Create the module, its context and target machine. NULL with *d on error. */
CgModule *cg_module_new(const CgOptions *o, Arena *a, Diag *d);
/* Build (or find: kernels are deduplicated on their spec) the kernel for spec.
 * NULL with *d on error; the module stays usable. */
const CgKernel *cg_kernel(CgModule *m, const CgKernelSpec *spec, Diag *d);
/* Verify, link libdevice if asked, run default<O3>, check calls. Once per module;
 * no kernel may be added after. */
int cg_module_finish(CgModule *m, Diag *d);
/* Append the PTX text (NVPTX target, after finish) to *out. */
int cg_module_emit_ptx(CgModule *m, Buf *out, Diag *d);
/* Append the module's LLVM IR text to *out (before or after finish). */
int cg_module_emit_ll(CgModule *m, Buf *out, Diag *d);
/* Host target, after finish: give the LLVM module and its context away (to
 * cg_jit_add_module, which owns them from then on). The CgModule keeps its records. */
int cg_module_take(CgModule *m, LLVMModuleRef *mod, LLVMContextRef *ctx, Diag *d);
/* The LLVM module (tests and debugging); NULL after cg_module_take. */
LLVMModuleRef cg_module_llvm(CgModule *m);
const char *cg_module_arch(const CgModule *m);   /* the arch, CG_DEFAULT_ARCH by default */
bool cg_module_is_host(const CgModule *m);
bool cg_module_allow_tf32(const CgModule *m);
bool cg_module_allow_3xtf32(const CgModule *m);
/* Whether the module's kernels take programmatic dependent launch: NVPTX for sm_90
 * or later. Each then starts with griddepcontrol.wait (the grids before it in the
 * stream complete, their writes visible) and griddepcontrol.launch_dependents (the
 * next one may launch), both no-ops unless the runtime launched it with
 * programmatic stream serialization (the plan's kernel "pdl": true). */
bool cg_module_pdl(const CgModule *m);
void cg_module_free(CgModule *m);

/* The tile configuration of a matmul kernel for the segment's dims (dims[shape id]),
 * from the table of codegen/matmul_pick.c: 0 (not tiled) unless spec is a Matmul or
 * single matmul kernel over f16/bf16 or f32 on sm_80 or later (or host), or one of
 * at most 16 rows (gemv) on any arch; f32 on tensor cores (tf32) only when
 * allow_tf32 (and sm_80 or later, or host), or three tf32 products a step (3xTF32,
 * wgmma: sm_90a, or host) when allow_3xtf32 and not allow_tf32. divs: NULL where dims
 * are the launch's
 * own; in a plan for every size, whose dims are probe sizes, per shape id a number
 * that divides every size it takes (cg_dim_divisor), so that the warp-specialized
 * tiles are taken only where their tensor maps hold at every size (strides of
 * multiples of 16 bytes). */
int cg_matmul_variant(const CgKernelSpec *spec, const char *arch, bool host,
		      bool allow_tf32, bool allow_3xtf32, const int64_t *divs,
		      const int64_t *dims, int ndims);
const char *cg_matmul_variant_name(int variant);  /* "tc128x128x64s3"; "plain" for 0 */
int cg_matmul_threads(int variant);   /* its kernel's threads per block (maxntid) */
int cg_matmul_cluster(int variant);   /* blocks of its clusters (1: none) */
/* The tensor map of CG_PARAM_TMAP parameter `id` of s's kernel at the launch's dims:
 * the relative id of the tensor it maps (its buffer) in *tensor and the map in *tm;
 * false when the operand's layout has no such map (a stride not a multiple of 16
 * bytes, more than 3 batch dims, sizes past the map's limits). */
bool cg_matmul_tmap(const CgKernelSpec *s, int id, const int64_t *dims, int ndims,
		    int *tensor, CgTmap *tm);
int cg_matmul_nvariants(void);                    /* table size, 0 included */

/* The red_long of spec (red_long unset) at the segment's dims (dims[shape id]): a
 * cooperative reduce kernel on the cached path gets CG_RED_LONG_F32 where it has no
 * long math, its rows are f32 and its reduced axis is at least CG_RED_LONG_ROW
 * (4096) long (CG_RED_LONG_F32_DYN with dyn), else with dyn CG_RED_LONG_DYN where
 * the axis is longer than the static row cache holds (CG_RED_CACHE_BLOCK *
 * CG_RED_CACHE, 8192); else CG_RED_FEW where its rows take the launch rule's
 * few-rows geometry (a block a row, under a wave of blocks: the norms of a
 * transformer at batch 1), which has registers to spare (CG_RED_FEW_MAXNREG); 0
 * otherwise (codegen/reduce_plan.c). dyn: the plan's arch
 * is sm_90a, whose devices all let a block have 192 KiB of shared memory (an sm_80
 * or sm_90 plan may run where a block gets 99 KiB or less). The relative form has
 * no row length, so the choice is made here, from the concrete dims, and is part of
 * the kernel's identity (module.c, kcache.c). */
enum { CG_RED_LONG_F32 = 1, CG_RED_LONG_DYN = 2, CG_RED_LONG_F32_DYN = 3, CG_RED_FEW = 4 };
/* row (NULL: not asked, a plan for every size): the spec's red_row, red_g and red_r
 * at these dims (row[0..2]). */
int cg_reduce_long_rows(const CgKernelSpec *spec, const int64_t *dims, int ndims, bool dyn,
			int64_t *row);

/* Whether LLVM 19's NVPTX backend knows the arch ("sm_80", "sm_90a"). */
bool cg_arch_known(const char *arch);
/* The oldest arch the kernels run on: the cooperative kernels shuffle with
 * shfl.sync, which LLVM 19 selects from sm_70 (PTX 6.0) on; the tiled matmuls
 * (cp.async, mma.sync) are chosen from sm_80 on (cg_matmul_variant). fusec-run
 * names the same floor for a device (RT_MIN_ARCH in runtime/runtime.c; grep MIN ARCH). */
#define CG_MIN_ARCH 70
/* Whether a known arch is at least sm_CG_MIN_ARCH. */
bool cg_arch_supported(const char *arch);
/* The arches both known and supported, for messages: "sm_70, sm_72, ... and sm_90a". */
void cg_arch_list(Buf *b);
/* Whether the cpu backend builds its kernels for compile speed (FUSEC_CPU_QUICK=1;
 * codegen/module.c). */
bool cg_cpu_quick(void);
/* The NVPTX back end's optimization level, 3 or (FUSEC_CODEGEN_LEVEL=2) 2: part of
 * the kernel cache's and the result cache's keys (docs/kernel-cache.md). */
int cg_nvptx_codegen_level(void);
const char *cg_kernel_kind_name(CgKernelKind k);   /* "elemwise" */
/* Concrete launch of k for the dims of a segment (dims[shape id], as ir_rel_dims):
 * the grid-stride rule or the kernel's own (CgLaunch). */
void cg_launch_dims(const CgKernel *k, const int64_t *dims, int ndims, CgDims *out);

/* ---- lowering a schedule ------------------------------------------------------
 *
 * cg_lower turns every launch of a Schedule (passes/passes.h) into a kernel of the
 * module and a bound launch. Each launch's global ops are brought into relative form
 * on their own (a fresh segment), so the kernel depends only on the launch's
 * relative form: every step that hits the same plan, at 64x64 or 32x32, binds the
 * same kernel. A tensor a launch produces is written to global memory when it is a
 * graph output or an op outside the launch reads it; all else stays in registers.
 *
 * A launch of a lone `reshape` (a view the search left un-fused) gets no kernel: its
 * input is in memory, dense and in C order, so the output is the same bytes under
 * another shape. The output becomes an alias of the input's buffer (of the buffer
 * the input itself aliases, so an alias always names a tensor with a buffer of its
 * own): CgProgram.alias, CgAlias, `"alias"` in the plan (docs/plan-format.md). No
 * launch ever writes an alias or its root after the alias is made (every tensor is
 * written once, before it is read), so sharing the bytes is safe.
 *
 * A launch of a lone view that passes/views.c sinks (pass_view_sink: every reader
 * can read through it) gets no kernel either, and its output no buffer: every
 * launch reading it gets the sunk views it reads (pass_view_chain) in front of its
 * own ops, so its kernel is built from that longer list and reads the view's input
 * buffer through the view's index arithmetic, as for a view the search fused
 * (CgProgram.views; `"views"` of a step in the plan). A lone op that gains views
 * becomes a kernel of its family (elemwise, reduce, matmul). Launches that read no
 * sunk view are lowered exactly as before. */

typedef enum { CG_ARG_TENSOR, CG_ARG_F64, CG_ARG_I64, CG_ARG_SCRATCH, CG_ARG_TMAP } CgArgKind;

typedef struct {
	CgArgKind kind;
	int tensor;              /* CG_ARG_TENSOR, CG_ARG_TMAP: global tensor id */
	double f;                /* CG_ARG_F64 */
	int64_t i;               /* CG_ARG_I64; CG_ARG_SCRATCH: its bytes */
	CgTmap tm;               /* CG_ARG_TMAP */
} CgArg;

typedef struct {
	const CgKernel *kernel;
	int step;                /* index in Schedule.steps */
	int unit;                /* index in Schedule.kernels: the plan chunk it runs */
	CgDims at;               /* grid, block, shared and scratch bytes */
	CgArg *args;             /* one per kernel parameter */
	int nargs;
	/* a graph compiled for every size (Graph.sym): where each shape id of the
	 * launch's dims comes from (ir_rel_dim_sources), so that it can be bound to
	 * other sizes (cg_host_bind); NULL otherwise */
	const int32_t *dsrc;
	int ndims;
} CgBound;

/* A launch that launches nothing: a reshape made an alias (CgProgram.aliases: `of`
 * is the tensor whose buffer it shares, which has one) or a view sunk into its
 * readers (CgProgram.views: `of` is the tensor in memory they read through it). */
typedef struct {
	int step;                /* index in Schedule.steps */
	int op;                  /* the reshape or view (global op id) */
	int tensor;              /* its output, which gets no buffer */
	int of;                  /* see above */
} CgNoLaunch;

typedef CgNoLaunch CgAlias;
typedef CgNoLaunch CgView;

typedef struct {
	CgBound *launch;         /* every step's launches, in execution order */
	int nlaunch;
	const CgKernel **kernels;/* distinct kernels, in order of first use */
	int nkernels;
	bool *buffer;            /* per global tensor: needs a buffer (input, output, written) */
	int *alias;              /* per global tensor: the tensor whose buffer it shares, or -1 */
	CgAlias *aliases;        /* the reshapes made aliases, in execution order */
	int naliases;
	CgView *views;           /* the views sunk into their readers, in execution order */
	int nviews;
	bool *nhwc;              /* per global tensor: kept channel-last in memory (an
				    NHWCRelayout trace writes it, its pool reads it) */
} CgProgram;

/* Build the kernels of every launch of s into m and bind the launches. Everything
 * *out points to lives in arena a. 0, or -1 with *d (the kernel that failed). */
int cg_lower(CgModule *m, const Schedule *s, Arena *a, CgProgram *out, Diag *d);

/* ---- running a lowered program on the host ------------------------------------
 *
 * The `cpu` backend: the schedule's kernels built for the host (CG_TARGET_HOST),
 * JIT-compiled, and every bound launch called in order, each running its whole grid
 * (thread 0 of 1). This executes exactly the kernels and launches the plan holds. */

typedef struct CgHost CgHost;

/* Lower s for the host and JIT it. NULL with *d on error. */
CgHost *cg_host_new(const Schedule *s, bool allow_tf32, bool allow_3xtf32, Diag *d);
/* Which tensors need memory (inputs, outputs, written intermediates). */
const bool *cg_host_buffers(const CgHost *h);
/* Run every launch; data[t] is tensor t's dense buffer (NULL for tensors that need
 * none). An alias tensor's entry (CgProgram.alias) is set here to its buffer's, so
 * callers read outputs from data[] as usual. 0, or -1 with *d when a launch names a
 * tensor without a buffer. */
int cg_host_run(CgHost *h, void **data, Diag *d);
/* A schedule of a graph compiled for every size of its named dims (Graph.sym):
 * bind every launch to the sizes of g, the same graph read at other sizes (the
 * same tensors and ops): each shape id takes the size of the tensor dim it came
 * from, then the launch rule gives the grid and the workspace, and the dim
 * arguments their values. The kernels stay. 0, or -1 with *d when g is not the
 * compiled graph's shape. */
int cg_host_bind(CgHost *h, const Graph *g, Diag *d);
void cg_host_free(CgHost *h);

#endif
