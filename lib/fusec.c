/* fusec.c: the public compile API (fusec.h) over the internal pipeline
 * (pipeline.h), the one `fusec compile` runs: the options are checked and turned
 * into PlOptions, then `compile` below is the list of steps, and every Diag on the
 * way becomes a fusec_error. The CLI's extras (the result cache, the depfile,
 * --emit relative/dot/svg, logs, progress) stay in cmd/. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../codegen/kcache.h"
#include "../codegen/math.h"
#include "../host/interp.h"
#include "fusec.h"
#include "pipeline.h"

struct fusec_result {
	Arena *a;                 /* the graph */
	Graph *g;
	PlOptions po;
	PlResult r;
	PlStats st;
	long ops;
	PlFile files[2 + 2 * CG_MAX_TARGETS];
	char ext[2][CG_MAX_TARGETS][32];
	int nfiles;
	char *path[2 + 2 * CG_MAX_TARGETS];   /* as written, or the file name */
	char *weights;            /* the weights file in memory, made when asked */
	size_t wlen;
	CgHost *host;             /* the kernels built for the host, on the first cpu run */
};

const char *fusec_version(void)
{
	return "fusec " FUSEC_VERSION;
}

void fusec_free(void *p)
{
	free(p);
}

void fusec_options_init(fusec_options *o)
{
	SearchOptions so;
	pass_default_options(&so);
	memset(o, 0, sizeof *o);
	o->arch = CG_DEFAULT_ARCH;
	o->max_blocks = so.max_blocks;
	o->max_explorations = so.max_explorations;
	o->max_bindings = so.max_bindings;
	o->max_errors = 20;
}

static void set_error(fusec_error *err, int code, const Diag *d)
{
	if (!err)
		return;
	err->code = code;
	snprintf(err->file, sizeof err->file, "%s", d ? d->file : "");
	err->line = d ? d->line : 0;
	err->column = d ? d->col : 0;
	snprintf(err->message, sizeof err->message, "%s", d ? d->msg : "");
}

static void clear_error(fusec_error *err)
{
	if (err)
		memset(err, 0, sizeof *err);
}

/* pl_commit's error (one line, no file). */
static void commit_error(void *ctx, const char *msg)
{
	fusec_error *err = ctx;
	if (err) {
		err->code = FUSEC_FAILED;
		snprintf(err->message, sizeof err->message, "%s", msg);
	}
}

/* The public options as the pipeline's, checked as `fusec compile` checks its
 * flags. PL_OK, or a code with *d. */
