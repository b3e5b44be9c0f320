/* kernel_reduce.c: cooperative reduce kernels (sum, mean, prod, max, min, argmax,
 * argmin along one axis, with what a kernel fuses before and after them), built
 * from the plan reduce_plan.c makes.
 *
 * A kernel whose reductions all run along one axis, over inputs of the iteration
 * space's rank, is built as a cooperative kernel (codegen/coop.h) instead of one
 * thread per row. Its "rows" are the positions of the iteration space without the
 * axis; each row is reduced by a group of threads:
 *
 *   - rows mode (the axis is the last dim that is not 1: elements of a row are
 *     adjacent): block (G, R): G threads per row read its elements j = tx, tx + G, ...
 *     (consecutive threads, consecutive elements), R rows per block. The group reduce
 *     is a butterfly over the lanes, then one value per warp through shared memory
 *     when G > 32 (cg_coop_group_reduce).
 *   - columns mode (dims after the axis): block (32, Ry): the 32 threads of a warp take
 *     32 adjacent rows (adjacent in memory), the Ry warps split the axis; the Ry
 *     partials of a column meet in shared memory and every thread combines them in
 *     order.
 *
 * Reductions that read other reductions (layer norm's variance reads the mean) run in
 * later passes over the row; reductions of one pass share its loop. Every thread of a
 * group ends a pass holding the results in thread-private variables, and each later
 * phase hands them to the evaluator through the memo, so a ReduceBroadcasted chain
 * (softmax, layer norm) writes its row in the same launch. On the vector path such a
 * kernel keeps row tensors in shared memory when the row fits (the row cache,
 * cg_reduce_cache_threads, chosen by cache_plan): first the reductions' inputs it
 * makes and a later phase reads again (softmax's exp, a norm's centred row), stored
 * as the pass that makes them computes them and handed to later phases through the
 * memo, so no phase computes them twice; then the tensors two phases load, read
 * once. Otherwise rows are re-read from memory on each pass (L1/L2 keep a block's
 * row close). The write phase stores V lanes at once, and divides by a row's
 * reduction with one reciprocal a row (cg_div_uniform).
 * Results are bitwise the same run to run: the tree depends on the launch's geometry
 * alone (the cache changes where values come from, not the order they combine in).
 *
 * Split: a kernel with one reduction whose result is not broadcast may split long
 * rows (or columns) over grid.y = S blocks. Each block writes its partial to the
 * launch's scratch, then bumps the row's counter; the block that brings it to S
 * combines the S partials in index order, writes the result and puts the counter
 * back to 0. No float atomics: the order is fixed.
 *
 * The launch rule (reduce_rule) is in launch_rule.c, shared with the runtime. */
#include <stdlib.h>
#include <string.h>

#include "cg_impl.h"

typedef struct {
	CgKb *kb;
	CgCoop *c;
	const CgRed *r;
	const uint32_t *ref;
	uint32_t rows_shape[IR_MAX_RANK];
	CgVar acc[CG_RED_MAX][2];   /* value, and index for argmax/argmin */
	bool done[CG_RED_MAX];
	/* uniform */
	LLVMValueRef n, nrows, outer, inner, G, R, S, s, lo, hi, unit;
	LLVMValueRef vok;             /* i1: the rows' vector path may run */
	LLVMValueRef colsh;           /* columns mode: the shared buffer of column_reduce */
	int vlanes;                   /* bodies: 0 scalar, else positions are V-groups */
	/* the row cache: shared memory cs[q] holds tensor ct[q]'s V-group j / V of the
	 * block's row r at r * G * K + j / V, CG_RED_CACHE_BLOCK * K slots (each thread
	 * reads back only what it stored: no barrier); filled[q] once a phase has stored
	 * every trip (later phases read it instead of memory) */
	LLVMValueRef cs[CG_RED_CACHE_T];
	LLVMTypeRef cst[CG_RED_CACHE_T];
	bool filled[CG_RED_CACHE_T], filling[CG_RED_CACHE_T];
	int K;                        /* V-groups a thread holds */
	LLVMValueRef cok;             /* i1, uniform: this launch's rows fit the cache */
	LLVMValueRef cap_groups;      /* V-groups a row's slots span: G * K */
	bool caching;                 /* building the cached path */
	int lv;                       /* the phase being built: a pass, npass the write */
	LLVMValueRef jl[16];          /* vector path: the V positions of the current trip */
	bool vst[CG_RED_MAX];         /* written tensor k: 16-byte stores on the vector path */
	/* per phase */
	LLVMValueRef row, valid, lane, stride, pos[IR_MAX_RANK];
} Red;

static const RelOp *red_op(Red *x, int k)
{
	return &x->kb->spec->ops[x->r->red[k]];
}

static DType acc_dtype(const RelOp *op)
{
	DType it = (DType)op->t[0].dtype;
	return ir_dtype_is_float(it) ? it : DT_I64;
}

static bool is_arg(const RelOp *op)
{
	return op->kind == OP_ARGMAX || op->kind == OP_ARGMIN;
}

static LLVMValueRef sentinel(CgKb *kb)
{
	return cg_i64(kb, INT64_MAX);
}

/* The identity of op's accumulation, and (args) the sentinel index. */
static void identity(CgKb *kb, const RelOp *op, LLVMValueRef *v)
{
	v[0] = cg_reduce_identity(kb, op);
	v[1] = is_arg(op) ? sentinel(kb) : NULL;
}

/* acc (+) other for op; both hold (value, index). Commutative, ties of argmax/argmin
 * to the lower index, a NaN counts as the extreme, the sentinel index loses. */
static void combine(CgCoop *c, LLVMValueRef *acc, const LLVMValueRef *o, void *ctx)
{
	CgKb *kb = c->kb;
	LLVMBuilderRef b = kb->b;
	const RelOp *op = ctx;
	OpKind k = (OpKind)op->kind;
	DType t = acc_dtype(op);
	bool max = k == OP_MAX_DIM || k == OP_ARGMAX;
	switch (k) {
	case OP_SUM: case OP_MEAN:
		acc[0] = cg_binary_value(kb, OP_ADD, t, acc[0], o[0]);
		return;
	case OP_PROD:
		acc[0] = cg_binary_value(kb, OP_MUL, t, acc[0], o[0]);
		return;
	case OP_MAX_DIM: case OP_MIN_DIM:
		acc[0] = cg_select_max(kb, t, acc[0], o[0], max);
		return;
	default:
		break;
	}
	LLVMValueRef a = acc[0], bv = o[0], ai = acc[1], bi = o[1];
	LLVMValueRef lower = LLVMBuildICmp(b, LLVMIntSLT, bi, ai, "");  /* b's index first */
	LLVMValueRef take;   /* take b */
	if (ir_dtype_is_float(t)) {
		LLVMValueRef better = LLVMBuildFCmp(b, max ? LLVMRealOGT : LLVMRealOLT, bv, a, "");
		LLVMValueRef eq = LLVMBuildFCmp(b, LLVMRealOEQ, bv, a, "");
		LLVMValueRef an = LLVMBuildFCmp(b, LLVMRealUNO, a, a, "");
		LLVMValueRef bn = LLVMBuildFCmp(b, LLVMRealUNO, bv, bv, "");
		/* both NaN or equal: the lower index; one NaN: that one; else the better */
		LLVMValueRef same = LLVMBuildOr(b, eq, LLVMBuildAnd(b, an, bn, ""), "");
		LLVMValueRef onlyb = LLVMBuildAnd(b, bn, LLVMBuildNot(b, an, ""), "");
		LLVMValueRef plain = LLVMBuildAnd(b, better, LLVMBuildNot(b, an, ""), "");
		take = LLVMBuildOr(b, LLVMBuildAnd(b, same, lower, ""), LLVMBuildOr(b, onlyb, plain, ""), "");
	} else {
		LLVMValueRef better = LLVMBuildICmp(b, max ? LLVMIntSGT : LLVMIntSLT, bv, a, "");
		LLVMValueRef eq = LLVMBuildICmp(b, LLVMIntEQ, bv, a, "");
		take = LLVMBuildOr(b, better, LLVMBuildAnd(b, eq, lower, ""), "");
	}
	/* an empty side (sentinel index) never wins */
	LLVMValueRef aempty = LLVMBuildICmp(b, LLVMIntEQ, ai, sentinel(kb), "");
	LLVMValueRef bempty = LLVMBuildICmp(b, LLVMIntEQ, bi, sentinel(kb), "");
	take = LLVMBuildAnd(b, LLVMBuildOr(b, take, aempty, ""), LLVMBuildNot(b, bempty, ""), "");
	acc[0] = LLVMBuildSelect(b, take, bv, a, "");
	acc[1] = LLVMBuildSelect(b, take, bi, ai, "");
}

