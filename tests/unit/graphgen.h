/* graphgen.h: fusec-graph/1 documents built in code, for the backend tests.
 *
 * A GenGraph collects inputs (each with the range its random values are drawn
 * from), ops, syncs and outputs, and renders them as one JSON document. Tensor names
 * are generated ("x3", "t7"). gen_random fills a GenGraph with a seeded random graph
 * of 5-30 ops: elementwise unary, binary and scalar ops with broadcasting,
 * comparisons and where, casts, reductions, views and syncs, with several outputs.
 * The same seed always gives the same text.
 * Memory: everything lives in the GenGraph's arena and buffers; gen_free releases
 * them. gen_text returns a malloc'd string. */
#ifndef FUSEC_TEST_GRAPHGEN_H
#define FUSEC_TEST_GRAPHGEN_H

#include <stdbool.h>
#include <stdint.h>

#include "../../ir/ir.h"

typedef struct {
	const char *name;
	DType dtype;
	double lo, hi;         /* random values: [lo, hi) floats, [lo, hi] ints */
	bool special;          /* also plant NaN, +inf and -inf (float dtypes) */
	double step;           /* > 0: floats rounded to multiples of it (ties) */
} GenInput;

typedef struct {
	Arena *arena;
	Buf inputs, ops, outputs;  /* JSON members / elements, comma separated */
	int ninputs, nops, noutputs;
	int ntemps;
	GenInput *in;
	int cap_in;
} GenGraph;

void gen_init(GenGraph *g);
void gen_free(GenGraph *g);
/* A new graph input of the given dtype and shape; returns its name. Its GenInput is
 * g->in[g->ninputs - 1] until the next input, for setting special and step. */
const char *gen_input(GenGraph *g, DType dt, int rank, const int64_t *dim, double lo,
		      double hi);
/* An op; attrs are extra JSON members without braces ("\"scalar\": 2") or NULL.
 * Returns the name of its result. g->nops before the call is its op index. */
const char *gen_op(GenGraph *g, const char *op, int nin, const char *const *in,
		   const char *attrs);
void gen_sync(GenGraph *g);
void gen_output(GenGraph *g, const char *tensor);
const GenInput *gen_find_input(const GenGraph *g, const char *name);
/* The whole document (malloc'd). */
char *gen_text(const GenGraph *g, const char *name);

/* A random graph for seed (5-30 ops, at most 4096 elements per tensor). */
void gen_random(GenGraph *g, uint64_t seed);

#endif
