/* log_json.c: the decision record as JSON lines (--log-format json, FUSEC_LOG_FORMAT).
 *
 * The same events, at the same levels, as the text log of log.c: one object a
 * line, "event" naming the kind. Field names are stable (docs/inspect.md lists them);
 * every event about an op carries its global index ("op"), burn's display name
 * ("kind"), its own name ("name", null without one) and the tensor it writes
 * ("out"). An execution is one "execute" object with its launches and their ops. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "search.h"

static const char *const event_names[] = {
	"register_new", "register_accepted", "register_dependent", "register_dropped",
	"stopped", "merge", "merge_refused", "fuser_closed", "still_optimizing_false",
	"explore", "exploration_limit", "block", "block_op", "block_fuser", "holes",
	"selected", "repair", "completed", "cache_hit", "guard", "execute",
};
_Static_assert(COUNTOF(event_names) == EV_EXECUTE + 1, "event_names: one per EventKind");

static const char *mode_name(int m)
{
	return m == MODE_SYNC ? "sync" : "lazy";
}

static void add_op(cJSON *o, const Graph *g, const char *key, int op)
{
	if (op < 0) {
		cJSON_AddNullToObject(o, key);
		return;
	}
	char k[96];
	const Op *x = &g->ops[op];
	cJSON *r = cJSON_AddObjectToObject(o, key);
	cJSON_AddNumberToObject(r, "index", op);
	cJSON_AddStringToObject(r, "kind", ir_op_display(g, x, k, sizeof k));
	if (x->name)
		cJSON_AddStringToObject(r, "name", x->name);
	else
		cJSON_AddNullToObject(r, "name");
	if (x->nout)
		cJSON_AddStringToObject(r, "out", g->tensors[x->out[0]].name);
	else
		cJSON_AddNullToObject(r, "out");
}

static cJSON *tensors(const Graph *g, const int *ids, int n)
{
	cJSON *a = cJSON_CreateArray();
	for (int i = 0; i < n; i++) {
		const Tensor *t = &g->tensors[ids[i]];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddNumberToObject(x, "id", ids[i]);
		cJSON_AddStringToObject(x, "name", t->name);
		cJSON_AddStringToObject(x, "dtype", ir_dtype_name(t->dtype));
		cJSON *sh = cJSON_AddArrayToObject(x, "shape");
		for (int d = 0; d < t->rank; d++)
			cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)t->dim[d]));
		cJSON_AddItemToArray(a, x);
	}
	return a;
}

static void add_execute(const Schedule *s, const Event *e, cJSON *o)
{
	const Step *st = &s->steps[e->a];
	const Graph *g = s->g;
	cJSON_AddNumberToObject(o, "step", e->a);
	cJSON_AddNumberToObject(o, "segment", st->segment);
	cJSON_AddStringToObject(o, "mode", mode_name(st->mode));
	if (st->plan >= 0)
		cJSON_AddNumberToObject(o, "plan", st->plan);
	else
		cJSON_AddNullToObject(o, "plan");
	cJSON *ls = cJSON_AddArrayToObject(o, "launches");
	for (int k = 0; k < st->nlaunch; k++) {
		const Launch *l = &st->launch[k];
		const Kernel *kern = &s->kernels[l->kernel];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "kernel", kern->name);
		cJSON_AddBoolToObject(x, "fused", kern->fuser >= 0);
		if (kern->fuser >= 0) {
			cJSON_AddStringToObject(x, "fuser", pass_fuser_name(kern->fuser));
			cJSON_AddNumberToObject(x, "score", (double)kern->score);
		} else {
			cJSON_AddNullToObject(x, "fuser");
			cJSON_AddNullToObject(x, "score");
		}
		cJSON *ops = cJSON_AddArrayToObject(x, "ops");
		for (int j = 0; j < l->nops; j++) {
			const Op *op = &g->ops[l->ops[j]];
			cJSON *y = cJSON_CreateObject();
			add_op(y, g, "op", l->ops[j]);
			cJSON_AddItemToObject(y, "inputs", tensors(g, op->in, op->nin));
			cJSON_AddItemToObject(y, "outputs", tensors(g, op->out, op->nout));
			cJSON_AddItemToArray(ops, y);
		}
		cJSON_AddItemToArray(ls, x);
	}
}

static void add_fields(const Schedule *s, const Event *e, cJSON *o)
{
	const Graph *g = s->g;
	switch ((EventKind)e->kind) {
	case EV_REGISTER_NEW:
	case EV_REGISTER_DEPENDENT:
		cJSON_AddNumberToObject(o, "pos", e->a);
		cJSON_AddNumberToObject(o, "blocks", e->b);
		break;
	case EV_REGISTER_ACCEPTED:
		cJSON_AddNumberToObject(o, "pos", e->a);
		cJSON_AddNumberToObject(o, "accepted_in", e->b);
		cJSON_AddNumberToObject(o, "blocks", e->c);
		break;
	case EV_REGISTER_DROPPED:
		cJSON_AddNumberToObject(o, "pos", e->a);
		cJSON_AddNumberToObject(o, "stopped_at", e->b);
		break;
	case EV_STOPPED:
		cJSON_AddNumberToObject(o, "pos", e->a);
		cJSON_AddNumberToObject(o, "max_blocks", e->b);
		cJSON_AddStringToObject(o, "reason", e->c == 2 ? "cycle" : e->c == 1 ?
					"max_blocks_on_dependency" : "max_blocks");
		break;
	case EV_MERGE:
		cJSON_AddNumberToObject(o, "blocks_in", e->a);
		cJSON_AddNumberToObject(o, "blocks_out", e->b);
		cJSON_AddStringToObject(o, "reason", e->d == 2 ? "before_settling" : e->d == 1 ?
					"forced_at_max_blocks" : "op_reads_several_blocks");
		break;
	case EV_MERGE_REFUSED:
		cJSON_AddNumberToObject(o, "first_pos", e->a);
		cJSON_AddNumberToObject(o, "second_pos", e->b);
		cJSON_AddStringToObject(o, "reason", e->reason == 0 ? "cycle" : e->reason == 1 ?
					"no_valid_order" : "ready_fuser_hidden");
		break;
	case EV_FUSER_CLOSED:
		cJSON_AddStringToObject(o, "fuser", pass_fuser_name(e->a));
		cJSON_AddStringToObject(o, "reason", pass_close_reason(e->reason));
		cJSON_AddNumberToObject(o, "ops", e->b);
		break;
	case EV_STILL_OPT_FALSE:
		break;
	case EV_EXPLORE:
		cJSON_AddStringToObject(o, "mode", mode_name(e->mode));
		cJSON_AddNumberToObject(o, "deferred", e->a);
		cJSON_AddNumberToObject(o, "queued", e->b);
		break;
	case EV_EXPLORATION_LIMIT:
	case EV_REPAIR:
		cJSON_AddNumberToObject(o, "ops", e->a);
		break;
	case EV_BLOCK:
		cJSON_AddNumberToObject(o, "block", e->a);
		cJSON_AddNumberToObject(o, "ops", e->b);
		if (e->c >= 0)
			cJSON_AddStringToObject(o, "winner", pass_fuser_name(e->c));
		else
			cJSON_AddNullToObject(o, "winner");
		cJSON_AddNumberToObject(o, "score", (double)e->score);
		cJSON_AddNumberToObject(o, "took", e->d);
		break;
	case EV_BLOCK_OP:
		cJSON_AddNumberToObject(o, "block", e->a);
		cJSON_AddNumberToObject(o, "pos", e->b);
		cJSON_AddBoolToObject(o, "settled", e->c);
		break;
	case EV_BLOCK_FUSER:
		cJSON_AddNumberToObject(o, "block", e->a);
		cJSON_AddStringToObject(o, "fuser", pass_fuser_name(e->b));
		cJSON_AddBoolToObject(o, "ready", e->c & BF_READY);
		cJSON_AddNumberToObject(o, "score", (double)e->score);
		cJSON_AddNumberToObject(o, "ops", e->d);
		if (e->c & BF_CLOSED)
			cJSON_AddStringToObject(o, "closed", pass_close_reason(e->reason));
		else
			cJSON_AddNullToObject(o, "closed");
		break;
	case EV_HOLES:
		cJSON_AddNumberToObject(o, "holes", e->a);
		break;
	case EV_SELECTED:
		cJSON_AddNumberToObject(o, "strategies", e->a);
		break;
	case EV_COMPLETED:
		cJSON_AddStringToObject(o, "mode", mode_name(e->mode));
		cJSON_AddNumberToObject(o, "optimized", e->a);
		cJSON_AddNumberToObject(o, "queued", e->b);
		cJSON_AddNumberToObject(o, "plan", e->c);
		cJSON_AddBoolToObject(o, "new_plan", e->d == 1);
		break;
	case EV_CACHE_HIT:
		cJSON_AddStringToObject(o, "mode", mode_name(e->mode));
		cJSON_AddNumberToObject(o, "plan", e->a);
		cJSON_AddNumberToObject(o, "queued", e->b);
		break;
	case EV_GUARD:
		cJSON_AddNumberToObject(o, "plan", e->a);
		cJSON_AddNumberToObject(o, "max_shape_id", e->b);
		cJSON_AddNumberToObject(o, "assigned", e->c);
		cJSON_AddNumberToObject(o, "ops", e->d);
		break;
	case EV_EXECUTE:
		add_execute(s, e, o);
		break;
	}
	(void)g;
}

void pass_log_write_json(const Schedule *s, LogLevel level, Buf *b)
{
	for (int i = 0; i < s->rec->n; i++) {
		const Event *e = &s->rec->ev[i];
		LogLevel need = pass_event_level(e->kind);
		if (need > level)
			continue;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "event", event_names[e->kind]);
		cJSON_AddNumberToObject(o, "stream", e->stream);
		if (e->kind != EV_EXECUTE)
			add_op(o, s->g, "op", e->op);
		add_fields(s, e, o);
		char *text = cJSON_PrintUnformatted(o);
		buf_puts(b, text);
		buf_putc(b, '\n');
		cJSON_free(text);
		cJSON_Delete(o);
	}
}
