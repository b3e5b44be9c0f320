/* explorer.c: the stream optimizer: blocking, merging, and settling a plan
 * (SPEC §3 "Explorer / stream optimizer" and "Plan selection").
 *
 * Registration: an op that shares a tensor with exactly one block joins it; with
 * none it opens a block; one that touches several first tries to merge them and,
 * failing that, opens a dependent block. At most max_blocks blocks: when a new one
 * is needed at the cap, every block is force-merged, and if the count is still at
 * the cap the optimizer stops and the remaining ops wait for the next segment.
 *
 * Merging folds the candidates, in start order, into an accumulator; a merge is
 * refused when a block outside the pair lies on a dependency path between them
 * (the merged block would form a cycle), when neither append order is valid, or
 * when block_merge's acceptance rule says no. Refused blocks are merged among
 * themselves in the next round.
 *
 * Settling: merge, then each block in dependency order takes its best fuser (ready,
 * highest score above 0, ties to the earlier fuser); without a winner only the
 * block's unfusable head is settled. Unclaimed ops before the last claimed one are
 * holes, searched again on their own. The chunks are then put in an order that
 * respects produce-before-read and read-before-free; failing that, the split of
 * unfused chunks into single ops; failing that, everything unfused in stream order. */
#include <stdlib.h>
#include <string.h>

#include "search.h"

enum { MERGE_CYCLE, MERGE_ORDER, MERGE_NO_GAIN };

void sopt_init(StreamOpt *o, SearchCtx *c)
{
	memset(o, 0, sizeof *o);
	o->c = c;
}

void sopt_reset(StreamOpt *o)
{
	for (int i = 0; i < o->nblocks; i++)
		block_free(o->blocks[i]);
	o->nblocks = 0;
	o->length = 0;
	o->calls = 0;
	o->stopped = false;
}

void sopt_free(StreamOpt *o)
{
	sopt_reset(o);
	free(o->blocks);
	o->blocks = NULL;
	o->cap = 0;
}

static void push_block(StreamOpt *o, Block *b)
{
	if (o->nblocks == o->cap) {
		o->cap = o->cap ? o->cap * 2 : 8;
		o->blocks = xrealloc(o->blocks, sizeof(Block *) * (size_t)o->cap);
	}
	o->blocks[o->nblocks++] = b;
}

static void sort_blocks(Block **b, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && b[j - 1]->start_pos > b[j]->start_pos; j--) {
			Block *t = b[j];
			b[j] = b[j - 1];
			b[j - 1] = t;
		}
}

static bool in_list(Block *const *l, int n, const Block *b)
{
	for (int i = 0; i < n; i++)
		if (l[i] == b)
			return true;
	return false;
}

/* Whether all[i] depends on all[j], through the cache dep (nall x nall: 0 not yet
 * known, 1 no, 2 yes), which lives as long as the blocks stay unchanged. */
static bool depends(Block *const *all, uint8_t *dep, int nall, int i, int j)
{
	uint8_t *d = &dep[(size_t)i * (size_t)nall + (size_t)j];
	if (!*d)
		*d = block_depends_on(all[i], all[j]) ? 2 : 1;
	return *d == 2;
}

/* Would merging x and y create a cycle through one of the blocks all[others[k]]? */
static bool contract_ok(const Block *x, const Block *y, Block *const *all, uint8_t *dep,
			int nall, const int *others, int n)
{
	if (n == 0)
		return true;
	bool *desc = xcalloc((size_t)n * 4, sizeof(bool));
	bool *anc = desc + n, *after = desc + 2 * n, *before = desc + 3 * n;
	for (int i = 0; i < n; i++) {
		const Block *b = all[others[i]];
		after[i] = block_depends_on(b, x) || block_depends_on(b, y);
		before[i] = block_depends_on(x, b) || block_depends_on(y, b);
	}
	for (bool changed = true; changed;) {
		changed = false;
		for (int i = 0; i < n; i++) {
			if (!desc[i]) {
				bool d = after[i];
				for (int j = 0; j < n && !d; j++)
					d = desc[j] && depends(all, dep, nall, others[i], others[j]);
				if (d)
					desc[i] = changed = true;
			}
			if (!anc[i]) {
				bool a = before[i];
				for (int j = 0; j < n && !a; j++)
					a = anc[j] && depends(all, dep, nall, others[j], others[i]);
				if (a)
					anc[i] = changed = true;
			}
		}
	}
	bool ok = true;
	for (int i = 0; i < n; i++)
		ok &= !(desc[i] && anc[i]);
	free(desc);
	return ok;
}

static void record_refused(SearchCtx *c, const Block *a, const Block *b, int reason)
{
	if (!c->rec->on)
		return;
	Event *e = rec_add(c->rec, EV_MERGE_REFUSED, c->stream);
	e->a = a->start_pos < b->start_pos ? a->start_pos : b->start_pos;
	e->b = a->start_pos < b->start_pos ? b->start_pos : a->start_pos;
	e->reason = (uint8_t)reason;
	e->op = c->global[e->b];
}

