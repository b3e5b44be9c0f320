/* plan.c: writes the plan document of a compile (SPEC §6, docs/plan-format.md).
 *
 * Sections, in order: format and compiler, target and options, tensors (role, and
 * whether the runtime allocates a buffer: inputs, outputs, and intermediates some
 * launch writes to memory), kernels (the distinct kernels of the PTX: entry,
 * parameter types, block size, and the fuser, score and ops of their first use),
 * plans (relative ops as `fusec normalize` prints them, triggers, strategy tree),
 * and steps in execution order with their launches: the plan unit it runs
 * (fusec_k<plan>_<unit>, or fusec_op<op> for an op run without a plan), its ops,
 * the tensors it reads and writes, grid, block and one argument per parameter; and
 * the reshapes of the step made aliases and the views sunk into their readers,
 * which launch nothing (codegen.h). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "emit_par.h"
#include "json_write.h"
#include "plan.h"

/* The plan is written as it is walked (json_write.h), compact unless a person asked
 * for the pretty layout; building a cJSON tree of a large plan and printing it was
 * most of the time of a compile. */

static void int_array(JsonW *w, const int *v, int n)
{
	jw_arr(w);
	for (int i = 0; i < n; i++)
		jw_int(w, v[i]);
	jw_end(w);
}

/* A double as the shortest text that reads back the same; non-finite values as
 * the strings "nan", "inf", "-inf" (docs/plan-format.md). */
static void number(JsonW *w, double v)
{
	char text[40];
	fmt_double(text, sizeof text, v);
	if (v != v || v > 1.7976931348623157e308 || v < -1.7976931348623157e308)
		jw_str(w, text);
	else
		jw_raw(w, text);
}

static void relops(JsonW *w, const RelOp *ops, int n, Buf *tmp)
{
	jw_arr(w);
	for (int i = 0; i < n; i++) {
		tmp->len = 0;
		ir_rel_print(tmp, &ops[i]);
		jw_str(w, tmp->data ? tmp->data : "");
	}
	jw_end(w);
}

static void strategy(JsonW *w, const Strategy *st)
{
	jw_obj(w);
	switch (st->kind) {
	case STRAT_FUSED:
		jw_key(w, "kind");
		jw_str(w, "optimization");
		jw_key(w, "fuser");
		jw_str(w, pass_fuser_name(st->fuser));
		jw_key(w, "score");
		jw_int(w, (int64_t)st->score);
		jw_key(w, "ordering");
		int_array(w, st->ordering, st->n);
		break;
	case STRAT_OPS:
		jw_key(w, "kind");
		jw_str(w, "operations");
		jw_key(w, "ordering");
		int_array(w, st->ordering, st->n);
		break;
	case STRAT_COMPOSED:
		jw_key(w, "kind");
		jw_str(w, "composed");
		jw_key(w, "strategies");
		jw_arr(w);
		for (int i = 0; i < st->n; i++)
			strategy(w, st->sub[i]);
		jw_end(w);
		break;
	}
	jw_end(w);
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
	case CG_PARAM_TMAP: return "tmap";
	}
	return "?";
}

/* The step's records in list[*at..] (its aliases or its sunk views, in execution
 * order) as `key: [{op, tensor, <of_key>}]`; nothing when it has none. Advances *at. */
static void no_launch(JsonW *w, const Graph *g, const char *key, const char *of_key,
		      const CgNoLaunch *list, int n, int *at, int step)
{
	if (*at >= n || list[*at].step != step)
		return;
	jw_key(w, key);
	jw_arr(w);
	for (; *at < n && list[*at].step == step; ++*at) {
		jw_obj(w);
		jw_key(w, "op");
		jw_int(w, list[*at].op);
		jw_key(w, "tensor");
		jw_str(w, g->tensors[list[*at].tensor].name);
		jw_key(w, of_key);
		jw_str(w, g->tensors[list[*at].of].name);
		jw_end(w);
	}
	jw_end(w);
}

