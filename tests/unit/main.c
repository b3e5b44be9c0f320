/* main.c: runs every cmocka suite as one group, so the run ends with one summary. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

Graph *test_graph(Arena *a, const char *file, const char *text)
{
	Diag d;
	Graph *g = ir_read_mem(a, file, text, strlen(text), FMT_AUTO, &d);
	if (!g) {
		char msg[1100];
		diag_format(&d, msg, sizeof msg);
		fail_msg("graph did not validate: %s", msg);
	}
	return g;
}

Schedule *test_search(const Graph *g, const SearchOptions *o)
{
	Schedule *s = pass_search(g, o);
	Diag d;
	if (pass_verify(s, &d)) {
		char msg[1100];
		diag_format(&d, msg, sizeof msg);
		fail_msg("%s: the schedule does not verify: %s", g->name, msg);
	}
	return s;
}

const char *test_graph_error(const char *file, const char *text)
{
	static char msg[1100];
	Arena *a = arena_new();
	Diag d;
	Graph *g = ir_read_mem(a, file, text, strlen(text), FMT_AUTO, &d);
	if (g)
		snprintf(msg, sizeof msg, "(no error)");
	else
		diag_format(&d, msg, sizeof msg);
	arena_free(a);
	return msg;
}

const char *test_find_ptxas(void)
{
	static char path[1024];
	const char *env = getenv("PATH");
	if (env) {
		char *dup = strdup(env);
		for (char *dir = strtok(dup, ":"); dir; dir = strtok(NULL, ":")) {
			snprintf(path, sizeof path, "%s/ptxas", dir);
			if (access(path, X_OK) == 0) {
				free(dup);
				return path;
			}
		}
		free(dup);
	}
	if (access("/usr/local/cuda/bin/ptxas", X_OK) == 0)
		return "/usr/local/cuda/bin/ptxas";
	return NULL;
}

int test_ptxas(const char *ptx, const char *arch)
{
	const char *ptxas = test_find_ptxas();
	if (!ptxas)
		return -1;
	char file[] = "/tmp/fusec-test-XXXXXX";
	int fd = mkstemp(file);
	if (fd < 0)
		return 1;
	FILE *f = fdopen(fd, "w");
	fputs(ptx, f);
	fclose(f);
	char cmd[1200];
	snprintf(cmd, sizeof cmd, "'%s' -arch=%s '%s' -o /dev/null 2>&1", ptxas, arch, file);
	int rc = system(cmd);
	unlink(file);
	return rc;
}

static void test_arena_zeroed_and_aligned(void **state)
{
	(void)state;
	Arena *a = arena_new();
	for (int i = 1; i < 5000; i += 37) {
		unsigned char *p = arena_alloc(a, (size_t)i);
		assert_int_equal((uintptr_t)p % 16, 0);
		for (int j = 0; j < i; j++)
			assert_int_equal(p[j], 0);
		memset(p, 0xab, (size_t)i);
	}
	char *big = arena_alloc(a, 1 << 20);
	big[(1 << 20) - 1] = 1;
	assert_string_equal(arena_printf(a, "%s-%d", "x", 42), "x-42");
	arena_free(a);
}

static void test_buf_printf_grows(void **state)
{
	(void)state;
	Buf b = {0};
	for (int i = 0; i < 1000; i++)
		buf_printf(&b, "%d,", i);
	assert_int_equal(b.len, strlen(b.data));
	assert_memory_equal(b.data, "0,1,2,", 6);
	buf_free(&b);
}

static void test_diag_format(void **state)
{
	(void)state;
	Diag d;
	char s[1100];
	diag_set(&d, "g.yaml", 7, 5, "op '%s' (ops[%d]): bad", "add", 2);
	diag_format(&d, s, sizeof s);
	assert_string_equal(s, "g.yaml:7:5: error: op 'add' (ops[2]): bad");
	diag_set(&d, "g.json", 3, 0, "x");
	diag_format(&d, s, sizeof s);
	assert_string_equal(s, "g.json:3: error: x");
}

static void test_fmt_double_shortest(void **state)
{
	(void)state;
	static const struct { double v; const char *want; } cases[] = {
		{2.0, "2"}, {10.0, "10"}, {100.0, "100"}, {-3.0, "-3"}, {0.1, "0.1"},
		{1e-5, "1e-05"}, {1e300, "1e+300"}, {1.0 / 3.0, "0.3333333333333333"},
		{1.0 / 0.0, "inf"}, {-1.0 / 0.0, "-inf"}, {-0.0, "-0.0"}, {0.0, "0"},
		{1e308 * 10, "inf"}, {9.2233720368547758e18, "9.223372036854776e+18"},
	};
	char buf[40];
	for (size_t i = 0; i < SUITE_COUNT(cases); i++) {
		fmt_double(buf, sizeof buf, cases[i].v);
		assert_string_equal(buf, cases[i].want);
		assert_true(strtod(buf, NULL) == cases[i].v);
		assert_int_equal(signbit(strtod(buf, NULL)) != 0, signbit(cases[i].v) != 0);
	}
}

const struct CMUnitTest support_tests[] = {
	cmocka_unit_test(test_fmt_double_shortest),
	cmocka_unit_test(test_arena_zeroed_and_aligned),
	cmocka_unit_test(test_buf_printf_grows),
	cmocka_unit_test(test_diag_format),
};
const size_t support_ntests = SUITE_COUNT(support_tests);

int main(void)
{
	static const struct { const struct CMUnitTest *tests; const size_t *n; } suites[] = {
#define SUITE(name) {name##_tests, &name##_ntests},
#include "suites.def"
#undef SUITE
	};
	size_t total = 0;
	for (size_t i = 0; i < SUITE_COUNT(suites); i++)
		total += *suites[i].n;
	struct CMUnitTest *all = calloc(total, sizeof *all);
	size_t k = 0;
	for (size_t i = 0; i < SUITE_COUNT(suites); i++)
		for (size_t j = 0; j < *suites[i].n; j++)
			all[k++] = suites[i].tests[j];
	if (getenv("FUSEC_TEST_LIST")) { /* the names in run order, one a line (tests/valgrind/run.sh) */
		for (size_t i = 0; i < total; i++)
			printf("%s\n", all[i].name);
		free(all);
		return 0;
	}
	if (getenv("FUSEC_TEST"))      /* a glob over test names: FUSEC_TEST='test_coop*' */
		cmocka_set_test_filter(getenv("FUSEC_TEST"));
	if (getenv("FUSEC_TEST_SKIP")) /* a glob of tests not to run */
		cmocka_set_skip_filter(getenv("FUSEC_TEST_SKIP"));
	/* FUSEC_TEST_FROM=NAME: start at that test, in run order (resuming a slow run,
	 * tests/valgrind/run.sh) */
	size_t from = 0;
	for (size_t i = 0; getenv("FUSEC_TEST_FROM") && i < total; i++)
		if (!strcmp(all[i].name, getenv("FUSEC_TEST_FROM")))
			from = i;
	int failed = _cmocka_run_group_tests("fusec", all + from, total - from, NULL, NULL);
	free(all);
	return failed ? 1 : 0;
}
