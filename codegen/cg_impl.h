/* cg_impl.h: what the files of codegen/ share and nobody else sees: the module
 * record, the kernel builder state, and the declarations of each room.
 *
 * A kernel is built by demand-driven evaluation. The frame (frame.c) loops over the
 * iteration space of the written tensors and asks the evaluator (eval.c) for the value
 * of each written tensor at an index; cg_eval computes the producing op's operands at
 * the indices that op maps to (broadcast, view, reduction, window ...), down to loads
 * of global tensors, through one evaluator per op family (kernel_*.c). A memo keyed on
 * (tensor, index) keeps each value computed once per element. Ops with inner loops or
 * branches (reductions, matmul, cat, conv, pools) open a memo scope so that values
 * made inside do not leak out.
 *
 * The rooms, from the bottom: toolbox.c (LLVM types, loads and stores, conversions,
 * index math, memo, loops), values.c (per-dtype arithmetic), eval.c (the evaluator),
 * kernel_elemwise.c, kernel_reduce.c, kernel_matmul.c (the tiled matmul in matmul.h
 * and matmul_*.c), kernel_join_window.c (the families), frame.c (the kernel frame
 * and the launch rule), module.c (the LLVM module, deduplication, emission). coop.c
 * (coop.h) is the cooperative-kernel builder beside the toolbox: phases, barriers,
 * shared memory and shuffles for NVPTX and host. */
#ifndef FUSEC_CG_IMPL_H
#define FUSEC_CG_IMPL_H

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "codegen.h"
#include "coop.h"
#include "math.h"

enum {
	CG_BLOCK = 256,          /* threads per block */
	CG_MAX_GRID = 65535,     /* grid.x cap */
	CG_VEC_BYTES = 16,
	CG_CHUNK = 4,            /* elements a thread on the chunked scalar path (frame.c) */
};

typedef struct {
	uint64_t hash;
	CgKernelKind kind;
	int variant;
	int nhwc;                /* CgKernelSpec.nhwc */
	uint8_t red_long;        /* CgKernelSpec.red_long */
	int64_t red_row;         /* CgKernelSpec.red_row, red_g, red_r */
	int red_g, red_r;
	RelOp *ops;              /* deep copy, module-owned (malloc) */
	int nops;
	bool *written;
	int nwritten;
	CgKernel *k;
	int twin;                /* chunked: the earlier entry whose code this one's is
				    (module.c, cg_module_twin), or -1 */
} CgEntry;

struct CgModule {
	CgOptions opt;
	Arena *arena;            /* CgKernel records */
	LLVMContextRef ctx;
	LLVMModuleRef mod;
	LLVMTargetMachineRef tm;
	LLVMBuilderRef b;
	char *error;             /* first error diagnostic since the last check (malloc) */
	CgEntry *entries;
	int nentries, capentries;
	bool finished;
	bool taken;              /* module and context given away */
	bool chunked;            /* NVPTX, cg_module_chunked: kernels built in chunks */
	/* chunked mode (emit_par.c): closed chunks, each a context and module with
	 * entries [first, first + n); the open chunk is ctx/mod, from chunk_first on */
	struct CgChunk { LLVMContextRef ctx; LLVMModuleRef mod; int first, n; } *chunks;
	int nchunks, capchunks;
	int chunk_first;
	/* twins (cg_module_twin): a hash of the code of each large kernel built */
	struct CgTwinKey { uint64_t hash; int entry; } *twinkeys;
	int ntwinkeys, captwinkeys;
	bool no_twins;           /* FUSEC_NO_TWINS set: every kernel compiled */
	char *triple;            /* of every module (malloc) */
	char *datalayout;        /* (malloc) */
	LLVMTypeRef t_void, t_i1, t_i8, t_i16, t_i32, t_i64, t_f16, t_f32, t_f64, t_ptr;
};

/* An index into one tensor: its flat position, its per-dim position, or both. */
typedef struct {
	int rank;
	const uint32_t *shape;        /* shape ids of the tensor addressed */
	LLVMValueRef flat;            /* i64 linear index, or NULL */
	LLVMValueRef i[IR_MAX_RANK];  /* i64 per dim, valid when has_dims */
	bool has_dims;
	int lane;                     /* vector path: lane of the current vector; else -1 */
} CgIdx;