static void dim3(JsonW *w, int64_t x, int64_t y, int64_t z)
{
	jw_arr(w);
	jw_int(w, x);
	jw_int(w, y);
	jw_int(w, z);
	jw_end(w);
}

/* A size of a plan for every size: a number, or its expression as a string. */
static void size_json(JsonW *w, const IrSymbolic *sym, const DimExpr *e, Buf *tmp)
{
	int64_t v;
	if (ir_dim_is_const(e, &v)) {
		jw_int(w, v);
		return;
	}
	tmp->len = 0;
	ir_dim_print(tmp, e, sym->name);
	jw_str(w, tmp->data);
}

/* A launch's sizes in a plan for every size: per shape id from 1 on, the
 * expression of the tensor dim it came from (CgBound.dsrc). */
static void launch_dims_json(JsonW *w, const Graph *g, const CgBound *b)
{
	Buf tmp = {0};
	jw_key(w, "dims");
	jw_arr(w);
	for (int s = 1; s < b->ndims; s++)
		size_json(w, g->sym, &g->sym->dim[b->dsrc[2 * s]][b->dsrc[2 * s + 1]], &tmp);
	jw_end(w);
	buf_free(&tmp);
}

/* A kernel's launch rule in a plan for every size (launch_rule.h). */
static void rule_json(JsonW *w, const CgLaunch *l)
{
	jw_key(w, "launch");
	jw_obj(w);
	jw_key(w, "rule");
	jw_str(w, cg_rule_name(l->coop ? l->rule : CG_RULE_NONE));
	jw_key(w, "block");
	jw_int(w, l->block);
	if (l->coop) {
		int n = 16;
		while (n > 0 && !l->arg[n - 1])
			n--;
		jw_key(w, "arg");
		jw_arr(w);
		for (int i = 0; i < n; i++)
			jw_int(w, l->arg[i]);
		jw_end(w);
	} else {
		jw_key(w, "work");
		jw_arr(w);
		for (int i = 0; i < l->nwork; i++)
			jw_int(w, l->work[i]);
		jw_end(w);
		jw_key(w, "vec");
		jw_int(w, l->vec);
		jw_key(w, "max_grid");
		jw_int(w, l->max_grid);
	}
	jw_end(w);
}

/* A tensor map argument: {"tmap": {"tensor", "dims", "strides", "box"}}; in a plan
 * for every size each dim is {"dim": shape id} and each stride {"dims": [shape ids],
 * "bytes": element bytes}, the product of those sizes and bytes. */
static void tmap_json(JsonW *w, const Graph *g, const CgArg *a)
{
	const CgTmap *tm = &a->tm;
	jw_key(w, "tmap");
	jw_obj(w);
	jw_key(w, "tensor");
	jw_str(w, g->tensors[a->tensor].name);
	jw_key(w, "dims");
	jw_arr(w);
	for (int k = 0; k < tm->rank; k++) {
		if (!g->sym) {
			jw_int(w, tm->dim[k]);
			continue;
		}
		jw_obj(w);
		jw_key(w, "dim");
		jw_int(w, tm->dim_id[k]);
		jw_end(w);
	}
	jw_end(w);
	jw_key(w, "strides");
	jw_arr(w);
	for (int k = 1; k < tm->rank; k++) {
		if (!g->sym) {
			jw_int(w, tm->stride[k]);
			continue;
		}
		jw_obj(w);
		jw_key(w, "dims");
		jw_arr(w);
		for (int i = 0; i < tm->nsid[k]; i++)
			jw_int(w, tm->sid[k][i]);
		jw_end(w);
		jw_key(w, "bytes");
		jw_int(w, tm->es);
		jw_end(w);
	}
	jw_end(w);
	jw_key(w, "box");
	jw_arr(w);
	for (int k = 0; k < a->tm.rank; k++)
		jw_int(w, a->tm.box[k]);
	jw_end(w);
	jw_end(w);
}

