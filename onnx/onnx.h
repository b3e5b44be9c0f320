/* onnx.h: reading ONNX models into fusec's graph IR (docs/onnx.md).
 *
 * In:  an ONNX ModelProto (a .onnx file, parsed with protobuf-c from the onnx.proto
 *      Debian ships), its external data files beside it, and fixed shapes for
 *      inputs whose dims the model leaves symbolic.
 * Out: a Graph (ir/ir.h) as the JSON and YAML readers build it: every ONNX node is
 *      decomposed into fusec's primitive ops, shapes are static, initializers,
 *      Constant nodes and everything computable at import time (shape chains,
 *      weight transposes, folded batch norms) are constants (Tensor.data).
 * Memory: the Graph and every constant live in the arena given; the protobuf
 *      message and the scratch values are freed before returning.
 *
 * Errors name the node ("node 12 'Conv_3' (Conv, opset 13): ..."), come back in the
 * Diag, and leave nothing allocated outside the arena. Prefix: onnx_. */
#ifndef FUSEC_ONNX_H
#define FUSEC_ONNX_H

#include <stdbool.h>
#include <stddef.h>

#include "../host/host.h"

/* A fixed shape for one graph input: --input-shape NAME=1x3x224x224. */
typedef IrInputShape OnnxInputShape;

/* A value for one graph input, which then becomes a constant (a shape or axes
 * tensor a model takes as an input, say). */
typedef struct {
	const char *name;
	const HostTensor *value;
} OnnxInputValue;

typedef struct {
	const OnnxInputShape *shapes;
	int nshapes;
	const OnnxInputValue *values;
	int nvalues;
	const IrShapeLookup *lookup;  /* or NULL: the shape of an input not static that no
				       * --input-shape gives, from the run's data */
} OnnxOptions;

/* Whether a file looks like ONNX: the extension .onnx, or a protobuf that starts
 * with ModelProto's ir_version field (byte 0x08), which no JSON or YAML text does. */
bool onnx_sniff(const char *path, const void *head, size_t n);


/* Read and import a model. `path` is also where external data files are looked
 * for (its folder). Returns NULL with *d filled on any error. */
Graph *onnx_read_file(Arena *a, const char *path, const OnnxOptions *o, Diag *d);
/* The external data files a model's tensors name (initializers and node attributes),
 * each once, as paths beside the model, in a; returns how many (compile -M). */
int onnx_external_files(Arena *a, const char *path, const char ***files);
Graph *onnx_read_mem(Arena *a, const char *file, const void *buf, size_t len,
		     const OnnxOptions *o, Diag *d);

/* Whether an ONNX op (default domain) has a mapping to fusec ops (onnx/ops.c). */
bool onnx_op_mapped(const char *op_type);

/* ---- internal: proto.c's, for load.c, import.c and values.c ------------------- */

struct Onnx__TensorProto;
/* Convert a TensorProto (inline, raw or external data; `dir` is the model's
 * folder, NULL when external data is not allowed) into a host tensor. A rank-0
 * tensor gets rank 0 and n 1. Returns 0, or -1 with msg filled. */
int onnx_tensor(const struct Onnx__TensorProto *tp, const char *dir, HostTensor *out,
		char *msg, size_t size);
/* The same, but raw data of ONNX_ARENA_MIN bytes or more, which the importer's
 * protobuf allocator put in the graph's arena, is not copied: out->data points at
 * it and must not be freed. Returns 1 then, 0 for a copy, -1 on error. */
enum { ONNX_ARENA_MIN = 4096 };
int onnx_tensor_borrow(const struct Onnx__TensorProto *tp, const char *dir, HostTensor *out,
		       char *msg, size_t size);
/* The fusec dtype of an ONNX element type, or -1 when fusec has none. */
int onnx_dtype(int elem_type);
const char *onnx_elem_name(int elem_type);

#endif
