/* block.c: blocks of the stream optimizer (SPEC §3 "Explorer / stream optimizer").
 *
 * A block is a set of ops that share tensors, not necessarily contiguous in the
 * stream, with fresh clones of every fuser; every op it takes is offered to each of
 * them. It tracks which tensors its ops touch, produce, read from outside and free
 * (read ReadWrite), which is all the dependency analysis between blocks needs:
 * X depends on Y when X reads what Y produces or frees what Y reads.
 *
 * A merge registers the other block's ops into this one (in the other's order)
 * and is accepted when the result still has an open fuser, or when neither side had
 * a ready fuser and the result has one. Only the fusers decide that, so a merge is
 * tried on clones of the fusers alone and the block is copied only when accepted.
 * Appending must keep a valid order (produce before read, read before free); cycle
 * checks between blocks are explorer.c's. */
#include <stdlib.h>
#include <string.h>

#include "search.h"

Block *block_new(const SearchCtx *c)
{
	Block *b = xcalloc(1, sizeof *b);
	b->nfusers = fusers_active(c->burn_exact);
	b->fusers = xmalloc(sizeof(Fuser *) * (size_t)b->nfusers);
	for (int i = 0; i < b->nfusers; i++) {
		b->fusers[i] = fuser_new(i, c->max_bindings);
		b->fusers[i]->burn_exact = c->burn_exact;
	}
	b->start_pos = 1 << 30;
	b->end_pos = 0;
	return b;
}

/* A copy of s whose fusers are `fusers` (taken over), or clones of s's when NULL. */
static Block *copy_block(const Block *s, Fuser **fusers)
{
	Block *b = xcalloc(1, sizeof *b);
	b->nfusers = s->nfusers;
	b->fusers = fusers;
	if (!fusers) {
		b->fusers = xmalloc(sizeof(Fuser *) * (size_t)b->nfusers);
		for (int i = 0; i < b->nfusers; i++)
			b->fusers[i] = fuser_clone(s->fusers[i]);
	}
	b->cap = s->nops ? s->nops : 4;
	b->nops = s->nops;
	b->ops = xmalloc(sizeof(RelOp) * (size_t)b->cap);
	b->pos = xmalloc(sizeof(int) * (size_t)b->cap);
	memcpy(b->ops, s->ops, sizeof(RelOp) * (size_t)s->nops);
	memcpy(b->pos, s->pos, sizeof(int) * (size_t)s->nops);
	iset_copy(&b->ids, &s->ids);
	iset_copy(&b->produced, &s->produced);
	iset_copy(&b->read, &s->read);
	iset_copy(&b->freed, &s->freed);
	b->start_pos = s->start_pos;
	b->end_pos = s->end_pos;
	return b;
}

Block *block_clone(const Block *s)
{
	return copy_block(s, NULL);
}

void block_free(Block *b)
{
	if (!b)
		return;
	for (int i = 0; i < b->nfusers; i++)
		fuser_free(b->fusers[i]);
	free(b->fusers);
	free(b->ops);
	free(b->pos);
	iset_free(&b->ids);
	iset_free(&b->produced);
	iset_free(&b->read);
	iset_free(&b->freed);
	free(b);
}

/* Append op to b's ops and tensor sets, without offering it to the fusers. */
static void append_op(Block *b, const RelOp *op, int pos)
{
	if (b->nops == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 8;
		b->ops = xrealloc(b->ops, sizeof(RelOp) * (size_t)b->cap);
		b->pos = xrealloc(b->pos, sizeof(int) * (size_t)b->cap);
	}
	b->ops[b->nops] = *op;
	b->pos[b->nops] = pos;
	b->nops++;
	if (pos < b->start_pos)
		b->start_pos = pos;
	if (pos + 1 > b->end_pos)
		b->end_pos = pos + 1;
	for (int i = 0; i < op->nin + op->nout; i++)
		iset_add(&b->ids, op->t[i].id);
	for (int i = 0; i < op->nin; i++) {
		const RelTensor *t = &op->t[i];
		if (!iset_has(&b->produced, t->id))
			iset_add(&b->read, t->id);
		if (t->status == ST_READ_WRITE)
			iset_add(&b->freed, t->id);
	}
	for (int i = 0; i < op->nout; i++) {
		int id = op->t[op->nin + i].id;
		iset_add(&b->produced, id);
		iset_del(&b->read, id);
	}
}

static void register_op(Block *b, const RelOp *op, int pos, SearchCtx *c, bool log)
{
	append_op(b, op, pos);
	for (int i = 0; i < b->nfusers; i++) {
		Fuser *f = b->fusers[i];
		bool was_open = f->status == FS_OPEN;
		fuser_fuse(f, op);
		if (log && c && c->rec->on && was_open && f->status == FS_CLOSED) {
			Event *e = rec_add(c->rec, EV_FUSER_CLOSED, c->stream);
			e->a = i;
			e->b = f->vt->len(f);
			e->c = pos;
			e->reason = (uint8_t)f->reason;
			e->op = c->global[pos];
		}
	}
}

bool block_contains_any(const Block *b, const RelOp *op)
{
	for (int i = 0; i < op->nin + op->nout; i++)
		if (iset_has(&b->ids, op->t[i].id))
			return true;
	return false;
}

bool block_register(Block *b, const RelOp *op, int pos, bool force, SearchCtx *c, bool log)
{
	if (b->nops == 0 || force || block_contains_any(b, op)) {
		register_op(b, op, pos, c, log);
		return true;
	}
	return false;
}

