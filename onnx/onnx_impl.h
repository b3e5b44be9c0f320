/* onnx_impl.h: what the ONNX rooms below onnx.h share: protobuf unpacking and
 * external data paths (proto.c), and the import of a model's bytes (import.c), which
 * load.c calls. Private to onnx/. */
#ifndef FUSEC_ONNX_IMPL_H
#define FUSEC_ONNX_IMPL_H

#include "onnx.h"

struct ProtobufCAllocator;
struct Onnx__ModelProto;

/* Unpack a ModelProto (protobuf-c), refusing first a model whose messages nest
 * more than ONNX_MAX_NESTING deep, which would overflow protobuf-c's recursion
 * (proto.c). NULL with msg filled when refused or corrupt. protobuf's own C++
 * parser stops at 100 levels; real models nest under 20. */
enum { ONNX_MAX_NESTING = 100 };
struct Onnx__ModelProto *onnx_unpack(struct ProtobufCAllocator *pa, const void *buf,
				     size_t len, char *msg, size_t size);

/* Whether an external data location stays inside the model's folder: relative,
 * without ".." (proto.c). */
bool onnx_safe_location(const char *loc);

/* Unpack the bytes of a ModelProto and import its graph (import.c). `dir` is the folder
 * external data files are read from; NULL refuses external data. With `own`, buf
 * is malloc'd and freed as soon as it is unpacked (large models hold their
 * weights twice otherwise). */
Graph *onnx_import_bytes(Arena *a, const char *file, const char *dir, const void *buf,
			 size_t len, bool own, const OnnxOptions *o, Diag *d);

#endif
