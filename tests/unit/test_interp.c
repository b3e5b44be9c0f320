/* test_interp.c: the reference interpreter, host tensors and .npy files.
 *
 * Every op of ops.def (but sync) has at least one case in `cases`: a one-op graph,
 * its input values and the output values worked out by hand (or, for permute and
 * matmul, by a plain loop here). test_every_op_has_an_interp_case fails when an op
 * is added without one. The rest checks dtype rounding (f16 and bf16 against
 * independent formulas), .npy round trips and rejected headers, and the PRNG. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"
#include "../../host/host.h"
#include "../../host/interp.h"

#define G(INPUTS, OP) "format: fusec-graph/1\ninputs: {" INPUTS "}\nops: [" OP "]\noutputs: [y]\n"
#define V(...) ((const double[]){__VA_ARGS__})
#define W(...) (int)(sizeof((const double[]){__VA_ARGS__}) / sizeof(double)), V(__VA_ARGS__), 0
#define WT(tol, ...) (int)(sizeof((const double[]){__VA_ARGS__}) / sizeof(double)), V(__VA_ARGS__), tol

#define F23 "a: {dtype: f32, shape: [2, 3]}"
#define F3(n) n ": {dtype: f32, shape: [3]}"
#define I4(n) n ": {dtype: i32, shape: [4]}"

typedef struct {
	OpKind kind;           /* the op this case covers */
	const char *yaml;
	const double *in[3];   /* values of the graph inputs, in order */
	const char *shape;     /* expected output dtype and shape, "f32[2,1]" */
	int nwant;
	const double *want;
	double tol;            /* 0: exact after rounding want to the output dtype */
} Case;

