/* record.c: the record of every decision the search takes.
 *
 * The search appends events (registrations, merges, closes, scores, selections,
 * cache hits, executions) in the order they happen; log.c, explain.c and the plan
 * writer read them back. One record, so the four views can never disagree. */
#include <string.h>

#include "search.h"

Event *rec_add(Record *r, EventKind kind, int stream)
{
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 256;
		r->ev = xrealloc(r->ev, sizeof(Event) * (size_t)r->cap);
	}
	Event *e = &r->ev[r->n++];
	memset(e, 0, sizeof *e);
	e->kind = (uint8_t)kind;
	e->stream = stream;
	e->op = -1;
	return e;
}
