/* ops.h: the table of ONNX op handlers (ops.c), for import.c, which runs each
 * node through its handler, and for the docs and the conformance run. Private to
 * onnx/. */
#ifndef FUSEC_ONNX_OPS_H
#define FUSEC_ONNX_OPS_H

#include "builders.h"

const OnnxHandler *onnx_handler(const char *op_type);  /* NULL when unmapped */
/* The ONNX ops with a mapping, in table order (for docs and the conformance run). */
int onnx_handler_count(void);
const char *onnx_handler_name(int i);

#endif
