/* math.h: the one table-driven place where float math becomes LLVM IR.
 *
 * LLVM 19's NVPTX backend cannot select llvm.exp/log/sin/cos/tanh/pow, so every
 * transcendental op is lowered here, through a table in math.c that names, for
 * each OpKind, how f32 and f64 are computed. The default lowering is portable
 * LLVM IR (range reduction + polynomials with llvm.fma, plus llvm.fabs, floor,
 * ceil, trunc, rint, sqrt, copysign, minnum/maxnum), which both NVPTX and the
 * host JIT select, so host tests check the very math a GPU runs. With
 * CgMath.libdevice (GPU only) the precise __nv_* functions of a linked
 * libdevice are called instead. docs/math.md has the accuracy table.
 *
 * In:  a builder positioned where the value is needed, and the value(s).
 * Out: a value of the same type (f32 or f64); OP_IS_NAN / OP_IS_INF give i1.
 *      f16/bf16 are the caller's business: extend to f32, call, truncate.
 * Memory: helper functions (when a lowering is large) are added to m->mod with
 *      internal linkage, once per module and type, named "fusec.math.*".
 *      Nothing is allocated that the caller must free. */
#ifndef FUSEC_CG_MATH_H
#define FUSEC_CG_MATH_H

#include <stdbool.h>

#include <llvm-c/Core.h>

#include "../ir/ir.h"

typedef struct {
	LLVMContextRef ctx;
	LLVMModuleRef mod;
	LLVMBuilderRef b;     /* positioned where the value is needed */
	bool gpu;             /* true: NVPTX target (may use NVVM intrinsics / inline PTX); false: host */
	bool libdevice;       /* true: call __nv_* functions from linked libdevice (GPU only) */
} CgMath;

/* Ops with one float operand: OP_EXP OP_LOG OP_LOG1P OP_SQRT OP_RECIP OP_SIN
 * OP_COS OP_TANH OP_ERF OP_FLOOR OP_CEIL OP_ROUND (half to even) OP_TRUNC
 * OP_SIGMOID OP_SILU OP_GELU (approx: GELU_NONE x·Φ(x) via erf, GELU_TANH)
 * OP_ABS OP_SIGN OP_NEG OP_RELU OP_IS_NAN OP_IS_INF (i1 result).
 * x is a float or double value; returns the same type. approx is read by OP_GELU only.
 * An op the table does not hold is an internal bug (die). */
LLVMValueRef cg_math_unary(CgMath *m, OpKind op, LLVMValueRef x, GeluApprox approx);
/* exp(x) for an f32 x whose result is rounded to f16 or bf16 where it is made: a
 * shorter form on the GPU (math.c has its error; docs/math.md). */
LLVMValueRef cg_math_exp_half(CgMath *m, LLVMValueRef x);
/* exp(a - b) for f32 a, b whose result is rounded to a half type (or tf32) before
 * it is used: on the GPU one ex2.approx of fma(a, log2 e, -b log2 e) (docs/math.md). */
LLVMValueRef cg_math_exp_diff_half(CgMath *m, LLVMValueRef a, LLVMValueRef b);
/* gelu (the erf form) of an f32 x whose result is rounded to f16 or bf16 where it is
 * made: a shorter form, on the GPU and the host alike (math.c has its error;
 * docs/math.md). */
LLVMValueRef cg_math_gelu_half(CgMath *m, LLVMValueRef x);
/* OP_SIGMOID, OP_SILU or OP_GELU (the tanh form) of an f32 x whose result is rounded
 * to f16 or bf16 where it is made: one exp and one reciprocal, approximate on the GPU
 * (math.c, sigmoid_half, has the error; docs/math.md). */
LLVMValueRef cg_math_act_half(CgMath *m, OpKind op, LLVMValueRef x);
/* Ops with two float operands: OP_POW, OP_POWF, OP_POW_SCALAR (x^y, C pow
 * semantics for specials) and OP_REM, OP_REM_SCALAR (x - y*floor(x/y): the
 * result has the sign of y, like torch.remainder). For the _SCALAR ops, y is
 * the scalar already converted to x's type. */
LLVMValueRef cg_math_binary(CgMath *m, OpKind op, LLVMValueRef x, LLVMValueRef y);
/* True for the ops this table lowers (those listed above). */
bool cg_math_supports(OpKind op);
/* Link libdevice (a .bc path) into mod and internalize its functions, for
 * libdevice mode. Call after the kernels are built (only referenced __nv_*
 * functions survive the optimizer). Returns 0, or -1 with d. */
int cg_math_link_libdevice(LLVMModuleRef mod, const char *path, Diag *d);
/* Auto-detect libdevice under /usr/local/cuda*\/nvvm/libdevice (also $CUDA_HOME,
 * $CUDA_PATH); NULL if none. The string is static. */
const char *cg_math_find_libdevice(void);

#endif
