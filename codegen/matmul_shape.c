/* matmul_shape.c: what the picker (matmul_pick.c) and the kernel builders both
 * derive from a kernel and a tile configuration, none of it building code: which op
 * of the kernel is its matmul (cg_matmul_index), which operand dtypes a configuration
 * computes (mm_fits), the shared memory of an operand's tile, of the stages and what
 * the launch asks for (mm_tile_bytes, mm_stages_bytes, mm_smem; the attention
 * kernel's, mm_attention_smem), the bytes of a split-K unit's partial tile
 * (mm_partial_bytes), a kernel's matmuls that share their first operand
 * (mm_members). The launch of output tiles, the matmul's rule and the conv's, is in
 * launch_rule.c (shared with the runtime). */
#include <string.h>

#include "matmul.h"

/* The index of the matmul in spec's ops, after its leading views: swap_dims or
 * permute ops that read a tensor from memory and whose result is an operand of the
 * matmul and nothing else (the Matmul fuser's transposed operands); -1 if the ops do
 * not start that way. */
int cg_matmul_index(const CgKernelSpec *s)
{
	if (s->nops > 0 && s->ops[0].kind == OP_CONV2D)
		return 0;   /* a conv: its implicit GEMM (matmul_conv.c) */
	int i = 0;
	while (i < s->nops && (s->ops[i].kind == OP_SWAP_DIMS || s->ops[i].kind == OP_PERMUTE))
		i++;
	/* the attention op reads three operands through views */
	bool att = i < s->nops && s->ops[i].kind == OP_ATTENTION;
	if (i >= s->nops || (s->ops[i].kind != OP_MATMUL && !att) || i > (att ? 3 : 2))
		return -1;
	const RelOp *mm = &s->ops[i];
	for (int v = 0; v < i; v++) {
		const RelOp *op = &s->ops[v];
		int id = op->t[1].id;
		if (mm->t[0].id != id && mm->t[1].id != id && !(att && mm->t[2].id == id))
			return -1;
		if (id < s->nwritten && s->written[id])
			return -1;
		for (int u = 0; u < v; u++)
			if (s->ops[u].t[1].id == op->t[0].id)
				return -1;
		if (op->kind == OP_PERMUTE && op->attr.n != op->t[1].rank)
			return -1;
		for (int d = 0; d < op->attr.n && op->kind == OP_PERMUTE; d++)
			if (op->attr.axes[d] >= op->t[1].rank)
				return -1;
		if (op->kind == OP_SWAP_DIMS && (op->attr.axes[0] >= op->t[1].rank ||
						 op->attr.axes[1] >= op->t[1].rank))
			return -1;
	}
	return i;
}

int mm_members(const CgKernelSpec *s, int *mem)
{
	int mi = cg_matmul_index(s), n = 0;
	if (mi < 0)
		return 0;
	mem[n++] = mi;
	const RelOp *a = &s->ops[mi];
	if (a->kind != OP_MATMUL)
		return n;
	const RelTensor *y = &a->t[a->nin];
	for (int i = mi + 1; i < s->nops && n < IR_MM_GROUP_MAX; i++) {
		const RelOp *b = &s->ops[i];
		if (b->kind != OP_MATMUL || b->t[0].id != a->t[0].id ||
		    b->t[1].dtype != a->t[1].dtype || !ir_rel_shape_equal(&b->t[b->nin], y))
			continue;
		mem[n++] = i;
	}
	return n;
}

/* Whether tensor id of s is in memory: written, or read without an op of s making it. */
static bool in_memory(const CgKernelSpec *s, int id)
{
	if (id < s->nwritten && s->written[id])
		return true;
	for (int i = 0; i < s->nops; i++)
		for (int k = 0; k < s->ops[i].nout; k++)
			if (s->ops[i].t[s->ops[i].nin + k].id == id)
				return false;
	return true;
}

