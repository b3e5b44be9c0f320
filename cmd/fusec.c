/* fusec.c: the driver. Dispatches to a subcommand and owns the shared pieces of
 * command-line handling: error printing, graph loading, exit codes. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>
#include <llvm-c/Core.h>

#include "../codegen/plan.h"
#include "../host/host.h"
#include "../lib/pipeline.h"
#include "../onnx/onnx.h"
#include "cmd.h"

const char *cmd_prog = "fusec";
bool cmd_diag_json;

/* --diagnostics json: each error one JSON line on stderr (file, line, col, code,
 * message), for build systems and editors. */
static void json_diag(const char *file, int line, int col, const char *code, const char *msg)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "severity", "error");
	if (file && *file)
		cJSON_AddStringToObject(o, "file", file);
	else
		cJSON_AddNullToObject(o, "file");
	cJSON_AddNumberToObject(o, "line", line);
	cJSON_AddNumberToObject(o, "col", col);
	cJSON_AddStringToObject(o, "code", code);
	cJSON_AddStringToObject(o, "message", msg);
	char *text = cJSON_PrintUnformatted(o);
	fprintf(stderr, "%s\n", text);
	cJSON_free(text);
	cJSON_Delete(o);
}

static const char usage_text[] =
	"usage: fusec COMMAND [OPTIONS] ...\n"
	"\n"
	"An ahead-of-time fusion compiler for tensor-operation graphs.\n"
	"\n"
	"commands:\n"
	"  compile GRAPH [-o DIR]   search fusions and write DIR/NAME.plan.json and .ptx\n"
	"  normalize GRAPH          print the relative form of every segment\n"
	"  explain GRAPH [--op I]   show why each op was or was not fused\n"
	"  run GRAPH --backend B    execute a graph: interp, cpu (JIT) or cuda\n"
	"  bench GRAPH|DIR          time a graph or compiled plan on the GPU\n"
	"  ops [--json]             list every op: arity, attributes, dtypes, fusers\n"
	"  import GRAPH [-o OUT]    write GRAPH (e.g. an ONNX model) as fusec-graph/1\n"
	"\n"
	"GRAPH is a fusec-graph/1 file (.json, .yaml, .yml), an ONNX model (.onnx;\n"
	"docs/onnx.md) or - for stdin. --input-shape NAME=1x3x224x224 fixes the shape\n"
	"of an input whose dims the model leaves symbolic or the graph names; without\n"
	"it, compile writes one plan for every size of them, in the ranges of\n"
	"--dims NAME=LO..HI,... (a graph file's own `dims:` otherwise).\n"
	"compile, explain, run, bench and normalize take --precision bf16|f16 (an f32\n"
	"graph computed in bf16 or f16; --keep-f32 LIST keeps op kinds, op names or\n"
	"ops[N] in f32; docs/precision.md), --layout nhwc (convolutions and pools\n"
	"channels last; docs/design.md) and --attention keep|fuse (each attention left\n"
	"as matmul, softmax, matmul, or made one op; by default one op where the flash\n"
	"kernel runs it, f16/bf16: docs/graph-format.md).\n"
	"Every command takes the resource caps on the graphs it reads:\n"
	"  --max-ops N (default 10000000), --max-tensors N (20000000),\n"
	"  --max-elements N (elements of all tensors together; default no cap)\n"
	"and --max-errors N: errors to report per graph file (default 20).\n"
	"--diagnostics json (any command, or FUSEC_DIAGNOSTICS=json) writes errors as\n"
	"JSON lines on stderr: file, line, col, code, message.\n"
	"`fusec COMMAND --help` describes each command.\n"
	"\n"
	"exit status: 0 success, 1 invalid input, 2 usage error, 3 code generation\n"
	"or runtime failure.\n";

void cmd_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (cmd_diag_json) {
		char msg[1200];
		vsnprintf(msg, sizeof msg, fmt, ap);
		json_diag(NULL, 0, 0, "error", msg);
	} else {
		fprintf(stderr, "%s: error: ", cmd_prog);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
	va_end(ap);
}

