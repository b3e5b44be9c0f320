/* layout.c: `--layout nhwc`, a graph's convolutions and pools rewritten to run
 * channels last (docs/design.md, "Channels last").
 *
 * Tensor cores read a conv's input window as 16-byte chunks along its channels,
 * which NCHW does not have (codegen/matmul_conv.c). The pass keeps what the graph
 * computes and its inputs and outputs as they are, and changes where tensors lie
 * in memory:
 * - every conv2d and pool takes the layout attribute nhwc: its input is read as
 *   [N][H][W][C], a conv's weight as [OC][KH][KW][C/g], and it writes [N][OH][OW][OC];
 * - a tensor is then held "stored": the logical tensor permuted by a permutation S
 *   (stored = permute(logical, S); S = (0,2,3,1) for NHWC). An elementwise op one of
 *   whose operands is stored computes stored as well, on its other operands
 *   brought to S (a constant's bytes are permuted here, once; a per-channel
 *   [1,C,1,1] becomes [1,1,1,C]); a reduction reduces the stored axis; a reshape
 *   that only merges dims lying next to each other in both orders (a global pool's
 *   [N,C,H*W]) reshapes the stored tensor. So a network's batch norms, residual
 *   adds, activations and pools stay channels last between its convs, and a
 *   conv's epilogue reads and writes them there;
 * - any other reader gets the logical tensor back: a permute, made once and only
 *   where needed (a graph output keeps its name, written by that permute). A
 *   permute that moves only dims of size 1 is a reshape, which launches nothing.
 * So a plain CNN pays one permute for its input and none between its convs. */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

typedef struct {
	Op *op;
	int n, cap;
} OpList;

/* The state of one original tensor: where its value is held. */
typedef struct {
	int plain;               /* the tensor holding the logical value, or -1 */
	int stored;              /* the tensor holding it permuted by s, or -1 */
	uint8_t s[IR_MAX_RANK];  /* stored = permute(logical, s) */
	int nhwc;                /* its rank-4 form permuted by NHWC (broadcast
				    operands padded to rank 4), made once; -1 */
} Held;

typedef struct {
	Graph *g;
	Arena *a;
	const Tensor *src;       /* the original tensors */
	Tensor *t;               /* the new tensors: the original ids first */
	int nt, capt;
	OpList ops;              /* the graph's ops, rewritten */
	OpList pro;              /* views of graph inputs, made first (so that no
				    view stands between an op and the ops that would
				    fuse into it) */
	int *late;               /* graph outputs to write back before the next sync */
	int nlate;
	bool *early;             /* per new tensor: known before any op (an input, a
				    constant, or a view of one) */
	Held *h;                 /* per original tensor */
	LayoutInfo *info;
} Lw;

static const uint8_t to_nhwc[4] = {0, 2, 3, 1};

static int new_tensor(Lw *w, const Tensor *like, int rank, const int64_t *dim,
		      const char *what)
{
	if (w->nt == w->capt) {
		w->capt *= 2;
		Tensor *n = ARENA_NEW(w->a, Tensor, w->capt);
		memcpy(n, w->t, sizeof *n * (size_t)w->nt);
		w->t = n;
		bool *e = ARENA_NEW(w->a, bool, w->capt);
		memcpy(e, w->early, (size_t)w->nt);
		w->early = e;
	}
	Tensor *t = &w->t[w->nt];
	*t = *like;
	t->rank = rank;
	memcpy(t->dim, dim, sizeof *dim * (size_t)rank);
	t->role = ROLE_INTERMEDIATE;
	t->is_output = false;
	t->data = NULL;
	t->src = NULL;
	t->producer = -1;
	/* a name no tensor has: the pass's tensors are counted */
	t->name = arena_printf(w->a, "%s:%s%d", like->name, what, w->nt);
	return w->nt++;
}

static void list_add(Lw *w, OpList *l, const Op *op)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		Op *n = ARENA_NEW(w->a, Op, l->cap);
		if (l->n)
			memcpy(n, l->op, sizeof *n * (size_t)l->n);
		l->op = n;
	}
	l->op[l->n++] = *op;
}

