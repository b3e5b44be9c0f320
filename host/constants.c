/* constants.c: the values of a graph file's constants (docs/graph-format.md).
 *
 * ir/build.c reads a `constants` entry into a ConstSource (inline values, or the
 * path of a .npy file beside the graph) without touching host tensors; this turns
 * each into Tensor.data, in the graph's arena, as the dtype stores it (floats
 * rounded to nearest even, ints wrapped, as host_set does). A .npy file must hold
 * exactly the constant's dtype and shape (bf16 constants read <f4 files). */
#include <string.h>

#include "host.h"

static int load_one(Graph *g, Tensor *t, Diag *d)
{
	const ConstSource *src = t->src;
	HostTensor h;
	if (src->npy) {
		if (npy_read_file(src->npy, &h, d))
			return -1;
		if (h.dtype == DT_F32 && t->dtype == DT_BF16) {
			HostTensor c;
			if (host_alloc(&c, DT_BF16, h.rank, h.dim, d)) {
				host_free(&h);
				return -1;
			}
			for (int64_t k = 0; k < h.n; k++)
				host_set(&c, k, host_get(&h, k));
			host_free(&h);
			h = c;
		}
		bool same = h.dtype == t->dtype && h.rank == t->rank &&
			    !memcmp(h.dim, t->dim, sizeof(int64_t) * (size_t)t->rank);
		if (!same) {
			char want[96], got[96];
			host_shape_text(t->dtype, t->rank, t->dim, want, sizeof want);
			host_shape_text(h.dtype, h.rank, h.dim, got, sizeof got);
			host_free(&h);
			diag_set(d, g->file, src->line, src->col,
				 "constants.%s: %s holds %s, the constant is %s", t->name, src->npy,
				 got, want);
			return -1;
		}
	} else {
		if (host_alloc(&h, t->dtype, t->rank, t->dim, d))
			return -1;
		for (int64_t k = 0; k < h.n; k++) {
			if (src->ivalues)
				host_set_i64(&h, k, src->ivalues[k]);
			else
				host_set(&h, k, src->values[k]);
		}
	}
	size_t bytes = (size_t)h.n * (size_t)ir_dtype_size(h.dtype);
	void *data = arena_alloc(g->arena, bytes ? bytes : 1);
	memcpy(data, h.data, bytes);
	host_free(&h);
	t->data = data;
	return 0;
}

int host_load_constants(Graph *g, Diag *d)
{
	for (int i = 0; i < g->ntensors; i++) {
		Tensor *t = &g->tensors[i];
		if (t->src && !t->data && load_one(g, t, d))
			return -1;
	}
	return 0;
}