static void args_json(JsonW *w, const Graph *g, const CgBound *b)
{
	jw_key(w, "args");
	jw_arr(w);
	for (int p = 0; p < b->nargs; p++) {
		const CgArg *a = &b->args[p];
		jw_obj(w);
		switch (a->kind) {
		case CG_ARG_TENSOR:
			jw_key(w, "tensor");
			jw_str(w, g->tensors[a->tensor].name);
			break;
		case CG_ARG_F64:
			jw_key(w, "f64");
			number(w, a->f);
			break;
		case CG_ARG_I64:
			if (g->sym) {   /* the size of a shape id of the launch's dims */
				jw_key(w, "dim");
				jw_int(w, b->kernel->params[p].id);
				break;
			}
			jw_key(w, "i64");
			jw_int(w, a->i);
			break;
		case CG_ARG_SCRATCH:
			jw_key(w, "scratch");
			if (g->sym)
				jw_bool(w, true);   /* the rule's bytes */
			else
				jw_int(w, a->i);
			break;
		case CG_ARG_TMAP:
			tmap_json(w, g, a);
			break;
		}
		jw_end(w);
	}
	jw_end(w);
}

/* A launch of a step; `people`: with what a runtime does not read (the unit, its
 * ops, the tensors read and written), which a variant's launch leaves to the
 * launch of the top level in the same place. */
static void launch_json(JsonW *w, const Schedule *s, const CgBound *b, bool people)
{
	const Graph *g = s->g;
	const CgKernel *k = b->kernel;
	const Kernel *unit = &s->kernels[b->unit];
	jw_obj(w);
	jw_key(w, "kernel");
	jw_str(w, k->name);
	if (people) {
		jw_key(w, "unit");
		jw_str(w, unit->name);
		const Launch *l = NULL;
		const Step *st = &s->steps[b->step];
		for (int i = 0; i < st->nlaunch && !l; i++)
			if (st->launch[i].kernel == b->unit)
				l = &st->launch[i];
		if (l) {
			jw_key(w, "ops");
			int_array(w, l->ops, l->nops);
		}
		for (int pass = 0; pass < 2; pass++) {
			jw_key(w, pass ? "writes" : "reads");
			jw_arr(w);
			for (int p = 0; p < k->nparams; p++)
				if (k->params[p].kind == CG_PARAM_BUFFER &&
				    (pass ? k->params[p].written : k->params[p].read))
					jw_str(w, g->tensors[b->args[p].tensor].name);
			jw_end(w);
		}
	}
	if (g->sym) {
		/* for every size: the runtime applies the kernel's rule to these */
		launch_dims_json(w, g, b);
	} else {
		jw_key(w, "grid");
		dim3(w, b->at.grid[0], b->at.grid[1], b->at.grid[2]);
		jw_key(w, "block");
		dim3(w, b->at.block[0], b->at.block[1], b->at.block[2]);
		jw_key(w, "shared_bytes");
		jw_int(w, b->at.shared_bytes);
	}
	args_json(w, g, b);
	jw_end(w);
}

uint64_t cg_weights_layout(const Graph *g, int64_t *offsets)
{
	uint64_t at = 0;
	for (int i = 0; i < g->ntensors; i++) {
		const Tensor *t = &g->tensors[i];
		offsets[i] = -1;
		if (!t->data)
			continue;
		uint64_t n = (uint64_t)ir_dtype_size(t->dtype);
		for (int k = 0; k < t->rank; k++)
			n *= (uint64_t)t->dim[k];
		at = (at + CG_WEIGHTS_ALIGN - 1) / CG_WEIGHTS_ALIGN * CG_WEIGHTS_ALIGN;
		offsets[i] = (int64_t)at;
		at += n;
	}
	return at;
}

uint64_t cg_weights_layout_size(const Graph *g)
{
	int64_t *off = xmalloc(sizeof *off * (size_t)(g->ntensors + 1));
	uint64_t n = cg_weights_layout(g, off);
	free(off);
	return n;
}

/* The weights file's bytes in order, as pieces (zero padding, then a constant's
 * data): piece returns 0 to go on. The one walk behind writing, hashing and
 * comparing the file, so the three cannot disagree on the layout. */