bool mm_alike(const CgKernelSpec *s, const int *mem, int ng, int nt, int *map)
{
	int len = mem[1] - mem[0];
	for (int i = 0; i < ng * nt; i++)
		map[i] = -1;
	for (int g = 1; g < ng; g++) {
		int end = g + 1 < ng ? mem[g + 1] : s->nops;
		if (end - mem[g] != len)
			return false;
		for (int j = 0; j < len; j++) {
			const RelOp *a = &s->ops[mem[0] + j], *b = &s->ops[mem[g] + j];
			if (a->kind != b->kind || a->nin != b->nin || a->nout != b->nout ||
			    a->nplace || b->nplace || memcmp(&a->attr, &b->attr, sizeof a->attr))
				return false;
			for (int k = 0; k < a->nin + a->nout; k++) {
				const RelTensor *u = &a->t[k], *v = &b->t[k];
				bool wu = u->id < s->nwritten && s->written[u->id];
				bool wv = v->id < s->nwritten && s->written[v->id];
				if (u->dtype != v->dtype || !ir_rel_shape_equal(u, v) || wu != wv ||
				    in_memory(s, u->id) != in_memory(s, v->id) || u->id >= nt ||
				    v->id >= nt)
					return false;
				int *e = &map[g * nt + u->id];
				if (*e >= 0 && *e != v->id)
					return false;
				*e = v->id;
				map[u->id] = u->id;
			}
		}
	}
	return true;
}

/* Whether configuration c computes operands of dtype t (tf32: when allowed; 3xTF32
 * keeps f32's accuracy, so always). */
bool mm_fits(const MmConfig *c, DType t, bool tf32)
{
	if (c->gemv || c->dw)
		return true;
	if (t != DT_F32)
		return c->tc && !c->tf32;
	return !c->tc || c->x3 || (c->tf32 && tf32);
}

/* Bytes of operand w's tile (0: A, BM x BK; 1: B, BK x BN) in a stage. A SIMT tile
 * has room for the padding of its rows (mm_swz) whichever way it is stored: a chunk
 * after every MM_PAD_ROWS rows of its BM (A) or BN (B) rows along K. */
int mm_tile_bytes(const MmConfig *c, int es, int w)
{
	int mn = w ? c->bn : c->bm;
	int pad = c->tc ? 0 : mn / MM_PAD_ROWS * 16;
	return mn * c->bk * es + pad;
}

/* Shared bytes of configuration c over elements of es bytes: its stages, or for gemv
 * the staged tile and the partial tiles: one a warp (the element path), or one a
 * slot of k (the vector path, 16 / es columns a thread: matmul_gemv.c). */
int mm_stages_bytes(const MmConfig *c, int es)
{
	if (c->gemv) {
		int slots = MM_THREADS / (c->bn / (16 / es));
		if (slots < MM_THREADS / 32)
			slots = MM_THREADS / 32;
		return c->bm * (c->bn + 8) * 4 + slots * c->bm * c->bn * 4;
	}
	/* 3xTF32: the rests after the parts (mm_wg_round_tf32) */
	return (mm_tile_bytes(c, es, 0) + mm_tile_bytes(c, es, 1)) * c->stages * (c->x3 ? 2 : 1);
}

/* What the launch asks for: the stages, and for wgmma room to align them to
 * MM_WG_ALIGN at run time. */
int mm_smem(const MmConfig *c, int es)
{
	if (c->att)
		return mm_attention_smem(c, es);
	if (c->ws)
		return mm_stages_bytes(c, es) + MM_WG_ALIGN + (c->pp ? 2 : 1) *
		       mm_ws_epi_rows(c, es) * (c->bn + MM_EPI_PAD) * 4 + 2 * c->stages * 8;
	return mm_stages_bytes(c, es) + (c->wg ? MM_WG_ALIGN : 0);
}

/* ws (matmul_ws.c): rows of the epilogue's staged tile, in a region of its own after
 * the stages (the next tile's copies fill them meanwhile): as many as fit, with
 * the stages, their alignment and the 2 x STAGES mbarriers, in MM_WS_SMEM; ping-pong
 * has a region for each multiplying warpgroup. */