static int options(const fusec_options *uo, PlOptions *po, PrecisionOptions *prec, Arena *a,
		   OnnxInputShape *shapes, Diag *d)
{
	fusec_options def;
	if (!uo) {
		fusec_options_init(&def);
		uo = &def;
	}
	pl_default_options(po);
	int rc = pl_parse_arches(uo->arch ? uo->arch : CG_DEFAULT_ARCH, po->arch,
				 CG_MAX_TARGETS, &po->narch, d);
	if (rc)
		return rc;
	if (uo->max_blocks < 1 || uo->max_explorations < -1 || uo->max_bindings < 0 ||
	    uo->jobs < 0 || uo->jobs > 256 || uo->max_errors < 1 || uo->ninput_shapes < 0 ||
	    uo->ninput_shapes > 64 || uo->allow_3xtf32 < -1 || uo->allow_3xtf32 > 1) {
		diag_set(d, "", 0, 0, "an option out of its range (max_blocks at least 1, jobs "
			 "0 to 256, max_errors at least 1, at most 64 input shapes, allow_3xtf32 "
			 "-1, 0 or 1)");
		return PL_USAGE;
	}
	po->search.max_blocks = uo->max_blocks;
	po->search.max_explorations = uo->max_explorations;
	po->search.max_bindings = uo->max_bindings;
	po->search.burn_exact = uo->burn_exact != 0;
	po->allow_tf32 = uo->allow_tf32 != 0;
	po->allow_3xtf32 = uo->allow_3xtf32 >= 0;
	po->pretty = uo->pretty_plan != 0;
	po->emit_ll = uo->emit_ll != 0;
	po->jobs = uo->jobs;
	po->libdevice = uo->libdevice;
	if (po->libdevice && !strcmp(po->libdevice, "auto") &&
	    !(po->libdevice = cg_math_find_libdevice())) {
		diag_set(d, "", 0, 0, "libdevice auto: no CUDA install with libdevice found");
		return PL_FAILED;
	}
	struct stat sb;
	if (po->libdevice && (access(po->libdevice, R_OK) || stat(po->libdevice, &sb) ||
			      !S_ISREG(sb.st_mode))) {
		diag_set(d, po->libdevice, 0, 0, "libdevice: not a readable regular file");
		return PL_USAGE;
	}
	if (uo->cache_dir) {
		char why[4200];
		CgCacheDir st = cg_cache_dir_check(uo->cache_dir, false, why, sizeof why);
		if (st == CG_CACHE_UNSAFE) {
			diag_set(d, uo->cache_dir, 0, 0, "the cache folder is not safe to use: %.600s",
				 why);
			return PL_INVALID;
		}
		po->cache_dir = st == CG_CACHE_OK ? uo->cache_dir : NULL;
	}
	*prec = (PrecisionOptions){DT_F32, NULL};
	if (uo->precision && pass_precision_parse(uo->precision, &prec->to)) {
		diag_set(d, "", 0, 0, "--precision: unknown precision '%.100s' (bf16 or f16)",
			 uo->precision);
		return PL_USAGE;
	}
	if (uo->keep_f32 && !uo->precision) {
		diag_set(d, "", 0, 0, "--keep-f32 applies with --precision bf16|f16");
		return PL_USAGE;
	}
	if (uo->attention && strcmp(uo->attention, "fuse") && strcmp(uo->attention, "keep")) {
		diag_set(d, "", 0, 0, "--attention: unknown mode '%.100s' (fuse or keep)",
			 uo->attention);
		return PL_USAGE;
	}
	if (uo->layout && strcmp(uo->layout, "nchw") && strcmp(uo->layout, "nhwc")) {
		diag_set(d, "", 0, 0, "--layout: unknown layout '%.100s' (nchw or nhwc)",
			 uo->layout);
		return PL_USAGE;
	}
	prec->keep = uo->keep_f32;
	po->precision = uo->precision;
	po->keep_f32 = uo->keep_f32;
	for (int i = 0; i < uo->ninput_shapes; i++) {
		char msg[300];
		if (ir_parse_shape(a, uo->input_shapes[i], &shapes[i], msg, sizeof msg)) {
			diag_set(d, "", 0, 0, "input shape '%.200s': %s", uo->input_shapes[i], msg);
			return PL_USAGE;
		}
	}
	return PL_OK;
}

/* The layout pass asked for by the options (NULL layout: automatic) */
static LayoutOptions layout_of(const fusec_options *o)
{
	LayoutOptions lo = {LAYOUT_MODE_AUTO, o && (o->allow_tf32 || o->precision)};
	if (o && o->layout)
		lo.mode = !strcmp(o->layout, "nhwc") ? LAYOUT_MODE_NHWC : LAYOUT_MODE_KEEP;
	return lo;
}

/* The attention pass asked for by the options */
static AttentionMode attention_of(const fusec_options *o)
{
	/* burn_exact: burn's three kernels, unless "fuse" says */
	if (o && o->attention)
		return !strcmp(o->attention, "keep") ? ATTENTION_KEEP : ATTENTION_FUSE;
	if (o && o->burn_exact)
		return ATTENTION_KEEP;
	/* the default: the chains the flash kernel runs (passes.h) */
	return o && o->precision ? ATTENTION_AUTO_HALF :
	       o && o->allow_tf32 ? ATTENTION_AUTO_TF32 : ATTENTION_AUTO;
}

/* Every file of r named (the path written, or the file name) and counted. */
static void name_files(fusec_result *res, const char *out_dir)
{
	res->nfiles = pl_output_files(&res->po, &res->r, res->files, res->ext);
	for (int i = 0; i < res->nfiles; i++) {
		Buf b = {0};
		if (out_dir)
			buf_printf(&b, "%s/", out_dir);
		buf_printf(&b, "%s%s", res->g->name, res->files[i].ext);
		res->path[i] = b.data;
	}
}

/* The pipeline: options → load → convert → search → verify → lower → emit → plan →
 * write. */