/* The reduction's result (in the output's compute type) from its accumulator. */
static LLVMValueRef finalize(Red *x, int k, LLVMValueRef v, LLVMValueRef idx)
{
	CgKb *kb = x->kb;
	const RelOp *op = red_op(x, k);
	DType t = acc_dtype(op), ot = (DType)op->t[op->nin].dtype;
	if (is_arg(op))
		return cg_convert(kb, idx, DT_I64, ot);
	if (op->kind == OP_MEAN)
		v = cg_binary_value(kb, OP_DIV, t, v, cg_convert(kb, x->n, DT_I64,
				    t == DT_F16 || t == DT_BF16 ? DT_F32 : t));
	return cg_convert(kb, v, t, ot);
}

/* Start of a phase: this thread's row, whether it exists, its position in the row's
 * group, and the memo seeded with the reductions finished so far. */
static void row_begin(Red *x, LLVMValueRef unit)
{
	CgKb *kb = x->kb;
	CgCoop *c = x->c;
	LLVMBuilderRef b = kb->b;
	const CgRed *r = x->r;
	if (!r->column) {
		x->row = LLVMBuildAdd(b, unit, c->tidx[1], "row");
		x->valid = LLVMBuildICmp(b, LLVMIntULT, x->row, x->nrows, "");
		x->lane = c->tidx[0];
		x->stride = x->G;
	} else {
		LLVMValueRef itiles = LLVMBuildUDiv(b, LLVMBuildAdd(b, x->inner, cg_i64(kb, 31), ""),
						    cg_i64(kb, 32), "");
		LLVMValueRef o = LLVMBuildUDiv(b, unit, itiles, "");
		LLVMValueRef i = LLVMBuildAdd(b, LLVMBuildMul(b, LLVMBuildURem(b, unit, itiles, ""),
							      cg_i64(kb, 32), ""), c->tidx[0], "");
		x->valid = LLVMBuildICmp(b, LLVMIntULT, i, x->inner, "");
		x->row = LLVMBuildAdd(b, LLVMBuildMul(b, o, x->inner, ""), i, "row");
		x->lane = c->tidx[1];
		x->stride = x->R;
	}
	/* positions: rows_shape has the axis at size 1; an invalid row reads nothing */
	LLVMValueRef safe = LLVMBuildSelect(b, x->valid, x->row, cg_i64(kb, 0), "");
	CgIdx ri = cg_idx_of(r->rank, x->rows_shape);
	ri.flat = safe;
	cg_idx_dims(kb, &ri);
	for (int d = 0; d < r->rank; d++)
		x->pos[d] = d == r->axis ? cg_i64(kb, 0) : ri.i[d];
	for (int k = 0; k < r->nred; k++) {
		if (!x->done[k])
			continue;
		const RelOp *op = red_op(x, k);
		const RelTensor *out = &op->t[op->nin];
		CgIdx oi = cg_idx_of(out->rank, out->shape);
		oi.has_dims = true;
		for (int d = 0; d < out->rank; d++)
			oi.i[d] = out->shape[d] == 0 ? cg_i64(kb, 0) : x->pos[d];
		LLVMValueRef v = cg_coop_get(c, x->acc[k][0]);
		LLVMValueRef idx = is_arg(op) ? cg_coop_get(c, x->acc[k][1]) : NULL;
		LLVMValueRef f = finalize(x, k, v, idx);
		for (int lane = -1; lane < (r->vec > 1 ? r->vec : 0); lane++) {
			oi.lane = lane;   /* the vector path asks per lane */
			cg_memo_add(kb, out->id, &oi, f);
		}
	}
}

/* The index of the full iteration space at this row and position j of the axis. */
static CgIdx at_axis(Red *x, const uint32_t *shape, LLVMValueRef j)
{
	CgIdx e = cg_idx_of(x->r->rank, shape);
	e.has_dims = true;
	for (int d = 0; d < x->r->rank; d++)
		e.i[d] = d == x->r->axis ? j : shape[d] == 0 ? cg_i64(x->kb, 0) : x->pos[d];
	return e;
}

/* if (cond) { ... } in the current block; returns the join block. */
static LLVMBasicBlockRef branch_if(CgKb *kb, LLVMValueRef cond, const char *name)
{
	LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(kb->m->ctx, kb->fn, name);
	LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(kb->m->ctx, kb->fn, "endif");
	LLVMBuildCondBr(kb->b, cond, then, join);
	LLVMPositionBuilderAtEnd(kb->b, then);
	return join;
}

static void end_if(CgKb *kb, LLVMBasicBlockRef join)
{
	LLVMBuildBr(kb->b, join);
	LLVMPositionBuilderAtEnd(kb->b, join);
}

/* A trip of the vector path begins: no vector loaded yet; on the cached path the
 * vectors of the cached tensors come from their registers once a phase filled them. */
static LLVMValueRef cache_slot(Red *x, int q, LLVMValueRef j)
{
	CgKb *kb = x->kb;
	LLVMBuilderRef b = kb->b;
	/* the V-group j / V of the row, after the rows of the block before this one */
	LLVMValueRef i = LLVMBuildAdd(b, LLVMBuildMul(b, x->c->tidx[1], x->cap_groups, ""),
				      LLVMBuildUDiv(b, j, cg_i64(kb, x->r->vec), ""), "");
	if (x->r->dyn_bytes) {
		i = LLVMBuildMul(b, i, cg_i64(kb, x->r->slot[q]), "");
		return LLVMBuildGEP2(b, kb->m->t_i8, x->cs[q], &i, 1, "");
	}
	return LLVMBuildGEP2(b, x->cst[q], x->cs[q], &i, 1, "");
}

