/* patterns.c: ONNX node patterns the importer folds into one fusec op.
 *
 * torch.onnx.export writes GELU out as five nodes before opset 20 (nn.GELU,
 * F.gelu: BERT, ViT):
 *
 *     d = Div(x, sqrt 2)   e = Erf(d)   a = Add(e, 1)   h = Mul(x, a)   y = Mul(h, 0.5)
 *
 * (Add and Mul in either operand order), and GPT-2's gelu_new, the tanh form, as
 * eight: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). Imported node by node, that is six fusec
 * ops or more, whose f16/bf16 intermediates are each rounded, and an erf per element; as one
 * gelu op it is the function the model means, computed once in f32. onnx_gelu_find
 * finds the pattern by structure alone (through an index of producers and readers
 * built once): each intermediate is read once, by the next node, and is no graph output. The constants are checked when the last node comes
 * (import.c): they may be Constant nodes anywhere before it. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "values.h"
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

/* The erf form, ending at Mul `last`: Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5). */
static int find_erf(const OnnxIndex *ix, size_t last, OnnxGelu *g)
{
	const Onnx__GraphProto *gp = ix->gp;
	const Onnx__NodeProto *m2 = gp->node[last];
	for (int side = 0; side < 2; side++) {
		int im1 = single(ix, m2->input[side], last, "Mul", 2);
		if (im1 < 0)
			continue;
		const Onnx__NodeProto *m1 = gp->node[im1];
		for (int s1 = 0; s1 < 2; s1++) {
			const char *x = m1->input[1 - s1];
			int ia = single(ix, m1->input[s1], (size_t)im1, "Add", 2);
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
					.node = {id, ie, ia, im1, (int)last}, .n = 5, .x = x,
					.k = {gp->node[id]->input[1], add->input[1 - s2], m2->input[1 - side]},
					.want = {1.4142135623730951, 1, 0.5}, .nk = 3,
				};
				return 1;
			}
		}
	}
	return 0;
}

/* The operand of two-input node n that is not `name`, or NULL. */
static const char *other(const Onnx__NodeProto *n, const char *name)
{
	return !strcmp(n->input[0], name) ? n->input[1] : !strcmp(n->input[1], name) ? n->input[0] : NULL;
}

/* The tanh form (GPT-2's gelu_new), ending at Mul `last`:
 * Mul(Mul(x, 0.5), Add(Tanh(Mul(Add(x, Mul(Pow(x, 3), 0.044715)), sqrt(2/pi))), 1)). */
static int find_tanh(const OnnxIndex *ix, size_t last, OnnxGelu *g)
{
	const Onnx__GraphProto *gp = ix->gp;
	const Onnx__NodeProto *y = gp->node[last];
	for (int side = 0; side < 2; side++) {
		int iu = single(ix, y->input[side], last, "Add", 2);
		int ih = single(ix, y->input[1 - side], last, "Mul", 2);
		if (iu < 0 || ih < 0)
			continue;
		const Onnx__NodeProto *u = gp->node[iu], *h = gp->node[ih];
		for (int s1 = 0; s1 < 2; s1++) {
			int it = single(ix, u->input[s1], (size_t)iu, "Tanh", 1);
			if (it < 0)
				continue;
			int is_ = single(ix, gp->node[it]->input[0], (size_t)it, "Mul", 2);
			if (is_ < 0)
				continue;
			const Onnx__NodeProto *sn = gp->node[is_];
			for (int s2 = 0; s2 < 2; s2++) {
				int ir = single(ix, sn->input[s2], (size_t)is_, "Add", 2);
				if (ir < 0)
					continue;
				const Onnx__NodeProto *r = gp->node[ir];
				for (int s3 = 0; s3 < 2; s3++) {
					const char *x = r->input[1 - s3];
					int iq = single(ix, r->input[s3], (size_t)ir, "Mul", 2);
					if (iq < 0)
						continue;
					const Onnx__NodeProto *q = gp->node[iq];
					for (int s4 = 0; s4 < 2; s4++) {
						int ip = single(ix, q->input[s4], (size_t)iq, "Pow", 2);
						if (ip < 0 || strcmp(gp->node[ip]->input[0], x))
							continue;
						const char *half = other(h, x);
						if (!half)
							continue;
						*g = (OnnxGelu){
							.node = {ih, ip, iq, ir, is_, it, iu, (int)last}, .n = 8,
							.x = x, .tanh = true,
							.k = {half, gp->node[ip]->input[1], q->input[1 - s4],
							      sn->input[1 - s2], u->input[1 - s1]},
							.want = {0.5, 3, 0.044715, 0.7978845608028654, 1}, .nk = 5,
						};
						return 1;
					}
				}
			}
		}
	}
	return 0;
}

int onnx_gelu_find(const OnnxIndex *ix, size_t last, OnnxGelu *g)
{
	if (!is(ix->gp->node[last], "Mul", 2) || !(find_erf(ix, last, g) || find_tanh(ix, last, g)))
		return 0;
	/* graph order, for importing them one by one when the constants disagree */
	for (int i = 1; i < g->n; i++)
		for (int j = i; j > 0 && g->node[j - 1] > g->node[j]; j--) {
			int t = g->node[j];
			g->node[j] = g->node[j - 1];
			g->node[j - 1] = t;
		}
	return 1;
}

bool onnx_gelu_constant(double v, double want, double eps)
{
	return fabs(v - want) <= 0.5 * eps * fabs(want);
}
