/* plan_read.c: reads a fusec-plan/1 file into an RtPlan, and checks a plan's
 * kernels against the entry signatures of its PTX.
 *
 * The plan is read with cJSON and validated completely before any device work:
 * every key the runtime needs is checked for presence and type, every launch must
 * name a known kernel, carry one argument per kernel parameter with the
 * parameter's type, and bind only tensors that have a buffer. A problem is
 * reported with the plan's file name and the JSON path of the offending value.
 * A plan of several arches keeps one variant per arch; rt_plan_pick chooses the
 * one a device runs and rt_plan_use makes it the plan's current one.
 *
 * The driver reads launch arguments by the PTX's signature, so before runtime.c
 * hands a PTX to the driver, rt_ptx_check_params checks that every kernel's
 * .entry is there with the parameters the plan lists. Nothing here touches the
 * driver: runtime.c does the device work. */
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "rt.h"

static const char *const param_names[] = {"ptr", "i64", "i32", "f64", "f32", "tmap"};
_Static_assert(COUNTOF(param_names) == RT_P_COUNT, "param_names: one per RtParamType");

const char *rt_param_name(RtParamType t)
{
	return (unsigned)t < RT_P_COUNT ? param_names[t] : "?";
}

static int param_parse(const char *s, RtParamType *out)
{
	for (int i = 0; i < RT_P_COUNT; i++)
		if (strcmp(s, param_names[i]) == 0) {
			*out = (RtParamType)i;
			return 0;
		}
	return -1;
}

/* ---- plan validation ------------------------------------------------------- */

/* "sm_90" -> 90, "sm_90a" -> 90 with *exact; -1 if not of that shape. */
static int arch_number(const char *arch, bool *exact)
{
	*exact = false;
	if (strncmp(arch, "sm_", 3) != 0)
		return -1;
	char *end;
	long v = strtol(arch + 3, &end, 10);
	if (end == arch + 3 || v <= 0 || v > 10000)
		return -1;
	if (*end == 'a' || *end == 'f') {
		*exact = *end == 'a';
		end++;
	}
	return *end ? -1 : (int)v;
}

typedef struct {
	const char *file;
	Diag *d;
	Arena *a;
	const RtPlan *pl;        /* its named dims (a plan for every size) */
} Parser;

enum { PATH_MAX_ = 160 };

