/* test_backends.c: the generated kernels against the reference interpreter.
 *
 * Every graph here runs twice: through the fusion search, cg_lower and the host JIT
 * (the `cpu` backend, cg_host_*) and through host/interp.c, and every output is
 * compared against its error bound from interp_run_bounds (check_compare). The graphs are
 * - the op matrix: every op of the table but sync, at each dtype its rule accepts,
 *   alone (one op between syncs: it runs unfused) and inside a fused block (an
 *   elementwise prologue and epilogue, a Reduce or Matmul block); the fuser each op
 *   ended in is checked against what the fusers promise;
 * - seeded random graphs from graphgen.c;
 * - the seed's golden cases, whose kernel counts the search issue promises.
 * The same graphs are then compiled for NVPTX (sm_90 and sm_80) in batches, one
 * module per batch, and assembled with ptxas when it exists.
 *
 * Where the two sides differ on purpose the inputs stay out of the way: gather
 * indices lie inside the axis (the interpreter errors, the kernels clamp); float
 * divisors of div and rem are in [0.5, 2) (float rem by 0 is NaN on both sides, but
 * near 0 the quotient is ill-conditioned); f16/bf16 comparisons and roundings only
 * read values that both sides hold exactly (fused kernels keep intermediates in f32
 * registers, the interpreter rounds each op to the tensor's dtype). */
#include <errno.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../codegen/codegen.h"
#include "../../host/interp.h"
#include "graphgen.h"
#include "test.h"

extern char **environ;

enum {
	RANDOM_GRAPHS = 200,     /* seeds 1 .. RANDOM_GRAPHS */
	PTX_BATCH = 48,          /* graphs per NVPTX module */
};

static double worst_ratio;       /* max error/bound over every output compared */
static bool exact_compare;       /* run_both: outputs must equal the interpreter's */
static double ptx_seconds;       /* NVPTX lowering, emission and ptxas */
static double ptxas_seconds;     /* of which ptxas */
static int ptx_kernels, ptx_runs;
static int ptx_coop;             /* cooperative kernels among them */

/* ---- one graph: build, search, run on both sides, compare --------------------- */

typedef struct {
	Arena *arena;
	Graph *g;
	Schedule *s;
	char *text;
	char label[96];
	bool tf32;               /* the cpu backend lowers with allow_tf32 */
} Built;

static void built_free(Built *b)
{
	if (b->s)
		pass_free_schedule(b->s);
	arena_free(b->arena);
	free(b->text);
	memset(b, 0, sizeof *b);
}

static void built_new(Built *b, const GenGraph *gg, const char *label)
{
	memset(b, 0, sizeof *b);
	snprintf(b->label, sizeof b->label, "%s", label);
	b->text = gen_text(gg, "backends");
	b->arena = arena_new();
	Diag d;
	b->g = ir_read_mem(b->arena, label, b->text, strlen(b->text), FMT_JSON, &d);
	if (!b->g) {
		char msg[1100];
		diag_format(&d, msg, sizeof msg);
		fprintf(stderr, "%s\n", b->text);
		fail_msg("%s: graph does not validate: %s", label, msg);
	}
	SearchOptions so;
	pass_default_options(&so);
	so.no_record = true;
	b->s = test_search(b->g, &so);
}

static void fill_input(HostTensor *t, const GenInput *gi, uint64_t seed)
{
	HostRng r;
	host_rng_init(&r, seed, host_input_stream(gi->name));
	host_fill_random(t, &r, gi->lo, gi->hi);
	if (!ir_dtype_is_float(t->dtype))
		return;
	for (int64_t i = 0; i < t->n; i++) {
		if (gi->step > 0)
			host_set(t, i, round(host_get(t, i) / gi->step) * gi->step);
		if (gi->special && i % 11 == 3)
			host_set(t, i, NAN);
		else if (gi->special && i % 13 == 5)
			host_set(t, i, i % 2 ? INFINITY : -INFINITY);
	}
}

static void report_output(const Built *b, const char *what, const HostTensor *got,
			  const HostTensor *want, const CheckResult *c)
{
	char gs[64], ws[64];
	fprintf(stderr, "[backends] %s: output %s %s (want %s): %lld bad, max_abs=%g "
		"max_err/bound=%g",
		b->label, what, host_shape_text(got->dtype, got->rank, got->dim, gs, sizeof gs),
		host_shape_text(want->dtype, want->rank, want->dim, ws, sizeof ws),
		(long long)c->nbad, c->max_abs, c->max_ratio);
	if (c->nworst)
		fprintf(stderr, "; worst element %lld: cpu %.9g, interp %.9g, bound %g",
			(long long)c->worst[0].index, c->worst[0].got, c->worst[0].want,
			c->worst[0].bound);
	fputc('\n', stderr);
}

/* Run b on the cpu backend and the interpreter with inputs drawn for seed. Returns
 * the number of outputs over tolerance (each reported); out_label[i] names output i
 * in messages (NULL: the tensor's name). Fails the test on any error. */
static int run_both(Built *b, const GenGraph *gg, uint64_t seed, const char *const *out_label)
{
	const Graph *g = b->g;
	Diag d;
	char msg[1100];
	HostTensor *in = xcalloc((size_t)g->ninputs + 1, sizeof *in);
	for (int i = 0; i < g->ninputs; i++) {
		const Tensor *t = &g->tensors[g->inputs[i]];
		const GenInput *gi = gen_find_input(gg, t->name);
		assert_non_null(gi);
		assert_int_equal(host_alloc(&in[i], t->dtype, t->rank, t->dim, &d), 0);
		fill_input(&in[i], gi, seed);
	}
	HostTensor *ref = xcalloc((size_t)g->noutputs + 1, sizeof *ref);
	HostTensor *bound = xcalloc((size_t)g->noutputs + 1, sizeof *bound);
	if (interp_run_bounds_tf32(g, in, ref, bound, b->tf32, &d)) {
		diag_format(&d, msg, sizeof msg);
		fprintf(stderr, "%s\n", b->text);
		fail_msg("%s: interpreter: %s", b->label, msg);
	}

	/* 3xTF32 allowed as by default (a forced wgx3 tile needs it) */
	CgHost *h = cg_host_new(b->s, b->tf32, !b->tf32, &d);
	if (!h) {
		diag_format(&d, msg, sizeof msg);
		fprintf(stderr, "%s\n", b->text);
		fail_msg("%s: cpu backend: %s", b->label, msg);
	}
	const bool *need = cg_host_buffers(h);
	int nt = g->ntensors ? g->ntensors : 1;
	HostTensor *own = xcalloc((size_t)nt, sizeof *own);
	void **data = xcalloc((size_t)nt, sizeof *data);
	for (int i = 0; i < g->ninputs; i++)
		data[g->inputs[i]] = in[i].data;
	for (int t = 0; t < g->ntensors; t++) {
		const Tensor *gt = &g->tensors[t];
		if (!need[t] || gt->role == ROLE_INPUT)
			continue;
		assert_int_equal(host_alloc(&own[t], gt->dtype, gt->rank, gt->dim, &d), 0);
		/* poison: a kernel that forgets to write shows up */
		memset(own[t].data, 0x5a, (size_t)own[t].n * (size_t)ir_dtype_size(gt->dtype));
		data[t] = own[t].data;
	}
	if (cg_host_run(h, data, &d)) {
		diag_format(&d, msg, sizeof msg);
		fail_msg("%s: cpu run: %s", b->label, msg);
	}

	int bad = 0;
	for (int i = 0; i < g->noutputs; i++) {
		int t = g->outputs[i];
		const Tensor *gt = &g->tensors[t];
		HostTensor got = {gt->dtype, gt->rank, {0}, 1, data[t]};
		memcpy(got.dim, gt->dim, sizeof got.dim);
		for (int k = 0; k < gt->rank; k++)
			got.n *= gt->dim[k];
		assert_non_null(got.data);
		CheckResult c;
		/* exact_compare: the outputs must equal the interpreter's */
		check_compare(&got, &ref[i], exact_compare ? NULL : &bound[i], 0, 0, &c);
		if (c.max_ratio > worst_ratio)
			worst_ratio = c.max_ratio;
		if (!c.ok) {
			report_output(b, out_label && out_label[i] ? out_label[i] : gt->name, &got,
				      &ref[i], &c);
			bad++;
		}
	}
	if (bad)
		fprintf(stderr, "[backends] %s: graph (seed %llu):\n%s", b->label,
			(unsigned long long)seed, b->text);

	for (int t = 0; t < g->ntensors; t++)
		host_free(&own[t]);
	free(own);
	free(data);
	cg_host_free(h);
	for (int i = 0; i < g->noutputs; i++) {
		host_free(&ref[i]);
		host_free(&bound[i]);
	}
	free(ref);
	free(bound);
	for (int i = 0; i < g->ninputs; i++)
		host_free(&in[i]);
	free(in);
	return bad;
}

/* The launch that runs global op `op`; fails when none does. */
static const Launch *launch_of(const Schedule *s, int op)
{
	for (int i = 0; i < s->nsteps; i++)
		for (int j = 0; j < s->steps[i].nlaunch; j++) {
			const Launch *l = &s->steps[i].launch[j];
			for (int k = 0; k < l->nops; k++)
				if (l->ops[k] == op)
					return l;
		}
	fail_msg("op %d is in no launch", op);
	return NULL;
}

/* ---- ptxas --------------------------------------------------------------------- */


static void need_ptxas(void)
{
	if (test_find_ptxas())
		return;
	fprintf(stderr, "[backends] ptxas not found (PATH, /usr/local/cuda/bin): "
		"PTX is not assembled; skipping\n");
	skip();
}

/* ptxas runs in the background while the next module is built, PTXAS_JOBS at once. */
enum { PTXAS_JOBS = 2 };

typedef struct {
	pid_t pid;               /* 0: none in flight */
	char file[64];
	char arch[16];
	char what[300];
} PtxasRun;

static PtxasRun ptxas_runs[PTXAS_JOBS];
static int ptxas_next;          /* the slot to use (and first wait for) next */
static double ptxas_busy_since; /* when the pool went from idle to busy */

static void ptxas_wait_one(PtxasRun *r)
{
	if (!r->pid)
		return;
	int status = 0;
	pid_t got;
	do
		got = waitpid(r->pid, &status, 0);
	while (got < 0 && errno == EINTR);
	r->pid = 0;
	if (got < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "[backends] PTX kept in %s\n", r->file);
		fail_msg("%s: ptxas -arch=%s failed (status %d)", r->what, r->arch, status);
	}
	if (getenv("FUSEC_TEST_KEEP_PTX"))
		fprintf(stderr, "[backends] PTX kept in %s\n", r->file);
	else
		unlink(r->file);
}

static void ptxas_wait(void)
{
	bool busy = false;
	for (int i = 0; i < PTXAS_JOBS; i++) {
		busy |= ptxas_runs[i].pid != 0;
		ptxas_wait_one(&ptxas_runs[i]);
	}
	if (busy)
		ptxas_seconds += clock_seconds() - ptxas_busy_since;
}

static void ptxas_start(const char *file, const char *arch, const char *what)
{
	PtxasRun *r = &ptxas_runs[ptxas_next];
	ptxas_next = (ptxas_next + 1) % PTXAS_JOBS;
	ptxas_wait_one(r);
	bool idle = true;
	for (int i = 0; i < PTXAS_JOBS; i++)
		idle &= ptxas_runs[i].pid == 0;
	if (idle)
		ptxas_busy_since = clock_seconds();
	snprintf(r->file, sizeof r->file, "%s", file);
	snprintf(r->arch, sizeof r->arch, "%s", arch);
	snprintf(r->what, sizeof r->what, "%s", what);
	char opt[32];
	snprintf(opt, sizeof opt, "-arch=%s", arch);
	/* -O0: the assembler still parses, type-checks and allocates every kernel; its
	 * optimizer would double the time. FUSEC_TEST_PTXAS_FULL=1 runs it too. */
	char o0[] = "-O0";
	char *argv[] = {(char *)test_find_ptxas(), opt, r->file, "-o", "/dev/null", o0, NULL};
	if (getenv("FUSEC_TEST_PTXAS_FULL"))
		argv[5] = NULL;
	int rc = posix_spawn(&r->pid, argv[0], NULL, NULL, argv, environ);
	if (rc) {
		r->pid = 0;
		fail_msg("cannot start %s: %s", argv[0], strerror(rc));
	}
}

/* Lower every graph of items into one NVPTX module for arch, emit one PTX text and
 * assemble it once. */
static void ptx_batch(Built *items, int n, const char *arch)
{
	Arena *a = arena_new();
	Diag d;
	char msg[1100];
	CgOptions o = {CG_TARGET_NVPTX, arch, NULL, "backends", false, items[0].tf32, !items[0].tf32};
	CgModule *m = cg_module_new(&o, a, &d);
	assert_non_null(m);
	for (int i = 0; i < n; i++)
		assert_int_equal(items[i].tf32, items[0].tf32);   /* one module, one option */
	int nkernels = 0;
	for (int i = 0; i < n; i++) {
		CgProgram prog;
		if (cg_lower(m, items[i].s, a, &prog, &d)) {
			diag_format(&d, msg, sizeof msg);
			fprintf(stderr, "%s\n", items[i].text);
			fail_msg("%s: lowering for %s: %s", items[i].label, arch, msg);
		}
		assert_true(prog.nkernels >= 1);
		for (int k = 0; k < prog.nkernels; k++) {
			if (prog.kernels[k]->index + 1 > nkernels)
				nkernels = prog.kernels[k]->index + 1;
			ptx_coop += prog.kernels[k]->launch.coop;
		}
	}
	if (cg_module_finish(m, &d) ) {
		diag_format(&d, msg, sizeof msg);
		fail_msg("%s..%s: finish for %s: %s", items[0].label, items[n - 1].label, arch, msg);
	}
	Buf ptx = {0};
	if (cg_module_emit_ptx(m, &ptx, &d)) {
		diag_format(&d, msg, sizeof msg);
		fail_msg("%s..%s: PTX for %s: %s", items[0].label, items[n - 1].label, arch, msg);
	}
	int entries = 0;
	for (const char *p = ptx.data; (p = strstr(p, ".entry")); p++)
		entries++;
	assert_int_equal(entries, nkernels);
	/* nothing external but the launch's dynamic shared memory (large matmul tiles) */
	for (const char *p = ptx.data; (p = strstr(p, ".extern")); p++)
		assert_true(!strncmp(p, ".extern .shared .align 16 .b8 fusec_dynamic_shared[];", 53));
	char target[32];
	snprintf(target, sizeof target, ".target %s", arch);
	assert_non_null(strstr(ptx.data, target));

	char file[] = "/tmp/fusec-backends-XXXXXX";
	int fd = mkstemp(file);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	assert_non_null(f);
	fwrite(ptx.data, 1, ptx.len, f);
	fclose(f);
	char what[300];
	snprintf(what, sizeof what, "%s..%s (%d kernels)", items[0].label, items[n - 1].label,
		 nkernels);
	ptxas_start(file, arch, what);
	ptx_kernels += nkernels;
	ptx_runs++;
	buf_free(&ptx);
	cg_module_free(m);
	arena_free(a);
}

