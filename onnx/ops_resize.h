/* ops_resize.h: the handlers of ops_resize.c, for ops.c's table. */
#ifndef FUSEC_ONNX_OPS_RESIZE_H
#define FUSEC_ONNX_OPS_RESIZE_H

#include "builders.h"

HANDLER(h_resize);
HANDLER(h_upsample);

#endif