void rt_one_line(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

static int perr(Parser *p, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int perr(Parser *p, const char *path, const char *fmt, ...)
{
	char msg[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	rt_one_line(msg);
	if (path[0])
		diag_set(p->d, p->file, 0, 0, "%s: %s", path, msg);
	else
		diag_set(p->d, p->file, 0, 0, "%s", msg);
	return -1;
}

/* The SHA-256 of a file beside the plan, at root key `key`: required, and exactly
 * 64 lowercase hex digits. Without it a runtime could not tell that the file is
 * the one the plan was compiled with. */
static int get_sha256(Parser *p, const cJSON *root, const char *path, const char *key,
		      const char *what, const char **out);

/* A file beside the plan: a plain file name, so that nothing a plan holds names a
 * file elsewhere. */
static bool plain_file_name(const char *s)
{
	return s[0] && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

static const char *type_name(const cJSON *j)
{
	if (cJSON_IsObject(j)) return "an object";
	if (cJSON_IsArray(j)) return "an array";
	if (cJSON_IsString(j)) return "a string";
	if (cJSON_IsNumber(j)) return "a number";
	if (cJSON_IsBool(j)) return "a boolean";
	if (cJSON_IsNull(j)) return "null";
	return "an invalid value";
}

/* Paths longer than PATH_MAX_ are cut short; they only appear in messages. */
static void subpath(char *out, const char *path, const char *key)
{
	int n = snprintf(out, PATH_MAX_, path[0] ? "%s.%s" : "%s%s", path, key);
	if (n >= PATH_MAX_)
		out[PATH_MAX_ - 1] = '\0';
}

static void indexpath(char *out, const char *path, int i)
{
	int n = snprintf(out, PATH_MAX_, "%s[%d]", path, i);
	if (n >= PATH_MAX_)
		out[PATH_MAX_ - 1] = '\0';
}

/* The member `key` of obj, of cJSON type `want` (cJSON_String …); NULL with an
 * error if it is missing (and required) or of another type. *absent tells apart
 * an optional member left out from an error. */
static const cJSON *member(Parser *p, const cJSON *obj, const char *path, const char *key,
			   int want, bool required, bool *absent)
{
	static const struct { int type; const char *name; } kinds[] = {
		{cJSON_String, "a string"}, {cJSON_Number, "a number"}, {cJSON_Array, "an array"},
		{cJSON_Object, "an object"}, {cJSON_True | cJSON_False, "a boolean"},
	};
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(obj, key);
	*absent = false;
	if (!j) {
		*absent = true;
		if (required)
			perr(p, path, "missing key \"%s\"", key);
		return NULL;
	}
	if (!(j->type & 0xff & want)) {
		char sp[PATH_MAX_];
		const char *wname = "?";
		for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
			if (kinds[i].type == want)
				wname = kinds[i].name;
		subpath(sp, path, key);
		perr(p, sp, "expected %s, got %s", wname, type_name(j));
		return NULL;
	}
	return j;
}

static int get_string(Parser *p, const cJSON *obj, const char *path, const char *key,
		      bool required, const char **out)
{
	bool absent;
	const cJSON *j = member(p, obj, path, key, cJSON_String, required, &absent);
	if (!j) {
		if (absent && !required) {
			*out = "";
			return 0;
		}
		return -1;
	}
	*out = arena_strdup(p->a, j->valuestring);
	return 0;
}

/* An integral JSON number in [lo, hi]; exact only up to 2^53. */
static int check_int(Parser *p, const cJSON *j, const char *path, int64_t lo, int64_t hi,
		     int64_t *out)
{
	if (!cJSON_IsNumber(j))
		return perr(p, path, "expected an integer, got %s", type_name(j));
	double v = j->valuedouble;
	if (!(v == floor(v)) || fabs(v) > 9007199254740992.0)
		return perr(p, path, "expected an integer, got %.17g", v);
	if (v < (double)lo || v > (double)hi)
		return perr(p, path, "%.0f is out of range [%lld, %lld]", v, (long long)lo,
			    (long long)hi);
	*out = (int64_t)v;
	return 0;
}

static int get_int(Parser *p, const cJSON *obj, const char *path, const char *key,
		   bool required, int64_t lo, int64_t hi, int64_t dflt, int64_t *out)
{
	bool absent;
	const cJSON *j = member(p, obj, path, key, cJSON_Number, required, &absent);
	if (!j) {
		if (absent && !required) {
			*out = dflt;
			return 0;
		}
		return -1;
	}
	char sp[PATH_MAX_];
	subpath(sp, path, key);
	return check_int(p, j, sp, lo, hi, out);
}

static int get_bool(Parser *p, const cJSON *obj, const char *path, const char *key, bool *out)
{
	bool absent;
	const cJSON *j = member(p, obj, path, key, cJSON_True | cJSON_False, false, &absent);
	if (!j) {
		*out = false;
		return absent ? 0 : -1;
	}
	*out = cJSON_IsTrue(j);
	return 0;
}

/* A [x, y, z] list of positive integers, each at most lim[i]. */
static int get_dim3(Parser *p, const cJSON *obj, const char *path, const char *key,
		    bool required, const int64_t lim[3], uint32_t out[3])
{
	bool absent;
	const cJSON *j = member(p, obj, path, key, cJSON_Array, required, &absent);
	out[0] = out[1] = out[2] = 0;
	if (!j)
		return absent && !required ? 0 : -1;
	char sp[PATH_MAX_], ip[PATH_MAX_];
	subpath(sp, path, key);
	if (cJSON_GetArraySize(j) != 3)
		return perr(p, sp, "expected 3 integers [x, y, z], got %d", cJSON_GetArraySize(j));
	for (int i = 0; i < 3; i++) {
		int64_t v;
		indexpath(ip, sp, i);
		if (check_int(p, cJSON_GetArrayItem(j, i), ip, 1, lim[i], &v) < 0)
			return -1;
		out[i] = (uint32_t)v;
	}
	return 0;
}

static const int64_t grid_lim[3] = {2147483647, 65535, 65535};
static const int64_t block_lim[3] = {1024, 1024, 64};

enum { ALIAS_PENDING = -2 };

/* ---- a plan for every size (fusec-plan/2) ---- */

static const cJSON *get_array(Parser *p, const cJSON *obj, const char *path, const char *key,
			      int *n);

/* A size written as an expression over the plan's named dims ("batch*seq"). */
static int parse_size(Parser *p, const cJSON *e, const char *path, DimExpr *out)
{
	if (ir_dim_parse(e->valuestring, p->pl->dim_name, p->pl->ndim_names, out) < 0)
		return perr(p, path, "\"%s\" is not a size over the plan's dims (integers, "
			    "their names, +, -, *)", e->valuestring);
	return 0;
}

/* "dims": [{"name", "min", "max"}, ...], the named dims a plan for every size
 * takes, each a distinct identifier with 1 <= min <= max. */
static int parse_dim_names(Parser *p, RtPlan *pl, const cJSON *root)
{
	int n;
	char ip[PATH_MAX_], sp[PATH_MAX_];
	const cJSON *ds = get_array(p, root, "", "dims", &n);
	if (!ds)
		return -1;
	if (n < 1 || n > IR_SYM_MAX)
		return perr(p, "dims", "%d named dims; a plan for every size has 1 to %d", n,
			    IR_SYM_MAX);
	const cJSON *it = ds->child;
	for (int i = 0; i < n; i++, it = it->next) {
		indexpath(ip, "dims", i);
		if (!cJSON_IsObject(it))
			return perr(p, ip, "expected an object, got %s", type_name(it));
		const char *name;
		if (get_string(p, it, ip, "name", true, &name) < 0 ||
		    get_int(p, it, ip, "min", true, 1, INT64_C(1) << 40, 0, &pl->dim_lo[i]) < 0 ||
		    get_int(p, it, ip, "max", true, pl->dim_lo[i], INT64_C(1) << 40, 0,
			    &pl->dim_hi[i]) < 0)
			return -1;
		subpath(sp, ip, "name");
		bool ok = name[0] && !(name[0] >= '0' && name[0] <= '9');
		for (const char *c = name; *c; c++)
			ok &= *c == '_' || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
			      (*c >= '0' && *c <= '9');
		if (!ok)
			return perr(p, sp, "\"%s\" is not a dim name (a letter or _, then letters, "
				    "digits or _)", name);
		for (int k = 0; k < i; k++)
			if (!strcmp(pl->dim_name[k], name))
				return perr(p, sp, "dim '%s' is listed twice", name);
		pl->dim_name[i] = name;
		pl->ndim_names = i + 1;
	}
	return 0;
}

/* A kernel's "launch" in a plan for every size: its rule and what the rule reads,
 * each bounded so that the rule's arithmetic stays in range (launch_rule.c). */
static int parse_rule(Parser *p, const cJSON *j, const char *path, RtKernel *k)
{
	bool absent;
	char sp[PATH_MAX_], ip[PATH_MAX_], ap[PATH_MAX_];
	const cJSON *r = member(p, j, path, "launch", cJSON_Object, true, &absent);
	if (!r)
		return -1;
	subpath(sp, path, "launch");
	const char *rule;
	int64_t block;
	if (get_string(p, r, sp, "rule", true, &rule) < 0 ||
	    get_int(p, r, sp, "block", true, 1, 1024, 0, &block) < 0)
		return -1;
	CgLaunch *l = &k->launch;
	int kind = cg_rule_parse(rule);
	if (kind < 0) {
		subpath(ip, sp, "rule");
		return perr(p, ip, "unknown launch rule \"%s\" (stride, reduce, matmul or conv)",
			    rule);
	}
	l->rule = (CgRule)kind;
	l->coop = kind != CG_RULE_NONE;
	l->block = (int)block;
	if (!l->coop) {
		int64_t vec, grid;
		int n;
		const cJSON *w = get_array(p, r, sp, "work", &n);
		if (!w || get_int(p, r, sp, "vec", true, 1, 64, 0, &vec) < 0 ||
		    get_int(p, r, sp, "max_grid", true, 1, INT32_MAX, 0, &grid) < 0)
			return -1;
		subpath(ap, sp, "work");
		if (n > IR_MAX_RANK)
			return perr(p, ap, "%d shape ids; the most is %d", n, IR_MAX_RANK);
		const cJSON *e = w->child;
		for (int i = 0; i < n; i++, e = e->next) {
			int64_t v;
			indexpath(ip, ap, i);
			if (check_int(p, e, ip, 0, INT32_MAX, &v) < 0)
				return -1;
			l->work[i] = (uint32_t)v;
		}
		l->nwork = n;
		l->vec = (int)vec;
		l->max_grid = grid;
		return 0;
	}
	int n;
	const cJSON *a = get_array(p, r, sp, "arg", &n);
	if (!a)
		return -1;
	subpath(ap, sp, "arg");
	if (n > 16)
		return perr(p, ap, "%d values; the most is 16", n);
	const cJSON *e = a->child;
	for (int i = 0; i < n; i++, e = e->next) {
		indexpath(ip, ap, i);
		if (check_int(p, e, ip, 0, INT64_C(1) << 40, &l->arg[i]) < 0)
			return -1;
	}
	/* what each rule divides by and indexes with (launch_rule.c) */
	const int64_t *v = l->arg;
	bool ok = true;
	if (kind == CG_RULE_REDUCE)
		ok = v[4] <= IR_MAX_RANK && v[3] < (v[4] ? v[4] : 1);
	else if (kind == CG_RULE_MATMUL)
		ok = v[0] >= 1 && v[1] >= 1 && v[4] <= IR_MAX_RANK &&
		     (8 + v[4] >= CG_LAUNCH_ARGS || v[8 + v[4]] <= IR_MM_GROUP_MAX) &&
		     (block == CG_MM_THREADS || block == CG_MM_WS_THREADS);
	else if (kind == CG_RULE_CONV)
		ok = v[0] >= 1 && v[1] >= 1 && v[6] >= 1 &&
		     (block == CG_MM_THREADS || block == CG_MM_WS_THREADS);
	if (!ok)
		return perr(p, ap, "the values do not fit the %s rule", rule);
	return 0;
}

static int parse_tensor(Parser *p, const cJSON *j, const char *path, RtTensor *t)
{
	if (!cJSON_IsObject(j))
		return perr(p, path, "expected an object, got %s", type_name(j));
	const char *dt, *role;
	if (get_string(p, j, path, "name", true, &t->name) < 0)
		return -1;
	char sp[PATH_MAX_], ip[PATH_MAX_];
	if (!t->name[0]) {
		subpath(sp, path, "name");
		return perr(p, sp, "tensor name is empty");
	}
	if (get_string(p, j, path, "dtype", true, &dt) < 0)
		return -1;
	if (ir_dtype_parse(dt, &t->dtype) < 0) {
		subpath(sp, path, "dtype");
		return perr(p, sp, "unknown dtype \"%s\"", dt);
	}
	bool absent;
	const cJSON *shape = member(p, j, path, "shape", cJSON_Array, true, &absent);
	if (!shape)
		return -1;
	subpath(sp, path, "shape");
	int rank = cJSON_GetArraySize(shape);
	if (rank > IR_MAX_RANK)
		return perr(p, sp, "rank %d is more than %d", rank, IR_MAX_RANK);
	t->rank = rank;
	t->n = 1;
	if (p->pl->ndim_names)
		t->sdim = ARENA_NEW(p->a, DimExpr, rank + 1);
	for (int i = 0; i < rank; i++) {
		indexpath(ip, sp, i);
		const cJSON *e = cJSON_GetArrayItem(shape, i);
		if (t->sdim && cJSON_IsString(e)) {
			if (parse_size(p, e, ip, &t->sdim[i]) < 0)
				return -1;
			t->dim[i] = 0;   /* known once bound */
			continue;
		}
		if (check_int(p, e, ip, 1, INT64_C(1) << 40, &t->dim[i]) < 0)
			return -1;
		if (t->sdim)
			t->sdim[i] = ir_dim_const(t->dim[i]);
		if (__builtin_mul_overflow(t->n, t->dim[i], &t->n) || t->n > (INT64_C(1) << 40))
			return perr(p, sp, "tensor '%s' is too large", t->name);
	}
	t->bytes = (uint64_t)t->n * (uint64_t)ir_dtype_size(t->dtype);
	if (t->sdim)
		t->n = t->bytes = 0;   /* known once bound */
	if (get_string(p, j, path, "role", true, &role) < 0)
		return -1;
	if (strcmp(role, "input") == 0)
		t->role = ROLE_INPUT;
	else if (strcmp(role, "output") == 0)
		t->role = ROLE_OUTPUT;
	else if (strcmp(role, "intermediate") == 0)
		t->role = ROLE_INTERMEDIATE;
	else {
		subpath(sp, path, "role");
		return perr(p, sp, "unknown role \"%s\" (input, output or intermediate)", role);
	}
	const cJSON *also = member(p, j, path, "output", cJSON_True | cJSON_False, false, &absent);
	if (!also && !absent)
		return -1;
	t->output = t->role == ROLE_OUTPUT || cJSON_IsTrue(also);
	const cJSON *buf = member(p, j, path, "buffer", cJSON_True | cJSON_False, true, &absent);
	if (!buf)
		return -1;
	t->buffer = cJSON_IsTrue(buf);
	const cJSON *co = member(p, j, path, "constant", cJSON_Number, false, &absent);
	if (!co && !absent)
		return -1;
	if (co) {
		int64_t off;
		subpath(sp, path, "constant");
		if (check_int(p, co, sp, 0, INT64_C(1) << 50, &off) < 0)
			return -1;
		if (t->role != ROLE_INPUT)
			return perr(p, sp, "only an input can be a constant");
		t->constant = true;
		t->offset = (uint64_t)off;
	}
	const char *alias;
	if (get_string(p, j, path, "alias", false, &alias) < 0)
		return -1;
	t->alias = -1;
	if (alias[0]) {
		subpath(sp, path, "alias");
		if (t->role == ROLE_INPUT)
			return perr(p, sp, "input tensor '%s' cannot be an alias", t->name);
		if (t->buffer)
			return perr(p, sp, "tensor '%s' is an alias, so it has no buffer of its "
				    "own (\"buffer\": false)", t->name);
		t->alias = ALIAS_PENDING;   /* resolve_alias, once every tensor is known */
	}
	if (!t->buffer && t->role != ROLE_INTERMEDIATE && t->alias == -1) {
		subpath(sp, path, "buffer");
		return perr(p, sp, "%s tensor '%s' must have a buffer",
			    t->role == ROLE_INPUT ? "input" : "output", t->name);
	}
	return 0;
}

/* Tensor i's "alias": a tensor with a buffer of its own, of the same dtype and
 * size (docs/plan-format.md); the runtime binds and reads i through that buffer. */
static int resolve_alias(Parser *p, RtPlan *pl, const cJSON *j, int i)
{
	char path[PATH_MAX_], sp[PATH_MAX_];
	indexpath(path, "tensors", i);
	subpath(sp, path, "alias");
	RtTensor *t = &pl->tensors[i];
	const char *name;
	if (get_string(p, j, path, "alias", true, &name) < 0)
		return -1;
	int k = rt_plan_find_tensor(pl, name);
	if (k < 0)
		return perr(p, sp, "unknown tensor '%s'", name);
	const RtTensor *of = &pl->tensors[k];
	if (!of->buffer)
		return perr(p, sp, "tensor '%s' is an alias of '%s', which has no buffer of its own",
			    t->name, name);
	if (of->dtype != t->dtype || (!pl->ndim_names && of->bytes != t->bytes))
		return perr(p, sp, "tensor '%s' (%s, %llu bytes) cannot alias '%s' (%s, %llu bytes)",
			    t->name, ir_dtype_name(t->dtype), (unsigned long long)t->bytes, name,
			    ir_dtype_name(of->dtype), (unsigned long long)of->bytes);
	t->alias = k;
	return 0;
}

static int parse_kernel(Parser *p, const cJSON *j, const char *path, RtKernel *k)
{
	if (!cJSON_IsObject(j))
		return perr(p, path, "expected an object, got %s", type_name(j));
	char sp[PATH_MAX_], ip[PATH_MAX_];
	if (get_string(p, j, path, "name", true, &k->name) < 0 ||
	    get_string(p, j, path, "entry", true, &k->entry) < 0)
		return -1;
	if (!k->name[0] || !k->entry[0]) {
		subpath(sp, path, k->name[0] ? "entry" : "name");
		return perr(p, sp, "empty kernel name");
	}
	bool absent;
	const cJSON *params = member(p, j, path, "params", cJSON_Array, true, &absent);
	if (!params)
		return -1;
	subpath(sp, path, "params");
	k->nparams = cJSON_GetArraySize(params);
	k->params = ARENA_NEW(p->a, RtParamType, k->nparams + 1);
	for (int i = 0; i < k->nparams; i++) {
		const cJSON *e = cJSON_GetArrayItem(params, i);
		indexpath(ip, sp, i);
		if (!cJSON_IsString(e))
			return perr(p, ip, "expected a string, got %s", type_name(e));
		if (param_parse(e->valuestring, &k->params[i]) < 0)
			return perr(p, ip, "unknown parameter type \"%s\" (ptr, i64, i32, f64 or f32)",
				    e->valuestring);
	}
	int64_t sh, cl;
	if (get_dim3(p, j, path, "block", false, block_lim, k->block) < 0 ||
	    get_int(p, j, path, "cluster", false, 1, 8, 1, &cl) < 0 ||
	    get_bool(p, j, path, "pdl", &k->pdl) < 0 ||
	    get_int(p, j, path, "shared_bytes", false, 0, INT32_MAX, 0, &sh) < 0)
		return -1;
	k->shared_bytes = (uint32_t)sh;
	k->cluster = (uint32_t)cl;
	if (p->pl->ndim_names)
		return parse_rule(p, j, path, k);
	return 0;
}

/* Names to indices: an open-addressing table of n + 1 entries' indices (-1: free),
 * twice as many slots as names, so that lookups stay constant-time and loading a
 * plan stays linear in its size. */
static uint32_t name_slot(const char *name, uint32_t mask)
{
	return (uint32_t)hash_u64(hash_bytes(HASH_SEED, name, strlen(name)), 0) & mask;
}

static void index_new(Arena *a, RtNameIndex *x, int n)
{
	uint32_t cap = 16;
	while (cap < 2u * (uint32_t)n + 2)
		cap *= 2;
	x->slot = ARENA_NEW(a, int, cap);
	memset(x->slot, 0xff, cap * sizeof *x->slot);
	x->mask = cap - 1;
}

/* Index of `name` among names[] (an array of structs `stride` bytes apart whose
 * first member is the name), or -1. */
static int index_find(const RtNameIndex *x, const void *base, size_t stride, const char *name)
{
	if (!x->slot)
		return -1;
	for (uint32_t h = name_slot(name, x->mask);; h = (h + 1) & x->mask) {
		int i = x->slot[h];
		if (i < 0)
			return -1;
		if (strcmp(*(const char *const *)((const char *)base + (size_t)i * stride), name) == 0)
			return i;
	}
}

/* Add entry i; returns the index of an entry with the same name already there, or -1. */
static int index_add(RtNameIndex *x, const void *base, size_t stride, int i)
{
	const char *name = *(const char *const *)((const char *)base + (size_t)i * stride);
	uint32_t h = name_slot(name, x->mask);
	for (; x->slot[h] >= 0; h = (h + 1) & x->mask)
		if (strcmp(*(const char *const *)((const char *)base + (size_t)x->slot[h] * stride),
			   name) == 0)
			return x->slot[h];
	x->slot[h] = i;
	return -1;
}

_Static_assert(offsetof(RtTensor, name) == 0 && offsetof(RtKernel, name) == 0,
	       "the name index reads names at the start of each entry");

static int find_kernel(const RtPlan *pl, const char *name)
{
	return index_find(&pl->kernel_index, pl->kernels, sizeof *pl->kernels, name);
}

int rt_plan_find_tensor(const RtPlan *p, const char *name)
{
	if (!p->tensor_index.slot) {   /* a plan built by hand, without the index */
		for (int i = 0; i < p->ntensors; i++)
			if (strcmp(p->tensors[i].name, name) == 0)
				return i;
		return -1;
	}
	return index_find(&p->tensor_index, p->tensors, sizeof *p->tensors, name);
}

/* A float argument: a number, or "inf", "-inf", "nan". */
static int parse_float(Parser *p, const cJSON *v, const char *path, double *out)
{
	if (cJSON_IsNumber(v)) {
		*out = v->valuedouble;
		return 0;
	}
	if (cJSON_IsString(v)) {
		if (strcmp(v->valuestring, "inf") == 0) { *out = INFINITY; return 0; }
		if (strcmp(v->valuestring, "-inf") == 0) { *out = -INFINITY; return 0; }
		if (strcmp(v->valuestring, "nan") == 0) { *out = NAN; return 0; }
		return perr(p, path, "expected a number, \"inf\", \"-inf\" or \"nan\", got \"%s\"",
			    v->valuestring);
	}
	return perr(p, path, "expected a number, got %s", type_name(v));
}

/* An integer array member `key` of n entries in [lo, hi]. */
static int get_ints(Parser *p, const cJSON *obj, const char *path, const char *key, int n,
		    int64_t lo, int64_t hi, int64_t *out)
{
	bool absent;
	char sp[PATH_MAX_], ip[PATH_MAX_];
	const cJSON *a = member(p, obj, path, key, cJSON_Array, true, &absent);
	if (!a)
		return -1;
	subpath(sp, path, key);
	if (cJSON_GetArraySize(a) != n)
		return perr(p, sp, "expected %d entries, got %d", n, cJSON_GetArraySize(a));
	const cJSON *e = a->child;
	for (int k = 0; k < n; k++, e = e->next) {
		indexpath(ip, sp, k);
		if (check_int(p, e, ip, lo, hi, &out[k]) < 0)
			return -1;
	}
	return 0;
}

/* Whether map tm (dims and strides set) stays inside tensor t, whatever the plan
 * says: dims 1 to 2^32, strides multiples of 16 below 2^40 (the driver's limits),
 * and no element past the tensor's bytes. 0, or -1 with the reason in why. */
static int tmap_check(const RtTmap *tm, const RtTensor *t, char *why, size_t n)
{
	int es = ir_dtype_size(t->dtype);
	uint64_t reach = 0;
	for (int k = 0; k < tm->rank; k++) {
		if (tm->dim[k] < 1 || tm->dim[k] > (UINT64_C(1) << 32)) {
			snprintf(why, n, "dim %d of the map is %llu: it must be 1 to 2^32", k,
				 (unsigned long long)tm->dim[k]);
			return -1;
		}
		if (k == 0)
			continue;
		if (tm->stride[k] % 16 || tm->stride[k] < 16 || tm->stride[k] >= (UINT64_C(1) << 40)) {
			snprintf(why, n, "stride %llu is not a multiple of 16 bytes below 2^40",
				 (unsigned long long)tm->stride[k]);
			return -1;
		}
		/* below 2^32 and 2^40: no product or sum here overflows */
		reach += (tm->dim[k] - 1) * tm->stride[k];
	}
	reach += tm->dim[0] * (uint64_t)es;
	if (reach > t->bytes) {
		snprintf(why, n, "the map reaches %llu bytes into tensor '%s', which has %llu",
			 (unsigned long long)reach, t->name, (unsigned long long)t->bytes);
		return -1;
	}
	return 0;
}

/* Entry k of a map's dims or strides in a plan for every size: a number, or
 * {"dim": ID} (dims) / {"dims": [ID, ...], "bytes": N} (strides) over the launch's
 * ndims shape ids; the map is then set at bind (RtTmap.sym). */
static int tmap_entry(Parser *p, const cJSON *e, const char *ep, bool stride, int ndims,
		      RtTmap *tm, int k)
{
	int64_t v;
	if (!cJSON_IsObject(e)) {
		if (check_int(p, e, ep, stride ? 16 : 1, stride ? (INT64_C(1) << 40) - 16 :
			      INT64_C(1) << 32, &v) < 0)
			return -1;
		if (stride)
			tm->sbytes[k] = (uint64_t)v;
		else
			tm->dim[k] = (uint64_t)v;
		return 0;
	}
	tm->sym = true;
	char sp[PATH_MAX_], ip[PATH_MAX_];
	if (!stride) {
		if (get_int(p, e, ep, "dim", true, 0, ndims - 1, 0, &v) < 0)
			return -1;
		tm->dim_id[k] = (int)v;
		return 0;
	}
	int n;
	const cJSON *ids = get_array(p, e, ep, "dims", &n);
	if (!ids)
		return -1;
	subpath(sp, ep, "dims");
	if (n > IR_MAX_RANK)
		return perr(p, sp, "%d sizes; a stride is the product of at most %d", n,
			    IR_MAX_RANK);
	tm->nsid[k] = n;
	for (int i = 0; i < n; i++) {
		indexpath(ip, sp, i);
		if (check_int(p, cJSON_GetArrayItem(ids, i), ip, 0, ndims - 1, &v) < 0)
			return -1;
		tm->sid[k][i] = (int)v;
	}
	if (get_int(p, e, ep, "bytes", true, 1, 16, 0, &v) < 0)
		return -1;
	tm->sbytes[k] = (uint64_t)v;
	return 0;
}

/* {"tmap": {"tensor", "dims", "strides", "box"}} (docs/plan-format.md): a map the
 * TMA copies by, which must stay inside the tensor's buffer, so that no launch can
 * read past it whatever the plan says (tmap_check: here, or at bind in a plan for
 * every size, whose maps name the launch's sizes, ndims of them). */
static int parse_tmap(Parser *p, RtPlan *pl, const cJSON *v, const char *vp, int ndims,
		      RtArg *arg)
{
	if (!cJSON_IsObject(v))
		return perr(p, vp, "expected an object, got %s", type_name(v));
	const char *name;
	char sp[PATH_MAX_], ep[PATH_MAX_];
	if (get_string(p, v, vp, "tensor", true, &name) < 0)
		return -1;
	subpath(sp, vp, "tensor");
	arg->tensor = rt_plan_find_tensor(pl, name);
	if (arg->tensor < 0)
		return perr(p, sp, "unknown tensor '%s'", name);
	const RtTensor *t = &pl->tensors[arg->tensor];
	if (!t->buffer && t->alias < 0)
		return perr(p, sp, "tensor '%s' has no buffer", name);
	if (t->dtype != DT_F16 && t->dtype != DT_BF16)
		return perr(p, sp, "tensor '%s' is %s: tensor maps take f16 and bf16", name,
			    ir_dtype_name(t->dtype));
	int rank, ns;
	const cJSON *dims = get_array(p, v, vp, "dims", &rank);
	if (!dims)
		return -1;
	if (rank < 2 || rank > RT_TMAP_MAXRANK) {
		subpath(sp, vp, "dims");
		return perr(p, sp, "%d dims; a tensor map has 2 to %d", rank, RT_TMAP_MAXRANK);
	}
	const cJSON *strides = get_array(p, v, vp, "strides", &ns);
	if (!strides)
		return -1;
	subpath(sp, vp, "strides");
	if (ns != rank - 1)
		return perr(p, sp, "%d strides for %d dims: want %d", ns, rank, rank - 1);
	RtTmap *tm = ARENA_NEW(p->a, RtTmap, 1);
	tm->rank = rank;
	int64_t box[RT_TMAP_MAXRANK];
	for (int k = 0; k < rank; k++) {
		tm->dim_id[k] = -1;
		subpath(sp, vp, "dims");
		indexpath(ep, sp, k);
		const cJSON *e = cJSON_GetArrayItem(dims, k);
		if ((cJSON_IsObject(e) && !pl->ndim_names) ? perr(p, ep, "expected a number: only "
				"a plan for every size names sizes") < 0 :
		    tmap_entry(p, e, ep, false, ndims, tm, k) < 0)
			return -1;
		if (k == 0)
			continue;
		subpath(sp, vp, "strides");
		indexpath(ep, sp, k - 1);
		e = cJSON_GetArrayItem(strides, k - 1);
		if ((cJSON_IsObject(e) && !pl->ndim_names) ? perr(p, ep, "expected a number: only "
				"a plan for every size names sizes") < 0 :
		    tmap_entry(p, e, ep, true, ndims, tm, k) < 0)
			return -1;
		tm->stride[k] = tm->sbytes[k];
	}
	if (get_ints(p, v, vp, "box", rank, 1, 256, box) < 0)
		return -1;
	int es = ir_dtype_size(t->dtype);
	/* the kernels' panels: 128 bytes of the contiguous dim, the 128-byte swizzle */
	subpath(sp, vp, "box");
	if (box[0] * es != 128)
		return perr(p, sp, "the box's first dim is %lld elements: it must be 128 bytes "
			    "(%d elements)", (long long)box[0], 128 / es);
	for (int k = 0; k < rank; k++)
		tm->box[k] = (uint32_t)box[k];
	tm->dtype = t->dtype == DT_F16 ? 6 : 9;   /* CU_TENSOR_MAP_DATA_TYPE_FLOAT16, BFLOAT16 */
	arg->tm = tm;
	char why[200];
	if (!tm->sym && !pl->ndim_names && tmap_check(tm, t, why, sizeof why) < 0)
		return perr(p, vp, "%s", why);
	/* a plan for every size: its tensors' bytes and the map's sizes are known at
	 * bind (tmap_bind) */
	tm->sym = tm->sym || pl->ndim_names;
	return 0;
}

static int parse_arg(Parser *p, RtPlan *pl, const RtKernel *k, int i, const cJSON *j,
		     const char *path, int ndims, RtArg *arg)
{
	RtParamType want = k->params[i];
	const char *wkey = want == RT_P_PTR ? "tensor" : rt_param_name(want);
	if (!cJSON_IsObject(j) || cJSON_GetArraySize(j) != 1)
		return perr(p, path, "expected {\"%s\": …} for parameter %d (%s) of kernel '%s'",
			    wkey, i, rt_param_name(want), k->name);
	const cJSON *v = j->child;
	arg->dim = -1;
	if (pl->ndim_names && want == RT_P_I64 && strcmp(v->string, "dim") == 0) {
		/* a plan for every size: the launch's size of a shape id */
		char vp[PATH_MAX_];
		subpath(vp, path, "dim");
		arg->type = want;
		arg->tensor = -1;
		if (check_int(p, v, vp, 0, INT32_MAX, &arg->i) < 0)
			return -1;
		arg->dim = (int)arg->i;
		return 0;
	}
	if (pl->ndim_names && want == RT_P_PTR && strcmp(v->string, "scratch") == 0) {
		/* a plan for every size: the workspace the rule asks for */
		char vp[PATH_MAX_];
		subpath(vp, path, "scratch");
		if (!cJSON_IsTrue(v))
			return perr(p, vp, "expected true (the rule's bytes), got %s", type_name(v));
		arg->type = want;
		arg->tensor = pl->ntensors;
		arg->dim = -2;
		return 0;
	}
	if (want == RT_P_PTR && strcmp(v->string, "scratch") == 0) {
		/* a zero-filled workspace of the launch (docs/plan-format.md) */
		char vp[PATH_MAX_];
		subpath(vp, path, "scratch");
		arg->type = want;
		arg->tensor = pl->ntensors;
		if (check_int(p, v, vp, 1, INT64_MAX / 2, &arg->i) < 0)
			return -1;
		if ((uint64_t)arg->i > pl->scratch_bytes)
			pl->scratch_bytes = (uint64_t)arg->i;
		return 0;
	}
	if (strcmp(v->string, wkey) != 0)
		return perr(p, path, "expected {\"%s\": …} for parameter %d (%s) of kernel '%s', "
			    "got {\"%s\": …}", wkey, i, rt_param_name(want), k->name, v->string);
	char vp[PATH_MAX_];
	subpath(vp, path, wkey);
	arg->type = want;
	arg->tensor = -1;
	switch (want) {
	case RT_P_PTR:
		if (!cJSON_IsString(v))
			return perr(p, vp, "expected a tensor name, got %s", type_name(v));
		arg->tensor = rt_plan_find_tensor(pl, v->valuestring);
		if (arg->tensor < 0)
			return perr(p, vp, "unknown tensor '%s'", v->valuestring);
		if (!pl->tensors[arg->tensor].buffer && pl->tensors[arg->tensor].alias < 0)
			return perr(p, vp, "tensor '%s' is bound to a pointer but has no buffer",
				    v->valuestring);
		return 0;
	case RT_P_I64:
		return check_int(p, v, vp, INT64_MIN, INT64_MAX, &arg->i);
	case RT_P_I32:
		return check_int(p, v, vp, INT32_MIN, INT32_MAX, &arg->i);
	case RT_P_F64:
	case RT_P_F32:
		return parse_float(p, v, vp, &arg->f);
	case RT_P_TMAP:
		return parse_tmap(p, pl, v, vp, ndims, arg);
	default:
		die("bad parameter type %d", (int)want);
	}
}

static int parse_launch(Parser *p, RtPlan *pl, const cJSON *j, const char *path, RtLaunch *l)
{
	if (!cJSON_IsObject(j))
		return perr(p, path, "expected an object, got %s", type_name(j));
	const char *kname;
	char sp[PATH_MAX_], ip[PATH_MAX_];
	if (get_string(p, j, path, "kernel", true, &kname) < 0)
		return -1;
	l->kernel = find_kernel(pl, kname);
	if (l->kernel < 0) {
		subpath(sp, path, "kernel");
		return perr(p, sp, "unknown kernel '%s'", kname);
	}
	const RtKernel *k = &pl->kernels[l->kernel];
	int64_t sh = 0;
	if (pl->ndim_names) {
		/* a plan for every size: the sizes; grid, block and shared bytes come
		 * from the kernel's rule when it is bound (rt_plan_bind) */
		bool absent;
		const cJSON *ds = member(p, j, path, "dims", cJSON_Array, true, &absent);
		if (!ds)
			return -1;
		subpath(sp, path, "dims");
		l->ndims = cJSON_GetArraySize(ds) + 1;
		if (l->ndims > 1 << 16)
			return perr(p, sp, "%d sizes; the most is 65535", l->ndims - 1);
		l->sdims = ARENA_NEW(p->a, DimExpr, l->ndims);
		l->sdims[0] = ir_dim_const(1);
		const cJSON *e = ds->child;
		for (int i = 1; i < l->ndims; i++, e = e->next) {
			indexpath(ip, sp, i - 1);
			int64_t v;
			if (cJSON_IsString(e) ? parse_size(p, e, ip, &l->sdims[i]) < 0
					      : check_int(p, e, ip, 1, INT64_C(1) << 40, &v) < 0)
				return -1;
			if (!cJSON_IsString(e))
				l->sdims[i] = ir_dim_const(v);
		}
		memcpy(l->block, k->block, sizeof l->block);
	} else if (get_dim3(p, j, path, "grid", true, grid_lim, l->grid) < 0 ||
	    get_dim3(p, j, path, "block", k->block[0] == 0, block_lim, l->block) < 0 ||
	    get_int(p, j, path, "shared_bytes", false, 0, INT32_MAX, k->shared_bytes, &sh) < 0)
		return -1;
	if (l->block[0] == 0)
		memcpy(l->block, k->block, sizeof l->block);
	if (!pl->ndim_names && l->grid[0] % k->cluster) {
		subpath(sp, path, "grid");
		return perr(p, sp, "%u blocks along x, not a multiple of kernel '%s''s clusters "
			    "of %u", l->grid[0], k->name, k->cluster);
	}
	if (!pl->ndim_names && (uint64_t)l->block[0] * l->block[1] * l->block[2] > 1024) {
		subpath(sp, path, "block");
		return perr(p, sp, "%u×%u×%u threads is more than 1024 per block",
			    l->block[0], l->block[1], l->block[2]);
	}
	l->shared_bytes = (uint32_t)sh;
	bool absent;
	const cJSON *args = member(p, j, path, "args", cJSON_Array, true, &absent);
	if (!args)
		return -1;
	subpath(sp, path, "args");
	l->nargs = cJSON_GetArraySize(args);
	if (l->nargs != k->nparams)
		return perr(p, sp, "%d arguments for the %d parameters of kernel '%s'",
			    l->nargs, k->nparams, k->name);
	l->args = ARENA_NEW(p->a, RtArg, l->nargs + 1);
	for (int i = 0; i < l->nargs; i++) {
		indexpath(ip, sp, i);
		if (parse_arg(p, pl, k, i, cJSON_GetArrayItem(args, i), ip, l->ndims, &l->args[i]) < 0)
			return -1;
		if (l->args[i].dim >= l->ndims && pl->ndim_names)
			return perr(p, ip, "shape id %d, but the launch has %d sizes", l->args[i].dim,
				    l->ndims - 1);
	}
	return 0;
}

/* The array member `key`, required; its size in *n. */
static const cJSON *get_array(Parser *p, const cJSON *obj, const char *path, const char *key,
			      int *n)
{
	bool absent;
	const cJSON *j = member(p, obj, path, key, cJSON_Array, true, &absent);
	*n = j ? cJSON_GetArraySize(j) : 0;
	return j;
}

static int get_sha256(Parser *p, const cJSON *root, const char *path, const char *key,
		      const char *what, const char **out)
{
	if (!cJSON_GetObjectItemCaseSensitive(root, key))
		return perr(p, path, "missing key \"%s\": a plan must record the SHA-256 of its %s, "
			    "so that no other file is used in its place (fusec compile writes it)",
			    key, what);
	if (get_string(p, root, path, key, true, out) < 0)
		return -1;
	char sp[PATH_MAX_];
	subpath(sp, path, key);
	if (strspn(*out, "0123456789abcdef") != 64 || (*out)[64])
		return perr(p, sp, "expected 64 lowercase hex digits");
	return 0;
}

/* A file beside the plan, from its plain name. */
static const char *beside(Parser *p, const char *name)
{
	const char *slash = strrchr(p->file, '/');
	return slash ? arena_printf(p->a, "%.*s/%s", (int)(slash - p->file), p->file, name)
		     : name;
}

/* The PTX file of the top level or of a variant at path: "ptx" (a plain name) and
 * "ptx_sha256", into pl's current variant. */
static int parse_ptx(Parser *p, RtPlan *pl, const cJSON *obj, const char *path)
{
	const char *ptx;
	char sp[PATH_MAX_];
	subpath(sp, path, "ptx");
	if (get_string(p, obj, path, "ptx", true, &ptx) < 0)
		return -1;
	if (!ptx[0])
		return perr(p, sp, "empty PTX file name");
	if (!plain_file_name(ptx))
		return perr(p, sp, "\"%s\" is not a plain file name: the PTX file must lie "
			    "beside the plan", ptx);
	if (get_sha256(p, obj, path, "ptx_sha256", "PTX file", &pl->ptx_sha256) < 0)
		return -1;
	pl->ptx_path = beside(p, ptx);
	return 0;
}

/* The "kernels" of the top level or of a variant at path, into pl's current
 * variant, each name once. */
static int parse_kernels(Parser *p, RtPlan *pl, const cJSON *obj, const char *path)
{
	char sp[PATH_MAX_], ip[PATH_MAX_];
	bool absent;
	const cJSON *ks = member(p, obj, path, "kernels", cJSON_Array, true, &absent);
	if (!ks)
		return -1;
	subpath(sp, path, "kernels");
	pl->nkernels = cJSON_GetArraySize(ks);
	pl->kernels = ARENA_NEW(p->a, RtKernel, pl->nkernels + 1);
	pl->kernel_index = (RtNameIndex){0};
	index_new(p->a, &pl->kernel_index, pl->nkernels);
	const cJSON *it = ks->child;
	for (int i = 0; i < pl->nkernels; i++, it = it->next) {
		indexpath(ip, sp, i);
		if (parse_kernel(p, it, ip, &pl->kernels[i]) < 0)
			return -1;
		int k = index_add(&pl->kernel_index, pl->kernels, sizeof *pl->kernels, i);
		if (k >= 0)
			return perr(p, ip, "kernel '%s' is listed twice (also %s[%d])",
				    pl->kernels[i].name, sp, k);
	}
	return 0;
}

/* The plan's current variant into v. */
static void keep_variant(const RtPlan *pl, RtVariant *v)
{
	*v = (RtVariant){pl->arch, pl->ptx_path, pl->ptx_sha256, pl->kernels, pl->nkernels,
			 pl->launches, pl->nlaunches, pl->scratch_bytes, pl->kernel_index,
			 NULL, NULL};
}

/* A variant's "dims": the plan's named dims in order, each with a range inside the
 * plan's. */
static int parse_variant_dims(Parser *p, RtPlan *pl, const cJSON *j, const char *path,
			      int64_t **lo, int64_t **hi)
{
	bool absent;
	char dp[PATH_MAX_], ip[PATH_MAX_], sp[PATH_MAX_];
	const cJSON *ds = member(p, j, path, "dims", cJSON_Array, false, &absent);
	*lo = *hi = NULL;
	if (!ds)
		return absent ? 0 : -1;
	subpath(dp, path, "dims");
	int n = cJSON_GetArraySize(ds);
	if (!pl->ndim_names || n != pl->ndim_names)
		return perr(p, dp, "%d ranges, but the plan has %d named dims", n, pl->ndim_names);
	*lo = ARENA_NEW(p->a, int64_t, n);
	*hi = ARENA_NEW(p->a, int64_t, n);
	const cJSON *it = ds->child;
	for (int i = 0; i < n; i++, it = it->next) {
		indexpath(ip, dp, i);
		const char *name;
		if (!cJSON_IsObject(it))
			return perr(p, ip, "expected an object, got %s", type_name(it));
		if (get_string(p, it, ip, "name", true, &name) < 0 ||
		    get_int(p, it, ip, "min", true, pl->dim_lo[i], pl->dim_hi[i], 0, &(*lo)[i]) < 0 ||
		    get_int(p, it, ip, "max", true, (*lo)[i], pl->dim_hi[i], 0, &(*hi)[i]) < 0)
			return -1;
		subpath(sp, ip, "name");
		if (strcmp(name, pl->dim_name[i]))
			return perr(p, sp, "\"%s\", but the plan's dim %d is '%s'", name, i,
				    pl->dim_name[i]);
	}
	return 0;
}

void rt_plan_use(RtPlan *p, int v)
{
	const RtVariant *x = &p->variants[v];
	p->arch = x->arch;
	p->ptx_path = x->ptx_path;
	p->ptx_sha256 = x->ptx_sha256;
	p->kernels = x->kernels;
	p->nkernels = x->nkernels;
	p->launches = x->launches;
	p->nlaunches = x->nlaunches;
	p->scratch_bytes = x->scratch_bytes;
	p->kernel_index = x->kernel_index;
}

/* One of "variants" (docs/plan-format.md, "Several arches"): an arch of its own,
 * its PTX, its kernels and one launch for each of the top level's, in order (the
 * steps are the top level's). Parsed into pl's current variant. */
static int parse_variant(Parser *p, RtPlan *pl, const cJSON *j, const char *path, int nv,
			 int64_t **lo, int64_t **hi)
{
	char sp[PATH_MAX_], lp[PATH_MAX_];
	if (!cJSON_IsObject(j))
		return perr(p, path, "expected an object, got %s", type_name(j));
	bool exact;
	subpath(sp, path, "arch");
	if (get_string(p, j, path, "arch", true, &pl->arch) < 0)
		return -1;
	if (arch_number(pl->arch, &exact) < 0)
		return perr(p, sp, "\"%s\" is not an arch (sm_80, sm_90a, ...)", pl->arch);
	if (parse_variant_dims(p, pl, j, path, lo, hi) < 0)
		return -1;
	for (int k = 0; k < nv; k++) {
		const RtVariant *o = &pl->variants[k];
		bool same = !strcmp(o->arch, pl->arch) && !o->lo == !*lo;
		for (int i = 0; same && *lo && i < pl->ndim_names; i++)
			same = o->lo[i] == (*lo)[i] && o->hi[i] == (*hi)[i];
		if (same)
			return perr(p, sp, "the plan has a variant for %s%s already", pl->arch,
				    *lo ? " and these sizes" : "");
	}
	if (parse_ptx(p, pl, j, path) < 0)
		return -1;
	for (int k = 0; k < nv; k++)
		if (!strcmp(pl->variants[k].ptx_path, pl->ptx_path)) {
			subpath(sp, path, "ptx");
			return perr(p, sp, "another variant's PTX file has this name");
		}
	if (parse_kernels(p, pl, j, path) < 0)
		return -1;
	int n;
	const cJSON *ls = get_array(p, j, path, "launches", &n);
	if (!ls)
		return -1;
	const RtVariant *top = &pl->variants[0];
	subpath(sp, path, "launches");
	if (n != top->nlaunches)
		return perr(p, sp, "%d launches, but the plan's steps have %d", n, top->nlaunches);
	pl->launches = ARENA_NEW(p->a, RtLaunch, n + 1);
	pl->nlaunches = n;
	pl->scratch_bytes = 0;
	const cJSON *it = ls->child;
	for (int i = 0; i < n; i++, it = it->next) {
		indexpath(lp, sp, i);
		pl->launches[i].step = top->launches[i].step;
		if (parse_launch(p, pl, it, lp, &pl->launches[i]) < 0)
			return -1;
	}
	return 0;
}

/* The top level is variant 0; "variants", when present, add the others. A plan
 * with variants names the arch of each, its top level's too. */
static int parse_variants(Parser *p, RtPlan *pl, const cJSON *root)
{
	bool absent;
	const cJSON *vs = member(p, root, "", "variants", cJSON_Array, false, &absent);
	if (!vs && !absent)
		return -1;
	int n = vs ? cJSON_GetArraySize(vs) : 0;
	pl->variants = ARENA_NEW(p->a, RtVariant, n + 1);
	pl->nvariants = 1;
	keep_variant(pl, &pl->variants[0]);
	bool exact;
	if (n && !pl->arch[0])
		return perr(p, "", "missing key \"arch\": a plan with variants names the arch "
			    "of its top level");
	if (n && arch_number(pl->arch, &exact) < 0)
		return perr(p, "arch", "\"%s\" is not an arch (sm_80, sm_90a, ...)", pl->arch);
	const cJSON *it = vs ? vs->child : NULL;
	for (int i = 0; i < n; i++, it = it->next) {
		char ip[PATH_MAX_];
		indexpath(ip, "variants", i);
		int64_t *lo = NULL, *hi = NULL;
		if (parse_variant(p, pl, it, ip, pl->nvariants, &lo, &hi) < 0)
			return -1;
		keep_variant(pl, &pl->variants[pl->nvariants]);
		pl->variants[pl->nvariants].lo = lo;
		pl->variants[pl->nvariants++].hi = hi;
	}
	rt_plan_use(pl, 0);
	return 0;
}

int rt_plan_pick(const RtPlan *p, int major, int minor)
{
	int have = major * 10 + minor, best = -1, best_rank = 0;
	for (int v = 0; v < p->nvariants; v++) {
		bool exact;
		int need = arch_number(p->variants[v].arch, &exact);
		if (need > 0 && (exact ? have != need : have < need))
			continue;
		/* higher arches first; of one number, the exact one (sm_90a) */
		int rank = need > 0 ? 2 * need + exact + 1 : 0;
		if (best < 0 || rank > best_rank) {
			best = v;
			best_rank = rank;
		}
	}
	return best < 0 ? best : rt_plan_pick_range(p, best);
}

int rt_plan_pick_range(const RtPlan *p, int best)
{
	if (!p->ndim_names || !p->bound)
		return best;
	double width = INFINITY;
	int pick = best;
	for (int v = 0; v < p->nvariants; v++) {
		const RtVariant *x = &p->variants[v];
		if (!x->lo || strcmp(x->arch, p->variants[best].arch))
			continue;
		double w = 1;
		bool holds = true;
		for (int k = 0; k < p->ndim_names; k++) {
			holds &= x->lo[k] <= p->dim_val[k] && p->dim_val[k] <= x->hi[k];
			w *= (double)(x->hi[k] - x->lo[k] + 1);
		}
		if (holds && w < width) {
			width = w;
			pick = v;
		}
	}
	return pick;
}

static int parse_root(Parser *p, RtPlan *pl, const cJSON *root)
{
	char ip[PATH_MAX_], lp[PATH_MAX_];
	if (!cJSON_IsObject(root))
		return perr(p, "", "a plan is a JSON object, got %s", type_name(root));
	const char *format;
	if (get_string(p, root, "", "format", true, &format) < 0)
		return -1;
	bool every = strcmp(format, "fusec-plan/2") == 0;
	if (strcmp(format, "fusec-plan/1") != 0 && !every)
		return perr(p, "format", "unsupported plan format \"%s\" (expected "
			    "\"fusec-plan/1\" or \"fusec-plan/2\")", format);
	pl->bound = !every;
	if (every && parse_dim_names(p, pl, root) < 0)
		return -1;
	if (get_string(p, root, "", "compiler", false, &pl->compiler) < 0 ||
	    get_string(p, root, "", "arch", false, &pl->arch) < 0 ||
	    parse_ptx(p, pl, root, "") < 0)
		return -1;
	const char *weights = NULL;
	if (get_string(p, root, "", "weights", false, &weights) < 0)
		return -1;
	if (weights[0] && !plain_file_name(weights))
		return perr(p, "weights", "the weights file must be a plain file name beside the plan");
	pl->weights_sha256 = "";
	if (!weights[0] && cJSON_GetObjectItemCaseSensitive(root, "weights_sha256"))
		return perr(p, "weights_sha256", "the plan names no weights file");
	if (weights[0] && get_sha256(p, root, "", "weights_sha256", "weights file",
				     &pl->weights_sha256) < 0)
		return -1;
	if (weights[0])
		pl->weights_path = beside(p, weights);

	const cJSON *ts = get_array(p, root, "", "tensors", &pl->ntensors);
	if (!ts)
		return -1;
	pl->tensors = ARENA_NEW(p->a, RtTensor, pl->ntensors + 1);
	index_new(p->a, &pl->tensor_index, pl->ntensors);
	const cJSON *it = ts->child;
	for (int i = 0; i < pl->ntensors; i++, it = it->next) {
		indexpath(ip, "tensors", i);
		if (parse_tensor(p, it, ip, &pl->tensors[i]) < 0)
			return -1;
		int k = index_add(&pl->tensor_index, pl->tensors, sizeof *pl->tensors, i);
		if (k >= 0)
			return perr(p, ip, "tensor '%s' is listed twice (also tensors[%d])",
				    pl->tensors[i].name, k);
	}

	it = ts->child;
	for (int i = 0; i < pl->ntensors; i++, it = it->next)
		if (pl->tensors[i].alias != -1 && resolve_alias(p, pl, it, i) < 0)
			return -1;

	if (parse_kernels(p, pl, root, "") < 0)
		return -1;

	const cJSON *ss = get_array(p, root, "", "steps", &pl->nsteps);
	if (!ss)
		return -1;
	pl->steps = ARENA_NEW(p->a, RtStep, pl->nsteps + 1);
	int total = 0;
	it = ss->child;
	for (int i = 0; i < pl->nsteps; i++, it = it->next) {
		const cJSON *s = it;
		indexpath(ip, "steps", i);
		if (!cJSON_IsObject(s))
			return perr(p, ip, "expected an object, got %s", type_name(s));
		int n;
		if (!get_array(p, s, ip, "launches", &n))
			return -1;
		total += n;
	}
	pl->launches = ARENA_NEW(p->a, RtLaunch, total + 1);
	it = ss->child;
	for (int i = 0; i < pl->nsteps; i++, it = it->next) {
		const cJSON *s = it;
		RtStep *st = &pl->steps[i];
		int64_t seg, plan;
		indexpath(ip, "steps", i);
		if (get_int(p, s, ip, "segment", false, 0, INT32_MAX, -1, &seg) < 0 ||
		    get_int(p, s, ip, "plan", false, 0, INT32_MAX, -1, &plan) < 0 ||
		    get_string(p, s, ip, "mode", false, &st->mode) < 0)
			return -1;
		st->segment = (int)seg;
		st->plan = (int)plan;
		const cJSON *ls = cJSON_GetObjectItemCaseSensitive(s, "launches");
		st->first_launch = pl->nlaunches;
		st->nlaunches = cJSON_GetArraySize(ls);
		const cJSON *lit = ls->child;
		for (int k = 0; k < st->nlaunches; k++, lit = lit->next) {
			char sp[PATH_MAX_];
			subpath(sp, ip, "launches");
			indexpath(lp, sp, k);
			RtLaunch *l = &pl->launches[pl->nlaunches++];
			l->step = i;
			if (parse_launch(p, pl, lit, lp, l) < 0)
				return -1;
		}
	}
	return parse_variants(p, pl, root);
}

static int line_of(const char *text, const char *at)
{
	int line = 1;
	for (const char *c = text; c < at; c++)
		line += *c == '\n';
	return line;
}

RtPlan *rt_plan_parse(const char *file, const char *text, size_t len, Diag *d)
{
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, false);
	if (!root) {
		int line = end && end >= text && end <= text + len ? line_of(text, end) : 0;
		diag_set(d, file, line, 0, "the plan is not valid JSON");
		return NULL;
	}
	while (end && end < text + len && (*end == ' ' || *end == '\n' || *end == '\t' || *end == '\r'))
		end++;
	if (end && end < text + len && *end) {
		diag_set(d, file, line_of(text, end), 0, "unexpected text after the plan's JSON object");
		cJSON_Delete(root);
		return NULL;
	}
	Arena *a = arena_new();
	RtPlan *pl = ARENA_NEW(a, RtPlan, 1);
	pl->arena = a;
	pl->path = arena_strdup(a, file);
	Parser p = {pl->path, d, a, pl};
	int rc = parse_root(&p, pl, root);
	cJSON_Delete(root);
	if (rc < 0) {
		arena_free(a);
		return NULL;
	}
	return pl;
}

static bool has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);
	return n >= m && strcmp(s + n - m, suf) == 0;
}

/* The one *.plan.json in a folder, as a malloc'd path; NULL if `dir` is not a
 * folder, or (with *failed) if it holds no plan or several. */
static char *find_plan_in(const char *dir, Diag *d, bool *failed)
{
	*failed = false;
	DIR *dp = opendir(dir);
	if (!dp)
		return NULL;
	char *found = NULL;
	int count = 0;
	struct dirent *e;
	while ((e = readdir(dp))) {
		if (!has_suffix(e->d_name, ".plan.json") || count++ > 0)
			continue;
		found = xmalloc(strlen(dir) + strlen(e->d_name) + 2);
		sprintf(found, "%s/%s", dir, e->d_name);
	}
	closedir(dp);
	if (count == 1)
		return found;
	*failed = true;
	if (count == 0)
		diag_set(d, dir, 0, 0, "holds no plan (*.plan.json)");
	else
		diag_set(d, dir, 0, 0, "holds %d plans (*.plan.json); name one", count);
	free(found);
	return NULL;
}

RtPlan *rt_plan_load(const char *path, Diag *d)
{
	bool failed;
	char *dirplan = find_plan_in(path, d, &failed);
	if (failed)
		return NULL;
	const char *file = dirplan ? dirplan : path;
	size_t len;
	char *text = read_regular_file(file, RT_PLAN_MAX_BYTES, &len, d);
	RtPlan *pl = text ? rt_plan_parse(file, text, len, d) : NULL;
	free(text);
	free(dirplan);
	return pl;
}

void rt_plan_free(RtPlan *p)
{
	if (p)
		arena_free(p->arena);
}

/* ---- PTX entry signatures -------------------------------------------------- */

typedef struct {
	const char *name;
	size_t nlen;
	const char *params;    /* just after the '(' */
} PtxEntry;

static int entry_cmp(const void *a, const void *b)
{
	const PtxEntry *x = a, *y = b;
	size_t n = x->nlen < y->nlen ? x->nlen : y->nlen;
	int c = memcmp(x->name, y->name, n);
	return c ? c : (x->nlen > y->nlen) - (x->nlen < y->nlen);
}

static bool ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '$' || c == '.';
}