/* An op of the graph, in order; or a view the pass makes (hoist), with the first
 * ops when it reads only what is known before any op (its result then is too). */
static void push_op(Lw *w, const Op *op, bool hoist)
{
	bool early = hoist && op->nin > 0;
	for (int k = 0; k < op->nin && early; k++)
		early = w->early[op->in[k]];
	for (int k = 0; k < op->nout; k++)
		w->early[op->out[k]] = early;
	list_add(w, early ? &w->pro : &w->ops, op);
}

/* Whether permuting dims by p (out.dim[i] = dim[p[i]]) moves only dims of size 1:
 * then the bytes stay where they are and a reshape does it. */
static bool moves_ones(const int64_t *dim, const uint8_t *p, int rank)
{
	int last = -1;
	for (int i = 0; i < rank; i++) {
		if (dim[p[i]] == 1)
			continue;
		if (p[i] < last)
			return false;
		last = p[i];
	}
	return true;
}

/* Constant data of `from` permuted by p (rank r, element size es). */
static const void *permute_data(Lw *w, const Tensor *from, const uint8_t *p, int r)
{
	size_t es = (size_t)ir_dtype_size(from->dtype);
	int64_t n = 1, in_stride[IR_MAX_RANK], out_dim[IR_MAX_RANK];
	for (int k = r - 1; k >= 0; k--) {
		in_stride[k] = n;
		n *= from->dim[k];
	}
	for (int i = 0; i < r; i++)
		out_dim[i] = from->dim[p[i]];
	char *dst = arena_alloc_raw(w->a, (size_t)n * es + 16);
	const char *src = from->data;
	int64_t idx[IR_MAX_RANK] = {0};
	for (int64_t o = 0; o < n; o++) {
		int64_t at = 0;
		for (int i = 0; i < r; i++)
			at += idx[i] * in_stride[p[i]];
		memcpy(dst + (size_t)o * es, src + (size_t)at * es, es);
		for (int i = r - 1; i >= 0 && ++idx[i] == out_dim[i]; i--)
			idx[i] = 0;
	}
	return dst;
}

/* Tensor id (dims dim, rank r) viewed as dims `to` (same count): a reshape op, or
 * for a constant a constant of the same bytes. */
static int reshape_of(Lw *w, int id, const int64_t *to, int r, const Op *near)
{
	const Tensor *x = &w->t[id];
	if (x->rank == r && !memcmp(x->dim, to, sizeof *to * (size_t)r))
		return id;
	int y = new_tensor(w, x, r, to, "view");
	if (x->data) {
		w->t[y].data = x->data;
		w->t[y].role = ROLE_INPUT;
		return y;
	}
	Attrs *at = ARENA_NEW(w->a, Attrs, 1);
	at->has = A_SHAPE;
	at->n = r;
	memcpy(at->shape, to, sizeof *to * (size_t)r);
	Op op = {.kind = OP_RESHAPE, .stream = near->stream, .nin = 1, .nout = 1,
		 .in = ARENA_NEW(w->a, int, 1), .attr = at, .line = near->line,
		 .col = near->col, .name = "--layout"};
	op.in[0] = id;
	op.out[0] = y;
	push_op(w, &op, true);
	return y;
}

/* Tensor id permuted by p (out.dim[i] = dim[p[i]]), into tensor `into` when it
 * is >= 0 (an original id: a graph output written back), else a new one. */
