/* pipeline.c: the compile pipeline (pipeline.h): load → convert → search → verify →
 * lower → emit → plan, each step one call; pl_compile is the list from search on.
 * The verifier runs on every compile, between the search and the code generator: a
 * schedule codegen would lower wrongly stops here with a message instead
 * (docs/library.md, "The pipeline").
 *
 * Also here, for every front end alike: the defaults of a compile, the names of the
 * output files, the kernel names explain shows, and the counts of the line after a
 * compile (ops, launches, kernels, bytes moved), read back from the plan. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "../codegen/emit_par.h"
#include "../host/host.h"
#include "pipeline.h"

void pl_default_options(PlOptions *o)
{
	memset(o, 0, sizeof *o);
	pass_default_options(&o->search);
	snprintf(o->arch[0], sizeof o->arch[0], "%s", CG_DEFAULT_ARCH);
	o->narch = 1;
	o->weights = true;
	o->buckets = 3;
}

bool pl_is_onnx(const char *path)
{
	if (!strcmp(path, "-"))
		return false;
	unsigned char head[1];
	size_t n = 0;
	/* only a regular file is peeked at: reading a byte of a pipe (/dev/stdin, <(...))
	 * would take it, and stdio's buffer with it, from the graph reader */
	struct stat sb;
	FILE *f = stat(path, &sb) == 0 && S_ISREG(sb.st_mode) ? fopen(path, "rb") : NULL;
	if (f) {
		n = fread(head, 1, 1, f);
		fclose(f);
	}
	return onnx_sniff(path, head, n);
}

/* A graph file's text with up to max_errors messages. */
static Graph *load_graph_file(Arena *a, const PlSource *src, Diag *out, int *nout)
{
	int maxd = src->max_errors < PL_MAX_ERRORS ? src->max_errors : PL_MAX_ERRORS, nd = 1;
	Diag *all = xmalloc(sizeof *all * (size_t)(maxd > 0 ? maxd : 1));
	Graph *g = src->text ? ir_read_mem_shapes(a, src->path, src->text, src->len, FMT_AUTO,
						  src->shapes, src->nshapes, src->lookup, all, maxd,
						  &nd)
			     : ir_read_file_shapes(a, src->path, FMT_AUTO, src->shapes,
						   src->nshapes, src->lookup, all, maxd, &nd);
	Diag d = all[0];
	*nout = 0;
	for (int i = 0; !g && i + 1 < nd; i++)
		out[(*nout)++] = all[i];
	if (!g)
		d = all[nd - 1];
	if (!g && nd == maxd && maxd > 1) {
		out[(*nout)++] = d;
		diag_set(&d, src->path, 0, 0, "stopped after %d errors (--max-errors N reports "
			 "more)", nd);
	}
	free(all);
	if (g && host_load_constants(g, &d))
		g = NULL;
	if (!g)
		out[(*nout)++] = d;
	return g;
}

Graph *pl_load(Arena *a, const PlSource *src, Diag *diags, int *nd)
{
	OnnxOptions oo = {src->shapes, src->nshapes, NULL, 0, src->lookup};
	Graph *g;
	*nd = 0;
	if (src->text ? onnx_sniff(src->path, src->text, src->len) : pl_is_onnx(src->path))
		g = src->text ? onnx_read_mem(a, src->path, src->text, src->len, &oo, &diags[0])
			      : onnx_read_file(a, src->path, &oo, &diags[0]);
	else
		return load_graph_file(a, src, diags, nd);
	if (!g)
		*nd = 1;
	return g;
}

/* "sm_" then two or three digits, then at most an `a` (sm_90a). */
static bool arch_shaped(const char *s, size_t n)
{
	if (n < 5 || strncmp(s, "sm_", 3))
		return false;
	size_t d = strspn(s + 3, "0123456789");
	if (d > n - 3)
		d = n - 3;
	return d >= 2 && d <= 3 && (3 + d == n || (4 + d == n && s[n - 1] == 'a'));
}