void cmd_usage_error(const char *sub, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (cmd_diag_json) {
		char msg[1200];
		vsnprintf(msg, sizeof msg, fmt, ap);
		json_diag(NULL, 0, 0, "usage", msg);
	} else {
		fprintf(stderr, "%s %s: ", cmd_prog, sub);
		vfprintf(stderr, fmt, ap);
		fprintf(stderr, "\nTry '%s %s --help'.\n", cmd_prog, sub);
	}
	va_end(ap);
}

void cmd_print_diag_code(const Diag *d, const char *code)
{
	if (cmd_diag_json) {
		json_diag(d->file, d->line, d->col, code, d->msg);
		return;
	}
	cmd_print_diag(d);
}

void cmd_print_diag(const Diag *d)
{
	if (cmd_diag_json) {
		json_diag(d->file, d->line, d->col, "error", d->msg);
		return;
	}
	char line[1200];
	diag_format(d, line, sizeof line);
	/* a message that names no file still says who speaks */
	fprintf(stderr, "%s%s\n", d->file[0] ? "" : "fusec: ", line);
}

/* --precision bf16|f16 and --keep-f32 LIST, taken out of argv by main for the
 * commands that read a graph and applied as it is loaded (passes/precision.c). */
static PrecisionOptions precision = {DT_F32, NULL};
static const char *precision_name;   /* "bf16", or NULL */
static PrecisionInfo precision_info; /* of the last graph loaded */
/* --layout nchw|nhwc: convs and pools channels last or not, before the precision
 * (passes/layout.c); NULL: where every conv runs on tensor cores (--allow-tf32 seen
 * among the command's options counts). */
static const char *layout_name;
static bool tf32_seen, x3_off, burn_seen;
/* --arch's value among the command's options (NULL: the default, sm_90a), and
 * whether the command compiles (compile, explain, run, bench): f32 weights go
 * K-major for the 3xTF32 tiles only where they can run (cmd_x3) */
static const char *arch_seen;
static bool compiling;
static LayoutInfo layout_info;       /* of the last graph loaded */
/* --attention fuse|keep (passes/attention.c), first of the graph rewrites; by
 * default the chains the flash kernel runs (ATTENTION_AUTO) */
static const char *attention_name;
static AttentionInfo attention_info; /* of the last graph loaded */
static SiblingInfo sibling_info;     /* of the last graph loaded (passes/siblings.c) */
static int kmajor_made;              /* its matmuls reading a weight K-major (kmajor.c) */

bool cmd_x3(void)
{
	return compiling && !x3_off;
}

/* Whether this command's f32 weights go K-major for the 3xTF32 tiles, and its f32
 * convs channels last for them (the library asks the same of its options) */
static bool x3_here(void)
{
	return pl_x3_weights(cmd_x3(), tf32_seen, arch_seen);
}

int cmd_kmajor_made(void)
{
	return kmajor_made;
}

const SiblingInfo *cmd_sibling_info(void)
{
	return &sibling_info;
}

const char *cmd_attention_name(void)
{
	return attention_name;
}

const AttentionInfo *cmd_attention_info(void)
{
	return &attention_info;
}

const char *cmd_layout_name(void)
{
	return layout_name;
}

const LayoutInfo *cmd_layout_info(void)
{
	return layout_info.nwindow ? &layout_info : NULL;
}

const char *cmd_precision_name(void)
{
	return precision_name;
}

const char *cmd_precision_keep(void)
{
	return precision.keep;
}

const PrecisionInfo *cmd_precision_info(void)
{
	return precision_name && precision_info.shadow ? &precision_info : NULL;
}

/* The loaded graph converted when --precision was given (the pipeline's convert
 * step); NULL (printed) on error. */
