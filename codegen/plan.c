/* plan.c: writes the plan document of a compile (SPEC §6, docs/plan-format.md).
 *
 * Sections, in order: format and compiler, target and options, tensors (role, and
 * whether the runtime allocates a buffer: inputs, outputs, and intermediates some
 * launch writes to memory), kernels (the distinct kernels of the PTX: entry,
 * parameter types, block size, and the fuser, score and ops of their first use),
 * plans (relative ops as `fusec normalize` prints them, triggers, strategy tree),
 * and steps in execution order with their launches: the plan unit it runs
 * (fusec_k<plan>_<unit>, or fusec_op<op> for an op run without a plan), its ops,
 * the tensors it reads and writes, grid, block and one argument per parameter. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "plan.h"

/* Numbers go in as raw JSON text: cJSON prints a number with sprintf and reads it
 * back with sscanf to check it, which was most of the time of a large plan. */
static cJSON *integer(int64_t v)
{
	char text[24];
	snprintf(text, sizeof text, "%lld", (long long)v);
	return cJSON_CreateRaw(text);
}

static cJSON *int_array(const int *v, int n)
{
	cJSON *a = cJSON_CreateArray();
	for (int i = 0; i < n; i++)
		cJSON_AddItemToArray(a, integer(v[i]));
	return a;
}

/* A double as the shortest text that reads back the same; non-finite values as
 * the strings "nan", "inf", "-inf" (docs/plan-format.md). */
static cJSON *number(double v)
{
	char text[40];
	fmt_double(text, sizeof text, v);
	if (v != v || v > 1.7976931348623157e308 || v < -1.7976931348623157e308)
		return cJSON_CreateString(text);
	return cJSON_CreateRaw(text);
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
		cJSON_AddItemToObject(o, "score", integer((int64_t)st->score));
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

static const char *param_type(const CgParam *p)
{
	switch (p->kind) {
	case CG_PARAM_BUFFER: return "ptr";
	case CG_PARAM_SCALAR: return "f64";
	case CG_PARAM_DIM: return "i64";
	case CG_PARAM_SCRATCH: return "ptr";
	}
	return "?";
}

static cJSON *dim3(int64_t x, int64_t y, int64_t z)
{
	cJSON *a = cJSON_CreateArray();
	cJSON_AddItemToArray(a, integer(x));
	cJSON_AddItemToArray(a, integer(y));
	cJSON_AddItemToArray(a, integer(z));
	return a;
}

static cJSON *launch_json(const Schedule *s, const CgBound *b)
{
	const Graph *g = s->g;
	const CgKernel *k = b->kernel;
	const Kernel *unit = &s->kernels[b->unit];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "kernel", k->name);
	cJSON_AddStringToObject(o, "unit", unit->name);
	const Launch *l = NULL;
	const Step *st = &s->steps[b->step];
	for (int i = 0; i < st->nlaunch && !l; i++)
		if (st->launch[i].kernel == b->unit)
			l = &st->launch[i];
	if (l)
		cJSON_AddItemToObject(o, "ops", int_array(l->ops, l->nops));
	cJSON *reads = cJSON_AddArrayToObject(o, "reads");
	cJSON *writes = cJSON_AddArrayToObject(o, "writes");
	for (int p = 0; p < k->nparams; p++) {
		if (k->params[p].kind != CG_PARAM_BUFFER)
			continue;
		const char *name = g->tensors[b->args[p].tensor].name;
		if (k->params[p].read)
			cJSON_AddItemToArray(reads, cJSON_CreateString(name));
		if (k->params[p].written)
			cJSON_AddItemToArray(writes, cJSON_CreateString(name));
	}
	cJSON_AddItemToObject(o, "grid", dim3(b->at.grid[0], b->at.grid[1], b->at.grid[2]));
	cJSON_AddItemToObject(o, "block", dim3(b->at.block[0], b->at.block[1], b->at.block[2]));
	cJSON_AddItemToObject(o, "shared_bytes", integer(b->at.shared_bytes));
	cJSON *args = cJSON_AddArrayToObject(o, "args");
	for (int p = 0; p < b->nargs; p++) {
		const CgArg *a = &b->args[p];
		cJSON *ao = cJSON_CreateObject();
		switch (a->kind) {
		case CG_ARG_TENSOR:
			cJSON_AddStringToObject(ao, "tensor", g->tensors[a->tensor].name);
			break;
		case CG_ARG_F64:
			cJSON_AddItemToObject(ao, "f64", number(a->f));
			break;
		case CG_ARG_I64:
			cJSON_AddItemToObject(ao, "i64", integer(a->i));
			break;
		case CG_ARG_SCRATCH:
			cJSON_AddItemToObject(ao, "scratch", integer(a->i));
			break;
		}
		cJSON_AddItemToArray(args, ao);
	}
	return o;
}

