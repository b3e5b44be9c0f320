/* conformance.c: ONNX's backend node tests (Debian's libonnx-testdata) on fusec.
 *
 * usage: onnx_conformance [-v] [-q] [--strict] [--backend cpu|interp] DIR... |
 *        --list FILE ROOT
 *
 * Each DIR is one test (model.onnx and test_data_set_N/{input,output}_K.pb), or a
 * folder of tests (data/node). Per test: import the model and run every data set on
 * the backend (default cpu: the generated kernels, JIT-compiled); each output must
 * match the expected one within atol 1e-4 + rtol 1e-3 (NaN matches NaN). Results
 * (docs/onnx.md, "Counting"):
 *   passed       every output of every data set matches;
 *   failed       a wrong answer, a crash, or any other error;
 *   limit        every op has a mapping, but the importer stops with a "not
 *                supported" message (a documented limit of a claimed op): counted
 *                against the claimed ops, like a failure;
 *   unsupported  outside what fusec claims: a node whose op has no mapping
 *                (onnx/ops.c) or is of another domain, or a graph input or output
 *                that is a sequence, map, optional or string tensor.
 * The pass rate over the claimed ops is passed / (passed + failed + limit). Each
 * test runs in a child process, so a crash fails one test only. Prints one line per
 * op, then the totals and that rate, and with -v every test that did not pass with
 * its reason. Exit 1 if any failed (with --strict, if any did not pass). */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../cmd/run.h"
#include "../../host/interp.h"
#include "../../onnx/onnx.h"
#include "onnx.pb-c.h"

/* R_LIMIT: every op of the test has a mapping but the importer stops at a documented
 * limit ("not supported yet"): counted against the claimed ops, like a failure, but
 * listed apart from wrong answers and crashes (docs/onnx.md, "Counting"). */
enum { R_PASS, R_FAIL, R_LIMIT, R_UNSUP, R_NKINDS };
static const char *const kind_name[R_NKINDS] = {"pass", "FAIL", "limit", "unsupported"};

typedef struct {
	char name[128];
	char op[64];
	int result;
	char reason[400];
} Result;

static const char *backend = "cpu";

static void *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *buf = xmalloc(cap);
	for (;;) {
		if (n == cap)
			buf = xrealloc(buf, cap *= 2);
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (!got)
			break;
	}
	fclose(f);
	*len = n;
	return buf;
}

/* A TensorProto file into t. ONNX's test data stores bfloat16 values as UINT16 (numpy
 * has no bfloat16): with `want` DT_BF16 those bits are read as the bf16 they are. */
static int read_pb(const char *path, int want, HostTensor *t, char *name, size_t nsize,
		   char *msg, size_t size)
{
	size_t len;
	void *buf = slurp(path, &len);
	if (!buf) {
		snprintf(msg, size, "cannot read %s", path);
		return -1;
	}
	Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, len, buf);
	free(buf);
	if (!tp) {
		snprintf(msg, size, "%s is not a TensorProto (sequence or optional data?)", path);
		return -1;
	}
	snprintf(name, nsize, "%.200s", tp->name ? tp->name : "");
	if (want == DT_BF16 && tp->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__UINT16)
		tp->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16;
	int rc = onnx_tensor(tp, NULL, t, msg, size);
	onnx__tensor_proto__free_unpacked(tp, NULL);
	return rc;
}

static bool string_or_nontensor(const Onnx__ValueInfoProto *vi)
{
	const Onnx__TypeProto *tp = vi->type;
	if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
		return true;
	return tp->tensor_type->elem_type == ONNX__TENSOR_PROTO__DATA_TYPE__STRING;
}

/* The main op of a model: the op of its first node, or "multi-op" models tagged
 * with the test name's suffix. `outside` gets why the test is outside what fusec
 * claims ("" when it is inside): a node whose op has no mapping (or is of another
 * domain), or a graph input or output that is a sequence, map, optional or string
 * tensor (fusec has none of those types). */
