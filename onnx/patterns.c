/* patterns.c: ONNX node patterns the importer folds into one fusec op.
 *
 * torch.onnx.export writes GELU out as five nodes before opset 20 (nn.GELU,
 * F.gelu: BERT, ViT):
 *
 *     d = Div(x, sqrt 2)   e = Erf(d)   a = Add(e, 1)   h = Mul(x, a)   y = Mul(h, 0.5)
 *
 * (Add and Mul in either operand order). Imported node by node, that is six fusec
 * ops whose f16/bf16 intermediates are each rounded, and an erf per element; as one
 * gelu op it is the function the model means, computed once in f32. onnx_gelu_find
 * finds the pattern by structure alone (through an index of producers and readers
 * built once): each intermediate is read once, by the next node, and is no graph output. The constants are checked when the last node comes
 * (import.c): they may be Constant nodes anywhere before it. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "import.h"
#include "patterns.h"

void onnx_index_build(OnnxIndex *x, const Onnx__GraphProto *gp)
{
	memset(x, 0, sizeof *x);
	x->gp = gp;
	for (size_t i = 0; i < gp->n_node; i++) {
		const Onnx__NodeProto *n = gp->node[i];
		for (size_t k = 0; k < n->n_output; k++)
			if (n->output[k] && n->output[k][0])
				imp_map_put(&x->producer, n->output[k], (void *)(intptr_t)(i + 1));
		for (size_t k = 0; k < n->n_input; k++)
			if (n->input[k] && n->input[k][0]) {
				intptr_t c = (intptr_t)imp_map_get(&x->readers, n->input[k]);
				imp_map_put(&x->readers, n->input[k], (void *)(c + 1));
			}
	}
	for (size_t i = 0; i < gp->n_output; i++)
		if (gp->output[i]->name) {
			intptr_t c = (intptr_t)imp_map_get(&x->readers, gp->output[i]->name);
			imp_map_put(&x->readers, gp->output[i]->name, (void *)(c + 2));  /* never single */
		}
}

void onnx_index_free(OnnxIndex *x)
{
	imp_map_free(&x->producer);
	imp_map_free(&x->readers);
}

static bool is(const Onnx__NodeProto *n, const char *op, size_t nin)
{
	return n->op_type && !strcmp(n->op_type, op) && n->n_input == nin && n->n_output == 1 &&
	       (!n->domain || !n->domain[0] || !strcmp(n->domain, "ai.onnx"));
}

/* The node before `upto` that makes `name` when it is an op of kind `op`, read by one
 * node only; else -1. */
static int single(const OnnxIndex *x, const char *name, size_t upto, const char *op, size_t nin)
{
	if (!name || !name[0])
		return -1;
	intptr_t p = (intptr_t)imp_map_get((NameMap *)&x->producer, name) - 1;
	if (p < 0 || (size_t)p >= upto || !is(x->gp->node[p], op, nin) ||
	    (intptr_t)imp_map_get((NameMap *)&x->readers, name) != 1)
		return -1;
	return (int)p;
}

int onnx_gelu_find(const OnnxIndex *ix, size_t last, OnnxGelu *g)
{
	const Onnx__GraphProto *gp = ix->gp;
	const Onnx__NodeProto *m2 = gp->node[last];
	if (!is(m2, "Mul", 2))
		return 0;
	for (int side = 0; side < 2; side++) {
		const char *h = m2->input[side];
		int im1 = single(ix, h, last, "Mul", 2);
		if (im1 < 0)
			continue;
		const Onnx__NodeProto *m1 = gp->node[im1];
		for (int s1 = 0; s1 < 2; s1++) {
			const char *a = m1->input[s1], *x = m1->input[1 - s1];
			int ia = single(ix, a, (size_t)im1, "Add", 2);
			if (ia < 0)
				continue;
			const Onnx__NodeProto *add = gp->node[ia];
			for (int s2 = 0; s2 < 2; s2++) {
				int ie = single(ix, add->input[s2], (size_t)ia, "Erf", 1);
				if (ie < 0)
					continue;
				int id = single(ix, gp->node[ie]->input[0], (size_t)ie, "Div", 2);
				if (id < 0 || strcmp(gp->node[id]->input[0], x))
					continue;
				*g = (OnnxGelu){
					.node = {id, ie, ia, im1, (int)last},
					.x = x,
					.sqrt2 = gp->node[id]->input[1],
					.one = add->input[1 - s2],
					.half = m2->input[1 - side],
				};
				return 1;
			}
		}
	}
	return 0;
}

bool onnx_gelu_constants(double sqrt2, double one, double half, double eps)
{
	/* sqrt 2 as the model's dtype holds it: within half its epsilon */
	return fabs(sqrt2 - sqrt(2.0)) <= 0.5 * eps * sqrt(2.0) && one == 1.0 && half == 0.5;
}