/* Merge the blocks of cand (n of them) as far as the rules allow. `all` are every
 * block of the optimizer (for the cycle guard). Returns the resulting blocks in
 * *out (some may be the originals); the caller frees originals not returned. */
/* ---- merging, as burn's search/merging.rs ----------------------------------------
 *
 * A group of blocks merges by recursive halving: two blocks merge directly; more are
 * cut into chunks of n/2, each chunk merged recursively into full, partial (merged
 * and failed) or failed results; then accumulator passes fold the partial ones, the
 * partial with the failed, the full ones, the full with the failed, and the full with
 * the partial (merge_step2). A pair merges when the guard sees no cycle through a
 * block outside both, and one append order is valid and accepted (block_merge's
 * rule), self first. Each result remembers the original blocks it holds (the guard
 * reasons over those). */

typedef struct {
	Block *b;
	int *orig;             /* indices in `all` of the original blocks it holds */
	int norig;
} MBlock;

typedef struct {
	SearchCtx *c;
	Block **all; int nall;
	uint8_t *dep;          /* depends() cache over `all` */
	int *others;
	Block **made; int nmade, capmade;     /* blocks allocated here */
	int **ints; int nints, capints;       /* orig lists allocated here */
	int *refused; int nrefused, caprefused; /* pairs of start positions recorded */
} MergeCtx;

typedef struct {
	MBlock *v; int n, cap;
} MList;

static void ml_push(MList *l, MBlock b)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 8;
		l->v = xrealloc(l->v, sizeof(MBlock) * (size_t)l->cap);
	}
	l->v[l->n++] = b;
}

static void ml_append(MList *dst, MList *src)   /* moves src's items to dst's end */
{
	for (int i = 0; i < src->n; i++)
		ml_push(dst, src->v[i]);
	src->n = 0;
}

static void ml_set(MList *dst, const MList *src)
{
	dst->n = 0;
	for (int i = 0; i < src->n; i++)
		ml_push(dst, src->v[i]);
}

static bool mb_holds(const MBlock *x, int i)
{
	for (int k = 0; k < x->norig; k++)
		if (x->orig[k] == i)
			return true;
	return false;
}

/* Record a refused pair once per merge group (burn's passes may retry a pair). */
static void mc_refused(MergeCtx *m, const Block *a, const Block *b, int reason)
{
	int lo = a->start_pos < b->start_pos ? a->start_pos : b->start_pos;
	int hi = a->start_pos < b->start_pos ? b->start_pos : a->start_pos;
	for (int i = 0; i < m->nrefused; i++)
		if (m->refused[2 * i] == lo && m->refused[2 * i + 1] == hi)
			return;
	if (m->nrefused == m->caprefused) {
		m->caprefused = m->caprefused ? m->caprefused * 2 : 8;
		m->refused = xrealloc(m->refused, sizeof(int) * 2 * (size_t)m->caprefused);
	}
	m->refused[2 * m->nrefused] = lo;
	m->refused[2 * m->nrefused + 1] = hi;
	m->nrefused++;
	record_refused(m->c, a, b, reason);
}

static bool merge_two(MergeCtx *m, const MBlock *x, const MBlock *y, MBlock *res)
{
	int n = 0;
	for (int i = 0; i < m->nall; i++)
		if (!mb_holds(x, i) && !mb_holds(y, i))
			m->others[n++] = i;
	if (!contract_ok(x->b, y->b, m->all, m->dep, m->nall, m->others, n)) {
		mc_refused(m, x->b, y->b, MERGE_CYCLE);
		return false;
	}
	Block *r = NULL;
	bool ordered = false;
	if (block_can_append(x->b, y->b)) {
		ordered = true;
		r = block_merged(x->b, y->b);
	}
	if (!r && block_can_append(y->b, x->b)) {
		ordered = true;
		r = block_merged(y->b, x->b);
	}
	if (!r) {
		mc_refused(m, x->b, y->b, ordered ? MERGE_NO_GAIN : MERGE_ORDER);
		return false;
	}
	if (m->nmade == m->capmade) {
		m->capmade = m->capmade ? m->capmade * 2 : 8;
		m->made = xrealloc(m->made, sizeof(Block *) * (size_t)m->capmade);
	}
	m->made[m->nmade++] = r;
	int *orig = xmalloc(sizeof(int) * (size_t)(x->norig + y->norig));
	memcpy(orig, x->orig, sizeof(int) * (size_t)x->norig);
	memcpy(orig + x->norig, y->orig, sizeof(int) * (size_t)y->norig);
	if (m->nints == m->capints) {
		m->capints = m->capints ? m->capints * 2 : 8;
		m->ints = xrealloc(m->ints, sizeof(int *) * (size_t)m->capints);
	}
	m->ints[m->nints++] = orig;
	*res = (MBlock){r, orig, x->norig + y->norig};
	return true;
}

typedef enum { MR_FAIL, MR_FULL, MR_PARTIAL } MergeRes;

/* burn's merge_accumulator: fold l[1..] into l[0]; *full when every one merged,
 * else merged = [base] and failed = the refused ones. Fail: nothing merged. */