bool block_still_optimizing(const Block *b)
{
	for (int i = 0; i < b->nfusers; i++)
		if (b->fusers[i]->status == FS_OPEN)
			return true;
	return false;
}

bool block_has_ready(const Block *b)
{
	for (int i = 0; i < b->nfusers; i++)
		if (b->fusers[i]->vt->properties(b->fusers[i]).ready)
			return true;
	return false;
}

bool ops_order_valid(const RelOp *const *ops, int n)
{
	IntSet produced = {0}, alive = {0}, dead = {0};
	bool ok = true;
	for (int k = 0; k < n; k++)
		for (int i = 0; i < ops[k]->nout; i++)
			iset_add(&produced, ops[k]->t[ops[k]->nin + i].id);
	for (int k = 0; k < n && ok; k++) {
		const RelOp *op = ops[k];
		for (int i = 0; i < op->nin && ok; i++) {
			int id = op->t[i].id;
			if (iset_has(&dead, id))
				ok = false;
			else if (!iset_has(&alive, id)) {
				if (iset_has(&produced, id))
					ok = false;
				else
					iset_add(&alive, id);
			}
		}
		for (int i = 0; i < op->nin; i++)
			if (op->t[i].status == ST_READ_WRITE) {
				iset_del(&alive, op->t[i].id);
				iset_add(&dead, op->t[i].id);
			}
		for (int i = 0; i < op->nout; i++) {
			int id = op->t[op->nin + i].id;
			iset_del(&dead, id);
			iset_add(&alive, id);
		}
	}
	iset_free(&produced);
	iset_free(&alive);
	iset_free(&dead);
	return ok;
}

/* Every block's own order is valid: its ops are a subsequence of the stream order
 * or a concatenation this check allowed. So a then b breaks produce-before-read only
 * where a reads what b produces, and read-before-free only where b reads what a
 * freed: exactly when a depends on b. */
bool block_can_append(const Block *a, const Block *b)
{
	return !block_depends_on(a, b);
}

/* The fusers of self after the ops of other, when the merge is accepted (SPEC §3:
 * the result still has an open fuser, or neither side had a ready fuser and the
 * result has one); NULL when refused. Only the fusers decide, and a closed fuser
 * ignores every op offered to it, so the trial clones and feeds the open ones
 * alone; a self without an open fuser is refused at once (the result could neither
 * be open nor become ready where self was not). With `take`, self's closed fusers
 * move into the result instead of being cloned. */
static Fuser **merged_fusers(Block *self, const Block *other, bool take)
{
	if (!block_still_optimizing(self))
		return NULL;
	bool self_ready = block_has_ready(self);
	bool other_ready = block_has_ready(other);
	bool open = false, ready = self_ready;
	Fuser **f = xcalloc((size_t)self->nfusers, sizeof(Fuser *));
	for (int i = 0; i < self->nfusers; i++) {
		if (self->fusers[i]->status != FS_OPEN)
			continue;
		f[i] = fuser_clone(self->fusers[i]);
		for (int k = 0; k < other->nops; k++)
			fuser_fuse(f[i], &other->ops[k]);
		open |= f[i]->status == FS_OPEN;
		ready |= f[i]->vt->properties(f[i]).ready;
	}
	if (!open && (self_ready || other_ready || !ready)) {
		for (int i = 0; i < self->nfusers; i++)
			fuser_free(f[i]);
		free(f);
		return NULL;
	}
	for (int i = 0; i < self->nfusers; i++)
		if (!f[i]) {
			f[i] = take ? self->fusers[i] : fuser_clone(self->fusers[i]);
			f[i]->seen += other->nops;
			if (take)
				self->fusers[i] = NULL;
		}
	return f;
}

bool block_merge(Block *self, const Block *other)
{
	Fuser **f = merged_fusers(self, other, true);
	if (!f)
		return false;
	for (int i = 0; i < self->nfusers; i++)
		fuser_free(self->fusers[i]);
	free(self->fusers);
	self->fusers = f;
	for (int i = 0; i < other->nops; i++)
		append_op(self, &other->ops[i], other->pos[i]);
	return true;
}

Block *block_merged(const Block *self, const Block *other)
{
	Fuser **f = merged_fusers((Block *)self, other, false);
	if (!f)
		return NULL;
	Block *m = copy_block(self, f);
	for (int i = 0; i < other->nops; i++)
		append_op(m, &other->ops[i], other->pos[i]);
	return m;
}

bool block_depends_on(const Block *x, const Block *y)
{
	return iset_intersects(&x->read, &y->produced) || iset_intersects(&x->freed, &y->read);
}

bool blocks_topo_order(Block **blocks, int n, int *order)
{
	int *pending = xcalloc((size_t)(n ? n : 1), sizeof(int));
	bool *done = xcalloc((size_t)(n ? n : 1), sizeof(bool));
	bool *dep = xcalloc((size_t)(n > 0 ? n * n : 1), sizeof(bool));
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			if (i != j && block_depends_on(blocks[i], blocks[j])) {
				dep[i * n + j] = true;
				pending[i]++;
			}
	int k = 0;
	for (; k < n; k++) {
		int best = -1;
		for (int i = 0; i < n; i++)
			if (!done[i] && pending[i] == 0 &&
			    (best < 0 || blocks[i]->start_pos < blocks[best]->start_pos))
				best = i;
		if (best < 0)
			break;
		done[best] = true;
		order[k] = best;
		for (int i = 0; i < n; i++)
			if (dep[i * n + best])
				pending[i]--;
	}
	free(pending);
	free(done);
	free(dep);
	return k == n;
}
