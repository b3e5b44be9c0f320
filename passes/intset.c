/* intset.c: open-addressing sets of small non-negative ints (relative tensor ids).
 *
 * Blocks and fusers keep several such sets (ids seen, produced, read, freed) and
 * clone them when blocks merge, so they are flat arrays: cheap to copy, no nodes. */
#include <stdlib.h>
#include <string.h>

#include "search.h"

static unsigned slot_of(int v, int cap)
{
	return ((unsigned)v * 2654435761u) & (unsigned)(cap - 1);
}

bool iset_has(const IntSet *s, int v)
{
	if (!s->n)
		return false;
	for (unsigned i = slot_of(v, s->cap);; i = (i + 1) & (unsigned)(s->cap - 1)) {
		if (s->slot[i] == v)
			return true;
		if (s->slot[i] == -1)
			return false;
	}
}

static void grow(IntSet *s)
{
	int oldcap = s->cap;
	int *old = s->slot;
	s->cap = oldcap ? oldcap * 2 : 16;
	s->slot = xmalloc(sizeof(int) * (size_t)s->cap);
	memset(s->slot, 0xff, sizeof(int) * (size_t)s->cap);
	s->n = 0;
	for (int i = 0; i < oldcap; i++)
		if (old[i] >= 0)
			iset_add(s, old[i]);
	free(old);
}

void iset_add(IntSet *s, int v)
{
	if ((s->n + 1) * 2 > s->cap)
		grow(s);
	int tomb = -1;
	for (unsigned i = slot_of(v, s->cap);; i = (i + 1) & (unsigned)(s->cap - 1)) {
		if (s->slot[i] == v)
			return;
		if (s->slot[i] == -2 && tomb < 0)
			tomb = (int)i;
		if (s->slot[i] == -1) {
			s->slot[tomb >= 0 ? tomb : (int)i] = v;
			s->n++;
			return;
		}
	}
}

void iset_del(IntSet *s, int v)
{
	if (!s->n)
		return;
	for (unsigned i = slot_of(v, s->cap);; i = (i + 1) & (unsigned)(s->cap - 1)) {
		if (s->slot[i] == v) {
			s->slot[i] = -2;
			return; /* n counts occupied slots, tombstones included */
		}
		if (s->slot[i] == -1)
			return;
	}
}

void iset_copy(IntSet *dst, const IntSet *src)
{
	free(dst->slot);
	*dst = *src;
	if (src->cap) {
		dst->slot = xmalloc(sizeof(int) * (size_t)src->cap);
		memcpy(dst->slot, src->slot, sizeof(int) * (size_t)src->cap);
	}
}

void iset_clear(IntSet *s)
{
	if (s->cap)
		memset(s->slot, 0xff, sizeof(int) * (size_t)s->cap);
	s->n = 0;
}

void iset_free(IntSet *s)
{
	free(s->slot);
	memset(s, 0, sizeof *s);
}

bool iset_intersects(const IntSet *a, const IntSet *b)
{
	if (a->n > b->n) {
		const IntSet *t = a;
		a = b;
		b = t;
	}
	ISET_EACH(a, i)
		if (iset_has(b, a->slot[i]))
			return true;
	return false;
}