static MergeRes merge_accumulate(MergeCtx *m, const MList *l, MBlock *full, MList *merged,
				 MList *failed)
{
	MBlock base = l->v[0];
	bool any = false;
	MList fl = {0};
	for (int i = 1; i < l->n; i++) {
		MBlock r;
		if (merge_two(m, &base, &l->v[i], &r)) {
			base = r;
			any = true;
		} else {
			ml_push(&fl, l->v[i]);
		}
	}
	MergeRes res = MR_FAIL;
	if (any && fl.n == 0) {
		*full = base;
		res = MR_FULL;
	} else if (any) {
		merged->n = 0;
		ml_push(merged, base);
		ml_append(failed, &fl);
		res = MR_PARTIAL;
	}
	free(fl.v);
	return res;
}

static MergeRes merge_rec(MergeCtx *m, const MBlock *bl, int n, MBlock *full, MList *merged,
			  MList *failed);

/* One accumulator pass of merge_step2 over list l: l becomes [full], or the
 * merged ones (the refused go to failed), or stays as it was. */
static void step2_pass(MergeCtx *m, MList *l, MList *failed)
{
	MBlock full;
	MList merged = {0};
	MergeRes r = merge_accumulate(m, l, &full, &merged, failed);
	if (r == MR_FULL) {
		l->n = 0;
		ml_push(l, full);
	} else if (r == MR_PARTIAL) {
		ml_set(l, &merged);
	}
	free(merged.v);
}

static MergeRes merge_rec(MergeCtx *m, const MBlock *bl, int n, MBlock *full, MList *merged,
			  MList *failed)
{
	if (n == 0)
		return MR_FAIL;
	if (n == 1) {
		*full = bl[0];
		return MR_FULL;
	}
	if (n == 2)
		return merge_two(m, &bl[0], &bl[1], full) ? MR_FULL : MR_FAIL;
	/* step 1: halves */
	MList sf = {0}, sp = {0}, sx = {0};
	int step = n / 2;
	for (int start = 0; start < n; start += step) {
		int k = start + step < n ? step : n - start;
		MBlock f;
		MList mg = {0}, fl = {0};
		MergeRes r = merge_rec(m, bl + start, k, &f, &mg, &fl);
		if (r == MR_FULL)
			ml_push(&sf, f);
		else if (r == MR_PARTIAL) {
			ml_append(&sp, &mg);
			ml_append(&sx, &fl);
		} else
			for (int i = 0; i < k; i++)
				ml_push(&sx, bl[start + i]);
		free(mg.v);
		free(fl.v);
	}
	MergeRes res;
	if (sf.n == 1 && sx.n == 0 && sp.n == 0) {
		*full = sf.v[0];
		res = MR_FULL;
	} else if (sp.n == 1 && sx.n == 0 && sf.n == 0) {
		*full = sp.v[0];
		res = MR_FULL;
	} else {
		/* step 2: accumulator passes */
		if (sp.n > 1)
			step2_pass(m, &sp, &sx);
		if (sx.n > 0) {
			ml_append(&sp, &sx);
			step2_pass(m, &sp, &sx);
		}
		if (sf.n > 1)
			step2_pass(m, &sf, &sx);
		if (sf.n > 0) {
			ml_append(&sf, &sx);
			step2_pass(m, &sf, &sx);
		}
		if (sf.n > 0 || sp.n > 0) {
			ml_append(&sf, &sp);
			step2_pass(m, &sf, &sx);
		}
		if (sf.n == 0) {
			res = MR_FAIL;
		} else if (sx.n == 0 && sf.n == 1) {
			*full = sf.v[0];
			res = MR_FULL;
		} else {
			ml_set(merged, &sf);
			failed->n = 0;
			ml_append(failed, &sx);
			res = MR_PARTIAL;
		}
	}
	free(sf.v);
	free(sp.v);
	free(sx.v);
	return res;
}

/* Merge the blocks of cand (n of them, each one of `all`) as far as burn's rules
 * allow. Returns the resulting blocks in *out (some may be the originals); the
 * caller frees originals not returned. */
static int merge_group(SearchCtx *c, Block **all, int nall, Block **cand, int n, Block **out)
{
	MergeCtx m = {0};
	m.c = c;
	m.all = all;
	m.nall = nall;
	m.dep = xcalloc((size_t)(nall ? nall * nall : 1), 1);
	m.others = xmalloc(sizeof(int) * (size_t)(nall ? nall : 1));
	Block **sorted = xmalloc(sizeof(Block *) * (size_t)n);
	memcpy(sorted, cand, sizeof(Block *) * (size_t)n);
	sort_blocks(sorted, n);
	int *idx = xmalloc(sizeof(int) * (size_t)n);
	MBlock *bl = xmalloc(sizeof(MBlock) * (size_t)n);
	for (int k = 0; k < n; k++) {
		for (int i = 0; i < nall; i++)
			if (all[i] == sorted[k])
				idx[k] = i;
		bl[k] = (MBlock){sorted[k], &idx[k], 1};
	}
	MBlock full;
	MList merged = {0}, failed = {0};
	MergeRes r = merge_rec(&m, bl, n, &full, &merged, &failed);
	int nout = 0;
	if (r == MR_FULL)
		out[nout++] = full.b;
	else if (r == MR_PARTIAL) {
		for (int i = 0; i < merged.n; i++)
			out[nout++] = merged.v[i].b;
		for (int i = 0; i < failed.n; i++)
			out[nout++] = failed.v[i].b;
	} else
		for (int i = 0; i < n; i++)
			out[nout++] = sorted[i];
	for (int i = 0; i < m.nmade; i++)
		if (!in_list(out, nout, m.made[i]))
			block_free(m.made[i]);
	for (int i = 0; i < m.nints; i++)
		free(m.ints[i]);
	free(m.made);
	free(m.ints);
	free(m.refused);
	free(merged.v);
	free(failed.v);
	free(bl);
	free(idx);
	free(sorted);
	free(m.others);
	free(m.dep);
	return nout;
}