static void model_op(const char *model, char *op, size_t size, char *outside, size_t osize)
{
	size_t len;
	void *buf = slurp(model, &len);
	snprintf(op, size, "?");
	outside[0] = 0;
	if (!buf)
		return;
	Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, buf);
	free(buf);
	if (!mp)
		return;
	if (mp->graph && mp->graph->n_node == 1)
		snprintf(op, size, "%s", mp->graph->node[0]->op_type);
	else if (mp->graph && mp->graph->n_node > 1 && strstr(model, "_expanded/"))
		snprintf(op, size, "(expanded)");
	else if (mp->graph && mp->graph->n_node > 1)
		snprintf(op, size, "(model)");
	for (size_t i = 0; mp->graph && i < mp->graph->n_node && !outside[0]; i++) {
		const Onnx__NodeProto *n = mp->graph->node[i];
		bool other = n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx");
		if (other || !onnx_op_mapped(n->op_type))
			snprintf(outside, osize, "op %.40s%s%.60s has no mapping", n->op_type,
				 other ? " of domain " : "", other ? n->domain : "");
	}
	for (size_t i = 0; mp->graph && i < mp->graph->n_input && !outside[0]; i++)
		if (string_or_nontensor(mp->graph->input[i]))
			snprintf(outside, osize, "input '%.60s' is a sequence, map, optional or "
				 "string tensor", mp->graph->input[i]->name);
	for (size_t i = 0; mp->graph && i < mp->graph->n_output && !outside[0]; i++)
		if (string_or_nontensor(mp->graph->output[i]))
			snprintf(outside, osize, "output '%.60s' is a sequence, map, optional or "
				 "string tensor", mp->graph->output[i]->name);
	onnx__model_proto__free_unpacked(mp, NULL);
}

static bool unsupported_msg(const char *msg)
{
	return strstr(msg, "not supported") || strstr(msg, "no mapping") ||
	       strstr(msg, "is not a tensor");
}

static const RunBackend *pick_backend(void);

static int run_set(const Graph *g, const char *set, char *msg, size_t size)
{
	HostTensor *in = xcalloc((size_t)g->ninputs + 1, sizeof *in);
	HostTensor *outs = xcalloc((size_t)g->noutputs + 1, sizeof *outs);
	int rc = 0, real = 0;
	for (int i = 0; i < g->ninputs && !rc; i++) {
		const Tensor *t = &g->tensors[g->inputs[i]];
		Diag d;
		if (t->data) {
			rc = host_alloc(&in[i], t->dtype, t->rank, t->dim, &d);
			if (!rc)
				memcpy(in[i].data, t->data,
				       (size_t)in[i].n * (size_t)ir_dtype_size(t->dtype));
			continue;
		}
		char path[1400], name[256];
		snprintf(path, sizeof path, "%s/input_%d.pb", set, real++);
		rc = read_pb(path, t->dtype, &in[i], name, sizeof name, msg, size);
		if (!rc && in[i].dtype == t->dtype && in[i].rank == 0 && t->rank == 0)
			continue;
		while (!rc && name[0] && strcmp(name, t->name)) {
			/* an input given as a constant: its data file is skipped */
			host_free(&in[i]);
			snprintf(path, sizeof path, "%s/input_%d.pb", set, real++);
			rc = read_pb(path, t->dtype, &in[i], name, sizeof name, msg, size);
		}
		if (!rc && interp_check_input(g, i, &in[i], &d)) {
			snprintf(msg, size, "%.300s", d.msg);
			rc = -1;
		}
	}
	RunCtx c = {.g = g, .inputs = in};
	const RunBackend *vt = pick_backend();
	Diag d;
	if (!rc) {
		rc = vt->prepare(&c, &d);
		if (!rc)
			rc = vt->run(&c, &d);
		if (!rc)
			rc = vt->outputs(&c, outs, &d);
		vt->release(&c);
		if (rc)
			snprintf(msg, size, "run: %.300s", d.msg);
	}
	for (int i = 0; i < g->noutputs && !rc; i++) {
		char path[1400], name[256];
		HostTensor want;
		snprintf(path, sizeof path, "%s/output_%d.pb", set, i);
		if (read_pb(path, g->tensors[g->outputs[i]].dtype, &want, name, sizeof name, msg, size)) {
			rc = -1;
			break;
		}
		HostCompare cmp;
		host_compare(&outs[i], &want, 1e-4, 1e-3, &cmp);
		if (!cmp.ok) {
			char a[128], b[128];
			snprintf(msg, size, "output %d: got %s want %s, max_abs %.3g max_rel %.3g, "
				 "%lld bad (first at %lld: %.6g vs %.6g)", i,
				 host_shape_text(outs[i].dtype, outs[i].rank, outs[i].dim, a, sizeof a),
				 host_shape_text(want.dtype, want.rank, want.dim, b, sizeof b),
				 cmp.max_abs, cmp.max_rel, (long long)cmp.nbad,
				 (long long)cmp.first_bad,
				 cmp.first_bad >= 0 && cmp.first_bad < outs[i].n
					 ? host_get(&outs[i], cmp.first_bad) : 0.0,
				 cmp.first_bad >= 0 && cmp.first_bad < want.n
					 ? host_get(&want, cmp.first_bad) : 0.0);
			rc = -1;
		}
		host_free(&want);
	}
	for (int i = 0; i < g->ninputs; i++)
		host_free(&in[i]);
	for (int i = 0; i < g->noutputs; i++)
		host_free(&outs[i]);
	free(in);
	free(outs);
	return rc;
}