/* The alignment a slot of cached tensor q can claim: the cache is 16-byte aligned,
 * a dynamic cache's slots are 16-byte multiples, a static one's as long as its
 * vector (8 bytes for 4 f16 lanes: claiming 16 there let the host's code generator
 * use an aligned move on every other slot). */
static unsigned slot_align(Red *x, int q)
{
	if (x->r->dyn_bytes)
		return 16;
	LLVMTypeRef t = x->cst[q];
	unsigned n = LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMGetVectorSize(t) : 1;
	LLVMTypeRef e = LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMGetElementType(t) : t;
	unsigned bytes;
	switch (LLVMGetTypeKind(e)) {
	case LLVMHalfTypeKind:
	case LLVMBFloatTypeKind: bytes = 2; break;
	case LLVMFloatTypeKind: bytes = 4; break;
	case LLVMIntegerTypeKind: bytes = LLVMGetIntTypeWidth(e) / 8; break;
	default: bytes = 8; break;
	}
	unsigned a = 16;
	while (a > 1 && (n * bytes) % a)
		a /= 2;
	return a;
}

/* The index of cached tensor q at lane l of the current trip. */
static CgIdx cache_idx(Red *x, int q, int l)
{
	CgIdx e = at_axis(x, x->kb->tinfo[x->r->ct[q]]->shape, x->jl[l]);
	e.lane = l;
	return e;
}

/* A V-group (position j of the row) of the vector path begins: its positions, and no
 * vector loaded yet. On the cached path, once a phase filled the cache, a loaded
 * tensor's vector comes from shared memory, and a made tensor's lanes go to the memo
 * (the phase then computes nothing that reads only them). */
static void trip_begin(Red *x, LLVMValueRef j)
{
	CgKb *kb = x->kb;
	for (int l = 0; l < x->vlanes; l++)
		x->jl[l] = l == 0 ? j : LLVMBuildAdd(kb->b, j, cg_i64(kb, l), "");
	memset(kb->vload, 0, sizeof *kb->vload * (size_t)kb->ntensors);
	if (!x->caching)
		return;
	for (int q = 0; q < x->r->nct; q++) {
		if (!x->filled[q])
			continue;
		int t = x->r->ct[q];
		LLVMValueRef v = LLVMBuildLoad2(kb->b, x->cst[q], cache_slot(x, q, j), "");
		/* not the type's own alignment: a made f32 tensor's slot on a bf16 row's
		 * 8 lanes is 32 bytes, whose alignment the host's vector moves would
		 * assume */
		LLVMSetAlignment(v, slot_align(x, q));
		if (!x->r->ct_made[q]) {
			kb->vload[t] = v;
			continue;
		}
		for (int l = 0; l < x->vlanes; l++) {
			CgIdx e = cache_idx(x, q, l);
			LLVMValueRef lane = LLVMBuildExtractElement(kb->b, v,
				LLVMConstInt(kb->m->t_i32, (unsigned)l, 0), "");
			cg_memo_add(kb, t, &e, cg_widen(kb, lane, (DType)kb->tinfo[t]->dtype));
		}
	}
}

/* It ends: on the cached path, the vectors this phase loaded, and the made tensors
 * of this pass, go to shared memory. */
static void trip_end(Red *x, LLVMValueRef j)
{
	CgKb *kb = x->kb;
	for (int q = 0; q < x->r->nct && x->caching; q++) {
		int t = x->r->ct[q];
		LLVMValueRef v = kb->vload[t];
		if (x->r->ct_made[q] && x->r->ct_level[q] == x->lv) {
			DType dt = (DType)kb->tinfo[t]->dtype;
			v = LLVMGetUndef(LLVMVectorType(cg_stype(kb->m, dt), (unsigned)x->vlanes));
			for (int l = 0; l < x->vlanes; l++) {
				CgIdx e = cache_idx(x, q, l);
				v = LLVMBuildInsertElement(kb->b, v, cg_narrow(kb, cg_eval(kb, t, &e), dt),
							   LLVMConstInt(kb->m->t_i32, (unsigned)l, 0), "");
			}
		} else if (x->r->ct_made[q]) {
			v = NULL;
		}
		if (x->filled[q] || !v)
			continue;
		if (!x->cst[q])
			x->cst[q] = LLVMTypeOf(v);
		if (!x->cs[q])
			x->cs[q] = cg_coop_shared(x->c, x->cst[q], CG_RED_CACHE_BLOCK * x->K);
		LLVMSetAlignment(LLVMBuildStore(kb->b, v, cache_slot(x, q, j)), slot_align(x, q));
		x->filling[q] = true;
	}
	memset(kb->vload, 0, sizeof *kb->vload * (size_t)kb->ntensors);
}

/* Accumulate the reductions ks[q0..q1) at positions j[0..nj) of the row, in order:
 * every value is evaluated (loaded) first, then combined, so the loads of one trip
 * are in flight together. */
static void accumulate(Red *x, const int *ks, int q0, int q1, LLVMValueRef *j, int nj,
		       LLVMValueRef (*acc)[2])
{
	CgKb *kb = x->kb;
	int V = x->vlanes ? x->vlanes : 1;
	LLVMValueRef v[CG_RED_UNROLL * 16][2], at[CG_RED_UNROLL * 16];
	for (int u = 0; u < nj; u++) {
		if (x->vlanes)
			trip_begin(x, j[u]);
		for (int l = 0; l < V; l++) {
			int e0 = u * V + l;
			at[e0] = x->vlanes ? x->jl[l] : j[u];
			for (int q = q0; q < q1; q++) {
				const RelOp *op = red_op(x, ks[q]);
				const RelTensor *in = &op->t[0];
				CgIdx e = at_axis(x, in->shape, at[e0]);
				e.lane = x->vlanes ? l : -1;
				v[e0][q - q0] = cg_convert(kb, cg_eval(kb, in->id, &e),
							   (DType)in->dtype, acc_dtype(op));
			}
		}
		if (x->vlanes)
			trip_end(x, j[u]);
	}
	for (int e0 = 0; e0 < nj * V; e0++)
		for (int q = q0; q < q1; q++) {
			LLVMValueRef other[2] = {v[e0][q - q0], at[e0]};
			combine(x->c, acc[q - q0], other, (void *)red_op(x, ks[q]));
		}
}

/* for (j = start; j < end; j += stride) body, CG_RED_UNROLL positions a trip, then
 * one at a time; carries[] (nc of them) go through both loops. */
typedef void (*RowBody)(Red *x, LLVMValueRef *j, int nj, LLVMValueRef *carry, void *ctx);

