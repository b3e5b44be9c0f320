/* patterns.h: ONNX node patterns the importer folds into one op (patterns.c). */
#ifndef FUSEC_ONNX_PATTERNS_H
#define FUSEC_ONNX_PATTERNS_H

#include <stdbool.h>
#include <stddef.h>

#include "values.h"

struct Onnx__GraphProto;

/* Each value's producing node and its readers (node inputs; a graph output counts
 * as two), for matching patterns without scanning the graph. */
typedef struct {
	const struct Onnx__GraphProto *gp;
	NameMap producer;      /* name -> node index + 1 */
	NameMap readers;       /* name -> count */
} OnnxIndex;

void onnx_index_build(OnnxIndex *x, const struct Onnx__GraphProto *gp);
void onnx_index_free(OnnxIndex *x);

/* GELU written out: node[0..n) its nodes in graph order, the last ending it; x its
 * operand; k[0..nk) the constants it reads and want[] the values they must have. */
typedef struct {
	int node[8], n;
	bool tanh;             /* the tanh approximation */
	const char *x, *k[5];
	double want[5];
	int nk;
} OnnxGelu;

/* 1 when node `last` ends a GELU written out (by structure: the constants are not
 * looked at), filling g; else 0. */
int onnx_gelu_find(const OnnxIndex *ix, size_t last, OnnxGelu *g);
/* A constant's value v is `want` as a dtype of machine epsilon eps holds it. */
bool onnx_gelu_constant(double v, double want, double eps);

#endif