static int permute_of(Lw *w, int id, const uint8_t *p, int into, const Op *near)
{
	const Tensor *x = &w->t[id];
	int r = x->rank;
	int64_t to[IR_MAX_RANK];
	bool same = true;
	for (int i = 0; i < r; i++) {
		to[i] = x->dim[p[i]];
		same = same && p[i] == i;
	}
	if (same && into < 0)
		return id;
	if (moves_ones(x->dim, p, r) && into < 0)
		return reshape_of(w, id, to, r, near);
	if (x->data && into < 0) {
		int y = new_tensor(w, x, r, to, "nhwc");
		w->t[y].data = permute_data(w, x, p, r);
		w->t[y].role = ROLE_INPUT;
		w->info->nconst++;
		return y;
	}
	int y = into;
	if (y < 0)
		y = new_tensor(w, x, r, to, "nhwc");
	Attrs *at = ARENA_NEW(w->a, Attrs, 1);
	bool view = moves_ones(x->dim, p, r);
	if (view) {
		at->has = A_SHAPE;
		at->n = r;
		memcpy(at->shape, to, sizeof *to * (size_t)r);
	} else {
		at->has = A_AXES;
		at->n = r;
		for (int i = 0; i < r; i++)
			at->axes[i] = p[i];
		w->info->npermutes++;
	}
	Op op = {.kind = view ? OP_RESHAPE : OP_PERMUTE, .stream = near->stream, .nin = 1,
		 .nout = 1, .in = ARENA_NEW(w->a, int, 1), .attr = at, .line = near->line,
		 .col = near->col, .name = "--layout"};
	op.in[0] = id;
	op.out[0] = y;
	push_op(w, &op, true);
	return y;
}

/* The logical value of original tensor x (made from its stored form if need be,
 * into x's own id, so that a graph output keeps its name). */
static int plain_of(Lw *w, int x, const Op *near)
{
	Held *h = &w->h[x];
	if (h->plain >= 0)
		return h->plain;
	/* logical = permute(stored, inverse of s) */
	uint8_t inv[IR_MAX_RANK];
	for (int i = 0; i < w->src[x].rank; i++)
		inv[h->s[i]] = (uint8_t)i;
	h->plain = permute_of(w, h->stored, inv, x, near);
	return h->plain;
}

/* Original tensor x as an operand of rank r permuted by s: stored already, or its
 * logical value (padded with leading 1s to rank r, as broadcasting reads it) permuted. */
static int operand_as(Lw *w, int x, const uint8_t *s, int r, const Op *near)
{
	Held *h = &w->h[x];
	const Tensor *t = &w->src[x];
	if (h->stored >= 0 && t->rank == r && !memcmp(h->s, s, (size_t)r))
		return h->stored;
	if (t->rank == 0)
		return plain_of(w, x, near);
	bool nhwc = r == 4 && !memcmp(s, to_nhwc, 4);
	if (nhwc && h->nhwc >= 0)
		return h->nhwc;
	int id = plain_of(w, x, near);
	if (t->rank < r) {
		int64_t pad[IR_MAX_RANK];
		int lead = r - t->rank;
		for (int i = 0; i < r; i++)
			pad[i] = i < lead ? 1 : t->dim[i - lead];
		id = reshape_of(w, id, pad, r, near);
	}
	id = permute_of(w, id, s, -1, near);
	if (nhwc)
		h->nhwc = id;
	return id;
}

/* The op's result y, made as `res` permuted by s */
static void made_stored(Lw *w, int y, int res, const uint8_t *s, int r, const Op *near)
{
	Held *h = &w->h[y];
	h->plain = -1;
	h->stored = res;
	memcpy(h->s, s, (size_t)r);
	(void)near;
	if (w->src[y].is_output)   /* written back before the next sync */
		w->late[w->nlate++] = y;
}

/* The graph outputs made stored since the last sync, written back (their own
 * names) after the ops that may fuse into their producers. */
static void write_back(Lw *w, const Op *near)
{
	for (int i = 0; i < w->nlate; i++)
		plain_of(w, w->late[i], near);
	w->nlate = 0;
}

static int result_like(Lw *w, int y, const uint8_t *s)
{
	const Tensor *t = &w->src[y];
	int64_t dim[IR_MAX_RANK];
	for (int i = 0; i < t->rank; i++)
		dim[i] = t->dim[s[i]];
	return new_tensor(w, t, t->rank, dim, "nhwc");
}

static bool is_window(OpKind k)
{
	return k == OP_CONV2D || k == OP_MAX_POOL2D || k == OP_AVG_POOL2D;
}