static void row_loop(Red *x, LLVMValueRef start, LLVMValueRef end, LLVMValueRef stride,
		     LLVMValueRef *carry, int nc, RowBody body, void *ctx)
{
	CgKb *kb = x->kb;
	LLVMBuilderRef b = kb->b;
	/* positions a trip: on the cached path r->trips of the K V-groups a thread
	 * holds (their loads in flight together; what is left, one at a time); the
	 * vector path 1 (V elements, one 16-byte load per row tensor); the scalar path
	 * CG_RED_UNROLL, or 1 where it is only the fallback of a vector path (registers:
	 * docs/benchmarks.md) */
	int U = x->vlanes || x->r->vec > 1 ? 1 : CG_RED_UNROLL;
	if (x->caching) {
		U = x->K < x->r->trips ? x->K : x->r->trips;
		U = U < CG_RED_UNROLL * 16 / x->vlanes ? U : CG_RED_UNROLL * 16 / x->vlanes;
	}
	LLVMValueRef span = LLVMBuildMul(b, stride, cg_i64(kb, U - 1), "");
	CgLoop l;
	cg_loop_begin(kb, &l, start, LLVMBuildSub(b, end, span, ""),
		      LLVMBuildMul(b, stride, cg_i64(kb, U), ""));
	LLVMValueRef phi[4], cur[4];
	for (int k = 0; k < nc; k++)
		cur[k] = phi[k] = cg_carry(kb, &l, carry[k]);
	LLVMValueRef js[CG_RED_UNROLL * 16];
	for (int u = 0; u < U; u++)
		js[u] = u == 0 ? l.i : LLVMBuildAdd(b, l.i, LLVMBuildMul(b, stride, cg_i64(kb, u), ""), "");
	body(x, js, U, cur, ctx);
	for (int k = 0; k < nc; k++)
		cg_carry_next(kb, &l, phi[k], cur[k]);
	cg_loop_end(kb, &l);
	CgLoop t;
	cg_loop_begin(kb, &t, l.i, end, stride);
	for (int k = 0; k < nc; k++)
		cur[k] = phi[k] = cg_carry(kb, &t, phi[k]);
	body(x, &t.i, 1, cur, ctx);
	for (int k = 0; k < nc; k++)
		cg_carry_next(kb, &t, phi[k], cur[k]);
	cg_loop_end(kb, &t);
	for (int k = 0; k < nc; k++)
		carry[k] = phi[k];
}

/* Run a row loop over [start, end) by `stride` (one thread's share) twice: the vector
 * path (V-groups of elements, 16-byte loads) when x->vok, else the scalar one. `done`
 * runs after either, in its branch (it stores the carries to variables). */
typedef void (*RowDone)(Red *x, LLVMValueRef *carry, void *ctx);

static void row_loops(Red *x, LLVMValueRef start, LLVMValueRef end, LLVMValueRef stride,
		      const LLVMValueRef *init, int nc, RowBody body, RowDone done, void *ctx)
{
	CgKb *kb = x->kb;
	LLVMBuilderRef b = kb->b;
	LLVMValueRef carry[4];
	LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(kb->m->ctx, kb->fn, "rowjoin");
	if (x->r->cache) {
		/* the row cache: the vector path's loop, its row tensors' vectors kept in
		 * shared memory by the first phase that loads them */
		int V = x->r->vec;
		LLVMBasicBlockRef cb = LLVMAppendBasicBlockInContext(kb->m->ctx, kb->fn, "rowcache");
		LLVMBasicBlockRef ob = LLVMAppendBasicBlockInContext(kb->m->ctx, kb->fn, "rowmem");
		LLVMBuildCondBr(b, x->cok, cb, ob);
		LLVMPositionBuilderAtEnd(b, cb);
		int mark = cg_memo_mark(kb);
		if (nc > 0)
			memcpy(carry, init, sizeof *carry * (size_t)nc);
		x->vlanes = V;
		x->caching = true;
		kb->vrow = true;
		LLVMValueRef vstart = LLVMBuildAdd(b, LLVMBuildSub(b, start, x->lane, ""),
						   LLVMBuildMul(b, x->lane, cg_i64(kb, V), ""), "");
		row_loop(x, vstart, end, LLVMBuildMul(b, stride, cg_i64(kb, V), ""), carry, nc,
			 body, ctx);
		x->caching = false;
		x->vlanes = 0;
		kb->vrow = false;
		for (int q = 0; q < x->r->nct; q++)
			x->filled[q] |= x->filling[q];
		if (done)
			done(x, carry, ctx);
		cg_memo_release(kb, mark);
		LLVMBuildBr(b, join);
		LLVMPositionBuilderAtEnd(b, ob);
	}
	if (x->r->vec > 1) {
		int V = x->r->vec;
		LLVMBasicBlockRef vb = LLVMAppendBasicBlockInContext(kb->m->ctx, kb->fn, "rowvec");
		LLVMBasicBlockRef sb = LLVMAppendBasicBlockInContext(kb->m->ctx, kb->fn, "rowscalar");
		LLVMBuildCondBr(b, x->vok, vb, sb);
		LLVMPositionBuilderAtEnd(b, vb);
		int mark = cg_memo_mark(kb);
		if (nc > 0)
			memcpy(carry, init, sizeof *carry * (size_t)nc);
		x->vlanes = V;
		kb->vrow = true;
		/* thread lane takes groups lane, lane + G, ... : elements (lo + lane*V ..) */
		LLVMValueRef vstart = LLVMBuildAdd(b, LLVMBuildSub(b, start, x->lane, ""),
						   LLVMBuildMul(b, x->lane, cg_i64(kb, V), ""), "");
		row_loop(x, vstart, end, LLVMBuildMul(b, stride, cg_i64(kb, V), ""), carry, nc,
			 body, ctx);
		x->vlanes = 0;
		kb->vrow = false;
		if (done)
			done(x, carry, ctx);
		cg_memo_release(kb, mark);
		LLVMBuildBr(b, join);
		LLVMPositionBuilderAtEnd(b, sb);
	}
	if (nc > 0)
		memcpy(carry, init, sizeof *carry * (size_t)nc);
	row_loop(x, start, end, stride, carry, nc, body, ctx);
	if (done)
		done(x, carry, ctx);
	LLVMBuildBr(b, join);
	LLVMPositionBuilderAtEnd(b, join);
}

typedef struct {
	const int *ks;
	int q0, q1;
} PassCtx;

static void pass_body(Red *x, LLVMValueRef *j, int nj, LLVMValueRef *carry, void *ctx)
{
	PassCtx *p = ctx;
	LLVMValueRef acc[2][2];
	int k = 0;
	for (int q = p->q0; q < p->q1; q++) {
		acc[q - p->q0][0] = carry[k++];
		acc[q - p->q0][1] = is_arg(red_op(x, p->ks[q])) ? carry[k++] : NULL;
	}
	accumulate(x, p->ks, p->q0, p->q1, j, nj, acc);
	k = 0;
	for (int q = p->q0; q < p->q1; q++) {
		carry[k++] = acc[q - p->q0][0];
		if (acc[q - p->q0][1])
			carry[k++] = acc[q - p->q0][1];
	}
}

static void pass_done(Red *x, LLVMValueRef *carry, void *ctx)
{
	PassCtx *p = ctx;
	int nc = 0;
	for (int q = p->q0; q < p->q1; q++) {
		cg_coop_set(x->c, x->acc[p->ks[q]][0], carry[nc++]);
		if (is_arg(red_op(x, p->ks[q])))
			cg_coop_set(x->c, x->acc[p->ks[q]][1], carry[nc++]);
	}
}