int pl_parse_arches(const char *list, char (*arch)[PL_ARCH_LEN], int max, int *n, Diag *d)
{
	*n = 0;
	Buf known = {0};
	cg_arch_list(&known);
	int rc = 0;
	for (const char *p = list;; p++) {
		size_t len = strcspn(p, ",");
		if (!len) {
			diag_set(d, "", 0, 0, "--arch '%s' has an empty item", list);
			rc = PL_USAGE;
			break;
		}
		if (!arch_shaped(p, len)) {
			diag_set(d, "", 0, 0, "unknown --arch '%.*s' (sm_XX, or a list such "
				 "as sm_80,sm_90a, of %s)", (int)len, p, known.data);
			rc = PL_USAGE;
			break;
		}
		char a[PL_ARCH_LEN];
		snprintf(a, sizeof a, "%.*s", (int)len, p);
		if (!cg_arch_known(a)) {
			diag_set(d, "", 0, 0, "--arch %s: LLVM 19 does not know this arch; the ones "
				 "it knows that fusec's kernels run on are %s", a, known.data);
			rc = PL_INVALID;
			break;
		}
		if (!cg_arch_supported(a)) {
			diag_set(d, "", 0, 0, "--arch %s is older than the kernels need (shfl.sync, "
				 "PTX 6.0): the lowest supported is sm_%d", a, CG_MIN_ARCH);
			rc = PL_INVALID;
			break;
		}
		for (int i = 0; i < *n && rc == 0; i++)
			if (!strcmp(arch[i], a)) {
				diag_set(d, "", 0, 0, "--arch %s: %s is listed twice", list, a);
				rc = PL_INVALID;
			}
		if (rc != 0)
			break;
		if (*n == max)
			die("more distinct arches than known ones");
		memcpy(arch[(*n)++], a, sizeof a);
		p += len;
		if (!*p)
			break;
	}
	buf_free(&known);
	return rc;
}

long pl_find_op(const Graph *g, const char *spec)
{
	char *end;
	long v = strtol(spec, &end, 10);
	if (*spec && !*end && v >= 0)
		return v;
	for (int t = 0; t < g->ntensors; t++)
		if (!strcmp(g->tensors[t].name, spec))
			return g->tensors[t].producer >= 0 ? g->tensors[t].producer : -2;
	for (int i = 0; i < g->nops; i++)
		if (g->ops[i].name && !strcmp(g->ops[i].name, spec))
			return i;
	return -1;
}

int pl_simplify(Graph *g, bool burn_exact, SiblingInfo *sib)
{
	SimplifyInfo info;
	SiblingInfo none;
	if (!sib)
		sib = &none;
	memset(sib, 0, sizeof *sib);
	return burn_exact ? 0 : pass_simplify(g, &info) || pass_siblings(g, sib);
}

int pl_attention(Graph *g, AttentionMode mode, AttentionInfo *info)
{
	return pass_attention(g, mode, info);
}

int pl_layout(Graph *g, const LayoutOptions *o, LayoutInfo *info)
{
	return pass_layout(g, o, info);
}

int pl_convert(Graph *g, const PrecisionOptions *p, PrecisionInfo *info, Diag *d)
{
	return pass_precision(g, p, info, d);
}

bool pl_x3_weights(bool x3, bool tf32, const char *arches)
{
	if (!x3 || tf32)
		return false;
	for (const char *p = arches ? arches : CG_DEFAULT_ARCH;; p++) {
		size_t len = strcspn(p, ",");
		if (len == strlen("sm_90a") && !strncmp(p, "sm_90a", len))
			return true;
		if (!p[len])
			return false;
		p += len;
	}
}