static void ptx_both(Built *items, int n)
{
	double t0 = clock_seconds();
	ptx_batch(items, n, "sm_90");
	ptx_batch(items, n, "sm_80");
	ptx_seconds += clock_seconds() - t0;
}

/* The matmul cases also for sm_90a, the default arch, where the tiles take wgmma. */
static void ptx_three(Built *items, int n)
{
	double t0 = clock_seconds();
	ptx_batch(items, n, "sm_90a");
	ptx_seconds += clock_seconds() - t0;
	ptx_both(items, n);
}

/* ---- the op matrix --------------------------------------------------------------- */

static const DType all_dtypes[] = {
	DT_F32, DT_F16, DT_BF16, DT_F64, DT_I64, DT_I32, DT_I16, DT_I8, DT_U8, DT_BOOL,
};
enum { NDT = (int)(sizeof all_dtypes / sizeof all_dtypes[0]) };

/* Whether op k's rule takes dtype dt for its value operand. */
static bool accepts(OpKind k, DType dt)
{
	bool fl = ir_dtype_is_float(dt);
	switch (ir_ops[k].rule) {
	case SR_BINARY: case SR_UNARY: case SR_UNARY_NUMERIC: case SR_REDUCE:
	case SR_ARG_REDUCE: case SR_MATMUL:
		return dt != DT_BOOL;
	case SR_BINARY_FLOAT: case SR_UNARY_FLOAT: case SR_UNARY_FLOAT_TO_BOOL:
	case SR_CONV2D: case SR_POOL2D: case SR_ATTENTION:
		return fl;
	case SR_UNARY_SIGNED:
		return ir_dtype_is_signed(dt);
	case SR_BINARY_BOOL: case SR_UNARY_BOOL:
		return dt == DT_BOOL;
	case SR_COMPARE: case SR_COMPARE_SCALAR: case SR_WHERE: case SR_MASK_FILL:
	case SR_CAST: case SR_RESHAPE: case SR_PERMUTE: case SR_SWAP_DIMS: case SR_EXPAND:
	case SR_SLICE: case SR_CAT: case SR_GATHER:
		return true;
	case SR_NONE: case SR_COUNT_:
		break;
	}
	fail_msg("op %s: no dtype rule in test_backends.c", ir_ops[k].file);
	return false;
}

/* `fusec ops` words each rule's dtypes (ir_rule_dtypes); the words must say what
 * the rule accepts, as this file's accepts() knows it. */
static void test_rule_dtypes_words(void **state)
{
	(void)state;
	for (int k = 0; k < OP_COUNT; k++) {
		if (ir_ops[k].rule == SR_NONE)
			continue;
		const char *w = ir_rule_dtypes(ir_ops[k].rule);
		for (int t = 0; t < DT_COUNT; t++) {
			DType dt = (DType)t;
			bool want;
			if (!strncmp(w, "any", 3) || !strncmp(w, "bool mask", 9))
				want = true;
			else if (!strncmp(w, "numeric", 7))
				want = dt != DT_BOOL;
			else if (!strcmp(w, "float, signed int"))
				want = ir_dtype_is_signed(dt);
			else if (!strncmp(w, "float", 5))
				want = ir_dtype_is_float(dt);
			else if (!strcmp(w, "bool"))
				want = dt == DT_BOOL;
			else
				fail_msg("op %s: dtype words '%s' not understood", ir_ops[k].file, w);
			if (want != accepts((OpKind)k, dt))
				fail_msg("op %s: '%s' but the rule %s %s", ir_ops[k].file, w,
					 want ? "rejects" : "accepts", ir_dtype_name(dt));
		}
	}
}

/* Variants of an op at one dtype: separate cases (gelu's approximations, reduction
 * axes, cast targets, join and module layouts). */
static int nvariants(OpKind k)
{
	switch (ir_ops[k].family) {
	case FAM_CAST: return NDT;
	case FAM_REDUCE: case FAM_JOIN: case FAM_MODULE: return 2;
	default: return k == OP_GELU ? 2 : 1;
	}
}

/* The fuser the op's fused case must end in; NULL: the op runs as its own kernel. */
static const char *expected_fuser(OpKind k)
{
	switch (ir_ops[k].family) {
	case FAM_BINARY: case FAM_SCALAR: case FAM_UNARY: case FAM_COMPARE:
	case FAM_SELECT: case FAM_CAST:
		return "ElementWise";
	case FAM_VIEW:
		return k == OP_SLICE ? NULL : "ElementWise";   /* ElementWise closes on slices */
	case FAM_REDUCE:
		return "Reduce";
	case FAM_MATMUL:
		return k == OP_ATTENTION ? NULL : "Matmul";
	case FAM_JOIN: case FAM_MODULE:
		return NULL;
	default:
		fail_msg("op %s: no fusion expectation in test_backends.c", ir_ops[k].file);
		return NULL;
	}
}

typedef struct {
	OpKind kind;
	DType dt;
	int variant;
	bool fused;
	int op;                  /* global index of the op under test */
	char label[64];
} MatrixCase;

/* The value range of operand `arg` of op k at dtype dt. */
static void op_range(OpKind k, DType dt, int arg, double *lo, double *hi, bool *special,
		     double *step)
{
	host_default_range(dt, lo, hi);
	*special = false;
	*step = 0;
	bool fl = ir_dtype_is_float(dt);
	switch (k) {
	case OP_LOG: case OP_LOG1P: case OP_SQRT: case OP_RECIP:
		*lo = 0.25, *hi = 4;
		break;
	case OP_POW: case OP_POWF: case OP_POW_SCALAR:
		if (fl)
			*lo = arg ? -2 : 0.5, *hi = 2;
		else
			*lo = arg ? 0 : -3, *hi = 3;
		break;
	case OP_DIV: case OP_REM:
		if (fl && arg == 1)
			*lo = 0.5, *hi = 2;
		break;
	case OP_EXP: case OP_TANH: case OP_SIGMOID: case OP_SILU: case OP_GELU: case OP_ERF:
	case OP_SIN: case OP_COS:
		*lo = -3, *hi = 3;
		break;
	case OP_FLOOR: case OP_CEIL: case OP_ROUND: case OP_TRUNC:
		*lo = -5, *hi = 5;
		*special = true;
		*step = arg ? 0 : 0.25;   /* halves: round's ties go to even */
		break;
	case OP_CAST:
		if (dt != DT_BOOL)
			*lo = dt == DT_U8 ? 0 : -300, *hi = dt == DT_U8 ? 255 : 300;
		if (dt == DT_I8)
			*lo = -128, *hi = 127;
		*special = fl;
		*step = fl ? 0.5 : 0;
		break;
	case OP_PROD:
		if (fl)
			*lo = 0.5, *hi = 1.5;
		else
			*lo = 1, *hi = 3;
		break;
	case OP_MAX: case OP_MIN: case OP_CLAMP: case OP_CLAMP_MIN: case OP_CLAMP_MAX:
	case OP_ABS: case OP_NEG: case OP_SIGN: case OP_RELU: case OP_IS_NAN: case OP_IS_INF:
	case OP_MAX_DIM: case OP_MIN_DIM: case OP_ARGMAX: case OP_ARGMIN:
	case OP_EQ: case OP_NE: case OP_LT: case OP_LE: case OP_GT: case OP_GE:
	case OP_EQ_SCALAR: case OP_NE_SCALAR: case OP_LT_SCALAR: case OP_LE_SCALAR:
	case OP_GT_SCALAR: case OP_GE_SCALAR:
	case OP_WHERE: case OP_MASK_FILL:
		*special = true;
		*step = 0.25;            /* ties: equal elements, equal extremes */
		break;
	default:
		if (ir_ops[k].family == FAM_VIEW || ir_ops[k].family == FAM_JOIN)
			*special = true;
		break;
	}
}

static const char *in_for(GenGraph *gg, OpKind k, DType dt, int arg, int rank,
			  const int64_t *dim)
{
	double lo, hi, step;
	bool special;
	op_range(k, dt, arg, &lo, &hi, &special, &step);
	const char *name = gen_input(gg, dt, rank, dim, lo, hi);
	gg->in[gg->ninputs - 1].special = special;
	gg->in[gg->ninputs - 1].step = step;
	return name;
}

/* An elementwise op on x of dtype dt that both sides compute exactly (so rounding of
 * fused intermediates never moves a value across a threshold). */
static const char *prologue(GenGraph *gg, DType dt, const char *x)
{
	if (dt == DT_BOOL)
		return gen_op(gg, "not", 1, &x, NULL);
	return gen_op(gg, "mul_scalar", 1, &x, "\"scalar\": 2");
}

static const char *epilogue(GenGraph *gg, DType dt, const char *y)
{
	if (dt == DT_BOOL)
		return gen_op(gg, "not", 1, &y, NULL);
	return gen_op(gg, "add_scalar", 1, &y,
		      ir_dtype_is_float(dt) ? "\"scalar\": 0.25" : "\"scalar\": 1");
}

/* The attributes of a scalar-family op at dtype dt. */
static const char *scalar_attrs(GenGraph *gg, OpKind k, DType dt)
{
	bool fl = ir_dtype_is_float(dt), u = dt == DT_U8;
	switch (k) {
	case OP_CLAMP:
		return fl ? "\"min\": -0.5, \"max\": 0.5" : u ? "\"min\": 2, \"max\": 6" :
			"\"min\": -2, \"max\": 3";
	case OP_CLAMP_MIN:
		return fl ? "\"min\": -0.25" : "\"min\": 1";
	case OP_CLAMP_MAX:
		return fl ? "\"max\": 0.25" : "\"max\": 2";
	case OP_ADD_SCALAR: return fl ? "\"scalar\": 1.5" : "\"scalar\": 3";
	case OP_SUB_SCALAR: return fl ? "\"scalar\": 0.75" : "\"scalar\": 2";
	case OP_MUL_SCALAR: return fl ? "\"scalar\": 1.5" : "\"scalar\": 3";
	case OP_DIV_SCALAR: return fl ? "\"scalar\": 1.5" : u ? "\"scalar\": 2" : "\"scalar\": -2";
	case OP_REM_SCALAR: return fl ? "\"scalar\": -0.75" : u ? "\"scalar\": 3" : "\"scalar\": -3";
	case OP_POW_SCALAR: return fl ? "\"scalar\": 2.5" : "\"scalar\": 3";
	default:
		break;
	}
	if (ir_ops[k].required & A_SCALAR)
		return fl ? "\"scalar\": 0.5" : dt == DT_BOOL ? "\"scalar\": 1" : "\"scalar\": 2";
	fail_msg("op %s: no scalar attributes in test_backends.c", ir_ops[k].file);
	(void)gg;
	return NULL;
}

/* Add one case (op k at dt, variant v, alone or fused) to gg, ending in one output
 * and a sync. Returns the global index of the op under test. */