static int weights_each(const Graph *g, int (*piece)(void *ctx, const void *p, size_t n),
			void *ctx)
{
	static const char zero[CG_WEIGHTS_ALIGN];
	uint64_t at = 0;
	for (int i = 0; i < g->ntensors; i++) {
		const Tensor *t = &g->tensors[i];
		if (!t->data)
			continue;
		size_t n = (size_t)ir_dtype_size(t->dtype);
		for (int k = 0; k < t->rank; k++)
			n *= (size_t)t->dim[k];
		size_t pad = (CG_WEIGHTS_ALIGN - at % CG_WEIGHTS_ALIGN) % CG_WEIGHTS_ALIGN;
		if ((pad && piece(ctx, zero, pad)) || piece(ctx, t->data, n))
			return -1;
		at += pad + n;
	}
	return 0;
}

static int piece_write(void *f, const void *p, size_t n)
{
	return fwrite(p, 1, n, f) == n ? 0 : -1;
}

int cg_weights_write_file(const Graph *g, FILE *f)
{
	return weights_each(g, piece_write, f);
}

static int piece_hash(void *h, const void *p, size_t n)
{
	sha256_add(h, p, n);
	return 0;
}

void cg_weights_sha256(const Graph *g, char out[65])
{
	Sha256 *h = sha256_begin();
	weights_each(g, piece_hash, h);
	sha256_end(h, out);
}

typedef struct {
	const unsigned char *at;   /* the mapped file, advanced piece by piece */
} Cursor;

static int piece_compare(void *c, const void *p, size_t n)
{
	Cursor *cur = c;
	int rc = memcmp(cur->at, p, n) ? -1 : 0;
	cur->at += n;
	return rc;
}

bool cg_weights_same(const Graph *g, const char *path)
{
	uint64_t total = cg_weights_layout_size(g);
	/* only a regular file is compared (and so kept): opening a pipe must not wait
	 * for a writer, and a symbolic link is replaced like any other output */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return false;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != total || !total) {
		close(fd);
		return false;
	}
	const unsigned char *m = mmap(NULL, (size_t)total, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return false;
	Cursor cur = {m};
	bool same = weights_each(g, piece_compare, &cur) == 0;
	munmap((void *)m, (size_t)total);
	return same;
}

/* The distinct kernels of a lowering; the first launch of each names its fuser,
 * score and ops. */
static void kernels_json(JsonW *w, const Schedule *s, const CgProgram *prog)
{
	const Graph *g = s->g;
	/* the first launch of each kernel names its fuser, score and ops */
	int nidx = 1;
	for (int i = 0; i < prog->nkernels; i++)
		if (prog->kernels[i]->index + 1 > nidx)
			nidx = prog->kernels[i]->index + 1;
	const CgBound **first = xcalloc((size_t)nidx, sizeof *first);
	for (int i = prog->nlaunch - 1; i >= 0; i--)
		first[prog->launch[i].kernel->index] = &prog->launch[i];
	jw_arr(w);
	for (int i = 0; i < prog->nkernels; i++) {
		const CgKernel *ck = prog->kernels[i];
		const Kernel *k = &s->kernels[first[ck->index]->unit];
		jw_obj(w);
		jw_key(w, "name");
		jw_str(w, ck->name);
		jw_key(w, "entry");
		jw_str(w, ck->name);
		jw_key(w, "kind");
		jw_str(w, cg_kernel_kind_name(ck->kind));
		jw_key(w, "params");
		jw_arr(w);
		for (int p = 0; p < ck->nparams; p++)
			jw_str(w, param_type(&ck->params[p]));
		jw_end(w);
		jw_key(w, "block");
		dim3(w, ck->launch.block, 1, 1);
		if (ck->pdl) {
			/* starts by waiting for the grids before it (griddepcontrol) */
			jw_key(w, "pdl");
			jw_bool(w, true);
		}
		if (ck->variant > 0 && cg_matmul_cluster(ck->variant) > 1) {
			/* launched in clusters of this many blocks along x */
			jw_key(w, "cluster");
			jw_int(w, cg_matmul_cluster(ck->variant));
		}
		jw_key(w, "shared_bytes");
		jw_int(w, 0);
		jw_key(w, "vectorized");
		jw_bool(w, ck->vectorized);
		if (g->sym)
			rule_json(w, &ck->launch);
		if (ck->shape) {
			jw_key(w, "shape");
			jw_str(w, ck->shape);
		}
		if (ck->variant > 0) {
			jw_key(w, "tiles");
			jw_str(w, cg_matmul_variant_name(ck->variant));
		}
		jw_key(w, "fuser");
		jw_str(w, k->fuser >= 0 ? pass_fuser_name(k->fuser) : "none");
		jw_key(w, "score");
		jw_int(w, (int64_t)k->score);
		jw_key(w, "ops");
		int_array(w, k->ops, k->nops);
		jw_key(w, "op_names");
		jw_arr(w);
		for (int j = 0; j < k->nops; j++) {
			char buf[96];
			jw_str(w, ir_op_display(g, &g->ops[k->ops[j]], buf, sizeof buf));
		}
		jw_end(w);
		jw_end(w);
	}
	jw_end(w);
	free(first);
}