static const Case cases[] = {
	/* binary, with broadcasting */
	{OP_ADD, G(F23 ", b: {dtype: f32, shape: [1, 3]}", "{op: add, in: [a, b], out: y}"),
	 {V(1, 2, 3, 4, 5, 6), V(10, 20, 30)}, "f32[2,3]", W(11, 22, 33, 14, 25, 36)},
	{OP_SUB, G("a: {dtype: f32, shape: [2, 1]}, b: {dtype: f32, shape: [1, 3]}",
		   "{op: sub, in: [a, b], out: y}"),
	 {V(1, 2), V(10, 20, 30)}, "f32[2,3]", W(-9, -19, -29, -8, -18, -28)},
	{OP_MUL, G(F23 ", b: {dtype: f32, shape: [2, 3]}", "{op: mul, in: [a, b], out: y}"),
	 {V(1, 2, 3, 4, 5, 6), V(2, 2, 2, .5, .5, .5)}, "f32[2,3]", W(2, 4, 6, 2, 2.5, 3)},
	{OP_DIV, G(F3("a") ", " F3("b"), "{op: div, in: [a, b], out: y}"),
	 {V(1, 2, 3), V(2, 4, -8)}, "f32[3]", W(.5, .5, -.375)},
	{OP_DIV, G("a: {dtype: i32, shape: [5]}, b: {dtype: i32, shape: [5]}",
		   "{op: div, in: [a, b], out: y}"),
	 {V(7, -7, 7, -7, 5), V(2, 2, -2, -2, 0)}, "i32[5]", W(3, -3, -3, 3, 0)},
	{OP_REM, G("a: {dtype: f32, shape: [4]}, b: {dtype: f32, shape: [4]}",
		   "{op: rem, in: [a, b], out: y}"),
	 {V(5.5, -5.5, 5.5, -5.5), V(2, 2, -2, -2)}, "f32[4]", W(1.5, .5, -.5, -1.5)},
	{OP_REM, G(I4("a") ", " I4("b"), "{op: rem, in: [a, b], out: y}"),
	 {V(7, -7, 7, -7), V(3, 3, -3, -3)}, "i32[4]", W(1, 2, -2, -1)},
	{OP_POW, G(F3("a") ", " F3("b"), "{op: pow, in: [a, b], out: y}"),
	 {V(2, 9, 4), V(3, .5, -1)}, "f32[3]", W(8, 3, .25)},
	{OP_POW, G("a: {dtype: i32, shape: [6]}, b: {dtype: i32, shape: [6]}",
		   "{op: pow, in: [a, b], out: y}"),
	 {V(2, -3, 5, 1, -1, 2), V(10, 3, 0, -2, -3, -1)}, "i32[6]", W(1024, -27, 1, 1, -1, 0)},
	{OP_POW, G("a: {dtype: i8, shape: [1]}, b: {dtype: i8, shape: [1]}",
		   "{op: pow, in: [a, b], out: y}"),
	 {V(3), V(5)}, "i8[1]", W(-13)}, /* 243 wraps to -13 */
	{OP_MAX, G(F3("a") ", " F3("b"), "{op: max, in: [a, b], out: y}"),
	 {V(1, NAN, 3), V(2, 0, NAN)}, "f32[3]", W(2, NAN, NAN)},
	{OP_MAX, G("a: {dtype: i32, shape: [2]}, b: {dtype: i32, shape: [2]}",
		   "{op: max, in: [a, b], out: y}"),
	 {V(1, -5), V(2, -7)}, "i32[2]", W(2, -5)},
	{OP_MIN, G(F3("a") ", " F3("b"), "{op: min, in: [a, b], out: y}"),
	 {V(1, NAN, -3), V(2, 0, NAN)}, "f32[3]", W(1, NAN, NAN)},
	{OP_MIN, G("a: {dtype: i32, shape: [2]}, b: {dtype: i32, shape: [2]}",
		   "{op: min, in: [a, b], out: y}"),
	 {V(1, -5), V(2, -7)}, "i32[2]", W(1, -7)},
	{OP_POWF, G("a: {dtype: f32, shape: [2]}, b: {dtype: f32, shape: [2]}",
		    "{op: powf, in: [a, b], out: y}"),
	 {V(4, 2), V(.5, -2)}, "f32[2]", W(2, .25)},
	{OP_ADD, G("a: {dtype: i8, shape: [2]}, b: {dtype: i8, shape: [2]}",
		   "{op: add, in: [a, b], out: y}"),
	 {V(100, -100), V(100, -100)}, "i8[2]", W(-56, 56)},

	/* scalar */
	{OP_ADD_SCALAR, G(F3("a"), "{op: add_scalar, in: [a], scalar: 1.5, out: y}"),
	 {V(1, 2, -1.5)}, "f32[3]", W(2.5, 3.5, 0)},
	{OP_ADD_SCALAR, G(I4("a"), "{op: add_scalar, in: [a], scalar: 2.7, out: y}"),
	 {V(1, 2, -3, 0)}, "i32[4]", W(3, 4, -1, 2)},
	{OP_SUB_SCALAR, G(F3("a"), "{op: sub_scalar, in: [a], scalar: 0.5, out: y}"),
	 {V(1, 2, 0)}, "f32[3]", W(.5, 1.5, -.5)},
	{OP_MUL_SCALAR, G(F3("a"), "{op: mul_scalar, in: [a], scalar: 2.0, out: y}"),
	 {V(1, -2, .25)}, "f32[3]", W(2, -4, .5)},
	{OP_DIV_SCALAR, G(F3("a"), "{op: div_scalar, in: [a], scalar: 4.0, out: y}"),
	 {V(1, -2, 0)}, "f32[3]", W(.25, -.5, 0)},
	{OP_DIV_SCALAR, G(I4("a"), "{op: div_scalar, in: [a], scalar: 2, out: y}"),
	 {V(7, -7, 1, -1)}, "i32[4]", W(3, -3, 0, 0)},
	{OP_REM_SCALAR, G(F3("a"), "{op: rem_scalar, in: [a], scalar: 3, out: y}"),
	 {V(-1, 4, 3)}, "f32[3]", W(2, 1, 0)},
	{OP_REM_SCALAR, G(I4("a"), "{op: rem_scalar, in: [a], scalar: -3, out: y}"),
	 {V(-1, 4, 3, 7)}, "i32[4]", W(-1, -2, 0, -2)},
	{OP_POW_SCALAR, G(F3("a"), "{op: pow_scalar, in: [a], scalar: 2, out: y}"),
	 {V(3, -4, .5)}, "f32[3]", W(9, 16, .25)},

	/* clamp */
	{OP_CLAMP, G("a: {dtype: f32, shape: [4]}", "{op: clamp, in: [a], min: -1, max: 1, out: y}"),
	 {V(-2, .5, 3, NAN)}, "f32[4]", W(-1, .5, 1, NAN)},
	{OP_CLAMP, G(I4("a"), "{op: clamp, in: [a], min: -1, max: 1, out: y}"),
	 {V(-2, 0, 3, 1)}, "i32[4]", W(-1, 0, 1, 1)},
	{OP_CLAMP_MIN, G("a: {dtype: f32, shape: [2]}", "{op: clamp_min, in: [a], min: 0, out: y}"),
	 {V(-1, 2)}, "f32[2]", W(0, 2)},
	{OP_CLAMP_MAX, G("a: {dtype: f32, shape: [2]}", "{op: clamp_max, in: [a], max: 0, out: y}"),
	 {V(-1, 2)}, "f32[2]", W(-1, 0)},

	/* comparisons */
	{OP_EQ, G("a: {dtype: f32, shape: [4]}, b: {dtype: f32, shape: [4]}", "{op: eq, in: [a, b], out: y}"),
	 {V(1, 2, 3, NAN), V(2, 2, 2, NAN)}, "bool[4]", W(0, 1, 0, 0)},
	{OP_NE, G("a: {dtype: f32, shape: [4]}, b: {dtype: f32, shape: [4]}", "{op: ne, in: [a, b], out: y}"),
	 {V(1, 2, 3, NAN), V(2, 2, 2, NAN)}, "bool[4]", W(1, 0, 1, 1)},
	{OP_LT, G(F3("a") ", " F3("b"), "{op: lt, in: [a, b], out: y}"),
	 {V(1, 2, 3), V(2, 2, 2)}, "bool[3]", W(1, 0, 0)},
	{OP_LE, G(F3("a") ", " F3("b"), "{op: le, in: [a, b], out: y}"),
	 {V(1, 2, 3), V(2, 2, 2)}, "bool[3]", W(1, 1, 0)},
	{OP_GT, G(I4("a") ", " I4("b"), "{op: gt, in: [a, b], out: y}"),
	 {V(1, 2, 3, -9), V(2, 2, 2, -10)}, "bool[4]", W(0, 0, 1, 1)},
	{OP_GE, G(F3("a") ", " F3("b"), "{op: ge, in: [a, b], out: y}"),
	 {V(1, 2, 3), V(2, 2, 2)}, "bool[3]", W(0, 1, 1)},
	{OP_EQ_SCALAR, G(F3("a"), "{op: eq_scalar, in: [a], scalar: 2, out: y}"),
	 {V(1, 2, 3)}, "bool[3]", W(0, 1, 0)},
	{OP_NE_SCALAR, G(F3("a"), "{op: ne_scalar, in: [a], scalar: 2, out: y}"),
	 {V(1, 2, 3)}, "bool[3]", W(1, 0, 1)},
	{OP_LT_SCALAR, G(F3("a"), "{op: lt_scalar, in: [a], scalar: 2, out: y}"),
	 {V(1, 2, 3)}, "bool[3]", W(1, 0, 0)},
	{OP_LE_SCALAR, G(F3("a"), "{op: le_scalar, in: [a], scalar: 2, out: y}"),
	 {V(1, 2, 3)}, "bool[3]", W(1, 1, 0)},
	{OP_GT_SCALAR, G(F3("a"), "{op: gt_scalar, in: [a], scalar: 2, out: y}"),
	 {V(1, 2, 3)}, "bool[3]", W(0, 0, 1)},
	{OP_GE_SCALAR, G(I4("a"), "{op: ge_scalar, in: [a], scalar: 2, out: y}"),
	 {V(1, 2, 3, -2)}, "bool[4]", W(0, 1, 1, 0)},

	/* unary math */
	{OP_NEG, G("a: {dtype: f32, shape: [2]}", "{op: neg, in: [a], out: y}"),
	 {V(1, -2)}, "f32[2]", W(-1, 2)},
	{OP_NEG, G("a: {dtype: i8, shape: [2]}", "{op: neg, in: [a], out: y}"),
	 {V(3, -128)}, "i8[2]", W(-3, -128)},
	{OP_ABS, G("a: {dtype: f32, shape: [2]}", "{op: abs, in: [a], out: y}"),
	 {V(-1.5, 2)}, "f32[2]", W(1.5, 2)},
	{OP_ABS, G("a: {dtype: i32, shape: [2]}", "{op: abs, in: [a], out: y}"),
	 {V(-7, 2)}, "i32[2]", W(7, 2)},
	{OP_SIGN, G("a: {dtype: f32, shape: [4]}", "{op: sign, in: [a], out: y}"),
	 {V(-3, 0, 2, NAN)}, "f32[4]", W(-1, 0, 1, NAN)},
	{OP_SIGN, G("a: {dtype: i32, shape: [3]}", "{op: sign, in: [a], out: y}"),
	 {V(-3, 0, 2)}, "i32[3]", W(-1, 0, 1)},
	{OP_EXP, G("a: {dtype: f32, shape: [2]}", "{op: exp, in: [a], out: y}"),
	 {V(0, 1)}, "f32[2]", WT(1e-7, 1, 2.718281828459045)},
	{OP_LOG, G("a: {dtype: f32, shape: [3]}", "{op: log, in: [a], out: y}"),
	 {V(1, 7.38905609893065, 0)}, "f32[3]", WT(1e-7, 0, 2, -INFINITY)},
	{OP_LOG1P, G("a: {dtype: f32, shape: [2]}", "{op: log1p, in: [a], out: y}"),
	 {V(0, 1)}, "f32[2]", WT(1e-7, 0, .6931471805599453)},
	{OP_SQRT, G("a: {dtype: f32, shape: [3]}", "{op: sqrt, in: [a], out: y}"),
	 {V(4, 2, -1)}, "f32[3]", WT(1e-7, 2, 1.4142135623730951, NAN)},
	{OP_RECIP, G("a: {dtype: f32, shape: [3]}", "{op: recip, in: [a], out: y}"),
	 {V(4, -.5, 0)}, "f32[3]", W(.25, -2, INFINITY)},
	{OP_SIN, G("a: {dtype: f64, shape: [2]}", "{op: sin, in: [a], out: y}"),
	 {V(0, 1.5707963267948966)}, "f64[2]", WT(1e-15, 0, 1)},
	{OP_COS, G("a: {dtype: f64, shape: [2]}", "{op: cos, in: [a], out: y}"),
	 {V(0, 3.141592653589793)}, "f64[2]", WT(1e-15, 1, -1)},
	{OP_TANH, G("a: {dtype: f32, shape: [2]}", "{op: tanh, in: [a], out: y}"),
	 {V(0, 1)}, "f32[2]", WT(1e-7, 0, .7615941559557649)},
	{OP_ERF, G("a: {dtype: f32, shape: [3]}", "{op: erf, in: [a], out: y}"),
	 {V(0, 1, -1)}, "f32[3]", WT(1e-7, 0, .8427007929497149, -.8427007929497149)},
	{OP_FLOOR, G("a: {dtype: f32, shape: [2]}", "{op: floor, in: [a], out: y}"),
	 {V(-1.5, 1.5)}, "f32[2]", W(-2, 1)},
	{OP_CEIL, G("a: {dtype: f32, shape: [2]}", "{op: ceil, in: [a], out: y}"),
	 {V(-1.5, 1.5)}, "f32[2]", W(-1, 2)},
	{OP_ROUND, G("a: {dtype: f32, shape: [6]}", "{op: round, in: [a], out: y}"),
	 {V(.5, 1.5, 2.5, -.5, -1.5, 2.6)}, "f32[6]", W(0, 2, 2, 0, -2, 3)},
	{OP_TRUNC, G("a: {dtype: f32, shape: [2]}", "{op: trunc, in: [a], out: y}"),
	 {V(-1.7, 1.7)}, "f32[2]", W(-1, 1)},
	{OP_IS_NAN, G("a: {dtype: f32, shape: [3]}", "{op: is_nan, in: [a], out: y}"),
	 {V(NAN, 1, INFINITY)}, "bool[3]", W(1, 0, 0)},
	{OP_IS_INF, G("a: {dtype: f32, shape: [3]}", "{op: is_inf, in: [a], out: y}"),
	 {V(NAN, 1, -INFINITY)}, "bool[3]", W(0, 0, 1)},

	/* activations */
	{OP_RELU, G("a: {dtype: f32, shape: [3]}", "{op: relu, in: [a], out: y}"),
	 {V(-1, 0, 2)}, "f32[3]", W(0, 0, 2)},
	{OP_RELU, G("a: {dtype: i32, shape: [2]}", "{op: relu, in: [a], out: y}"),
	 {V(-1, 2)}, "i32[2]", W(0, 2)},
	{OP_SIGMOID, G("a: {dtype: f32, shape: [2]}", "{op: sigmoid, in: [a], out: y}"),
	 {V(0, 2)}, "f32[2]", WT(1e-7, .5, .8807970779778823)},
	{OP_SILU, G("a: {dtype: f32, shape: [2]}", "{op: silu, in: [a], out: y}"),
	 {V(0, 1)}, "f32[2]", WT(1e-7, 0, .7310585786300049)},
	{OP_GELU, G("a: {dtype: f32, shape: [3]}", "{op: gelu, in: [a], out: y}"),
	 {V(0, 1, -1)}, "f32[3]", WT(1e-7, 0, .8413447460685429, -.15865525393145707)},
	{OP_GELU, G("a: {dtype: f32, shape: [1]}", "{op: gelu, in: [a], approximate: tanh, out: y}"),
	 {V(1)}, "f32[1]", WT(1e-7, .8411919906082768)},

	/* logic */
	{OP_AND, G("a: {dtype: bool, shape: [4]}, b: {dtype: bool, shape: [4]}", "{op: and, in: [a, b], out: y}"),
	 {V(0, 0, 1, 1), V(0, 1, 0, 1)}, "bool[4]", W(0, 0, 0, 1)},
	{OP_OR, G("a: {dtype: bool, shape: [4]}, b: {dtype: bool, shape: [4]}", "{op: or, in: [a, b], out: y}"),
	 {V(0, 0, 1, 1), V(0, 1, 0, 1)}, "bool[4]", W(0, 1, 1, 1)},
	{OP_XOR, G("a: {dtype: bool, shape: [4]}, b: {dtype: bool, shape: [4]}", "{op: xor, in: [a, b], out: y}"),
	 {V(0, 0, 1, 1), V(0, 1, 0, 1)}, "bool[4]", W(0, 1, 1, 0)},
	{OP_NOT, G("a: {dtype: bool, shape: [2]}", "{op: not, in: [a], out: y}"),
	 {V(0, 1)}, "bool[2]", W(1, 0)},

	/* select */
	{OP_WHERE, G("m: {dtype: bool, shape: [2, 1]}, a: {dtype: f32, shape: [2, 2]}, "
		     "b: {dtype: f32, shape: [1, 2]}", "{op: where, in: [m, a, b], out: y}"),
	 {V(1, 0), V(1, 2, 3, 4), V(9, 8)}, "f32[2,2]", W(1, 2, 9, 8)},
	{OP_MASK_FILL, G("x: {dtype: f32, shape: [2, 2]}, m: {dtype: bool, shape: [1, 2]}",
			 "{op: mask_fill, in: [x, m], scalar: -1, out: y}"),
	 {V(1, 2, 3, 4), V(0, 1)}, "f32[2,2]", W(1, -1, 3, -1)},
	{OP_MASK_FILL, G("x: {dtype: i32, shape: [2]}, m: {dtype: bool, shape: [2]}",
			 "{op: mask_fill, in: [x, m], scalar: 7.9, out: y}"),
	 {V(1, 2), V(1, 0)}, "i32[2]", W(7, 2)},

	/* cast */
	{OP_CAST, G("a: {dtype: f32, shape: [5]}", "{op: cast, in: [a], dtype: i32, out: y}"),
	 {V(1.7, -1.7, NAN, 3e10, -3e10)}, "i32[5]", W(1, -1, 0, 2147483647, -2147483648.0)},
	{OP_CAST, G("a: {dtype: i32, shape: [3]}", "{op: cast, in: [a], dtype: f16, out: y}"),
	 {V(2049, 2051, -3)}, "f16[3]", W(2048, 2052, -3)},
	{OP_CAST, G("a: {dtype: f32, shape: [3]}", "{op: cast, in: [a], dtype: bool, out: y}"),
	 {V(0, -.5, NAN)}, "bool[3]", W(0, 1, 1)},
	{OP_CAST, G("a: {dtype: i32, shape: [3]}", "{op: cast, in: [a], dtype: i8, out: y}"),
	 {V(300, -129, 5)}, "i8[3]", W(44, 127, 5)},
	{OP_CAST, G("a: {dtype: f32, shape: [2]}", "{op: cast, in: [a], dtype: bf16, out: y}"),
	 {V(1.00390625, 1.01171875)}, "bf16[2]", W(1, 1.015625)},

	/* views */
	{OP_RESHAPE, G(F23, "{op: reshape, in: [a], shape: [3, -1], out: y}"),
	 {V(1, 2, 3, 4, 5, 6)}, "f32[3,2]", W(1, 2, 3, 4, 5, 6)},
	{OP_PERMUTE, G(F23, "{op: permute, in: [a], axes: [1, 0], out: y}"),
	 {V(1, 2, 3, 4, 5, 6)}, "f32[3,2]", W(1, 4, 2, 5, 3, 6)},
	{OP_SWAP_DIMS, G(F23, "{op: swap_dims, in: [a], dims: [0, 1], out: y}"),
	 {V(1, 2, 3, 4, 5, 6)}, "f32[3,2]", W(1, 4, 2, 5, 3, 6)},
	{OP_EXPAND, G("a: {dtype: f32, shape: [2, 1]}", "{op: expand, in: [a], shape: [2, 3], out: y}"),
	 {V(1, 2)}, "f32[2,3]", W(1, 1, 1, 2, 2, 2)},
	{OP_SLICE, G("a: {dtype: f32, shape: [3, 4]}", "{op: slice, in: [a], ranges: [[1, 3], [1, 3]], out: y}"),
	 {V(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)}, "f32[2,2]", W(5, 6, 9, 10)},
	{OP_SLICE, G("a: {dtype: i16, shape: [3, 2]}", "{op: slice, in: [a], ranges: [[2, 3]], out: y}"),
	 {V(0, 1, 2, 3, 4, 5)}, "i16[1,2]", W(4, 5)},

	/* reductions keep the reduced dim */
	{OP_SUM, G(F23, "{op: sum, in: [a], axis: 1, out: y}"),
	 {V(1, 2, 3, 4, 5, 6)}, "f32[2,1]", W(6, 15)},
	{OP_SUM, G(F23, "{op: sum, in: [a], axis: 0, out: y}"),
	 {V(1, 2, 3, 4, 5, 6)}, "f32[1,3]", W(5, 7, 9)},
	{OP_SUM, G("a: {dtype: f16, shape: [3]}", "{op: sum, in: [a], axis: -1, out: y}"),
	 {V(2048, 1, 1)}, "f16[1]", W(2050)}, /* accumulated in f64, rounded once */
	{OP_MEAN, G(F23, "{op: mean, in: [a], axis: 0, out: y}"),
	 {V(1, 2, 3, 4, 5, 6)}, "f32[1,3]", W(2.5, 3.5, 4.5)},
	{OP_MEAN, G("a: {dtype: i32, shape: [3]}", "{op: mean, in: [a], axis: 0, out: y}"),
	 {V(1, 2, 4)}, "i32[1]", W(2)},
	{OP_PROD, G(F23, "{op: prod, in: [a], axis: 1, out: y}"),
	 {V(1, 2, 3, 4, 5, 6)}, "f32[2,1]", W(6, 120)},
	{OP_MAX_DIM, G(F23, "{op: max_dim, in: [a], axis: 1, out: y}"),
	 {V(1, 5, 3, 4, NAN, 6)}, "f32[2,1]", W(5, NAN)},
	{OP_MIN_DIM, G(F23, "{op: min_dim, in: [a], axis: 1, out: y}"),
	 {V(1, 5, 3, 4, 2, 6)}, "f32[2,1]", W(1, 2)},
	{OP_MIN_DIM, G("a: {dtype: i32, shape: [2, 2]}", "{op: min_dim, in: [a], axis: 0, out: y}"),
	 {V(3, -1, -2, 5)}, "i32[1,2]", W(-2, -1)},
	{OP_ARGMAX, G(F23, "{op: argmax, in: [a], axis: 1, out: y}"),
	 {V(1, 5, 5, 7, 7, 2)}, "i64[2,1]", W(1, 0)},
	{OP_ARGMAX, G("a: {dtype: f32, shape: [4]}", "{op: argmax, in: [a], axis: 0, out: y}"),
	 {V(1, NAN, 9, NAN)}, "i64[1]", W(1)},
	{OP_ARGMIN, G(F23, "{op: argmin, in: [a], axis: 1, out: y}"),
	 {V(3, 1, 1, 2, 9, 2)}, "i64[2,1]", W(1, 0)},
	{OP_ARGMIN, G("a: {dtype: i32, shape: [2, 2]}", "{op: argmin, in: [a], axis: 0, out: y}"),
	 {V(3, -1, -2, -1)}, "i64[1,2]", W(1, 0)},

	/* attention: scores [ln 3, 0] and [0, ln 3], weights 3/4 and 1/4 */
	{OP_ATTENTION, G("q: {dtype: f32, shape: [2, 2]}, kt: {dtype: f32, shape: [2, 2]}, "
			 "v: {dtype: f32, shape: [2, 2]}",
			 "{op: attention, in: [q, kt, v], out: y, scalar: 1.0986122886681098}"),
	 {V(1, 0, 0, 1), V(1, 0, 0, 1), V(1, 2, 3, 4)}, "f32[2,2]", WT(1e-6, 1.5, 2.5, 2.5, 3.5)},
	/* matmul */
	{OP_MATMUL, G("a: {dtype: f32, shape: [2, 2]}, b: {dtype: f32, shape: [2, 2]}",
		      "{op: matmul, in: [a, b], out: y}"),
	 {V(1, 2, 3, 4), V(5, 6, 7, 8)}, "f32[2,2]", W(19, 22, 43, 50)},
	{OP_MATMUL, G("a: {dtype: i32, shape: [1, 1, 2]}, b: {dtype: i32, shape: [2, 2, 1]}",
		      "{op: matmul, in: [a, b], out: y}"),
	 {V(1, 2), V(3, 4, 5, 6)}, "i32[2,1,1]", W(11, 17)},

	/* joins */
	{OP_CAT, G("a: {dtype: f32, shape: [2, 1]}, b: {dtype: f32, shape: [2, 2]}",
		   "{op: cat, in: [a, b], axis: 1, out: y}"),
	 {V(1, 2), V(3, 4, 5, 6)}, "f32[2,3]", W(1, 3, 4, 2, 5, 6)},
	{OP_CAT, G("a: {dtype: i8, shape: [1, 2]}, b: {dtype: i8, shape: [2, 2]}, c: {dtype: i8, shape: [1, 2]}",
		   "{op: cat, in: [a, b, c], axis: 0, out: y}"),
	 {V(1, 2), V(3, 4, 5, 6), V(7, 8)}, "i8[4,2]", W(1, 2, 3, 4, 5, 6, 7, 8)},
	{OP_GATHER, G(F23 ", i: {dtype: i64, shape: [2, 2]}", "{op: gather, in: [a, i], axis: 1, out: y}"),
	 {V(1, 2, 3, 4, 5, 6), V(2, 0, 1, 1)}, "f32[2,2]", W(3, 1, 5, 5)},
	{OP_GATHER, G(F23 ", i: {dtype: i32, shape: [1, 3]}", "{op: gather, in: [a, i], axis: 0, out: y}"),
	 {V(1, 2, 3, 4, 5, 6), V(1, 0, 1)}, "f32[1,3]", W(4, 2, 6)},

	/* module ops */
	{OP_CONV2D, G("x: {dtype: f32, shape: [1, 1, 3, 3]}, w: {dtype: f32, shape: [1, 1, 2, 2]}",
		      "{op: conv2d, in: [x, w], out: y}"),
	 {V(1, 2, 3, 4, 5, 6, 7, 8, 9), V(1, 0, 0, 1)}, "f32[1,1,2,2]", W(6, 8, 12, 14)},
	{OP_CONV2D, G("x: {dtype: f32, shape: [1, 1, 3, 3]}, w: {dtype: f32, shape: [1, 1, 2, 2]}, "
		      "b: {dtype: f32, shape: [1]}", "{op: conv2d, in: [x, w, b], out: y}"),
	 {V(1, 2, 3, 4, 5, 6, 7, 8, 9), V(1, 0, 0, 1), V(10)}, "f32[1,1,2,2]", W(16, 18, 22, 24)},
	{OP_CONV2D, G("x: {dtype: f32, shape: [1, 1, 3, 3]}, w: {dtype: f32, shape: [1, 1, 2, 2]}",
		      "{op: conv2d, in: [x, w], stride: [2, 2], padding: [1, 1], out: y}"),
	 {V(1, 2, 3, 4, 5, 6, 7, 8, 9), V(1, 0, 0, 1)}, "f32[1,1,2,2]", W(1, 3, 7, 14)},
	{OP_CONV2D, G("x: {dtype: f32, shape: [1, 1, 3, 3]}, w: {dtype: f32, shape: [1, 1, 2, 2]}",
		      "{op: conv2d, in: [x, w], dilation: [2, 2], out: y}"),
	 {V(1, 2, 3, 4, 5, 6, 7, 8, 9), V(1, 0, 0, 1)}, "f32[1,1,1,1]", W(10)},
	{OP_CONV2D, G("x: {dtype: f32, shape: [1, 2, 2, 2]}, w: {dtype: f32, shape: [2, 1, 1, 1]}",
		      "{op: conv2d, in: [x, w], groups: 2, out: y}"),
	 {V(1, 2, 3, 4, 5, 6, 7, 8), V(2, 3)}, "f32[1,2,2,2]", W(2, 4, 6, 8, 15, 18, 21, 24)},
	{OP_CONV2D, G("x: {dtype: f32, shape: [1, 2, 1, 1]}, w: {dtype: f32, shape: [2, 2, 1, 1]}",
		      "{op: conv2d, in: [x, w], out: y}"),
	 {V(1, 10), V(1, 2, 3, 4)}, "f32[1,2,1,1]", W(21, 43)},
	{OP_MAX_POOL2D, G("x: {dtype: f32, shape: [1, 1, 4, 4]}", "{op: max_pool2d, in: [x], kernel: [2, 2], out: y}"),
	 {V(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)}, "f32[1,1,2,2]", W(6, 8, 14, 16)},
	{OP_MAX_POOL2D, G("x: {dtype: f32, shape: [1, 1, 4, 4]}",
			  "{op: max_pool2d, in: [x], kernel: [2, 2], stride: [2, 2], padding: [1, 1], out: y}"),
	 {V(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)}, "f32[1,1,3,3]",
	 W(1, 3, 4, 9, 11, 12, 13, 15, 16)},
	{OP_AVG_POOL2D, G("x: {dtype: f32, shape: [1, 1, 4, 4]}", "{op: avg_pool2d, in: [x], kernel: [2, 2], out: y}"),
	 {V(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)}, "f32[1,1,2,2]", W(3.5, 5.5, 11.5, 13.5)},
	{OP_AVG_POOL2D, G("x: {dtype: f32, shape: [1, 1, 4, 4]}",
			  "{op: avg_pool2d, in: [x], kernel: [2, 2], padding: [1, 1], out: y}"),
	 {V(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)}, "f32[1,1,3,3]",
	 W(.25, 1.25, 1, 3.5, 8.5, 5, 3.25, 7.25, 4)},
};