/* One pass: every reduction of level `lv` accumulated over [lo, hi) of the row. */
static void pass(Red *x, int lv, LLVMValueRef unit)
{
	CgKb *kb = x->kb;
	CgCoop *c = x->c;
	LLVMBuilderRef b = kb->b;
	const CgRed *r = x->r;
	cg_coop_phase_begin(c);
	row_begin(x, unit);
	x->lv = lv;
	LLVMValueRef start = LLVMBuildAdd(b, x->lo, x->lane, "");
	LLVMValueRef end = LLVMBuildSelect(b, x->valid, x->hi, cg_i64(kb, 0), "");
	int ks[CG_RED_MAX], nk = 0;
	for (int k = 0; k < r->nred; k++)
		if (r->level[k] == lv)
			ks[nk++] = k;
	/* two reductions a loop at most: four carries (value, index) */
	for (int q0 = 0; q0 < nk; q0 += 2) {
		int q1 = q0 + 2 < nk ? q0 + 2 : nk;
		LLVMValueRef carry[4];
		int nc = 0;
		for (int q = q0; q < q1; q++) {
			LLVMValueRef init[2];
			identity(kb, red_op(x, ks[q]), init);
			carry[nc++] = init[0];
			if (init[1])
				carry[nc++] = init[1];
		}
		PassCtx pc = {ks, q0, q1};
		row_loops(x, start, end, x->stride, carry, nc, pass_body, pass_done, &pc);
	}
	cg_coop_phase_end(c);
}

/* Columns mode: combine the Ry partials of each column (threads with one tx) through
 * shared memory; every thread ends with its column's values, combined in ty order. */
static void column_reduce(Red *x, CgVar *v, int nv, const RelOp *op)
{
	CgKb *kb = x->kb;
	CgCoop *c = x->c;
	LLVMBuilderRef b = kb->b;
	/* one shared buffer for every column reduction of the kernel: 8-byte slots, the
	 * values at [0, 512), the indices at [512, 1024) (the barrier at the end lets the
	 * next reduction reuse it) */
	if (!x->colsh)
		x->colsh = cg_coop_shared(c, kb->m->t_i64, 1024);
	LLVMValueRef sh[2];
	for (int q = 0; q < nv; q++) {
		LLVMValueRef idx[2] = {cg_i64(kb, 0), cg_i64(kb, 512 * q)};
		sh[q] = LLVMBuildGEP2(b, LLVMArrayType2(kb->m->t_i64, 1024), x->colsh, idx, 2, "");
	}
	cg_coop_phase_begin(c);
	for (int q = 0; q < nv; q++) {
		LLVMValueRef idx[2] = {cg_i64(kb, 0), c->tid};
		LLVMBuildStore(b, cg_coop_get(c, v[q]),
			       LLVMBuildGEP2(b, kb->m->t_i64, sh[q], &idx[1], 1, ""));
	}
	cg_coop_phase_end(c);
	cg_coop_barrier(c);
	cg_coop_phase_begin(c);
	LLVMValueRef a0[2];
	for (int q = 0; q < nv; q++) {
		LLVMValueRef idx[2] = {cg_i64(kb, 0), c->tidx[0]};
		a0[q] = LLVMBuildLoad2(b, v[q].type,
			LLVMBuildGEP2(b, kb->m->t_i64, sh[q], &idx[1], 1, ""), "");
	}
	CgLoop l;
	cg_loop_begin(kb, &l, cg_i64(kb, 1), x->R, cg_i64(kb, 1));
	LLVMValueRef carry[2] = {0}, o[2] = {0}, acc[2] = {0};
	for (int q = 0; q < nv; q++)
		carry[q] = cg_carry(kb, &l, a0[q]);
	LLVMValueRef slot = LLVMBuildAdd(b, LLVMBuildMul(b, l.i, cg_i64(kb, 32), ""), c->tidx[0], "");
	for (int q = 0; q < nv; q++) {
		LLVMValueRef idx[2] = {cg_i64(kb, 0), slot};
		o[q] = LLVMBuildLoad2(b, v[q].type,
			LLVMBuildGEP2(b, kb->m->t_i64, sh[q], &idx[1], 1, ""), "");
		acc[q] = carry[q];
	}
	combine(c, acc, o, (void *)op);
	for (int q = 0; q < nv; q++)
		cg_carry_next(kb, &l, carry[q], acc[q]);
	cg_loop_end(kb, &l);
	for (int q = 0; q < nv; q++)
		cg_coop_set(c, v[q], carry[q]);
	cg_coop_phase_end(c);
	cg_coop_barrier(c);
}

static void group_reduce(Red *x, int k)
{
	const RelOp *op = red_op(x, k);
	int nv = is_arg(op) ? 2 : 1;
	if (x->r->column)
		column_reduce(x, x->acc[k], nv, op);
	else
		cg_coop_group_reduce(x->c, x->acc[k], nv, x->G, combine, (void *)op);
}

typedef struct {
	const int *wr;
	int nw;
} WriteCtx;

/* The vector path's write of one V-group at j: the written tensors of the row's shape
 * (x->vst) as one V-lane store each (16 bytes at most: the warp's stores cover whole
 * sectors), the others (results broadcast over rows) element by element. */
static void write_vector(Red *x, const WriteCtx *w, LLVMValueRef j)
{
	CgKb *kb = x->kb;
	CgModule *m = kb->m;
	int V = x->vlanes;
	LLVMValueRef lanes[CG_RED_MAX][16], off[CG_RED_MAX];
	trip_begin(x, j);
	for (int l = 0; l < V; l++) {
		CgIdx e = at_axis(x, x->ref, x->jl[l]);
		e.lane = l;
		for (int k = 0; k < w->nw; k++) {
			if (k >= CG_RED_MAX || !x->vst[k]) {
				cg_store_written(kb, &e, &w->wr[k], 1);
				continue;
			}
			CgIdx y = e;
			y.shape = kb->tinfo[w->wr[k]]->shape;
			lanes[k][l] = cg_eval(kb, w->wr[k], &y);
			if (l == 0)
				off[k] = cg_offset(kb, &y);
		}
	}
	for (int k = 0; k < w->nw && k < CG_RED_MAX; k++) {
		if (!x->vst[k])
			continue;
		DType dt = (DType)kb->tinfo[w->wr[k]]->dtype;
		LLVMTypeRef st = cg_stype(m, dt);
		LLVMValueRef vec = LLVMGetUndef(LLVMVectorType(st, (unsigned)V));
		for (int l = 0; l < V; l++)
			vec = LLVMBuildInsertElement(kb->b, vec, cg_narrow(kb, lanes[k][l], dt),
						     LLVMConstInt(m->t_i32, (unsigned)l, 0), "");
		int bytes = V * ir_dtype_size(dt);
		LLVMTypeRef it = bytes == 16 ? LLVMVectorType(m->t_i32, 4)
					     : LLVMIntTypeInContext(m->ctx, (unsigned)bytes * 8);
		LLVMValueRef p = LLVMBuildGEP2(kb->b, st, kb->buf[w->wr[k]], &off[k], 1, "");
		LLVMValueRef sv = LLVMBuildStore(kb->b, LLVMBuildBitCast(kb->b, vec, it, ""), p);
		LLVMSetAlignment(sv, (unsigned)bytes);
	}
	trip_end(x, j);
}