/* Lowering for another arch must not change what the targets share (tensors,
 * buffers, aliases, views, launches per step): the plan writes them once. */
static bool same_lowering(const Graph *g, const CgProgram *a, const CgProgram *b)
{
	bool same = a->nlaunch == b->nlaunch && a->naliases == b->naliases &&
		    a->nviews == b->nviews;
	for (int i = 0; same && i < a->nlaunch; i++)
		same = a->launch[i].step == b->launch[i].step &&
		       a->launch[i].unit == b->launch[i].unit;
	for (int t = 0; same && t < g->ntensors; t++)
		same = a->buffer[t] == b->buffer[t] && a->alias[t] == b->alias[t] &&
		       a->nhwc[t] == b->nhwc[t];
	return same;
}

static void check_same_lowering(const Graph *g, const CgProgram *a, const CgProgram *b)
{
	if (!same_lowering(g, a, b))
		die("the lowerings for two arches differ in more than kernels and launches");
}

/* A variant's range of sizes: "dims", as the top level's. */
static void bucket_json(JsonW *w, const IrSymbolic *sym, const PlanTarget *pt)
{
	jw_key(w, "dims");
	jw_arr(w);
	for (int k = 0; k < sym->nsym; k++) {
		jw_obj(w);
		jw_key(w, "name");
		jw_str(w, sym->name[k]);
		jw_key(w, "min");
		jw_int(w, pt->lo[k]);
		jw_key(w, "max");
		jw_int(w, pt->hi[k]);
		jw_end(w);
	}
	jw_end(w);
}

/* "variants": every target after the first, each with its PTX and what differs:
 * its kernels and, in execution order, its launches (one per launch of the
 * steps). */
static void variants_json(JsonW *w, const Schedule *s, const CgProgram *prog,
			  const PlanFileInfo *info)
{
	jw_key(w, "variants");
	jw_arr(w);
	for (int t = 1; t < info->ntargets; t++) {
		const PlanTarget *pt = &info->target[t];
		check_same_lowering(s->g, &prog[0], &prog[t]);
		jw_obj(w);
		jw_key(w, "arch");
		jw_str(w, pt->arch);
		if (pt->lo)
			bucket_json(w, s->g->sym, pt);
		jw_key(w, "ptx");
		jw_str(w, pt->ptx);
		if (pt->ptx_sha256) {
			jw_key(w, "ptx_sha256");
			jw_str(w, pt->ptx_sha256);
		}
		jw_key(w, "kernels");
		kernels_json(w, s, &prog[t]);
		jw_key(w, "launches");
		jw_arr(w);
		for (int i = 0; i < prog[t].nlaunch; i++)
			launch_json(w, s, &prog[t].launch[i], false);
		jw_end(w);
		jw_end(w);
	}
	jw_end(w);
}