static int add_case(GenGraph *gg, OpKind k, DType dt, int v, bool fused)
{
	static const int64_t s2[] = {6, 37}, row[] = {1, 37}, s3[] = {3, 4, 5};
	const char *file = ir_ops[k].file;
	const char *in[3], *y;
	char at[200];
	int op;
	switch (ir_ops[k].family) {
	case FAM_BINARY:
		in[0] = in_for(gg, k, dt, 0, 2, s2);
		in[1] = in_for(gg, k, dt, 1, 2, fused ? row : s2);
		if (fused)
			in[0] = prologue(gg, dt, in[0]);
		op = gg->nops;
		y = gen_op(gg, file, 2, in, NULL);
		break;
	case FAM_SCALAR: case FAM_UNARY:
		in[0] = in_for(gg, k, dt, 0, 2, s2);
		if (fused)
			in[0] = prologue(gg, dt, in[0]);
		op = gg->nops;
		y = gen_op(gg, file, 1, in, ir_ops[k].family == FAM_SCALAR ? scalar_attrs(gg, k, dt) :
			   k == OP_GELU && v == 1 ? "\"approximate\": \"tanh\"" : NULL);
		break;
	case FAM_COMPARE:
		in[0] = in_for(gg, k, dt, 0, 2, s2);
		if (fused)
			in[0] = prologue(gg, dt, in[0]);
		op = gg->nops;
		if (ir_ops[k].nin_max == 2) {
			in[1] = in_for(gg, k, dt, 1, 2, fused ? row : s2);
			y = gen_op(gg, file, 2, in, NULL);
		} else {
			y = gen_op(gg, file, 1, in, scalar_attrs(gg, k, dt));
		}
		break;
	case FAM_SELECT:
		if (k == OP_WHERE) {
			in[1] = in_for(gg, k, dt, 1, 2, s2);
			in[2] = in_for(gg, k, dt, 2, 2, fused ? row : s2);
			if (fused) {
				const char *c = in_for(gg, k, DT_F32, 0, 2, s2);
				in[0] = gen_op(gg, "gt_scalar", 1, &c, "\"scalar\": 0");
				in[1] = prologue(gg, dt, in[1]);
			} else {
				in[0] = in_for(gg, k, DT_BOOL, 0, 2, s2);
			}
			op = gg->nops;
			y = gen_op(gg, file, 3, in, NULL);
		} else {
			in[0] = in_for(gg, k, dt, 0, 2, s2);
			if (fused) {
				const char *c = in_for(gg, k, DT_F32, 1, 2, row);
				in[1] = gen_op(gg, "lt_scalar", 1, &c, "\"scalar\": 0.25");
				in[0] = prologue(gg, dt, in[0]);
			} else {
				in[1] = in_for(gg, k, DT_BOOL, 1, 2, s2);
			}
			op = gg->nops;
			y = gen_op(gg, file, 2, in,
				   ir_dtype_is_float(dt) ? "\"scalar\": -2.5" :
				   dt == DT_BOOL ? "\"scalar\": 1" : "\"scalar\": 7");
		}
		break;
	case FAM_CAST: {
		DType to = all_dtypes[v];
		in[0] = in_for(gg, k, dt, 0, 2, s2);
		if (fused)
			in[0] = prologue(gg, dt, in[0]);
		snprintf(at, sizeof at, "\"dtype\": \"%s\"", ir_dtype_name(to));
		op = gg->nops;
		y = gen_op(gg, file, 1, in, at);
		if (fused)
			y = epilogue(gg, to, y);
		gen_output(gg, y);
		gen_sync(gg);
		return op;
	}
	case FAM_VIEW: {
		if (k == OP_RESHAPE && fused) {
			/* burn's rule (docs/burn-fidelity.md row 2): a reshape fuses when
			 * the kernel already reads its input, and keeps or raises the rank:
			 * b [1,20] is read by the first op, then reshaped to [20,1] */
			const char *bin = dt == DT_BOOL ? "xor" : "add";
			const char *b = in_for(gg, k, dt, 0, 2, (const int64_t[]){1, 20});
			const char *first[2] = {in_for(gg, k, dt, 1, 2, (const int64_t[]){20, 20}), b};
			const char *a = gen_op(gg, bin, 2, first, NULL);
			op = gg->nops;
			const char *r = gen_op(gg, file, 1, &b, "\"shape\": [20, 1]");
			const char *last[2] = {a, r};
			y = gen_op(gg, bin, 2, last, NULL);
			break;
		}
		in[0] = in_for(gg, k, dt, 0, 3, k == OP_EXPAND ? (const int64_t[]){3, 1, 5} : s3);
		static const int64_t reshaped[] = {12, 5}, permuted[] = {5, 3, 4},
			swapped[] = {5, 4, 3}, sliced[] = {2, 4, 3};
		const char *attrs;
		int rank = 3;
		const int64_t *out;
		switch (k) {
		case OP_RESHAPE: attrs = "\"shape\": [12, -1]"; out = reshaped; rank = 2; break;
		case OP_PERMUTE: attrs = "\"axes\": [2, 0, 1]"; out = permuted; break;
		case OP_SWAP_DIMS: attrs = "\"dims\": [0, 2]"; out = swapped; break;
		case OP_EXPAND: attrs = "\"shape\": [3, 4, 5]"; out = s3; break;
		case OP_SLICE: attrs = "\"ranges\": [[1, 3], [0, 4], [1, 4]]"; out = sliced; break;
		default:
			fail_msg("op %s: no view case in test_backends.c", file);
			return -1;
		}
		if (fused && k == OP_SLICE)
			in[0] = prologue(gg, dt, in[0]);
		op = gg->nops;
		y = gen_op(gg, file, 1, in, attrs);
		if (fused && k != OP_SLICE) {
			/* a view of a kernel input, read inside an elementwise block */
			const char *args[2] = {y, in_for(gg, k, dt, 1, rank, out)};
			y = gen_op(gg, dt == DT_BOOL ? "xor" : "add", 2, args, NULL);
		}
		break;
	}
	case FAM_REDUCE:
		in[0] = in_for(gg, k, dt, 0, 2, s2);
		if (fused)
			in[0] = prologue(gg, dt, in[0]);
		snprintf(at, sizeof at, "\"axis\": %d", v == 0 ? 1 : 0);
		op = gg->nops;
		y = gen_op(gg, file, 1, in, at);
		if (fused)
			y = epilogue(gg, ir_ops[k].rule == SR_ARG_REDUCE ? DT_I64 : dt, y);
		gen_output(gg, y);
		gen_sync(gg);
		return op;
	case FAM_MATMUL:
		if (k == OP_ATTENTION) {
			/* q [2,5,7], kt [2,7,6], v [1,6,3] (broadcast); fused: q made by an
			 * op before, a bias [2,1,6], an op after */
			const char *ain[4];
			ain[0] = in_for(gg, k, dt, 0, 3, (const int64_t[]){2, 5, 7});
			ain[1] = in_for(gg, k, dt, 1, 3, (const int64_t[]){2, 7, 6});
			ain[2] = in_for(gg, k, dt, 2, 3, (const int64_t[]){1, 6, 3});
			if (fused) {
				ain[0] = prologue(gg, dt, ain[0]);
				ain[3] = in_for(gg, k, dt, 3, 3, (const int64_t[]){2, 1, 6});
			}
			op = gg->nops;
			y = gen_op(gg, file, fused ? 4 : 3, ain, "\"scalar\": 0.375");
			if (fused)
				y = epilogue(gg, dt, y);
		} else if (!fused) {
			in[0] = in_for(gg, k, dt, 0, 2, (const int64_t[]){5, 7});
			in[1] = in_for(gg, k, dt, 1, 2, (const int64_t[]){7, 3});
			op = gg->nops;
			y = gen_op(gg, file, 2, in, NULL);
		} else {
			in[0] = in_for(gg, k, dt, 0, 3, (const int64_t[]){2, 5, 7});
			in[1] = in_for(gg, k, dt, 1, 3, (const int64_t[]){1, 7, 3});
			op = gg->nops;
			y = gen_op(gg, file, 2, in, NULL);
			const char *args[2] = {y, in_for(gg, k, dt, 2, 3, (const int64_t[]){1, 1, 3})};
			y = gen_op(gg, "add", 2, args, NULL);
			y = ir_dtype_is_signed(dt) ? gen_op(gg, "relu", 1, &y, NULL) : epilogue(gg, dt, y);
		}
		break;
	case FAM_JOIN:
		if (k == OP_CAT) {
			int n = v == 0 ? 2 : 3;
			for (int i = 0; i < n; i++) {
				int64_t d[2] = {v == 0 ? 3 - i : 3, v == 0 ? 5 : 2 + i};
				in[i] = in_for(gg, k, dt, i, 2, d);
				if (fused)
					in[i] = prologue(gg, dt, in[i]);
			}
			snprintf(at, sizeof at, "\"axis\": %d", v);
			op = gg->nops;
			y = gen_op(gg, file, n, in, at);
		} else if (k == OP_GATHER) {
			in[0] = in_for(gg, k, dt, 0, 2, (const int64_t[]){4, 6});
			DType it = v == 0 ? DT_I64 : DT_I32;
			/* indices inside the axis: the interpreter rejects others, kernels clamp */
			const int64_t *id = v == 0 ? (const int64_t[]){4, 3} : (const int64_t[]){3, 6};
			in[1] = gen_input(gg, it, 2, id, 0, v == 0 ? 5 : 3);
			if (fused)
				in[0] = prologue(gg, dt, in[0]);
			snprintf(at, sizeof at, "\"axis\": %d", v == 0 ? 1 : 0);
			op = gg->nops;
			y = gen_op(gg, file, 2, in, at);
		} else {
			fail_msg("op %s: no join case in test_backends.c", file);
			return -1;
		}
		break;
	case FAM_MODULE:
		if (k == OP_CONV2D) {
			int64_t x[] = {1, 2, 6, 6}, w0[] = {3, 2, 3, 3}, w1[] = {4, 1, 2, 3}, b[] = {3};
			in[0] = in_for(gg, k, dt, 0, 4, x);
			in[1] = in_for(gg, k, dt, 1, 4, v == 0 ? w0 : w1);
			if (v == 0)
				in[2] = in_for(gg, k, dt, 2, 1, b);
			if (fused)
				in[0] = prologue(gg, dt, in[0]);
			op = gg->nops;
			y = gen_op(gg, file, v == 0 ? 3 : 2, in, v == 0 ?
				   "\"stride\": [1, 1], \"padding\": [1, 1]" :
				   "\"stride\": [2, 1], \"dilation\": [2, 1], \"groups\": 2");
		} else {
			int64_t x[] = {1, 2, 7, 7};
			in[0] = in_for(gg, k, dt, 0, 4, x);
			if (fused)
				in[0] = prologue(gg, dt, in[0]);
			op = gg->nops;
			y = gen_op(gg, file, 1, in, v == 0 ?
				   "\"kernel\": [3, 3], \"stride\": [2, 2], \"padding\": [1, 1]" :
				   "\"kernel\": [2, 2]");
		}
		break;
	default:
		fail_msg("op %s: no case in test_backends.c", file);
		return -1;
	}
	if (fused)
		y = epilogue(gg, ir_ops[k].family == FAM_COMPARE || k == OP_IS_NAN || k == OP_IS_INF ?
			     DT_BOOL : dt, y);
	gen_output(gg, y);
	gen_sync(gg);
	return op;
}

/* The op matrix graph of op k: every accepted dtype and variant, alone then fused,
 * each case its own segment. */
static int matrix_graph(OpKind k, GenGraph *gg, MatrixCase *cases)
{
	int n = 0;
	for (int i = 0; i < NDT; i++) {
		DType dt = all_dtypes[i];
		if (!accepts(k, dt))
			continue;
		for (int v = 0; v < nvariants(k); v++) {
			if (ir_ops[k].family == FAM_CAST && all_dtypes[v] == dt)
				continue;
			/* fused first: a one-op plan stored by the lone case would be a
			 * cache hit on the fused segment's head */
			for (int f = 1; f >= 0; f--) {
				MatrixCase *c = &cases[n++];
				c->kind = k;
				c->dt = dt;
				c->variant = v;
				c->fused = f;
				c->op = add_case(gg, k, dt, v, f);
				snprintf(c->label, sizeof c->label, "%s %s v%d %s", ir_ops[k].file,
					 ir_dtype_name(dt), v, f ? "fused" : "alone");
			}
		}
	}
	return n;
}

enum { MAX_CASES = NDT * NDT * 2 };

static void check_fusion(const Built *b, const MatrixCase *c)
{
	const Op *op = &b->g->ops[c->op];
	if (op->kind != c->kind)
		fail_msg("%s: op %d is %s", c->label, c->op, ir_ops[op->kind].file);
	const Launch *l = launch_of(b->s, c->op);
	int fuser = b->s->kernels[l->kernel].fuser;
	const char *got = fuser < 0 ? "(unfused)" : pass_fuser_name(fuser);
	const char *want = c->fused ? expected_fuser(c->kind) : NULL;
	if (c->fused && c->kind == OP_CONV2D) {
		/* the conv starts a Matmul kernel with its epilogue once its prologue
		 * is settled (explorer.c, block_optimize) */
		if (fuser < 0 || strcmp(got, "Matmul") || l->nops != 2)
			fail_msg("%s: expected a Matmul kernel of the conv and its epilogue, got %s "
				 "with %d ops", c->label, got, l->nops);
		return;
	}
	if (!want) {
		if (fuser >= 0 || l->nops != 1)
			fail_msg("%s: expected its own kernel, got %s with %d ops", c->label, got,
				 l->nops);
		return;
	}
	if (fuser < 0 || strcmp(got, want) || l->nops < 3)
		fail_msg("%s: expected a %s kernel with its prologue/epilogue, got %s with %d ops",
			 c->label, want, got, l->nops);
}

static int coverage[OP_COUNT][DT_COUNT][2];

static void test_op_matrix(void **state)
{
	(void)state;
	double t0 = clock_seconds();
	worst_ratio = 0;
	MatrixCase *cases = xcalloc(MAX_CASES, sizeof *cases);
	int bad = 0, total = 0, nfused = 0, nalone = 0;
	for (int k = 0; k < OP_COUNT; k++) {
		if (k == OP_SYNC)
			continue;
		GenGraph gg;
		gen_init(&gg);
		int n = matrix_graph((OpKind)k, &gg, cases);
		if (n == 0)
			fail_msg("op %s: no dtype accepted", ir_ops[k].file);
		Built b;
		char label[64];
		snprintf(label, sizeof label, "matrix %s", ir_ops[k].file);
		built_new(&b, &gg, label);
		assert_int_equal(b.g->noutputs, n);
		const char **labels = xcalloc((size_t)n, sizeof *labels);
		for (int i = 0; i < n; i++) {
			labels[i] = cases[i].label;
			check_fusion(&b, &cases[i]);
			coverage[k][cases[i].dt][cases[i].fused]++;
			nfused += cases[i].fused;
			nalone += !cases[i].fused;
		}
		bad += run_both(&b, &gg, 1000 + (uint64_t)k, labels);
		total += n;
		free(labels);
		built_free(&b);
		gen_free(&gg);
	}
	int pairs = 0;
	for (int k = 0; k < OP_COUNT; k++)
		for (int t = 0; t < DT_COUNT; t++)
			pairs += coverage[k][t][0] > 0;
	fprintf(stderr, "[backends] op matrix: %d ops, %d op x dtype pairs, %d cases "
		"(%d alone, %d fused), %d over their bound (worst err/bound %.3g), %.1fs\n",
		OP_COUNT - 1, pairs, total, nalone, nfused, bad, worst_ratio, clock_seconds() - t0);
	free(cases);
	assert_int_equal(bad, 0);
}

