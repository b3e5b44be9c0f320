/* ops_math.h: the handlers of ops_math.c, for ops.c's table. */
#ifndef FUSEC_ONNX_OPS_MATH_H
#define FUSEC_ONNX_OPS_MATH_H

#include "builders.h"

HANDLER(h_arc);
HANDLER(h_dequantize);
HANDLER(h_dyn_quantize);
HANDLER(h_hyperbolic);
HANDLER(h_lrn);
HANDLER(h_mvn);
HANDLER(h_nllloss);
HANDLER(h_quantize);
HANDLER(h_sce_loss);
HANDLER(h_shrink);
HANDLER(h_window);

#endif