static void write_body(Red *x, LLVMValueRef *j, int nj, LLVMValueRef *carry, void *ctx)
{
	(void)carry;
	WriteCtx *w = ctx;
	CgKb *kb = x->kb;
	for (int u = 0; u < nj; u++) {
		if (x->vlanes) {
			write_vector(x, w, j[u]);
			continue;
		}
		CgIdx e = at_axis(x, x->ref, j[u]);
		cg_store_written(kb, &e, w->wr, w->nw);
	}
}


/* Write the row: the whole axis when the results are broadcast back over it, else
 * the one position (by the group's first thread). */
static void write_rows(Red *x, LLVMValueRef unit, const int *wr, int nw)
{
	CgKb *kb = x->kb;
	CgCoop *c = x->c;
	LLVMBuilderRef b = kb->b;
	cg_coop_phase_begin(c);
	row_begin(x, unit);
	x->lv = x->r->npass;
	if (x->r->bcast) {
		LLVMValueRef end = LLVMBuildSelect(b, x->valid, x->n, cg_i64(kb, 0), "");
		WriteCtx wc = {wr, nw};
		row_loops(x, x->lane, end, x->stride, NULL, 0, write_body, NULL, &wc);
	} else {
		LLVMValueRef first = LLVMBuildICmp(b, LLVMIntEQ, x->lane, cg_i64(kb, 0), "");
		LLVMBasicBlockRef join = branch_if(kb, LLVMBuildAnd(b, x->valid, first, ""), "write");
		CgIdx e = at_axis(x, x->ref, cg_i64(kb, 0));
		cg_store_written(kb, &e, wr, nw);
		end_if(kb, join);
	}
	cg_coop_phase_end(c);
}

static LLVMValueRef scratch_at(Red *x, LLVMValueRef byte_offset)
{
	return LLVMBuildGEP2(x->kb->b, x->kb->m->t_i8, x->c->scratch[0], &byte_offset, 1, "");
}

static void fence(Red *x)
{
	if (x->c->gpu)
		cg_intrinsic(x->kb, "llvm.nvvm.membar.gl", NULL, 0, NULL, 0);
}

/* Split rows or columns: partials to the scratch, the last block combines them. */
static void split_finish(Red *x, LLVMValueRef unit, const int *wr, int nw)
{
	CgKb *kb = x->kb;
	CgCoop *c = x->c;
	CgModule *m = kb->m;
	LLVMBuilderRef b = kb->b;
	const RelOp *op = red_op(x, 0);
	bool arg = is_arg(op);
	CgVar *v = x->acc[0];
	LLVMValueRef ncount = x->nrows;    /* counters: one per row, or per 32 columns */
	if (x->r->column) {
		LLVMValueRef itiles = LLVMBuildUDiv(b, LLVMBuildAdd(b, x->inner, cg_i64(kb, 31), ""),
						    cg_i64(kb, 32), "");
		ncount = LLVMBuildMul(b, x->outer, itiles, "");
	}
	LLVMValueRef cbytes = LLVMBuildAnd(b, LLVMBuildAdd(b, LLVMBuildMul(b, ncount, cg_i64(kb, 4), ""),
							  cg_i64(kb, 15), ""), cg_i64(kb, ~(int64_t)15), "");
	LLVMValueRef nslots = LLVMBuildMul(b, x->nrows, x->S, "");
	LLVMValueRef ibase = LLVMBuildAdd(b, cbytes, LLVMBuildMul(b, nslots, cg_i64(kb, 8), ""), "");
	LLVMValueRef flag = cg_coop_shared(c, m->t_i32, 1);
	LLVMValueRef zero2[2] = {cg_i64(kb, 0), cg_i64(kb, 0)};
	LLVMValueRef flagp = LLVMBuildGEP2(b, LLVMArrayType2(m->t_i32, 1), flag, zero2, 2, "");

	/* the partial of this block, one per row (per column) */
	cg_coop_phase_begin(c);
	row_begin(x, unit);
	LLVMValueRef first = LLVMBuildICmp(b, LLVMIntEQ, x->lane, cg_i64(kb, 0), "");
	LLVMBasicBlockRef join = branch_if(kb, LLVMBuildAnd(b, x->valid, first, ""), "partial");
	LLVMValueRef slot = LLVMBuildAdd(b, LLVMBuildMul(b, x->row, x->S, ""), x->s, "");
	LLVMValueRef off = LLVMBuildAdd(b, cbytes, LLVMBuildMul(b, slot, cg_i64(kb, 8), ""), "");
	LLVMBuildStore(b, cg_coop_get(c, v[0]), scratch_at(x, off));
	if (arg) {
		off = LLVMBuildAdd(b, ibase, LLVMBuildMul(b, slot, cg_i64(kb, 8), ""), "");
		LLVMBuildStore(b, cg_coop_get(c, v[1]), scratch_at(x, off));
	}
	end_if(kb, join);
	fence(x);
	cg_coop_phase_end(c);
	cg_coop_barrier(c);
	/* one thread counts the block in */
	cg_coop_phase_begin(c);
	join = branch_if(kb, LLVMBuildICmp(b, LLVMIntEQ, c->tid, cg_i64(kb, 0), ""), "count");
	LLVMValueRef cnt = LLVMBuildGEP2(b, m->t_i32, c->scratch[0], &unit, 1, "");
	LLVMValueRef old = LLVMBuildAtomicRMW(b, LLVMAtomicRMWBinOpAdd, cnt, LLVMConstInt(m->t_i32, 1, 0),
					      LLVMAtomicOrderingMonotonic, 0);
	LLVMValueRef last = LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildZExt(b, old, m->t_i64, ""),
					  LLVMBuildSub(b, x->S, cg_i64(kb, 1), ""), "");
	LLVMBuildStore(b, LLVMBuildZExt(b, last, m->t_i32, ""), flagp);
	end_if(kb, join);
	cg_coop_phase_end(c);
	cg_coop_barrier(c);
	LLVMValueRef lastv = LLVMBuildLoad2(b, m->t_i32, flagp, "");
	LLVMSetVolatile(lastv, 1);
	LLVMBasicBlockRef after = branch_if(kb, LLVMBuildICmp(b, LLVMIntNE, lastv,
							     LLVMConstInt(m->t_i32, 0, 0), ""), "last");
	fence(x);
	/* the last block: combine the S partials of each row in index order */
	cg_coop_phase_begin(c);
	row_begin(x, unit);
	LLVMValueRef init[2];
	identity(kb, op, init);
	LLVMValueRef base = LLVMBuildMul(b, LLVMBuildSelect(b, x->valid, x->row, cg_i64(kb, 0), ""),
					 x->S, "");
	LLVMValueRef endq = LLVMBuildSelect(b, x->valid, x->S, cg_i64(kb, 0), "");
	CgLoop l;
	/* rows: thread q takes partials q, q + G, ... then the group tree; columns: the
	 * first thread of each column takes all S in order */
	LLVMValueRef qstart = x->r->column ? cg_i64(kb, 0) : x->lane;
	LLVMValueRef qstep = x->r->column ? cg_i64(kb, 1) : x->G;
	if (x->r->column)
		endq = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, x->lane, cg_i64(kb, 0), ""),
				       endq, cg_i64(kb, 0), "");
	cg_loop_begin(kb, &l, qstart, endq, qstep);
	LLVMValueRef a0 = cg_carry(kb, &l, init[0]);
	LLVMValueRef a1 = arg ? cg_carry(kb, &l, init[1]) : NULL;
	LLVMValueRef sl = LLVMBuildAdd(b, base, l.i, "");
	/* each partial read is set back to zero: the plan's launches share one scratch,
	 * and a later kernel's counters may lie where these partials were (codegen.h) */
	LLVMValueRef pvp = scratch_at(x, LLVMBuildAdd(b, cbytes, LLVMBuildMul(b, sl, cg_i64(kb, 8), ""), ""));
	LLVMValueRef pv = LLVMBuildLoad2(b, v[0].type, pvp, "");
	LLVMSetVolatile(pv, 1);
	LLVMBuildStore(b, LLVMConstNull(v[0].type), pvp);
	LLVMValueRef pi = NULL;
	if (arg) {
		LLVMValueRef pip = scratch_at(x, LLVMBuildAdd(b, ibase,
					      LLVMBuildMul(b, sl, cg_i64(kb, 8), ""), ""));
		pi = LLVMBuildLoad2(b, m->t_i64, pip, "");
		LLVMSetVolatile(pi, 1);
		LLVMBuildStore(b, LLVMConstNull(m->t_i64), pip);
	}
	LLVMValueRef acc[2] = {a0, a1}, other[2] = {pv, pi};
	combine(c, acc, other, (void *)op);
	cg_carry_next(kb, &l, a0, acc[0]);
	if (arg)
		cg_carry_next(kb, &l, a1, acc[1]);
	cg_loop_end(kb, &l);
	cg_coop_set(c, v[0], a0);
	if (arg)
		cg_coop_set(c, v[1], a1);
	join = branch_if(kb, LLVMBuildICmp(b, LLVMIntEQ, c->tid, cg_i64(kb, 0), ""), "reset");
	LLVMBuildStore(b, LLVMConstInt(m->t_i32, 0, 0), LLVMBuildGEP2(b, m->t_i32, c->scratch[0],
								     &unit, 1, ""));
	end_if(kb, join);
	cg_coop_phase_end(c);
	if (!x->r->column)
		cg_coop_group_reduce(c, v, arg ? 2 : 1, x->G, combine, (void *)op);
	write_rows(x, unit, wr, nw);
	end_if(kb, after);
	cg_coop_barrier(c);   /* the flag is read again by the next unit */
}

