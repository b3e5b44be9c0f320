/* run.c: `fusec run GRAPH --backend B` executes a graph and prints a short summary
 * of every output; `--check` compares each output against the reference
 * interpreter, each element against the error bound the interpreter carries
 * (docs/tolerances.md), or against --atol/--rtol.
 *
 * Inputs are seeded random by default: each input draws from its own stream of
 * one --seed (host_input_stream: a hash of its name), with the ranges of
 * host_default_range, except that a tensor used as a gather index is drawn from
 * [0, size of the gathered dim). `--inputs` reads .npy files instead.
 *
 * A backend is a RunBackend (cmd/run.h) plus one line in the backends table; a
 * line with a NULL vtable names a backend still to come. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../host/interp.h"
#include "cmd.h"
#include "run.h"

static const char run_usage[] =
	"usage: fusec run GRAPH [--backend interp|cpu|cuda] [--inputs DIR|NAME=FILE,...]\n"
	"                 [--outputs DIR] [--seed N] [--check [--atol A] [--rtol R]]\n"
	"                 [--allow-tf32] [--no-3xtf32] [--burn-exact] [--dynamic]\n"
	"       fusec run DIR --backend cuda [--inputs DIR] [--outputs DIR] [--seed N]\n"
	"\n"
	"Execute GRAPH and print, per output, its dtype, shape, the sum of its elements\n"
	"and its first values. DIR (or DIR/NAME.plan.json) is what `fusec compile` wrote.\n"
	"\n"
	"options:\n"
	"  --backend B      interp (the plain-C reference interpreter; default), cpu (the\n"
	"                   generated kernels, JIT-compiled for this CPU) or cuda (the\n"
	"                   PTX on GPU 0, through libcuda.so.1)\n"
	"  --inputs DIR     read each graph input NAME from DIR/NAME.npy (characters of\n"
	"                   NAME outside [A-Za-z0-9._-] become _; constants need none)\n"
	"  --inputs N=F,..  read input N from the .npy file F; other inputs are random;\n"
	"                   either way, named dims no --input-shape binds take the\n"
	"                   files' shapes (docs/graph-format.md, \"Named dims\")\n"
	"  --seed N         seed of the random inputs (default 0)\n"
	"  --outputs DIR    write each output to DIR/NAME.npy (bf16 is written as <f4);\n"
	"                   --backend interp also writes DIR/NAME.bound.npy, the error\n"
	"                   bound of each element (<f8, docs/tolerances.md)\n"
	"  --check          compare every output against the interpreter, each element\n"
	"                   against its error bound (docs/tolerances.md); print the worst\n"
	"                   elements; exit 3 when one is over, 4 when none is but\n"
	"                   some element has no bound (`not checked`)\n"
	"  --atol A, --rtol R  with --check: a flat bound atol + rtol*|reference| instead\n"
	"                   (either alone: the other is 0)\n"
	"  --allow-tf32     f32 matmuls may use tf32 tensor cores (cpu: emulated); the\n"
	"                   check's bounds count their operands as tf32 (as compile's)\n"
	"  --no-3xtf32      cpu, cuda: f32 matmuls stay on f32 FMA, as compile's; by\n"
	"                   default they may run as three tf32 products a step (cpu:\n"
	"                   emulated), and the check's bounds count that\n"
	"  --burn-exact     cpu, cuda: search with burn-fusion's rules where fusec\n"
	"                   deviates on purpose, as `fusec compile --burn-exact`\n"
	"  --dynamic        cpu, cuda: compile the graph once for every size of its named\n"
	"                   dims, then run it at the sizes the inputs (or\n"
	"                   --input-shape) give (docs/graph-format.md, \"Every size\n"
	"                   at once\")\n"
	"  --precision bf16|f16, --keep-f32 LIST  run the graph converted as `fusec\n"
	"                   compile --precision` does; --check then holds it to the f32\n"
	"                   graph and adds rel_l2 (docs/precision.md)\n"
	"\n"
	"exit status: 0 success, 1 invalid graph or inputs, 2 usage error, 3 runtime\n"
	"failure or a failed check, 4 (--check) no failure but some output not checked.\n";

/* ---- backends -------------------------------------------------------------- */

