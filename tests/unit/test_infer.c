/* test_infer.c: ir_infer on hand-built graphs, independent of the readers.
 *
 * One table holds every case: an op kind, its attributes, its operands written as
 * "f32[64,64]", and either the expected result ("bool[4,5]") or the exact error
 * message. Every op of the table (sync aside) must have a passing case, so an op
 * added to ops.def without a case here fails test_every_op_has_a_case. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

typedef struct {
	OpKind kind;
	const Attrs *attr;     /* NULL: the op carries no attributes */
	bool err;              /* want is an error message, not a result */
	const char *want;      /* "f32[8,4]" or the exact message */
	const char *in[4];     /* operands, "dtype[d0,d1,...]"; "[]" is rank 0 */
} Case;

#define OK(k, a, w, ...) {k, a, false, w, {__VA_ARGS__}}
#define ERR(k, a, m, ...) {k, a, true, m, {__VA_ARGS__}}

#define SCALAR (&(Attrs){.has = A_SCALAR, .scalar = 2.0})
#define AXIS(v) (&(Attrs){.has = A_AXIS, .axis = (v)})
#define SHAPE(n_, ...) (&(Attrs){.has = A_SHAPE, .n = (n_), .shape = {__VA_ARGS__}})
#define AXES(n_, ...) (&(Attrs){.has = A_AXES, .n = (n_), .axes = {__VA_ARGS__}})
#define DIMS(i, j) (&(Attrs){.has = A_DIMS, .n = 2, .axes = {(i), (j)}})
#define RANGES(n_, ...) (&(Attrs){.has = A_RANGES, .n = (n_), .range = {__VA_ARGS__}})
#define CAST(t) (&(Attrs){.has = A_DTYPE, .dtype = (t)})
#define CONV(...) (&(Attrs){.has = A_STRIDE | A_PADDING | A_DILATION | A_GROUPS, __VA_ARGS__})
#define POOL(...) (&(Attrs){.has = A_KERNEL | A_STRIDE | A_PADDING, __VA_ARGS__})

#define BIG "4294967296"
#define HUGE "4611686018427387904"