/* Fill input tensors from doubles (ints exactly through int64). */
static void fill(HostTensor *t, const double *v)
{
	for (int64_t k = 0; k < t->n; k++) {
		if (ir_dtype_is_float(t->dtype))
			host_set(t, k, v[k]);
		else
			host_set_i64(t, k, (int64_t)v[k]);
	}
}

/* Run g with inputs from vals; returns the single output (caller frees). */
static HostTensor run_graph(const Graph *g, const double *const *vals)
{
	HostTensor in[4] = {{0}};
	assert_true(g->ninputs <= 4);
	Diag d;
	for (int i = 0; i < g->ninputs; i++) {
		const Tensor *t = &g->tensors[g->inputs[i]];
		assert_int_equal(host_alloc(&in[i], t->dtype, t->rank, t->dim, &d), 0);
		fill(&in[i], vals[i]);
	}
	HostTensor out[2] = {{0}};
	int rc = interp_run(g, in, out, &d);
	for (int i = 0; i < g->ninputs; i++)
		host_free(&in[i]);
	if (rc) {
		char msg[1200];
		diag_format(&d, msg, sizeof msg);
		fail_msg("interp_run failed: %s", msg);
	}
	return out[0];
}

static bool same_value(double got, double want, double tol)
{
	if (isnan(want))
		return isnan(got);
	if (isinf(want))
		return got == want;
	return fabs(got - want) <= tol * fmax(1, fabs(want));
}