static Graph *apply_precision(Graph *g)
{
	LayoutOptions lo = {!layout_name ? LAYOUT_MODE_AUTO : !strcmp(layout_name, "nhwc") ?
			    LAYOUT_MODE_NHWC : LAYOUT_MODE_KEEP,
			    tf32_seen || precision_name || x3_here()};
	if (g) {
		/* --burn-exact: burn's three kernels, unless --attention fuse says */
		bool keep = attention_name ? !strcmp(attention_name, "keep") : burn_seen;
		pl_simplify(g, burn_seen, &sibling_info);
		/* the default: the chains the flash kernel runs (f16/bf16, or f32 that
		 * --precision converts) */
		AttentionMode am = keep ? ATTENTION_KEEP : attention_name ? ATTENTION_FUSE :
				   precision_name ? ATTENTION_AUTO_HALF :
				   tf32_seen ? ATTENTION_AUTO_TF32 : ATTENTION_AUTO;
		pl_attention(g, am, &attention_info);
		pl_layout(g, &lo, &layout_info);
	}
	Diag d;
	/* a graph read for every size: the rewrites' ops get their expressions */
	if (g && g->sym && ir_sym_refresh(g, &d)) {
		cmd_print_diag_code(&d, "invalid-input");
		return NULL;
	}
	if (!g)
		return g;
	if (precision_name && pl_convert(g, &precision, &precision_info, &d)) {
		cmd_print_diag_code(&d, "invalid-input");
		return NULL;
	}
	/* the weights K-major, once their dtype is known */
	pl_kmajor(g, burn_seen, x3_here(), &kmajor_made);
	if ((precision_name || kmajor_made) && g->sym && ir_sym_refresh(g, &d)) {
		cmd_print_diag_code(&d, "invalid-input");
		return NULL;
	}
	if (precision_name && !precision_info.nlow && !precision_info.nkept &&
	    !precision_info.npromoted && !cmd_diag_json)
		fprintf(stderr, "%s: warning: --precision %s: '%s' computes nothing in f32; "
			"nothing was converted\n", cmd_prog, precision_name, g->file);
	return g;
}

/* --input-shape NAME=DxD..., taken out of argv by main for every command. */
static OnnxInputShape input_shapes[64];
static int ninput_shapes;
/* --dims NAME=LO..HI,...: the ranges of the named dims of a plan for every size */
static IrDimRange dim_ranges[2 * IR_SYM_MAX];
static int ndim_ranges;
static Arena *shape_arena;

bool cmd_is_onnx(const char *path)
{
	return pl_is_onnx(path);
}

/* --max-errors N: how many errors to report per graph file (at most PL_MAX_ERRORS). */
static int64_t max_errors = 20;

/* The graph through the pipeline's first step, its errors printed: text is the
 * file's bytes when the caller read them already (the result cache hashes the very
 * bytes it compiles), NULL to read path; lookup (or NULL) the shapes of a run's
 * input data. */
static Graph *load_graph(Arena *a, const char *path, const char *text, size_t len,
			 const IrShapeLookup *lookup, bool shapes)
{
	PlSource src = {path, text, len, shapes ? input_shapes : NULL, shapes ? ninput_shapes : 0,
			max_errors < PL_MAX_ERRORS ? (int)max_errors : PL_MAX_ERRORS, lookup};
	Diag *all = xmalloc(sizeof *all * ((size_t)src.max_errors + 1));
	int nd;
	Graph *g = pl_load(a, &src, all, &nd);
	for (int i = 0; i < nd; i++)
		cmd_print_diag_code(&all[i], "invalid-input");
	free(all);
	return g;
}

Graph *cmd_load_graph_compile(Arena *a, const char *path, const char *text, size_t len)
{
	/* named dims that --input-shape leaves unbound: a plan for every size */
	IrShapeLookup every = {NULL, NULL, true, dim_ranges, ndim_ranges};
	return apply_precision(load_graph(a, path, text, len, &every, true));
}

bool cmd_graph_cacheable(const char *path)
{
	return strcmp(path, "-") && !ninput_shapes && !ndim_ranges && !cmd_is_onnx(path);
}

int cmd_refuse_input_shapes(const char *path)
{
	Diag d;
	if (precision_name || layout_name || attention_name) {
		diag_set(&d, path, 0, 0, "--precision, --keep-f32, --layout and --attention apply "
			 "to a graph or a model; a compiled plan was compiled with its own");
		cmd_print_diag_code(&d, "invalid-input");
		return 1;
	}
	if (!ndim_ranges)
		return 0;
	diag_set(&d, path, 0, 0, "--dims applies to a graph or a model; a compiled plan has "
		 "its ranges");
	cmd_print_diag_code(&d, "invalid-input");
	return 1;
}

int cmd_input_shapes(const IrInputShape **s)
{
	*s = input_shapes;
	return ninput_shapes;
}

Graph *cmd_load_graph(Arena *a, const char *path)
{
	return apply_precision(load_graph(a, path, NULL, 0, NULL, true));
}