static int interp_prepare(RunCtx *c, Diag *d)
{
	c->state = xcalloc((size_t)c->g->noutputs + 1, sizeof(HostTensor));
	return 0;
}

static int interp_exec(RunCtx *c, Diag *d)
{
	return interp_run(c->g, c->inputs, c->state, d);
}

static int interp_outputs(RunCtx *c, HostTensor *outs, Diag *d)
{
	HostTensor *res = c->state;
	for (int i = 0; i < c->g->noutputs; i++) {
		outs[i] = res[i];
		memset(&res[i], 0, sizeof res[i]);
	}
	return 0;
}

static void interp_release(RunCtx *c)
{
	HostTensor *res = c->state;
	for (int i = 0; res && i < c->g->noutputs; i++)
		host_free(&res[i]);
	free(res);
	c->state = NULL;
}

static const RunBackend interp_backend = {
	interp_prepare, interp_exec, interp_outputs, interp_release,
};

static const struct {
	const char *name;
	const RunBackend *vt;      /* NULL: not supported yet */
} backends[] = {
	{"interp", &interp_backend},
	{"cpu", &run_cpu_backend},
	{"cuda", &run_cuda_backend},
};

/* Prepare, run and collect; outs must hold g->noutputs empty tensors. */
static int backend_run(const RunBackend *vt, const Graph *g, const Graph *gsym,
		       const HostTensor *inputs, bool tf32, bool x3, bool burn_exact,
		       HostTensor *outs, Diag *d)
{
	RunCtx c = {.g = g, .inputs = inputs, .allow_tf32 = tf32, .allow_3xtf32 = x3,
		    .burn_exact = burn_exact, .gsym = gsym};
	int rc = vt->prepare(&c, d);
	if (!rc)
		rc = vt->run(&c, d);
	if (!rc)
		rc = vt->outputs(&c, outs, d);
	vt->release(&c);
	return rc;
}

/* ---- inputs ---------------------------------------------------------------- */

static int find_input(const Graph *g, const char *name, size_t len)
{
	for (int i = 0; i < g->ninputs; i++) {
		const char *n = g->tensors[g->inputs[i]].name;
		if (strlen(n) == len && !memcmp(n, name, len))
			return i;
	}
	return -1;
}

/* Read input i from path into *t, converting only <f4 data for a bf16 input. */
static int load_input(const Graph *g, int i, const char *path, HostTensor *t)
{
	Diag d;
	if (npy_read_file(path, t, &d)) {
		cmd_print_diag(&d);
		return -1;
	}
	if (g->tensors[g->inputs[i]].dtype == DT_BF16 && t->dtype == DT_F32) {
		HostTensor b;
		if (host_alloc(&b, DT_BF16, t->rank, t->dim, &d)) {
			cmd_print_diag(&d);
			host_free(t);
			return -1;
		}
		for (int64_t k = 0; k < t->n; k++)
			host_set(&b, k, host_get(t, k));
		host_free(t);
		*t = b;
	}
	if (interp_check_input(g, i, t, &d)) {
		cmd_error("%s: %s", path, d.msg);
		host_free(t);
		return -1;
	}
	return 0;
}

static char *file_name(Arena *a, const char *dir, const char *name);

/* --inputs as an IrShapeLookup: the shape in the header of an input's file. */
typedef struct {
	const char *spec;          /* DIR, or NAME=FILE,... */
	Arena *a;                  /* the graph's: the file names named in messages */
} InputData;

/* The shape of input's file, DIR/NAME.npy or the FILE of NAME=FILE (the first
 * given; run_load_inputs refuses a second); 0 when NAME=FILE,... gives none. */
