/* reduce_plan.c: how a cooperative reduce kernel is laid out (kernel_reduce.c builds
 * it): which reductions it holds and along which axis, the pass each runs in (after
 * the reductions it reads), rows or columns mode, whether it may split, the 16-byte
 * vector path, the row cache's tensors in shared memory, and the class of kernel
 * the concrete sizes call for (long rows, few rows: cg_reduce_long). */
#include <stdlib.h>
#include <string.h>

#include "cg_impl.h"

/* The pass of each reduction: 0 when its input reads no reduction of the kernel,
 * else one more than the latest it reads. Returns the number of reductions upstream
 * of tensor t along the longest path (memo per tensor; -1 unknown). */
static int upstream(CgKb *kb, CgRed *r, int t, int *memo)
{
	int p = kb->producer[t];
	if (p < 0)
		return 0;
	if (memo[t] >= 0)
		return memo[t];
	const RelOp *op = &kb->spec->ops[p];
	int res = 0;
	if (ir_ops[op->kind].family == FAM_REDUCE) {
		int lv = upstream(kb, r, op->t[0].id, memo);
		res = lv + 1;
	} else {
		for (int i = 0; i < op->nin; i++) {
			int u = upstream(kb, r, op->t[i].id, memo);
			if (u > res)
				res = u;
		}
	}
	memo[t] = res;
	return res;
}

/* Whether evaluating tensor t reads tensor target: through every op but a reduction
 * (a row's result, held in the memo) and the tensors of stop (cached). seen marks the
 * tensors already walked. */
static bool reads(CgKb *kb, int t, int target, const int *stop, int nstop, bool *seen)
{
	if (t == target)
		return true;
	if (seen[t])
		return false;
	seen[t] = true;
	for (int q = 0; q < nstop; q++)
		if (t == stop[q])
			return false;
	int p = kb->producer[t];
	if (p < 0 || ir_ops[kb->spec->ops[p].kind].family == FAM_REDUCE)
		return false;
	const RelOp *op = &kb->spec->ops[p];
	for (int i = 0; i < op->nin; i++)
		if (reads(kb, op->t[i].id, target, stop, nstop, seen))
			return true;
	return false;
}

/* Whether phase p (a pass 0 .. npass-1 reads its reductions' inputs; npass, the
 * write, the written tensors) reads target when the made tensors cached by an
 * earlier pass come from the cache. */
static bool phase_reads(CgKb *kb, const CgRed *r, const bool *written, int p, int target)
{
	int stop[CG_RED_CACHE_T], ns = 0;
	for (int q = 0; q < r->nct; q++)
		if (r->ct_made[q] && r->ct_level[q] < p)
			stop[ns++] = r->ct[q];
	bool *seen = xcalloc((size_t)kb->ntensors + 1, sizeof *seen);
	bool hit = false;
	for (int t = 0; t < kb->ntensors && !hit; t++) {
		bool root = p == r->npass && written[t];
		for (int k = 0; k < r->nred && !root && p < r->npass; k++)
			root = r->level[k] == p && kb->spec->ops[r->red[k]].t[0].id == t;
		if (root)
			hit = reads(kb, t, target, stop, ns, seen);
	}
	free(seen);
	return hit;
}

/* Whether spec's row cache is in dynamic shared memory. */
static bool dyn_cache(const CgKernelSpec *s)
{
	return s->red_long == CG_RED_LONG_DYN || s->red_long == CG_RED_LONG_F32_DYN;
}

/* The row cache's tensors (rows broadcast back, on the vector path): first the
 * reductions' inputs the kernel computes and a later phase reads again (softmax's
 * x - max and exp, a norm's centred row: no phase computes them twice), then the
 * row tensors of the full shape (not those broadcast over rows, which L1 holds) that
 * two phases load; CG_RED_CACHE elements a thread, CG_RED_CACHE_BYTES a block. Long
 * rows (red_long) hold CG_RED_DYN_GROUPS V-groups a thread in dynamic shared memory,
 * at most CG_RED_DYN_BYTES / CG_RED_DYN_THREADS bytes a thread, so that 1024 threads
 * may hold a row: one tensor (f32 rows of 32768, bf16 rows of 65536; softmax keeps
 * exp, or its input where exp's slots are wider, and computes exp again). */