Graph *cmd_load_graph_data(Arena *a, const char *path, const IrShapeLookup *lookup)
{
	/* read for every size (run --dynamic): --input-shape gives the run's sizes */
	return apply_precision(load_graph(a, path, NULL, 0, lookup, !lookup || !lookup->symbolic));
}

Graph *cmd_load_graph_every(Arena *a, const char *path)
{
	IrShapeLookup every = {NULL, NULL, true, dim_ranges, ndim_ranges};
	return cmd_load_graph_data(a, path, &every);
}

int cmd_parse_arches(const char *sub, const char *list, char (*arch)[CMD_ARCH_LEN], int max,
		     int *n)
{
	Diag d;
	int rc = pl_parse_arches(list, arch, max, n, &d);
	if (rc == EXIT_USAGE)
		cmd_usage_error(sub, "%s", d.msg);
	else if (rc != EXIT_OK)
		cmd_error("%s", d.msg);
	return rc;
}

long cmd_parse_count(const char *sub, const char *opt, const char *val)
{
	char *end;
	errno = 0;
	long v = strtol(val, &end, 10);
	if (errno || end == val || *end || v < 0 || v > 1000000000) {
		cmd_usage_error(sub, "option '%s' needs a non-negative integer, got '%s'", opt, val);
		return -1;
	}
	return v;
}

/* The options main takes out of argv for every command (take_limits,
 * take_diagnostics, take_input_shapes): candidates of every "did you mean". */
static const char *const driver_options[] = {
	"max-ops", "max-tensors", "max-elements", "max-errors", "diagnostics", "input-shape",
	"dims", "precision", "keep-f32",
};

int cmd_bad_option(const char *sub, const struct option *longopts, const char *shortopts,
		   char **argv, int optind_now)
{
	const char *arg = argv[optind_now - 1];
	/* --flag=VALUE for an option that takes none */
	size_t eq = strcspn(arg, "=");
	for (const struct option *o = longopts; optopt && arg[eq] && !strncmp(arg, "--", 2) &&
	     o->name; o++)
		if (o->has_arg == no_argument && strlen(o->name) == eq - 2 &&
		    !strncmp(arg + 2, o->name, eq - 2)) {
			cmd_usage_error(sub, "option '--%s' takes no value", o->name);
			return EXIT_USAGE;
		}
	/* a known option without its value: getopt leaves its val in optopt */
	if (optopt) {
		for (const struct option *o = longopts; o->name; o++)
			if (o->val == optopt && o->has_arg == required_argument &&
			    !strncmp(arg, "--", 2) && !strncmp(arg + 2, o->name, strlen(o->name))) {
				cmd_usage_error(sub, "option '--%s' needs a value", o->name);
				return EXIT_USAGE;
			}
		const char *p = optopt != ':' ? strchr(shortopts, optopt) : NULL;
		if (p && p[1] == ':') {
			cmd_usage_error(sub, "option '-%c' needs a value", optopt);
			return EXIT_USAGE;
		}
		if (!p) {
			cmd_usage_error(sub, "unknown option '-%c'", optopt);
			return EXIT_USAGE;
		}
	}
	if (strncmp(arg, "--", 2) || !arg[2]) {
		cmd_usage_error(sub, "unknown option '%s'", arg);
		return EXIT_USAGE;
	}
	/* --name or --name=value: the name alone is compared */
	char name[64];
	snprintf(name, sizeof name, "%.*s", (int)strcspn(arg + 2, "="), arg + 2);
	int n = 0;
	for (const struct option *o = longopts; o->name; o++)
		n++;
	const char **cand = xmalloc(sizeof *cand * (size_t)(n + COUNTOF(driver_options)));
	for (int i = 0; i < n; i++)
		cand[i] = longopts[i].name;
	for (size_t i = 0; i < COUNTOF(driver_options); i++)
		cand[n + i] = driver_options[i];
	const char *near = closest_word(name, cand, n + (int)COUNTOF(driver_options));
	free(cand);
	if (near)
		cmd_usage_error(sub, "unknown option '--%s'; did you mean '--%s'?", name, near);
	else
		cmd_usage_error(sub, "unknown option '--%s'", name);
	return EXIT_USAGE;
}

