/* use_compiler.c: a program outside the tree that links the installed compiler and
 * runtime through pkg-config (`pkg-config --cflags --libs fusec fusecrt`) and uses
 * <fusec.h> and <fusecrt.h> alone: it compiles a YAML graph from a string (into
 * OUT/str) and from the file GRAPH (into OUT/file), prints what each result says,
 * runs the first on the host (fusec_run: the cpu backend and the interpreter),
 * compiles a graph with a typo and prints the structured error, explains one op,
 * then loads the file's plan with fusecrt_ and opens a session on it (against the
 * stand-in driver in tests/cli/t_install.sh). Exit status: 0, or the failing
 * call's code. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fusec.h>
#include <fusecrt.h>

static const char graph[] =
	"format: fusec-graph/1\n"
	"name: axpy\n"
	"inputs:\n"
	"  x: {dtype: f32, shape: [256]}\n"
	"  y: {dtype: f32, shape: [256]}\n"
	"ops:\n"
	"  - {op: mul_scalar, in: [x], scalar: 2.0, out: ax}\n"
	"  - {op: add, in: [ax, y], out: z}\n"
	"outputs: [z]\n";

/* line 5, column 16: `inn` */
static const char bad[] =
	"format: fusec-graph/1\n"
	"inputs:\n"
	"  x: {dtype: f32, shape: [4, 4]}\n"
	"ops:\n"
	"  - {op: relu, inn: [x], out: y}\n"
	"outputs: [y]\n";

static void show(const fusec_result *r)
{
	printf("compiled %s: %ld ops, %ld launches, %ld kernels, %.0f bytes moved\n",
	       fusec_result_name(r), fusec_result_ops(r), fusec_result_launches(r),
	       fusec_result_kernels(r), fusec_result_bytes_moved(r));
	for (int i = 0; i < fusec_result_nfiles(r); i++)
		printf("  file %s\n", fusec_result_file(r, i));
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: use_compiler GRAPH OUT\n");
		return 2;
	}
	char dir[4096];
	fusec_options o;
	fusec_options_init(&o);
	fusec_error e;
	printf("%s\n", fusec_version());

	snprintf(dir, sizeof dir, "%s/str", argv[2]);
	fusec_result *r = fusec_compile_bytes("axpy.yaml", graph, strlen(graph), &o, dir, &e);
	if (!r) {
		fprintf(stderr, "%s:%d:%d: %s\n", e.file, e.line, e.column, e.message);
		return e.code;
	}
	show(r);
	size_t len = 0;
	const char *plan = fusec_result_file_data(r, 0, &len);
	printf("plan in memory: %s\n", plan && len > 0 && plan[len - 1] == '\n' ? "yes" : "no");
	/* the graph on the host: the cpu backend's kernels, then the interpreter */
	float x[256], y[256], zc[256], zi[256];
	for (int i = 0; i < 256; i++) {
		x[i] = (float)i;
		y[i] = 1.0f;
	}
	const void *in[2] = {x, y};
	void *outc[1] = {zc}, *outi[1] = {zi};
	const char *dt = NULL;
	int rank = 0;
	int64_t dims[8] = {0};
	size_t bytes = 0;
	const char *zn = fusec_result_output(r, 0, &dt, &rank, dims, &bytes);
	if (fusec_run(r, FUSEC_RUN_CPU, in, outc, &e) || fusec_run(r, FUSEC_RUN_INTERP, in, outi, &e)) {
		fprintf(stderr, "%s:%d:%d: %s\n", e.file, e.line, e.column, e.message);
		return e.code;
	}
	printf("host run: %d inputs, output %s %s[%lld] of %zu bytes, %s[5] = %g, cpu = interp: %s\n",
	       fusec_result_ninputs(r), zn, dt, (long long)dims[0], bytes, zn, zc[5],
	       memcmp(zc, zi, sizeof zc) ? "no" : "yes");
	fusec_result_free(r);

	snprintf(dir, sizeof dir, "%s/file", argv[2]);
	r = fusec_compile_file(argv[1], &o, dir, &e);
	if (!r) {
		fprintf(stderr, "%s:%d:%d: %s\n", e.file, e.line, e.column, e.message);
		return e.code;
	}
	show(r);
	fusec_result_free(r);

	r = fusec_compile_bytes("typo.yaml", bad, strlen(bad), &o, NULL, &e);
	printf("bad graph: %s, code %d, %s:%d:%d: %s\n", r ? "compiled" : "refused", e.code,
	       e.file, e.line, e.column, e.message);
	if (r)
		return 1;
	o.precision = "bf16";
	r = fusec_compile_bytes("axpy.yaml", graph, strlen(graph), &o, NULL, &e);
	plan = r ? fusec_result_file_data(r, 0, &len) : NULL;
	printf("bf16: %ld ops, plan says bf16: %s\n", r ? fusec_result_ops(r) : -1L,
	       plan && strstr(plan, "\"precision\":\"bf16\"") ? "yes" : "no");
	fusec_result_free(r);
	o.precision = NULL;
	o.arch = "sm_100";
	r = fusec_compile_bytes("axpy.yaml", graph, strlen(graph), &o, NULL, &e);
	printf("bad arch: code %d: %.40s\n", e.code, e.message);
	o.arch = NULL;

	char *text = fusec_explain(argv[1], &o, "0", 0, &e);
	if (!text)
		return e.code;
	printf("explain: %.*s\n", (int)strcspn(text, "\n"), text);
	fusec_free(text);

	fusecrt_error re;
	fusecrt_plan *p = fusecrt_plan_load(dir, &re);
	fusecrt_session *s = p ? fusecrt_session_open(p, 0, &re) : NULL;
	if (!s) {
		fprintf(stderr, "%s: %s\n", re.file, re.message);
		fusecrt_plan_free(p);
		return re.status;
	}
	printf("plan loaded: arch %s, %d inputs, %d outputs\n", fusecrt_session_arch(s),
	       fusecrt_plan_ninputs(p), fusecrt_plan_noutputs(p));
	fusecrt_session_close(s);
	fusecrt_plan_free(p);
	return 0;
}
