/* jit.h: compile LLVM IR for the host CPU with ORC LLJIT, so tests can run the
 * numbers of generated kernels on a machine without a GPU.
 *
 * In:  an LLVMModuleRef built with host-safe IR (for math: CgMath.gpu = false;
 *      no NVVM intrinsics, no inline PTX, no address spaces other than 0).
 * Out: addresses of the module's functions, callable from C.
 * Memory: cg_jit_add_module takes ownership of the module AND its context
 *      (the module is copied into a context owned by the JIT through bitcode,
 *      because LLVM 19's C API cannot wrap an existing LLVMContext in a
 *      ThreadSafeContext; the given module and context are disposed, even on
 *      error). Code and data stay valid until cg_jit_free.
 *
 * What add_module does to the module, in order: sets the host target triple
 * and data layout (any triple already there, nvptx64 included, is replaced),
 * verifies it, runs the new pass manager pipeline (default<O2> unless
 * cg_jit_set_passes says otherwise; "" runs none), then hands it to LLJIT.
 * Functions must have external linkage to be found by cg_jit_lookup, by their
 * plain IR name (no leading underscore needed). Calls to libm (fma, expf ...)
 * resolve against the running process.
 *
 * Errors are returned as a Diag (file "jit"); nothing is printed or exited on. */
#ifndef FUSEC_CG_JIT_H
#define FUSEC_CG_JIT_H

#include <llvm-c/Core.h>

#include "../support/support.h"

typedef struct CgJit CgJit;

/* Initialize the native target (once per process) and create an LLJIT.
 * Returns NULL and fills *d on failure. */
CgJit *cg_jit_new(Diag *d);
/* The same, with the host's code generated for compile speed: no optimization
 * pipeline by default ("default<O0>") and instruction selection and register
 * allocation at LLVMCodeGenLevelNone. The code it runs computes the same values
 * (no pass here changes floating-point results), more slowly. */
CgJit *cg_jit_new_quick(Diag *d);
/* Optimization pipeline run by the next cg_jit_add_module calls, in opt's
 * -passes syntax ("default<O3>"); "" or NULL runs no pass. The string is copied. */
void cg_jit_set_passes(CgJit *j, const char *passes);
/* Add a module; takes ownership of mod and ctx (both disposed here). 0 or -1 with d. */
int cg_jit_add_module(CgJit *j, LLVMModuleRef mod, LLVMContextRef ctx, Diag *d);
/* Address of a function or global of an added module; NULL with d if not found. */
void *cg_jit_lookup(CgJit *j, const char *name, Diag *d);
/* The host triple the JIT compiles for ("x86_64-pc-linux-gnu"). */
const char *cg_jit_triple(const CgJit *j);
void cg_jit_free(CgJit *j);

#endif