static void run_case(size_t ci)
{
	const Case *c = &cases[ci];
	Arena *a = arena_new();
	Graph *g = test_graph(a, "case.yaml", c->yaml);
	bool has = false;
	for (int i = 0; i < g->nops; i++)
		has |= g->ops[i].kind == c->kind;
	if (!has)
		fail_msg("case %zu: graph has no op '%s'", ci, ir_ops[c->kind].file);
	HostTensor out = run_graph(g, c->in);
	char shape[128];
	host_shape_text(out.dtype, out.rank, out.dim, shape, sizeof shape);
	if (strcmp(shape, c->shape))
		fail_msg("case %zu (%s): shape %s, want %s", ci, ir_ops[c->kind].file, shape, c->shape);
	assert_int_equal(out.n, c->nwant);
	for (int k = 0; k < c->nwant; k++) {
		double got = host_get(&out, k);
		double want = c->tol ? c->want[k] : host_round(out.dtype, c->want[k]);
		if (!same_value(got, want, c->tol))
			fail_msg("case %zu (%s): element %d is %.17g, want %.17g", ci,
				 ir_ops[c->kind].file, k, got, want);
	}
	host_free(&out);
	arena_free(a);
}

static void test_op_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < SUITE_COUNT(cases); i++)
		run_case(i);
}