static const Case cases[] = {
	/* binary elementwise */
	OK(OP_ADD, NULL, "f32[64,64]", "f32[64,64]", "f32[64,64]"),
	OK(OP_ADD, NULL, "f32[64,64]", "f32[1,64]", "f32[64,1]"),
	OK(OP_SUB, NULL, "i32[2,3,4]", "i32[2,1,4]", "i32[1,3,1]"),
	OK(OP_MUL, NULL, "f16[]", "f16[]", "f16[]"),
	OK(OP_DIV, NULL, "f64[8,8]", "f64[8,1]", "f64[1,8]"),
	OK(OP_REM, NULL, "i64[5]", "i64[5]", "i64[5]"),
	OK(OP_POW, NULL, "f32[3]", "f32[3]", "f32[1]"),
	OK(OP_MAX, NULL, "u8[4,4]", "u8[4,4]", "u8[4,4]"),
	OK(OP_MIN, NULL, "i8[2,4]", "i8[2,1]", "i8[1,4]"),
	OK(OP_POWF, NULL, "bf16[2,2]", "bf16[2,2]", "bf16[2,2]"),
	ERR(OP_ADD, NULL, "shapes [64,64] and [32,64] do not broadcast", "f32[64,64]", "f32[32,64]"),
	ERR(OP_MUL, NULL, "shapes [2,3] and [3,2] do not broadcast", "f32[2,3]", "f32[3,2]"),
	ERR(OP_ADD, NULL, "ranks 2 and 3 differ ([4,4] and [1,4,4]); operands broadcast only at the same rank: reshape the [4,4] operand to [1,4,4] first", "f32[4,4]", "f32[1,4,4]"),
	ERR(OP_ADD, NULL, "ranks 0 and 1 differ ([] and [1]); operands broadcast only at the same rank: reshape the [] operand to [1] first", "f32[]", "f32[1]"),
	ERR(OP_SUB, NULL, "dtypes f32 and i32 differ", "f32[4]", "i32[4]"),
	ERR(OP_ADD, NULL, "op needs a numeric tensor, got bool", "bool[2]", "bool[2]"),
	ERR(OP_POWF, NULL, "op needs a float tensor, got i32", "i32[2]", "i32[2]"),
	ERR(OP_ADD, NULL, "needs 2 inputs, got 1", "f32[2]"),
	ERR(OP_ADD, NULL, "output shape [" BIG "," BIG "] has too many elements",
	    "f32[1," BIG "]", "f32[" BIG ",1]"),

	/* scalar elementwise and clamp */
	OK(OP_ADD_SCALAR, SCALAR, "f32[4,4]", "f32[4,4]"),
	OK(OP_SUB_SCALAR, SCALAR, "i32[3]", "i32[3]"),
	OK(OP_MUL_SCALAR, SCALAR, "u8[2,5]", "u8[2,5]"),
	OK(OP_DIV_SCALAR, SCALAR, "f16[]", "f16[]"),
	OK(OP_REM_SCALAR, SCALAR, "i64[7]", "i64[7]"),
	OK(OP_POW_SCALAR, SCALAR, "f64[1,2,3]", "f64[1,2,3]"),
	OK(OP_CLAMP, (&(Attrs){.has = A_MIN | A_MAX, .min = -1, .max = 1}), "f32[8]", "f32[8]"),
	OK(OP_CLAMP_MIN, (&(Attrs){.has = A_MIN}), "i16[8]", "i16[8]"),
	OK(OP_CLAMP_MAX, (&(Attrs){.has = A_MAX}), "bf16[8]", "bf16[8]"),
	ERR(OP_MUL_SCALAR, SCALAR, "op needs a numeric tensor, got bool", "bool[3]"),
	ERR(OP_CLAMP, NULL, "missing attribute 'min'", "f32[8]"),
	ERR(OP_CLAMP, (&(Attrs){.has = A_MIN}), "missing attribute 'max'", "f32[8]"),
	ERR(OP_ADD_SCALAR, NULL, "missing attribute 'scalar'", "f32[8]"),

	/* comparisons */
	OK(OP_EQ, NULL, "bool[4,5]", "f32[4,1]", "f32[1,5]"),
	OK(OP_NE, NULL, "bool[3]", "i32[3]", "i32[3]"),
	OK(OP_LT, NULL, "bool[2,2]", "u8[2,2]", "u8[2,1]"),
	OK(OP_LE, NULL, "bool[2]", "f64[2]", "f64[2]"),
	OK(OP_GT, NULL, "bool[]", "f16[]", "f16[]"),
	OK(OP_GE, NULL, "bool[6,1]", "i64[6,1]", "i64[1,1]"),
	OK(OP_EQ, NULL, "bool[3]", "bool[3]", "bool[3]"),
	ERR(OP_LT, NULL, "dtypes f32 and f64 differ", "f32[3]", "f64[3]"),
	ERR(OP_GT, NULL, "shapes [3] and [4] do not broadcast", "f32[3]", "f32[4]"),
	ERR(OP_EQ, NULL, "ranks 1 and 2 differ ([3] and [1,3]); operands broadcast only at the same rank: reshape the [3] operand to [1,3] first", "f32[3]", "f32[1,3]"),
	OK(OP_EQ_SCALAR, SCALAR, "bool[4]", "f32[4]"),
	OK(OP_NE_SCALAR, SCALAR, "bool[4]", "i32[4]"),
	OK(OP_LT_SCALAR, SCALAR, "bool[2,3]", "u8[2,3]"),
	OK(OP_LE_SCALAR, SCALAR, "bool[]", "f16[]"),
	OK(OP_GT_SCALAR, SCALAR, "bool[1]", "i8[1]"),
	OK(OP_GE_SCALAR, SCALAR, "bool[5]", "bool[5]"),

	/* unary math */
	OK(OP_NEG, NULL, "f32[4]", "f32[4]"),
	OK(OP_NEG, NULL, "i8[4]", "i8[4]"),
	ERR(OP_NEG, NULL, "op needs a signed tensor, got u8", "u8[4]"),
	ERR(OP_NEG, NULL, "op needs a signed tensor, got bool", "bool[4]"),
	OK(OP_ABS, NULL, "u8[4]", "u8[4]"),
	ERR(OP_ABS, NULL, "op needs a numeric tensor, got bool", "bool[4]"),
	OK(OP_SIGN, NULL, "i16[2,2]", "i16[2,2]"),
	OK(OP_EXP, NULL, "f32[64,64]", "f32[64,64]"),
	ERR(OP_EXP, NULL, "op needs a float tensor, got i32", "i32[4]"),
	OK(OP_LOG, NULL, "f16[3]", "f16[3]"),
	OK(OP_LOG1P, NULL, "bf16[3]", "bf16[3]"),
	OK(OP_SQRT, NULL, "f64[3]", "f64[3]"),
	OK(OP_RECIP, NULL, "f32[]", "f32[]"),
	OK(OP_SIN, NULL, "f32[1,1,1]", "f32[1,1,1]"),
	OK(OP_COS, NULL, "f32[2]", "f32[2]"),
	OK(OP_TANH, NULL, "f32[2]", "f32[2]"),
	OK(OP_ERF, NULL, "f32[2]", "f32[2]"),
	OK(OP_FLOOR, NULL, "f32[2]", "f32[2]"),
	OK(OP_CEIL, NULL, "f32[2]", "f32[2]"),
	OK(OP_ROUND, NULL, "f32[2]", "f32[2]"),
	OK(OP_TRUNC, NULL, "f32[2]", "f32[2]"),
	ERR(OP_FLOOR, NULL, "op needs a float tensor, got bool", "bool[2]"),
	OK(OP_IS_NAN, NULL, "bool[3,2]", "f32[3,2]"),
	OK(OP_IS_INF, NULL, "bool[3]", "f16[3]"),
	ERR(OP_IS_NAN, NULL, "op needs a float tensor, got i64", "i64[3]"),
	ERR(OP_EXP, NULL, "needs 1 input, got 2", "f32[2]", "f32[2]"),

	/* activations */
	OK(OP_RELU, NULL, "f32[8]", "f32[8]"),
	OK(OP_RELU, NULL, "i32[8]", "i32[8]"),
	ERR(OP_RELU, NULL, "op needs a signed tensor, got u8", "u8[8]"),
	OK(OP_SIGMOID, NULL, "f16[8]", "f16[8]"),
	OK(OP_SILU, NULL, "f32[8]", "f32[8]"),
	OK(OP_GELU, NULL, "f32[8]", "f32[8]"),
	OK(OP_GELU, (&(Attrs){.has = A_APPROX, .approx = GELU_TANH}), "bf16[8]", "bf16[8]"),
	ERR(OP_SILU, NULL, "op needs a float tensor, got i32", "i32[8]"),

	/* logic */
	OK(OP_AND, NULL, "bool[4,4]", "bool[4,1]", "bool[1,4]"),
	OK(OP_OR, NULL, "bool[3]", "bool[3]", "bool[3]"),
	OK(OP_XOR, NULL, "bool[]", "bool[]", "bool[]"),
	OK(OP_NOT, NULL, "bool[2,2]", "bool[2,2]"),
	ERR(OP_AND, NULL, "op needs a bool tensor, got f32", "f32[3]", "f32[3]"),
	ERR(OP_OR, NULL, "dtypes bool and i32 differ", "bool[3]", "i32[3]"),
	ERR(OP_NOT, NULL, "op needs a bool tensor, got i32", "i32[3]"),

	/* select */
	OK(OP_WHERE, NULL, "f32[4,5]", "bool[4,1]", "f32[1,5]", "f32[4,5]"),
	OK(OP_WHERE, NULL, "i32[4,5]", "bool[4,5]", "i32[4,1]", "i32[1,5]"),
	OK(OP_WHERE, NULL, "f16[2,3,6]", "bool[1,1,6]", "f16[2,1,1]", "f16[1,3,1]"),
	ERR(OP_WHERE, NULL, "mask must be bool, got f32", "f32[4]", "f32[4]", "f32[4]"),
	ERR(OP_WHERE, NULL, "dtypes f32 and f16 differ", "bool[4]", "f32[4]", "f16[4]"),
	ERR(OP_WHERE, NULL, "shapes [3,5] and [4,5] do not broadcast", "bool[3,5]", "f32[4,5]",
	    "f32[4,5]"),
	ERR(OP_WHERE, NULL, "shapes [1,5] and [1,6] do not broadcast", "bool[4,1]", "f32[1,5]",
	    "f32[1,6]"),
	ERR(OP_WHERE, NULL, "ranks 1 and 2 differ ([5] and [4,5]); operands broadcast only at the same rank: reshape the [5] operand to [1,5] first", "bool[5]", "f32[4,5]", "f32[4,5]"),
	OK(OP_MASK_FILL, SCALAR, "f32[4,8]", "f32[4,8]", "bool[4,8]"),
	OK(OP_MASK_FILL, SCALAR, "i32[4,8]", "i32[4,8]", "bool[1,8]"),
	OK(OP_MASK_FILL, SCALAR, "f32[]", "f32[]", "bool[]"),
	ERR(OP_MASK_FILL, SCALAR, "mask [4,8] does not broadcast to [4,1]", "f32[4,1]", "bool[4,8]"),
	ERR(OP_MASK_FILL, SCALAR, "mask must be bool, got i32", "f32[4]", "i32[4]"),
	ERR(OP_MASK_FILL, SCALAR, "ranks 2 and 1 differ", "f32[4,8]", "bool[8]"),

	/* cast */
	OK(OP_CAST, CAST(DT_I32), "i32[4,4]", "f32[4,4]"),
	OK(OP_CAST, CAST(DT_F16), "f16[3]", "bool[3]"),
	OK(OP_CAST, CAST(DT_BOOL), "bool[]", "u8[]"),
	ERR(OP_CAST, CAST(DT_COUNT), "unknown cast dtype 10", "f32[3]"),
	ERR(OP_CAST, NULL, "missing attribute 'dtype'", "f32[3]"),

	/* views */
	OK(OP_RESHAPE, SHAPE(2, 2, 12), "f32[2,12]", "f32[4,6]"),
	OK(OP_RESHAPE, SHAPE(2, -1, 3), "f32[8,3]", "f32[4,6]"),
	OK(OP_RESHAPE, SHAPE(3, 2, -1, 3), "i64[2,4,3]", "i64[4,6]"),
	OK(OP_RESHAPE, SHAPE(0), "f32[]", "f32[1,1]"),
	OK(OP_RESHAPE, SHAPE(2, 1, 1), "f32[1,1]", "f32[]"),
	OK(OP_RESHAPE, SHAPE(8, 1, 1, 1, 1, 1, 1, 2, -1), "f32[1,1,1,1,1,1,2,3]", "f32[6]"),
	ERR(OP_RESHAPE, SHAPE(2, 5, 5), "cannot reshape [4,6] into [5,5]", "f32[4,6]"),
	ERR(OP_RESHAPE, SHAPE(2, 5, -1), "cannot reshape [4,6] into [5,-1]", "f32[4,6]"),
	ERR(OP_RESHAPE, SHAPE(2, 4294967296LL, 4294967296LL),
	    "cannot reshape [4,6] into [" BIG "," BIG "]", "f32[4,6]"),
	ERR(OP_RESHAPE, SHAPE(2, -1, -1), "reshape shape [-1,-1] has more than one -1", "f32[4,6]"),
	ERR(OP_RESHAPE, SHAPE(2, 0, 24), "reshape shape [0,24] has an invalid dim 0", "f32[4,6]"),
	ERR(OP_RESHAPE, SHAPE(2, -2, -12), "reshape shape [-2,-12] has an invalid dim -2",
	    "f32[4,6]"),
	ERR(OP_RESHAPE, SHAPE(9), "reshape to rank 9; the most is 8", "f32[4,6]"),
	OK(OP_PERMUTE, AXES(3, 2, 0, 1), "f32[4,2,3]", "f32[2,3,4]"),
	OK(OP_PERMUTE, AXES(3, -1, 0, -2), "f32[4,2,3]", "f32[2,3,4]"),
	OK(OP_PERMUTE, AXES(0), "u8[]", "u8[]"),
	ERR(OP_PERMUTE, AXES(2, 1, 0), "permute needs 3 axes, got 2", "f32[2,3,4]"),
	ERR(OP_PERMUTE, AXES(3, 0, 0, 1), "axes repeat axis 0; they must be a permutation",
	    "f32[2,3,4]"),
	ERR(OP_PERMUTE, AXES(3, 0, -3, 1), "axes repeat axis 0; they must be a permutation",
	    "f32[2,3,4]"),
	ERR(OP_PERMUTE, AXES(3, 0, 1, 3), "axis 3 is out of range for rank 3", "f32[2,3,4]"),
	ERR(OP_PERMUTE, AXES(3, -4, 0, 1), "axis -4 is out of range for rank 3", "f32[2,3,4]"),
	OK(OP_SWAP_DIMS, DIMS(0, 2), "f32[4,3,2]", "f32[2,3,4]"),
	OK(OP_SWAP_DIMS, DIMS(-1, 0), "f32[4,3,2]", "f32[2,3,4]"),
	OK(OP_SWAP_DIMS, DIMS(1, 1), "f32[2,3,4]", "f32[2,3,4]"),
	ERR(OP_SWAP_DIMS, DIMS(0, 3), "axis 3 is out of range for rank 3", "f32[2,3,4]"),
	OK(OP_EXPAND, SHAPE(2, 4, 8), "f32[4,8]", "f32[4,1]"),
	OK(OP_EXPAND, SHAPE(3, 2, 5, 3), "i32[2,5,3]", "i32[1,1,3]"),
	OK(OP_EXPAND, SHAPE(2, 4, 1), "f32[4,1]", "f32[4,1]"),
	ERR(OP_EXPAND, SHAPE(2, 4, 8), "cannot expand [4,3] to [4,8]", "f32[4,3]"),
	ERR(OP_EXPAND, SHAPE(2, 1, 3), "cannot expand [4,3] to [1,3]", "f32[4,3]"),
	ERR(OP_EXPAND, SHAPE(3, 4, 8, 2), "cannot expand [4,1] to [4,8,2]: ranks 2 and 3 differ",
	    "f32[4,1]"),
	ERR(OP_EXPAND, SHAPE(2, 4, 0), "expand shape [4,0] has an invalid dim 0", "f32[4,1]"),
	ERR(OP_EXPAND, SHAPE(2, 4294967296LL, 4294967296LL),
	    "output shape [" BIG "," BIG "] has too many elements", "f32[1,1]"),
	OK(OP_SLICE, RANGES(1, {2, 5}), "f32[3,6]", "f32[8,6]"),
	OK(OP_SLICE, RANGES(2, {0, 8}, {1, 6}), "f32[8,5]", "f32[8,6]"),
	OK(OP_SLICE, RANGES(0), "f32[8,6]", "f32[8,6]"),
	ERR(OP_SLICE, RANGES(1, {2, 9}), "slice range [2,9] is out of bounds for dim 0 of size 8",
	    "f32[8,6]"),
	ERR(OP_SLICE, RANGES(2, {0, 8}, {-1, 2}),
	    "slice range [-1,2] is out of bounds for dim 1 of size 6", "f32[8,6]"),
	ERR(OP_SLICE, RANGES(1, {3, 3}), "slice range [3,3] of dim 0 is empty", "f32[8,6]"),
	ERR(OP_SLICE, RANGES(1, {4, 2}), "slice range [4,2] of dim 0 is empty", "f32[8,6]"),
	ERR(OP_SLICE, RANGES(3, {0, 1}, {0, 1}, {0, 1}), "slice has 3 ranges for rank 2",
	    "f32[8,6]"),

	/* reductions */
	OK(OP_SUM, AXIS(1), "f32[4,1]", "f32[4,8]"),
	OK(OP_SUM, AXIS(-1), "f32[4,1]", "f32[4,8]"),
	OK(OP_MEAN, AXIS(0), "f16[1,8]", "f16[4,8]"),
	OK(OP_PROD, AXIS(2), "i32[2,3,1]", "i32[2,3,4]"),
	OK(OP_MAX_DIM, AXIS(-3), "u8[1,3,4]", "u8[2,3,4]"),
	OK(OP_MIN_DIM, AXIS(0), "i64[1]", "i64[9]"),
	OK(OP_ARGMAX, AXIS(1), "i64[4,1]", "f32[4,8]"),
	OK(OP_ARGMIN, AXIS(0), "i64[1,8]", "i32[4,8]"),
	ERR(OP_SUM, AXIS(2), "axis 2 is out of range for rank 2", "f32[4,8]"),
	ERR(OP_MEAN, AXIS(3), "axis 3 is out of range for rank 2", "f32[4,8]"),
	ERR(OP_PROD, AXIS(-3), "axis -3 is out of range for rank 2", "f32[4,8]"),
	ERR(OP_SUM, AXIS(0), "axis 0 is out of range for rank 0", "f32[]"),
	ERR(OP_SUM, AXIS(0), "op needs a numeric tensor, got bool", "bool[4]"),
	ERR(OP_ARGMAX, AXIS(0), "op needs a numeric tensor, got bool", "bool[4]"),
	ERR(OP_MAX_DIM, NULL, "missing attribute 'axis'", "f32[4]"),

	/* attention: q, kt, v[, bias] */
	OK(OP_ATTENTION, SCALAR, "f32[2,3,8,5]", "f32[2,3,8,4]", "f32[2,1,4,6]", "f32[1,3,6,5]"),
	OK(OP_ATTENTION, SCALAR, "bf16[3,2]", "bf16[3,4]", "bf16[4,7]", "bf16[7,2]", "bf16[1,7]"),
	ERR(OP_ATTENTION, SCALAR, "attention dims differ: q [8,4], kt [5,6], v [6,2] (want "
	    "[..., M, D], [..., D, N], [..., N, E])", "f32[8,4]", "f32[5,6]", "f32[6,2]"),
	ERR(OP_ATTENTION, SCALAR, "attention bias [8,5] does not broadcast to the scores",
	    "f32[8,4]", "f32[4,6]", "f32[6,2]", "f32[8,5]"),
	ERR(OP_ATTENTION, SCALAR, "attention batch dims neither broadcast nor group: q [2,8,4], "
	    "kt [3,4,6], v [1,6,2]", "f32[2,8,4]", "f32[3,4,6]", "f32[1,6,2]"),
	/* grouped (grouped-query attention): kt's and v's 2 heads under q's 6 */
	OK(OP_ATTENTION, SCALAR, "f32[6,8,2]", "f32[6,8,4]", "f32[2,4,6]", "f32[2,6,2]"),
	ERR(OP_ATTENTION, SCALAR, "attention batch dims neither broadcast nor group: q [6,8,4], "
	    "kt [4,4,6], v [4,6,2]", "f32[6,8,4]", "f32[4,4,6]", "f32[4,6,2]"),
	ERR(OP_ATTENTION, SCALAR, "op needs a float tensor, got i32", "i32[2,2]", "i32[2,2]",
	    "i32[2,2]"),
	ERR(OP_ATTENTION, NULL, "missing attribute 'scalar'", "f32[2,2]", "f32[2,2]", "f32[2,2]"),
	ERR(OP_ATTENTION, SCALAR, "attention with a bool mask needs attribute 'min' (the score "
	    "where the mask is true)", "f32[8,4]", "f32[4,6]", "f32[6,2]", "bool[8,6]"),
	ERR(OP_ATTENTION, SCALAR, "dtypes f32 and i32 differ", "f32[8,4]", "f32[4,6]", "f32[6,2]",
	    "i32[8,6]"),

	/* matmul */
	OK(OP_MATMUL, NULL, "f32[8,4]", "f32[8,16]", "f32[16,4]"),
	OK(OP_MATMUL, NULL, "f32[2,3,8,4]", "f32[2,1,8,16]", "f32[1,3,16,4]"),
	OK(OP_MATMUL, NULL, "f16[5,1,1]", "f16[5,1,7]", "f16[5,7,1]"),
	OK(OP_MATMUL, NULL, "i32[2,2]", "i32[2,3]", "i32[3,2]"),
	ERR(OP_MATMUL, NULL, "matmul inner dims differ: [8,16] x [32,4]", "f32[8,16]", "f32[32,4]"),
	ERR(OP_MATMUL, NULL, "matmul needs rank 2 or more, got [16] x [16,4]", "f32[16]",
	    "f32[16,4]"),
	ERR(OP_MATMUL, NULL, "ranks 2 and 3 differ", "f32[8,16]", "f32[1,16,4]"),
	ERR(OP_MATMUL, NULL, "matmul batch dims do not broadcast: [2,8,16] x [3,16,4]",
	    "f32[2,8,16]", "f32[3,16,4]"),
	ERR(OP_MATMUL, NULL, "dtypes f32 and f16 differ", "f32[2,2]", "f16[2,2]"),
	ERR(OP_MATMUL, NULL, "op needs a numeric tensor, got bool", "bool[2,2]", "bool[2,2]"),
	ERR(OP_MATMUL, NULL, "output shape [" BIG "," BIG "] has too many elements",
	    "f32[" BIG ",1]", "f32[1," BIG "]"),

	/* joins */
	OK(OP_CAT, AXIS(0), "f32[2,4]", "f32[2,4]"),
	OK(OP_CAT, AXIS(0), "f32[6,4]", "f32[2,4]", "f32[3,4]", "f32[1,4]"),
	OK(OP_CAT, AXIS(-1), "i32[2,8]", "i32[2,3]", "i32[2,5]"),
	OK(OP_CAT, AXIS(1), "bool[2,4,3]", "bool[2,1,3]", "bool[2,1,3]", "bool[2,1,3]",
	   "bool[2,1,3]"),
	ERR(OP_CAT, AXIS(0), "shapes [2,4] and [2,5] differ outside axis 0", "f32[2,4]", "f32[2,5]"),
	ERR(OP_CAT, AXIS(0), "dtypes f32 and i32 differ", "f32[2,4]", "i32[2,4]"),
	ERR(OP_CAT, AXIS(0), "ranks 2 and 1 differ", "f32[2,4]", "f32[4]"),
	ERR(OP_CAT, AXIS(2), "axis 2 is out of range for rank 2", "f32[2,4]", "f32[2,4]"),
	ERR(OP_CAT, AXIS(0), "needs at least 1 input, got 0", NULL),
	ERR(OP_CAT, AXIS(0), "cat size along axis 0 overflows int64", "f32[" HUGE "]",
	    "f32[" HUGE "]"),
	OK(OP_GATHER, AXIS(1), "f32[4,3]", "f32[4,8]", "i64[4,3]"),
	OK(OP_GATHER, AXIS(0), "i32[10,8]", "i32[4,8]", "i32[10,8]"),
	OK(OP_GATHER, AXIS(-1), "f16[2,5]", "f16[4,8]", "i32[2,5]"),
	ERR(OP_GATHER, AXIS(1), "index must be i32 or i64, got f32", "f32[4,8]", "f32[4,3]"),
	ERR(OP_GATHER, AXIS(1), "index must be i32 or i64, got u8", "f32[4,8]", "u8[4,3]"),
	ERR(OP_GATHER, AXIS(1), "index [5,3] does not fit [4,8] outside axis 1", "f32[4,8]",
	    "i64[5,3]"),
	ERR(OP_GATHER, AXIS(1), "ranks 2 and 1 differ", "f32[4,8]", "i64[3]"),
	ERR(OP_GATHER, AXIS(-3), "axis -3 is out of range for rank 2", "f32[4,8]", "i64[4,3]"),

	/* conv2d */
	OK(OP_CONV2D, NULL, "f32[1,8,30,30]", "f32[1,3,32,32]", "f32[8,3,3,3]"),
	OK(OP_CONV2D, CONV(.padding = {1, 1}), "f32[1,8,32,32]", "f32[1,3,32,32]", "f32[8,3,3,3]"),
	OK(OP_CONV2D, CONV(.stride = {2, 2}, .padding = {1, 1}), "f32[1,8,16,16]",
	   "f32[1,3,32,32]", "f32[8,3,3,3]"),
	OK(OP_CONV2D, CONV(.dilation = {2, 2}), "f32[1,8,28,28]", "f32[1,3,32,32]",
	   "f32[8,3,3,3]"),
	OK(OP_CONV2D, CONV(.stride = {2, 1}), "f32[1,8,4,5]", "f32[1,3,9,9]", "f32[8,3,3,5]"),
	OK(OP_CONV2D, CONV(.groups = 2), "f16[2,6,8,8]", "f16[2,4,10,10]", "f16[6,2,3,3]"),
	OK(OP_CONV2D, CONV(.groups = 4, .padding = {1, 1}), "f32[1,4,5,5]", "f32[1,4,5,5]",
	   "f32[4,1,3,3]"),
	OK(OP_CONV2D, CONV(.stride = {1, 1}, .dilation = {1, 1}, .groups = 1), "f64[1,8,30,30]",
	   "f64[1,3,32,32]", "f64[8,3,3,3]", "f64[8]"),
	OK(OP_CONV2D, CONV(.stride = {3, 3}, .padding = {2, 0}, .dilation = {2, 3}),
	   "f32[1,2,3,1]", "f32[1,1,7,7]", "f32[2,1,3,3]"),
	ERR(OP_CONV2D, NULL, "op needs a float tensor, got i32", "i32[1,3,8,8]", "i32[8,3,3,3]"),
	ERR(OP_CONV2D, NULL, "dtypes f32 and f16 differ", "f32[1,3,8,8]", "f16[8,3,3,3]"),
	ERR(OP_CONV2D, NULL, "dtypes f32 and f16 differ", "f32[1,3,8,8]", "f32[8,3,3,3]",
	    "f16[8]"),
	ERR(OP_CONV2D, NULL, "input must have rank 4, got [3,32,32]", "f32[3,32,32]",
	    "f32[8,3,3,3]"),
	ERR(OP_CONV2D, NULL, "weight must have rank 4, got [8,3,3]", "f32[1,3,8,8]", "f32[8,3,3]"),
	ERR(OP_CONV2D, CONV(.groups = 2), "input channels 3 are not divisible by groups 2",
	    "f32[1,3,8,8]", "f32[8,3,3,3]"),
	ERR(OP_CONV2D, CONV(.groups = 2), "output channels 3 are not divisible by groups 2",
	    "f32[1,4,8,8]", "f32[3,2,3,3]"),
	ERR(OP_CONV2D, NULL, "weight [8,4,3,3] needs 3 channels per group (input [1,3,8,8], groups 1)",
	    "f32[1,3,8,8]", "f32[8,4,3,3]"),
	ERR(OP_CONV2D, NULL, "bias must be [8], got [4]", "f32[1,3,8,8]", "f32[8,3,3,3]", "f32[4]"),
	ERR(OP_CONV2D, NULL,
	    "input [1,3,2,2] is too small for weight [8,3,3,3] with padding [0,0] and dilation [1,1]",
	    "f32[1,3,2,2]", "f32[8,3,3,3]"),
	ERR(OP_CONV2D, CONV(.dilation = {4, 1}),
	    "input [1,3,8,8] is too small for weight [8,3,3,3] with padding [0,0] and dilation [4,1]",
	    "f32[1,3,8,8]", "f32[8,3,3,3]"),
	ERR(OP_CONV2D, CONV(.stride = {-1, 1}), "stride [-1,1] must be positive", "f32[1,3,8,8]",
	    "f32[8,3,3,3]"),
	ERR(OP_CONV2D, CONV(.padding = {0, -1}), "padding [0,-1] must not be negative",
	    "f32[1,3,8,8]", "f32[8,3,3,3]"),
	ERR(OP_CONV2D, CONV(.groups = -2), "groups must be positive, got -2", "f32[1,3,8,8]",
	    "f32[8,3,3,3]"),
	ERR(OP_CONV2D, NULL, "needs 2 to 3 inputs, got 1", "f32[1,3,8,8]"),

	/* pools */
	OK(OP_MAX_POOL2D, POOL(.kernel = {2, 2}), "f32[1,3,4,4]", "f32[1,3,8,8]"),
	OK(OP_MAX_POOL2D, POOL(.kernel = {3, 3}, .stride = {2, 2}), "f32[1,3,3,3]", "f32[1,3,8,8]"),
	OK(OP_AVG_POOL2D, POOL(.kernel = {3, 3}, .stride = {1, 1}, .padding = {1, 1}),
	   "f16[2,3,8,8]", "f16[2,3,8,8]"),
	OK(OP_AVG_POOL2D, POOL(.kernel = {2, 4}, .stride = {2, 1}, .padding = {1, 2}),
	   "f32[1,1,5,11]", "f32[1,1,8,10]"),
	ERR(OP_MAX_POOL2D, POOL(.kernel = {3, 3}, .padding = {2, 0}),
	    "padding [2,0] is more than half of kernel [3,3]", "f32[1,3,8,8]"),
	ERR(OP_AVG_POOL2D, POOL(.kernel = {0, 2}), "kernel [0,2] must be positive", "f32[1,3,8,8]"),
	ERR(OP_AVG_POOL2D, POOL(.kernel = {2, 2}, .stride = {1, -1}), "stride [1,-1] must be positive",
	    "f32[1,3,8,8]"),
	ERR(OP_MAX_POOL2D, POOL(.kernel = {3, 3}),
	    "input [1,1,2,2] is too small for kernel [3,3] with padding [0,0]", "f32[1,1,2,2]"),
	ERR(OP_MAX_POOL2D, POOL(.kernel = {2, 2}), "input must have rank 4, got [8,8]", "f32[8,8]"),
	ERR(OP_AVG_POOL2D, POOL(.kernel = {2, 2}), "op needs a float tensor, got i32",
	    "i32[1,3,8,8]"),
	ERR(OP_MAX_POOL2D, NULL, "missing attribute 'kernel'", "f32[1,3,8,8]"),
};