typedef enum { STEP_NO_NEED, STEP_FULL, STEP_PARTIAL, STEP_FAIL } MergeStep;

static MergeStep merge_blocks(StreamOpt *o, const RelOp *op, bool all)
{
	int n = o->nblocks;
	Block **cand = xmalloc(sizeof(Block *) * (size_t)(n ? n : 1));
	int ncand = 0;
	for (int i = 0; i < n; i++)
		if (all || block_contains_any(o->blocks[i], op))
			cand[ncand++] = o->blocks[i];
	if (ncand <= 1) {
		free(cand);
		return STEP_NO_NEED;
	}
	Block **out = xmalloc(sizeof(Block *) * (size_t)ncand);
	int nout = merge_group(o->c, o->blocks, n, cand, ncand, out);
	MergeStep step = nout == 1 ? STEP_FULL : nout < ncand ? STEP_PARTIAL : STEP_FAIL;
	if (step != STEP_FAIL) {
		int k = 0;
		for (int i = 0; i < n; i++)
			if (!in_list(cand, ncand, o->blocks[i]))
				o->blocks[k++] = o->blocks[i];
			else if (!in_list(out, nout, o->blocks[i]))
				block_free(o->blocks[i]);
		o->nblocks = k;
		for (int i = 0; i < nout; i++)
			push_block(o, out[i]);
		sort_blocks(o->blocks, o->nblocks);
	}
	if (o->c->rec->on) {
		Event *e = rec_add(o->c->rec, EV_MERGE, o->c->stream);
		e->a = ncand;
		e->b = nout;
		e->c = step != STEP_FAIL;
		e->d = all;
		e->op = o->c->global[o->length];
	}
	free(cand);
	free(out);
	return step;
}

static void record_pos(StreamOpt *o, EventKind k, int a, int b, int cc)
{
	if (!o->c->rec->on)
		return;
	Event *e = rec_add(o->c->rec, k, o->c->stream);
	e->a = a;
	e->b = b;
	e->c = cc;
	e->op = o->c->global[o->length];
}

static void on_new_block(StreamOpt *o, const RelOp *op)
{
	Block *b = block_new(o->c);
	block_register(b, op, o->length, true, o->c, true);
	push_block(o, b);
	record_pos(o, EV_REGISTER_NEW, o->length, o->nblocks, 0);
}

static int register_inner(StreamOpt *o, const RelOp *op, bool force)
{
	int added = 0;
	for (int i = 0; i < o->nblocks; i++)
		added += block_register(o->blocks[i], op, o->length, force, o->c, true);
	return added;
}

static void stop(StreamOpt *o, int why)
{
	record_pos(o, EV_STOPPED, o->length, o->c->max_blocks, why);
	o->stopped = true;
}

/* Outside --burn-exact, an elementwise op whose blocks could not merge joins the
 * latest of them that starts at a matmul or conv with its Matmul fuser open, makes
 * one of the op's inputs, and on which none of the others depends, directly or
 * not: the op reads only what those
 * blocks make, so the blocks stay acyclic, and it may become that launch's
 * epilogue.
 * A residual add after the last conv of a downsampling block reads that conv's
 * result and the shortcut conv's: burn refuses to merge the two conv blocks (one
 * Matmul fuser would hide the other) and opens a block of its own for the add,
 * so neither conv's epilogue takes it (docs/burn-fidelity.md). False where no
 * such block is there (then burn's dependent block). */
/* Whether block b starts at a matmul or conv whose Matmul fuser still takes an
 * epilogue. */
static bool anchor_open(const Block *b)
{
	if (b->nops == 0 || (b->ops[0].kind != OP_MATMUL && b->ops[0].kind != OP_CONV2D))
		return false;
	for (int i = 0; i < b->nfusers; i++)
		if (b->fusers[i]->vt->kind == FK_MATMUL && b->fusers[i]->status == FS_OPEN)
			return true;
	return false;
}

/* Whether block b makes one of op's inputs. */
static bool makes_input(const Block *b, const RelOp *op)
{
	for (int i = 0; i < op->nin; i++)
		if (iset_has(&b->produced, op->t[i].id))
			return true;
	return false;
}

