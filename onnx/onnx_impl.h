/* onnx_impl.h: what load.c and import.c share (private to onnx/). */
#ifndef FUSEC_ONNX_IMPL_H
#define FUSEC_ONNX_IMPL_H

#include "onnx.h"

/* Unpack the bytes of a ModelProto and import its graph. `dir` is the folder
 * external data files are read from; NULL refuses external data. With `own`, buf
 * is malloc'd and freed as soon as it is unpacked (large models hold their
 * weights twice otherwise). */
Graph *onnx_import_bytes(Arena *a, const char *file, const char *dir, const void *buf,
			 size_t len, bool own, const OnnxOptions *o, Diag *d);

#endif
