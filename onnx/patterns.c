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

/* A chain of nodes, each read by the one before it alone and making one of its
 * operands: node[0] is where the chain ends (the pattern's last node). */
typedef struct {
	const char *op;        /* the kind of each link */
	size_t nin;            /* and its inputs */
} Link;

typedef struct {
	int node[8];           /* the node of each link */
	int side[8];           /* side[k]: the operand of node[k - 1] that node[k] makes */
} Chain;

typedef int (*ChainEnd)(const OnnxIndex *ix, const Chain *c, OnnxGelu *g);

/* Links k..n of chain c over c->node[k - 1], trying each operand of a two-input
 * node in turn (operand 0 first) until end accepts a whole chain and fills g: 1
 * then, else 0. */
static int match_chain(const OnnxIndex *ix, const Link *link, int n, int k, Chain *c,
		       ChainEnd end, OnnxGelu *g)
{
	if (k == n)
		return end(ix, c, g);
	const Onnx__NodeProto *p = ix->gp->node[c->node[k - 1]];
	for (size_t s = 0; s < p->n_input; s++) {
		int i = single(ix, p->input[s], (size_t)c->node[k - 1], link[k].op, link[k].nin);
		if (i < 0)
			continue;
		c->node[k] = i;
		c->side[k] = (int)s;
		if (match_chain(ix, link, n, k + 1, c, end, g))
			return 1;
	}
	return 0;
}

/* The erf form, ending at Mul `last`: Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5);
 * the chain Mul <- Mul <- Add <- Erf <- Div. */
static const Link erf_links[] = {{"Mul", 2}, {"Mul", 2}, {"Add", 2}, {"Erf", 1}, {"Div", 2}};

static int erf_end(const OnnxIndex *ix, const Chain *c, OnnxGelu *g)
{
	Onnx__NodeProto *const *nd = ix->gp->node;
	const Onnx__NodeProto *m2 = nd[c->node[0]], *m1 = nd[c->node[1]], *add = nd[c->node[2]];
	const Onnx__NodeProto *div = nd[c->node[4]];
	const char *x = m1->input[1 - c->side[2]];
	if (strcmp(div->input[0], x))
		return 0;
	*g = (OnnxGelu){
		.node = {c->node[4], c->node[3], c->node[2], c->node[1], c->node[0]}, .n = 5,
		.x = x,
		.k = {div->input[1], add->input[1 - c->side[3]], m2->input[1 - c->side[1]]},
		.want = {1.4142135623730951, 1, 0.5}, .nk = 3,
	};
	return 1;
}

/* The operand of two-input node n that is not `name`, or NULL. */
static const char *other(const Onnx__NodeProto *n, const char *name)
{
	return !strcmp(n->input[0], name) ? n->input[1] : !strcmp(n->input[1], name) ? n->input[0] : NULL;
}

/* The tanh form (GPT-2's gelu_new), ending at Mul `last`:
 * Mul(Mul(x, 0.5), Add(Tanh(Mul(Add(x, Mul(Pow(x, 3), 0.044715)), sqrt(2/pi))), 1));
 * the chain Mul <- Add <- Tanh <- Mul <- Add <- Mul <- Pow, and the Mul(x, 0.5) that
 * makes the last Mul's other operand. */
static const Link tanh_links[] = {
	{"Mul", 2}, {"Add", 2}, {"Tanh", 1}, {"Mul", 2}, {"Add", 2}, {"Mul", 2}, {"Pow", 2},
};

static int tanh_end(const OnnxIndex *ix, const Chain *c, OnnxGelu *g)
{
	Onnx__NodeProto *const *nd = ix->gp->node;
	const Onnx__NodeProto *y = nd[c->node[0]], *u = nd[c->node[1]], *sn = nd[c->node[3]];
	const Onnx__NodeProto *r = nd[c->node[4]], *q = nd[c->node[5]], *pw = nd[c->node[6]];
	int ih = single(ix, y->input[1 - c->side[1]], (size_t)c->node[0], "Mul", 2);
	if (ih < 0)
		return 0;
	const char *x = r->input[1 - c->side[5]];
	if (strcmp(pw->input[0], x))
		return 0;
	const char *half = other(nd[ih], x);
	if (!half)
		return 0;
	*g = (OnnxGelu){
		.node = {ih, c->node[6], c->node[5], c->node[4], c->node[3], c->node[2],
			 c->node[1], c->node[0]}, .n = 8,
		.x = x, .tanh = true,
		.k = {half, pw->input[1], q->input[1 - c->side[6]], sn->input[1 - c->side[4]],
		      u->input[1 - c->side[2]]},
		.want = {0.5, 3, 0.044715, 0.7978845608028654, 1}, .nk = 5,
	};
	return 1;
}

int onnx_gelu_find(const OnnxIndex *ix, size_t last, OnnxGelu *g)
{
	Chain c = {.node = {(int)last}};
	if (!is(ix->gp->node[last], "Mul", 2) ||
	    !(match_chain(ix, erf_links, COUNTOF(erf_links), 1, &c, erf_end, g) ||
	      match_chain(ix, tanh_links, COUNTOF(tanh_links), 1, &c, tanh_end, g)))
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