typedef struct {
	int tensor;
	CgIdx idx;
	LLVMValueRef v;
} CgMemo;

typedef struct CgKb {
	CgModule *m;
	LLVMBuilderRef b;
	LLVMValueRef fn;
	const CgKernelSpec *spec;
	int ntensors;                 /* 1 + highest relative id */
	const RelTensor **tinfo;      /* per relative id: its description */
	int *producer;                /* per relative id: op index, or -1 */
	LLVMValueRef *buf;            /* per relative id: buffer pointer, or NULL */
	LLVMValueRef *scalar;         /* per placeholder: double value, or NULL */
	int nplace;
	LLVMValueRef *dim;            /* per shape id: i64 value */
	int ndims;
	LLVMValueRef scratch;         /* the CG_PARAM_SCRATCH parameter of a plain-signature
					 kernel (split-K matmul), or NULL */
	LLVMValueRef tmap[1 + IR_MM_GROUP_MAX]; /* CG_PARAM_TMAP parameters by id (generic
					 pointers to the maps), or NULL */
	bool late_wait;               /* the kernel body calls cg_grid_wait itself, after
					 its set-up (cg_matmul_waits_late) */
	LLVMValueRef thread, nthreads;
	LLVMValueRef *vload;          /* vector path: per relative id, loaded vector */
	LLVMValueRef vbase;           /* vector path: flat index of lane 0 */
	int vec;                      /* vector width in elements */
	bool vrow;                    /* reduce rows' vector path: a lane's tensor offset
					 minus its lane is lane 0's (tensors along vrow_axis) */
	int vrow_axis;
	bool rowk;                    /* a cooperative reduce kernel: a tensor of size 1
					 along vrow_axis is the same in a thread's loops
					 over a row (cg_row_uniform) */
	int nhwc;                     /* relative id of the channel-last tensor, or -1 */
	LLVMValueRef nhwc_flat;       /* NHWC loop: the iteration index, which is the
					 offset of the channel-last tensor written at
					 the loop's own index (cg_store_written) */
	CgMemo *memo;
	int nmemo, capmemo;
	CgMath math;
	Diag *d;
	bool failed;
} CgKb;

/* ---- toolbox.c: the LLVM toolbox ----------------------------------------------- */