void cg_reduce_kernel(CgKb *kb, CgCoop *c, const CgRed *r, const uint32_t *ref, const int *wr,
		      int nw, CgKernel *k)
{
	LLVMBuilderRef b = kb->b;
	Red x0, *x = &x0;
	memset(x, 0, sizeof *x);
	x->kb = kb;
	x->c = c;
	x->r = r;
	x->ref = ref;
	memcpy(x->rows_shape, r->full, sizeof *r->full * (size_t)r->rank);
	x->rows_shape[r->axis] = 0;
	for (int q = 0; q < r->nred; q++) {
		const RelOp *op = red_op(x, q);
		x->acc[q][0] = cg_coop_var(c, cg_ctype(kb->m, acc_dtype(op)));
		if (is_arg(op))
			x->acc[q][1] = cg_coop_var(c, kb->m->t_i64);
	}
	/* a kernel built for one row length and block (CgKernelSpec.red_row, red_g,
	 * red_r: a plan of concrete sizes): n, G and R are constants, so that the row's
	 * loops, the index math and the group's tree fold; a launch at another length
	 * or block (which no plan of concrete sizes makes) traps rather than reading a
	 * row wrong */
	int64_t n0 = kb->spec->red_row, g0 = kb->spec->red_g, r0 = kb->spec->red_r;
	bool fixed = n0 > 0 && g0 > 0 && r0 > 0 && !r->split && !r->column && !r->dyn_bytes &&
		     (int)r->n < kb->ndims;
	if (fixed) {
		if (c->gpu) {
			LLVMValueRef bad = LLVMBuildICmp(b, LLVMIntNE, cg_dim(kb, r->n), cg_i64(kb, n0), "");
			bad = LLVMBuildOr(b, bad, LLVMBuildICmp(b, LLVMIntNE, c->ntid[0], cg_i64(kb, g0), ""), "");
			bad = LLVMBuildOr(b, bad, LLVMBuildICmp(b, LLVMIntNE, c->ntid[1], cg_i64(kb, r0), ""), "");
			LLVMBasicBlockRef trap = LLVMAppendBasicBlockInContext(kb->m->ctx, kb->fn, "geometry");
			LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(kb->m->ctx, kb->fn, "fixed");
			LLVMBuildCondBr(b, bad, trap, ok);
			LLVMPositionBuilderAtEnd(b, trap);
			cg_intrinsic(kb, "llvm.trap", NULL, 0, NULL, 0);
			LLVMBuildUnreachable(b);
			LLVMPositionBuilderAtEnd(b, ok);
		}
		kb->dim[r->n] = cg_i64(kb, n0);
		x->G = cg_i64(kb, g0);
		x->R = cg_i64(kb, r0);
	}
	x->n = cg_dim(kb, r->n);
	x->nrows = cg_i64(kb, 1);
	x->outer = cg_i64(kb, 1);
	x->inner = cg_i64(kb, 1);
	for (int d = 0; d < r->rank; d++) {
		if (d == r->axis)
			continue;
		LLVMValueRef v = cg_dim(kb, r->full[d]);
		x->nrows = LLVMBuildMul(b, x->nrows, v, "");
		if (d < r->axis)
			x->outer = LLVMBuildMul(b, x->outer, v, "");
		else
			x->inner = LLVMBuildMul(b, x->inner, v, "");
	}
	if (!fixed) {
		x->G = c->ntid[0];
		x->R = c->ntid[1];
	}
	x->S = c->nctaid[1];
	x->s = c->ctaid[1];
	/* this block's part of the axis: [lo, hi) of ceil(n / S) elements; the whole
	 * axis where the kernel cannot split (the launch rule's S is then 1: no
	 * division in the prologue, which a block of few rows waits on) */
	if (r->split) {
		LLVMValueRef chunk = LLVMBuildUDiv(b, LLVMBuildSub(b, LLVMBuildAdd(b, x->n, x->S, ""),
								   cg_i64(kb, 1), ""), x->S, "");
		x->lo = LLVMBuildMul(b, x->s, chunk, "");
		LLVMValueRef hi = LLVMBuildAdd(b, x->lo, chunk, "");
		x->hi = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, hi, x->n, ""), hi, x->n, "");
	} else {
		x->lo = cg_i64(kb, 0);
		x->hi = x->n;
	}
	/* the rows' vector path: row tensors 16-byte aligned, the row's part a multiple
	 * of V elements (n, and lo, hi when split) */
	kb->vec = r->vec;
	kb->vrow_axis = r->axis;
	kb->rowk = true;
	if (r->vec > 1) {
		LLVMValueRef mis = cg_i64(kb, 0);
		for (int q = 0; q < r->nvt; q++)
			mis = LLVMBuildOr(b, mis, LLVMBuildPtrToInt(b, kb->buf[r->vt[q]], kb->m->t_i64, ""), "");
		/* written tensors of the row's shape: V-lane stores of at most 16 bytes */
		for (int q = 0; q < nw && q < CG_RED_MAX && r->bcast; q++) {
			const RelTensor *w = kb->tinfo[wr[q]];
			int bytes = r->vec * ir_dtype_size((DType)w->dtype);
			x->vst[q] = cg_same_shape(w->rank, w->shape, r->rank, ref) &&
				    (bytes == 4 || bytes == 8 || bytes == 16);
			if (x->vst[q])
				mis = LLVMBuildOr(b, mis, LLVMBuildPtrToInt(b, kb->buf[wr[q]], kb->m->t_i64, ""), "");
		}
		mis = LLVMBuildAnd(b, mis, cg_i64(kb, 15), "");
		LLVMValueRef vm = cg_i64(kb, r->vec - 1);
		mis = LLVMBuildOr(b, mis, LLVMBuildAnd(b, LLVMBuildOr(b, x->n, LLVMBuildOr(b, x->lo,
				  x->hi, ""), ""), vm, ""), "");
		x->vok = LLVMBuildICmp(b, LLVMIntEQ, mis, cg_i64(kb, 0), "vok");
	}
	/* the row cache: rows of 1 to G * K * V elements on the vector path */
	if (r->cache) {
		int E = r->dyn_bytes ? r->dyn_elems : CG_RED_CACHE;
		x->K = E / r->vec < 1 ? 1 : E / r->vec;
		x->cap_groups = LLVMBuildMul(b, x->G, cg_i64(kb, x->K), "");
		LLVMValueRef cap = LLVMBuildMul(b, x->G, cg_i64(kb, (int64_t)x->K * r->vec), "");
		LLVMValueRef fits = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntULE, x->n, cap, ""),
						 LLVMBuildICmp(b, LLVMIntUGT, x->n, cg_i64(kb, 0), ""), "");
		/* the slots are those of CG_RED_CACHE_BLOCK threads; in dynamic shared
		 * memory those of the block's threads, which the launch gave room for
		 * where they are at most cg_reduce_dyn_threads (launch_rule.c), and
		 * which the kernel checks it has (a launch without it, say by a runtime
		 * that sized none, runs the passes over memory) */
		int64_t most = r->dyn_bytes ? cg_reduce_dyn_threads(r->dyn_bytes) : CG_RED_CACHE_BLOCK;
		fits = LLVMBuildAnd(b, fits, LLVMBuildICmp(b, LLVMIntULE, c->nthreads,
				cg_i64(kb, most), ""), "");
		if (r->dyn_bytes)
			fits = LLVMBuildAnd(b, fits, LLVMBuildICmp(b, LLVMIntUGE, cg_coop_dynamic_bytes(c),
					LLVMBuildMul(b, c->nthreads, cg_i64(kb, r->dyn_bytes), ""), ""), "");
		x->cok = LLVMBuildAnd(b, x->vok, fits, "cok");
		LLVMValueRef at = cg_i64(kb, 0);
		for (int q = 0; q < r->nct && r->dyn_bytes; q++) {
			x->cs[q] = LLVMBuildGEP2(b, kb->m->t_i8, cg_coop_dynamic_shared(c), &at, 1, "");
			at = LLVMBuildAdd(b, at, LLVMBuildMul(b, c->nthreads,
				cg_i64(kb, (int64_t)x->K * r->slot[q]), ""), "");
		}
	}
	/* the units a block takes in turn: rows mode, its first row (blocks of R
	 * rows, while it is below nrows: no division); columns mode, the index of
	 * its 32 columns */
	CgLoop lu;
	if (!r->column) {
		cg_loop_begin(kb, &lu, LLVMBuildMul(b, c->ctaid[0], x->R, ""), x->nrows,
			      LLVMBuildMul(b, c->nctaid[0], x->R, ""));
	} else {
		LLVMValueRef itiles = LLVMBuildUDiv(b, LLVMBuildAdd(b, x->inner, cg_i64(kb, 31), ""),
						    cg_i64(kb, 32), "");
		cg_loop_begin(kb, &lu, c->ctaid[0], LLVMBuildMul(b, x->outer, itiles, ""),
			      c->nctaid[0]);
	}
	for (int q = 0; q < r->nred; q++)
		x->done[q] = false;
	for (int lv = 0; lv < r->npass; lv++) {
		pass(x, lv, lu.i);
		for (int q = 0; q < r->nred; q++)
			if (r->level[q] == lv)
				group_reduce(x, q);
		for (int q = 0; q < r->nred; q++)
			if (r->level[q] == lv)
				x->done[q] = true;
	}
	if (r->split) {
		LLVMValueRef many = LLVMBuildICmp(b, LLVMIntUGT, x->S, cg_i64(kb, 1), "");
		LLVMBasicBlockRef one = LLVMAppendBasicBlockInContext(kb->m->ctx, kb->fn, "unsplit");
		LLVMBasicBlockRef sp = LLVMAppendBasicBlockInContext(kb->m->ctx, kb->fn, "split");
		LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(kb->m->ctx, kb->fn, "written");
		LLVMBuildCondBr(b, many, sp, one);
		LLVMPositionBuilderAtEnd(b, sp);
		split_finish(x, lu.i, wr, nw);
		LLVMBuildBr(b, join);
		LLVMPositionBuilderAtEnd(b, one);
		write_rows(x, lu.i, wr, nw);
		LLVMBuildBr(b, join);
		LLVMPositionBuilderAtEnd(b, join);
	} else {
		write_rows(x, lu.i, wr, nw);
	}
	cg_loop_end(kb, &lu);

	CgLaunch *L = &k->launch;
	L->coop = true;
	L->rule = CG_RULE_REDUCE;
	L->block = r->dyn_bytes ? CG_RED_DYN_THREADS : CG_RED_THREADS;
	L->vec = 1;
	L->max_grid = (int64_t)1 << 30;
	L->arg[0] = r->column;
	L->arg[1] = r->split;
	L->arg[2] = r->has_arg;
	L->arg[3] = r->axis;
	L->arg[4] = r->rank;
	for (int d = 0; d < r->rank; d++)
		L->arg[5 + d] = r->full[d];
	L->arg[13] = r->cache;
	L->arg[14] = r->dyn_bytes;
	L->arg[15] = r->dyn_bytes ? r->dyn_elems : 0;
	k->shape = r->column ? (r->bcast ? "columns, broadcast back: (32 x Ry) threads per 32 columns"
				: r->split ? "columns: (32 x Ry) threads per 32 columns, long columns may split over grid.y"
				: "columns: (32 x Ry) threads per 32 columns")
		 : r->long_rows ? "rows, broadcast back: G threads per row, R rows per block (long f32 rows)"
		 : r->dyn_bytes ? "rows, broadcast back: G threads per row, R rows per block (long rows)"
		 : r->bcast ? "rows, broadcast back: G threads per row, R rows per block"
		 : r->split ? "rows: G threads per row, R rows per block, long rows may split over grid.y"
		 : "rows: G threads per row, R rows per block";
}