static void test_op_matrix_ptx(void **state)
{
	(void)state;
	need_ptxas();
	MatrixCase *cases = xcalloc(MAX_CASES, sizeof *cases);
	Built *items = xcalloc(OP_COUNT, sizeof *items);
	GenGraph *ggs = xcalloc(OP_COUNT, sizeof *ggs);
	int n = 0;
	for (int k = 0; k < OP_COUNT; k++) {
		if (k == OP_SYNC)
			continue;
		gen_init(&ggs[n]);
		matrix_graph((OpKind)k, &ggs[n], cases);
		char label[64];
		snprintf(label, sizeof label, "matrix %s", ir_ops[k].file);
		built_new(&items[n], &ggs[n], label);
		n++;
	}
	ptx_seconds = ptxas_seconds = 0;
	ptx_kernels = ptx_runs = 0;
	for (int i = 0; i < n; i += PTX_BATCH)
		ptx_both(&items[i], n - i < PTX_BATCH ? n - i : PTX_BATCH);
	ptxas_wait();
	fprintf(stderr, "[backends] op matrix PTX: %d graphs, %d kernels over sm_90 and sm_80, "
		"%d ptxas runs, %.1fs (ptxas %.1fs)\n", n, ptx_kernels, ptx_runs, ptx_seconds,
		ptxas_seconds);
	for (int i = 0; i < n; i++) {
		built_free(&items[i]);
		gen_free(&ggs[i]);
	}
	free(items);
	free(ggs);
	free(cases);
}

/* ---- random graphs ------------------------------------------------------------- */

static void test_random_graphs(void **state)
{
	(void)state;
	double t0 = clock_seconds();
	worst_ratio = 0;
	int bad = 0, ops = 0, syncs = 0, launches = 0;
	int fusers[8] = {0}, unfused = 0;
	for (uint64_t seed = 1; seed <= RANDOM_GRAPHS; seed++) {
		GenGraph gg;
		gen_init(&gg);
		gen_random(&gg, seed);
		Built b;
		char label[64];
		snprintf(label, sizeof label, "random seed %llu", (unsigned long long)seed);
		built_new(&b, &gg, label);
		assert_true(b.g->noutputs >= 1);
		int r = run_both(&b, &gg, seed, NULL);
		if (r)
			fprintf(stderr, "[backends] random graph seed %llu FAILED\n",
				(unsigned long long)seed);
		bad += r != 0;
		for (int i = 0; i < b.g->nops; i++)
			syncs += b.g->ops[i].kind == OP_SYNC;
		ops += b.g->nops;
		for (int i = 0; i < b.s->nsteps; i++)
			for (int j = 0; j < b.s->steps[i].nlaunch; j++) {
				int f = b.s->kernels[b.s->steps[i].launch[j].kernel].fuser;
				launches++;
				if (f < 0)
					unfused++;
				else if (f < 8)
					fusers[f]++;
			}
		built_free(&b);
		gen_free(&gg);
	}
	fprintf(stderr, "[backends] random graphs: %d graphs, %d ops (%d syncs), %d launches "
		"(%d unfused", RANDOM_GRAPHS, ops, syncs, launches, unfused);
	for (int f = 0; f < pass_nfusers() && f < 8; f++)
		fprintf(stderr, ", %d %s", fusers[f], pass_fuser_name(f));
	fprintf(stderr, "), %d failing (worst err/bound %.3g), %.1fs\n", bad, worst_ratio,
		clock_seconds() - t0);
	assert_int_equal(bad, 0);
	/* the generator must reach the fusers and the syncs it is meant to */
	assert_true(syncs >= 20);
	/* no matmuls in the random graphs; NHWCRelayout competes only under
	 * --burn-exact (test_golden_numbers' golden/nhwc.yaml, tests/cli/t_nhwc.sh) */
	for (int f = 0; f < pass_nfusers() && f < 8; f++)
		if (strcmp(pass_fuser_name(f), "Matmul") && strcmp(pass_fuser_name(f), "NHWCRelayout") &&
		    fusers[f] < 5)
			fail_msg("random graphs reached fuser %s only %d times", pass_fuser_name(f),
				 fusers[f]);
}

static void test_random_graphs_ptx(void **state)
{
	(void)state;
	need_ptxas();
	Built *items = xcalloc(PTX_BATCH, sizeof *items);
	GenGraph *ggs = xcalloc(PTX_BATCH, sizeof *ggs);
	int n = 0;
	ptx_seconds = ptxas_seconds = 0;
	ptx_kernels = ptx_runs = 0;
	for (uint64_t seed = 1; seed <= RANDOM_GRAPHS; seed++) {
		gen_init(&ggs[n]);
		gen_random(&ggs[n], seed);
		char label[64];
		snprintf(label, sizeof label, "random seed %llu", (unsigned long long)seed);
		built_new(&items[n], &ggs[n], label);
		n++;
		if (n == PTX_BATCH || seed == RANDOM_GRAPHS) {
			ptx_both(items, n);
			for (int i = 0; i < n; i++) {
				built_free(&items[i]);
				gen_free(&ggs[i]);
			}
			n = 0;
		}
	}
	ptxas_wait();
	fprintf(stderr, "[backends] random graphs PTX: %d graphs, %d kernels over sm_90 and "
		"sm_80, %d ptxas runs, %.1fs (ptxas %.1fs)\n", RANDOM_GRAPHS, ptx_kernels, ptx_runs,
		ptx_seconds, ptxas_seconds);
	free(items);
	free(ggs);
}

/* The generator is deterministic: the same seed gives the same text. */
static void test_random_deterministic(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 5; seed++) {
		GenGraph a, b;
		gen_init(&a);
		gen_init(&b);
		gen_random(&a, seed);
		gen_random(&b, seed);
		char *ta = gen_text(&a, "g"), *tb = gen_text(&b, "g");
		assert_string_equal(ta, tb);
		GenGraph c;
		gen_init(&c);
		gen_random(&c, seed + 1000);
		char *tc = gen_text(&c, "g");
		assert_string_not_equal(ta, tc);
		free(ta);
		free(tb);
		free(tc);
		gen_free(&a);
		gen_free(&b);
		gen_free(&c);
	}
}

/* ---- the seed's kernel counts ---------------------------------------------------- */

typedef struct {
	Arena *arena;
	Graph *g;
	Schedule *s;
	CgModule *m;
	CgProgram prog;
} Golden;

static void golden_open(Golden *o, const char *path)
{
	Diag d;
	char msg[1100];
	o->arena = arena_new();
	o->g = ir_read_file(o->arena, path, FMT_AUTO, &d);
	if (!o->g) {
		diag_format(&d, msg, sizeof msg);
		fail_msg("%s", msg);
	}
	SearchOptions so;
	pass_default_options(&so);
	o->s = test_search(o->g, &so);
	CgOptions co = {CG_TARGET_NVPTX, "sm_90", NULL, "golden", false, false, false};
	o->m = cg_module_new(&co, o->arena, &d);
	assert_non_null(o->m);
	if (cg_lower(o->m, o->s, o->arena, &o->prog, &d)) {
		diag_format(&d, msg, sizeof msg);
		fail_msg("%s: %s", path, msg);
	}
}

static void golden_close(Golden *o)
{
	cg_module_free(o->m);
	pass_free_schedule(o->s);
	arena_free(o->arena);
}

static int count_params(const CgKernel *k, bool written)
{
	int n = 0;
	for (int p = 0; p < k->nparams; p++)
		if (k->params[p].kind == CG_PARAM_BUFFER)
			n += written ? k->params[p].written : k->params[p].read;
	return n;
}

static void test_golden_kernel_counts(void **state)
{
	(void)state;
	Golden o;

	golden_open(&o, "golden/chains.yaml");
	assert_int_equal(o.prog.nkernels, 1);
	assert_int_equal(o.prog.nlaunch, 1);
	assert_int_equal(o.prog.kernels[0]->kind, CG_KERNEL_ELEMWISE);
	assert_int_equal(count_params(o.prog.kernels[0], false), 5);
	assert_int_equal(count_params(o.prog.kernels[0], true), 5);
	assert_int_equal(o.s->nsteps, 1);
	assert_int_equal(o.s->steps[0].launch[0].nops, 40);
	assert_int_equal(o.s->steps[0].launch[0].nin, 5);
	assert_int_equal(o.s->steps[0].launch[0].nout, 5);
	golden_close(&o);

	golden_open(&o, "golden/lone.yaml");
	assert_int_equal(o.prog.nkernels, 1);
	assert_int_equal(o.prog.nlaunch, 1);
	assert_int_equal(o.prog.kernels[0]->kind, CG_KERNEL_SINGLE);
	assert_int_equal(o.s->kernels[o.s->steps[0].launch[0].kernel].fuser, -1);
	golden_close(&o);

	golden_open(&o, "golden/reuse.yaml");
	assert_int_equal(o.s->nexplorations, 2);
	assert_int_equal(o.s->nhits, 3);
	assert_int_equal(o.prog.nlaunch, 5);
	assert_int_equal(o.prog.nkernels, 2);
	for (int i = 1; i < 4; i++)
		assert_ptr_equal(o.prog.launch[i].kernel, o.prog.launch[0].kernel);
	assert_ptr_not_equal(o.prog.launch[4].kernel, o.prog.launch[0].kernel);
	/* the 32x32 hit binds the same kernel with other sizes and the 3.0 scalar */
	assert_int_equal(o.prog.launch[0].kernel->kind, CG_KERNEL_ELEMWISE);
	golden_close(&o);

	/* the un-fused reshapes launch nothing: r and f share z's and v's buffers */
	golden_open(&o, "golden/views.yaml");
	assert_int_equal(o.prog.nlaunch, 1);
	assert_int_equal(o.prog.naliases, 2);
	static const int reshapes[] = {0, 5};
	for (int i = 0; i < 2; i++) {
		const Op *op = &o.g->ops[reshapes[i]];
		const CgAlias *al = &o.prog.aliases[i];
		assert_int_equal(al->op, reshapes[i]);
		assert_int_equal(al->tensor, op->out[0]);
		assert_int_equal(al->of, op->in[0]);
		assert_int_equal(o.prog.alias[op->out[0]], op->in[0]);
		assert_false(o.prog.buffer[op->out[0]]);
	}
	golden_close(&o);
}

/* The golden cases also compute the right numbers on the cpu backend. */
static void test_golden_numbers(void **state)
{
	(void)state;
	static const char *const files[] = {"golden/chains.yaml", "golden/lone.yaml",
					    "golden/reuse.yaml", "golden/fusers.yaml",
					    "golden/holes.yaml", "golden/cycle.yaml",
					    "golden/view_break.yaml", "golden/maxblocks.yaml",
					    "golden/lazy_triggers.yaml", "golden/views.yaml",
					    "golden/nhwc.yaml"};
	int bad = 0;
	for (size_t i = 0; i < SUITE_COUNT(files); i++) {
		Built b;
		memset(&b, 0, sizeof b);
		snprintf(b.label, sizeof b.label, "%s", files[i]);
		b.arena = arena_new();
		Diag d;
		b.g = ir_read_file(b.arena, files[i], FMT_AUTO, &d);
		assert_non_null(b.g);
		b.text = strdup(files[i]);
		SearchOptions so;
		pass_default_options(&so);
		so.no_record = true;
		/* a golden compiled with --burn-exact (its `# args:` line) runs so here
		 * too: golden/nhwc.yaml's NHWCRelayout pairs (docs/burn-fidelity.md row 11) */
		size_t len = 0;
		char *text = read_file(files[i], 1 << 20, &len, &d);
		so.burn_exact = text && strstr(text, "\n# args: --burn-exact") != NULL;
		free(text);
		b.s = test_search(b.g, &so);
		GenGraph gg;
		gen_init(&gg);
		for (int k = 0; k < b.g->ninputs; k++) {
			const Tensor *t = &b.g->tensors[b.g->inputs[k]];
			double lo, hi;
			host_default_range(t->dtype, &lo, &hi);
			gen_input(&gg, t->dtype, t->rank, t->dim, lo, hi);
			gg.in[k].name = t->name;
		}
		bad += run_both(&b, &gg, 7, NULL);
		gen_free(&gg);
		built_free(&b);
	}
	assert_int_equal(bad, 0);
}

/* ---- the tiled matmul ------------------------------------------------------------ */

typedef struct {
	const char *label;
	DType dt;
	int64_t ba[2], bb[2];   /* batch dims of a and b (0: none); 1 broadcasts */
	int64_t m, n, k;
	const char *epi;        /* none, bias_relu, residual_gelu, scale_cast (f32 casts
				 * to f16), also_mm */
	bool exact;             /* step-quantized inputs whose products and sums are exact */
	int trans;              /* operands through views: 1 a = swap_dims(a^T), 2 b =
				 * swap_dims(b^T), 4 (two batch dims) a = permute of
				 * [b0, m, b1, k] and b = permute of [b0, b1, n, k] */
	bool tf32;              /* lowered with allow_tf32 (f32 on tensor cores) */
	const char *force;      /* FUSEC_MATMUL_TILES while lowering: a configuration the
				 * rule takes only at sizes too large for the host */
} MmCase;

/* The matmul cases: every tile configuration of codegen/matmul_pick.c (checked
 * below), both chunk paths (K and N multiples of 8 elements or not), edges in M, N
 * and K (1, 17, 33, 127 ...), batch dims broadcast on both sides, epilogues with
 * bias, residual, activations, scale and cast, and a matmul result that is written
 * too. The host runs the same tiling as the GPU with the mma fragment replaced by
 * its scalar definition. */