char *cg_plan_json(const Schedule *s, const CgProgram *prog, const PlanFileInfo *info)
{
	const Graph *g = s->g;
	int64_t *woff = xmalloc(sizeof *woff * (size_t)(g->ntensors + 1));
	cg_weights_layout(g, woff);
	Buf out = {0}, tmp = {0};
	JsonW jw, *w = &jw;
	jw_init(w, &out, info->pretty);
	jw_obj(w);
	jw_key(w, "format");
	jw_str(w, g->sym ? CG_PLAN_FORMAT2 : CG_PLAN_FORMAT);
	jw_key(w, "compiler");
	jw_str(w, "fusec " FUSEC_VERSION);
	jw_key(w, "name");
	jw_str(w, g->name);
	if (g->sym) {   /* the named dims it was compiled for, and their ranges */
		jw_key(w, "dims");
		jw_arr(w);
		for (int k = 0; k < g->sym->nsym; k++) {
			jw_obj(w);
			jw_key(w, "name");
			jw_str(w, g->sym->name[k]);
			jw_key(w, "min");
			jw_int(w, g->sym->lo[k]);
			jw_key(w, "max");
			jw_int(w, g->sym->hi[k]);
			jw_end(w);
		}
		jw_end(w);
	}
	jw_key(w, "arch");
	jw_str(w, info->target[0].arch);
	jw_key(w, "ptx");
	jw_str(w, info->target[0].ptx);
	if (info->target[0].ptx_sha256) {
		jw_key(w, "ptx_sha256");
		jw_str(w, info->target[0].ptx_sha256);
	}
	if (info->weights) {
		jw_key(w, "weights");
		jw_str(w, info->weights);
		if (info->weights_sha256) {
			jw_key(w, "weights_sha256");
			jw_str(w, info->weights_sha256);
		}
	}
	jw_key(w, "options");
	jw_obj(w);
	jw_key(w, "max_blocks");
	jw_int(w, s->opt.max_blocks);
	jw_key(w, "max_explorations");
	if (s->opt.max_explorations >= 0)
		jw_int(w, s->opt.max_explorations);
	else
		jw_null(w);
	jw_key(w, "max_bindings");
	jw_int(w, s->opt.max_bindings);
	if (info->libdevice) {
		jw_key(w, "libdevice");
		jw_str(w, info->libdevice);
	}
	if (info->allow_tf32) {
		jw_key(w, "allow_tf32");
		jw_bool(w, true);
	}
	if (info->allow_3xtf32 && !info->allow_tf32) {   /* tf32 wins */
		jw_key(w, "allow_3xtf32");
		jw_bool(w, true);
	}
	if (s->opt.burn_exact) {
		jw_key(w, "burn_exact");
		jw_bool(w, true);
	}
	if (info->precision) {   /* docs/precision.md */
		jw_key(w, "precision");
		jw_str(w, info->precision);
		if (info->keep_f32) {
			jw_key(w, "keep_f32");
			jw_str(w, info->keep_f32);
		}
	}
	jw_end(w);

	jw_key(w, "tensors");
	jw_arr(w);
	for (int i = 0; i < g->ntensors; i++) {
		const Tensor *t = &g->tensors[i];
		jw_obj(w);
		jw_key(w, "name");
		jw_str(w, t->name);
		jw_key(w, "dtype");
		jw_str(w, ir_dtype_name(t->dtype));
		/* a channel-last tensor (NHWCRelayout): its dims in memory order */
		bool nhwc = prog->nhwc && prog->nhwc[i] && t->rank == 4;
		static const int nhwc_order[4] = {0, 2, 3, 1};
		jw_key(w, "shape");
		jw_arr(w);
		for (int d = 0; d < t->rank; d++) {
			int at = nhwc ? nhwc_order[d] : d;
			if (g->sym)
				size_json(w, g->sym, &g->sym->dim[i][at], &tmp);
			else
				jw_int(w, t->dim[at]);
		}
		jw_end(w);
		if (nhwc) {
			jw_key(w, "layout");
			jw_str(w, "nhwc");
		}
		jw_key(w, "role");
		jw_str(w, t->role == ROLE_INPUT ? "input" : t->is_output ? "output" : "intermediate");
		if (t->role == ROLE_INPUT && t->is_output) {
			jw_key(w, "output");
			jw_bool(w, true);
		}
		if (t->data && info->weights) {
			jw_key(w, "constant");
			jw_int(w, woff[i]);
		}
		if (prog->alias[i] >= 0) {
			jw_key(w, "alias");
			jw_str(w, g->tensors[prog->alias[i]].name);
		}
		jw_key(w, "buffer");
		jw_bool(w, prog->buffer[i]);
		jw_end(w);
	}
	jw_end(w);

	jw_key(w, "kernels");
	kernels_json(w, s, prog);

	jw_key(w, "plans");
	jw_arr(w);
	for (int i = 0; i < s->nplans; i++) {
		const Plan *p = s->plans[i];
		jw_obj(w);
		jw_key(w, "id");
		jw_int(w, p->id);
		jw_key(w, "ops");
		relops(w, p->ops, p->nops, &tmp);
		jw_key(w, "triggers");
		jw_arr(w);
		for (int t = 0; t < p->ntriggers; t++) {
			jw_obj(w);
			jw_key(w, "kind");
			jw_str(w, pass_trigger_name(p->triggers[t].kind));
			if (p->triggers[t].kind == TRIG_ON_OPERATIONS) {
				jw_key(w, "ops");
				relops(w, p->triggers[t].ops, p->triggers[t].nops, &tmp);
			}
			jw_end(w);
		}
		jw_end(w);
		jw_key(w, "strategy");
		strategy(w, p->strategy);
		jw_key(w, "units");
		jw_arr(w);
		for (int k = 0; k < p->nkernels; k++)
			jw_str(w, s->kernels[p->first_kernel + k].name);
		jw_end(w);
		jw_end(w);
	}
	jw_end(w);

	jw_key(w, "steps");
	jw_arr(w);
	int bi = 0, ai = 0, vi = 0;
	for (int i = 0; i < s->nsteps; i++) {
		const Step *st = &s->steps[i];
		jw_obj(w);
		jw_key(w, "segment");
		jw_int(w, st->segment);
		jw_key(w, "stream");
		jw_int(w, st->stream);
		jw_key(w, "plan");
		if (st->plan >= 0)
			jw_int(w, st->plan);
		else
			jw_null(w);
		jw_key(w, "mode");
		jw_str(w, step_mode(st));
		jw_key(w, "exec");
		jw_str(w, st->mode == MODE_SYNC ? "sync" : "lazy");
		if (st->guarded) {
			jw_key(w, "unfused_guard");
			jw_bool(w, true);
		}
		jw_key(w, "ops");
		int_array(w, st->ops, st->nops);
		jw_key(w, "launches");
		jw_arr(w);
		for (; bi < prog->nlaunch && prog->launch[bi].step == i; bi++)
			launch_json(w, s, &prog->launch[bi], true);
		jw_end(w);
		no_launch(w, g, "aliases", "of", prog->aliases, prog->naliases, &ai, i);
		no_launch(w, g, "views", "read_through", prog->views, prog->nviews, &vi, i);
		jw_end(w);
	}
	jw_end(w);
	if (info->ntargets > 1)
		variants_json(w, s, prog, info);
	jw_end(w);
	buf_free(&tmp);
	free(woff);
	if (!out.data)
		die("empty plan text");
	return out.data;
}

