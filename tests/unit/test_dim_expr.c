/* test_dim_expr.c: sizes as expressions over named dims (ir/dim_expr.c): the
 * canonical form, arithmetic and its limits, printing and parsing back, and the
 * values at a binding. */
#include <stdint.h>
#include <string.h>

#include "test.h"

static const char *const names[] = {"batch", "seq", "heads"};

static const char *text(const DimExpr *e)
{
	static char out[256];
	Buf b = {0};
	ir_dim_print(&b, e, names);
	snprintf(out, sizeof out, "%s", b.data ? b.data : "");
	buf_free(&b);
	return out;
}

static DimExpr parsed(const char *s)
{
	DimExpr e;
	if (ir_dim_parse(s, names, 3, &e))
		fail_msg("'%s' does not parse", s);
	return e;
}

static void test_canonical_form(void **state)
{
	(void)state;
	DimExpr b = ir_dim_sym(0), s = ir_dim_sym(1), bs, sb, sum1, sum2;
	assert_int_equal(ir_dim_mul(&b, &s, &bs), 0);
	assert_int_equal(ir_dim_mul(&s, &b, &sb), 0);
	assert_true(ir_dim_equal(&bs, &sb));
	assert_string_equal(text(&bs), "batch*seq");
	/* terms sorted by degree, the constant last, whatever the order of the sums */
	DimExpr one = ir_dim_const(1);
	assert_int_equal(ir_dim_add(&one, &bs, &sum1), 0);
	assert_int_equal(ir_dim_add(&sum1, &s, &sum1), 0);
	assert_int_equal(ir_dim_add(&s, &one, &sum2), 0);
	assert_int_equal(ir_dim_add(&sum2, &bs, &sum2), 0);
	assert_true(ir_dim_equal(&sum1, &sum2));
	assert_string_equal(text(&sum1), "batch*seq+seq+1");
	/* a term that cancels leaves the form */
	DimExpr m = ir_dim_const(-1), neg, zero;
	assert_int_equal(ir_dim_mul(&s, &m, &neg), 0);
	assert_int_equal(ir_dim_add(&s, &neg, &zero), 0);
	assert_int_equal(zero.n, 0);
	int64_t v;
	assert_true(ir_dim_is_const(&zero, &v));
	assert_int_equal(v, 0);
	int k;
	assert_true(ir_dim_is_sym(&s, &k));
	assert_int_equal(k, 1);
	assert_false(ir_dim_is_sym(&bs, &k));
	assert_false(ir_dim_is_const(&s, NULL));
}

static void test_exact_quotient(void **state)
{
	(void)state;
	/* reshape [batch, seq, 768] to [-1, 768]: -1 is batch*seq */
	DimExpr total = parsed("batch*seq*768"), d = ir_dim_const(768), q;
	assert_int_equal(ir_dim_div(&total, &d, &q), 0);
	assert_string_equal(text(&q), "batch*seq");
	DimExpr bs2 = parsed("2*batch*seq+4*seq"), two_seq = parsed("2*seq");
	assert_int_equal(ir_dim_div(&bs2, &two_seq, &q), 0);
	assert_string_equal(text(&q), "batch+2");
	/* no exact quotient: a sum as divisor, a coefficient or a symbol that does not
	 * divide every term */
	DimExpr sum = parsed("seq+1"), three = ir_dim_const(3), heads = ir_dim_sym(2);
	assert_int_equal(ir_dim_div(&total, &sum, &q), -1);
	assert_int_equal(ir_dim_div(&bs2, &three, &q), -1);
	assert_int_equal(ir_dim_div(&bs2, &heads, &q), -1);
}

static void test_limits(void **state)
{
	(void)state;
	DimExpr big = ir_dim_const(INT64_MAX), two = ir_dim_const(2), r;
	assert_int_equal(ir_dim_mul(&big, &two, &r), -1);
	assert_int_equal(ir_dim_add(&big, &big, &r), -1);
	/* more than IR_TERM_MAX terms */
	DimExpr e = ir_dim_const(1), p = ir_dim_sym(0);
	int rc = 0;
	for (int i = 0; i < IR_TERM_MAX + 1 && !rc; i++) {
		rc = ir_dim_add(&e, &p, &e);
		if (!rc)
			rc = ir_dim_mul(&p, &(DimExpr){1, {{1, {1, 0}}}}, &p);
	}
	assert_int_equal(rc, -1);
	/* a value past int64 at a binding */
	int64_t v, val[3] = {INT64_MAX / 2, 3, 1};
	DimExpr bs = parsed("batch*seq");
	assert_int_equal(ir_dim_eval(&bs, val, &v), -1);
	val[0] = 8;
	assert_int_equal(ir_dim_eval(&bs, val, &v), 0);
	assert_int_equal(v, 24);
}

static void test_parse_and_print(void **state)
{
	(void)state;
	static const char *const round[] = {"batch*seq", "2*seq", "batch*seq+seq+1", "768",
					    "batch*batch*heads", "-seq+batch", "0"};
	for (size_t i = 0; i < sizeof round / sizeof round[0]; i++) {
		DimExpr e = parsed(round[i]), again = parsed(text(&e));
		assert_true(ir_dim_equal(&e, &again));
	}
	assert_string_equal(text(&(DimExpr){0}), "0");
	DimExpr e = parsed(" ( batch + 1 ) * ( seq - 1 ) ");
	assert_string_equal(text(&e), "batch*seq-batch+seq-1");
	int64_t v, val[3] = {4, 10, 1};
	assert_int_equal(ir_dim_eval(&e, val, &v), 0);
	assert_int_equal(v, 45);
	/* refused: unknown names, stray text, a number past int64, parentheses left open */
	static const char *const bad[] = {"tokens", "batch**seq", "batch*", "(seq",
					  "9223372036854775808", "seq/2", "", "1e3"};
	DimExpr x;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (!ir_dim_parse(bad[i], names, 3, &x))
			fail_msg("'%s' parsed", bad[i]);
	/* the most negative coefficient prints as a number (no overflow) */
	DimExpr lo = parsed("-9223372036854775807-1");
	assert_string_equal(text(&lo), "-9223372036854775808");
}

const struct CMUnitTest dim_expr_tests[] = {
	cmocka_unit_test(test_canonical_form),
	cmocka_unit_test(test_exact_quotient),
	cmocka_unit_test(test_limits),
	cmocka_unit_test(test_parse_and_print),
};
const size_t dim_expr_ntests = SUITE_COUNT(dim_expr_tests);