static const MmCase mm_cases[] = {
	/* f32: shapes this small (K <= 64, few outputs) run plain by the rule, so each
	 * forces the configuration the rule gives them at larger sizes */
	{"1x1x1", DT_F32, {0}, {0}, 1, 1, 1, "none", true, 0, false, "gemv8x64k8"},
	{"17x33x40", DT_F32, {0}, {0}, 17, 33, 40, "bias_relu", true, 0, false, "fma64x64x16s3"},
	{"33x17x8", DT_F32, {0}, {0}, 33, 17, 8, "also_mm", true, 0, false, "fma64x64x16s3"},
	{"127x65x17", DT_F32, {0}, {0}, 127, 65, 17, "residual_gelu", false, 0, false, "fma64x64x16s3"},
	{"batch 3x1 by 1x2", DT_F32, {3, 1}, {1, 2}, 20, 36, 24, "bias_relu", true, 0, false, "fma64x64x16s3"},
	{"big tiles 144 batches", DT_F32, {12, 1}, {1, 12}, 5, 9, 16, "bias_relu", true, 0, false, "gemv8x64k8"},
	{"big tiles 130x136x24", DT_F32, {6, 1}, {1, 6}, 130, 136, 24, "scale_cast", false, 0, false, "fma128x128x16s3"},
	{"gemv 1x300x72", DT_F32, {0}, {0}, 1, 300, 72, "bias_relu", true, 0, false, "gemv8x64k8"},
	{"a^T 17x33x40", DT_F32, {0}, {0}, 17, 33, 40, "bias_relu", true, 1, false, "fma64x64x16s3"},
	{"b^T 127x65x17", DT_F32, {0}, {0}, 127, 65, 17, "none", false, 2, false, "fma64x64x16s3"},
	{"a^T b^T batch 3x1 by 1x2", DT_F32, {3, 1}, {1, 2}, 20, 36, 24, "also_mm", true, 3, false, "fma64x64x16s3"},
	{"a^T b^T 64x64x64", DT_F32, {0}, {0}, 64, 64, 64, "none", true, 3, false, "fma64x64x16s3"},
	{"permuted big tiles 130x136x24", DT_F32, {6, 1}, {1, 6}, 130, 136, 24, "scale_cast", false, 4, false, "fma128x128x16s3"},
	{"gemv 16x65x33", DT_F32, {0}, {0}, 16, 65, 33, "residual_gelu", false, 0, false, "gemv8x64k8"},
	{"gemv b^T 3x130x40 batch 2x1 by 1x3", DT_F32, {2, 1}, {1, 3}, 3, 130, 40, "bias_relu", true, 2, false, "gemv8x64k8"},
	{"gemv a^T 9x64x1", DT_F32, {0}, {0}, 9, 64, 1, "also_mm", true, 1, false, "gemv8x64k8"},
	/* gemv with K split over blocks: every count of live rows (1 to 8: the four
	 * copies of the K loop; 12 and 16 two rows of tiles), K off the splits and the
	 * steps a warp loads ahead (K = 37: splits of 10 and an empty last one, the
	 * steps one at a time), N off a tile, batches
	 * broadcast, transposed operands; the exact cases fail on any partial lost or
	 * counted twice */
	{"gemv split 1x70x37", DT_F32, {0}, {0}, 1, 70, 37, "bias_relu", true, 0, false, "gemv8x64k8sk4"},
	{"gemv split 2x130x517", DT_F32, {0}, {0}, 2, 130, 517, "residual_gelu", false, 0, false, "gemv8x64k8sk4"},
	{"gemv split 3x64x100 batch 2x1 by 1x2", DT_F32, {2, 1}, {1, 2}, 3, 64, 100, "also_mm", true, 0, false, "gemv8x64k8sk16"},
	{"gemv split 7x65x300", DT_F32, {0}, {0}, 7, 65, 300, "none", true, 0, false, "gemv8x64k8sk16"},
	{"gemv split b^T 12x33x90", DT_F32, {0}, {0}, 12, 33, 90, "bias_relu", true, 2, false, "gemv8x64k8sk4"},
	{"gemv split a^T 16x40x70", DT_F32, {0}, {0}, 16, 40, 70, "scale_cast", false, 1, false, "gemv8x64k8sk16"},
	{"gemv 5x50x45", DT_F32, {0}, {0}, 5, 50, 45, "bias_relu", true, 0, false, "gemv8x64k8"},
	/* the 128-wide gemv tiles (M from 9: two rows of tiles, four columns a thread) */
	{"gemv wide 12x200x70", DT_F32, {0}, {0}, 12, 200, 70, "bias_relu", true, 0, false, "gemv8x128k8"},
	{"gemv wide split b^T 16x130x300", DT_F32, {0}, {0}, 16, 130, 300, "residual_gelu", false, 2, false, "gemv8x128k8sk4"},
	{"gemv wide split 9x257x100 batch 2x1 by 1x2", DT_F32, {2, 1}, {1, 2}, 9, 257, 100, "also_mm", true, 0, false, "gemv8x128k8sk16"},
	/* --allow-tf32: f32 on tensor cores, operands rounded to tf32 on the host */
	{"tf32 1x1x1", DT_F32, {0}, {0}, 1, 1, 1, "none", true, 0, true, NULL},
	{"tf32 17x33x40", DT_F32, {0}, {0}, 17, 33, 40, "bias_relu", true, 0, true, NULL},
	{"tf32 127x65x17", DT_F32, {0}, {0}, 127, 65, 17, "residual_gelu", false, 0, true, NULL},
	{"tf32 big tiles 130x136x24", DT_F32, {6, 1}, {1, 6}, 130, 136, 24, "scale_cast", false, 0, true, NULL},
	{"tf32 a^T 33x17x8", DT_F32, {0}, {0}, 33, 17, 8, "also_mm", false, 1, true, NULL},
	{"tf32 b^T 64x64x64", DT_F32, {0}, {0}, 64, 64, 64, "none", false, 2, true, NULL},
	{"tf32 a^T b^T batch 3x1 by 1x2", DT_F32, {3, 1}, {1, 2}, 20, 36, 24, "bias_relu", false, 3, true, NULL},
	{"tf32 permuted big tiles 130x136x24", DT_F32, {6, 1}, {1, 6}, 130, 136, 24, "none", false, 4, true, NULL},
	{"1x1x1", DT_F16, {0}, {0}, 1, 1, 1, "none", true, 0, false, NULL},
	{"17x33x40", DT_F16, {0}, {0}, 17, 33, 40, "bias_relu", true, 0, false, NULL},
	{"33x17x8", DT_F16, {0}, {0}, 33, 17, 8, "also_mm", true, 0, false, NULL},
	{"127x65x17", DT_F16, {0}, {0}, 127, 65, 17, "residual_gelu", false, 0, false, NULL},
	{"batch 3x1 by 1x2", DT_F16, {3, 1}, {1, 2}, 20, 36, 24, "bias_relu", true, 0, false, NULL},
	{"big tiles 144 batches", DT_F16, {12, 1}, {1, 12}, 5, 9, 16, "bias_relu", true, 0, false, NULL},
	{"big tiles 130x136x24", DT_F16, {6, 1}, {1, 6}, 130, 136, 24, "scale_cast", false, 0, false, NULL},
	{"gemv 1x300x72", DT_F16, {0}, {0}, 1, 300, 72, "bias_relu", false, 0, false, NULL},
	{"a^T 17x33x40", DT_F16, {0}, {0}, 17, 33, 40, "bias_relu", true, 1, false, NULL},
	{"b^T 127x65x17", DT_F16, {0}, {0}, 127, 65, 17, "none", false, 2, false, NULL},
	{"a^T b^T batch 3x1 by 1x2", DT_F16, {3, 1}, {1, 2}, 20, 36, 24, "also_mm", true, 3, false, NULL},
	{"a^T b^T 64x64x64", DT_F16, {0}, {0}, 64, 64, 64, "none", true, 3, false, NULL},
	{"permuted big tiles 130x136x24", DT_F16, {6, 1}, {1, 6}, 130, 136, 24, "scale_cast", false, 4, false, NULL},
	{"gemv 16x65x33", DT_F16, {0}, {0}, 16, 65, 33, "residual_gelu", false, 0, false, NULL},
	{"gemv b^T 3x130x40 batch 2x1 by 1x3", DT_F16, {2, 1}, {1, 3}, 3, 130, 40, "bias_relu", false, 2, false, NULL},
	{"gemv a^T 9x64x1", DT_F16, {0}, {0}, 9, 64, 1, "also_mm", false, 1, false, NULL},
	{"1x1x1", DT_BF16, {0}, {0}, 1, 1, 1, "none", true, 0, false, NULL},
	{"17x33x40", DT_BF16, {0}, {0}, 17, 33, 40, "bias_relu", false, 0, false, NULL},
	{"33x17x8", DT_BF16, {0}, {0}, 33, 17, 8, "also_mm", false, 0, false, NULL},
	{"127x65x17", DT_BF16, {0}, {0}, 127, 65, 17, "residual_gelu", false, 0, false, NULL},
	{"batch 3x1 by 1x2", DT_BF16, {3, 1}, {1, 2}, 20, 36, 24, "bias_relu", false, 0, false, NULL},
	{"big tiles 144 batches", DT_BF16, {12, 1}, {1, 12}, 5, 9, 16, "bias_relu", false, 0, false, NULL},
	{"big tiles 130x136x24", DT_BF16, {6, 1}, {1, 6}, 130, 136, 24, "scale_cast", false, 0, false, NULL},
	{"gemv 1x300x72", DT_BF16, {0}, {0}, 1, 300, 72, "bias_relu", false, 0, false, NULL},
	{"a^T 17x33x40", DT_BF16, {0}, {0}, 17, 33, 40, "bias_relu", false, 1, false, NULL},
	{"b^T 127x65x17", DT_BF16, {0}, {0}, 127, 65, 17, "none", false, 2, false, NULL},
	{"a^T b^T batch 3x1 by 1x2", DT_BF16, {3, 1}, {1, 2}, 20, 36, 24, "also_mm", false, 3, false, NULL},
	{"a^T b^T 64x64x64", DT_BF16, {0}, {0}, 64, 64, 64, "none", false, 3, false, NULL},
	{"permuted big tiles 130x136x24", DT_BF16, {6, 1}, {1, 6}, 130, 136, 24, "scale_cast", false, 4, false, NULL},
	/* mma.sync's 128x128 tile: the rule's under --arch sm_90 and sm_80 (wgmma's on sm_90a) */
	{"big tiles 130x136x24", DT_BF16, {6, 1}, {1, 6}, 130, 136, 24, "bias_relu", false, 4, false,
	 "tc128x128x64s3"},
	{"gemv 16x65x33", DT_BF16, {0}, {0}, 16, 65, 33, "residual_gelu", false, 0, false, NULL},
	{"gemv b^T 3x130x40 batch 2x1 by 1x3", DT_BF16, {2, 1}, {1, 3}, 3, 130, 40, "bias_relu", false, 2, false, NULL},
	{"gemv a^T 9x64x1", DT_BF16, {0}, {0}, 9, 64, 1, "also_mm", false, 1, false, NULL},
	{"gemv split 4x200x600", DT_BF16, {0}, {0}, 4, 200, 600, "bias_relu", false, 0, false, NULL},
	{"gemv split 1x64x2100", DT_F16, {0}, {0}, 1, 64, 2100, "residual_gelu", false, 0, false, NULL},
	{"gemv wide split 13x300x700", DT_F32, {0}, {0}, 13, 300, 700, "bias_relu", false, 0, false, NULL},
	/* gemv's vector path (B read by 16-byte chunks: N a multiple of a chunk, B not
	 * transposed): every count of live rows, chunks past N in the last tile, the
	 * 128-wide tiles (two slots of k a warp in f16/bf16), more slots than steps
	 * (K = 20 over 16 splits of 32 slots), the steps one at a time, batches,
	 * A transposed; f16's halves and bf16's */
	{"gemv vec 8x136x130", DT_BF16, {0}, {0}, 8, 136, 130, "bias_relu", false, 0, false,
	 "gemv8x64k8"},
	{"gemv vec 2x64x300 batch 2x1 by 1x2", DT_F16, {2, 1}, {1, 2}, 2, 64, 300, "also_mm", false,
	 0, false, "gemv8x64k8sk4"},
	{"gemv vec wide 11x256x200", DT_BF16, {0}, {0}, 11, 256, 200, "residual_gelu", false, 0,
	 false, "gemv8x128k8sk4"},
	{"gemv vec a^T 5x72x90", DT_F16, {0}, {0}, 5, 72, 90, "bias_relu", false, 1, false,
	 "gemv8x64k8sk16"},
	{"gemv vec exact 4x64x20", DT_F16, {0}, {0}, 4, 64, 20, "none", true, 0, false,
	 "gemv8x64k8sk16"},
	{"gemv vec 1x512x1000", DT_BF16, {0}, {0}, 1, 512, 1000, "scale_cast", false, 0, false,
	 "gemv8x64k8sk16"},
	{"gemv vec 2x132x517", DT_F32, {0}, {0}, 2, 132, 517, "bias_relu", false, 0, false,
	 "gemv8x64k8sk4"},
	{"gemv vec wide 16x128x33", DT_F16, {0}, {0}, 16, 128, 33, "none", true, 0, false,
	 "gemv8x128k8"},
	/* tc128x256x32s4 (a wave of 128x256 tiles and K >= 2048 on the GPU): edges in
	 * every dim, the transposed layouts, the element-chunk path */
	{"128x256 tiles 130x260x72", DT_BF16, {2, 1}, {1, 1}, 130, 260, 72, "bias_relu", false, 0,
	 false, "tc128x256x32s4"},
	{"128x256 tiles a^T b^T 129x300x40", DT_BF16, {0}, {0}, 129, 300, 40, "residual_gelu",
	 false, 3, false, "tc128x256x32s4"},
	{"128x256 tiles 100x257x33", DT_F16, {0}, {0}, 100, 257, 33, "scale_cast", false, 0,
	 false, "tc128x256x32s4"},
	{"128x256 tiles b^T 64x256x96", DT_F16, {0}, {0}, 64, 256, 96, "also_mm", true, 2, false,
	 "tc128x256x32s4"},
	/* split-K (under a wave): K not a multiple of BK nor of the split (777, 259),
	 * K shorter than the splits (40: empty splits), batches broadcast, transposed
	 * operands, epilogues; the exact cases fail on any partial lost or counted
	 * twice */
	{"split 100x131x777", DT_F32, {0}, {0}, 100, 131, 777, "residual_gelu", false, 0, false,
	 "fma64x64x16s3sk3"},
	{"split exact batch 3x1 by 1x2", DT_F32, {3, 1}, {1, 2}, 65, 72, 259, "bias_relu", true, 0,
	 false, "fma64x64x16s3sk4"},
	{"split exact 70x70x40", DT_F32, {0}, {0}, 70, 70, 40, "also_mm", true, 0, false,
	 "fma64x64x16s3sk4"},
	{"split a^T b^T 64x96x600", DT_F32, {0}, {0}, 64, 96, 600, "bias_relu", false, 3, false,
	 "fma64x64x16s3sk4"},
	{"split exact 33x17x520", DT_F32, {0}, {0}, 33, 17, 520, "none", true, 0, false,
	 "fma64x64x16s3sk3"},
	{"split 128 tiles 130x136x333", DT_F32, {0}, {0}, 130, 136, 333, "scale_cast", false, 0, false,
	 "fma128x128x16s3sk4"},
	{"split 128 tiles exact batch 2x1 by 1x2", DT_F32, {2, 1}, {1, 2}, 20, 36, 200, "bias_relu",
	 true, 0, false, "fma128x128x16s3sk4"},
	{"split 100x131x777", DT_BF16, {0}, {0}, 100, 131, 777, "residual_gelu", false, 0, false,
	 "tc64x64x32s3sk2"},
	{"split exact batch 3x1 by 1x2", DT_F16, {3, 1}, {1, 2}, 65, 72, 104, "bias_relu", true, 0,
	 false, "tc64x64x32s3sk4"},
	{"split b^T 70x70x40", DT_BF16, {0}, {0}, 70, 70, 40, "also_mm", false, 2, false,
	 "tc64x64x32s3sk4"},
	/* the narrow tile (channels-last convs of few output channels): a B tile of
	 * fewer chunks than threads, K and N off a chunk, b stored transposed */
	{"narrow 200x36x70", DT_BF16, {0}, {0}, 200, 36, 70, "bias_relu", false, 0, false,
	 "tc128x32x32s3"},
	{"narrow b^T 129x24x64", DT_F16, {0}, {0}, 129, 24, 64, "residual_gelu", false, 2, false,
	 "tc128x32x32s3"},
	/* wgmma (sm_90a, the default arch): the panel layout of every operand form
	 * (K-major and MN-major A and B), edges in every dim, the element-chunk path
	 * (N or K not a multiple of 8), batches broadcast, the epilogues */
	{"wg 128x128 tiles 130x260x72", DT_BF16, {2, 1}, {1, 1}, 130, 260, 72, "bias_relu", false, 0,
	 false, "wg128x128x64s4"},
	{"wg 128x256 tiles a^T b^T 129x300x40", DT_BF16, {0}, {0}, 129, 300, 40, "residual_gelu",
	 false, 3, false, "wg128x256x64s4"},
	{"wg 128x256 tiles 100x257x33", DT_F16, {0}, {0}, 100, 257, 33, "scale_cast", false, 0,
	 false, "wg128x256x64s4"},
	{"wg 128x128 tiles b^T 64x256x96", DT_F16, {0}, {0}, 64, 256, 96, "also_mm", true, 2, false,
	 "wg128x128x64s4"},
	{"wg 128x128 tiles a^T 200x136x130", DT_BF16, {0}, {0}, 200, 136, 130, "bias_relu", false, 1,
	 false, "wg128x128x64s4"},
	{"wg 128x256 tiles exact batch 3x1 by 1x2", DT_BF16, {3, 1}, {1, 2}, 65, 72, 136, "none", true,
	 0, false, "wg128x256x64s4"},
	/* warp-specialized wgmma (matmul_ws.c; the host runs its tiles as wg's): rows
	 * of multiples of 16 bytes, which its tensor maps need, edges in every dim */
	{"ws 128x128 tiles 130x264x72", DT_BF16, {2, 1}, {1, 1}, 130, 264, 72, "bias_relu", false, 0,
	 false, "wg128x128x64s4ws"},
	{"ws 128x256 tiles a^T b^T 136x296x40", DT_F16, {0}, {0}, 136, 296, 40, "residual_gelu",
	 false, 3, false, "wg128x256x64s4ws"},
	/* 3xTF32 (f32 as three tf32 products, matmul_wgmma.c): both operands K-major
	 * (b^T); partial tiles, K steps of 32 with a partial last one */
	{"3xtf32 128x128 b^T 130x136x72", DT_F32, {0}, {0}, 130, 136, 72, "bias_relu", false, 2,
	 false, "wgx3x128x128x32s3"},
	{"3xtf32 128x96 b^T 136x200x100", DT_F32, {2, 1}, {1, 1}, 136, 200, 100, "residual_gelu",
	 false, 2, false, "wgx3x128x96x32s4"},
	{"3xtf32 128x64 b^T 129x65x40", DT_F32, {0}, {0}, 129, 65, 40, "none", false, 2, false,
	 "wgx3x128x64x32s4"},
	/* the same split 2 and 3 ways (the combine of split-K): K of 300 and 400,
	 * partial last steps */
	{"3xtf32 128x64 split 2 b^T 129x65x300", DT_F32, {0}, {0}, 129, 65, 300, "bias_relu", false, 2,
	 false, "wgx3x128x64x32s4sk2"},
	{"3xtf32 128x64 split 3 b^T 130x70x400", DT_F32, {0}, {0}, 130, 70, 400, "residual_gelu", false,
	 2, false, "wgx3x128x64x32s4sk3"},
	/* 4 ways over 13 steps (4, 4, 4, 1), and 8 over 5: three splits of no step,
	 * whose zero partials the combine still adds in order */
	{"3xtf32 128x64 split 4 b^T 131x64x400", DT_F32, {0}, {0}, 131, 64, 400, "bias_relu", false,
	 2, false, "wgx3x128x64x32s4sk4"},
	{"3xtf32 128x64 split 8 b^T 129x70x136", DT_F32, {0}, {0}, 129, 70, 136, "residual_gelu", false,
	 2, false, "wgx3x128x64x32s4sk8"},
	/* ws, 96 columns: B K-major only (a b^T operand); six stages, the ring
	 * wrapping past K's seven steps */
	{"ws 128x96 tiles b^T 130x200x72", DT_BF16, {0}, {0}, 130, 200, 72, "bias_relu", false, 2,
	 false, "wg128x96x64s4ws"},
	{"ws 128x96 six stages a^T b^T 136x200x400", DT_F16, {0}, {0}, 136, 200, 400,
	 "residual_gelu", false, 3, false, "wg128x96x64s6ws"},
	{"ws 128x128 six stages 130x264x520", DT_BF16, {2, 1}, {1, 1}, 130, 264, 520, "bias_relu",
	 false, 0, false, "wg128x128x64s6ws"},
	/* ws, 192 columns (three 64-column panels of an MN-major B, or one of 192
	 * rows K-major), a partial last tile */
	{"ws 128x192 tiles 130x400x72", DT_BF16, {2, 1}, {1, 1}, 130, 400, 72, "residual_gelu",
	 false, 0, false, "wg128x192x64s4ws"},
	{"ws 128x192 tiles b^T 64x200x136", DT_F16, {0}, {0}, 64, 200, 136, "bias_relu", false, 2,
	 false, "wg128x192x64s4ws"},
	/* ws in clusters of two (the host runs their tiles as wg's; on the GPU the
	 * tiles go in pairs of columns): an odd number of tile columns (the pair's
	 * second past the edge), a K-major and an M-major A (half of its rows, or
	 * one of its two panels, a block), batches */
	{"ws cluster 128x128 tiles 130x392x72", DT_BF16, {2, 1}, {1, 1}, 130, 392, 72, "bias_relu",
	 false, 0, false, "wg128x128x64s4wsc2"},
	{"ws cluster 128x96 a^T b^T 136x200x400", DT_F16, {0}, {0}, 136, 200, 400,
	 "residual_gelu", false, 3, false, "wg128x96x64s4wsc2"},
	{"ws cluster 128x96 six stages b^T 264x104x520", DT_BF16, {0}, {0}, 264, 104, 520,
	 "bias_relu", false, 2, false, "wg128x96x64s6wsc2"},
	{"ws cluster 128x256 tiles a^T 136x296x40", DT_BF16, {0}, {0}, 136, 296, 40, "scale_cast",
	 false, 1, false, "wg128x256x64s4wsc2"},
	/* ws ping-pong: each multiplying warpgroup a whole tile on the GPU */
	{"pp 128x128 tiles a^T 264x136x200", DT_BF16, {0}, {0}, 264, 136, 200, "bias_relu", false,
	 1, false, "wg128x128x64s4pp"},
	/* 64 columns (convs of 64 output channels; tests/cli/t_conv.sh): ws with six
	 * stages, and the plain wgmma loop two blocks an SM; partial last tiles */
	{"ws 128x64 six stages b^T 200x136x456", DT_BF16, {0}, {0}, 200, 136, 456, "bias_relu",
	 false, 2, false, "wg128x64x64s6ws"},
	{"wg 128x64 tiles 130x72x136", DT_F16, {2, 1}, {1, 1}, 130, 72, 136, "residual_gelu",
	 false, 0, false, "wg128x64x64s4"},
	/* the 64-wide ws tile with K split (under a wave at 65 to 256 rows): 3 ways
	 * over two K steps (the last share empty), batches; 8 ways, both operands
	 * transposed */
	{"ws 128x64 split 3 ways, an empty share 130x136x72", DT_BF16, {2, 1}, {1, 1}, 130, 136, 72,
	 "residual_gelu", false, 0, false, "wg128x64x64s6wssk3"},
	{"ws 128x64 split 8 ways a^T b^T 200x136x520", DT_F16, {0}, {0}, 200, 136, 520, "bias_relu",
	 false, 3, false, "wg128x64x64s6wssk8"},
	{"ws 128x64 split 2 ways b^T 72x136x520", DT_BF16, {0}, {0}, 72, 136, 520, "scale_cast",
	 false, 2, false, "wg128x64x64s6wssk2"},
	{"ws 128x64 split 4 ways 130x72x1040", DT_BF16, {0}, {0}, 130, 72, 1040, "bias_relu",
	 false, 0, false, "wg128x64x64s6wssk4"},
};
enum { MM_NCASES = (int)(sizeof mm_cases / sizeof mm_cases[0]) };