static bool join_latest(StreamOpt *o, const RelOp *op)
{
	int n = o->nblocks;
	if (o->c->burn_exact || n < 2)
		return false;
	/* reach[i * n + j]: block i depends on block j, transitively */
	bool *reach = xcalloc((size_t)n * (size_t)n, sizeof(bool));
	bool *cand = xcalloc((size_t)n, sizeof(bool));
	for (int i = 0; i < n; i++) {
		cand[i] = block_contains_any(o->blocks[i], op);
		for (int j = 0; j < n; j++)
			reach[i * n + j] = i != j && block_depends_on(o->blocks[i], o->blocks[j]);
	}
	for (int k = 0; k < n; k++)
		for (int i = 0; i < n; i++)
			for (int j = 0; j < n && reach[i * n + k]; j++)
				reach[i * n + j] |= reach[k * n + j];
	int pick = -1;
	for (int d = n - 1; d >= 0 && pick < 0 && ir_op_is_elementwise(op->kind); d--) {
		if (!cand[d] || !anchor_open(o->blocks[d]) || !makes_input(o->blocks[d], op))
			continue;
		bool free_of = true;
		for (int c = 0; c < n && free_of; c++)
			free_of = c == d || !cand[c] || !reach[c * n + d];
		if (free_of)
			pick = d;
	}
	free(reach);
	free(cand);
	if (pick < 0)
		return false;
	block_register(o->blocks[pick], op, o->length, true, o->c, true);
	record_pos(o, EV_REGISTER_ACCEPTED, o->length, 1, o->nblocks);
	return true;
}

static void on_dependent_op(StreamOpt *o, const RelOp *op)
{
	if (join_latest(o, op))
		return;
	if (o->nblocks >= o->c->max_blocks) {
		merge_blocks(o, op, true);
		if (o->nblocks >= o->c->max_blocks) {
			stop(o, 1);
			return;
		}
	}
	Block *b = block_new(o->c);
	block_register(b, op, o->length, true, o->c, true);
	push_block(o, b);
	int *order = xmalloc(sizeof(int) * (size_t)o->nblocks);
	bool acyclic = blocks_topo_order(o->blocks, o->nblocks, order);
	free(order);
	if (!acyclic) {
		block_free(o->blocks[--o->nblocks]);
		stop(o, 2);
		return;
	}
	record_pos(o, EV_REGISTER_DEPENDENT, o->length, o->nblocks, 0);
}

static bool register_max_block(StreamOpt *o, const RelOp *op)
{
	int max = o->c->max_blocks;
	if (max == 1) {
		int added = register_inner(o, op, true);
		record_pos(o, EV_REGISTER_ACCEPTED, o->length, added, o->nblocks);
		return true;
	}
	int added = register_inner(o, op, false);
	if (added > 0) {
		record_pos(o, EV_REGISTER_ACCEPTED, o->length, added, o->nblocks);
		return true;
	}
	if (o->nblocks < max) {
		on_new_block(o, op);
		return true;
	}
	merge_blocks(o, op, true);
	if (o->nblocks >= max)
		return false;
	added = register_inner(o, op, false);
	if (added == 0)
		on_new_block(o, op);
	else
		record_pos(o, EV_REGISTER_ACCEPTED, o->length, added, o->nblocks);
	return true;
}

void sopt_register(StreamOpt *o, const RelOp *op)
{
	o->calls++;
	if (o->stopped) {
		if (o->c->rec->on) {
			Event *e = rec_add(o->c->rec, EV_REGISTER_DROPPED, o->c->stream);
			e->b = o->length;
			e->op = o->c->global[o->calls - 1];
		}
		return;
	}
	if (o->nblocks == 0) {
		on_new_block(o, op);
		o->length++;
		return;
	}
	MergeStep step = merge_blocks(o, op, false);
	if (step == STEP_FAIL || step == STEP_PARTIAL) {
		on_dependent_op(o, op);
		if (!o->stopped)
			o->length++;
		return;
	}
	if (register_max_block(o, op))
		o->length++;
	else
		stop(o, 0);
}

bool sopt_still_optimizing(const StreamOpt *o)
{
	if (o->stopped)
		return false;
	if (o->nblocks == 0)
		return true;
	for (int i = 0; i < o->nblocks; i++)
		if (block_still_optimizing(o->blocks[i]))
			return true;
	return false;
}

/* ---- settling ------------------------------------------------------------------ */

static Strategy *strat_new(Arena *a, StrategyKind k, int n)
{
	Strategy *s = ARENA_NEW(a, Strategy, 1);
	s->kind = k;
	s->fuser = -1;
	s->n = n;
	if (k == STRAT_COMPOSED)
		s->sub = ARENA_NEW(a, Strategy *, n ? n : 1);
	else
		s->ordering = ARENA_NEW(a, int, n ? n : 1);
	return s;
}