static int data_shape(void *ctx, const char *input, IrInputShape *s, Diag *d)
{
	const InputData *in = ctx;
	const char *path = NULL;
	if (!strchr(in->spec, '=')) {
		path = file_name(in->a, in->spec, input);
	} else {
		size_t n = strlen(input);
		for (const char *p = in->spec; *p && !path;) {
			size_t len = strcspn(p, ",");
			const char *eq = memchr(p, '=', len);
			if (eq && (size_t)(eq - p) == n && !memcmp(p, input, n))
				path = arena_strndup(in->a, eq + 1, len - n - 1);
			p += len + (p[len] ? 1 : 0);
		}
	}
	if (!path)
		return 0;
	DType dt;
	if (npy_read_shape(path, &dt, &s->rank, s->dim, d))
		return -1;
	s->name = input;
	s->from = path;
	return 1;
}

Graph *run_load_graph_symbolic(Arena *a, const char *path)
{
	return cmd_load_graph_every(a, path);
}

Graph *run_load_graph(Arena *a, const char *path, const char *inputs)
{
	if (!inputs)
		return cmd_load_graph(a, path);
	InputData data = {inputs, a};
	IrShapeLookup lookup = {data_shape, &data, false, NULL, 0};
	return cmd_load_graph_data(a, path, &lookup);
}

int run_load_inputs(const Graph *g, const char *spec, HostTensor *in)
{
	if (!strchr(spec, '=')) {
		for (int i = 0; i < g->ninputs; i++) {
			if (g->tensors[g->inputs[i]].data)
				continue;  /* a constant: the graph holds its value */
			char *path = file_name(g->arena, spec, g->tensors[g->inputs[i]].name);
			if (load_input(g, i, path, &in[i]))
				return -1;
		}
		return 0;
	}
	const char *p = spec;
	while (*p) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		const char *eq = memchr(p, '=', len);
		if (!eq || eq == p) {
			cmd_error("--inputs: expected NAME=FILE, got '%.*s'", (int)len, p);
			return -1;
		}
		int i = find_input(g, p, (size_t)(eq - p));
		if (i < 0) {
			cmd_error("--inputs: the graph has no input '%.*s'", (int)(eq - p), p);
			return -1;
		}
		if (g->tensors[g->inputs[i]].data) {
			cmd_error("--inputs: '%s' is a constant of the graph, not an input",
				  g->tensors[g->inputs[i]].name);
			return -1;
		}
		if (in[i].data) {
			cmd_error("--inputs: input '%s' is given twice",
				  g->tensors[g->inputs[i]].name);
			return -1;
		}
		char *path = arena_strndup(g->arena, eq + 1, len - (size_t)(eq - p) - 1);
		if (load_input(g, i, path, &in[i]))
			return -1;
		p += len + (comma ? 1 : 0);
	}
	return 0;
}

/* The random range of input tensor t: a gather index stays inside every dim it
 * indexes. */
static void input_range(const Graph *g, int t, double *lo, double *hi)
{
	host_default_range(g->tensors[t].dtype, lo, hi);
	bool is_index = false;
	for (int i = 0; i < g->nops; i++) {
		const Op *op = &g->ops[i];
		if (op->kind != OP_GATHER || op->in[1] != t)
			continue;
		double size = (double)g->tensors[op->in[0]].dim[op->attr->axis];
		if (!is_index || size - 1 < *hi)
			*hi = size - 1;
		*lo = 0;
		is_index = true;
	}
}

