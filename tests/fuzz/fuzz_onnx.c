/* fuzz_onnx.c: libFuzzer target for the ONNX reader (make fuzz-onnx).
 *
 * Each input is imported as the bytes of a model (onnx_read_mem: protobuf-c, the
 * tensor checks, every handler, folding through the interpreter, inference). A
 * rejected input must come back with a message; an accepted one must have its
 * outputs among its tensors and a constant's data where its dtype and shape say.
 * Then the same bytes are imported for every size of the model's dim_params
 * (onnx/every.c: two imports compared): refused with a message, or every tensor's
 * expressions give its dims at the probe sizes, and the graph instantiates at the
 * smallest sizes of the ranges or says why not.
 * Seed it with tests/onnx/models/NAME/model.onnx and data/node/ models. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../onnx/onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Arena *a = arena_new();
	Diag d;
	memset(&d, 0, sizeof d);
	Graph *g = onnx_read_mem(a, "fuzz.onnx", data, size, NULL, &d);
	if (!g && !d.msg[0])
		__builtin_trap();
	for (int i = 0; g && i < g->noutputs; i++)
		if (g->outputs[i] < 0 || g->outputs[i] >= g->ntensors)
			__builtin_trap();
	for (int i = 0; g && i < g->ntensors; i++) {
		const Tensor *t = &g->tensors[i];
		if (t->data) {
			size_t n = (size_t)ir_dtype_size(t->dtype);
			for (int k = 0; k < t->rank; k++)
				n *= (size_t)t->dim[k];
			volatile uint8_t last = n ? ((const uint8_t *)t->data)[n - 1] : 0;
			(void)last;
		}
	}
	arena_free(a);
	a = arena_new();
	memset(&d, 0, sizeof d);
	IrDimRange r = {"seq", 1, 64};
	IrShapeLookup every = {NULL, NULL, true, &r, size % 2 ? 1 : 0};
	OnnxOptions o = {NULL, 0, NULL, 0, &every};
	g = onnx_read_mem(a, "fuzz.onnx", data, size, &o, &d);
	if (!g && !d.msg[0])
		__builtin_trap();
	const IrSymbolic *s = g ? g->sym : NULL;
	for (int t = 0; s && t < g->ntensors; t++)
		for (int k = 0; k < g->tensors[t].rank; k++) {
			int64_t v;
			if (ir_dim_eval(&s->dim[t][k], s->probe, &v) || v != g->tensors[t].dim[k])
				__builtin_trap();
		}
	if (s) {
		Diag di;
		Graph *gi = ir_sym_at(g, s->lo, false, &di);
		if (!gi && !di.msg[0])
			__builtin_trap();
	}
	arena_free(a);
	return 0;
}