/* A conv or pool, channels last. */
static void window_op(Lw *w, const Op *op)
{
	Op n = *op;
	Attrs *at = ARENA_NEW(w->a, Attrs, 1);
	*at = *op->attr;
	at->layout = LAYOUT_NHWC;
	n.attr = at;
	n.in = ARENA_NEW(w->a, int, op->nin + 1);
	n.in_status = NULL;
	for (int k = 0; k < op->nin; k++)   /* x, the weight (OIHW to OHWI); the bias */
		n.in[k] = k < 2 ? operand_as(w, op->in[k], to_nhwc, 4, op)
				: plain_of(w, op->in[k], op);
	int y = op->out[0];
	n.out[0] = result_like(w, y, to_nhwc);
	push_op(w, &n, false);
	w->info->nwindow++;
	made_stored(w, y, n.out[0], to_nhwc, 4, op);
}

/* The permutation of the first stored operand of the op's rank, or NULL */
static const uint8_t *stored_operand(Lw *w, const Op *op, int r)
{
	for (int k = 0; k < op->nin; k++) {
		const Held *h = &w->h[op->in[k]];
		if (h->stored >= 0 && w->src[op->in[k]].rank == r)
			return h->s;
	}
	return NULL;
}

static void elementwise_op(Lw *w, const Op *op, const uint8_t *s0)
{
	int r = w->src[op->out[0]].rank;
	uint8_t s[IR_MAX_RANK];
	memcpy(s, s0, (size_t)r);
	Op n = *op;
	n.in = ARENA_NEW(w->a, int, op->nin + 1);
	n.in_status = NULL;
	for (int k = 0; k < op->nin; k++)
		n.in[k] = operand_as(w, op->in[k], s, r, op);
	int y = op->out[0];
	n.out[0] = result_like(w, y, s);
	push_op(w, &n, false);
	made_stored(w, y, n.out[0], s, r, op);
}

/* A reduction along logical axis a: along the stored axis that holds it. */
static void reduce_op(Lw *w, const Op *op, const uint8_t *s0)
{
	int r = w->src[op->out[0]].rank;
	uint8_t s[IR_MAX_RANK];
	memcpy(s, s0, (size_t)r);
	Op n = *op;
	Attrs *at = ARENA_NEW(w->a, Attrs, 1);
	*at = *op->attr;
	for (int i = 0; i < r; i++)
		if (s[i] == op->attr->axis)
			at->axis = i;
	n.attr = at;
	n.in = ARENA_NEW(w->a, int, 1);
	n.in_status = NULL;
	n.in[0] = w->h[op->in[0]].stored;
	int y = op->out[0];
	n.out[0] = result_like(w, y, s);
	push_op(w, &n, false);
	made_stored(w, y, n.out[0], s, r, op);
}

/* A reshape of a stored tensor that only merges runs of logical dims lying in the
 * same order next to each other in the stored tensor (dims of size 1 aside, which
 * may come and go): done on the stored tensor. False when it is not one. */
static bool reshape_stored(Lw *w, const Op *op)
{
	int x = op->in[0], y = op->out[0];
	const Tensor *tx = &w->src[x], *ty = &w->src[y];
	const Held *h = &w->h[x];
	/* x's logical dims other than 1, in the order they are stored */
	int where[IR_MAX_RANK], ns = 0;
	for (int p = 0; p < tx->rank; p++)
		if (tx->dim[h->s[p]] != 1)
			where[h->s[p]] = ns++;
	/* the run of x's dims that makes each dim of y other than 1: consecutive
	 * in both orders; start[j] is where it starts among them */
	int start[IR_MAX_RANK], i = 0;
	for (int j = 0; j < ty->rank; j++) {
		start[j] = -1;
		if (ty->dim[j] == 1)
			continue;
		int64_t n = 1;
		int cnt = 0;
		while (n < ty->dim[j]) {
			if (i >= tx->rank)
				return false;
			if (tx->dim[i] == 1) {
				i++;
				continue;
			}
			if (cnt == 0)
				start[j] = where[i];
			else if (where[i] != start[j] + cnt)
				return false;
			n *= tx->dim[i++];
			cnt++;
		}
		if (n != ty->dim[j])
			return false;
	}
	for (; i < tx->rank; i++)
		if (tx->dim[i] != 1)
			return false;
	/* y stored: its runs in x's stored order, then its dims of size 1 */
	uint8_t s[IR_MAX_RANK];
	int64_t dim[IR_MAX_RANK];
	int k = 0;
	for (int p = 0; p < ns; p++)
		for (int j = 0; j < ty->rank; j++)
			if (start[j] == p) {
				s[k] = (uint8_t)j;
				dim[k++] = ty->dim[j];
			}
	for (int j = 0; j < ty->rank; j++)
		if (start[j] < 0) {
			s[k] = (uint8_t)j;
			dim[k++] = 1;
		}
	int res = reshape_of(w, h->stored, dim, ty->rank, op);
	made_stored(w, y, res, s, ty->rank, op);
	return true;
}