int run_random_inputs(const Graph *g, uint64_t seed, HostTensor *in)
{
	for (int i = 0; i < g->ninputs; i++) {
		if (in[i].data)
			continue;
		const Tensor *t = &g->tensors[g->inputs[i]];
		Diag d;
		if (host_alloc(&in[i], t->dtype, t->rank, t->dim, &d)) {
			cmd_error("input '%s': %s", t->name, d.msg);
			return -1;
		}
		if (t->data) {  /* a constant */
			memcpy(in[i].data, t->data, (size_t)in[i].n * (size_t)ir_dtype_size(t->dtype));
			continue;
		}
		HostRng r;
		host_rng_init(&r, seed, host_input_stream(t->name));
		double lo, hi;
		input_range(g, g->inputs[i], &lo, &hi);
		host_fill_random(&in[i], &r, lo, hi);
	}
	return 0;
}

/* ---- outputs --------------------------------------------------------------- */

static void print_summary(const Graph *g, const HostTensor *outs)
{
	for (int i = 0; i < g->noutputs; i++) {
		const HostTensor *t = &outs[i];
		char shape[160], num[40];
		double sum = 0;
		for (int64_t k = 0; k < t->n; k++)
			sum += host_get(t, k);
		snprintf(num, sizeof num, "%.10g", sum);
		printf("%s: %s sum=%s first=[", g->tensors[g->outputs[i]].name,
		       host_shape_text(t->dtype, t->rank, t->dim, shape, sizeof shape), num);
		for (int64_t k = 0; k < t->n && k < 4; k++) {
			snprintf(num, sizeof num, "%.6g", host_get(t, k));
			printf(k ? ", %s" : "%s", num);
		}
		printf(t->n > 4 ? ", ...]\n" : "]\n");
	}
}

/* DIR/NAME.npy, NAME sanitized (npy_path). */
static char *file_name(Arena *a, const char *dir, const char *name)
{
	size_t size = strlen(dir) + strlen(name) + 8;
	char *buf = arena_alloc(a, size);
	npy_path(buf, size, dir, name);
	return buf;
}

/* Write each output to DIR/NAME.npy and, when bounds is not NULL, its error bound
 * to DIR/NAME.bound.npy. */
static int write_outputs(const Graph *g, const char *dir, const HostTensor *outs,
			 const HostTensor *bounds)
{
	if (mkdir(dir, 0777) && errno != EEXIST) {
		cmd_error("cannot create '%s': %s", dir, strerror(errno));
		return -1;
	}
	for (int i = 0; i < g->noutputs; i++) {
		Diag d;
		const char *name = g->tensors[g->outputs[i]].name;
		if (npy_write_file(file_name(g->arena, dir, name), &outs[i], &d) ||
		    (bounds && npy_write_file(file_name(g->arena, dir,
						       arena_printf(g->arena, "%s.bound", name)),
					      &bounds[i], &d))) {
			cmd_print_diag(&d);
			return -1;
		}
	}
	return 0;
}

/* The multi-index of flat element i of t, as "[i,j,k]". */
static const char *index_text(const HostTensor *t, int64_t i, char *buf, size_t size)
{
	int64_t c[IR_MAX_RANK];
	for (int k = t->rank - 1; k >= 0; k--) {
		c[k] = t->dim[k] ? i % t->dim[k] : 0;
		i = t->dim[k] ? i / t->dim[k] : 0;
	}
	size_t n = (size_t)snprintf(buf, size, "[");
	for (int k = 0; k < t->rank && n < size; k++)
		n += (size_t)snprintf(buf + n, size - n, k ? ",%lld" : "%lld", (long long)c[k]);
	if (n < size)
		snprintf(buf + n, size - n, "]");
	return buf;
}

/* The relative L2 error of got against want, over the elements finite in both
 * (--precision: what the conversion costs). */
static double rel_l2(const HostTensor *got, const HostTensor *want)
{
	double num = 0, den = 0;
	for (int64_t i = 0; got->n == want->n && i < want->n; i++) {
		double g = host_get(got, i), w = host_get(want, i);
		if (isfinite(g) && isfinite(w)) {
			num += (g - w) * (g - w);
			den += w * w;
		}
	}
	return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* One output's check: a summary line, then its worst elements (all kept when it
 * fails, the worst one when it passes). l2 >= 0: the relative L2 error, shown. */