int mm_ws_epi_rows(const MmConfig *c, int es)
{
	int room = MM_WS_SMEM - mm_stages_bytes(c, es) - MM_WG_ALIGN - 2 * c->stages * 8;
	if (c->pp)
		room /= 2;
	int rows = c->bm;
	while (rows > 8 && rows * (c->bn + MM_EPI_PAD) * 4 > room)
		rows /= 2;
	return rows;
}

/* The attention kernel's (matmul_attention.c): S's stage, then O's. */
int mm_attention_smem(const MmConfig *c, int es)
{
	int d = c->bk;
	if (c->pp)   /* q's tile, three K and three V tiles (P in registers), mbarriers */
		return (MM_ATT_BM * d + c->stages * 2 * d * c->bn) * es + MM_WG_ALIGN +
		       MM_ATT_BARS;
	int s = MM_ATT_BM * d + 2 * d * c->bn;          /* q's tile, two K tiles */
	int o = MM_ATT_BM * c->bn + 2 * c->bn * d;      /* the weights P, two V tiles */
	return (s + o) * es + (c->wg ? MM_WG_ALIGN : 0);  /* wgmma: room to align them */
}

/* a split unit's partial: every accumulator of every thread (gemv: the summed tile) */
int64_t mm_partial_bytes(const MmConfig *c)
{
	if (c->gemv)
		return (int64_t)c->bm * c->bn * 4;
	int nacc = c->tc ? (c->bm / c->wm / 16) * (c->bn / c->wn / 8) * 4 :
		   (c->bm / 16) * (c->bn / 16);
	return (int64_t)nacc * MM_THREADS * 4;
}

/* Whether both operands of the matmul at s->ops[mi] are read K-major (tf32 wgmma's
 * only layout): a conv channels last, or a matmul whose A is read as stored and whose
 * B is read transposed (a swap_dims or permute of its last two dims: passes/kmajor.c's
 * weights, a Gemm's transB). */
bool mm_kmajor_at(const CgKernelSpec *s, int mi)
{
	const RelOp *op = &s->ops[mi];
	if (op->kind != OP_MATMUL)
		return mm_kmajor(op);
	int r = op->t[0].rank, pa[IR_MAX_RANK], pb[IR_MAX_RANK];
	mm_operand_view(s, mi, &op->t[0], pa);
	mm_operand_view(s, mi, &op->t[1], pb);
	return r >= 2 && pa[r - 2] != r - 1 && pb[r - 2] == r - 1;
}

const RelTensor *mm_operand_view(const CgKernelSpec *s, int mi, const RelTensor *t, int *perm)
{
	const RelTensor *src = t;
	int r = t->rank;
	for (int d = 0; d < r; d++)
		perm[d] = d;
	for (int v = 0; v < mi; v++) {
		const RelOp *op = &s->ops[v];
		if (op->t[1].id != t->id)
			continue;
		src = &op->t[0];
		if (op->kind == OP_SWAP_DIMS) {
			perm[op->attr.axes[0]] = op->attr.axes[1];
			perm[op->attr.axes[1]] = op->attr.axes[0];
		} else {
			for (int d = 0; d < r; d++)
				perm[d] = op->attr.axes[d];
		}
	}
	return src;
}

/* The shape ids whose sizes times the element size make stride k of tm: those of
 * src's dims after dim d (src's rows are contiguous). */
static void stride_ids(CgTmap *tm, int k, const RelTensor *src, int d)
{
	tm->nsid[k] = 0;
	for (int e = d + 1; e < src->rank; e++)
		tm->sid[k][tm->nsid[k]++] = (int)src->shape[e];
}

/* Map id of s under configuration c (cg_matmul_tmap): the map of operand w of the
 * matmul at s->ops[mi] (docs/plan-format.md, "tmap"):
 * the tensor it reads from memory (its own, or the one its leading views read, as
 * mm_operand_layout), dims innermost first: the operand's contiguous dim, its other
 * tile dim, then its batch dims from the innermost (those of size 1 by
 * broadcast left out, as mm_batch_base does); the box one 128-byte panel of the
 * stage's tile (mm_swz), the kernel copying a tile as panels side by side. */
