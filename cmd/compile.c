/* compile.c: `fusec compile GRAPH -o DIR`: load the graph, run the fusion search,
 * generate the kernels, write the outputs (SPEC §5-§7).
 *
 * Writes DIR/NAME.ptx and DIR/NAME.plan.json and, with --emit, DIR/NAME.ll (the
 * optimized LLVM IR), DIR/NAME.relative.txt (the relative ops of every plan) and
 * DIR/NAME.dot (the ops coloured by kernel). Every file is
 * first written to a temporary file in DIR and renamed when all are complete, so a
 * failed compile leaves nothing behind. Logs (--log / FUSEC_LOG) go to stderr. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../codegen/math.h"
#include "../codegen/plan.h"
#include "cmd.h"

static const char compile_usage[] =
	"usage: fusec compile GRAPH [-o DIR] [--arch sm_XX] [--max-blocks N]\n"
	"                     [--max-explorations N] [--max-bindings N] [--log LEVEL]\n"
	"                     [--emit LIST] [--libdevice PATH]\n"
	"\n"
	"Search fusions for GRAPH, generate PTX, and write DIR/NAME.ptx and\n"
	"DIR/NAME.plan.json (DIR defaults to .).\n"
	"\n"
	"  -o DIR                 output folder, created if missing\n"
	"  --arch sm_XX           target architecture (default sm_90)\n"
	"  --max-blocks N         blocks per stream optimizer (default 5)\n"
	"  --max-explorations N   explorations per stream, then unfused (default unlimited)\n"
	"  --max-bindings N       buffers one fused kernel may bind (default 32)\n"
	"  --log LEVEL            off, basic, medium, full (also 0, 1); or FUSEC_LOG\n"
	"  --emit LIST            extra outputs, comma-separated: ll, relative, dot\n"
	"  --time                 print the time of each phase to stderr\n"
	"  --libdevice PATH       link libdevice bitcode for precise math; `auto` looks\n"
	"                         for a CUDA install (default: fusec's own math)\n";

typedef struct {
	char *tmp, *final;
	bool renamed;
} Output;

static int write_tmp(Output *o, const char *dir, const char *name, const char *ext,
		     const char *text, size_t len)
{
	o->final = malloc(strlen(dir) + strlen(name) + strlen(ext) + 3);
	sprintf(o->final, "%s/%s%s", dir, name, ext);
	o->tmp = malloc(strlen(dir) + 16);
	sprintf(o->tmp, "%s/.fusec-XXXXXX", dir);   /* short: the final name may be long */
	int fd = mkstemp(o->tmp);
	if (fd < 0) {
		cmd_error("cannot create a file in '%s': %s", dir, strerror(errno));
		free(o->tmp);
		o->tmp = NULL;
		return -1;
	}
	mode_t mask = umask(0);
	umask(mask);
	fchmod(fd, 0666 & ~mask);
	FILE *f = fdopen(fd, "w");
	size_t n = fwrite(text, 1, len, f);
	if (fclose(f) != 0 || n != len) {
		cmd_error("cannot write '%s': %s", o->tmp, strerror(errno));
		return -1;
	}
	return 0;
}

/* mkdir -p: create dir and any missing parents, remembering the folders it made
 * (innermost last) so that a failed compile can take them away again. */
typedef struct {
	char *made[IR_MAX_DEPTH];
	int n;
} MadeDirs;

static int make_dirs(const char *dir, MadeDirs *md)
{
	char *p = strdup(dir);
	int rc = 0;
	size_t len = strlen(p);
	for (size_t i = 1; rc == 0 && i <= len; i++) {
		if (p[i] != '/' && p[i] != 0)
			continue;
		char c = p[i];
		p[i] = 0;
		if (mkdir(p, 0777) == 0) {
			if (md->n < IR_MAX_DEPTH)
				md->made[md->n++] = strdup(p);
		} else if (errno != EEXIST) {
			rc = -1;
		}
		p[i] = c;
	}
	free(p);
	return rc;
}