static void print_check(const char *name, const HostTensor *want, const CheckResult *r,
			bool flat, double atol, double rtol, double l2)
{
	printf("check %s: max_abs=%.3g max_err/bound=%.3g", name, r->max_abs, r->max_ratio);
	if (l2 >= 0)
		printf(" rel_l2=%.3g", l2);
	if (flat)
		printf(" (atol=%.3g rtol=%.3g)", atol, rtol);
	if (r->nbad)
		printf(" bad=%lld", (long long)r->nbad);
	if (r->nunbounded)
		printf(" unbounded=%lld", (long long)r->nunbounded);
	printf(" %s\n", check_status_name(r->status));
	int show = r->ok && r->nworst ? 1 : r->nworst;
	for (int k = 0; k < show; k++) {
		const CheckElem *e = &r->worst[k];
		char idx[160];
		printf("  worst %s: got %.9g want %.9g err %.3g bound %.3g err/bound %.3g\n",
		       index_text(want, e->index, idx, sizeof idx), e->got, e->want,
		       fabs(e->got - e->want), e->bound, e->ratio);
	}
}

/* The interpreter's values and, when bounds is not NULL, their bounds. With
 * --precision these are the original f32 graph's values, computed by the shadow
 * of the converted graph (passes/precision.c), and bounds that cover the
 * converted graph's roundings (docs/tolerances.md, "Reduced precision"). */
static int reference_run(const Graph *g, const HostTensor *in, HostTensor *outs,
			 HostTensor *bounds, int tf32, Diag *d)
{
	const PrecisionInfo *pi = cmd_precision_info();
	if (!pi)
		return bounds ? interp_run_bounds_tf32(g, in, outs, bounds, tf32, d)
			      : interp_run(g, in, outs, d);
	/* the shadow's inputs: the converted constants in their f32 data */
	const Graph *s = pi->shadow;
	HostTensor *sin = xcalloc((size_t)g->ninputs + 1, sizeof *sin);
	bool *own = xcalloc((size_t)g->ninputs + 1, sizeof *own);
	int rc = 0;
	for (int i = 0; i < g->ninputs && !rc; i++) {
		const Tensor *t = &s->tensors[s->inputs[i]];
		sin[i] = in[i];
		if (t->dtype == in[i].dtype)
			continue;
		own[i] = true;
		rc = host_alloc(&sin[i], t->dtype, t->rank, t->dim, d);
		if (!rc)
			memcpy(sin[i].data, t->data, (size_t)sin[i].n * (size_t)ir_dtype_size(t->dtype));
	}
	if (!rc)
		rc = interp_run_bounds_stored(s, pi->store, sin, outs, bounds, tf32, d);
	for (int i = 0; i < g->ninputs; i++)
		if (own[i])
			host_free(&sin[i]);
	free(sin);
	free(own);
	return rc;
}

/* Compare outs against the interpreter; returns the exit status: EXIT_FAIL when an
 * output failed or the interpreter itself did, else EXIT_NOT_CHECKED when an output
 * was not checked, else EXIT_OK. flat: use atol/rtol, not the bounds. */
static int check_outputs(const Graph *g, const HostTensor *in, const HostTensor *outs, bool flat,
			 double atol, double rtol, int tf32)
{
	int nunchecked = 0;
	HostTensor *ref = xcalloc((size_t)g->noutputs + 1, sizeof *ref);
	HostTensor *bound = xcalloc((size_t)g->noutputs + 1, sizeof *bound);
	Diag d;
	int nfail = 0;
	if (reference_run(g, in, ref, bound, tf32, &d)) {
		cmd_print_diag(&d);
		nfail = -1;
	}
	for (int i = 0; nfail >= 0 && i < g->noutputs; i++) {
		CheckResult r;
		check_compare(&outs[i], &ref[i], flat ? NULL : &bound[i], atol, rtol, &r);
		print_check(g->tensors[g->outputs[i]].name, &ref[i], &r, flat, atol, rtol,
			    cmd_precision_info() ? rel_l2(&outs[i], &ref[i]) : -1);
		nfail += r.status == CHECK_FAIL;
		nunchecked += r.status == CHECK_NOT_CHECKED;
	}
	for (int i = 0; i < g->noutputs; i++) {
		host_free(&ref[i]);
		host_free(&bound[i]);
	}
	free(ref);
	free(bound);
	return nfail ? EXIT_FAIL : nunchecked ? EXIT_NOT_CHECKED : EXIT_OK;
}