static int ip_prepare(RunCtx *c, Diag *d)
{
	c->state = xcalloc((size_t)c->g->noutputs + 1, sizeof(HostTensor));
	return 0;
}

static int ip_run(RunCtx *c, Diag *d)
{
	return interp_run(c->g, c->inputs, c->state, d);
}

static int ip_outputs(RunCtx *c, HostTensor *outs, Diag *d)
{
	memcpy(outs, c->state, sizeof *outs * (size_t)c->g->noutputs);
	memset(c->state, 0, sizeof *outs * (size_t)c->g->noutputs);
	return 0;
}

static void ip_release(RunCtx *c)
{
	HostTensor *r = c->state;
	for (int i = 0; r && i < c->g->noutputs; i++)
		host_free(&r[i]);
	free(r);
}

static const RunBackend interp_vt = {ip_prepare, ip_run, ip_outputs, ip_release};

static const RunBackend *pick_backend(void)
{
	return strcmp(backend, "interp") ? &run_cpu_backend : &interp_vt;
}

enum { MAXIN = 64 };

static bool set0_empty;    /* data set 0 holds an empty tensor */

/* The inputs of data set 0 by name, for a retry: some tests feed shapes, axes or
 * pads as inputs, which fusec needs at import time, or leave dims symbolic, or (the
 * CastLike tests) feed an input of another shape than the model declares. Integer
 * and one-element inputs are fixed as values; with `vectors`, float vectors of up
 * to 16 values too (Resize's scales and roi). UINT16 data is read as bfloat16
 * (fusec has no uint16; a model with a uint16 input stops before any retry). */
static int set0_inputs(const char *dir, Arena *a, OnnxInputShape *shapes,
		       OnnxInputValue *values, HostTensor *store, int *nvalues, bool vectors)
{
	int n = 0;
	*nvalues = 0;
	for (; n < MAXIN; n++) {
		char path[1200], name[256], msg[400];
		struct stat st;
		snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, n);
		if (stat(path, &st))
			break;
		if (read_pb(path, DT_BF16, &store[n], name, sizeof name, msg, sizeof msg)) {
			if (strstr(msg, "empty"))
				set0_empty = true;
			break;
		}
		shapes[n].name = arena_strdup(a, name);
		shapes[n].rank = store[n].rank;
		memcpy(shapes[n].dim, store[n].dim, sizeof shapes[n].dim);
		shapes[n].from = NULL;
		if (ir_dtype_is_int(store[n].dtype) || store[n].n == 1 ||
		    (vectors && store[n].rank == 1 && store[n].n <= 16)) {
			values[*nvalues].name = shapes[n].name;
			values[(*nvalues)++].value = &store[n];
		}
	}
	return n;
}

static int retried;

