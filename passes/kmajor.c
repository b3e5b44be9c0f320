/* kmajor.c: the constant weights of half-precision matmuls stored K-major.
 *
 * A model's linear layer multiplies by a constant W of [K, N], its rows along N.
 * The tensor-core tiles read B in 128-byte panels along its contiguous dim: along
 * N that is 64 columns, so a tile is 64, 128 or 256 columns wide; along K a panel
 * holds the tile's K step for any number of columns, so the 96-wide tile that
 * fills a wave where 128 would not (codegen/matmul_pick.c) needs B K-major. The
 * pass stores W's transpose as a new constant Wt [N, K] and reads it through a
 * swap_dims view, which the matmul kernel takes as its operand's layout: the
 * matmul computes the same products in the same order, so every backend's
 * result is unchanged. W itself stays where something else reads it. Off by
 * default (pl_kmajor in lib/pipeline.c says why); FUSEC_KMAJOR=1 turns it on.
 *
 * Under --allow-3xtf32 (without --allow-tf32) the f32 ones too, on by that option:
 * the 3xTF32 tiles read both operands K-major (codegen/matmul_wgmma.c), siblings
 * included (takes says why).
 *
 * Only f16 and bf16 matmuls (after --precision; f32 as above) whose constant second operand is
 * a matrix (its leading dims, if any, 1) with K a multiple of 8 (rows of 16-byte multiples, which the tensor
 * maps need), and whose first operand has at least MIN_ROWS rows where its size
 * is known: gemv's tiles (up to 16 rows) read B along N. Not under --burn-exact.
 * Each view comes right before its matmul, which the Matmul fuser takes with it
 * (its leading operand views). Not for a matmul whose first operand another
 * matmul reads: siblings (siblings.c) run in one launch, and the fuser takes no
 * views in front of them (an f32 one is taken all the same: takes). */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

enum {
	MIN_ROWS = 64,
	/* f32: about the 3xTF32 rule's ground (codegen/matmul_pick.c, x3_rule: half a
	 * wave of its 128-row tiles: ViT's q/k/v and MLP up at 197 rows); below it the
	 * SIMT tiles run and read B as stored, and siblings keep their one launch (the
	 * transformers at batch 1, 128 rows) */
	MIN_ROWS_F32 = 192,
	/* f32 under MIN_ROWS_F32: where the 3xTF32 rule splits K instead (x3_rule
	 * there: the 128x64 tiles split 3 or 2 ways fill half a wave and stay
	 * within one, each split MM_SPLIT_STEPS steps of 32 at least; GPT-2 at
	 * batch 1: its q/k/v (2304 columns) and MLP up (3072)), not siblings */
	X3_WAVE = 132, X3_BK = 32, X3_SPLIT_STEPS = 4,
};

/* Whether the 3xTF32 rule splits an f32 matmul of `rows` rows under half a wave
 * of its tiles (codegen/matmul_pick.c, x3_rule, which this follows). */
static bool x3_splits(int64_t rows, int64_t n, int64_t k)
{
	int64_t t64 = (rows + 127) / 128 * ((n + 63) / 64);
	int64_t steps = (k + X3_BK - 1) / X3_BK;
	for (int s = 3; s >= 2; s--)
		if (s * t64 <= X3_WAVE && 2 * s * t64 >= X3_WAVE && steps >= s * X3_SPLIT_STEPS)
			return true;
	return false;
}

/* Whether matmul op reads its weight K-major: nmm[t] counts the matmuls whose
 * first operand is t. An f32 one may be a sibling: apart, each on the 3xTF32 tiles
 * (1.1-1.7x cuBLAS's f32 on the H100) is faster than the siblings' one launch on
 * the SIMT tiles, which saves a read of their shared operand. */