int pl_kmajor(Graph *g, bool burn_exact, bool x3, int *nmade)
{
	int none;
	if (!nmade)
		nmade = &none;
	*nmade = 0;
	/* off by default: measured on Llama, the views it adds open blocks of their
	 * own in the explorer, whose max_blocks then stops where it did not and
	 * settles q's rotary multiply and the o projection's residual add apart
	 * (docs/benchmarks.md, session 52); FUSEC_KMAJOR=1 turns it on */
	const char *on = getenv("FUSEC_KMAJOR");
	bool half = on && !strcmp(on, "1");
	/* the 3xTF32 tiles take only K-major operands: on with them (x3) */
	if (burn_exact || (!half && !x3))
		return 0;
	return pass_kmajor(g, half, x3, nmade);
}

Schedule *pl_schedule(const Graph *g, const SearchOptions *so, Diag *d)
{
	Schedule *s = pass_search(g, so);
	if (pass_verify(s, d)) {
		pass_free_schedule(s);
		return NULL;
	}
	return s;
}

void pl_target_ext(const PlOptions *o, int i, const char *ext, char *out, size_t n,
		   const char *name)
{
	char arch[16] = "", bucket[16] = "";
	if (o->narch > 1)
		snprintf(arch, sizeof arch, ".%s", o->arch[i % o->narch]);
	if (i >= o->narch)
		snprintf(bucket, sizeof bucket, ".b%d", i / o->narch);
	snprintf(out, n, "%s%s%s%s", name ? name : "", arch, bucket, ext);
}

/* The ranges of sizes of a plan for every size (--shape-buckets N): range 0 is every
 * size; range k each named dim's lo..max(lo, top >> k), top its largest size (4096
 * for a dim without one), as long as it narrows. Each is lowered from g at probe
 * sizes in it (ir_sym_at): per dim ir_sym_probe of its range, none that another
 * dim took, passed over when it gives two different expressions one size
 * (ir_sym_check). Returns how many, gb[0] NULL. */
static int plan_buckets(const Graph *g, int want, PlResult *r, const Graph **gb)
{
	const IrSymbolic *sy = g->sym;
	int n = 1;
	for (int k = 0; k < sy->nsym; k++) {
		r->bucket_lo[0][k] = sy->lo[k];
		r->bucket_hi[0][k] = sy->hi[k];
	}
	gb[0] = NULL;
	for (int b = 1; b < want && b < CG_MAX_BUCKETS; b++) {
		int64_t *lo = r->bucket_lo[n], *hi = r->bucket_hi[n], probe[IR_SYM_MAX];
		bool narrower = false;
		for (int k = 0; k < sy->nsym; k++) {
			int64_t top = sy->hi[k] < 4096 ? sy->hi[k] : 4096;
			lo[k] = sy->lo[k];
			hi[k] = top >> b > lo[k] ? top >> b : lo[k];
			narrower |= hi[k] < r->bucket_hi[n - 1][k];
		}
		if (!narrower)
			break;
		int64_t avoid[16];
		int navoid = 0;
		const Graph *gi = NULL;
		while (!gi && navoid < 16) {
			bool ok = true;
			for (int k = 0; k < sy->nsym && ok; k++) {
				int64_t used[IR_SYM_MAX + 16];
				int nused = 0;
				for (int j = 0; j < k; j++)
					used[nused++] = probe[j];
				for (int j = 0; j < navoid; j++)
					used[nused++] = avoid[j];
				probe[k] = ir_sym_probe(lo[k], hi[k], used, nused);
				ok = probe[k] != 0;
			}
			if (!ok)
				break;
			Diag d;
			Graph *at = ir_sym_at(g, probe, true, &d);
			int64_t clash;
			if (!at)
				break;
			if (ir_sym_check(at, sy, &clash) == 0)
				gi = at;
			else
				avoid[navoid++] = clash;
		}
		if (gi)
			gb[n++] = gi;
		else
			break;
	}
	return n;
}