static fusec_result *compile(PlSource *src, const fusec_options *uo, const char *out_dir,
			     fusec_error *err)
{
	fusec_result *res = xcalloc(1, sizeof *res);
	OnnxInputShape shapes[64];
	PrecisionOptions prec;
	PrecisionInfo pinfo;
	LayoutInfo linfo;
	Diag *d = xcalloc(PL_MAX_ERRORS + 1, sizeof *d);
	int nd = 0, code;
	res->a = arena_new();
	clear_error(err);
	if ((code = options(uo, &res->po, &prec, res->a, shapes, d)))
		goto fail;
	src->shapes = shapes;
	src->nshapes = uo ? uo->ninput_shapes : 0;
	src->max_errors = uo ? uo->max_errors : 20;
	LayoutOptions lo = layout_of(uo);
	lo.tensor_cores = lo.tensor_cores ||
			  pl_x3_weights(res->po.allow_3xtf32, res->po.allow_tf32, uo ? uo->arch : NULL);
	AttentionInfo ainfo;
	if (!(res->g = pl_load(res->a, src, d, &nd)) || pl_simplify(res->g, uo && uo->burn_exact, NULL) ||
	    pl_attention(res->g, attention_of(uo), &ainfo) || pl_layout(res->g, &lo, &linfo) ||
	    (res->po.precision && pl_convert(res->g, &prec, &pinfo, d)) ||
	    pl_kmajor(res->g, uo && uo->burn_exact,
		      pl_x3_weights(res->po.allow_3xtf32, res->po.allow_tf32, uo ? uo->arch : NULL), NULL)) {
		code = PL_INVALID;
		goto fail;
	}
	if (pl_compile(res->g, &res->po, &res->r, d)) {
		code = PL_FAILED;
		goto fail;
	}
	name_files(res, out_dir);
	pl_plan_stats(res->r.out.plan, &res->st);
	res->ops = pl_real_ops(res->g);
	if (out_dir && pl_commit(out_dir, res->g->name, res->files, res->nfiles, commit_error,
				 err)) {
		fusec_result_free(res);
		free(d);
		return NULL;
	}
	free(d);
	return res;
fail:
	set_error(err, code, d);
	fusec_result_free(res);
	free(d);
	return NULL;
}

fusec_result *fusec_compile_file(const char *path, const fusec_options *o,
				 const char *out_dir, fusec_error *err)
{
	PlSource src = {.path = path};
	return compile(&src, o, out_dir, err);
}

fusec_result *fusec_compile_bytes(const char *name, const void *data, size_t len,
				  const fusec_options *o, const char *out_dir, fusec_error *err)
{
	/* the readers want text that ends in a 0 past its length */
	char *text = xmalloc(len + 1);
	memcpy(text, data, len);
	text[len] = 0;
	PlSource src = {.path = name ? name : "graph", .text = text, .len = len};
	fusec_result *r = compile(&src, o, out_dir, err);
	free(text);
	return r;
}

void fusec_result_free(fusec_result *r)
{
	if (!r)
		return;
	pl_result_free(&r->r);
	for (int i = 0; i < r->nfiles; i++)
		free(r->path[i]);
	free(r->weights);
	cg_host_free(r->host);
	arena_free(r->a);
	free(r);
}

const char *fusec_result_name(const fusec_result *r)
{
	return r->g->name;
}

long fusec_result_ops(const fusec_result *r)
{
	return r->ops;
}

long fusec_result_launches(const fusec_result *r)
{
	return r->st.launches;
}

long fusec_result_kernels(const fusec_result *r)
{
	return r->st.kernels;
}

double fusec_result_bytes_moved(const fusec_result *r)
{
	return r->st.bytes;
}

int fusec_result_nfiles(const fusec_result *r)
{
	return r->nfiles;
}

const char *fusec_result_file(const fusec_result *r, int i)
{
	return i >= 0 && i < r->nfiles ? r->path[i] : NULL;
}

const void *fusec_result_file_data(fusec_result *r, int i, size_t *len)
{
	if (i < 0 || i >= r->nfiles)
		return NULL;
	const PlFile *f = &r->files[i];
	if (f->weights && !r->weights) {
		FILE *m = open_memstream(&r->weights, &r->wlen);
		if (!m || cg_weights_write_file(f->weights, m) || fclose(m)) {
			free(r->weights);
			r->weights = NULL;
			return NULL;
		}
	}
	if (len)
		*len = f->weights ? r->wlen : f->len;
	return f->weights ? r->weights : f->text;
}

/* ---- running on the host ---------------------------------------------------- */

/* The caller gives the graph's inputs that are not constants (a constant is an
 * input whose value the graph carries, Tensor.data): the k-th of them is
 * g->inputs[given(g, k)], or -1 past the end. */