static void mm_graph(GenGraph *gg, const MmCase *c)
{
	gen_init(gg);
	int nb = c->ba[0] ? 2 : 0, r = nb + 2;
	int64_t da[4], db[4], dbias[4], dres[4];
	for (int d = 0; d < nb; d++) {
		da[d] = c->ba[d];
		db[d] = c->bb[d];
		dbias[d] = 1;
		dres[d] = c->ba[d] > c->bb[d] ? c->ba[d] : c->bb[d];
	}
	da[nb] = c->m, da[nb + 1] = c->k;
	db[nb] = c->k, db[nb + 1] = c->n;
	/* the operands as stored: transposed, or with a batch dim after the rows */
	int64_t sa[4], sb[4];
	memcpy(sa, da, sizeof sa);
	memcpy(sb, db, sizeof sb);
	if (c->trans & 1)
		sa[nb] = c->k, sa[nb + 1] = c->m;
	if (c->trans & 2)
		sb[nb] = c->n, sb[nb + 1] = c->k;
	if (c->trans & 4) {
		assert_int_equal(nb, 2);
		sa[1] = c->m, sa[2] = c->ba[1];
		sb[2] = c->n, sb[3] = c->k;
	}
	dbias[nb] = 1, dbias[nb + 1] = c->n;
	dres[nb] = c->m, dres[nb + 1] = c->n;
	/* exact: multiples of 1/4 in [-1, 1): products multiples of 1/16, sums of at most
	 * 72 of them need 11 bits, which f16 and f32 hold; bf16 rounds at the store */
	double step = c->exact ? 0.25 : 0;
	const char *a = gen_input(gg, c->dt, r, sa, -1, 1);
	gg->in[gg->ninputs - 1].step = step;
	const char *b = gen_input(gg, c->dt, r, sb, -1, 1);
	gg->in[gg->ninputs - 1].step = step;
	char swap[64];
	snprintf(swap, sizeof swap, "\"dims\": [%d, %d]", nb, nb + 1);
	if (c->trans & 1)
		a = gen_op(gg, "swap_dims", 1, &a, swap);
	if (c->trans & 2)
		b = gen_op(gg, "swap_dims", 1, &b, swap);
	if (c->trans & 4) {
		a = gen_op(gg, "permute", 1, &a, "\"axes\": [0, 2, 1, 3]");
		b = gen_op(gg, "permute", 1, &b, "\"axes\": [0, 1, 3, 2]");
	}
	const char *in2[2] = {a, b};
	const char *mm = gen_op(gg, "matmul", 2, in2, NULL);
	const char *y = mm;
	if (!strcmp(c->epi, "bias_relu")) {
		const char *bias = gen_input(gg, c->dt, r, dbias, -1, 1);
		gg->in[gg->ninputs - 1].step = step;
		const char *ab[2] = {mm, bias};
		const char *h = gen_op(gg, "add", 2, ab, NULL);
		y = gen_op(gg, "relu", 1, &h, NULL);
	} else if (!strcmp(c->epi, "residual_gelu")) {
		const char *res = gen_input(gg, c->dt, r, dres, -1, 1);
		const char *ar[2] = {mm, res};
		const char *h = gen_op(gg, "add", 2, ar, NULL);
		y = gen_op(gg, "gelu", 1, &h, "\"approximate\": \"tanh\"");
	} else if (!strcmp(c->epi, "scale_cast")) {
		const char *h = gen_op(gg, "mul_scalar", 1, &mm, "\"scalar\": 0.5");
		const char *t = gen_op(gg, "tanh", 1, &h, NULL);
		/* f16 / bf16 stay in their dtype: a cast to f32 would show that fused
		 * kernels keep f32 intermediates where the interpreter rounds each op */
		y = c->dt == DT_F32 ? gen_op(gg, "cast", 1, &t, "\"dtype\": \"f16\"") : t;
	} else if (!strcmp(c->epi, "also_mm")) {
		gen_output(gg, mm);
		y = gen_op(gg, "neg", 1, &mm, NULL);
	}
	gen_output(gg, y);
}