int pl_compile(const Graph *g, const PlOptions *o, PlResult *r, Diag *d)
{
	memset(r, 0, sizeof *r);
	/* search → verify */
	r->s = pl_schedule(g, &o->search, d);
	r->t_search = clock_seconds();
	if (!r->s)
		return -1;
	/* what the plan names: one arch, NAME.ptx; several, NAME.ARCH.ptx each
	 * (docs/plan-format.md); the weights file with its hash (docs/reliability.md) */
	const Graph *gb[CG_MAX_BUCKETS];
	int nb = g->sym && o->buckets > 1 ? plan_buckets(g, o->buckets, r, gb) : 1;
	PlanFileInfo info = {.ntargets = o->narch * nb};
	for (int i = 0; i < info.ntargets; i++) {
		int b = i / o->narch;
		pl_target_ext(o, i, ".ptx", r->ptx_name[i], sizeof r->ptx_name[i], g->name);
		info.target[i] = (PlanTarget){o->arch[i % o->narch], r->ptx_name[i], NULL,
					      b ? gb[b] : NULL, b ? r->bucket_lo[b] : NULL,
					      b ? r->bucket_hi[b] : NULL};
	}
	char wname[512], wsha[65];
	bool has_weights = o->weights && cg_weights_layout_size(g) != 0;
	snprintf(wname, sizeof wname, "%s.weights.bin", g->name);
	if (has_weights)
		cg_weights_sha256(g, wsha);
	info.libdevice = o->libdevice;
	info.weights = has_weights ? wname : NULL;
	info.pretty = o->pretty;
	info.cache_dir = o->cache_dir;
	info.threads = o->jobs;
	info.progress = o->progress;
	info.allow_tf32 = o->allow_tf32;
	info.allow_3xtf32 = o->allow_3xtf32;
	info.weights_sha256 = has_weights ? wsha : NULL;
	info.precision = o->precision;
	info.keep_f32 = o->keep_f32;
	/* lower → emit (per arch) → plan */
	if (cg_compile_schedule(r->s, &info, o->emit_ll, &r->out, d)) {
		pl_result_free(r);
		return -1;
	}
	return 0;
}

void pl_result_free(PlResult *r)
{
	cg_outputs_free(&r->out);
	pass_free_schedule(r->s);
	r->s = NULL;
}

int pl_output_files(const PlOptions *o, const PlResult *r, PlFile *files,
		    char (*ext)[CG_MAX_TARGETS][32])
{
	const CgOutputs *co = &r->out;
	int n = 0;
	files[n++] = (PlFile){".plan.json", co->plan, strlen(co->plan), NULL, NULL};
	for (int i = 0; i < co->ntargets; i++) {
		pl_target_ext(o, i, ".ptx", ext[0][i], sizeof ext[0][i], NULL);
		files[n++] = (PlFile){ext[0][i], co->ptx[i].data, co->ptx[i].len, NULL, NULL};
	}
	if (cg_weights_layout_size(r->s->g))
		files[n++] = (PlFile){".weights.bin", "", 0, r->s->g, NULL};
	for (int i = 0; o->emit_ll && i < co->ntargets; i++) {
		pl_target_ext(o, i, ".ll", ext[1][i], sizeof ext[1][i], NULL);
		files[n++] = (PlFile){ext[1][i], co->ll[i].data, co->ll[i].len, NULL, NULL};
	}
	return n;
}

const char **pl_kernel_names(const Schedule *s, const char *arch, bool tf32, bool x3, Arena *a,
			     Diag *d)
{
	CgOptions co = {.target = CG_TARGET_NVPTX, .arch = arch, .name = s->g->name,
			.allow_tf32 = tf32, .allow_3xtf32 = x3};
	CgModule *m = cg_module_new(&co, a, d);
	CgProgram prog;
	if (m)
		cg_module_chunked(m);
	if (!m || cg_lower(m, s, a, &prog, d)) {
		if (m)
			cg_module_free(m);
		return NULL;
	}
	int total = 0;
	for (int i = 0; i < s->nsteps; i++)
		total += s->steps[i].nlaunch;
	const char **names = ARENA_NEW(a, const char *, total + 1);
	int b = 0, flat = 0;
	for (int i = 0; i < s->nsteps; i++)
		for (int k = 0; k < s->steps[i].nlaunch; k++, flat++) {
			const CgBound *cb = b < prog.nlaunch ? &prog.launch[b] : NULL;
			if (cb && cb->step == i && cb->unit == s->steps[i].launch[k].kernel) {
				names[flat] = arena_strdup(a, cb->kernel->name);
				b++;
			}
		}
	cg_module_free(m);
	return names;
}