static void test_every_op_has_an_interp_case(void **state)
{
	(void)state;
	for (int k = 0; k < OP_COUNT; k++) {
		if (k == OP_SYNC)
			continue;
		bool found = false;
		for (size_t i = 0; i < SUITE_COUNT(cases); i++)
			found |= cases[i].kind == (OpKind)k;
		if (!found)
			fail_msg("op '%s' has no interpreter test case", ir_ops[k].file);
	}
}

/* permute [2,3,4] by axes [2,0,1]: out[i][j][k] = in[j][k][i], checked by loops. */
static void test_permute(void **state)
{
	(void)state;
	Arena *a = arena_new();
	Graph *g = test_graph(a, "p.yaml", G("a: {dtype: f32, shape: [2, 3, 4]}",
					     "{op: permute, in: [a], axes: [2, 0, -2], out: y}"));
	double v[24];
	for (int i = 0; i < 24; i++)
		v[i] = i;
	const double *vals[] = {v};
	HostTensor out = run_graph(g, vals);
	assert_int_equal(out.rank, 3);
	assert_int_equal(out.dim[0], 4);
	assert_int_equal(out.dim[1], 2);
	assert_int_equal(out.dim[2], 3);
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 2; j++)
			for (int k = 0; k < 3; k++)
				assert_true(host_get(&out, (i * 2 + j) * 3 + k) == v[(j * 3 + k) * 4 + i]);
	host_free(&out);
	arena_free(a);
}

/* matmul [2,1,2,3] x [1,3,3,2] with batch broadcast, against a plain loop. */
static void test_matmul_batch_broadcast(void **state)
{
	(void)state;
	Arena *a = arena_new();
	Graph *g = test_graph(a, "m.yaml", G("a: {dtype: f64, shape: [2, 1, 2, 3]}, "
					     "b: {dtype: f64, shape: [1, 3, 3, 2]}",
					     "{op: matmul, in: [a, b], out: y}"));
	double av[12], bv[18];
	for (int i = 0; i < 12; i++)
		av[i] = i * 0.5 - 2;
	for (int i = 0; i < 18; i++)
		bv[i] = (i % 7) - 3;
	const double *vals[] = {av, bv};
	HostTensor out = run_graph(g, vals);
	char shape[64];
	assert_string_equal(host_shape_text(out.dtype, out.rank, out.dim, shape, sizeof shape),
			    "f64[2,3,2,2]");
	for (int p = 0; p < 2; p++)
		for (int q = 0; q < 3; q++)
			for (int i = 0; i < 2; i++)
				for (int j = 0; j < 2; j++) {
					double s = 0;
					for (int k = 0; k < 3; k++)
						s += av[p * 6 + i * 3 + k] * bv[q * 6 + k * 2 + j];
					assert_true(host_get(&out, ((p * 3 + q) * 2 + i) * 2 + j) == s);
				}
	host_free(&out);
	arena_free(a);
}

/* A chain: intermediates are rounded to their dtype, and freed tensors are not read. */
static void test_chain_rounds_intermediates(void **state)
{
	(void)state;
	Arena *a = arena_new();
	Graph *g = test_graph(a, "c.yaml",
		"format: fusec-graph/1\n"
		"inputs: {a: {dtype: f32, shape: [1]}}\n"
		"ops:\n"
		"  - {op: cast, in: [a], dtype: f16, out: h}\n"
		"  - {op: cast, in: [h], dtype: f32, out: f}\n"
		"  - {op: sync}\n"
		"  - {op: add, in: [f, f], out: y}\n"
		"outputs: [y]\n");
	const double *vals[] = {V(1 + 0x1p-12)};  /* f16 rounds it to 1; f32 keeps it */
	HostTensor out = run_graph(g, vals);
	assert_true(host_get(&out, 0) == 2.0);
	host_free(&out);
	arena_free(a);
}

static void test_gather_out_of_range(void **state)
{
	(void)state;
	Arena *a = arena_new();
	Graph *g = test_graph(a, "g.yaml", G("a: {dtype: f32, shape: [3]}, i: {dtype: i64, shape: [2]}",
					     "{op: gather, in: [a, i], axis: 0, out: y}"));
	HostTensor in[2], out[1] = {{0}};
	Diag d;
	assert_int_equal(host_alloc(&in[0], DT_F32, 1, (int64_t[]){3}, &d), 0);
	assert_int_equal(host_alloc(&in[1], DT_I64, 1, (int64_t[]){2}, &d), 0);
	host_set_i64(&in[1], 0, 1);
	host_set_i64(&in[1], 1, 3);
	assert_int_equal(interp_run(g, in, out, &d), -1);
	assert_non_null(strstr(d.msg, "index 3 is out of range"));
	assert_null(out[0].data);
	host_set_i64(&in[1], 1, -1);
	assert_int_equal(interp_run(g, in, out, &d), -1);
	host_free(&in[1]);
	assert_int_equal(host_alloc(&in[1], DT_I32, 1, (int64_t[]){2}, &d), 0);
	assert_int_equal(interp_run(g, in, out, &d), -1);
	assert_non_null(strstr(d.msg, "input 'i' needs i64[2], got i32[2]"));
	host_free(&in[0]);
	host_free(&in[1]);
	arena_free(a);
}