/* A set of tile configurations, a bit each. */
typedef struct {
	uint64_t w[2];
} VarSet;

static void varset_add(VarSet *s, int v)
{
	s->w[v / 64] |= UINT64_C(1) << (v % 64);
}

static bool varset_has(const VarSet *s, int v)
{
	return (s->w[v / 64] >> (v % 64)) & 1;
}

/* The tile configurations the host lowering of b picks; *nlaunch the launches. */
static VarSet mm_variants(const Built *b, int *nlaunch)
{
	Arena *a = arena_new();
	Diag d;
	CgOptions o = {CG_TARGET_HOST, NULL, NULL, "mm", false, b->tf32, !b->tf32};
	CgModule *m = cg_module_new(&o, a, &d);
	assert_non_null(m);
	CgProgram prog;
	assert_int_equal(cg_lower(m, b->s, a, &prog, &d), 0);
	VarSet set = {{0, 0}};
	*nlaunch = prog.nlaunch;
	for (int k = 0; k < prog.nkernels; k++)
		varset_add(&set, prog.kernels[k]->variant);
	/* one block per output tile: batch x ceil(M / BM) x ceil(N / BN) */
	for (int i = 0; i < prog.nlaunch; i++) {
		const CgBound *l = &prog.launch[i];
		int v = l->kernel->variant;
		if (v == 0)
			continue;
		int bm, bn, split = 1;
		const char *nm = cg_matmul_variant_name(v);
		/* split-K "fma64x64x16s3sk4": 4 blocks per tile */
		if (strstr(nm, "sk"))
			assert_int_equal(sscanf(strstr(nm, "sk"), "sk%d", &split), 1);
		/* "tc128x256x32s4", "tf32x64x64x32s3", "wgx3x128x96x32s4": 128, 256;
		 * 64, 64; 128, 96 */
		nm += !strncmp(nm, "tf32x", 5) || !strncmp(nm, "wgx3x", 5) ? 5 :
		      strcspn(nm, "0123456789");
		assert_int_equal(sscanf(nm, "%dx%d", &bm, &bn), 2);
		const Graph *g = b->s->g;
		const Tensor *out = NULL;
		for (int j = 0; j < g->nops && !out; j++)
			if (g->ops[j].kind == OP_MATMUL)
				out = &g->tensors[g->ops[j].out[0]];
		assert_non_null(out);
		/* clusters ("...c2"): the tile columns in pairs, the grid even */
		int cl = cg_matmul_cluster(v);
		int64_t cols = (out->dim[out->rank - 1] + bn - 1) / bn;
		int64_t tiles = ((out->dim[out->rank - 2] + bm - 1) / bm) * ((cols + cl - 1) / cl * cl);
		for (int j = 0; j < out->rank - 2; j++)
			tiles *= out->dim[j];
		/* warp-specialized ("...ws", ping-pong "...pp"): one persistent block
		 * per SM at most, a third warpgroup copying */
		bool ws = strstr(cg_matmul_variant_name(v), "ws") != NULL ||
			  strstr(cg_matmul_variant_name(v), "pp") != NULL;
		int64_t blocks = tiles * split;
		if (ws && blocks > CG_MM_PERSIST)
			blocks = CG_MM_PERSIST;
		assert_int_equal(l->at.grid[0], blocks);
		/* split: a counter per tile (16-byte rounded), a partial tile per block */
		if (split > 1)
			assert_true(l->at.scratch_bytes >= ((4 * tiles + 15) & ~15) +
				    tiles * split * bm * bn * 4);
		assert_int_equal(l->at.block[0], ws ? 384 : 256);
	}
	cg_module_free(m);
	arena_free(a);
	return set;
}

static void test_matmul_tiles(void **state)
{
	(void)state;
	VarSet seen = {{0, 0}};   /* a bit per configuration: the table has at most 128 */
	assert_true(cg_matmul_nvariants() <= 128);
	int bad = 0;
	for (int i = 0; i < MM_NCASES; i++) {
		const MmCase *c = &mm_cases[i];
		GenGraph gg;
		mm_graph(&gg, c);
		char label[96];
		snprintf(label, sizeof label, "matmul %s %s %s", c->label, ir_dtype_name(c->dt), c->epi);
		Built b;
		built_new(&b, &gg, label);
		b.tf32 = c->tf32;
		int nl;
		if (c->force)
			setenv("FUSEC_MATMUL_TILES", c->force, 1);
		VarSet v = mm_variants(&b, &nl);
		if (!(v.w[0] & ~UINT64_C(1)) && !v.w[1])
			fail_msg("%s: no tiled kernel", label);
		/* views of the operands are read in place: one kernel, no copies */
		if (c->trans && nl != 1)
			fail_msg("%s: %d launches, not one", label, nl);
		seen.w[0] |= v.w[0];
		seen.w[1] |= v.w[1];
		exact_compare = c->exact;
		bad += run_both(&b, &gg, 7, NULL) > 0;
		exact_compare = false;
		unsetenv("FUSEC_MATMUL_TILES");
		built_free(&b);
		gen_free(&gg);
	}
	/* (the dwc configurations are depthwise convs' own, tf32 wgmma takes only
	 * convs channels last: tests/cli/t_conv.sh; the att ones are the attention
	 * op's: tests/cli/t_attention.sh) */
	for (int v = 1; v < cg_matmul_nvariants(); v++)
		if (!varset_has(&seen, v) && strncmp(cg_matmul_variant_name(v), "dwc", 3) &&
		    strncmp(cg_matmul_variant_name(v), "wgtf32", 6) &&
		    strncmp(cg_matmul_variant_name(v), "att", 3))
			fail_msg("no case reaches tile configuration %s", cg_matmul_variant_name(v));
	if (bad)
		fail_msg("%d matmul cases differ from the interpreter", bad);
}

/* Every case through NVPTX for sm_90a, sm_90 and sm_80 and ptxas (the tf32 cases in a
 * module of their own: allow_tf32 is a module option). */
static void test_matmul_tiles_ptx(void **state)
{
	(void)state;
	need_ptxas();
	Built *items = xcalloc(MM_NCASES, sizeof *items);
	GenGraph *ggs = xcalloc(MM_NCASES, sizeof *ggs);
	int n = 0;
	/* pass 0: the rule's choices, 1: tf32, 2...: the cases of each forced
	 * configuration (FUSEC_MATMUL_TILES is read while lowering) */
	const char *forced[MM_NCASES];
	int nforced = 0;
	for (int i = 0; i < MM_NCASES; i++) {
		int j = 0;
		while (mm_cases[i].force && j < nforced && strcmp(forced[j], mm_cases[i].force))
			j++;
		if (mm_cases[i].force && j == nforced)
			forced[nforced++] = mm_cases[i].force;
	}
	for (int pass = 0; pass < 2 + nforced; pass++) {
		int first = n;
		const char *force = pass >= 2 ? forced[pass - 2] : NULL;
		for (int i = 0; i < MM_NCASES; i++) {
			if (mm_cases[i].tf32 != (pass == 1) || (mm_cases[i].force != NULL) != (pass >= 2) ||
			    (force && strcmp(force, mm_cases[i].force)))
				continue;
			mm_graph(&ggs[n], &mm_cases[i]);
			char label[96];
			snprintf(label, sizeof label, "matmul %s %s", mm_cases[i].label,
				 ir_dtype_name(mm_cases[i].dt));
			built_new(&items[n], &ggs[n], label);
			items[n].tf32 = mm_cases[i].tf32;
			n++;
		}
		if (force)
			setenv("FUSEC_MATMUL_TILES", force, 1);
		if (n > first)
			ptx_three(items + first, n - first);
		unsetenv("FUSEC_MATMUL_TILES");
	}
	ptxas_wait();
	for (int i = 0; i < n; i++) {
		built_free(&items[i]);
		gen_free(&ggs[i]);
	}
	free(items);
	free(ggs);
}

/* tf32 on the host is cvt.rna.tf32.f32: each operand keeps 10 mantissa bits, rounded
 * to nearest with ties away from zero. a x b with a's row 0 = [1 + 2^-11 (a tie:
 * up), 1 + 2^-12 (down), 1 + 3 * 2^-12 (up), -(1 + 2^-11) (a tie: away from zero)]
 * and b = [1, 2, 4, 8] is -1 - 3 * 2^-10 in tf32 and -1 in f32, both exact. a has
 * 17 rows (the others zero): M <= 16 would take the gemv configuration, never tf32. */
static void test_matmul_tf32_rounding(void **state)
{
	(void)state;
	static const char *const text =
		"{\"format\": \"fusec-graph/1\", \"name\": \"tf32\",\n"
		"\"inputs\": {\"a\": {\"dtype\": \"f32\", \"shape\": [17, 4]},\n"
		"  \"b\": {\"dtype\": \"f32\", \"shape\": [4, 1]}},\n"
		"\"ops\": [{\"op\": \"matmul\", \"in\": [\"a\", \"b\"], \"out\": \"y\"}],\n"
		"\"outputs\": [\"y\"]}\n";
	float a[17 * 4] = {1 + 0x1p-11f, 1 + 0x1p-12f, 1 + 3 * 0x1p-12f, -(1 + 0x1p-11f)};
	float b[4] = {1, 2, 4, 8};
	Arena *ar = arena_new();
	Graph *g = test_graph(ar, "tf32.json", text);
	SearchOptions so;
	pass_default_options(&so);
	so.no_record = true;
	Schedule *sc = test_search(g, &so);
	for (int tf32 = 0; tf32 < 2; tf32++) {
		Diag d;
		CgHost *h = cg_host_new(sc, tf32, false, &d);
		assert_non_null(h);
		float y[17] = {0};
		void *data[8] = {0};
		assert_true(g->ntensors <= 8);
		data[g->inputs[0]] = a;
		data[g->inputs[1]] = b;
		data[g->outputs[0]] = y;
		assert_int_equal(cg_host_run(h, data, &d), 0);
		if (tf32)
			assert_true(y[0] == -1 - 3 * 0x1p-10f);
		else
			assert_true(y[0] == -1);
		for (int i = 1; i < 17; i++)
			assert_true(y[i] == 0);
		cg_host_free(h);
	}
	pass_free_schedule(sc);
	arena_free(ar);
}

/* Regression: a launch none of whose results is read (dead ops) made cg_lower ask
 * for a kernel that writes nothing ("internal: kernel writes no tensor", exit 3 from
 * compile and run). Dead ops alone, dead fused blocks, and dead ops beside live ones. */
/* ---- cooperative reduce kernels at odd sizes -------------------------------------
 *
 * Every reduction op and dtype, after a prologue and before an epilogue, along rows
 * (1 to 40000 long: a warp per row, a block per row, several rows a block, rows split
 * over blocks, rows kept in shared memory between passes), columns (3 to 20000 long, split too) and whole tensors; and softmax,
 * log-softmax, layer norm and RMSNorm along rows and columns. The cpu backend runs the
 * kernels' own geometry (coop.h); the interpreter sums in f64 in index order, so
 * float sums differ by reordering, within docs/tolerances.md. Inputs are multiples of
 * 1/4 (ties for argmax/argmin, which must pick the lowest index) and the max/arg input
 * has NaN and infinities planted. All kernels also go through ptxas. */
static const char *reduce_graph(GenGraph *gg, DType dt, int rank, const int64_t *dim, int axis)
{
	bool fl = ir_dtype_is_float(dt);
	const char *x = gen_input(gg, dt, rank, dim, fl ? -4 : -3, fl ? 4 : 3);
	gg->in[gg->ninputs - 1].step = 0.25;
	const char *xs = gen_input(gg, dt, rank, dim, fl ? -4 : -3, fl ? 4 : 3);
	gg->in[gg->ninputs - 1].step = 0.25;
	gg->in[gg->ninputs - 1].special = fl;
	const char *xp = gen_input(gg, dt, rank, dim, fl ? 0.75 : 1, fl ? 1.25 : 1);
	static const char *const ops[] = {"sum", "mean", "prod", "max_dim", "min_dim", "argmax",
					  "argmin"};
	char ax[32];
	snprintf(ax, sizeof ax, "\"axis\": %d", axis);
	const char *px = prologue(gg, dt, x);
	const char *pxs = prologue(gg, dt, xs);
	for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
		if (!fl && !strcmp(ops[i], "mean"))
			continue;
		if (!strcmp(ops[i], "prod") && dim[axis] > 64)
			continue;
		bool extreme = !strcmp(ops[i], "max_dim") || !strcmp(ops[i], "min_dim") ||
			       !strncmp(ops[i], "arg", 3);
		const char *in = !strcmp(ops[i], "prod") ? xp : extreme ? pxs : px;
		const char *r = gen_op(gg, ops[i], 1, &in, ax);
		gen_output(gg, !strncmp(ops[i], "arg", 3) ? r : epilogue(gg, dt, r));
	}
	if (!fl)
		return x;
	/* softmax, log-softmax, layer norm, RMSNorm along the axis */
	const char *m = gen_op(gg, "max_dim", 1, &px, ax);
	const char *dd[2] = {px, m};
	const char *d = gen_op(gg, "sub", 2, dd, NULL);
	const char *e = gen_op(gg, "exp", 1, &d, NULL);
	const char *sum = gen_op(gg, "sum", 1, &e, ax);
	const char *es[2] = {e, sum};
	gen_output(gg, epilogue(gg, dt, gen_op(gg, "div", 2, es, NULL)));
	const char *l = gen_op(gg, "log", 1, &sum, NULL);
	const char *dl[2] = {d, l};
	gen_output(gg, gen_op(gg, "sub", 2, dl, NULL));
	const char *mu = gen_op(gg, "mean", 1, &px, ax);
	const char *xm[2] = {px, mu};
	const char *c = gen_op(gg, "sub", 2, xm, NULL);
	const char *cc[2] = {c, c};
	const char *c2 = gen_op(gg, "mul", 2, cc, NULL);
	const char *var = gen_op(gg, "mean", 1, &c2, ax);
	const char *ve = gen_op(gg, "add_scalar", 1, &var, "\"scalar\": 0.00001");
	const char *sd = gen_op(gg, "sqrt", 1, &ve, NULL);
	const char *cs[2] = {c, sd};
	gen_output(gg, gen_op(gg, "div", 2, cs, NULL));
	const char *xx[2] = {x, x};
	const char *sq = gen_op(gg, "mul", 2, xx, NULL);
	const char *ms = gen_op(gg, "mean", 1, &sq, ax);
	const char *me = gen_op(gg, "add_scalar", 1, &ms, "\"scalar\": 0.000001");
	const char *rms = gen_op(gg, "sqrt", 1, &me, NULL);
	const char *xr[2] = {x, rms};
	gen_output(gg, epilogue(gg, dt, gen_op(gg, "div", 2, xr, NULL)));
	return x;
}