static void remove_dirs(MadeDirs *md, bool remove)
{
	while (md->n > 0) {
		char *d = md->made[--md->n];
		if (remove)
			rmdir(d);
		free(d);
	}
}

static bool valid_arch(const char *s)
{
	if (strncmp(s, "sm_", 3) || !s[3])
		return false;
	for (const char *p = s + 3; *p; p++)
		if ((*p < '0' || *p > '9') && !(p[1] == 0 && p != s + 3 && (*p == 'a')))
			return false;
	return strlen(s) <= 8;
}

static void emit_relative(const Schedule *s, Buf *b)
{
	for (int i = 0; i < s->nplans; i++) {
		const Plan *p = s->plans[i];
		buf_printf(b, "plan #%d (%d op%s):", p->id, p->nops, p->nops == 1 ? "" : "s");
		for (int t = 0; t < p->ntriggers; t++)
			buf_printf(b, " %s", pass_trigger_name(p->triggers[t].kind));
		buf_putc(b, '\n');
		for (int k = 0; k < p->nops; k++) {
			buf_printf(b, "  %d  ", k);
			ir_rel_print(b, &p->ops[k]);
			buf_putc(b, '\n');
		}
		buf_puts(b, "  strategy: ");
		pass_strategy_print(b, p->strategy);
		buf_putc(b, '\n');
	}
}

/* A name inside a double-quoted DOT string. */
static void dot_escape(Buf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			buf_putc(b, '\\');
		buf_putc(b, *s);
	}
}

static void emit_dot(const Schedule *s, Buf *b)
{
	static const char *colors[] = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3",
				       "#fdb462", "#b3de69", "#fccde5", "#d9d9d9", "#bc80bd"};
	const Graph *g = s->g;
	int *kernel_of = malloc(sizeof(int) * (size_t)(g->nops ? g->nops : 1));
	for (int i = 0; i < g->nops; i++)
		kernel_of[i] = -1;
	int nl = 0;
	for (int i = 0; i < s->nsteps; i++)
		for (int k = 0; k < s->steps[i].nlaunch; k++, nl++)
			for (int j = 0; j < s->steps[i].launch[k].nops; j++)
				kernel_of[s->steps[i].launch[k].ops[j]] = nl;
	buf_puts(b, "digraph \"");
	dot_escape(b, g->name);
	buf_puts(b, "\" {\n  node [shape=box, style=filled, fontname=\"monospace\"];\n");
	for (int i = 0; i < g->nops; i++) {
		char k[96];
		if (g->ops[i].kind == OP_SYNC)
			continue;
		buf_printf(b, "  op%d [label=\"%d %s\", fillcolor=\"%s\"];\n", i, i,
			   ir_op_display(g, &g->ops[i], k, sizeof k),
			   kernel_of[i] < 0 ? "white" : colors[kernel_of[i] % 10]);
	}
	for (int i = 0; i < g->nops; i++)
		for (int j = 0; j < g->ops[i].nin; j++) {
			int p = g->tensors[g->ops[i].in[j]].producer;
			if (p < 0)
				continue;
			buf_printf(b, "  op%d -> op%d [label=\"", p, i);
			dot_escape(b, g->tensors[g->ops[i].in[j]].name);
			buf_puts(b, "\"];\n");
		}
	buf_puts(b, "}\n");
	free(kernel_of);
}

