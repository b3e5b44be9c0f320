/* intset.c: open-addressing sets of small non-negative ints (relative tensor ids).
 *
 * Blocks and fusers keep several such sets (ids seen, produced, read, freed) and
 * clone them every time the explorer tries a merge, so they are flat arrays, cheap
 * to copy, and a set of up to four members keeps its slots inline: trying a merge
 * of small blocks allocates no set memory at all. The dependency tests between
 * blocks are intersections; a 64-bit summary of the members (ids of a segment are
 * small) answers most of them without a probe. */
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
	const int *slot = ISET_SLOTS(s);
	for (unsigned i = slot_of(v, s->cap);; i = (i + 1) & (unsigned)(s->cap - 1)) {
		if (slot[i] == v)
			return true;
		if (slot[i] == -1)
			return false;
	}
}

static void grow(IntSet *s)
{
	int oldcap = s->cap;
	int *old = ISET_SLOTS(s);   /* inline slots stay intact: the new ones are on the heap */
	int *oldheap = s->heap;
	s->cap = oldcap ? oldcap * 2 : ISET_SMALL;
	s->heap = s->cap > ISET_SMALL ? xmalloc(sizeof(int) * (size_t)s->cap) : NULL;
	memset(ISET_SLOTS(s), 0xff, sizeof(int) * (size_t)s->cap);
	s->n = s->size = 0;
	for (int i = 0; i < oldcap; i++)
		if (old[i] >= 0)
			iset_add(s, old[i]);
	free(oldheap);
}

void iset_add(IntSet *s, int v)
{
	if ((s->n + 1) * 2 > s->cap)
		grow(s);
	int *slot = ISET_SLOTS(s);
	int tomb = -1;
	for (unsigned i = slot_of(v, s->cap);; i = (i + 1) & (unsigned)(s->cap - 1)) {
		if (slot[i] == v)
			return;
		if (slot[i] == -2 && tomb < 0)
			tomb = (int)i;
		if (slot[i] == -1) {
			s->bits |= 1ull << (v & 63);
			if (tomb >= 0)
				slot[tomb] = v;
			else {
				slot[i] = v;
				s->n++;
			}
			s->size++;
			return;
		}
	}
}

void iset_del(IntSet *s, int v)
{
	if (!s->n)
		return;
	int *slot = ISET_SLOTS(s);
	for (unsigned i = slot_of(v, s->cap);; i = (i + 1) & (unsigned)(s->cap - 1)) {
		if (slot[i] == v) {
			slot[i] = -2;
			s->size--;
			return; /* n counts occupied slots, deleted ones included */
		}
		if (slot[i] == -1)
			return;
	}
}

void iset_copy(IntSet *dst, const IntSet *src)
{
	free(dst->heap);
	*dst = *src;
	if (src->cap > ISET_SMALL) {
		dst->heap = xmalloc(sizeof(int) * (size_t)src->cap);
		memcpy(dst->heap, src->heap, sizeof(int) * (size_t)src->cap);
	}
}

void iset_own(IntSet *s)
{
	if (s->cap > ISET_SMALL) {
		int *slot = xmalloc(sizeof(int) * (size_t)s->cap);
		memcpy(slot, s->heap, sizeof(int) * (size_t)s->cap);
		s->heap = slot;
	}
}

void iset_clear(IntSet *s)
{
	if (s->cap)
		memset(ISET_SLOTS(s), 0xff, sizeof(int) * (size_t)s->cap);
	s->n = s->size = 0;
	s->bits = 0;
}

void iset_free(IntSet *s)
{
	free(s->heap);
	memset(s, 0, sizeof *s);
}

bool iset_intersects(const IntSet *a, const IntSet *b)
{
	if (a->size > b->size) {
		const IntSet *t = a;
		a = b;
		b = t;
	}
	if (!a->size || !(a->bits & b->bits))
		return false;
	const int *slot = ISET_SLOTS(a);
	ISET_EACH(a, i)
		if (iset_has(b, slot[i]))
			return true;
	return false;
}