static void llvm_progress(void *arg, int done, int total)
{
	const PlanFileInfo *info = arg;
	info->progress("llvm", done, total);
}

/* Lower s for one target and emit its PTX (and its IR with want_ll) into ptx, ll;
 * prog lives in a. Adds its times and counts to *out. */
static int compile_target(const Schedule *s0, const PlanFileInfo *info, const PlanTarget *pt,
			  bool want_ll, Arena *a, CgProgram *prog, Buf *ptx, Buf *ll,
			  CgOutputs *out, Diag *d)
{
	/* a variant for a range of sizes: the schedule lowered from the graph at probe
	 * sizes in that range (the same ops and tensors; its tiles are chosen there) */
	Schedule sv = *s0;
	if (pt->g)
		sv.g = pt->g;
	const Schedule *s = &sv;
	const char *arch = pt->arch;
	CgOptions co = {.target = CG_TARGET_NVPTX, .arch = arch,
			.libdevice = info->libdevice, .name = s->g->name,
			.allow_tf32 = info->allow_tf32, .allow_3xtf32 = info->allow_3xtf32};
	double t0 = clock_seconds();
	if (info->progress)
		info->progress("kernels", 0, 0);
	CgModule *m = cg_module_new(&co, a, d);
	if (m && !want_ll)
		cg_module_chunked(m);
	int rc = !m || cg_lower(m, s, a, prog, d) ? -1 : 0;
	double t1 = clock_seconds(), t2 = t1;
	if (!rc && info->progress)
		info->progress("llvm", 0, prog->nkernels);
	if (!want_ll) {
		CgEmitStats es = {0};
		int threads = info->threads > 0 ? info->threads : cg_default_threads();
		rc = rc || cg_module_emit_chunked(m, threads, info->cache_dir,
						  info->progress ? llvm_progress : NULL, (void *)info,
						  ptx, &es, d);
		out->chunks += es.chunks;
		out->threads = es.threads > out->threads ? es.threads : out->threads;
		out->twins += es.twins;
		if (info->cache_dir)
			out->cache_hits += es.hits;
	} else {
		rc = rc || cg_module_finish(m, d) ? -1 : 0;
		t2 = clock_seconds();
		rc = rc || cg_module_emit_ptx(m, ptx, d) || cg_module_emit_ll(m, ll, d) ? -1 : 0;
		out->threads = 1;
	}
	double t3 = clock_seconds();
	cg_module_free(m);
	if (!rc) {
		out->nkernels += prog->nkernels;
		out->t_kernels += t1 - t0;
		out->t_optimize += t2 - t1;
		out->t_emit += t3 - t2;
	}
	return rc;
}