static const struct {
	const char *name;
	int (*fn)(int, char **);
} commands[] = {
	{"compile", cmd_compile},
	{"normalize", cmd_normalize},
	{"explain", cmd_explain},
	{"run", cmd_run},
	{"bench", cmd_bench},
	{"ops", cmd_ops},
	{"import", cmd_import},
};

/* Take --diagnostics FORMAT (or --diagnostics=FORMAT, or FUSEC_DIAGNOSTICS) out of
 * argv wherever it stands. Returns -1 on a bad format. */
static int take_diagnostics(int *argc, char **argv)
{
	const char *fmt = getenv("FUSEC_DIAGNOSTICS");
	int w = 1;
	for (int r = 1; r < *argc; r++) {
		if (!strcmp(argv[r], "--diagnostics") && r + 1 < *argc)
			fmt = argv[++r];
		else if (!strncmp(argv[r], "--diagnostics=", 14))
			fmt = argv[r] + 14;
		else
			argv[w++] = argv[r];
	}
	*argc = w;
	argv[w] = NULL;
	if (!fmt || !*fmt || !strcmp(fmt, "text"))
		return 0;
	if (strcmp(fmt, "json")) {
		fprintf(stderr, "%s: --diagnostics: unknown format '%s' (text, json)\n", cmd_prog, fmt);
		return -1;
	}
	cmd_diag_json = true;
	return 0;
}

/* "batch=1..64,seq=1..512" into dim_ranges: 0, or -1 with msg filled. */
static int parse_dim_ranges(const char *spec, char *msg, size_t size)
{
	for (const char *p = spec;;) {
		size_t len = strcspn(p, ",");
		const char *eq = memchr(p, '=', len);
		long long lo, hi;
		int used = -1;
		char item[200];
		snprintf(item, sizeof item, "%.*s", (int)(len < 150 ? len : 150), p);
		char *at = strchr(item, '=');
		if (!eq || eq == p || !at || sscanf(at + 1, "%lld..%lld%n", &lo, &hi, &used) != 2 ||
		    used != (int)strlen(at + 1) || lo < 1 || hi < lo || hi > IR_DIM_TOP) {
			snprintf(msg, size, "expected NAME=LO..HI with 1 <= LO <= HI <= 2^40, got "
				 "'%.100s'", item);
			return -1;
		}
		if (ndim_ranges == (int)(sizeof dim_ranges / sizeof dim_ranges[0])) {
			snprintf(msg, size, "more than %d ranges",
				 (int)(sizeof dim_ranges / sizeof dim_ranges[0]));
			return -1;
		}
		*at = 0;
		for (int i = 0; i < ndim_ranges; i++)
			if (!strcmp(dim_ranges[i].name, item)) {
				snprintf(msg, size, "'%.100s' is given twice", item);
				return -1;
			}
		dim_ranges[ndim_ranges++] = (IrDimRange){arena_strdup(shape_arena, item), lo, hi};
		if (!p[len])
			return 0;
		p += len + 1;
	}
}

/* Remove every --input-shape SPEC (or --input-shape=SPEC) and --dims SPEC from
 * argv. */
static int take_input_shapes(const char *sub, int *argc, char **argv)
{
	int k = 1;
	shape_arena = arena_new();
	for (int i = 1; i < *argc; i++) {
		const char *spec = NULL;
		if (!strcmp(argv[i], "--"))  {
			while (i < *argc)
				argv[k++] = argv[i++];
			break;
		}
		if (!strcmp(argv[i], "--input-shape")) {
			if (i + 1 >= *argc) {
				cmd_usage_error(sub, "option '--input-shape' needs NAME=DxD...");
				return EXIT_USAGE;
			}
			spec = argv[++i];
		} else if (!strncmp(argv[i], "--input-shape=", 14)) {
			spec = argv[i] + 14;
		} else if (!strcmp(argv[i], "--dims") || !strncmp(argv[i], "--dims=", 7)) {
			const char *r = argv[i][6] ? argv[i] + 7 : i + 1 < *argc ? argv[++i] : NULL;
			char msg[200];
			if (!r) {
				cmd_usage_error(sub, "option '--dims' needs NAME=LO..HI,...");
				return EXIT_USAGE;
			}
			if (parse_dim_ranges(r, msg, sizeof msg)) {
				cmd_usage_error(sub, "--dims: %s", msg);
				return EXIT_USAGE;
			}
			continue;
		} else {
			argv[k++] = argv[i];
			continue;
		}
		char msg[200];
		if (ninput_shapes == (int)(sizeof input_shapes / sizeof input_shapes[0])) {
			cmd_usage_error(sub, "too many --input-shape options");
			return EXIT_USAGE;
		}
		if (ir_parse_shape(shape_arena, spec, &input_shapes[ninput_shapes], msg,
				     sizeof msg)) {
			cmd_usage_error(sub, "--input-shape: %s", msg);
			return EXIT_USAGE;
		}
		ninput_shapes++;
	}
	argv[k] = NULL;
	*argc = k;
	return 0;
}