/* True when some fresh fuser would take op as its first op. */
static bool fresh_fuser_would_start(const SearchCtx *c, const RelOp *op)
{
	bool start = false;
	for (int i = 0; i < fusers_active(c->burn_exact) && !start; i++) {
		Fuser *f = fuser_new(i, c->max_bindings);
		f->burn_exact = c->burn_exact;
		fuser_fuse(f, op);
		start = f->status == FS_OPEN;
		fuser_free(f);
	}
	return start;
}

static Strategy *block_optimize(SearchCtx *c, Block *b, Arena *a)
{
	int best = -1;
	uint64_t best_score = 0;
	for (int i = 0; i < b->nfusers; i++) {
		FuserProps p = b->fusers[i]->vt->properties(b->fusers[i]);
		if (p.ready && p.score > best_score) {
			best = i;
			best_score = p.score;
		}
	}
	Strategy *s;
	if (best >= 0) {
		int n = b->fusers[best]->vt->len(b->fusers[best]);
		if (n > b->nops)
			n = b->nops;
		s = strat_new(a, STRAT_FUSED, n);
		s->fuser = best;
		s->score = best_score;
		memcpy(s->ordering, b->pos, sizeof(int) * (size_t)n);
	} else {
		int head = -1;
		for (int i = 0; i < b->nfusers; i++)
			if (b->fusers[i]->status == FS_CLOSED && b->fusers[i]->closed_at > head)
				head = b->fusers[i]->closed_at;
		if (head < 0 || head >= b->nops)
			head = b->nops - 1;
		/* the op every fuser closed on is settled too, except a conv that starts
		 * a fuser of its own (after a view a Matmul fuser took, such as the
		 * image's permute of --layout nhwc): the conv and its epilogue are
		 * searched again */
		int n = head + 1;
		if (head > 0 && !c->burn_exact && b->ops[head].kind == OP_CONV2D &&
		    fresh_fuser_would_start(c, &b->ops[head]))
			n = head;
		while (n < b->nops && !fresh_fuser_would_start(c, &b->ops[n]))
			n++;
		/* burn (search/block.rs, optimize): no winner runs the whole block
		 * unfused; fusec settles only its unfusable head (row 12, deliberate) */
		if (c->burn_exact)
			n = b->nops;
		s = strat_new(a, STRAT_OPS, n);
		memcpy(s->ordering, b->pos, sizeof(int) * (size_t)n);
	}
	if (c->rec->on) {
		int id = c->block_serial++;
		Event *e = rec_add(c->rec, EV_BLOCK, c->stream);
		e->a = id;
		e->b = b->nops;
		e->c = best;
		e->d = s->n;
		e->score = best_score;
		e->op = c->global[b->pos[0]];
		for (int i = 0; i < b->nops; i++) {
			e = rec_add(c->rec, EV_BLOCK_OP, c->stream);
			e->a = id;
			e->b = b->pos[i];
			e->c = i < s->n;
			e->op = c->global[b->pos[i]];
		}
		for (int i = 0; i < b->nfusers; i++) {
			const Fuser *f = b->fusers[i];
			FuserProps p = f->vt->properties(f);
			e = rec_add(c->rec, EV_BLOCK_FUSER, c->stream);
			e->a = id;
			e->b = i;
			e->c = (p.ready ? BF_READY : 0) | (f->status == FS_CLOSED ? BF_CLOSED : 0);
			e->d = f->vt->len(f);
			e->score = p.score;
			e->reason = (uint8_t)f->reason;
			e->op = f->status == FS_CLOSED && f->closed_at < b->nops ?
				c->global[b->pos[f->closed_at]] : -1;
		}
	}
	return s;
}

typedef struct {
	IntSet produced, read, freed;
	int minpos;
} Chunk;

static void chunk_init(Chunk *ch, const int *pos, int n, const RelOp *ops)
{
	memset(ch, 0, sizeof *ch);
	ch->minpos = 1 << 30;
	for (int k = 0; k < n; k++) {
		const RelOp *op = &ops[pos[k]];
		if (pos[k] < ch->minpos)
			ch->minpos = pos[k];
		for (int i = 0; i < op->nout; i++)
			iset_add(&ch->produced, op->t[op->nin + i].id);
	}
	for (int k = 0; k < n; k++) {
		const RelOp *op = &ops[pos[k]];
		for (int i = 0; i < op->nin; i++) {
			if (op->t[i].status == ST_READ_WRITE)
				iset_add(&ch->freed, op->t[i].id);
			if (!iset_has(&ch->produced, op->t[i].id))
				iset_add(&ch->read, op->t[i].id);
		}
	}
}

static void chunk_free(Chunk *ch)
{
	iset_free(&ch->produced);
	iset_free(&ch->read);
	iset_free(&ch->freed);
}

static bool chunk_depends(const Chunk *x, const Chunk *y)
{
	return iset_intersects(&x->read, &y->produced) || iset_intersects(&x->freed, &y->read);
}