int cmd_compile(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'},
		{"arch", required_argument, NULL, 'a'},
		{"max-blocks", required_argument, NULL, 'b'},
		{"max-explorations", required_argument, NULL, 'x'},
		{"max-bindings", required_argument, NULL, 'n'},
		{"log", required_argument, NULL, 'l'},
		{"emit", required_argument, NULL, 'e'},
		{"libdevice", required_argument, NULL, 'd'},
		{"time", no_argument, NULL, 't'},
		{0, 0, 0, 0},
	};
	SearchOptions so;
	pass_default_options(&so);
	const char *dir = ".", *arch = "sm_90", *libdevice = NULL, *log = getenv("FUSEC_LOG");
	bool emit_rel = false, emit_dotf = false, emit_ll = false, timing = false;
	int c;
	long v;
	optind = 1;
	while ((c = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			fputs(compile_usage, stdout);
			return EXIT_OK;
		case 'o':
			if (!*optarg) {
				cmd_usage_error("compile", "option '-o' needs a folder name");
				return EXIT_USAGE;
			}
			dir = optarg;
			break;
		case 'a':
			if (!valid_arch(optarg) || !cg_arch_known(optarg)) {
				cmd_usage_error("compile", "unknown --arch '%s' (LLVM 19 knows sm_20 to "
						"sm_90a, e.g. sm_80, sm_90)", optarg);
				return EXIT_USAGE;
			}
			arch = optarg;
			break;
		case 'b':
			if ((v = cmd_parse_count("compile", "--max-blocks", optarg)) < 0)
				return EXIT_USAGE;
			if (v < 1) {
				cmd_usage_error("compile", "option '--max-blocks' needs at least 1");
				return EXIT_USAGE;
			}
			so.max_blocks = (int)v;
			break;
		case 'x':
			if ((v = cmd_parse_count("compile", "--max-explorations", optarg)) < 0)
				return EXIT_USAGE;
			so.max_explorations = (int)v;
			break;
		case 'n':
			if ((v = cmd_parse_count("compile", "--max-bindings", optarg)) < 0)
				return EXIT_USAGE;
			so.max_bindings = (int)v;
			break;
		case 'l':
			log = optarg;
			break;
		case 'e': {
			char *list = strdup(optarg), *save = NULL;
			for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
				if (!strcmp(t, "relative"))
					emit_rel = true;
				else if (!strcmp(t, "dot"))
					emit_dotf = true;
				else if (!strcmp(t, "ll"))
					emit_ll = true;
				else if (strcmp(t, "ptx") && strcmp(t, "plan")) {
					cmd_usage_error("compile", "unknown --emit item '%s' (ll, relative, dot)", t);
					free(list);
					return EXIT_USAGE;
				}
			}
			free(list);
			break;
		}
		case 'd':
			if (strcmp(optarg, "auto") && access(optarg, R_OK) != 0) {
				cmd_usage_error("compile", "cannot read --libdevice '%s': %s", optarg,
						strerror(errno));
				return EXIT_USAGE;
			}
			libdevice = optarg;
			break;
		case 't':
			timing = true;
			break;
		default:
			cmd_usage_error("compile", "unknown option or missing value '%s'", argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		cmd_usage_error("compile", "expected one GRAPH argument");
		return EXIT_USAGE;
	}
	if (log && *log && pass_log_parse(log, &so.log_level) < 0) {
		cmd_usage_error("compile", "bad log level '%s' (off, basic, medium, full)", log);
		return EXIT_USAGE;
	}
	so.log = stderr;

	Arena *a = arena_new();
	double t0 = clock_seconds();
	Graph *g = cmd_load_graph(a, argv[optind]);
	if (!g) {
		arena_free(a);
		return EXIT_INPUT;
	}
	if (libdevice && !strcmp(libdevice, "auto")) {
		libdevice = cg_math_find_libdevice();
		if (!libdevice) {
			cmd_error("--libdevice auto: no CUDA install with libdevice found");
			arena_free(a);
			return EXIT_FAIL;
		}
	}
	double t1 = clock_seconds();
	Schedule *s = pass_search(g, &so);
	double t2 = clock_seconds();

	int status = EXIT_OK;
	Diag d;
	char ptxname[512];
	snprintf(ptxname, sizeof ptxname, "%s.ptx", g->name);
	char wname[512];
	snprintf(wname, sizeof wname, "%s.weights.bin", g->name);
	bool has_weights = false;
	for (int i = 0; i < g->ntensors; i++)
		has_weights = has_weights || g->tensors[i].data;
	PlanFileInfo info = {arch, ptxname, libdevice, has_weights ? wname : NULL};
	CgOutputs co;
	if (cg_compile_schedule(s, &info, emit_ll, &co, &d)) {
		cmd_print_diag(&d);
		status = EXIT_FAIL;
	}

	MadeDirs made = {0};
	if (status == EXIT_OK && make_dirs(dir, &made) != 0) {
		cmd_error("cannot create '%s': %s", dir, strerror(errno));
		status = EXIT_FAIL;
	}
	Output out[6] = {{0}};
	int nout = 0;
	if (status == EXIT_OK &&
	    write_tmp(&out[nout++], dir, g->name, ".plan.json", co.plan, strlen(co.plan)) < 0)
		status = EXIT_FAIL;
	if (status == EXIT_OK &&
	    write_tmp(&out[nout++], dir, g->name, ".ptx", co.ptx.data, co.ptx.len) < 0)
		status = EXIT_FAIL;
	if (status == EXIT_OK && emit_ll &&
	    write_tmp(&out[nout++], dir, g->name, ".ll", co.ll.data, co.ll.len) < 0)
		status = EXIT_FAIL;
	if (status == EXIT_OK && has_weights) {
		Buf w = {0};
		cg_weights_write(g, &w);
		if (write_tmp(&out[nout++], dir, g->name, ".weights.bin", w.data, w.len) < 0)
			status = EXIT_FAIL;
		buf_free(&w);
	}
	double co_t[4] = {co.t_kernels, co.t_optimize, co.t_emit, co.t_plan};
	int co_nk = co.nkernels;
	cg_outputs_free(&co);
	if (status == EXIT_OK && emit_rel) {
		Buf b = {0};
		emit_relative(s, &b);
		if (write_tmp(&out[nout++], dir, g->name, ".relative.txt", b.data ? b.data : "", b.len) < 0)
			status = EXIT_FAIL;
		buf_free(&b);
	}
	if (status == EXIT_OK && emit_dotf) {
		Buf b = {0};
		emit_dot(s, &b);
		if (write_tmp(&out[nout++], dir, g->name, ".dot", b.data, b.len) < 0)
			status = EXIT_FAIL;
		buf_free(&b);
	}
	for (int i = 0; status == EXIT_OK && i < nout; i++) {
		struct stat sb;
		if (lstat(out[i].final, &sb) == 0 && S_ISDIR(sb.st_mode)) {
			cmd_error("cannot write '%s': it is a folder", out[i].final);
			status = EXIT_FAIL;
		}
	}
	/* the plan (out[0]) goes last: it names the others, and runtimes open it */
	for (int k = 1; status == EXIT_OK && k <= nout; k++) {
		Output *o = &out[k % nout];
		if (rename(o->tmp, o->final) != 0) {
			cmd_error("cannot write '%s': %s", o->final, strerror(errno));
			status = EXIT_FAIL;
		}
		o->renamed = status == EXIT_OK;
	}
	for (int i = 0; i < nout; i++) {
		if (status != EXIT_OK && (out[i].renamed || out[i].tmp))
			unlink(out[i].renamed ? out[i].final : out[i].tmp);
		free(out[i].tmp);
		free(out[i].final);
	}
	remove_dirs(&made, status != EXIT_OK);
	if (timing && status == EXIT_OK) {
		double t3 = clock_seconds(), llvm = co_t[0] + co_t[1] + co_t[2];
		fprintf(stderr, "time: read %.3fs, search %.3fs, kernels %.3fs, optimize %.3fs, "
			"emit %.3fs, plan %.3fs, write %.3fs; total %.3fs for %d ops (%.0f ops/s)\n"
			"time: LLVM %.3fs for %d distinct kernels (%.1f ms per kernel)\n",
			t1 - t0, t2 - t1, co_t[0], co_t[1], co_t[2], co_t[3], t3 - t2 - llvm - co_t[3],
			t3 - t0, g->nops, g->nops / (t3 - t0), llvm, co_nk,
			co_nk ? llvm * 1e3 / co_nk : 0.0);
	}
	pass_free_schedule(s);
	arena_free(a);
	return status;
}