/* Take --precision bf16|f16 and --keep-f32 LIST (or --opt=VALUE) out of argv. */
static int take_precision(const char *sub, int *argc, char **argv)
{
	static const char *const names[] = {"--precision", "--keep-f32", "--layout",
					    "--attention"};
	int k = 1;
	compiling = !strcmp(sub, "compile") || !strcmp(sub, "explain") || !strcmp(sub, "run") ||
		    !strcmp(sub, "bench");
	for (int i = 1; i < *argc; i++) {
		if (!strcmp(argv[i], "--")) {
			while (i < *argc)
				argv[k++] = argv[i++];
			break;
		}
		int which = -1;
		const char *val = NULL;
		for (int n = 0; n < 4 && which < 0; n++) {
			size_t len = strlen(names[n]);
			if (!strncmp(argv[i], names[n], len) && (!argv[i][len] || argv[i][len] == '=')) {
				which = n;
				if (argv[i][len] == '=')
					val = argv[i] + len + 1;
				else if (i + 1 < *argc)
					val = argv[++i];
			}
		}
		if (which < 0) {
			tf32_seen = tf32_seen || !strcmp(argv[i], "--allow-tf32");
			x3_off = x3_off || !strcmp(argv[i], "--no-3xtf32");
			if (!strcmp(argv[i], "--arch") && i + 1 < *argc)
				arch_seen = argv[i + 1];
			else if (!strncmp(argv[i], "--arch=", 7))
				arch_seen = argv[i] + 7;
			burn_seen = burn_seen || !strcmp(argv[i], "--burn-exact");
			argv[k++] = argv[i];
			continue;
		}
		if (!val) {
			cmd_usage_error(sub, "option '%s' needs a value", names[which]);
			return EXIT_USAGE;
		}
		if (which == 1) {
			precision.keep = val;
			continue;
		}
		if (which == 3) {
			if (strcmp(val, "fuse") && strcmp(val, "keep")) {
				cmd_usage_error(sub, "--attention: unknown mode '%s' (fuse or keep)",
						val);
				return EXIT_USAGE;
			}
			attention_name = val;
			continue;
		}
		if (which == 2) {
			if (strcmp(val, "nchw") && strcmp(val, "nhwc")) {
				cmd_usage_error(sub, "--layout: unknown layout '%s' (nchw or nhwc)", val);
				return EXIT_USAGE;
			}
			layout_name = val;
			continue;
		}
		if (pass_precision_parse(val, &precision.to)) {
			cmd_usage_error(sub, "--precision: unknown precision '%s' (bf16 or f16)", val);
			return EXIT_USAGE;
		}
		precision_name = val;
	}
	argv[k] = NULL;
	*argc = k;
	if (precision.keep && !precision_name) {
		cmd_usage_error(sub, "--keep-f32 applies with --precision bf16|f16");
		return EXIT_USAGE;
	}
	if (layout_name && (!strcmp(sub, "ops") || !strcmp(sub, "import"))) {
		cmd_usage_error(sub, "--layout applies to compile, explain, run, bench and "
				"normalize");
		return EXIT_USAGE;
	}
	if (attention_name && (!strcmp(sub, "ops") || !strcmp(sub, "import"))) {
		cmd_usage_error(sub, "--attention applies to compile, explain, run, bench and "
				"normalize");
		return EXIT_USAGE;
	}
	/* import writes the graph as the model says: its attentions as written */
	if (!strcmp(sub, "import"))
		attention_name = "keep";
	if (precision_name && (!strcmp(sub, "ops") || !strcmp(sub, "import"))) {
		cmd_usage_error(sub, "--precision applies to compile, explain, run, bench and "
				"normalize");
		return EXIT_USAGE;
	}
	return 0;
}