char *cg_plan_json(const Schedule *s, const CgProgram *prog, const PlanFileInfo *info)
{
	const Graph *g = s->g;
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "format", "fusec-plan/1");
	cJSON_AddStringToObject(root, "compiler", "fusec " FUSEC_VERSION);
	cJSON_AddStringToObject(root, "name", g->name);
	cJSON_AddStringToObject(root, "arch", info->arch);
	cJSON_AddStringToObject(root, "ptx", info->ptx);
	if (info->ptx_sha256)
		cJSON_AddStringToObject(root, "ptx_sha256", info->ptx_sha256);
	cJSON *opts = cJSON_AddObjectToObject(root, "options");
	cJSON_AddItemToObject(opts, "max_blocks", integer(s->opt.max_blocks));
	if (s->opt.max_explorations >= 0)
		cJSON_AddItemToObject(opts, "max_explorations", integer(s->opt.max_explorations));
	else
		cJSON_AddNullToObject(opts, "max_explorations");
	cJSON_AddItemToObject(opts, "max_bindings", integer(s->opt.max_bindings));
	if (info->libdevice)
		cJSON_AddStringToObject(opts, "libdevice", info->libdevice);

	cJSON *tensors = cJSON_AddArrayToObject(root, "tensors");
	for (int i = 0; i < g->ntensors; i++) {
		const Tensor *t = &g->tensors[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", t->name);
		cJSON_AddStringToObject(o, "dtype", ir_dtype_name(t->dtype));
		cJSON *shape = cJSON_AddArrayToObject(o, "shape");
		for (int d = 0; d < t->rank; d++)
			cJSON_AddItemToArray(shape, integer(t->dim[d]));
		const char *role = t->role == ROLE_INPUT ? "input" :
			t->is_output ? "output" : "intermediate";
		cJSON_AddStringToObject(o, "role", role);
		if (t->role == ROLE_INPUT && t->is_output)
			cJSON_AddBoolToObject(o, "output", 1);
		cJSON_AddBoolToObject(o, "buffer", prog->buffer[i]);
		cJSON_AddItemToArray(tensors, o);
	}

	/* the first launch of each kernel names its fuser, score and ops */
	int nidx = 1;
	for (int i = 0; i < prog->nkernels; i++)
		if (prog->kernels[i]->index + 1 > nidx)
			nidx = prog->kernels[i]->index + 1;
	const CgBound **first = calloc((size_t)nidx, sizeof *first);
	for (int i = prog->nlaunch - 1; i >= 0; i--)
		first[prog->launch[i].kernel->index] = &prog->launch[i];
	cJSON *kernels = cJSON_AddArrayToObject(root, "kernels");
	for (int i = 0; i < prog->nkernels; i++) {
		const CgKernel *ck = prog->kernels[i];
		const Kernel *k = &s->kernels[first[ck->index]->unit];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", ck->name);
		cJSON_AddStringToObject(o, "entry", ck->name);
		cJSON_AddStringToObject(o, "kind", cg_kernel_kind_name(ck->kind));
		cJSON *params = cJSON_AddArrayToObject(o, "params");
		for (int p = 0; p < ck->nparams; p++)
			cJSON_AddItemToArray(params, cJSON_CreateString(param_type(&ck->params[p])));
		cJSON_AddItemToObject(o, "block", dim3(ck->launch.block, 1, 1));
		cJSON_AddItemToObject(o, "shared_bytes", integer(0));
		cJSON_AddBoolToObject(o, "vectorized", ck->vectorized);
		if (ck->shape)
			cJSON_AddStringToObject(o, "shape", ck->shape);
		if (ck->variant > 0)
			cJSON_AddStringToObject(o, "tiles", cg_matmul_variant_name(ck->variant));
		cJSON_AddStringToObject(o, "fuser", k->fuser >= 0 ? pass_fuser_name(k->fuser) : "none");
		cJSON_AddItemToObject(o, "score", integer((int64_t)k->score));
		cJSON_AddItemToObject(o, "ops", int_array(k->ops, k->nops));
		cJSON *names = cJSON_AddArrayToObject(o, "op_names");
		for (int j = 0; j < k->nops; j++) {
			char buf[96];
			cJSON_AddItemToArray(names, cJSON_CreateString(
				ir_op_display(g, &g->ops[k->ops[j]], buf, sizeof buf)));
		}
		cJSON_AddItemToArray(kernels, o);
	}
	free(first);

	cJSON *plans = cJSON_AddArrayToObject(root, "plans");
	for (int i = 0; i < s->nplans; i++) {
		const Plan *p = s->plans[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddItemToObject(o, "id", integer(p->id));
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
		cJSON *units = cJSON_AddArrayToObject(o, "units");
		for (int k = 0; k < p->nkernels; k++)
			cJSON_AddItemToArray(units, cJSON_CreateString(s->kernels[p->first_kernel + k].name));
		cJSON_AddItemToArray(plans, o);
	}

	cJSON *steps = cJSON_AddArrayToObject(root, "steps");
	int bi = 0;
	for (int i = 0; i < s->nsteps; i++) {
		const Step *st = &s->steps[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddItemToObject(o, "segment", integer(st->segment));
		cJSON_AddItemToObject(o, "stream", integer(st->stream));
		if (st->plan >= 0)
			cJSON_AddItemToObject(o, "plan", integer(st->plan));
		else
			cJSON_AddNullToObject(o, "plan");
		cJSON_AddStringToObject(o, "mode", step_mode(st));
		cJSON_AddStringToObject(o, "exec", st->mode == MODE_SYNC ? "sync" : "lazy");
		if (st->guarded)
			cJSON_AddBoolToObject(o, "unfused_guard", 1);
		cJSON_AddItemToObject(o, "ops", int_array(st->ops, st->nops));
		cJSON *launches = cJSON_AddArrayToObject(o, "launches");
		for (; bi < prog->nlaunch && prog->launch[bi].step == i; bi++)
			cJSON_AddItemToArray(launches, launch_json(s, &prog->launch[bi]));
		cJSON_AddItemToArray(steps, o);
	}
	char *text = cJSON_PrintBuffered(root, 1 << 20, 1);
	if (!text)
		die("out of memory printing the plan");
	cJSON_Delete(root);
	return text;
}

int cg_compile_schedule(const Schedule *s, const PlanFileInfo *info, bool want_ll,
			CgOutputs *out, Diag *d)
{
	memset(out, 0, sizeof *out);
	Arena *a = arena_new();
	CgProgram prog;
	CgOptions co = {.target = CG_TARGET_NVPTX, .arch = info->arch,
			.libdevice = info->libdevice, .name = s->g->name};
	double t0 = clock_seconds();
	CgModule *m = cg_module_new(&co, a, d);
	int rc = !m || cg_lower(m, s, a, &prog, d) ? -1 : 0;
	double t1 = clock_seconds();
	rc = rc || cg_module_finish(m, d) ? -1 : 0;
	double t2 = clock_seconds();
	rc = rc || cg_module_emit_ptx(m, &out->ptx, d) ||
	     (want_ll && cg_module_emit_ll(m, &out->ll, d)) ? -1 : 0;
	double t3 = clock_seconds();
	cg_module_free(m);
	if (!rc) {
		char sha[65];
		sha256_hex(out->ptx.data, out->ptx.len, sha);
		PlanFileInfo hashed = *info;
		hashed.ptx_sha256 = sha;
		char *text = cg_plan_json(s, &prog, &hashed);
		size_t len = strlen(text);
		out->plan = xrealloc(text, len + 2);
		out->plan[len] = '\n';
		out->plan[len + 1] = 0;
		out->nkernels = prog.nkernels;
		out->t_kernels = t1 - t0;
		out->t_optimize = t2 - t1;
		out->t_emit = t3 - t2;
		out->t_plan = clock_seconds() - t3;
	} else {
		cg_outputs_free(out);
	}
	arena_free(a);
	return rc;
}

void cg_outputs_free(CgOutputs *o)
{
	buf_free(&o->ptx);
	buf_free(&o->ll);
	free(o->plan);
	o->plan = NULL;
}