/* `fusec run DIR --backend cuda`: a compiled plan, inputs drawn from the plan. */
static int run_compiled(const char *path, const char *inputs, const char *outputs, uint64_t seed)
{
	RunPlan rp;
	Diag d;
	RtStatus rs;
	int status = EXIT_OK;
	if ((rs = run_plan_open(path, inputs, outputs, seed, &rp, &d)) != RT_OK) {
		cmd_print_diag(&d);
		status = (int)rs;
	} else if ((rs = rt_cuda_run(path, rp.in, rp.nin, rp.out, rp.nout, &d)) != RT_OK) {
		cmd_print_diag(&d);
		status = rs == RT_ERR_INPUT ? EXIT_INPUT : EXIT_FAIL;
	} else {
		Arena *names = arena_new();
		for (int i = 0; i < rp.nout; i++) {
			char shape[160];
			const HostTensor *t = &rp.out[i].t;
			double sum = 0;
			for (int64_t k = 0; k < t->n; k++)
				sum += host_get(t, k);
			printf("%s: %s sum=%.10g\n", rp.out[i].name,
			       host_shape_text(t->dtype, t->rank, t->dim, shape, sizeof shape), sum);
			if (!outputs)
				continue;
			if (mkdir(outputs, 0777) && errno != EEXIST) {
				cmd_error("cannot create '%s': %s", outputs, strerror(errno));
				status = EXIT_FAIL;
				break;
			}
			if (npy_write_file(file_name(names, outputs, rp.out[i].name), t, &d)) {
				cmd_print_diag(&d);
				status = EXIT_FAIL;
				break;
			}
		}
		arena_free(names);
	}
	run_plan_close(&rp);
	return status;
}

/* ---- the command ----------------------------------------------------------- */

/* A tolerance: a finite number >= 0. */
static int parse_tol(const char *opt, const char *val, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(val, &end);
	if (errno || end == val || *end || !(v >= 0) || isinf(v)) {
		cmd_usage_error("run", "option '%s' needs a number >= 0, got '%s'", opt, val);
		return -1;
	}
	*out = v;
	return 0;
}

/* a + b, saturating */
static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