/* Any other op: its operands in their logical form. */
static void plain_op(Lw *w, const Op *op)
{
	Op n = *op;
	if (op->kind == OP_SYNC)
		write_back(w, op);
	if (op->kind != OP_SYNC) {
		n.in = ARENA_NEW(w->a, int, op->nin + 1);
		n.in_status = NULL;
		for (int k = 0; k < op->nin; k++)
			n.in[k] = plain_of(w, op->in[k], op);
	}
	push_op(w, &n, false);
}

/* Keep the tensors something uses, renumbered in order: the graph's inputs
 * (constants only when read or listed as outputs) and every op's results. */
static void compact(Lw *w)
{
	Graph *g = w->g;
	int nops = w->pro.n + w->ops.n;
	Op *ops = ARENA_NEW(w->a, Op, nops + 1);
	if (w->pro.n)
		memcpy(ops, w->pro.op, sizeof *ops * (size_t)w->pro.n);
	if (w->ops.n)
		memcpy(ops + w->pro.n, w->ops.op, sizeof *ops * (size_t)w->ops.n);
	int *map = ARENA_NEW(w->a, int, w->nt + 1);
	bool *used = ARENA_NEW(w->a, bool, w->nt + 1);
	for (int i = 0; i < nops; i++) {
		const Op *op = &ops[i];
		for (int k = 0; k < op->nin; k++)
			used[op->in[k]] = true;
		for (int k = 0; k < op->nout; k++)
			used[op->out[k]] = true;
	}
	for (int i = 0; i < g->noutputs; i++)
		used[g->outputs[i]] = true;
	for (int i = 0; i < g->ninputs; i++)
		if (!w->t[g->inputs[i]].data)
			used[g->inputs[i]] = true;
	/* the new constants are inputs too, after the graph's own */
	int nin = 0;
	int *inputs = ARENA_NEW(w->a, int, g->ninputs + w->nt + 1);
	for (int i = 0; i < g->ninputs; i++)
		if (used[g->inputs[i]])
			inputs[nin++] = g->inputs[i];
	for (int t = g->ntensors; t < w->nt; t++)
		if (w->t[t].data && used[t])
			inputs[nin++] = t;
	int n = 0;
	Tensor *nt = ARENA_NEW(w->a, Tensor, w->nt + 1);
	for (int t = 0; t < w->nt; t++) {
		map[t] = -1;
		if (!used[t])
			continue;
		map[t] = n;
		nt[n] = w->t[t];
		nt[n++].producer = -1;
	}
	for (int i = 0; i < nops; i++) {
		Op *op = &ops[i];
		for (int k = 0; k < op->nin; k++)
			op->in[k] = map[op->in[k]];
		for (int k = 0; k < op->nout; k++) {
			op->out[k] = map[op->out[k]];
			nt[op->out[k]].producer = i;
		}
	}
	for (int i = 0; i < nin; i++)
		inputs[i] = map[inputs[i]];
	for (int i = 0; i < g->noutputs; i++)
		g->outputs[i] = map[g->outputs[i]];
	g->tensors = nt;
	g->ntensors = n;
	g->inputs = inputs;
	g->ninputs = nin;
	g->ops = ops;
	g->nops = nops;
}