static bool chunks_topo(Chunk *ch, int n, int *order)
{
	int *pending = xcalloc((size_t)n, sizeof(int));
	bool *done = xcalloc((size_t)n, sizeof(bool));
	bool *dep = xcalloc((size_t)n * (size_t)n, sizeof(bool));
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			if (i != j && chunk_depends(&ch[i], &ch[j])) {
				dep[(size_t)i * (size_t)n + (size_t)j] = true;
				pending[i]++;
			}
	int k = 0;
	for (; k < n; k++) {
		int best = -1;
		for (int i = 0; i < n; i++)
			if (!done[i] && !pending[i] && (best < 0 || ch[i].minpos < ch[best].minpos))
				best = i;
		if (best < 0)
			break;
		done[best] = true;
		order[k] = best;
		for (int i = 0; i < n; i++)
			if (dep[(size_t)i * (size_t)n + (size_t)best])
				pending[i]--;
	}
	free(pending);
	free(done);
	free(dep);
	return k == n;
}

static bool ordering_valid(const int *ord, int n, const RelOp *ops)
{
	const RelOp **seq = xmalloc(sizeof(RelOp *) * (size_t)(n ? n : 1));
	for (int i = 0; i < n; i++)
		seq[i] = &ops[ord[i]];
	bool ok = ops_order_valid(seq, n);
	free(seq);
	return ok;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static BlockOpt unfused_stream_order(SearchCtx *c, const int *pos, int n, Arena *a)
{
	if (c->rec->on)
		rec_add(c->rec, EV_REPAIR, c->stream)->a = n;
	Strategy *s = strat_new(a, STRAT_OPS, n);
	memcpy(s->ordering, pos, sizeof(int) * (size_t)n);
	qsort(s->ordering, (size_t)n, sizeof(int), cmp_int);
	return (BlockOpt){s, n, s->ordering};
}

/* Order the chunks `subs` (ordering `ord` of n positions) by dependency. */
static BlockOpt repair_order(SearchCtx *c, Strategy **subs, int nsub, const int *ord, int n,
			     const RelOp *ops, Arena *a)
{
	if (nsub == 1) {
		if (ordering_valid(ord, n, ops))
			return (BlockOpt){subs[0], n, subs[0]->ordering};
		return unfused_stream_order(c, ord, n, a);
	}
	for (int pass = 0; pass < 2; pass++) {
		Chunk *ch = xmalloc(sizeof(Chunk) * (size_t)nsub);
		for (int i = 0; i < nsub; i++)
			chunk_init(&ch[i], subs[i]->ordering, subs[i]->n, ops);
		int *order = xmalloc(sizeof(int) * (size_t)nsub);
		bool ok = chunks_topo(ch, nsub, order);
		for (int i = 0; i < nsub; i++)
			chunk_free(&ch[i]);
		free(ch);
		if (ok) {
			Strategy *s = strat_new(a, STRAT_COMPOSED, nsub);
			int *o = ARENA_NEW(a, int, n);
			int k = 0;
			for (int i = 0; i < nsub; i++) {
				s->sub[i] = subs[order[i]];
				memcpy(o + k, s->sub[i]->ordering, sizeof(int) * (size_t)s->sub[i]->n);
				k += s->sub[i]->n;
			}
			free(order);
			if (!ordering_valid(o, n, ops))
				return unfused_stream_order(c, ord, n, a);
			return (BlockOpt){s, n, o};
		}
		free(order);
		if (pass == 1)
			break;
		/* split the unfused chunks into single ops and try again */
		int nsplit = 0;
		for (int i = 0; i < nsub; i++)
			nsplit += subs[i]->kind == STRAT_OPS ? subs[i]->n : 1;
		Strategy **split = ARENA_NEW(a, Strategy *, nsplit);
		int k = 0;
		for (int i = 0; i < nsub; i++) {
			if (subs[i]->kind != STRAT_OPS) {
				split[k++] = subs[i];
				continue;
			}
			for (int j = 0; j < subs[i]->n; j++) {
				Strategy *one = strat_new(a, STRAT_OPS, 1);
				one->ordering[0] = subs[i]->ordering[j];
				split[k++] = one;
			}
		}
		subs = split;
		nsub = nsplit;
	}
	return unfused_stream_order(c, ord, n, a);
}

typedef struct {
	Strategy **subs; int nsub, capsub;
	int *ord; int n, cap;
} Gather;

static void gather_add(Gather *g, Strategy *s)
{
	if (s->kind == STRAT_COMPOSED) {
		for (int i = 0; i < s->n; i++)
			gather_add(g, s->sub[i]);
		return;
	}
	if (g->nsub == g->capsub) {
		g->capsub = g->capsub ? g->capsub * 2 : 8;
		g->subs = xrealloc(g->subs, sizeof(Strategy *) * (size_t)g->capsub);
	}
	g->subs[g->nsub++] = s;
	if (g->n + s->n > g->cap) {
		g->cap = (g->n + s->n) * 2;
		g->ord = xrealloc(g->ord, sizeof(int) * (size_t)g->cap);
	}
	memcpy(g->ord + g->n, s->ordering, sizeof(int) * (size_t)s->n);
	g->n += s->n;
}

static void map_positions(Strategy *s, const int *map)
{
	if (s->kind == STRAT_COMPOSED) {
		for (int i = 0; i < s->n; i++)
			map_positions(s->sub[i], map);
		return;
	}
	for (int i = 0; i < s->n; i++)
		s->ordering[i] = map[s->ordering[i]];
}

BlockOpt sopt_optimize(StreamOpt *o, const RelOp *ops, int nops, Arena *a)
{
	SearchCtx *c = o->c;
	int num_ops = 0;
	for (int i = 0; i < o->nblocks; i++)
		if (o->blocks[i]->end_pos > num_ops)
			num_ops = o->blocks[i]->end_pos;
	if (o->nblocks > 1) {
		Block **out = xmalloc(sizeof(Block *) * (size_t)o->nblocks);
		Block **all = xmalloc(sizeof(Block *) * (size_t)o->nblocks);
		memcpy(all, o->blocks, sizeof(Block *) * (size_t)o->nblocks);
		int nout = merge_group(c, all, o->nblocks, all, o->nblocks, out);
		if (c->rec->on && nout < o->nblocks) {
			Event *e = rec_add(c->rec, EV_MERGE, c->stream);
			e->a = o->nblocks;
			e->b = nout;
			e->c = 1;
			e->d = 2;
			e->op = -1;
		}
		for (int i = 0; i < o->nblocks; i++)
			if (!in_list(out, nout, all[i]))
				block_free(all[i]);
		memcpy(o->blocks, out, sizeof(Block *) * (size_t)nout);
		o->nblocks = nout;
		sort_blocks(o->blocks, o->nblocks);
		free(out);
		free(all);
	}
	int *order = xmalloc(sizeof(int) * (size_t)(o->nblocks ? o->nblocks : 1));
	if (!blocks_topo_order(o->blocks, o->nblocks, order))
		for (int i = 0; i < o->nblocks; i++)
			order[i] = i;
	Gather g = {0};
	bool *resolved = xcalloc((size_t)(num_ops ? num_ops : 1), sizeof(bool));
	for (int i = 0; i < o->nblocks; i++) {
		Strategy *s = block_optimize(c, o->blocks[order[i]], a);
		for (int k = 0; k < s->n; k++)
			resolved[s->ordering[k]] = true;
		gather_add(&g, s);
	}
	free(order);
	if (c->rec->on)
		rec_add(c->rec, EV_SELECTED, c->stream)->a = g.nsub;
	int end = 0;
	for (int i = 0; i < num_ops; i++)
		if (resolved[i])
			end = i + 1;
	int *holes = xmalloc(sizeof(int) * (size_t)(end ? end : 1));
	int nholes = 0;
	for (int i = 0; i < end; i++)
		if (!resolved[i])
			holes[nholes++] = i;
	free(resolved);
	if (nholes && c->rec->on)
		rec_add(c->rec, EV_HOLES, c->stream)->a = nholes;
	int *hole_global = xmalloc(sizeof(int) * (size_t)(nholes ? nholes : 1));
	RelOp *hole_ops = xmalloc(sizeof(RelOp) * (size_t)(nholes ? nholes : 1));
	int start = 0;
	while (start < nholes) {
		int k = nholes - start;
		for (int i = 0; i < k; i++) {
			hole_global[i] = c->global[holes[start + i]];
			hole_ops[i] = ops[holes[start + i]];
		}
		SearchCtx sub_ctx = *c;
		sub_ctx.global = hole_global;
		StreamOpt sub;
		sopt_init(&sub, &sub_ctx);
		for (int i = 0; i < k; i++)
			sopt_register(&sub, &hole_ops[i]);
		BlockOpt r = sopt_optimize(&sub, hole_ops, k, a);
		c->block_serial = sub_ctx.block_serial;
		sopt_free(&sub);
		map_positions(r.strategy, holes + start);
		gather_add(&g, r.strategy);
		start += r.n;
	}
	free(holes);
	free(hole_global);
	free(hole_ops);
	BlockOpt res = repair_order(c, g.subs, g.nsub, g.ord, g.n, ops, a);
	free(g.subs);
	free(g.ord);
	(void)nops;
	return res;
}

BlockOpt sopt_include_trailing(BlockOpt bo, int nops, Arena *a)
{
	if (bo.n >= nops)
		return bo;
	Strategy *tail = strat_new(a, STRAT_OPS, nops - bo.n);
	for (int i = 0; i < nops - bo.n; i++)
		tail->ordering[i] = bo.n + i;
	Strategy *old = bo.strategy;
	int nsub = old->kind == STRAT_COMPOSED ? old->n + 1 : 2;
	Strategy *s = strat_new(a, STRAT_COMPOSED, nsub);
	if (old->kind == STRAT_COMPOSED)
		memcpy(s->sub, old->sub, sizeof(Strategy *) * (size_t)old->n);
	else
		s->sub[0] = old;
	s->sub[nsub - 1] = tail;
	int *ord = ARENA_NEW(a, int, nops);
	memcpy(ord, bo.ordering, sizeof(int) * (size_t)bo.n);
	memcpy(ord + bo.n, tail->ordering, sizeof(int) * (size_t)(nops - bo.n));
	return (BlockOpt){s, nops, ord};
}