int run_precheck(const Graph *g, const RunBackend *vt, const char *inputs, const char *outputs,
		 bool check, bool bounds)
{
	Diag d;
	Arena *a = g->arena;
	int n = 0, nmax = 2 * (g->ninputs + g->noutputs) + 1;
	const char **names = arena_alloc(a, (size_t)nmax * sizeof *names);
	const char **labels = arena_alloc(a, (size_t)nmax * sizeof *labels);
	for (int i = 0; inputs && !strchr(inputs, '=') && i < g->ninputs; i++)
		if (!g->tensors[g->inputs[i]].data)
			names[n++] = g->tensors[g->inputs[i]].name;
	if (npy_check_names(inputs ? inputs : "", names, NULL, n, SIZE_MAX, "--inputs",
			    "read from", &d))
		goto bad;
	n = 0;
	for (int i = 0; outputs && i < g->noutputs; i++) {
		const char *name = g->tensors[g->outputs[i]].name;
		labels[n] = name;
		names[n++] = name;
		if (bounds) {
			labels[n] = arena_printf(a, "the error bound of %s", name);
			names[n++] = arena_printf(a, "%s.bound", name);
		}
	}
	if (npy_check_names(outputs ? outputs : "", names, labels, n, SIZE_MAX, "--outputs",
			    "written to", &d))
		goto bad;

	uint64_t in = 0, out = 0;
	for (int i = 0; i < g->ninputs; i++) {
		const Tensor *t = &g->tensors[g->inputs[i]];
		in = add_sat(in, interp_tensor_bytes(t, t->dtype));
	}
	for (int i = 0; i < g->noutputs; i++) {
		const Tensor *t = &g->tensors[g->outputs[i]];
		out = add_sat(out, interp_tensor_bytes(t, t->dtype));
	}
	bool interp = vt == &interp_backend;
	uint64_t run = interp ? interp_peak_bytes(g, bounds) : out;
	uint64_t ref = check ? add_sat(out, interp_peak_bytes(g, true)) : 0;
	char x[32], y[32], z[32], detail[200];
	int k = snprintf(detail, sizeof detail, "inputs %s, %s %s", host_bytes_text(in, x, sizeof x),
			 interp ? "the interpreter's values at their peak" : "outputs",
			 host_bytes_text(run, y, sizeof y));
	if (check)
		snprintf(detail + k, sizeof detail - (size_t)k, "; with --check's reference %s",
			 host_bytes_text(ref, z, sizeof z));
	if (host_mem_check(add_sat(in, run > ref ? run : ref), detail, &d))
		goto bad;
	if (vt == &run_cuda_backend && rt_device_check(NULL, 0, NULL, &d) != RT_OK) {
		cmd_print_diag(&d);
		return EXIT_FAIL;
	}
	return EXIT_OK;
bad:
	cmd_print_diag(&d);
	return EXIT_INPUT;
}