/* Take the resource caps (--max-ops N, --max-tensors N, --max-elements N, or
 * --opt=N) out of argv, wherever they stand, into ir_limits, and --max-errors N.
 * Returns the new argc, or -1 after a usage error. */
static int take_limits(int argc, char **argv)
{
	static const struct { const char *name; int64_t *v; } caps[] = {
		{"--max-ops", &ir_limits.max_ops},
		{"--max-tensors", &ir_limits.max_tensors},
		{"--max-elements", &ir_limits.max_elements},
		{"--max-errors", &max_errors},
	};
	int out = 1;
	for (int i = 1; i < argc; i++) {
		size_t k = 0, n = 0;
		for (; k < COUNTOF(caps); k++) {
			n = strlen(caps[k].name);
			if (!strncmp(argv[i], caps[k].name, n) && (argv[i][n] == 0 || argv[i][n] == '='))
				break;
		}
		if (k == COUNTOF(caps)) {
			argv[out++] = argv[i];
			continue;
		}
		const char *val = argv[i][n] == '=' ? argv[i] + n + 1 : i + 1 < argc ? argv[++i] : "";
		char *end;
		errno = 0;
		long long v = strtoll(val, &end, 10);
		if (errno || end == val || *end || v < 1) {
			fprintf(stderr, "%s: option '%s' needs a positive integer, got '%s'\n",
				cmd_prog, caps[k].name, val);
			return -1;
		}
		*caps[k].v = v;
	}
	argv[out] = NULL;
	return out;
}

static int run_command(int argc, char **argv)
{
	opterr = 0;   /* each subcommand words its own usage errors */
	if ((argc = take_limits(argc, argv)) < 0 || take_diagnostics(&argc, argv) < 0)
		return EXIT_USAGE;
	if (argc < 2) {
		fputs(usage_text, stderr);
		return EXIT_USAGE;
	}
	const char *c = argv[1];
	if (!strcmp(c, "--help") || !strcmp(c, "-h") || !strcmp(c, "help")) {
		fputs(usage_text, stdout);
		return EXIT_OK;
	}
	if (!strcmp(c, "--version") || !strcmp(c, "-V")) {
		unsigned major, minor, patch;
		LLVMGetVersion(&major, &minor, &patch);
		printf("fusec %s\nLLVM %u.%u.%u (NVPTX)\ndefault arch %s\nplan format %s\n",
		       FUSEC_VERSION, major, minor, patch, CG_DEFAULT_ARCH, CG_PLAN_FORMAT);
		return EXIT_OK;
	}
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (!strcmp(c, commands[i].name)) {
			int rc = take_input_shapes(c, &argc, argv);
			if (!rc)
				rc = take_precision(c, &argc, argv);
			if (!rc && ninput_shapes && !strcmp(c, "ops")) {
				cmd_usage_error(c, "--input-shape applies to commands that read a "
						"model");
				rc = EXIT_USAGE;
			}
			if (!rc)
				rc = commands[i].fn(argc - 1, argv + 1);
			arena_free(shape_arena);
			return rc;
		}
	/* a short error, with the nearest command when one is close */
	const char *names[COUNTOF(commands) + 1];
	for (size_t i = 0; i < COUNTOF(commands); i++)
		names[i] = commands[i].name;
	names[COUNTOF(commands)] = "help";
	const char *near = closest_word(c, names, (int)COUNTOF(names));
	char msg[300];
	if (near)
		snprintf(msg, sizeof msg, "unknown command '%.200s'; did you mean '%s'?", c, near);
	else
		snprintf(msg, sizeof msg, "unknown command '%.200s' (commands: compile, normalize, "
			 "explain, run, bench, ops, import)", c);
	if (cmd_diag_json)
		json_diag(NULL, 0, 0, "usage", msg);
	else
		fprintf(stderr, "%s: %s\nTry '%s --help'.\n", cmd_prog, msg, cmd_prog);
	return EXIT_USAGE;
}

int main(int argc, char **argv)
{
	/* SIGINT, SIGTERM, SIGHUP take back what a command has made so far (support.h) */
	undo_install();
	/* A write to stdout that failed (a full disk, a closed pipe) fails the command. */
	return finish_stdout(cmd_prog, run_command(argc, argv));
}