/* ---- dtype rounding -------------------------------------------------------- */

static void test_f16_rounding(void **state)
{
	(void)state;
	/* Every finite pattern round-trips; each midpoint rounds to the even neighbour. */
	for (uint32_t b = 0; b < 0x7c00; b++) {
		double v = host_f16_value((uint16_t)b);
		assert_int_equal(host_f16_bits(v), b);
		assert_int_equal(host_f16_bits(-v), b | 0x8000);
		if (b + 1 < 0x7c00) {
			double mid = (v + host_f16_value((uint16_t)(b + 1))) / 2;
			assert_int_equal(host_f16_bits(mid), b % 2 ? b + 1 : b);
			assert_int_equal(host_f16_bits(nextafter(mid, INFINITY)), b + 1);
			assert_int_equal(host_f16_bits(nextafter(mid, 0)), b);
		}
	}
	assert_true(host_f16_value(0x3c00) == 1.0);
	assert_true(host_f16_value(0x7bff) == 65504.0);
	assert_true(host_f16_value(0x0001) == 0x1p-24);
	assert_int_equal(host_f16_bits(65519.99), 0x7bff);
	assert_int_equal(host_f16_bits(65520.0), 0x7c00);
	assert_int_equal(host_f16_bits(-1e9), 0xfc00);
	assert_int_equal(host_f16_bits(0x1p-25), 0x0000);           /* tie to even zero */
	assert_int_equal(host_f16_bits(0x1.8p-25), 0x0001);
	assert_int_equal(host_f16_bits(INFINITY), 0x7c00);
	assert_true(isnan(host_f16_value(host_f16_bits(NAN))));
	assert_true(isinf(host_f16_value(0x7c00)));
#ifdef __FLT16_MAX__
	/* The compiler's own conversion, where it has one, agrees everywhere. */
	HostRng r;
	host_rng_init(&r, 7, 0);
	for (int i = 0; i < 200000; i++) {
		double v = ldexp(host_rng_unit(&r) * 2 - 1, (int)(host_rng_next(&r) % 44) - 28);
		_Float16 h = (_Float16)v;
		uint16_t bits;
		memcpy(&bits, &h, 2);
		assert_int_equal(host_f16_bits(v), bits);
	}
#endif
}

