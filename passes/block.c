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
 * a ready fuser and the result has one. Appending must keep a valid order (produce
 * before read, read before free); cycle checks between blocks are explorer.c's. */
#include <stdlib.h>
#include <string.h>

#include "search.h"

Block *block_new(const SearchCtx *c)
{
	Block *b = xcalloc(1, sizeof *b);
	b->nfusers = fusers_count();
	b->fusers = xmalloc(sizeof(Fuser *) * (size_t)b->nfusers);
	for (int i = 0; i < b->nfusers; i++)
		b->fusers[i] = fuser_new(i, c->max_bindings);
	b->start_pos = 1 << 30;
	b->end_pos = 0;
	return b;
}

Block *block_clone(const Block *s)
{
	Block *b = xcalloc(1, sizeof *b);
	b->nfusers = s->nfusers;
	b->fusers = xmalloc(sizeof(Fuser *) * (size_t)b->nfusers);
	for (int i = 0; i < b->nfusers; i++)
		b->fusers[i] = fuser_clone(s->fusers[i]);
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

static void register_op(Block *b, const RelOp *op, int pos, SearchCtx *c, bool log)
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

bool block_can_append(const Block *a, const Block *b)
{
	int n = a->nops + b->nops;
	const RelOp **ops = xmalloc(sizeof(RelOp *) * (size_t)(n ? n : 1));
	for (int i = 0; i < a->nops; i++)
		ops[i] = &a->ops[i];
	for (int i = 0; i < b->nops; i++)
		ops[a->nops + i] = &b->ops[i];
	bool ok = ops_order_valid(ops, n);
	free(ops);
	return ok;
}

bool block_merge(Block *self, const Block *other)
{
	bool self_ready = block_has_ready(self);
	bool other_ready = block_has_ready(other);
	for (int i = 0; i < other->nops; i++)
		register_op(self, &other->ops[i], other->pos[i], NULL, false);
	if (block_still_optimizing(self))
		return true;
	return !self_ready && !other_ready && block_has_ready(self);
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