long pl_real_ops(const Graph *g)
{
	long n = 0;
	for (int i = 0; i < g->nops; i++)
		n += g->ops[i].kind != OP_SYNC;
	return n;
}

typedef struct {
	const char *name;
	double bytes;
} TensorBytes;

static int tb_cmp(const void *a, const void *b)
{
	return strcmp(((const TensorBytes *)a)->name, ((const TensorBytes *)b)->name);
}

int pl_plan_stats(const char *plan, PlStats *st)
{
	memset(st, 0, sizeof *st);
	cJSON *doc = cJSON_Parse(plan);
	if (!doc)
		return -1;
	const cJSON *tensors = cJSON_GetObjectItemCaseSensitive(doc, "tensors");
	const cJSON *steps = cJSON_GetObjectItemCaseSensitive(doc, "steps");
	int nt = cJSON_GetArraySize(tensors), k = 0;
	TensorBytes *tb = xmalloc(sizeof *tb * (size_t)(nt ? nt : 1));
	const cJSON *t, *s, *l, *x;
	/* a plan for every size (fusec-plan/2): its sizes at the largest of each dim */
	const char *names[IR_SYM_MAX];
	int64_t hi[IR_SYM_MAX];
	int nn = 0;
	bool unbounded = false;
	cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(doc, "dims")) {
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(x, "name");
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(x, "max");
		if (nn < IR_SYM_MAX && cJSON_IsString(n) && cJSON_IsNumber(m)) {
			names[nn] = n->valuestring;
			hi[nn++] = (int64_t)m->valuedouble;
			/* no largest size (no range given): no bytes either */
			unbounded |= m->valuedouble >= (double)IR_DIM_TOP;
		}
	}
	cJSON_ArrayForEach(t, tensors) {
		const cJSON *tn = cJSON_GetObjectItemCaseSensitive(t, "name");
		const cJSON *dt = cJSON_GetObjectItemCaseSensitive(t, "dtype");
		DType dtype;
		if (!cJSON_IsString(tn) || !cJSON_IsString(dt) ||
		    ir_dtype_parse(dt->valuestring, &dtype))
			continue;
		double e = ir_dtype_size(dtype);
		cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(t, "shape")) {
			DimExpr de;
			int64_t v;
			if (cJSON_IsString(x) && !ir_dim_parse(x->valuestring, names, nn, &de) &&
			    !ir_dim_eval(&de, hi, &v))
				e *= (double)v;
			else
				e *= x->valuedouble;
		}
		tb[k++] = (TensorBytes){tn->valuestring, e};
	}
	qsort(tb, (size_t)k, sizeof *tb, tb_cmp);
	cJSON_ArrayForEach(s, steps) {
		st->ops += cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(s, "aliases")) +
			   cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(s, "views"));
		cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(s, "launches")) {
			st->launches++;
			st->ops += cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(l, "ops"));
			for (int pass = 0; pass < 2; pass++)
				cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(
						 l, pass ? "writes" : "reads")) {
					if (!cJSON_IsString(x))
						continue;
					TensorBytes key = {x->valuestring, 0};
					TensorBytes *hit = bsearch(&key, tb, (size_t)k, sizeof *tb, tb_cmp);
					if (hit)
						st->bytes += hit->bytes;
				}
		}
	}
	st->kernels = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "kernels"));
	if (unbounded)
		st->bytes = -1;
	free(tb);
	cJSON_Delete(doc);
	return 0;
}