/* bf16 from a float: the upper 16 bits after adding 0x7fff plus the lowest kept bit. */
static uint16_t bf16_reference(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

static void test_bf16_rounding(void **state)
{
	(void)state;
	for (uint32_t b = 0; b < 0x7f80; b++) {
		double v = host_bf16_value((uint16_t)b);
		float f;
		uint32_t u = b << 16;
		memcpy(&f, &u, 4);
		assert_true(v == (double)f);
		assert_int_equal(host_bf16_bits(v), b);
		assert_int_equal(host_bf16_bits(-v), b | 0x8000);
	}
	HostRng r;
	host_rng_init(&r, 11, 0);
	for (int i = 0; i < 200000; i++) {
		uint32_t u = (uint32_t)host_rng_next(&r) & 0x7f7fffffu;
		if (i % 4 == 0)
			u = (u & 0xffff0000u) | 0x8000u;   /* exact ties */
		float f;
		memcpy(&f, &u, 4);
		assert_int_equal(host_bf16_bits(f), bf16_reference(f));
	}
	assert_int_equal(host_bf16_bits(1.0), 0x3f80);
	assert_int_equal(host_bf16_bits(1.00390625), 0x3f80);   /* tie, to even */
	assert_int_equal(host_bf16_bits(1.01171875), 0x3f82);   /* tie, to even */
	assert_int_equal(host_bf16_bits(1e39), 0x7f80);
	assert_true(isnan(host_bf16_value(host_bf16_bits(NAN))));
}

static void test_int_store_rules(void **state)
{
	(void)state;
	assert_true(host_round(DT_I8, 300) == 127);
	assert_true(host_round(DT_U8, -3.5) == 0);
	assert_true(host_round(DT_I32, -7.9) == -7);
	assert_true(host_round(DT_I64, NAN) == 0);
	assert_true(host_to_int(DT_I64, 1e30) == INT64_MAX);
	assert_true(host_round(DT_BOOL, -0.1) == 1);
	assert_true(host_round(DT_F32, 0.1) == (double)0.1f);
	assert_int_equal(host_wrap_int(DT_I8, 300), 44);
	assert_int_equal(host_wrap_int(DT_U8, -1), 255);
	assert_int_equal(host_wrap_int(DT_I16, 40000), 40000 - 65536);
	assert_int_equal(host_wrap_int(DT_I32, 0x100000005LL), 5);
	HostTensor t;
	Diag d;
	assert_int_equal(host_alloc(&t, DT_I64, 1, (int64_t[]){2}, &d), 0);
	host_set_i64(&t, 0, INT64_MAX);
	assert_true(host_get_i64(&t, 0) == INT64_MAX);
	host_free(&t);
	assert_int_equal(host_alloc(&t, DT_F32, 2, (int64_t[]){INT64_MAX / 2, 4}, &d), -1);
	assert_null(t.data);
}

/* ---- random fill and comparison -------------------------------------------- */

static void test_random_fill(void **state)
{
	(void)state;
	Diag d;
	for (DType dt = 0; dt < DT_COUNT; dt++) {
		HostTensor x, y, z;
		int64_t dim[1] = {500};
		assert_int_equal(host_alloc(&x, dt, 1, dim, &d), 0);
		assert_int_equal(host_alloc(&y, dt, 1, dim, &d), 0);
		assert_int_equal(host_alloc(&z, dt, 1, dim, &d), 0);
		double lo, hi;
		host_default_range(dt, &lo, &hi);
		HostRng r1, r2, r3;
		host_rng_init(&r1, 42, 5);
		host_rng_init(&r2, 42, 5);
		host_rng_init(&r3, 43, 5);
		host_fill_random(&x, &r1, lo, hi);
		host_fill_random(&y, &r2, lo, hi);
		host_fill_random(&z, &r3, lo, hi);
		size_t bytes = 500 * (size_t)ir_dtype_size(dt);
		assert_memory_equal(x.data, y.data, bytes);
		assert_memory_not_equal(x.data, z.data, bytes);
		double mn = INFINITY, mx = -INFINITY;
		for (int64_t i = 0; i < x.n; i++) {
			double v = host_get(&x, i);
			mn = fmin(mn, v);
			mx = fmax(mx, v);
		}
		assert_true(mn >= lo && mx <= hi);
		if (!ir_dtype_is_float(dt)) {
			assert_true(mn == lo && mx == hi);   /* 500 draws hit both ends */
		} else {
			assert_true(mn < -0.9 && mx > 0.9);
		}
		host_free(&x);
		host_free(&y);
		host_free(&z);
	}
	HostRng a, b;
	host_rng_init(&a, 1, 1);
	host_rng_init(&b, 1, 2);
	assert_true(host_rng_next(&a) != host_rng_next(&b));
	/* The sequence is fixed: a changed PRNG would change every random input. */
	host_rng_init(&a, 0, 0);
	uint64_t first = host_rng_next(&a);
	host_rng_init(&b, 0, 0);
	assert_true(first == host_rng_next(&b));
}

static void test_compare(void **state)
{
	(void)state;
	Diag d;
	HostTensor g, w;
	assert_int_equal(host_alloc(&g, DT_F32, 1, (int64_t[]){4}, &d), 0);
	assert_int_equal(host_alloc(&w, DT_F32, 1, (int64_t[]){4}, &d), 0);
	const double gv[] = {1, NAN, INFINITY, 2.5}, wv[] = {1, NAN, INFINITY, 2.0};
	fill(&g, gv);
	fill(&w, wv);
	HostCompare c;
	host_compare(&g, &w, 0, 0.3, &c);
	assert_true(c.ok);
	assert_true(c.max_abs == 0.5 && c.max_rel == 0.25);
	host_compare(&g, &w, 0, 0.2, &c);
	assert_false(c.ok);
	assert_int_equal(c.nbad, 1);
	assert_int_equal(c.first_bad, 3);
	host_set(&g, 1, 0);
	host_compare(&g, &w, 1, 1, &c);
	assert_false(c.ok);
	assert_int_equal(c.first_bad, 1);
	host_free(&g);
	assert_int_equal(host_alloc(&g, DT_F32, 2, (int64_t[]){2, 2}, &d), 0);
	host_compare(&g, &w, 1, 1, &c);
	assert_false(c.ok);
	host_free(&g);
	host_free(&w);
}

/* The bound of one output of a one-input graph at given input values. */
static double bound_of(const char *yaml, DType dt, const double *x, int64_t n, int64_t at,
		       double *value)
{
	Arena *a = arena_new();
	Graph *g = test_graph(a, "t.yaml", yaml);
	Diag d;
	HostTensor in, out, b;
	assert_int_equal(host_alloc(&in, dt, 1, (int64_t[]){n}, &d), 0);
	for (int64_t i = 0; i < n; i++)
		host_set(&in, i, x[i]);
	assert_int_equal(interp_run_bounds(g, &in, &out, &b, &d), 0);
	double r = host_get(&b, at);
	if (value)
		*value = host_get(&out, at);
	host_free(&in);
	host_free(&out);
	host_free(&b);
	arena_free(a);
	return r;
}

static void test_bounds(void **state)
{
	(void)state;
	double x[4096], v;
	for (int i = 0; i < 4096; i++)
		x[i] = (i % 2 ? -1 : 1) * (1 + i / 4096.0);
	/* views and casts that widen are exact */
	assert_true(bound_of("format: fusec-graph/1\n"
			     "inputs: {a: {dtype: f32, shape: [4]}}\n"
			     "ops: [{op: reshape, in: [a], shape: [2, 2], out: y}]\n"
			     "outputs: [y]\n", DT_F32, x, 4, 0, NULL) == 0);
	/* exp: its ulp budget (4: ex2.approx on the GPU) and the rounding, nothing more */
	double e = bound_of("format: fusec-graph/1\n"
			    "inputs: {a: {dtype: f32, shape: [4]}}\n"
			    "ops: [{op: exp, in: [a], out: y}]\n"
			    "outputs: [y]\n", DT_F32, x, 4, 0, &v);
	assert_true(e > 2 * 0x1p-24 * v && e < 12 * 0x1p-24 * v);
	/* a cancelling sum is judged against its terms: the result is about -2048·(1/4096)
	 * = -0.5, the terms' magnitudes sum to 6144 */
	e = bound_of("format: fusec-graph/1\n"
		     "inputs: {a: {dtype: f32, shape: [4096]}}\n"
		     "ops: [{op: sum, in: [a], axis: 0, out: y}]\n"
		     "outputs: [y]\n", DT_F32, x, 4096, 0, &v);
	assert_true(fabs(v) < 1);
	assert_true(e > 0x1p-24 * 6144 && e < 4096 * 0x1p-24 * 6144);
	/* the same sum in f16 (accumulated in f32): the same, plus at most the f16
	 * rounding of the result */
	double e16 = bound_of("format: fusec-graph/1\n"
			      "inputs: {a: {dtype: f16, shape: [4096]}}\n"
			      "ops: [{op: sum, in: [a], axis: 0, out: y}]\n"
			      "outputs: [y]\n", DT_F16, x, 4096, 0, &v);
	assert_true(e16 > 0 && e16 <= 2 * e + 0x1p-11 * fabs(v));
	/* sqrt of a value whose interval reaches below 0 is not bounded */
	double z[2] = {1e-30, 1};
	e = bound_of("format: fusec-graph/1\n"
		     "inputs: {a: {dtype: f32, shape: [2]}}\n"
		     "ops: [{op: sub_scalar, in: [a], scalar: 1e-30, out: t},\n"
		     "      {op: exp, in: [t], out: u}, {op: sub_scalar, in: [u], scalar: 1, out: w},\n"
		     "      {op: sqrt, in: [w], out: y}]\n"
		     "outputs: [y]\n", DT_F32, z, 2, 0, NULL);
	assert_true(isinf(e));
}

static void test_check_compare(void **state)
{
	(void)state;
	Diag d;
	HostTensor g, w, b;
	int64_t dim[1] = {8};
	assert_int_equal(host_alloc(&g, DT_F32, 1, dim, &d), 0);
	assert_int_equal(host_alloc(&w, DT_F32, 1, dim, &d), 0);
	assert_int_equal(host_alloc(&b, DT_F64, 1, dim, &d), 0);
	for (int i = 0; i < 8; i++) {
		host_set(&w, i, i);
		host_set(&g, i, i + 0.01 * i);
		host_set(&b, i, 0.055);
	}
	host_set(&b, 7, INFINITY);
	CheckResult r;
	check_compare(&g, &w, &b, 0, 0, &r);
	/* elements 6 (err 0.06) is over; 7 is unbounded; 5 is the next worst */
	assert_false(r.ok);
	assert_int_equal(r.nbad, 1);
	assert_int_equal(r.nunbounded, 1);
	assert_int_equal(r.worst[0].index, 6);
	assert_int_equal(r.worst[1].index, 5);
	assert_true(fabs(r.worst[0].ratio - 0.06 / 0.055) < 1e-5);
	/* a flat tolerance instead */
	check_compare(&g, &w, NULL, 0.1, 0, &r);
	assert_true(r.ok);
	host_set(&g, 3, NAN);
	check_compare(&g, &w, &b, 0, 0, &r);
	assert_int_equal(r.worst[0].index, 3);
	assert_true(isinf(r.worst[0].ratio));
	host_free(&g);
	host_free(&w);
	host_free(&b);
}

/* ---- .npy ------------------------------------------------------------------ */

static void test_npy_round_trip(void **state)
{
	(void)state;
	Diag d;
	for (DType dt = 0; dt < DT_COUNT; dt++) {
		HostTensor t, back;
		int64_t dim[3] = {2, 3, 1};
		for (int rank = 0; rank <= 3; rank++) {
			assert_int_equal(host_alloc(&t, dt, rank, dim, &d), 0);
			HostRng r;
			host_rng_init(&r, 3, (uint64_t)dt);
			double lo, hi;
			host_default_range(dt, &lo, &hi);
			host_fill_random(&t, &r, lo, hi);
			Buf b = {0};
			npy_write_buf(&b, &t);
			assert_int_equal((b.len - (size_t)t.n * (size_t)(dt == DT_BF16 ? 4 : ir_dtype_size(dt))) % 64, 0);
			assert_int_equal(b.data[b.len - (size_t)t.n * (size_t)(dt == DT_BF16 ? 4 : ir_dtype_size(dt)) - 1], '\n');
			if (npy_read_mem("t.npy", b.data, b.len, &back, &d))
				fail_msg("%s rank %d: %s", ir_dtype_name(dt), rank, d.msg);
			assert_int_equal(back.dtype, dt == DT_BF16 ? DT_F32 : dt);
			assert_int_equal(back.rank, rank);
			assert_int_equal(back.n, t.n);
			for (int k = 0; k < rank; k++)
				assert_int_equal(back.dim[k], dim[k]);
			for (int64_t i = 0; i < t.n; i++)
				assert_true(host_get(&back, i) == host_get(&t, i));
			buf_free(&b);
			host_free(&back);
			host_free(&t);
		}
	}
}

static void test_npy_exact_bytes(void **state)
{
	(void)state;
	Diag d;
	HostTensor t;
	assert_int_equal(host_alloc(&t, DT_I16, 1, (int64_t[]){2}, &d), 0);
	host_set_i64(&t, 0, 1);
	host_set_i64(&t, 1, -2);
	Buf b = {0};
	npy_write_buf(&b, &t);
	const char head[] = "\x93NUMPY\x01\x00\x76\x00{'descr': '<i2', 'fortran_order': False, 'shape': (2,), }";
	assert_int_equal(b.len, 128 + 4);
	assert_memory_equal(b.data, head, sizeof head - 1);
	for (size_t i = sizeof head - 1; i < 127; i++)
		assert_int_equal(b.data[i], ' ');
	assert_int_equal(b.data[127], '\n');
	assert_memory_equal(b.data + 128, "\x01\x00\xfe\xff", 4);
	buf_free(&b);
	host_free(&t);
}

/* Build a v1.0 file around a header dict and data bytes. */
static size_t make_npy(unsigned char *out, const char *dict, size_t ndata)
{
	size_t hl = strlen(dict);
	memcpy(out, "\x93NUMPY\x01\x00", 8);
	out[8] = (unsigned char)(hl & 0xff);
	out[9] = (unsigned char)(hl >> 8);
	memcpy(out + 10, dict, hl);
	memset(out + 10 + hl, 0, ndata);
	return 10 + hl + ndata;
}

static void test_npy_rejects(void **state)
{
	(void)state;
	static const struct {
		const char *dict;
		size_t ndata;
		const char *msg;
	} bad[] = {
		{"{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }\n", 8, "unsupported .npy dtype '>f4'"},
		{"{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }\n", 16, "unsupported .npy dtype"},
		{"{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }\n", 8, "Fortran-order"},
		{"{'descr': '<f4', 'fortran_order': False}\n", 4, "needs 'descr'"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}\n", 8, "unknown or repeated key"},
		{"{'descr': '<f4', 'descr': '<f4', 'shape': (2,)}\n", 8, "unknown or repeated key"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\n", 8, "data is 8 bytes"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n", 8, "data is 8 bytes"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (2), }\n", 8, "trailing comma"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }\n", 8, "non-negative"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }\n", 8, "overflows"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4096), }\n", 8, "too large"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }\n", 4, "more than 8"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8, "newline"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } x\n", 8, "newline"},
		{"{'descr' '<f4', 'fortran_order': False, 'shape': (2,), }\n", 8, "expected ':'"},
		{"['descr']\n", 0, "expected '{'"},
		{"{'descr': '|b1', 'fortran_order': False, 'shape': (1,), }\n", 1, NULL},
	};
	unsigned char buf[512];
	Diag d;
	HostTensor t;
	for (size_t i = 0; i < SUITE_COUNT(bad); i++) {
		size_t n = make_npy(buf, bad[i].dict, bad[i].ndata);
		int rc = npy_read_mem("x.npy", buf, n, &t, &d);
		if (!bad[i].msg) {
			assert_int_equal(rc, 0);  /* a valid file: the table itself is sound */
			host_free(&t);
			buf[n - 1] = 2;           /* a bool byte that is not 0 or 1 */
			rc = npy_read_mem("x.npy", buf, n, &t, &d);
			assert_int_equal(rc, -1);
			assert_non_null(strstr(d.msg, "not 0 or 1"));
			continue;
		}
		if (rc == 0 || !strstr(d.msg, bad[i].msg))
			fail_msg("case %zu: rc %d, message '%s', want '%s'", i, rc, rc ? d.msg : "",
				 bad[i].msg);
		assert_null(t.data);
		assert_string_equal(d.file, "x.npy");
	}
	size_t n = make_npy(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n", 8);
	assert_int_equal(npy_read_mem("x.npy", buf, n, &t, &d), 0);
	host_free(&t);
	buf[0] = 'X';
	assert_int_equal(npy_read_mem("x.npy", buf, n, &t, &d), -1);
	assert_non_null(strstr(d.msg, "bad magic"));
	buf[0] = 0x93;
	buf[6] = 3;
	assert_int_equal(npy_read_mem("x.npy", buf, n, &t, &d), -1);
	assert_non_null(strstr(d.msg, "version 3.0"));
	buf[6] = 1;
	buf[8] = 0xff;
	assert_int_equal(npy_read_mem("x.npy", buf, n, &t, &d), -1);
	assert_non_null(strstr(d.msg, "truncated"));
	assert_int_equal(npy_read_mem("x.npy", buf, 7, &t, &d), -1);
	assert_int_equal(npy_read_file("/nonexistent/x.npy", &t, &d), -1);
	assert_non_null(strstr(d.msg, "cannot open"));
}