bool pass_layout_wanted(const Graph *g, const LayoutOptions *o)
{
	bool any = false;
	for (int i = 0; i < g->nops; i++) {
		const Op *op = &g->ops[i];
		if (op->kind != OP_CONV2D || op->attr->layout != LAYOUT_NCHW)
			continue;
		DType t = g->tensors[op->in[0]].dtype;
		bool tc = t == DT_BF16 || t == DT_F16 || (t == DT_F32 && o->tensor_cores);
		if (!tc || !g->tensors[op->in[1]].data)
			return false;
		any = true;
	}
	return any;
}

int pass_layout(Graph *g, const LayoutOptions *o, LayoutInfo *info)
{
	memset(info, 0, sizeof *info);
	if (o->mode == LAYOUT_MODE_KEEP ||
	    (o->mode == LAYOUT_MODE_AUTO && !pass_layout_wanted(g, o)))
		return 0;
	info->automatic = o->mode == LAYOUT_MODE_AUTO;
	bool any = false;
	for (int i = 0; i < g->nops && !any; i++)
		any = is_window(g->ops[i].kind) && g->ops[i].attr->layout == LAYOUT_NCHW;
	if (!any)
		return 0;
	Lw w = {.g = g, .a = g->arena, .src = g->tensors, .info = info};
	w.capt = g->ntensors * 2 + 16;
	w.t = ARENA_NEW(w.a, Tensor, w.capt);
	memcpy(w.t, g->tensors, sizeof *w.t * (size_t)g->ntensors);
	w.nt = g->ntensors;
	w.early = ARENA_NEW(w.a, bool, w.capt);
	w.late = ARENA_NEW(w.a, int, g->ntensors + 1);
	w.h = ARENA_NEW(w.a, Held, g->ntensors + 1);
	for (int t = 0; t < g->ntensors; t++) {
		w.h[t] = (Held){.plain = t, .stored = -1, .nhwc = -1};
		w.early[t] = g->tensors[t].producer < 0;
		if (g->tensors[t].producer >= 0)
			w.h[t].plain = -1;   /* made by its op, below */
	}
	for (int i = 0; i < g->nops; i++) {
		const Op *op = &g->ops[i];
		if (op->kind == OP_SYNC) {
			plain_op(&w, op);
			continue;
		}
		int r = g->tensors[op->out[0]].rank;
		const uint8_t *s = stored_operand(&w, op, r);
		ShapeRule rule = ir_ops[op->kind].rule;
		if (is_window(op->kind) && op->attr->layout == LAYOUT_NCHW) {
			window_op(&w, op);
		} else if (s && ir_op_is_elementwise(op->kind)) {
			elementwise_op(&w, op, s);
		} else if (s && (rule == SR_REDUCE || rule == SR_ARG_REDUCE)) {
			reduce_op(&w, op, s);
		} else if (!(op->kind == OP_RESHAPE && w.h[op->in[0]].stored >= 0 &&
			     reshape_stored(&w, op))) {
			plain_op(&w, op);
			for (int k = 0; k < op->nout; k++)
				w.h[op->out[k]].plain = op->out[k];
		}
	}
	if (g->nops)
		write_back(&w, &g->ops[g->nops - 1]);
	compact(&w);
	ir_finish(g);
	return 0;
}

void pass_layout_summary(const LayoutInfo *info, Buf *out)
{
	if (!info->nwindow)
		return;
	buf_printf(out, "layout: nhwc (%s): %d conv%s and pool%s channels last; %d "
		   "permute%s; %d constant%s permuted\n",
		   info->automatic ? "every conv on tensor cores with constant weights; "
		   "--layout nchw keeps NCHW" : "--layout nhwc", info->nwindow,
		   info->nwindow == 1 ? "" : "s", info->nwindow == 1 ? "" : "s",
		   info->npermutes, info->npermutes == 1 ? "" : "s", info->nconst,
		   info->nconst == 1 ? "" : "s");
}