/* Parse "f32[64,64]" into t; fails the test on a malformed spec. */
static void parse_tensor(const char *spec, Tensor *t)
{
	char name[8];
	const char *br = strchr(spec, '[');
	if (!br || (size_t)(br - spec) >= sizeof name)
		fail_msg("bad tensor spec '%s'", spec);
	memcpy(name, spec, (size_t)(br - spec));
	name[br - spec] = 0;
	memset(t, 0, sizeof *t);
	t->name = spec;
	t->producer = -1;
	t->last_read = -1;
	if (ir_dtype_parse(name, &t->dtype))
		fail_msg("bad dtype in '%s'", spec);
	const char *p = br + 1;
	while (*p != ']') {
		char *end;
		if (t->rank == IR_MAX_RANK)
			fail_msg("too many dims in '%s'", spec);
		t->dim[t->rank++] = strtoll(p, &end, 10);
		if (end == p)
			fail_msg("bad dim in '%s'", spec);
		p = *end == ',' ? end + 1 : end;
	}
}

static void format_tensor(const Tensor *t, char *buf, size_t size)
{
	size_t n = (size_t)snprintf(buf, size, "%s[", ir_dtype_name(t->dtype));
	for (int i = 0; i < t->rank && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, i ? ",%lld" : "%lld", (long long)t->dim[i]);
	if (n < size)
		snprintf(buf + n, size - n, "]");
}