/* The test itself, in the child: writes "R reason" to fd. */
static void child(const char *dir, int fd)
{
	char model[1100], msg[400] = "";
	snprintf(model, sizeof model, "%s/model.onnx", dir);
	Arena *a = arena_new();
	Diag d;
	int result = R_PASS;
	Graph *g = onnx_read_file(a, model, NULL, &d);
	OnnxInputShape shapes[MAXIN];
	OnnxInputValue values[MAXIN];
	HostTensor store[MAXIN];
	if (!g && (strstr(d.msg, "is not static") || strstr(d.msg, "computed at run time") ||
		   strstr(d.msg, "a computed one") || strstr(d.msg, "computed ones"))) {
		/* Resize's scales and roi: float vectors */
		bool vec = strstr(d.msg, "scales is computed") || strstr(d.msg, "roi is computed");
		int nv, ns = set0_inputs(dir, a, shapes, values, store, &nv, vec);
		bool computed = !strstr(d.msg, "is not static");
		OnnxOptions o = {shapes, ns, values, computed ? nv : 0, NULL};
		g = onnx_read_file(a, model, &o, &d);
		if (!g && !computed && (strstr(d.msg, "computed") ||
					strstr(d.msg, "is not static") || strstr(d.msg, "empty"))) {
			o.nvalues = nv;
			g = onnx_read_file(a, model, &o, &d);
		}
		retried = 1;
	}
	if (!g && set0_empty) {
		snprintf(msg, sizeof msg, "the test data holds empty tensors, which are not "
			 "supported");
		result = R_UNSUP;
	} else if (!g) {
		snprintf(msg, sizeof msg, "%.300s", d.msg);
		result = unsupported_msg(d.msg) ? R_UNSUP : R_FAIL;
	}
	for (int s = 0; g && result == R_PASS; s++) {
		char set[1200];
		struct stat st;
		snprintf(set, sizeof set, "%s/test_data_set_%d", dir, s);
		if (stat(set, &st))
			break;
		if (!run_set(g, set, msg, sizeof msg))
			continue;
		if (!retried && !s && strstr(msg, " needs ") && strstr(msg, "input '")) {
			/* data set 0 contradicts a declared input shape: take its
			 * scalar and integer inputs as values, once */
			int nv, ns = set0_inputs(dir, a, shapes, values, store, &nv, false);
			OnnxOptions o = {shapes, 0, values, nv, NULL};
			(void)ns;
			retried = 1;
			Graph *g2 = onnx_read_file(a, model, &o, &d);
			if (g2) {
				g = g2;
				s--;
				msg[0] = 0;
				continue;
			}
		}
		result = unsupported_msg(msg) && !strstr(msg, "output ") ? R_UNSUP : R_FAIL;
	}
	char line[512];
	int n = snprintf(line, sizeof line, "%d %s%.300s", result,
			 retried && result == R_PASS ? "(inputs fixed from data set 0) " : "", msg);
	if (write(fd, line, (size_t)n) < 0)
		_exit(2);
	arena_free(a);
	_exit(0);
}