/* npy_read_shape reads the header alone: a file cut after it still gives its
 * shape; what the header says wrong is npy_read_mem's message. */
static void test_npy_read_shape(void **state)
{
	(void)state;
	char file[] = "/tmp/fusec-npy-XXXXXX";
	int fd = mkstemp(file);
	assert_true(fd >= 0);
	unsigned char buf[512];
	size_t n = make_npy(buf, "{'descr': '<i2', 'fortran_order': False, 'shape': (5, 3, 7), }\n",
			    0);
	assert_int_equal(write(fd, buf, n), (ssize_t)n);
	close(fd);
	Diag d;
	DType dt;
	int rank;
	int64_t dim[IR_MAX_RANK];
	if (npy_read_shape(file, &dt, &rank, dim, &d))
		fail_msg("%s", d.msg);
	assert_int_equal(dt, DT_I16);
	assert_int_equal(rank, 3);
	assert_int_equal(dim[0], 5);
	assert_int_equal(dim[1], 3);
	assert_int_equal(dim[2], 7);
	/* version 2.0: a 4-byte header length */
	size_t hl = n - 10;
	memmove(buf + 12, buf + 10, hl);
	buf[6] = 2;
	buf[8] = (unsigned char)hl;
	buf[9] = buf[10] = buf[11] = 0;
	FILE *f = fopen(file, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, n + 2, f), n + 2);
	fclose(f);
	assert_int_equal(npy_read_shape(file, &dt, &rank, dim, &d), 0);
	assert_int_equal(rank, 3);
	/* cut inside the header */
	assert_int_equal(truncate(file, 30), 0);
	assert_int_equal(npy_read_shape(file, &dt, &rank, dim, &d), -1);
	assert_non_null(strstr(d.msg, "truncated .npy header"));
	assert_string_equal(d.file, file);
	assert_int_equal(truncate(file, 5), 0);
	assert_int_equal(npy_read_shape(file, &dt, &rank, dim, &d), -1);
	assert_non_null(strstr(d.msg, "bad magic"));
	unlink(file);
	assert_int_equal(npy_read_shape(file, &dt, &rank, dim, &d), -1);
	assert_non_null(strstr(d.msg, "cannot open"));
	assert_int_equal(npy_read_shape("/tmp", &dt, &rank, dim, &d), -1);
	assert_non_null(strstr(d.msg, "not a regular file (a folder)"));
}

const struct CMUnitTest interp_tests[] = {
	cmocka_unit_test(test_op_cases),
	cmocka_unit_test(test_every_op_has_an_interp_case),
	cmocka_unit_test(test_permute),
	cmocka_unit_test(test_matmul_batch_broadcast),
	cmocka_unit_test(test_chain_rounds_intermediates),
	cmocka_unit_test(test_gather_out_of_range),
	cmocka_unit_test(test_f16_rounding),
	cmocka_unit_test(test_bf16_rounding),
	cmocka_unit_test(test_int_store_rules),
	cmocka_unit_test(test_random_fill),
	cmocka_unit_test(test_compare),
	cmocka_unit_test(test_bounds),
	cmocka_unit_test(test_check_compare),
	cmocka_unit_test(test_npy_round_trip),
	cmocka_unit_test(test_npy_exact_bytes),
	cmocka_unit_test(test_npy_rejects),
	cmocka_unit_test(test_npy_read_shape),
};
const size_t interp_ntests = SUITE_COUNT(interp_tests);
