/* ops_index.h: the handlers of ops_index.c, for ops.c's table. */
#ifndef FUSEC_ONNX_OPS_INDEX_H
#define FUSEC_ONNX_OPS_INDEX_H

#include "builders.h"

HANDLER(h_conv_transpose);
HANDLER(h_cumsum);
HANDLER(h_einsum);
HANDLER(h_eyelike);
HANDLER(h_gathernd);
HANDLER(h_hardmax);
HANDLER(h_onehot);
HANDLER(h_scatter_elements);
HANDLER(h_scatternd);

#endif