static const char *skip_space(const char *q, const char *end)
{
	while (q < end && (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r'))
		q++;
	return q;
}

/* The kind a PTX parameter type stands for, or -1: .u64/.s64/.b64 (ptr or i64),
 * .u32/.s32/.b32 (i32), .f64, .f32. */
static int ptx_param_kind(const char *t, size_t n)
{
	if (n == 4 && (!memcmp(t, ".u64", 4) || !memcmp(t, ".s64", 4) || !memcmp(t, ".b64", 4)))
		return RT_P_I64;
	if (n == 4 && (!memcmp(t, ".u32", 4) || !memcmp(t, ".s32", 4) || !memcmp(t, ".b32", 4)))
		return RT_P_I32;
	if (n == 4 && !memcmp(t, ".f64", 4))
		return RT_P_F64;
	if (n == 4 && !memcmp(t, ".f32", 4))
		return RT_P_F32;
	return -1;
}

/* After `.align` at *q: ` 64 .b8 NAME[128]`, a tensor map (RT_P_TMAP), else -1;
 * *q moves past what it read. */
static int ptx_tmap_param(const char **q, const char *end)
{
	const char *r = skip_space(*q, end), *want = "64";
	if (end - r < 2 || memcmp(r, want, 2) != 0 || (end - r > 2 && ident_char(r[2])))
		return -1;
	r = skip_space(r + 2, end);
	if (end - r < 4 || memcmp(r, ".b8", 3) != 0 || ident_char(r[3]))
		return -1;
	r = skip_space(r + 3, end);
	while (r < end && ident_char(*r))
		r++;
	if (end - r < 5 || memcmp(r, "[128]", 5) != 0)
		return -1;
	*q = r + 5;
	return RT_P_TMAP;
}

/* Check one entry's parameter list (from just after '(') against kernel k. */
static int check_entry(const RtKernel *k, const char *q, const char *end, const char *file,
		       Diag *d)
{
	int i = 0;
	for (;;) {
		q = skip_space(q, end);
		if (q < end && *q == ')')
			break;
		if (end - q < 6 || memcmp(q, ".param", 6) != 0) {
			diag_set(d, file, 0, 0, "entry '%s': cannot read parameter %d", k->entry, i);
			return -1;
		}
		q = skip_space(q + 6, end);
		const char *t = q;
		while (q < end && ident_char(*q))
			q++;
		int kind = ptx_param_kind(t, (size_t)(q - t));
		if (q - t == 6 && !memcmp(t, ".align", 6))
			kind = ptx_tmap_param(&q, end);
		if (i < k->nparams) {
			RtParamType want = k->params[i] == RT_P_PTR ? RT_P_I64 : k->params[i];
			if (kind != (int)want) {
				diag_set(d, file, 0, 0, "entry '%s': parameter %d is '%.*s' in the PTX "
					 "but %s in the plan", k->entry, i, (int)(q - t) > 16 ? 16 : (int)(q - t),
					 t, rt_param_name(k->params[i]));
				return -1;
			}
		}
		i++;
		while (q < end && *q != ',' && *q != ')')
			q++;
		if (q < end && *q == ',')
			q++;
	}
	if (i != k->nparams) {
		diag_set(d, file, 0, 0, "entry '%s' takes %d parameters in the PTX but the plan "
			 "lists %d", k->entry, i, k->nparams);
		return -1;
	}
	return 0;
}

int rt_ptx_check_params(const RtPlan *p, const char *ptx, size_t len, Diag *d)
{
	const char *file = p->ptx_path ? p->ptx_path : "<ptx>", *end = ptx + len;
	int n = 0, cap = 16;
	PtxEntry *e = xmalloc((size_t)cap * sizeof *e);
	for (const char *q = ptx; q + 6 <= end; ) {
		if (*q != '.' || memcmp(q, ".entry", 6) != 0) {
			q++;
			continue;
		}
		bool word = (q == ptx || !ident_char(q[-1])) && q + 6 < end && !ident_char(q[6]);
		q += 6;
		if (!word)
			continue;
		const char *nm = skip_space(q, end), *ne = nm;
		while (ne < end && ident_char(*ne))
			ne++;
		const char *paren = skip_space(ne, end);
		if (ne == nm || paren >= end || *paren != '(')
			continue;
		if (n == cap)
			e = xrealloc(e, (size_t)(cap *= 2) * sizeof *e);
		e[n++] = (PtxEntry){nm, (size_t)(ne - nm), paren + 1};
		q = paren + 1;
	}
	qsort(e, (size_t)n, sizeof *e, entry_cmp);
	int rc = 0;
	/* an entry defined twice is PTX the driver rejects; which of the two a search
	 * found would decide what was checked (found by fuzz_plan: the stand-in driver
	 * read the other one's parameters) */
	for (int k = 1; rc == 0 && k < n; k++)
		if (entry_cmp(&e[k - 1], &e[k]) == 0) {
			diag_set(d, file, 0, 0, "the PTX defines entry '%.*s' twice",
				 (int)(e[k].nlen > 200 ? 200 : e[k].nlen), e[k].name);
			rc = -1;
		}
	for (int k = 0; rc == 0 && k < p->nkernels; k++) {
		const RtKernel *kn = &p->kernels[k];
		PtxEntry key = {kn->entry, strlen(kn->entry), NULL};
		const PtxEntry *hit = bsearch(&key, e, (size_t)n, sizeof *e, entry_cmp);
		if (!hit) {
			diag_set(d, file, 0, 0, "kernel '%s': the PTX has no entry '%s'", kn->name,
				 kn->entry);
			rc = -1;
		} else {
			rc = check_entry(kn, hit->params, end, file, d);
		}
	}
	free(e);
	if (rc < 0)
		rt_one_line(d->msg);
	return rc;
}

/* ---- binding a plan for every size ---- */

static RtStatus bind_fail(Diag *d, const RtPlan *p, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static RtStatus bind_fail(Diag *d, const RtPlan *p, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	rt_one_line(msg);
	diag_set(d, p->path, 0, 0, "%s", msg);
	return RT_ERR_INPUT;
}

static int size_at(const RtPlan *p, const DimExpr *e, int64_t *v)
{
	return ir_dim_eval(e, p->dim_val, v) || *v < 1 || *v > (INT64_C(1) << 40) ? -1 : 0;
}

/* A map of a plan for every size at the bound sizes (RtTmap.sym): its dims and
 * strides from launch l's sizes, held to tmap_check. 0, or -1 with the reason. */
static int tmap_bind(const RtPlan *p, const RtLaunch *l, RtTmap *tm, const RtTensor *t,
		     char *why, size_t n)
{
	for (int k = 0; k < tm->rank; k++) {
		int64_t v = 1;
		if (tm->dim_id[k] > 0 && size_at(p, &l->sdims[tm->dim_id[k]], &v))
			goto big;
		if (tm->dim_id[k] >= 0)
			tm->dim[k] = (uint64_t)v;
		if (k == 0)
			continue;
		uint64_t st = tm->sbytes[k];
		for (int i = 0; i < tm->nsid[k]; i++) {
			v = 1;
			if (tm->sid[k][i] > 0 && size_at(p, &l->sdims[tm->sid[k][i]], &v))
				goto big;
			/* both below 2^40 after each step: no overflow */
			st *= (uint64_t)v;
			if (st >= (UINT64_C(1) << 40))
				goto big;
		}
		tm->stride[k] = st;
	}
	return tmap_check(tm, t, why, n);
big:
	snprintf(why, n, "its tensor map's sizes are too large at these sizes");
	return -1;
}

/* One variant's launches at the plan's sizes. */
static RtStatus bind_launches(RtPlan *p, RtVariant *var, Diag *d)
{
	int64_t dims[1 << 8];
	var->scratch_bytes = 0;
	for (int i = 0; i < var->nlaunches; i++) {
		RtLaunch *l = &var->launches[i];
		const RtKernel *k = &var->kernels[l->kernel];
		int64_t *dv = l->ndims <= (int)(sizeof dims / sizeof dims[0]) ? dims
				: xmalloc(sizeof *dv * (size_t)l->ndims);
		dv[0] = 1;
		int bad = 0;
		for (int s = 1; s < l->ndims && !bad; s++)
			bad = size_at(p, &l->sdims[s], &dv[s]) ? s : 0;
		CgDims at;
		if (!bad)
			cg_launch_eval(&k->launch, dv, l->ndims, &at);
		if (dv != dims)
			free(dv);
		if (bad)
			return bind_fail(d, p, "launch %d (kernel %s): size %d is below 1 or too "
					 "large at these sizes", i, k->name, bad);
		static const int64_t glim[3] = {2147483647, 65535, 65535};
		int64_t threads = (int64_t)at.block[0] * at.block[1] * at.block[2];
		for (int x = 0; x < 3; x++)
			if (at.grid[x] < 1 || at.grid[x] > glim[x] || at.block[x] < 1)
				bad = 1;
		if (at.grid[0] % k->cluster)
			bad = 1;
		if (bad || threads > 1024 || at.shared_bytes < 0 || at.shared_bytes > INT32_MAX ||
		    at.scratch_bytes < 0 || at.scratch_bytes > (INT64_C(1) << 40))
			return bind_fail(d, p, "launch %d (kernel %s): its rule gives a launch the "
					 "device cannot take at these sizes", i, k->name);
		for (int x = 0; x < 3; x++) {
			l->grid[x] = (uint32_t)at.grid[x];
			l->block[x] = (uint32_t)at.block[x];
		}
		l->shared_bytes = (uint32_t)at.shared_bytes;
		for (int a = 0; a < l->nargs; a++) {
			RtArg *g = &l->args[a];
			if (g->dim >= 0) {
				int64_t v = 1;
				if (g->dim > 0 && size_at(p, &l->sdims[g->dim], &v))
					return bind_fail(d, p, "launch %d: size %d does not fit", i, g->dim);
				g->i = v;
			} else if (g->dim == -2) {
				/* the rule's workspace; a pointer the kernel may not use still
				 * points at 16 bytes */
				g->i = at.scratch_bytes > 16 ? at.scratch_bytes : 16;
				if ((uint64_t)g->i > var->scratch_bytes)
					var->scratch_bytes = (uint64_t)g->i;
			} else if (g->type == RT_P_TMAP) {
				char why[200];
				if (tmap_bind(p, l, g->tm, &p->tensors[g->tensor], why, sizeof why))
					return bind_fail(d, p, "launch %d (kernel %s), argument %d: %s",
							 i, k->name, a, why);
			}
		}
	}
	return RT_OK;
}

RtStatus rt_plan_bind(RtPlan *p, const int64_t *val, Diag *d)
{
	if (!p->ndim_names)
		return RT_OK;
	p->bound = false;   /* until every size below fits: a plan half bound is unusable */
	for (int k = 0; k < p->ndim_names; k++) {
		if (val[k] < p->dim_lo[k] || val[k] > p->dim_hi[k])
			return bind_fail(d, p, "'%s' = %lld is outside the plan's range %lld..%lld",
					 p->dim_name[k], (long long)val[k],
					 (long long)p->dim_lo[k], (long long)p->dim_hi[k]);
		p->dim_val[k] = val[k];
	}
	for (int t = 0; t < p->ntensors; t++) {
		RtTensor *x = &p->tensors[t];
		x->n = 1;
		for (int i = 0; i < x->rank; i++)
			if (size_at(p, &x->sdim[i], &x->dim[i]) ||
			    __builtin_mul_overflow(x->n, x->dim[i], &x->n) ||
			    x->n > (INT64_C(1) << 40))
				return bind_fail(d, p, "tensor '%s' is too large or empty at these "
						 "sizes", x->name);
		x->bytes = (uint64_t)x->n * (uint64_t)ir_dtype_size(x->dtype);
	}
	for (int t = 0; t < p->ntensors; t++) {
		const RtTensor *x = &p->tensors[t];
		if (x->alias >= 0 && p->tensors[x->alias].bytes != x->bytes)
			return bind_fail(d, p, "tensor '%s' aliases '%s', whose size differs at these "
					 "sizes", x->name, p->tensors[x->alias].name);
	}
	for (int v = 0; v < p->nvariants; v++) {
		RtStatus st = bind_launches(p, &p->variants[v], d);
		if (st != RT_OK)
			return st;
	}
	/* the current variant's copy */
	for (int v = 0; v < p->nvariants; v++)
		if (p->variants[v].launches == p->launches)
			p->scratch_bytes = p->variants[v].scratch_bytes;
	p->bound = true;
	return RT_OK;
}

RtStatus rt_plan_bind_shapes(RtPlan *p, const char *const *names, const int *rank,
			     const int64_t (*dim)[IR_MAX_RANK], int n, Diag *d)
{
	if (!p->ndim_names)
		return RT_OK;
	int64_t val[IR_SYM_MAX] = {0};
	for (int i = 0; i < n; i++) {
		int t = rt_plan_find_tensor(p, names[i]);
		if (t < 0 || p->tensors[t].rank != rank[i])
			continue;
		for (int j = 0; j < rank[i]; j++) {
			int s;
			if (!ir_dim_is_sym(&p->tensors[t].sdim[j], &s))
				continue;
			if (val[s] && val[s] != dim[i][j])
				return bind_fail(d, p, "input '%s' makes '%s' %lld, but another input "
						 "made it %lld", names[i], p->dim_name[s],
						 (long long)dim[i][j], (long long)val[s]);
			val[s] = dim[i][j];
		}
	}
	for (int k = 0; k < p->ndim_names; k++)
		if (!val[k])
			return bind_fail(d, p, "the plan is for every size of '%s': no input given "
					 "says its size (give the inputs, or their shapes)",
					 p->dim_name[k]);
	RtStatus st = rt_plan_bind(p, val, d);
	if (st != RT_OK)
		return st;
	for (int i = 0; i < n; i++) {
		int t = rt_plan_find_tensor(p, names[i]);
		if (t < 0)
			continue;
		const RtTensor *x = &p->tensors[t];
		bool same = x->rank == rank[i];
		for (int j = 0; same && j < rank[i]; j++)
			same = x->dim[j] == dim[i][j];
		if (!same) {
			IrShapeText want = ir_shape_text(x->rank, x->dim);
			IrShapeText got = ir_shape_text(rank[i], dim[i]);
			return bind_fail(d, p, "input '%s' is %s, but at these sizes the plan "
					 "needs %s", names[i], got.s, want.s);
		}
	}
	return RT_OK;
}

RtStatus rt_plan_bind_npy(RtPlan *p, const char *dir, Diag *d)
{
	enum { MAX = 64 };
	const char *names[MAX];
	int rank[MAX], n = 0;
	int64_t dim[MAX][IR_MAX_RANK];
	for (int t = 0; dir && t < p->ntensors && n < MAX; t++) {
		const RtTensor *x = &p->tensors[t];
		bool named = false;
		for (int i = 0; x->sdim && x->role == ROLE_INPUT && !x->constant && i < x->rank; i++)
			named |= !ir_dim_is_const(&x->sdim[i], NULL);
		if (!named)
			continue;
		char file[1024];
		DType dt;
		npy_path(file, sizeof file, dir, x->name);
		if (npy_read_shape(file, &dt, &rank[n], dim[n], d) < 0)
			return RT_ERR_INPUT;
		names[n++] = x->name;
	}
	return rt_plan_bind_shapes(p, names, rank, dim, n, d);
}

void rt_plan_dims_text(const RtPlan *p, Buf *b)
{
	for (int k = 0; k < p->ndim_names; k++)
		buf_printf(b, "%s%s=%lld", k ? ", " : "", p->dim_name[k],
			   (long long)p->dim_val[k]);
}
