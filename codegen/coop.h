/* coop.h: the cooperative-kernel builder (included by cg_impl.h).
 *
 * One algorithm, two lowerings. A cooperative kernel (codegen.h, "Cooperative
 * kernels") is written once against this API, and the builder lowers it for NVPTX
 * (threads of a block run at once, bar.sync between phases, shfl.sync, addrspace(3)
 * shared memory) or for the host (one call runs whole blocks; each phase is a loop
 * over the block's threads, so a barrier is simply the end of one loop and the start
 * of the next). The tests run the host lowering and compare it with the interpreter,
 * so the GPU's tiles, rows per block and reduction tree are what CI checks.
 *
 * The model:
 *   - Uniform code: everything outside a phase. It runs once per block on the host
 *     and by every thread of the block on the GPU, so it must not depend on the
 *     thread: block ids, dims, loops over a block's work, loads from shared memory at
 *     uniform addresses, branches on uniform values. Its SSA values can be used
 *     anywhere after (in phases too).
 *   - Phases: per-thread code between cg_coop_phase_begin and cg_coop_phase_end.
 *     c->tid, c->tidx[], c->lane, c->warp are valid only inside. SSA values made in
 *     a phase die at its end (on the host the phase is a loop): whatever must live on
 *     goes into a thread-private variable (CgVar) or shared memory. The evaluator's
 *     memo is released at the end of a phase for the same reason.
 *   - Barriers (cg_coop_barrier) and shuffles (cg_coop_shfl_xor, cg_coop_group_reduce)
 *     are uniform statements between phases: every thread of the block reaches them.
 *   - Thread-private variables: GPU an alloca (registers after SROA), host an
 *     array with one slot per thread of the block, indexed by tid.
 *   - Shared memory: GPU an addrspace(3) array per request (static) or the launch's
 *     dynamic shared memory; host a buffer on the stack of the call (one block at a
 *     time). The pointers returned address element 0; index with LLVMBuildGEP2.
 *   - Shuffles need a block whose thread count is a multiple of 32; on the host a
 *     shuffle is a phase that reads the source variable's slot of tid ^ mask.
 *
 * Worked example: out[b] = sum of x[b*256 .. b*256+255], one block of 256 per b.
 *
 *     CgCoop c;
 *     cg_coop_function(kb, name, params, np, 256, &c);     // function, params, blocks
 *     LLVMValueRef part = cg_coop_shared(&c, f32, 8);      // one slot per warp
 *     CgVar acc = cg_coop_var(&c, f32);
 *     cg_coop_phase_begin(&c);                              // phase 1: load
 *       LLVMValueRef i = add(mul(c.block, 256), c.tid);
 *       cg_coop_set(&c, acc, cg_load(kb, X, i));
 *     cg_coop_phase_end(&c);
 *     cg_coop_group_reduce(&c, &acc, 1, 256, add_combine, NULL);   // shuffles, shared
 *     cg_coop_phase_begin(&c);                              // every thread has the sum
 *       if (c.tid == 0) cg_store(kb, OUT, c.block, cg_coop_get(&c, acc));
 *     cg_coop_phase_end(&c);
 *     cg_coop_finish(&c);
 *
 * A kernel whose grid may be capped loops over its work in uniform code, e.g.
 * `for (r = c.block; r < nrows; r += c.nblocks) { phases }` with cg_loop_begin. */
#ifndef FUSEC_COOP_H
#define FUSEC_COOP_H

typedef struct CgKb CgKb;

typedef struct {
	LLVMTypeRef type;
	LLVMValueRef slot;            /* GPU: alloca of type; host: alloca [threads x type] */
} CgVar;