static void run_test(const char *dir, Result *r)
{
	const char *base = strrchr(dir, '/');
	snprintf(r->name, sizeof r->name, "%s", base ? base + 1 : dir);
	char model[1100], outside[200];
	snprintf(model, sizeof model, "%s/model.onnx", dir);
	model_op(model, r->op, sizeof r->op, outside, sizeof outside);
	int p[2];
	if (pipe(p)) {
		r->result = R_FAIL;
		snprintf(r->reason, sizeof r->reason, "pipe: %s", strerror(errno));
		return;
	}
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		/* 60 s a test; FUSEC_TEST_ALARM=N for slow runs (make valgrind) */
		const char *al = getenv("FUSEC_TEST_ALARM");
		alarm(al && atoi(al) > 0 ? (unsigned)atoi(al) : 60);
		child(dir, p[1]);
	}
	close(p[1]);
	char buf[512];
	ssize_t n = 0, got;
	while ((got = read(p[0], buf + n, sizeof buf - 1 - (size_t)n)) > 0)
		n += got;
	close(p[0]);
	buf[n > 0 ? n : 0] = 0;
	int status = 0;
	waitpid(pid, &status, 0);
	if (n > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		r->result = buf[0] - '0';
		snprintf(r->reason, sizeof r->reason, "%.390s", buf[1] ? buf + 2 : "");
		/* a test outside the claim is unsupported whatever stopped it; one inside
		 * that stops at a "not supported" limit counts against the claim */
		if (outside[0] && r->result != R_PASS) {
			r->result = R_UNSUP;
			snprintf(r->reason, sizeof r->reason, "%.190s (%.190s)", outside,
				 buf[1] ? buf + 2 : "");
		} else if (r->result == R_UNSUP) {
			r->result = R_LIMIT;
		}
	} else {
		r->result = R_FAIL;
		snprintf(r->reason, sizeof r->reason, "the test process %s %d",
			 WIFSIGNALED(status) ? "died of signal" : "exited with",
			 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_op(const void *a, const void *b)
{
	const Result *x = a, *y = b;
	int c = strcmp(x->op, y->op);
	return c ? c : strcmp(x->name, y->name);
}

/* The tests under dir: dir itself when it has a model, else its subfolders. */
static void collect(const char *dir, char ***list, int *n, int *cap)
{
	char model[1100];
	struct stat st;
	snprintf(model, sizeof model, "%s/model.onnx", dir);
	if (!stat(model, &st)) {
		if (*n == *cap)
			*list = xrealloc(*list, sizeof **list * (size_t)(*cap = *cap ? 2 * *cap : 64));
		(*list)[(*n)++] = strdup(dir);
		return;
	}
	DIR *d = opendir(dir);
	if (!d)
		return;
	char **sub = NULL;
	int ns = 0, cs = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (ns == cs)
			sub = xrealloc(sub, sizeof *sub * (size_t)(cs = cs ? 2 * cs : 64));
		size_t len = strlen(dir) + strlen(e->d_name) + 2;
		sub[ns] = xmalloc(len);
		snprintf(sub[ns++], len, "%s/%s", dir, e->d_name);
	}
	closedir(d);
	qsort(sub, (size_t)ns, sizeof *sub, cmp_str);
	for (int i = 0; i < ns; i++) {
		snprintf(model, sizeof model, "%s/model.onnx", sub[i]);
		if (!stat(model, &st)) {
			if (*n == *cap)
				*list = xrealloc(*list,
						 sizeof **list * (size_t)(*cap = *cap ? 2 * *cap : 64));
			(*list)[(*n)++] = sub[i];
		} else {
			free(sub[i]);
		}
	}
	free(sub);
}

int main(int argc, char **argv)
{
	bool verbose = false, quiet = false, strict = false;
	char **tests = NULL;
	int n = 0, cap = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-v"))
			verbose = true;
		else if (!strcmp(argv[i], "-q"))
			quiet = true;
		else if (!strcmp(argv[i], "--strict"))
			strict = true;
		else if (!strcmp(argv[i], "--backend") && i + 1 < argc)
			backend = argv[++i];
		else if (!strcmp(argv[i], "--list") && i + 2 < argc) {
			/* --list FILE ROOT: test names, one a line, under ROOT */
			FILE *f = fopen(argv[i + 1], "r");
			if (!f) {
				fprintf(stderr, "cannot open %s\n", argv[i + 1]);
				return 2;
			}
			char line[256];
			while (fgets(line, sizeof line, f)) {
				line[strcspn(line, "\n")] = 0;
				if (!line[0] || line[0] == '#')
					continue;
				char path[1024];
				snprintf(path, sizeof path, "%s/%s", argv[i + 2], line);
				collect(path, &tests, &n, &cap);
			}
			fclose(f);
			i += 2;
		} else
			collect(argv[i], &tests, &n, &cap);
	}
	if (!n) {
		fprintf(stderr, "usage: onnx_conformance [-v] [-q] [--strict] [--backend cpu|interp] "
				"DIR... | --list FILE ROOT\n");
		return 2;
	}
	Result *res = xcalloc((size_t)n, sizeof *res);
	for (int i = 0; i < n; i++) {
		run_test(tests[i], &res[i]);
		free(tests[i]);
	}
	free(tests);
	qsort(res, (size_t)n, sizeof *res, cmp_op);
	int tot[R_NKINDS] = {0};
	if (!quiet)
		printf("%-28s %6s %6s %6s %11s\n", "op", "passed", "failed", "limit",
		       "unsupported");
	for (int i = 0; i < n;) {
		int c[R_NKINDS] = {0}, j = i;
		for (; j < n && !strcmp(res[j].op, res[i].op); j++)
			c[res[j].result]++;
		if (!quiet)
			printf("%-28s %6d %6d %6d %11d\n", res[i].op, c[R_PASS], c[R_FAIL],
			       c[R_LIMIT], c[R_UNSUP]);
		for (int k = 0; k < R_NKINDS; k++)
			tot[k] += c[k];
		i = j;
	}
	int claimed = tot[R_PASS] + tot[R_FAIL] + tot[R_LIMIT];
	printf("%d passed, %d failed, %d limit, %d unsupported; claimed: %d of %d pass (%.1f %%)\n",
	       tot[R_PASS], tot[R_FAIL], tot[R_LIMIT], tot[R_UNSUP], tot[R_PASS], claimed,
	       claimed ? 100.0 * tot[R_PASS] / claimed : 0.0);
	for (int i = 0; i < n; i++)
		if (res[i].result == R_FAIL || (verbose && res[i].result >= R_LIMIT))
			printf("%s %s: %s\n", kind_name[res[i].result], res[i].name, res[i].reason);
	free(res);
	return tot[R_FAIL] || (strict && tot[R_PASS] != n) ? 1 : 0;
}
