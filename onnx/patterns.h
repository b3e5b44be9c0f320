/* patterns.h: ONNX node patterns the importer folds into one op (patterns.c). */
#ifndef FUSEC_ONNX_PATTERNS_H
#define FUSEC_ONNX_PATTERNS_H

#include <stdbool.h>
#include <stddef.h>

#include "import.h"

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

/* GELU written out: node[] = the Div, Erf, Add, Mul and Mul, the last being `last`;
 * the names of x and of the three constants (sqrt 2, 1, 0.5). */
typedef struct {
	int node[5];
	const char *x, *sqrt2, *one, *half;
} OnnxGelu;

/* 1 when node `last` ends a GELU written out (by structure: the constants are not
 * looked at), filling g; else 0. */
int onnx_gelu_find(const OnnxIndex *ix, size_t last, OnnxGelu *g);
/* The constants' values make it GELU, for a dtype of machine epsilon eps. */
bool onnx_gelu_constants(double sqrt2, double one, double half, double eps);

#endif