typedef struct {
	CgKb *kb;
	bool gpu;
	/* uniform */
	LLVMValueRef nthreads;        /* i64 threads per block */
	LLVMValueRef ntid[3];         /* i64 block dims */
	LLVMValueRef nctaid[3];       /* i64 grid dims */
	LLVMValueRef ctaid[3];        /* i64 this block's position */
	LLVMValueRef block, nblocks;  /* i64 linear block id (x fastest), blocks in the grid */
	LLVMValueRef scratch[4];      /* CG_PARAM_SCRATCH parameters by id, or NULL */
	/* inside a phase only */
	LLVMValueRef tid;             /* i64 linear thread id in the block (x fastest) */
	LLVMValueRef tidx[3];         /* i64 per dim */
	LLVMValueRef lane, warp;      /* i64 tid % 32, tid / 32 */
	/* private */
	LLVMBasicBlockRef allocas;    /* the entry block: allocas, then a branch at finish */
	LLVMValueRef gpu_tid, gpu_tidx[3];
	LLVMValueRef host_blk_i, host_blk_exit_cmp;
	LLVMBasicBlockRef host_blk_header, host_blk_exit;
	LLVMValueRef host_blk_step;
	LLVMValueRef dyn_shared, dyn_bytes;   /* host: the launch's dynamic shared memory */
	int nshared;
	bool in_phase;
	int phase_mark;
	struct { LLVMValueRef i; LLVMBasicBlockRef header, exit; } phase;
} CgCoop;

/* Create the kernel function `name` with the given parameters (CG_PARAM_SCRATCH ones
 * last), bind them in kb (buf, scalar, dim; scratch in c->scratch), annotate the most
 * threads a block may have (GPU), and open the per-block body: on the host a loop over
 * the blocks this call runs. kb->fn is set; the builder is positioned in uniform code. */
void cg_coop_function(CgKb *kb, const char *name, const CgParam *ps, int np,
		      int max_threads, CgCoop *c);
/* GPU: one more !nvvm.annotations entry for the kernel ("maxnreg", 64); host: none. */
void cg_coop_annotate(CgCoop *c, const char *key, int value);
/* Close the per-block body and return. */
void cg_coop_finish(CgCoop *c);

CgVar cg_coop_var(CgCoop *c, LLVMTypeRef type);
LLVMValueRef cg_coop_get(CgCoop *c, CgVar v);             /* in a phase */
void cg_coop_set(CgCoop *c, CgVar v, LLVMValueRef value); /* in a phase */

void cg_coop_phase_begin(CgCoop *c);
void cg_coop_phase_end(CgCoop *c);
void cg_coop_barrier(CgCoop *c);

/* count elements of type, per block; aligned to 16 bytes. */
LLVMValueRef cg_coop_shared(CgCoop *c, LLVMTypeRef type, int count);
/* The launch's dynamic shared memory (CgDims.shared_bytes bytes, 16-byte aligned). */
LLVMValueRef cg_coop_dynamic_shared(CgCoop *c);
/* Its size in bytes (i64; on the GPU %dynamic_smem_size), what the launch gave. */
LLVMValueRef cg_coop_dynamic_bytes(CgCoop *c);

/* dst = src of thread tid ^ mask (mask: uniform i64 below 32); dst != src. */
void cg_coop_shfl_xor(CgCoop *c, CgVar dst, CgVar src, LLVMValueRef mask);

/* Combine n values: acc[k] = acc[k] (+) other[k]. Called inside a phase. The result
 * must not depend on which of the two is acc (commutative), and bitwise so for
 * floats (a + b == b + a holds), so every thread of a group ends with the same bits. */
typedef void (*CgCombine)(CgCoop *c, LLVMValueRef *acc, const LLVMValueRef *other,
			  void *ctx);

/* Reduce the n variables v[] over groups of `group` consecutive threads (linear tid;
 * group: a uniform i64 power of two, at most the block's threads): afterwards every
 * thread of a group holds its group's combined values. The tree is fixed by group
 * alone: butterfly shuffles over min(group, 32) lanes (masks 1, 2, 4, ...), then, for
 * groups wider than a warp, one value per warp through shared memory, combined by
 * every thread in warp order. n <= 4. */
void cg_coop_group_reduce(CgCoop *c, CgVar *v, int n, LLVMValueRef group,
			  CgCombine combine, void *ctx);

#endif
