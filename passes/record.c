/* record.c: the record of every decision the search takes.
 *
 * The search appends events (registrations, merges, closes, scores, selections,
 * cache hits, executions) in the order they happen; log.c, explain.c and the plan
 * writer read them back. One record, so the four views can never disagree. The
 * level at which each kind is logged is here too, so that the text log (log.c)
 * and the JSON log (log_json.c) share it. */
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

LogLevel pass_event_level(int kind)
{
	switch ((EventKind)kind) {
	case EV_SELECTED:
		return LOG_BASIC;
	case EV_STOPPED: case EV_MERGE: case EV_MERGE_REFUSED: case EV_EXPLORATION_LIMIT:
	case EV_HOLES: case EV_REPAIR: case EV_GUARD: case EV_BLOCK: case EV_COMPLETED:
	case EV_CACHE_HIT: case EV_EXECUTE:
		return LOG_MEDIUM;
	default:
		return LOG_FULL;
	}
}
