/* test.h: what every unit-test file includes: cmocka, the layers, and helpers. */
#ifndef FUSEC_TEST_H
#define FUSEC_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../ir/ir.h"
#include "../../passes/passes.h"

#define SUITE(name) extern const struct CMUnitTest name##_tests[]; extern const size_t name##_ntests;
#include "suites.def"
#undef SUITE

#define SUITE_COUNT(arr) (sizeof(arr) / sizeof((arr)[0]))

/* Read a graph from text; fails the test with the message when it does not validate. */
Graph *test_graph(Arena *a, const char *file, const char *text);
/* Read a graph that must fail; returns the formatted message (static buffer). */
const char *test_graph_error(const char *file, const char *text);

/* pass_search, then pass_verify: fails the test with the verifier's message when
 * the schedule is unsound. Every test that compiles a graph searches through it. */
Schedule *test_search(const Graph *g, const SearchOptions *o);

/* ptxas on PATH or in /usr/local/cuda/bin; NULL when the CUDA toolkit is absent. */
const char *test_find_ptxas(void);
/* Assemble ptx text for arch: ptxas's exit status, or -1 without ptxas. */
int test_ptxas(const char *ptx, const char *arch);

#endif