static int given(const Graph *g, int k)
{
	for (int i = 0; i < g->ninputs; i++)
		if (!g->tensors[g->inputs[i]].data && k-- == 0)
			return i;
	return -1;
}

int fusec_result_ninputs(const fusec_result *r)
{
	int n = 0;
	for (int i = 0; i < r->g->ninputs; i++)
		n += !r->g->tensors[r->g->inputs[i]].data;
	return n;
}

int fusec_result_noutputs(const fusec_result *r)
{
	return r->g->noutputs;
}

static const char *describe(const Tensor *t, const char **dtype, int *rank, int64_t *dims,
			    size_t *bytes)
{
	if (dtype)
		*dtype = ir_dtype_name(t->dtype);
	if (rank)
		*rank = t->rank;
	size_t n = (size_t)ir_dtype_size(t->dtype);
	for (int k = 0; k < t->rank; k++) {
		if (dims)
			dims[k] = t->dim[k];
		n *= (size_t)t->dim[k];
	}
	if (bytes)
		*bytes = n;
	return t->name;
}

const char *fusec_result_input(const fusec_result *r, int i, const char **dtype, int *rank,
			       int64_t *dims, size_t *bytes)
{
	int k = i < 0 ? -1 : given(r->g, i);
	if (k < 0)
		return NULL;
	return describe(&r->g->tensors[r->g->inputs[k]], dtype, rank, dims, bytes);
}

const char *fusec_result_output(const fusec_result *r, int i, const char **dtype, int *rank,
				int64_t *dims, size_t *bytes)
{
	if (i < 0 || i >= r->g->noutputs)
		return NULL;
	return describe(&r->g->tensors[r->g->outputs[i]], dtype, rank, dims, bytes);
}

/* The plan's launches on the host (cmd/run_cpu.c's steps): the caller's inputs,
 * a buffer of ours for every other tensor that needs one, then each output copied
 * out (an output may be an input, or an alias whose entry cg_host_run sets). */
static int run_cpu(fusec_result *r, const void *const *inputs, void *const *outputs, Diag *d)
{
	const Graph *g = r->g;
	if (!r->host && !(r->host = cg_host_new(r->r.s, r->po.allow_tf32, r->po.allow_3xtf32, d)))
		return PL_FAILED;
	const bool *need = cg_host_buffers(r->host);
	int n = g->ntensors ? g->ntensors : 1, rc = PL_OK;
	HostTensor *buf = xcalloc((size_t)n, sizeof *buf);
	void **data = xcalloc((size_t)n, sizeof *data);
	for (int i = 0, k = 0; i < g->ninputs; i++) {
		const Tensor *t = &g->tensors[g->inputs[i]];
		data[g->inputs[i]] = (void *)(t->data ? t->data : inputs[k++]);
	}
	for (int t = 0; t < g->ntensors && !rc; t++) {
		const Tensor *gt = &g->tensors[t];
		if (!need[t] || gt->role == ROLE_INPUT)
			continue;
		if (host_alloc(&buf[t], gt->dtype, gt->rank, gt->dim, d))
			rc = PL_FAILED;
		data[t] = buf[t].data;
	}
	if (!rc && cg_host_run(r->host, data, d))
		rc = PL_FAILED;
	for (int i = 0; i < g->noutputs && !rc; i++) {
		size_t bytes;
		describe(&g->tensors[g->outputs[i]], NULL, NULL, NULL, &bytes);
		if (bytes)
			memcpy(outputs[i], data[g->outputs[i]], bytes);
	}
	for (int t = 0; t < g->ntensors; t++)
		host_free(&buf[t]);
	free(buf);
	free(data);
	return rc;
}

/* The reference interpreter on the caller's inputs (borrowed, not freed). */
static int run_interp(fusec_result *r, const void *const *inputs, void *const *outputs, Diag *d)
{
	const Graph *g = r->g;
	HostTensor *in = xcalloc((size_t)g->ninputs + 1, sizeof *in);
	HostTensor *out = xcalloc((size_t)g->noutputs + 1, sizeof *out);
	for (int i = 0, j = 0; i < g->ninputs; i++) {
		const Tensor *t = &g->tensors[g->inputs[i]];
		in[i].dtype = t->dtype;
		in[i].rank = t->rank;
		in[i].n = 1;
		for (int k = 0; k < t->rank; k++)
			in[i].n *= (in[i].dim[k] = t->dim[k]);
		in[i].data = (void *)(t->data ? t->data : inputs[j++]);
	}
	int rc = interp_run(g, in, out, d) ? PL_INVALID : PL_OK;
	for (int i = 0; i < g->noutputs && !rc; i++) {
		size_t bytes = (size_t)out[i].n * (size_t)ir_dtype_size(out[i].dtype);
		if (bytes)
			memcpy(outputs[i], out[i].data, bytes);
		host_free(&out[i]);
	}
	free(in);
	free(out);
	return rc;
}