static void cache_plan(CgKb *kb, const CgKernelSpec *s, const bool *written, CgRed *r)
{
	bool dyn = dyn_cache(s);
	int trips = dyn ? CG_RED_DYN_GROUPS : CG_RED_CACHE / r->vec < 1 ? 1 : CG_RED_CACHE / r->vec;
	int64_t block = dyn ? 1 : CG_RED_CACHE_BLOCK;
	int64_t budget = dyn ? CG_RED_DYN_BYTES / CG_RED_DYN_THREADS : CG_RED_CACHE_BYTES;
	int64_t bytes = 0;
	for (int k = 0; k < r->nred && r->nct < CG_RED_CACHE_T; k++) {
		const RelTensor *t = &s->ops[r->red[k]].t[0];
		int64_t slot = r->vec * ir_dtype_size((DType)t->dtype);
		int64_t per = block * trips * (dyn ? (slot + 15) / 16 * 16 : slot);
		bool full = kb->producer[t->id] >= 0;
		for (int d = 0; d < r->rank; d++)
			full &= t->shape[d] == r->full[d];
		for (int q = 0; q < r->nct; q++)
			full &= r->ct[q] != t->id;
		if (!full || bytes + per > budget)
			continue;
		bool later = false;
		for (int p = r->level[k] + 1; p <= r->npass && !later; p++)
			later = phase_reads(kb, r, written, p, t->id);
		if (later) {
			r->ct_made[r->nct] = true;
			r->ct_level[r->nct] = r->level[k];
			r->ct[r->nct++] = t->id;
			bytes += per;
		}
	}
	for (int q = 0; q < r->nvt && r->nct < CG_RED_CACHE_T; q++) {
		const RelTensor *t = kb->tinfo[r->vt[q]];
		int64_t per = block * trips * 16;
		bool full = true;
		for (int d = 0; d < r->rank; d++)
			full &= d == r->axis || t->shape[d] == r->full[d];
		int phases = 0;
		for (int p = 0; p <= r->npass && full; p++)
			phases += phase_reads(kb, r, written, p, t->id);
		if (full && phases > 1 && bytes + per <= budget) {
			r->ct[r->nct++] = r->vt[q];
			bytes += per;
		}
	}
}

/* Whether one of the kernel's ops is long math with registers of its own (erf,
 * tanh, log, sin, a general pow, ...; exp is not). Its kernel loads one V-group of
 * a cached row at a time: with two in flight G4's gelu spilled and ran 18 % slower
 * on the H200, where softmax and the norms without such math ran 4-9 % faster
 * (docs/benchmarks.md, "Two trips"). */
static bool heavy_math(const CgKernelSpec *s)
{
	for (int i = 0; i < s->nops; i++)
		switch ((OpKind)s->ops[i].kind) {
		case OP_GELU: case OP_ERF: case OP_TANH: case OP_SIGMOID: case OP_SILU:
		case OP_LOG: case OP_LOG1P: case OP_SIN: case OP_COS:
		case OP_POW: case OP_POWF: case OP_POW_SCALAR:
			return true;
		default:
			break;
		}
	return false;
}

/* Whether plan r may take the long-row trips and registers: the cached path,
 * without long math, and f32 rows (four elements a 16-byte load). bf16 rows ran
 * 2-12 % slower with them on the H200; f64 rows were not measured. */
static bool long_kind(const CgKernelSpec *s, const CgRed *r)
{
	return r->cache && !heavy_math(s) && r->vec == 16 / 4;
}

int cg_reduce_long(const CgKernelSpec *s, const CgRed *r, int64_t n, int64_t rows, bool dyn)
{
	if (long_kind(s, r) && n >= CG_RED_LONG_ROW)
		return dyn ? CG_RED_LONG_F32_DYN : CG_RED_LONG_F32;
	if (dyn && r->cache && n > (int64_t)CG_RED_CACHE_BLOCK * CG_RED_CACHE)
		return CG_RED_LONG_DYN;
	/* the launch rule's few rows (launch_rule.c, reduce_rule): rows within the
	 * static cache, a block of R rows, under a wave of blocks */
	if (r->column || n > (int64_t)CG_RED_CACHE_BLOCK * CG_RED_CACHE)
		return 0;
	return cg_reduce_few_rows(n, rows, r->cache) ? CG_RED_FEW : 0;
}