int cg_compile_schedule(const Schedule *s, const PlanFileInfo *info, bool want_ll,
			CgOutputs *out, Diag *d)
{
	memset(out, 0, sizeof *out);
	if (info->ntargets < 1 || info->ntargets > CG_MAX_TARGETS)
		die("cg_compile_schedule: %d targets", info->ntargets);
	Arena *a = arena_new();
	CgProgram prog[CG_MAX_TARGETS];
	out->ntargets = info->ntargets;
	out->cache_hits = info->cache_dir ? 0 : -1;
	int rc = 0;
	for (int t = 0; t < info->ntargets && !rc; t++) {
		rc = compile_target(s, info, &info->target[t], want_ll, a, &prog[t],
				    &out->ptx[t], &out->ll[t], out, d);
		if (!rc && info->target[t].g && !same_lowering(s->g, &prog[0], &prog[t])) {
			diag_set(d, s->g->file, 0, 0, "internal: the plan's variant for a range of "
				 "sizes lowers to other launches than the whole range's; compile "
				 "with --shape-buckets 1");
			rc = -1;
		}
	}
	if (!rc) {
		double t3 = clock_seconds();
		if (info->progress)
			info->progress("plan", out->nkernels, out->nkernels);
		char sha[CG_MAX_TARGETS][65];
		PlanFileInfo hashed = *info;
		for (int t = 0; t < info->ntargets; t++) {
			sha256_hex(out->ptx[t].data, out->ptx[t].len, sha[t]);
			hashed.target[t].ptx_sha256 = sha[t];
		}
		char *text = cg_plan_json(s, prog, &hashed);
		size_t len = strlen(text);
		out->plan = xrealloc(text, len + 2);
		out->plan[len] = '\n';
		out->plan[len + 1] = 0;
		out->t_plan = clock_seconds() - t3;
	} else {
		cg_outputs_free(out);
	}
	arena_free(a);
	return rc;
}

void cg_outputs_free(CgOutputs *o)
{
	for (int t = 0; t < CG_MAX_TARGETS; t++) {
		buf_free(&o->ptx[t]);
		buf_free(&o->ll[t]);
	}
	free(o->plan);
	o->plan = NULL;
}
