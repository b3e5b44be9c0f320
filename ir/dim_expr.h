/* dim_expr.h: a size as an expression over a graph's named dims (issue 28).
 *
 * A DimExpr is a polynomial with integer coefficients in up to IR_SYM_MAX symbols
 * (the named dims of a graph compiled for every size: `batch`, `seq`), kept in one
 * canonical form: terms sorted by their exponents, no zero coefficient, the
 * constant term last. So two expressions are equal exactly when ir_dim_equal says so,
 * and a dim of a fixed size is the expression of one constant term.
 *
 * It covers what shape inference meets in the ops of a graph: products (reshape,
 * matmul's batch), sums (cat) and exact quotients (reshape with -1). Anything else
 * (a clamped slice of a named dim, a strided window over one) is refused by the
 * caller with the op named (ir/infer_sym.c).
 *
 * Prefix: ir_dim_. Plain values: no allocation. */
#ifndef FUSEC_DIM_EXPR_H
#define FUSEC_DIM_EXPR_H

#include <stdbool.h>
#include <stdint.h>

#include "../support/support.h"

enum {
	IR_SYM_MAX = 8,    /* named dims of one graph that may stay symbolic */
	IR_TERM_MAX = 8,   /* terms of one expression */
	IR_AEXPR_MAX = 64, /* expressions in the attributes of one graph (IrSymbolic) */
};

/* The largest size of a named dim given no range: every size from 1 (a plan's
 * sizes are bounded by 2^40 elements anyway: runtime/plan_read.c). */
#define IR_DIM_TOP (INT64_C(1) << 40)

typedef struct {
	int64_t c;                 /* coefficient, never 0 in a canonical term */
	uint8_t e[IR_SYM_MAX];     /* exponent of each symbol */
} DimTerm;

typedef struct {
	int n;                     /* terms; 0 is the constant 0 */
	DimTerm t[IR_TERM_MAX];
} DimExpr;

DimExpr ir_dim_const(int64_t v);
DimExpr ir_dim_sym(int s);
/* a + b, a * b, and a / b when b is one term that divides every term of a (the
 * quotient of two sizes that reshape's -1 makes). 0, or -1 when the result does not
 * fit (too many terms, a coefficient or an exponent overflows, or no exact
 * quotient); *out is then unspecified. */
int ir_dim_add(const DimExpr *a, const DimExpr *b, DimExpr *out);
int ir_dim_mul(const DimExpr *a, const DimExpr *b, DimExpr *out);
int ir_dim_div(const DimExpr *a, const DimExpr *b, DimExpr *out);
bool ir_dim_equal(const DimExpr *a, const DimExpr *b);
/* Whether e is a constant (then *v holds it; v may be NULL). */
bool ir_dim_is_const(const DimExpr *e, int64_t *v);
/* A number that divides e's value for all symbol values: the gcd of its
 * coefficients (for a constant, its magnitude; 1 for 0). */
int64_t ir_dim_divisor(const DimExpr *e);
/* Whether e is exactly symbol s (coefficient 1, exponent 1); *s set. */
bool ir_dim_is_sym(const DimExpr *e, int *s);
/* The value of e for the symbols' values val[]: 0, or -1 on int64 overflow. */
int ir_dim_eval(const DimExpr *e, const int64_t *val, int64_t *out);
/* Append e as people write it, "batch*seq", "12*seq", "seq+1", "768", with the
 * symbols' names. */
void ir_dim_print(Buf *b, const DimExpr *e, const char *const *names);
/* Read what ir_dim_print writes (integers, the names[] of nnames symbols, +, -, * and
 * parentheses, blanks between): 0, or -1 for anything else or a result that does
 * not fit. */
int ir_dim_parse(const char *s, const char *const *names, int nnames, DimExpr *out);

#endif