bool mm_tmap(const CgKernelSpec *s, const MmConfig *c, int id, const int64_t *dims, int ndims,
	     int *tensor, CgTmap *tm)
{
	int mem[IR_MM_GROUP_MAX];
	int ng = mm_members(s, mem);
	if (!c || !c->wg || id < 0 || id > ng)
		return false;
	int mi = id == 0 ? mem[0] : mem[id - 1], w = id == 0 ? 0 : 1;
	const RelOp *mm = &s->ops[mi];
	if (mm->kind == OP_CONV2D)
		return mm_conv_tmap(mm, c, id, dims, ndims, tensor, tm);
	const RelTensor *t = &mm->t[w];
	MmConfig o;
	if (mm->kind == OP_ATTENTION) {
		/* the second operands of its two products: map 0 kt's (S = q kt, BN
		 * keys by BK of head dim), map 1 v's (O = P v, BN keys of BK of its
		 * head dim); q is copied by the threads */
		if (!c->tma)
			return false;
		t = &mm->t[1 + id];
		w = 1;
		if (id == 1) {
			o = *c;
			o.bn = c->bk;
			o.bk = c->bn;
			c = &o;
		}
	} else if (mm->kind != OP_MATMUL)
		return false;
	int r = t->rank, perm[IR_MAX_RANK];
	int es = ir_dtype_size((DType)t->dtype);
	if (r < 2 || es * 64 != 128)
		return false;
	const RelTensor *src = mm_operand_view(s, mi, t, perm);
	int64_t sst[IR_MAX_RANK], ost[IR_MAX_RANK];
	sst[r - 1] = 1;
	for (int d = r - 2; d >= 0; d--)
		sst[d] = sst[d + 1] * mm_dim_of(src->shape[d + 1], dims, ndims);
	for (int d = 0; d < r; d++)
		ost[d] = sst[perm[d]];
	bool trans = perm[r - 2] == r - 1;
	int inner = trans ? r - 2 : r - 1, outer = trans ? r - 1 : r - 2;
	if (ost[inner] != 1)
		return false;
	memset(tm, 0, sizeof *tm);
	tm->es = es;
	tm->dim[0] = mm_dim_of(t->shape[inner], dims, ndims);
	tm->dim[1] = mm_dim_of(t->shape[outer], dims, ndims);
	tm->dim_id[0] = (int)t->shape[inner];
	tm->dim_id[1] = (int)t->shape[outer];
	tm->stride[1] = ost[outer] * es;
	stride_ids(tm, 1, src, perm[outer]);
	tm->box[0] = 128 / es;
	/* the tile's rows: A's BM (or BK stored transposed), B's BK (or BN) */
	tm->box[1] = w == 0 ? (trans ? c->bk : c->bm) : (trans ? c->bn : c->bk);
	/* a cluster's blocks load half a K-major A tile each (matmul_ws.c) */
	if (w == 0 && !trans && c->cluster)
		tm->box[1] /= c->cluster;
	tm->rank = 2;
	for (int d = r - 3; d >= 0; d--) {
		if (t->shape[d] == 0)
			continue;
		if (tm->rank == CG_TMAP_MAXRANK)
			return false;
		tm->dim[tm->rank] = mm_dim_of(t->shape[d], dims, ndims);
		tm->dim_id[tm->rank] = (int)t->shape[d];
		tm->stride[tm->rank] = ost[d] * es;
		stride_ids(tm, tm->rank, src, perm[d]);
		tm->box[tm->rank++] = 1;
	}
	for (int k = 0; k < tm->rank; k++)
		if (tm->dim[k] < 1 || tm->dim[k] > ((int64_t)1 << 32) ||
		    (k > 0 && (tm->stride[k] % 16 || tm->stride[k] >= ((int64_t)1 << 40))))
			return false;
	*tensor = src->id;
	return true;
}

bool mm_tmaps_ok(const CgKernelSpec *s, const MmConfig *c, const int64_t *dims, int ndims)
{
	int mem[IR_MM_GROUP_MAX], t;
	CgTmap tm;
	int n = 1 + mm_members(s, mem);
	for (int id = 0; id < n; id++)
		if (!mm_tmap(s, c, id, dims, ndims, &t, &tm))
			return false;
	return true;
}