bool cg_reduce_plan(CgKb *kb, const CgKernelSpec *s, int rank, const uint32_t *ref,
		    const bool *written, CgRed *r)
{
	memset(r, 0, sizeof *r);
	int ax = -1;
	for (int i = 0; i < s->nops; i++) {
		const RelOp *op = &s->ops[i];
		OpFamily f = ir_ops[op->kind].family;
		if (f == FAM_MATMUL || f == FAM_JOIN || f == FAM_MODULE)
			return false;
		if (f != FAM_REDUCE)
			continue;
		if (op->t[0].rank != rank || r->nred == CG_RED_MAX)
			return false;
		if (ax >= 0 && op->attr.axis != ax)
			return false;
		ax = op->attr.axis;
		r->red[r->nred++] = i;
	}
	if (r->nred == 0 || ax < 0 || ax >= rank)
		return false;
	uint32_t n = s->ops[r->red[0]].t[0].shape[ax];
	for (int k = 0; k < r->nred; k++) {
		const RelTensor *in = &s->ops[r->red[k]].t[0];
		if (in->shape[ax] != n)
			return false;
		for (int d = 0; d < rank; d++)
			if (d != ax && in->shape[d] != 0 && in->shape[d] != ref[d])
				return false;
	}
	if (ref[ax] != 0 && ref[ax] != n)
		return false;
	r->axis = ax;
	r->rank = rank;
	r->n = n;
	r->bcast = ref[ax] != 0;
	memcpy(r->full, ref, sizeof *ref * (size_t)rank);
	r->full[ax] = n;
	for (int d = ax + 1; d < rank; d++)
		r->column |= r->full[d] != 0;
	int *memo = xmalloc(sizeof *memo * ((size_t)kb->ntensors + 1));
	for (int i = 0; i <= kb->ntensors; i++)
		memo[i] = -1;
	for (int k = 0; k < r->nred; k++) {
		r->level[k] = upstream(kb, r, s->ops[r->red[k]].t[0].id, memo);
		if (r->level[k] + 1 > r->npass)
			r->npass = r->level[k] + 1;
	}
	free(memo);
	r->split = !r->bcast && r->nred == 1;
	/* rows mode: 16-byte loads of the tensors read along the whole row, when the kernel
	 * has no view (a lane's element is then the next one in memory) */
	r->vec = 1;
	bool views = false;
	int maxsize = 1;
	for (int i = 0; i < s->nops && !r->column && n != 0; i++) {
		const RelOp *op = &s->ops[i];
		views |= ir_ops[op->kind].family == FAM_VIEW;
		for (int k = 0; k < op->nin; k++) {
			const RelTensor *t = &op->t[k];
			if (kb->producer[t->id] >= 0 || t->rank != rank || t->shape[ax] != n)
				continue;
			bool seen = false;
			for (int q = 0; q < r->nvt; q++)
				seen |= r->vt[q] == t->id;
			if (seen)
				continue;
			if (r->nvt == CG_RED_MAX) {
				views = true;
				break;
			}
			r->vt[r->nvt++] = t->id;
			if (ir_dtype_size((DType)t->dtype) > maxsize)
				maxsize = ir_dtype_size((DType)t->dtype);
		}
	}
	if (!views && r->nvt > 0)
		r->vec = 16 / maxsize;
	/* the row cache, in shared memory */
	r->cache = r->bcast && !r->column && r->vec > 1;
	if (r->cache)
		cache_plan(kb, s, written, r);
	r->cache &= r->nct > 0;
	r->long_rows = (s->red_long == CG_RED_LONG_F32 || s->red_long == CG_RED_LONG_F32_DYN) &&
		       long_kind(s, r);
	r->few = s->red_long == CG_RED_FEW;
	r->trips = !r->cache || heavy_math(s) ? 1 : r->long_rows ? CG_RED_LONG_TRIPS : CG_RED_TRIPS;
	/* long rows: the cache's slots in dynamic shared memory, CG_RED_DYN_GROUPS
	 * V-groups a thread (32 f32, 64 bf16), each a 16-byte multiple (cache_slot), so
	 * that the launch sizes it for the row (launch_rule.c) */
	if (r->cache && dyn_cache(s)) {
		r->dyn_elems = CG_RED_DYN_GROUPS * r->vec;
		for (int q = 0; q < r->nct; q++) {
			int b = r->vec * ir_dtype_size((DType)kb->tinfo[r->ct[q]]->dtype);
			r->slot[q] = (b + 15) / 16 * 16;
			r->dyn_bytes += CG_RED_DYN_GROUPS * r->slot[q];
		}
	}
	for (int k = 0; k < r->nred; k++) {
		OpKind kind = (OpKind)s->ops[r->red[k]].kind;
		r->has_arg |= kind == OP_ARGMAX || kind == OP_ARGMIN;
	}
	return true;
}