int cg_fail(CgKb *kb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
LLVMValueRef cg_i64(CgKb *kb, int64_t v);
LLVMValueRef cg_dim(CgKb *kb, uint32_t shape_id);
LLVMValueRef cg_and(CgKb *kb, LLVMValueRef a, LLVMValueRef b); /* a NULL: b */
LLVMValueRef cg_intrinsic(CgKb *kb, const char *name, LLVMTypeRef *types, int ntypes,
			  LLVMValueRef *args, int nargs);
LLVMValueRef cg_zero(CgKb *kb, DType t);                 /* in t's compute type */
LLVMValueRef cg_one(CgKb *kb, DType t);
LLVMValueRef cg_extreme(CgKb *kb, DType t, bool lowest); /* lowest: the most negative */

static inline bool cg_dtype_unsigned(DType t)
{
	return t == DT_U8 || t == DT_BOOL;
}

/* types, loads and stores, conversions */
LLVMTypeRef cg_ctype(CgModule *m, DType t);   /* compute type */
LLVMTypeRef cg_stype(CgModule *m, DType t);   /* storage type */
LLVMValueRef cg_widen(CgKb *kb, LLVMValueRef v, DType t);   /* storage -> compute */
LLVMValueRef cg_narrow(CgKb *kb, LLVMValueRef v, DType t);  /* compute -> storage */
LLVMValueRef cg_load(CgKb *kb, int tensor, LLVMValueRef offset);
void cg_store(CgKb *kb, int tensor, LLVMValueRef offset, LLVMValueRef v);
LLVMValueRef cg_convert(CgKb *kb, LLVMValueRef v, DType from, DType to);
/* An f16/bf16 value computed in f32, rounded to its dtype's precision (a no-op for
 * other dtypes): what storing and loading it again would give. */
LLVMValueRef cg_round_to(CgKb *kb, LLVMValueRef v, DType t);
LLVMValueRef cg_placeholder(CgKb *kb, int n);   /* double */
LLVMValueRef cg_scalar_as(CgKb *kb, int n, DType t);

/* indices */
CgIdx cg_idx_of(int rank, const uint32_t *shape);
CgIdx cg_idx_at(const RelTensor *t, LLVMValueRef *pos);   /* per-dim positions */
void cg_idx_dims(CgKb *kb, CgIdx *idx);
LLVMValueRef cg_offset(CgKb *kb, CgIdx *idx);   /* linear offset of idx */
/* The offset of idx in tensor t: channel-last for the kernel's NHWC tensor
 * (CgKernelSpec.nhwc), cg_offset otherwise. */
LLVMValueRef cg_offset_of(CgKb *kb, int t, CgIdx *idx);
bool cg_same_shape(int ra, const uint32_t *a, int rb, const uint32_t *b);
/* The index of operand `in` of an elementwise op whose output index is out. */
CgIdx cg_idx_broadcast(CgKb *kb, CgIdx *out, const RelTensor *in);

/* the memo, and its scopes around inner loops and branches */
LLVMValueRef cg_memo_find(CgKb *kb, int tensor, const CgIdx *idx);
void cg_memo_add(CgKb *kb, int tensor, const CgIdx *idx, LLVMValueRef v);
int cg_memo_mark(CgKb *kb);
void cg_memo_release(CgKb *kb, int mark);

/* grid-stride and counted loops: for (i = start; i < end; i += step) */
typedef struct {
	LLVMValueRef i;               /* i64 induction variable */
	LLVMBasicBlockRef header, exit;
	LLVMValueRef cmp;             /* the header's compare: carries go before it */
	LLVMValueRef step;
	LLVMValueRef cphi[4], cnext[4];
	int ncarry;
	int mark;                     /* memo mark at loop entry */
} CgLoop;
void cg_loop_begin(CgKb *kb, CgLoop *l, LLVMValueRef start, LLVMValueRef end, LLVMValueRef step);
void cg_loop_end(CgKb *kb, CgLoop *l);
/* Loop-carried value: a phi in the loop header, initial value from before the loop;
 * set its next value with cg_carry_next before cg_loop_end. */
LLVMValueRef cg_carry(CgKb *kb, CgLoop *l, LLVMValueRef init);
void cg_carry_next(CgKb *kb, CgLoop *l, LLVMValueRef phi, LLVMValueRef next);

/* ---- values.c: arithmetic on compute values ------------------------------------ */

LLVMValueRef cg_binary_value(CgKb *kb, OpKind op, DType t, LLVMValueRef a, LLVMValueRef b);
/* x / s by x · (1/s) where 1/s is a normal number (else a division), for an s that
 * stays the same over the thread's loop: the reciprocal is hoisted out of it. */
LLVMValueRef cg_div_uniform(CgKb *kb, LLVMValueRef x, LLVMValueRef s);
/* Whether t has size 1 along the row axis of a cooperative reduce kernel (the same
 * value in every position of a thread's row). */
static inline bool cg_row_uniform(const CgKb *kb, const RelTensor *t)
{
	return kb->rowk && (kb->vrow_axis >= t->rank || t->shape[kb->vrow_axis] == 0);
}
LLVMValueRef cg_compare(CgKb *kb, OpKind op, DType t, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef cg_int_unary(CgKb *kb, OpKind op, DType t, LLVMValueRef x);
LLVMValueRef cg_select_max(CgKb *kb, DType t, LLVMValueRef a, LLVMValueRef b, bool max);

/* ---- eval.c: the evaluator ------------------------------------------------------ */

LLVMValueRef cg_eval(CgKb *kb, int tensor, CgIdx *idx);
/* Evaluate and store every written tensor (wr[0..nw)) at the iteration index ref. */
void cg_store_written(CgKb *kb, CgIdx *ref, const int *wr, int nw);

/* ---- the families: one evaluator node each (op is the producing RelOp, out its
 * output index; dims available where eval.c's table says so) --------------------- */

/* kernel_elemwise.c */
LLVMValueRef cg_eval_elementwise(CgKb *kb, const RelOp *op, CgIdx *out);
LLVMValueRef cg_eval_view(CgKb *kb, const RelOp *op, CgIdx *out);
/* The vector path's width in elements, or 1 when the kernel has none. */
int cg_vector_width(CgKb *kb, int rank, const uint32_t *ref, const bool *read,
		    const bool *written);
/* The vector loop over the n elements; returns where the scalar tail starts. */
LLVMValueRef cg_vector_loops(CgKb *kb, int rank, const uint32_t *ref, const int *wr, int nw,
			     LLVMValueRef n);

/* reduce_plan.c, kernel_reduce.c, reduce_plain.c */
/* The schedule's constants (CG_RED_*) are in launch_rule.h, which the runtime
 * shares. */
enum {
	CG_RED_CACHE_T = 3,      /* row tensors a row cache holds */
	CG_RED_CACHE_BYTES = 32768, /* its shared memory a block (static: 48 KiB at most) */
};
/* The structure of a cooperative reduce kernel (reduce_plan.c, cg_reduce_plan). */
typedef struct {
	int axis, rank;
	uint32_t full[IR_MAX_RANK];   /* the reduced inputs' shape: ref with the axis */
	uint32_t n;                   /* shape id of the axis */
	bool bcast;                   /* results broadcast back over the axis */
	bool column;                  /* dims after the axis: columns mode */
	bool split;                   /* one reduction, not broadcast: may split over grid.y */
	bool has_arg;                 /* argmax / argmin among the reductions */
	int vec;                      /* rows mode: elements a 16-byte load brings of the
					 row tensors (vt), when aligned; 1: no vector path */
	int vt[CG_RED_MAX];           /* global tensors read along the whole axis */
	int nvt;
	bool cache;                   /* rows broadcast back: the row may stay in registers
					 between passes (the ct tensors, read once) */
	int ct[CG_RED_CACHE_T];       /* the cached tensors, of the full row shape: */
	bool ct_made[CG_RED_CACHE_T]; /* a reduction's input the kernel computes, kept
					 as its pass makes it; else one of vt, kept
					 as the first pass loads it */
	int ct_level[CG_RED_CACHE_T]; /* made: the pass that makes it */
	int nct;
	int trips;                    /* cached rows: V-groups a trip loads together */
	bool long_rows;               /* built for long f32 rows (CgKernelSpec.red_long):
					 CG_RED_LONG_TRIPS, CG_RED_LONG_MAXNREG, and the
					 row cache in dynamic shared memory: */
	bool few;                     /* built for few rows (CgKernelSpec.red_long
					 CG_RED_FEW): CG_RED_FEW_MAXNREG */
	int dyn_bytes;                /* its bytes a thread (0: the static cache) */
	int dyn_elems;                /* and the row's elements a thread
					 (CG_RED_DYN_GROUPS V-groups) */
	int slot[CG_RED_CACHE_T];     /* its bytes a V-group of each cached tensor */
	int red[CG_RED_MAX];          /* op index of each reduction, in op order */
	int level[CG_RED_MAX];        /* its pass: after the reductions it reads */
	int nred, npass;
} CgRed;
/* Whether the kernel (iteration space ref) is built as a cooperative reduce kernel. */
bool cg_reduce_plan(CgKb *kb, const CgKernelSpec *s, int rank, const uint32_t *ref,
		    const bool *written, CgRed *r);
/* The red_long of plan r (made with red_long unset) at a reduced axis of n elements
 * and rows rows (codegen.h, cg_reduce_long_rows). */
int cg_reduce_long(const CgKernelSpec *s, const CgRed *r, int64_t n, int64_t rows, bool dyn);
/* Its body, inside cg_coop_function / cg_coop_finish; sets k's launch rule. */
void cg_reduce_kernel(CgKb *kb, CgCoop *c, const CgRed *r, const uint32_t *ref, const int *wr,
		      int nw, CgKernel *k);
LLVMValueRef cg_eval_reduce(CgKb *kb, const RelOp *op, CgIdx *out);
/* The identity of op's accumulation (0, 1, or the extreme of its input's dtype), in
 * the accumulator's type (f32 for f16/bf16, i64 for integers). */
LLVMValueRef cg_reduce_identity(CgKb *kb, const RelOp *op);
int cg_row_axis(const CgKernelSpec *s, int rank, const uint32_t *ref);
void cg_row_loops(CgKb *kb, int rank, const uint32_t *ref, int axis, const int *wr, int nw);

/* kernel_matmul.c; the tiled kernel in matmul_*.c (matmul.h) */
LLVMValueRef cg_eval_matmul(CgKb *kb, const RelOp *op, CgIdx *out);
/* The tiled kernel body for a tile configuration (codegen.h cg_matmul_variant), after
 * the frame made the function; wr lists the written tensors. cg_matmul_launch sets
 * the launch rule of such kernels. */
int cg_matmul_tiled(CgKb *kb, int variant, const int *wr, int nw);
void cg_matmul_launch(int variant, const CgKernelSpec *s, CgLaunch *l);
/* Whether configuration variant splits K over blocks: its kernel then takes a
 * CG_PARAM_SCRATCH parameter (the partial tiles and a counter per tile), last. */
bool cg_matmul_splits(int variant);
/* Whether the kernel of configuration variant on the GPU waits for the grids before
 * it (griddepcontrol.wait) itself, after its set-up (a warp-specialized tile:
 * mm_ws_tile_loop), in place of the frame's wait at its first instruction. */
bool cg_matmul_waits_late(int variant);
/* frame.c: griddepcontrol.wait then launch_dependents (programmatic dependent launch) */
void cg_grid_wait(CgKb *kb);
/* How many CG_PARAM_TMAP parameters the kernel of s takes, after the others: a
 * warp-specialized configuration's (matmul_ws.c) first operand and each sibling's
 * second, on the GPU; 0 otherwise. */
int cg_matmul_tmaps(const CgKernelSpec *s, bool gpu);
/* The index of the matmul in s->ops after its leading swap_dims / permute operand
 * views, or -1 (matmul_shape.c). */
int cg_matmul_index(const CgKernelSpec *s);

/* kernel_join_window.c: cat and gather; conv2d and the pools */
LLVMValueRef cg_eval_join(CgKb *kb, const RelOp *op, CgIdx *out);
LLVMValueRef cg_eval_window(CgKb *kb, const RelOp *op, CgIdx *out);

/* ---- frame.c: the kernel frame (cg_kernel and cg_launch_dims are in codegen.h) --- */

CgKernel *cg_build(CgModule *m, const CgKernelSpec *s, uint64_t hash, Diag *d);

/* ---- module.c ------------------------------------------------------------------ */

void cg_module_set_error(CgModule *m, Diag *d, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int cg_module_check_diag(CgModule *m, Diag *d, const char *when);
CgEntry *cg_module_find(CgModule *m, const CgKernelSpec *s, uint64_t hash);
void cg_module_add(CgModule *m, const CgKernelSpec *s, uint64_t hash, CgKernel *k);
uint64_t cg_spec_hash(const CgKernelSpec *s);
/* A target machine for the module's target and arch (the caller disposes of it). */
LLVMTargetMachineRef cg_module_target_machine(const CgModule *m);
/* Close the open chunk (chunked mode): it joins m->chunks, a fresh one opens. */
void cg_module_close_chunk(CgModule *m);
/* Chunked mode, right after kernel k (the last entry) was built: when its code is
 * that of an earlier kernel but for its name, its body becomes a stub and the entry
 * records the twin; emit_par.c writes the twin's PTX under its name. */
void cg_module_twin(CgModule *m, const CgKernel *k);
/* Every call in mod goes to something the backend resolves itself. */
int cg_check_calls(LLVMModuleRef mod, CgTarget target, Diag *d);

#endif