int fusec_run(fusec_result *r, int how, const void *const *inputs, void *const *outputs,
	      fusec_error *err)
{
	Diag d;
	memset(&d, 0, sizeof d);
	clear_error(err);
	int rc = PL_USAGE;
	if (how == FUSEC_RUN_CPU)
		rc = run_cpu(r, inputs, outputs, &d);
	else if (how == FUSEC_RUN_INTERP)
		rc = run_interp(r, inputs, outputs, &d);
	else
		diag_set(&d, "", 0, 0, "fusec_run: unknown how %d (FUSEC_RUN_CPU or "
			 "FUSEC_RUN_INTERP)", how);
	if (rc)
		set_error(err, rc, &d);
	return rc;
}

char *fusec_explain(const char *path, const fusec_options *o, const char *op, int json,
		    fusec_error *err)
{
	PlOptions po;
	OnnxInputShape shapes[64];
	PrecisionOptions prec;
	PrecisionInfo pinfo = {0};
	LayoutInfo linfo = {0};
	Diag *d = xcalloc(PL_MAX_ERRORS + 1, sizeof *d);
	Arena *a = arena_new();
	char *text = NULL;
	int nd = 0, code;
	Graph *g = NULL;
	Schedule *s = NULL;
	long opi = -1;
	clear_error(err);
	PlSource src = {.path = path, .shapes = shapes, .nshapes = o ? o->ninput_shapes : 0,
			.max_errors = o ? o->max_errors : 20};
	/* options → load → convert → search → verify → lower (the kernels' names) →
	 * explain */
	if ((code = options(o, &po, &prec, a, shapes, d)))
		goto out;
	LayoutOptions lo = layout_of(o);
	lo.tensor_cores = lo.tensor_cores ||
			  pl_x3_weights(po.allow_3xtf32, po.allow_tf32, o ? o->arch : NULL);
	AttentionInfo ainfo = {0};
	SiblingInfo sinfo = {0};
	int nkmajor = 0;
	if (!(g = pl_load(a, &src, d, &nd)) || pl_simplify(g, o && o->burn_exact, &sinfo) ||
	    pl_attention(g, attention_of(o), &ainfo) ||
	    pl_layout(g, &lo, &linfo) ||
	    (po.precision && pl_convert(g, &prec, &pinfo, d)) ||
	    pl_kmajor(g, o && o->burn_exact, pl_x3_weights(po.allow_3xtf32, po.allow_tf32, o ? o->arch : NULL),
		      &nkmajor)) {
		code = PL_INVALID;
		goto out;
	}
	if (op && ((opi = pl_find_op(g, op)) < 0 || opi >= g->nops)) {
		diag_set(d, "", 0, 0, "op %.200s: %s", op, opi == -2 ? "a graph input; no op writes it"
			 : opi == -1 ? "no op has this index, writes a tensor of this name or has "
				       "this name" : "past the graph's ops");
		code = PL_USAGE;
		goto out;
	}
	if (!(s = pl_schedule(g, &po.search, d))) {
		code = PL_FAILED;
		goto out;
	}
	Diag dk;
	const char **entry = pl_kernel_names(s, po.arch[0], po.allow_tf32, po.allow_3xtf32, a, &dk);
	Buf b = {0};
	/* --layout, --precision: what they did, before the ops they made (as explain) */
	if (!json) {
		pass_siblings_summary(&sinfo, &b);
		pass_attention_summary(&ainfo, &b);
		pass_layout_summary(&linfo, &b);
	}
	if (po.precision && pinfo.shadow && !json)
		pass_precision_summary(g, &pinfo, &b);
	if (!json)
		pass_kmajor_summary(nkmajor, &b);
	pass_explain_ex(s, (int)opi, json != 0, entry, &ainfo, &b);
	text = b.data ? b.data : xcalloc(1, 1);
out:
	if (!text)
		set_error(err, code, d);
	pass_free_schedule(s);
	arena_free(a);
	free(d);
	return text;
}