/* A graph holding the operands of one op; tensors[nin] is the output slot. */
typedef struct {
	Graph g;
	Tensor tensors[8];
	int in[8];
	Op op;
	Attrs attr;
} Harness;

static void harness_init(Harness *h, OpKind kind, const Attrs *attr, const char *const *in,
			 int nin)
{
	memset(h, 0, sizeof *h);
	for (int i = 0; i < nin; i++) {
		parse_tensor(in[i], &h->tensors[i]);
		h->in[i] = i;
	}
	h->g.tensors = h->tensors;
	h->g.ntensors = nin + 1;
	h->g.file = "test";
	h->op.kind = kind;
	h->op.nin = nin;
	h->op.nout = kind == OP_SYNC ? 0 : 1;
	h->op.in = h->in;
	h->op.out[0] = nin;
	if (attr) {
		h->attr = *attr;
		h->op.attr = &h->attr;
	}
}

static int run_case(Harness *h, char *msg, size_t size)
{
	Attrs *attr = h->op.attr ? &h->attr : NULL;
	return ir_infer(&h->g, &h->op, attr, &h->tensors[h->op.nin], msg, size);
}

static int count_inputs(const Case *c)
{
	int n = 0;
	while (n < 4 && c->in[n])
		n++;
	return n;
}