static void test_reduce_shapes(void **state)
{
	(void)state;
	static const DType dts[] = {DT_F32, DT_F16, DT_BF16, DT_F64, DT_I32, DT_I64, DT_I8};
	static const struct {
		int rank;
		int64_t dim[3];
		int axis;
	} shapes[] = {
		{2, {1, 1}, 1}, {2, {3, 31}, 1}, {2, {5, 33}, 1}, {2, {2, 127}, 1},
		{2, {3, 4097}, 1}, {2, {300, 3}, 1}, {2, {1, 40000}, 1}, {1, {100000}, 0},
		{2, {4097, 3}, 0}, {2, {33, 31}, 0}, {3, {2, 20000, 5}, 1}, {2, {1000, 64}, 0},
		{3, {3, 7, 1}, 1}, {3, {2, 129, 65}, 2},
		/* rows broadcast back held in shared memory (the row cache): a block per
		 * row at 16 elements a thread, warps with a partial last block, the cache's
		 * capacity, and a row past it (passes over memory) */
		{2, {3, 4096}, 1}, {2, {300, 264}, 1}, {2, {9, 1000}, 1}, {2, {2, 8192}, 1},
		{2, {2, 12288}, 1},
	};
	enum { NS = sizeof shapes / sizeof *shapes, ND = sizeof dts / sizeof *dts };
	Built *items = xcalloc(NS * ND, sizeof *items);
	int n = 0, bad = 0;
	double t0 = clock_seconds();
	for (int di = 0; di < ND; di++)
		for (int si = 0; si < NS; si++) {
			int64_t elems = 1;
			for (int k = 0; k < shapes[si].rank; k++)
				elems *= shapes[si].dim[k];
			if (elems > 20000 && dts[di] != DT_F32 && dts[di] != DT_BF16 &&
			    dts[di] != DT_I32)
				continue;   /* the long rows and columns: three dtypes suffice */
			GenGraph gg;
			gen_init(&gg);
			reduce_graph(&gg, dts[di], shapes[si].rank, shapes[si].dim, shapes[si].axis);
			char label[96];
			snprintf(label, sizeof label, "reduce %s [%lld,%lld,%lld] axis %d",
				 ir_dtype_name(dts[di]), (long long)shapes[si].dim[0],
				 (long long)shapes[si].dim[1], (long long)shapes[si].dim[2],
				 shapes[si].axis);
			built_new(&items[n], &gg, label);
			bad += run_both(&items[n], &gg, 7 + (uint64_t)si, NULL) != 0;
			n++;
			gen_free(&gg);
		}
	double t1 = clock_seconds();
	/* ptxas sees the kernels of three dtypes (every kernel shape: rows, columns,
	 * split, broadcast back, vector path); the op matrix assembles the rest */
	ptx_coop = 0;
	Built *asm_items = xcalloc((size_t)n + 1, sizeof *asm_items);
	int na = 0;
	for (int i = 0; i < n; i++)
		if (strstr(items[i].label, "reduce f32 ") || strstr(items[i].label, "reduce bf16 ") ||
		    strstr(items[i].label, "reduce i32 "))
			asm_items[na++] = items[i];
	for (int i = 0; i < na; i += PTX_BATCH)
		ptx_both(asm_items + i, na - i < PTX_BATCH ? na - i : PTX_BATCH);
	free(asm_items);
	ptxas_wait();
	fprintf(stderr, "[backends] reduce shapes: %d graphs on cpu and interp %.1fs, %d "
		"cooperative kernels through ptxas (sm_90, sm_80) %.1fs\n", n, t1 - t0, ptx_coop,
		clock_seconds() - t1);
	assert_true(ptx_coop >= na);    /* every graph has cooperative kernels */
	for (int i = 0; i < n; i++)
		built_free(&items[i]);
	free(items);
	assert_int_equal(bad, 0);
}

static void test_dead_ops(void **state)
{
	(void)state;
	static const char *const text =
		"{\"format\": \"fusec-graph/1\", \"name\": \"dead\",\n"
		"\"inputs\": {\"x0\": {\"dtype\": \"f32\", \"shape\": [4, 9]}},\n"
		"\"ops\": [{\"op\": \"exp\", \"in\": [\"x0\"], \"out\": \"d0\"},\n"
		"  {\"op\": \"sync\"},\n"
		"  {\"op\": \"mul_scalar\", \"in\": [\"x0\"], \"scalar\": 2, \"out\": \"d1\"},\n"
		"  {\"op\": \"tanh\", \"in\": [\"d1\"], \"out\": \"d2\"},\n"
		"  {\"op\": \"sync\"},\n"
		"  {\"op\": \"sum\", \"in\": [\"x0\"], \"axis\": 1, \"out\": \"d3\"},\n"
		"  {\"op\": \"neg\", \"in\": [\"x0\"], \"out\": \"y\"}],\n"
		"\"outputs\": [\"y\"]}\n";
	Built b;
	memset(&b, 0, sizeof b);
	snprintf(b.label, sizeof b.label, "dead ops");
	b.text = strdup(text);
	b.arena = arena_new();
	b.g = test_graph(b.arena, "dead.json", text);
	SearchOptions so;
	pass_default_options(&so);
	so.no_record = true;
	b.s = test_search(b.g, &so);
	GenGraph gg;
	gen_init(&gg);
	gen_input(&gg, DT_F32, 2, (const int64_t[]){4, 9}, -1, 1);
	assert_int_equal(run_both(&b, &gg, 3, NULL), 0);
	/* every op still has code: the launches cover all five */
	int covered = 0;
	for (int i = 0; i < b.s->nsteps; i++)
		for (int j = 0; j < b.s->steps[i].nlaunch; j++)
			covered += b.s->steps[i].launch[j].nops;
	assert_int_equal(covered, 5);
	if (test_find_ptxas())
		ptx_both(&b, 1);
	ptxas_wait();
	gen_free(&gg);
	built_free(&b);
}

/* Size-1 dims in a fused output (docs/burn-fidelity.md row 1): ElementWise grows its
 * reference shape where it has size 1, and takes outputs smaller on size-1 dims. At
 * odd sizes, each graph must be one kernel (or, for the incompatible one, more) and
 * match the interpreter; the smaller outputs are written once per position (the
 * poisoned buffers of run_both show a missed or a stray write). */
static void test_size1_dims(void **state)
{
	(void)state;
	static const struct {
		const char *label;
		int kernels;
		const char *text;
	} cases[] = {
		{"exp [1,37] + [29,37], neg, and the [1,37] again", 1,
		 "{\"format\": \"fusec-graph/1\", \"name\": \"s1a\",\n"
		 "\"inputs\": {\"x0\": {\"dtype\": \"f32\", \"shape\": [1, 37]},\n"
		 "  \"x1\": {\"dtype\": \"f32\", \"shape\": [29, 37]}},\n"
		 "\"ops\": [{\"op\": \"exp\", \"in\": [\"x0\"], \"out\": \"e\"},\n"
		 "  {\"op\": \"add\", \"in\": [\"e\", \"x1\"], \"out\": \"a\"},\n"
		 "  {\"op\": \"neg\", \"in\": [\"a\"], \"out\": \"y\"},\n"
		 "  {\"op\": \"mul_scalar\", \"in\": [\"e\"], \"scalar\": 3, \"out\": \"w\"},\n"
		 "  {\"op\": \"sync\"}],\n"
		 "\"outputs\": [\"y\", \"w\", \"e\"]}\n"},
		{"growing twice, rank 3, f16", 1,
		 "{\"format\": \"fusec-graph/1\", \"name\": \"s1b\",\n"
		 "\"inputs\": {\"x0\": {\"dtype\": \"f16\", \"shape\": [1, 1, 5]},\n"
		 "  \"x1\": {\"dtype\": \"f16\", \"shape\": [3, 1, 5]},\n"
		 "  \"x2\": {\"dtype\": \"f16\", \"shape\": [3, 7, 5]}},\n"
		 "\"ops\": [{\"op\": \"tanh\", \"in\": [\"x0\"], \"out\": \"t\"},\n"
		 "  {\"op\": \"mul\", \"in\": [\"t\", \"x1\"], \"out\": \"m\"},\n"
		 "  {\"op\": \"sub\", \"in\": [\"m\", \"x2\"], \"out\": \"y\"},\n"
		 "  {\"op\": \"abs\", \"in\": [\"m\"], \"out\": \"u\"},\n"
		 "  {\"op\": \"sync\"}],\n"
		 "\"outputs\": [\"y\", \"u\", \"t\"]}\n"},
		{"a smaller output after the reference, written per column", 1,
		 "{\"format\": \"fusec-graph/1\", \"name\": \"s1c\",\n"
		 "\"inputs\": {\"x0\": {\"dtype\": \"f32\", \"shape\": [11, 13]},\n"
		 "  \"x1\": {\"dtype\": \"f32\", \"shape\": [1, 13]}},\n"
		 "\"ops\": [{\"op\": \"add\", \"in\": [\"x0\", \"x1\"], \"out\": \"a\"},\n"
		 "  {\"op\": \"exp\", \"in\": [\"x1\"], \"out\": \"er\"},\n"
		 "  {\"op\": \"mul\", \"in\": [\"a\", \"er\"], \"out\": \"y\"},\n"
		 "  {\"op\": \"sync\"}],\n"
		 "\"outputs\": [\"y\", \"er\"]}\n"},
		/* [1,13] grown by the reshape's [13,1] would be [13,13], not that output's
		 * shape: refused, so exp and the reshape are not fused (and add runs alone) */
		{"[1,13] then [13,1]: not compatible", 3,
		 "{\"format\": \"fusec-graph/1\", \"name\": \"s1d\",\n"
		 "\"inputs\": {\"x0\": {\"dtype\": \"f32\", \"shape\": [1, 13]}},\n"
		 "\"ops\": [{\"op\": \"exp\", \"in\": [\"x0\"], \"out\": \"e\"},\n"
		 "  {\"op\": \"reshape\", \"in\": [\"x0\"], \"shape\": [13, 1], \"out\": \"r\"},\n"
		 "  {\"op\": \"add\", \"in\": [\"r\", \"e\"], \"out\": \"y\"},\n"
		 "  {\"op\": \"sync\"}],\n"
		 "\"outputs\": [\"y\", \"e\"]}\n"},
	};
	for (size_t i = 0; i < COUNTOF(cases); i++) {
		Built b;
		memset(&b, 0, sizeof b);
		snprintf(b.label, sizeof b.label, "size-1 dims: %s", cases[i].label);
		b.text = strdup(cases[i].text);
		b.arena = arena_new();
		b.g = test_graph(b.arena, "size1.json", cases[i].text);
		SearchOptions so;
		pass_default_options(&so);
		so.no_record = true;
		b.s = test_search(b.g, &so);
		GenGraph gg;
		gen_init(&gg);
		for (int t = 0; t < b.g->ninputs; t++) {
			const Tensor *gt = &b.g->tensors[b.g->inputs[t]];
			gen_input(&gg, gt->dtype, gt->rank, gt->dim, -1, 1);
		}
		int launches = 0;
		for (int k = 0; k < b.s->nsteps; k++)
			launches += b.s->steps[k].nlaunch;
		if (launches != cases[i].kernels)
			fail_msg("%s: %d kernels, want %d", b.label, launches, cases[i].kernels);
		assert_int_equal(run_both(&b, &gg, 7 + i, NULL), 0);
		if (test_find_ptxas())
			ptx_both(&b, 1);
		ptxas_wait();
		gen_free(&gg);
		built_free(&b);
	}
}

const struct CMUnitTest backends_tests[] = {
	cmocka_unit_test(test_dead_ops),
	cmocka_unit_test(test_size1_dims),
	cmocka_unit_test(test_rule_dtypes_words),
	cmocka_unit_test(test_reduce_shapes),
	cmocka_unit_test(test_golden_kernel_counts),
	cmocka_unit_test(test_golden_numbers),
	cmocka_unit_test(test_op_matrix),
	cmocka_unit_test(test_random_deterministic),
	cmocka_unit_test(test_random_graphs),
	cmocka_unit_test(test_op_matrix_ptx),
	cmocka_unit_test(test_random_graphs_ptx),
	cmocka_unit_test(test_matmul_tiles),
	cmocka_unit_test(test_matmul_tiles_ptx),
	cmocka_unit_test(test_matmul_tf32_rounding),
};
const size_t backends_ntests = SUITE_COUNT(backends_tests);
