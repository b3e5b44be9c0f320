/* plan.c: writes the plan document of a compile (SPEC §6).
 *
 * Sections, in order: format and compiler, target and options, tensors (role, and
 * whether the runtime allocates a buffer: inputs, outputs, and intermediates some
 * launch writes to memory), kernels (deterministic names fusec_k<plan>_<unit> for
 * planned kernels, fusec_op<op> for ops run without a plan; fuser, score and the
 * ops they run), plans (relative ops as `fusec normalize` prints them, triggers,
 * strategy tree), and steps in execution order with their launches: the tensors a
 * launch reads and writes, its scalar values and the dim value of each shape id. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "plan.h"

static cJSON *int_array(const int *v, int n)
{
	cJSON *a = cJSON_CreateArray();
	for (int i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
	return a;
}

static cJSON *name_array(const Graph *g, const int *t, int n)
{
	cJSON *a = cJSON_CreateArray();
	for (int i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(g->tensors[t[i]].name));
	return a;
}

static cJSON *number(double v)
{
	if (v != v)
		return cJSON_CreateString("nan");
	if (v > 1.7976931348623157e308)
		return cJSON_CreateString("inf");
	if (v < -1.7976931348623157e308)
		return cJSON_CreateString("-inf");
	return cJSON_CreateNumber(v);
}

static cJSON *relops(const RelOp *ops, int n)
{
	cJSON *a = cJSON_CreateArray();
	for (int i = 0; i < n; i++) {
		Buf b = {0};
		ir_rel_print(&b, &ops[i]);
		cJSON_AddItemToArray(a, cJSON_CreateString(b.data ? b.data : ""));
		buf_free(&b);
	}
	return a;
}

static cJSON *strategy(const Strategy *st)
{
	cJSON *o = cJSON_CreateObject();
	switch (st->kind) {
	case STRAT_FUSED:
		cJSON_AddStringToObject(o, "kind", "optimization");
		cJSON_AddStringToObject(o, "fuser", pass_fuser_name(st->fuser));
		cJSON_AddNumberToObject(o, "score", (double)st->score);
		cJSON_AddItemToObject(o, "ordering", int_array(st->ordering, st->n));
		break;
	case STRAT_OPS:
		cJSON_AddStringToObject(o, "kind", "operations");
		cJSON_AddItemToObject(o, "ordering", int_array(st->ordering, st->n));
		break;
	case STRAT_COMPOSED: {
		cJSON_AddStringToObject(o, "kind", "composed");
		cJSON *a = cJSON_AddArrayToObject(o, "strategies");
		for (int i = 0; i < st->n; i++)
			cJSON_AddItemToArray(a, strategy(st->sub[i]));
		break;
	}
	}
	return o;
}

static const char *step_mode(const Step *st)
{
	switch (st->kind) {
	case STEP_EXPLORED: return "explored";
	case STEP_CACHE_HIT: return "cache hit";
	case STEP_UNFUSED: return "unfused";
	}
	return "?";
}

char *cg_plan_json(const Schedule *s, const PlanFileInfo *info)
{
	const Graph *g = s->g;
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "format", "fusec-plan/1");
	cJSON_AddStringToObject(root, "compiler", "fusec " FUSEC_VERSION);
	cJSON_AddStringToObject(root, "name", g->name);
	cJSON_AddStringToObject(root, "arch", info->arch);
	cJSON_AddStringToObject(root, "ptx", info->ptx);
	cJSON *opts = cJSON_AddObjectToObject(root, "options");
	cJSON_AddNumberToObject(opts, "max_blocks", s->opt.max_blocks);
	if (s->opt.max_explorations >= 0)
		cJSON_AddNumberToObject(opts, "max_explorations", s->opt.max_explorations);
	else
		cJSON_AddNullToObject(opts, "max_explorations");
	cJSON_AddNumberToObject(opts, "max_bindings", s->opt.max_bindings);
	if (info->libdevice)
		cJSON_AddStringToObject(opts, "libdevice", info->libdevice);

	bool *written = calloc((size_t)(g->ntensors ? g->ntensors : 1), sizeof(bool));
	for (int i = 0; i < s->nsteps; i++)
		for (int k = 0; k < s->steps[i].nlaunch; k++)
			for (int j = 0; j < s->steps[i].launch[k].nout; j++)
				written[s->steps[i].launch[k].out[j]] = true;
	cJSON *tensors = cJSON_AddArrayToObject(root, "tensors");
	for (int i = 0; i < g->ntensors; i++) {
		const Tensor *t = &g->tensors[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", t->name);
		cJSON_AddStringToObject(o, "dtype", ir_dtype_name(t->dtype));
		cJSON *shape = cJSON_AddArrayToObject(o, "shape");
		for (int d = 0; d < t->rank; d++)
			cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->dim[d]));
		const char *role = t->role == ROLE_INPUT ? "input" :
			t->is_output ? "output" : "intermediate";
		cJSON_AddStringToObject(o, "role", role);
		cJSON_AddBoolToObject(o, "buffer", t->role == ROLE_INPUT || t->is_output || written[i]);
		cJSON_AddItemToArray(tensors, o);
	}
	free(written);

	cJSON *kernels = cJSON_AddArrayToObject(root, "kernels");
	for (int i = 0; i < s->nkernels; i++) {
		const Kernel *k = &s->kernels[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", k->name);
		cJSON_AddStringToObject(o, "entry", k->name);
		cJSON_AddStringToObject(o, "fuser", k->fuser >= 0 ? pass_fuser_name(k->fuser) : "none");
		cJSON_AddNumberToObject(o, "score", (double)k->score);
		if (k->plan >= 0)
			cJSON_AddNumberToObject(o, "plan", k->plan);
		cJSON_AddItemToObject(o, "ops", int_array(k->ops, k->nops));
		cJSON *names = cJSON_AddArrayToObject(o, "op_names");
		for (int j = 0; j < k->nops; j++) {
			char buf[96];
			cJSON_AddItemToArray(names, cJSON_CreateString(
				ir_op_display(g, &g->ops[k->ops[j]], buf, sizeof buf)));
		}
		cJSON_AddItemToArray(kernels, o);
	}

	cJSON *plans = cJSON_AddArrayToObject(root, "plans");
	for (int i = 0; i < s->nplans; i++) {
		const Plan *p = s->plans[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "id", p->id);
		cJSON_AddItemToObject(o, "ops", relops(p->ops, p->nops));
		cJSON *trig = cJSON_AddArrayToObject(o, "triggers");
		for (int t = 0; t < p->ntriggers; t++) {
			cJSON *to = cJSON_CreateObject();
			cJSON_AddStringToObject(to, "kind", pass_trigger_name(p->triggers[t].kind));
			if (p->triggers[t].kind == TRIG_ON_OPERATIONS)
				cJSON_AddItemToObject(to, "ops", relops(p->triggers[t].ops,
									p->triggers[t].nops));
			cJSON_AddItemToArray(trig, to);
		}
		cJSON_AddItemToObject(o, "strategy", strategy(p->strategy));
		cJSON *names = cJSON_AddArrayToObject(o, "kernels");
		for (int k = 0; k < p->nkernels; k++)
			cJSON_AddItemToArray(names, cJSON_CreateString(s->kernels[p->first_kernel + k].name));
		cJSON_AddItemToArray(plans, o);
	}

	cJSON *steps = cJSON_AddArrayToObject(root, "steps");
	for (int i = 0; i < s->nsteps; i++) {
		const Step *st = &s->steps[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "segment", st->segment);
		cJSON_AddNumberToObject(o, "stream", st->stream);
		if (st->plan >= 0)
			cJSON_AddNumberToObject(o, "plan", st->plan);
		else
			cJSON_AddNullToObject(o, "plan");
		cJSON_AddStringToObject(o, "mode", step_mode(st));
		cJSON_AddStringToObject(o, "exec", st->mode == MODE_SYNC ? "sync" : "lazy");
		if (st->guarded)
			cJSON_AddBoolToObject(o, "unfused_guard", 1);
		cJSON_AddItemToObject(o, "ops", int_array(st->ops, st->nops));
		cJSON *launches = cJSON_AddArrayToObject(o, "launches");
		for (int k = 0; k < st->nlaunch; k++) {
			const Launch *l = &st->launch[k];
			cJSON *lo = cJSON_CreateObject();
			cJSON_AddStringToObject(lo, "kernel", s->kernels[l->kernel].name);
			cJSON_AddItemToObject(lo, "ops", int_array(l->ops, l->nops));
			cJSON_AddItemToObject(lo, "reads", name_array(g, l->in, l->nin));
			cJSON_AddItemToObject(lo, "writes", name_array(g, l->out, l->nout));
			cJSON *sc = cJSON_AddArrayToObject(lo, "scalars");
			for (int j = 0; j < l->nscalars; j++)
				cJSON_AddItemToArray(sc, number(l->scalars[j]));
			cJSON *sz = cJSON_AddArrayToObject(lo, "sizes");
			for (int j = 0; j < l->nsizes; j++)
				cJSON_AddItemToArray(sz, cJSON_CreateNumber((double)l->sizes[j]));
			cJSON_AddItemToArray(launches, lo);
		}
		cJSON_AddItemToArray(steps, o);
	}
	char *text = cJSON_Print(root);
	cJSON_Delete(root);
	return text;
}