static void test_cases(void **state)
{
	(void)state;
	int bad = 0;
	for (size_t i = 0; i < SUITE_COUNT(cases); i++) {
		const Case *c = &cases[i];
		Harness h;
		char msg[256] = "", got[256];
		harness_init(&h, c->kind, c->attr, c->in, count_inputs(c));
		int rc = run_case(&h, msg, sizeof msg);
		if (rc == 0)
			format_tensor(&h.tensors[h.op.nin], got, sizeof got);
		else
			snprintf(got, sizeof got, "%s", msg);
		if ((rc != 0) != c->err || strcmp(got, c->want)) {
			print_error("case %zu (%s): want %s '%s', got %s '%s'\n", i,
				    ir_ops[c->kind].file, c->err ? "error" : "result", c->want,
				    rc ? "error" : "result", got);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

static void test_every_op_has_a_case(void **state)
{
	(void)state;
	bool covered[OP_COUNT] = {false};
	for (size_t i = 0; i < SUITE_COUNT(cases); i++)
		if (!cases[i].err)
			covered[cases[i].kind] = true;
	int missing = 0;
	for (int k = 0; k < OP_COUNT; k++)
		if (k != OP_SYNC && !covered[k]) {
			print_error("op '%s' has no passing case in test_infer.c\n", ir_ops[k].file);
			missing++;
		}
	assert_int_equal(missing, 0);
}

static void test_sync_leaves_output_alone(void **state)
{
	(void)state;
	Harness h;
	harness_init(&h, OP_SYNC, NULL, NULL, 0);
	Tensor *out = &h.tensors[0];
	out->dtype = DT_I8;
	out->rank = 3;
	out->dim[0] = 77;
	char msg[64];
	assert_int_equal(run_case(&h, msg, sizeof msg), 0);
	assert_int_equal(out->dtype, DT_I8);
	assert_int_equal(out->rank, 3);
	assert_int_equal(out->dim[0], 77);
}

static void test_error_leaves_output_alone(void **state)
{
	(void)state;
	Harness h;
	const char *in[] = {"f32[4,6]"};
	harness_init(&h, OP_RESHAPE, SHAPE(2, 5, 5), in, 1);
	Tensor *out = &h.tensors[1];
	out->dtype = DT_U8;
	out->rank = 1;
	out->dim[0] = 9;
	char msg[64];
	assert_int_equal(run_case(&h, msg, sizeof msg), -1);
	assert_int_equal(out->dtype, DT_U8);
	assert_int_equal(out->rank, 1);
	assert_int_equal(out->dim[0], 9);
}

static void test_axes_are_normalized(void **state)
{
	(void)state;
	Harness h;
	char msg[128];
	const char *x3[] = {"f32[2,3,4]"};

	harness_init(&h, OP_SUM, AXIS(-1), x3, 1);
	assert_int_equal(run_case(&h, msg, sizeof msg), 0);
	assert_int_equal(h.attr.axis, 2);

	harness_init(&h, OP_ARGMIN, AXIS(-3), x3, 1);
	assert_int_equal(run_case(&h, msg, sizeof msg), 0);
	assert_int_equal(h.attr.axis, 0);

	harness_init(&h, OP_PERMUTE, AXES(3, -1, 0, -2), x3, 1);
	assert_int_equal(run_case(&h, msg, sizeof msg), 0);
	assert_int_equal(h.attr.axes[0], 2);
	assert_int_equal(h.attr.axes[1], 0);
	assert_int_equal(h.attr.axes[2], 1);

	harness_init(&h, OP_SWAP_DIMS, DIMS(-3, -1), x3, 1);
	assert_int_equal(run_case(&h, msg, sizeof msg), 0);
	assert_int_equal(h.attr.axes[0], 0);
	assert_int_equal(h.attr.axes[1], 2);

	const char *two[] = {"f32[2,3,4]", "f32[2,3,5]"};
	harness_init(&h, OP_CAT, AXIS(-1), two, 2);
	assert_int_equal(run_case(&h, msg, sizeof msg), 0);
	assert_int_equal(h.attr.axis, 2);

	const char *gx[] = {"f32[4,8]", "i64[4,2]"};
	harness_init(&h, OP_GATHER, AXIS(-1), gx, 2);
	assert_int_equal(run_case(&h, msg, sizeof msg), 0);
	assert_int_equal(h.attr.axis, 1);

	harness_init(&h, OP_SUM, AXIS(1), x3, 1);
	assert_int_equal(run_case(&h, msg, sizeof msg), 0);
	assert_int_equal(h.attr.axis, 1);
}

static void test_module_defaults_are_written(void **state)
{
	(void)state;
	Harness h;
	char msg[128];
	const char *conv[] = {"f32[1,3,8,8]", "f32[8,3,3,3]"};
	harness_init(&h, OP_CONV2D, CONV(.padding = {1, 1}), conv, 2);
	assert_int_equal(run_case(&h, msg, sizeof msg), 0);
	assert_int_equal(h.attr.stride[0], 1);
	assert_int_equal(h.attr.stride[1], 1);
	assert_int_equal(h.attr.dilation[0], 1);
	assert_int_equal(h.attr.dilation[1], 1);
	assert_int_equal(h.attr.groups, 1);
	assert_int_equal(h.attr.padding[0], 1);

	const char *x[] = {"f32[1,3,8,8]"};
	harness_init(&h, OP_AVG_POOL2D, POOL(.kernel = {2, 4}, .stride = {0, 1}), x, 1);
	assert_int_equal(run_case(&h, msg, sizeof msg), 0);
	assert_int_equal(h.attr.stride[0], 2);
	assert_int_equal(h.attr.stride[1], 1);
	assert_int_equal(h.tensors[1].dim[2], 4);
	assert_int_equal(h.tensors[1].dim[3], 5);
}

static void test_message_truncates(void **state)
{
	(void)state;
	Harness h;
	const char *in[] = {"f32[64,64]", "f32[32,64]"};
	harness_init(&h, OP_ADD, NULL, in, 2);
	char msg[12];
	memset(msg, 'x', sizeof msg);
	assert_int_equal(run_case(&h, msg, 8), -1);
	assert_string_equal(msg, "shapes ");
	assert_int_equal(msg[8], 'x');
}

static void test_dims_past_rank_are_zero(void **state)
{
	(void)state;
	Harness h;
	const char *in[] = {"f32[2,3,4]"};
	harness_init(&h, OP_RESHAPE, SHAPE(1, 24), in, 1);
	Tensor *out = &h.tensors[1];
	for (int i = 0; i < IR_MAX_RANK; i++)
		out->dim[i] = 5;
	char msg[64];
	assert_int_equal(run_case(&h, msg, sizeof msg), 0);
	assert_int_equal(out->rank, 1);
	assert_int_equal(out->dim[0], 24);
	for (int i = 1; i < IR_MAX_RANK; i++)
		assert_int_equal(out->dim[i], 0);
}

const struct CMUnitTest infer_tests[] = {
	cmocka_unit_test(test_cases),
	cmocka_unit_test(test_every_op_has_a_case),
	cmocka_unit_test(test_sync_leaves_output_alone),
	cmocka_unit_test(test_error_leaves_output_alone),
	cmocka_unit_test(test_axes_are_normalized),
	cmocka_unit_test(test_module_defaults_are_written),
	cmocka_unit_test(test_message_truncates),
	cmocka_unit_test(test_dims_past_rank_are_zero),
};
const size_t infer_ntests = SUITE_COUNT(infer_tests);