int cmd_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'},
		{"backend", required_argument, NULL, 'b'},
		{"inputs", required_argument, NULL, 'i'},
		{"outputs", required_argument, NULL, 'o'},
		{"seed", required_argument, NULL, 's'},
		{"check", no_argument, NULL, 'c'},
		{"atol", required_argument, NULL, 'A'},
		{"rtol", required_argument, NULL, 'R'},
		{"allow-tf32", no_argument, NULL, 't'},
		{"allow-3xtf32", no_argument, NULL, 'X'},
		{"no-3xtf32", no_argument, NULL, 'Y'},
		{"burn-exact", no_argument, NULL, 'E'},
		{"dynamic", no_argument, NULL, 'D'},
		{0, 0, 0, 0},
	};
	const char *backend = "interp", *inputs = NULL, *outputs = NULL;
	long seed = 0;
	bool check = false, flat = false, tf32 = false, x3 = cmd_x3(), burn_exact = false;
	bool dynamic = false;
	double tol[2] = {0, 0};       /* atol, rtol */
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h': fputs(run_usage, stdout); return EXIT_OK;
		case 'b': backend = optarg; break;
		case 'i': inputs = optarg; break;
		case 'o': outputs = optarg; break;
		case 's':
			if ((seed = cmd_parse_count("run", "--seed", optarg)) < 0)
				return EXIT_USAGE;
			break;
		case 'c': check = true; break;
		case 't': tf32 = true; break;
		case 'X': case 'Y': break;   /* cmd_x3 */
		case 'E': burn_exact = true; break;
		case 'D': dynamic = true; break;
		case 'A': case 'R':
			if (parse_tol(c == 'A' ? "--atol" : "--rtol", optarg, &tol[c == 'R']))
				return EXIT_USAGE;
			flat = true;
			break;
		default:
			cmd_usage_error("run", "unknown option or missing value '%s'",
					argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		cmd_usage_error("run", "expected one GRAPH argument");
		return EXIT_USAGE;
	}
	if (flat && !check) {
		cmd_usage_error("run", "--atol and --rtol apply to --check");
		return EXIT_USAGE;
	}
	const RunBackend *vt = NULL;
	size_t nb = sizeof backends / sizeof backends[0], b = 0;
	while (b < nb && strcmp(backends[b].name, backend))
		b++;
	if (b == nb) {
		cmd_usage_error("run", "unknown backend '%s' (interp, cpu or cuda)", backend);
		return EXIT_USAGE;
	}
	vt = backends[b].vt;
	if (!vt) {
		cmd_error("backend '%s' is not supported yet", backend);
		return EXIT_FAIL;
	}
	const char *path = argv[optind];
	if (dynamic && vt == &interp_backend) {
		cmd_usage_error("run", "--dynamic compiles: it takes --backend cpu or cuda");
		return EXIT_USAGE;
	}
	if (run_is_plan(path)) {
		if (cmd_refuse_input_shapes(path))
			return EXIT_INPUT;
		if (vt != &run_cuda_backend || check) {
			cmd_usage_error("run", "'%s' is a compiled plan: it runs with --backend cuda "
					"and without --check (give the graph file for those)", path);
			return EXIT_USAGE;
		}
		return run_compiled(path, inputs, outputs, (uint64_t)seed);
	}

	Arena *a = arena_new();
	Graph *g = run_load_graph(a, path, inputs);
	/* --dynamic: the graph for every size, compiled once, bound to g's sizes */
	const Graph *gsym = g && dynamic ? run_load_graph_symbolic(a, path) : NULL;
	if (!g || (dynamic && !gsym)) {
		arena_free(a);
		return EXIT_INPUT;
	}
	if (gsym && !gsym->sym)
		gsym = NULL;   /* nothing left symbolic: a graph like any other */
	if (gsym) {
		/* the run's graph is the one for every size at the inputs' sizes: the same
		 * tensors and ops, which an ONNX model imported at one size need not have */
		Diag di;
		g = ir_sym_instance(gsym, g, &di);
		if (!g) {
			cmd_print_diag(&di);
			arena_free(a);
			return EXIT_INPUT;
		}
	}
	HostTensor *in = xcalloc((size_t)g->ninputs + 1, sizeof *in);
	HostTensor *outs = xcalloc((size_t)g->noutputs + 1, sizeof *outs);
	/* the bounds of f32 matmuls: tf32 wins where both are given, as in compile */
	int mode = tf32 ? INTERP_TF32 : x3 ? INTERP_3XTF32 : INTERP_F32;
	/* the interpreter writing outputs also writes their error bounds */
	HostTensor *bounds = vt == &interp_backend && outputs
			     ? xcalloc((size_t)g->noutputs + 1, sizeof *bounds) : NULL;
	int status = run_precheck(g, vt, inputs, outputs, check, bounds != NULL);
	Diag d;
	if (status != EXIT_OK) {
		/* printed */
	} else if ((inputs && run_load_inputs(g, inputs, in)) ||
		   run_random_inputs(g, (uint64_t)seed, in)) {
		status = EXIT_INPUT;
	} else if (bounds || (vt == &interp_backend && cmd_precision_info())
		   ? reference_run(g, in, outs, bounds, mode, &d)
		   : backend_run(vt, g, gsym, in, tf32, x3, burn_exact, outs, &d)) {
		cmd_print_diag(&d);
		status = EXIT_FAIL;
	} else {
		print_summary(g, outs);
		if (outputs && write_outputs(g, outputs, outs, bounds))
			status = EXIT_FAIL;
		if (check) {
			int cs = check_outputs(g, in, outs, flat, tol[0], tol[1], mode);
			if (cs == EXIT_FAIL || status == EXIT_OK)
				status = cs;
		}
	}
	fflush(stdout);
	for (int i = 0; i < g->ninputs; i++)
		host_free(&in[i]);
	for (int i = 0; i < g->noutputs; i++) {
		host_free(&outs[i]);
		if (bounds)
			host_free(&bounds[i]);
	}
	free(in);
	free(outs);
	free(bounds);
	arena_free(a);
	return status;
}