static bool takes(const Graph *g, const Op *op, const int *nmm, bool half, bool f32)
{
	if (op->kind != OP_MATMUL || op->nin != 2)
		return false;
	const Tensor *a = &g->tensors[op->in[0]], *w = &g->tensors[op->in[1]];
	int r = w->rank;
	bool h = w->dtype == DT_BF16 || w->dtype == DT_F16;
	if (h && nmm[op->in[0]] > 1)
		return false;
	if (!w->data || r < 2 || !((h && half) || (w->dtype == DT_F32 && f32)) ||
	    a->dtype != w->dtype || w->dim[r - 2] % 8 || w->dim[r - 1] < 8)
		return false;
	for (int d = 0; d < r - 2; d++)
		if (w->dim[d] != 1)
			return false;
	int64_t rows = 1;
	for (int d = 0; d < a->rank - 1; d++)
		rows *= a->dim[d];
	/* f32 in a graph for every size: its rows are not known, and the views trip
	 * the probe of the sizes (the 3xTF32 tiles need half a wave anyway) */
	if (g->sym)
		return h;
	if (h)
		return rows >= MIN_ROWS;
	return rows >= MIN_ROWS_F32 ||
	       (rows > 64 && nmm[op->in[0]] == 1 && x3_splits(rows, w->dim[r - 1], w->dim[r - 2]));
}

/* Constant w's transpose (of its last two dims), a new constant named w's name +
 * ":t". */
static int transposed(Rebuild *o, int w)
{
	const Tensor *src = &o->tens[w];
	size_t es = (size_t)ir_dtype_size(src->dtype);
	int r = src->rank;
	int64_t k = src->dim[r - 2], n = src->dim[r - 1];
	unsigned char *dst = arena_alloc_raw(o->g->arena, (size_t)(k * n) * es + 16);
	const unsigned char *s = src->data;
	for (int64_t i = 0; i < k; i++)
		for (int64_t j = 0; j < n; j++)
			memcpy(dst + (size_t)(j * k + i) * es, s + (size_t)(i * n + j) * es, es);
	int id = o->nt++;
	Tensor *t = &o->tens[id];
	*t = *src;
	t->dim[r - 2] = n;
	t->dim[r - 1] = k;
	t->data = dst;
	t->src = NULL;
	t->is_output = false;
	t->role = ROLE_INPUT;
	t->producer = -1;
	t->name = arena_printf(o->g->arena, "%s:t", src->name);
	o->inputs[o->nin++] = id;
	return id;
}

int pass_kmajor(Graph *g, bool half, bool f32, int *nmade)
{
	*nmade = 0;
	int n = g->nops, nt = g->ntensors, count = 0;
	int *nmm = calloc((size_t)nt + 1, sizeof *nmm);
	for (int i = 0; i < n; i++)
		if (g->ops[i].kind == OP_MATMUL)
			nmm[g->ops[i].in[0]]++;
	for (int i = 0; i < n; i++)
		count += takes(g, &g->ops[i], nmm, half, f32);
	if (!count) {
		free(nmm);
		return 0;
	}
	Rebuild o;
	rb_begin(&o, g, 3 * count, count, count);
	int *made = malloc(sizeof *made * ((size_t)nt + 1));   /* each weight's transpose */
	int *uses = calloc((size_t)nt + 1, sizeof *uses);       /* and its views so far */
	for (int t = 0; t < nt; t++)
		made[t] = -1;
	for (int i = 0; i < n; i++) {
		Op mm = g->ops[i];
		if (!takes(g, &g->ops[i], nmm, half, f32)) {
			o.ops[o.k++] = mm;
			continue;
		}
		int w = g->ops[i].in[1];
		if (made[w] < 0)
			made[w] = transposed(&o, w);
		/* Wt viewed as W again: [K, N] with K-major rows */
		int v = uses[w]++ ? rb_tensor(&o, w, arena_printf(g->arena, ":kmajor%d", uses[w])) :
				   rb_tensor(&o, w, ":kmajor");
		int r = g->tensors[w].rank, axes[2] = {r - 2, r - 1};
		rb_view(&o, &g->ops[i], OP_SWAP_DIMS, made[w], v, NULL, axes, 2);
		mm.in = ARENA_NEW(g->arena, int, 2);
		mm.in[0] = g->ops[i].in[0];
		mm.in[1] = v;
		mm.in_status = NULL;
		o.ops[o.k++] = mm;
		(*nmade)++;
	}
	free(nmm);
	free(uses);
	free(made);
	rb_finish(&o);
	return 0;
}

void pass_kmajor_summary(int nmade, Buf *out)
{
	if (nmade > 0)
		buf_printf(out, "weights: %d matmul%s read %s constant weight K-major (stored "
			   "transposed, read through a swap_dims view): the tensor-core tiles "
			   "then may be 96 columns wide, and f32 ones may run as 3xTF32\n",
			   nmade, nmade == 1 ? "" : "s",
			   nmade == 1 ? "its" : "their");
}
