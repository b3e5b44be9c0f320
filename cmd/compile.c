/* compile.c: `fusec compile GRAPH -o DIR`: load the graph, run the fusion search,
 * generate the kernels, write the outputs (SPEC §5-§7). The steps are the compile
 * pipeline's (lib/pipeline.h: pl_compile, then pl_commit), shared with the library
 * and the other subcommands; this file adds the flags, the result cache, the
 * depfile, --emit's extra files, the progress line and the summary.
 *
 * Writes DIR/NAME.ptx and DIR/NAME.plan.json and, with --emit, DIR/NAME.ll (the
 * optimized LLVM IR), DIR/NAME.relative.txt (the relative ops of every plan) and
 * DIR/NAME.dot (the ops coloured by kernel). Every file, the depfile included, is
 * first written to a temporary file beside it and renamed when all are complete, so
 * a failed compile, or one ended by SIGINT or SIGTERM, leaves nothing behind. Logs
 * (--log / FUSEC_LOG) go to stderr. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <llvm-c/Core.h>

#include "../codegen/kcache.h"
#include "../codegen/math.h"
#include "../codegen/plan.h"
#include "../lib/pipeline.h"
#include "../onnx/onnx.h"
#include "cmd.h"
#include "result_cache.h"

static const char compile_usage[] =
	"usage: fusec compile GRAPH [-o DIR] [--arch sm_XX[,sm_YY...]] [--max-blocks N]\n"
	"                     [--max-explorations N] [--max-bindings N] [--log LEVEL]\n"
	"                     [--emit LIST] [--plan-style STYLE] [--libdevice PATH]\n"
	"                     [--cache-dir DIR | --no-cache | --no-result-cache]\n"
	"                     [--trust-cache-dir] [-j N] [--shape-buckets N]\n"
	"                     [--time] [--verify] [--allow-tf32] [--no-3xtf32]\n"
	"                     [--burn-exact]\n"
	"\n"
	"Search fusions for GRAPH, generate PTX, and write DIR/NAME.ptx and\n"
	"DIR/NAME.plan.json (DIR defaults to .). NAME is the graph's `name` key, or\n"
	"else the file name without its extension (tf1.json with name: transformer_1\n"
	"writes transformer_1.ptx). One line on stdout names the files written.\n"
	"\n"
	"  -o, --output DIR       output folder, created if missing\n"
	"  --arch sm_XX           target architecture, sm_70 or later (default sm_90a:\n"
	"                         Hopper, wgmma; sm_90 for PTX that later GPUs load too);\n"
	"                         a list (sm_80,sm_90a) writes one PTX per arch,\n"
	"                         DIR/NAME.sm_80.ptx ..., and fusec-run picks the best\n"
	"                         one for the device\n"
	"  --max-blocks N         blocks per stream optimizer (default 5)\n"
	"  --max-explorations N   explorations per stream, then unfused (default unlimited)\n"
	"  --max-bindings N       buffers one fused kernel may bind (default 32)\n"
	"  --log LEVEL            off, basic, medium, full (also 0, 1); or FUSEC_LOG\n"
	"  --log-format F         text (burn's lines) or json (JSON lines, docs/inspect.md);\n"
	"                         or FUSEC_LOG_FORMAT; json alone means --log full\n"
	"  --emit LIST            extra outputs, comma-separated: ll, relative, dot, svg\n"
	"                         (svg runs Graphviz's dot when it is installed)\n"
	"  --plan-style STYLE     compact (default) or pretty: the plan indented for\n"
	"                         people; both are the same JSON document\n"
	"  --cache-dir DIR        the cache (default $XDG_CACHE_HOME/fusec, or\n"
	"                         ~/.cache/fusec): PTX of kernels compiled before is\n"
	"                         reused instead of running LLVM again, and a compile\n"
	"                         done before copies its outputs (docs/kernel-cache.md)\n"
	"  --no-cache             neither read nor write the cache\n"
	"  --no-result-cache      use the cache for kernels only, not whole compiles\n"
	"  --trust-cache-dir      use the cache folder even when other users can write\n"
	"                         it (a shared cache; or FUSEC_TRUST_CACHE_DIR=1)\n"
	"  --shape-buckets N      a plan for every size of named dims: N ranges of\n"
	"                         sizes (1 to 4, default 3), each dim's range halved\n"
	"                         from the top for each, and each range's kernels and\n"
	"                         launches made at sizes in it; fusec-run takes the\n"
	"                         narrowest range that holds the inputs' sizes\n"
	"                         (docs/plan-format.md, \"Ranges of sizes\")\n"
	"  -j, --jobs N           LLVM threads (default: the CPUs, at most 8); the\n"
	"                         outputs are the same for every N\n"
	"  --time                 print the time of each phase to stderr\n"
	"  -q, --quiet            print neither the line naming the files written nor\n"
	"                         the summary on stderr (ops, launches, kernels, bytes\n"
	"                         moved, time)\n"
	"  -M, --depfile FILE     write a make rule: the outputs depend on GRAPH (and\n"
	"                         its .npy and ONNX external data files), published\n"
	"                         with the outputs; a FILE that is not a regular file\n"
	"                         (/dev/stdout, a pipe, a link) is written in place\n"
	"  --verify               check the schedule before generating code: every op\n"
	"                         runs once, launches read only what is written earlier\n"
	"  --allow-tf32           f32 matmuls run on tensor cores as tf32 (10-bit\n"
	"                         mantissa operands; sm_80 and later); the plan says so\n"
	"  --no-3xtf32            f32 matmuls stay on f32 FMA (SIMT tiles). By default\n"
	"                         on sm_90a those whose operands are read K-major (a\n"
	"                         model's weights are stored so) run on tensor cores as\n"
	"                         three tf32 products a step, summed in f32: as close to\n"
	"                         exact as f32 FMA or closer, but an infinite operand\n"
	"                         gives NaN (docs/tolerances.md, \"3xTF32\");\n"
	"                         --allow-3xtf32 says the default\n"
	"  --burn-exact           search with burn-fusion's rules where fusec deviates on\n"
	"                         purpose (docs/burn-fidelity.md), to compare with burn\n"
	"  --libdevice PATH       link libdevice bitcode for precise math; `auto` looks\n"
	"                         for a CUDA install (default: fusec's own math)\n"
	"  --precision bf16|f16   compute an f32 graph in bf16 or f16 (--keep-f32 LIST\n"
	"                         keeps op kinds, names or ops[N] in f32; the plan says\n"
	"                         so; docs/precision.md)\n"
	"  --layout nhwc          run convolutions and pools channels last (inputs and\n"
	"                         outputs as they are; docs/design.md, \"Channels last\")\n"
	"  --attention keep|fuse  keep: leave each attention as the graph writes it;\n"
	"                         fuse: every chain matmul, scale, bias or mask,\n"
	"                         softmax, matmul as one attention op; by default only\n"
	"                         the chains the flash kernel runs (f16/bf16, head dims\n"
	"                         up to 128); `explain` says which fused and why others\n"
	"                         did not\n";

/* ---- options ------------------------------------------------------------------ */

typedef struct {
	const char *graph, *dir;
	PlOptions pl;            /* what the pipeline reads: search, arches, codegen */
	const char *depfile;
	bool emit_relative, emit_dot, emit_svg, timing, quiet;
	bool verify;             /* --verify: accepted; every compile verifies */
	bool no_cache, no_result_cache;
	const char *cache_dir;   /* --cache-dir, or NULL */
	bool trust_cache;        /* --trust-cache-dir, FUSEC_TRUST_CACHE_DIR=1 */
} CompileOptions;

static int parse_emit(CompileOptions *o, const char *arg)
{
	char *list = strdup(arg), *save = NULL;
	int rc = EXIT_OK;
	for (char *t = strtok_r(list, ",", &save); t && rc == EXIT_OK; t = strtok_r(NULL, ",", &save)) {
		if (!strcmp(t, "relative"))
			o->emit_relative = true;
		else if (!strcmp(t, "dot"))
			o->emit_dot = true;
		else if (!strcmp(t, "svg"))
			o->emit_svg = true;
		else if (!strcmp(t, "ll"))
			o->pl.emit_ll = true;
		else if (strcmp(t, "ptx") && strcmp(t, "plan")) {
			cmd_usage_error("compile", "unknown --emit item '%s' (ll, relative, dot, svg)", t);
			rc = EXIT_USAGE;
		}
	}
	free(list);
	return rc;
}

/* Fill *o from argv. Returns EXIT_OK to go on, or the status to exit with (EXIT_OK
 * with o->graph NULL after --help). */
static int parse_options(int argc, char **argv, CompileOptions *o)
{
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'},
		{"output", required_argument, NULL, 'o'},
		{"arch", required_argument, NULL, 'a'},
		{"max-blocks", required_argument, NULL, 'b'},
		{"max-explorations", required_argument, NULL, 'x'},
		{"max-bindings", required_argument, NULL, 'n'},
		{"log", required_argument, NULL, 'l'},
		{"log-format", required_argument, NULL, 'L'},
		{"emit", required_argument, NULL, 'e'},
		{"libdevice", required_argument, NULL, 'd'},
		{"time", no_argument, NULL, 't'},
		{"verify", no_argument, NULL, 'v'},
		{"quiet", no_argument, NULL, 'q'},
		{"depfile", required_argument, NULL, 'M'},
		{"plan-style", required_argument, NULL, 'p'},
		{"cache-dir", required_argument, NULL, 'c'},
		{"no-cache", no_argument, NULL, 'C'},
		{"no-result-cache", no_argument, NULL, 'R'},
		{"trust-cache-dir", no_argument, NULL, 'T'},
		{"jobs", required_argument, NULL, 'j'},
		{"allow-tf32", no_argument, NULL, 'f'},
		{"allow-3xtf32", no_argument, NULL, 'X'},
		{"no-3xtf32", no_argument, NULL, 'Y'},
		{"burn-exact", no_argument, NULL, 'E'},
		{"shape-buckets", required_argument, NULL, 'B'},
		{0, 0, 0, 0},
	};
	memset(o, 0, sizeof *o);
	pl_default_options(&o->pl);
	o->pl.allow_3xtf32 = cmd_x3();
	o->dir = ".";
	const char *log = getenv("FUSEC_LOG");
	const char *log_format = getenv("FUSEC_LOG_FORMAT");
	int c;
	long v;
	optind = 1;
	while ((c = getopt_long(argc, argv, "ho:qM:j:", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			fputs(compile_usage, stdout);
			return EXIT_OK;
		case 'o':
			if (!*optarg) {
				cmd_usage_error("compile", "option '-o' needs a folder name");
				return EXIT_USAGE;
			}
			o->dir = optarg;
			break;
		case 'a': {
			int rc = cmd_parse_arches("compile", optarg, o->pl.arch, CG_MAX_TARGETS,
						  &o->pl.narch);
			if (rc != EXIT_OK)
				return rc;
			break;
		}
		case 'b':
			if ((v = cmd_parse_count("compile", "--max-blocks", optarg)) < 0)
				return EXIT_USAGE;
			if (v < 1) {
				cmd_usage_error("compile", "option '--max-blocks' needs at least 1");
				return EXIT_USAGE;
			}
			o->pl.search.max_blocks = (int)v;
			break;
		case 'x':
			if ((v = cmd_parse_count("compile", "--max-explorations", optarg)) < 0)
				return EXIT_USAGE;
			o->pl.search.max_explorations = (int)v;
			break;
		case 'n':
			if ((v = cmd_parse_count("compile", "--max-bindings", optarg)) < 0)
				return EXIT_USAGE;
			o->pl.search.max_bindings = (int)v;
			break;
		case 'l':
			log = optarg;
			break;
		case 'L':
			log_format = optarg;
			break;
		case 'e':
			if (parse_emit(o, optarg) != EXIT_OK)
				return EXIT_USAGE;
			if (o->emit_svg && !cmd_have_dot()) {
				cmd_usage_error("compile", "--emit svg needs Graphviz's `dot` on PATH "
						"(Debian: apt-get install graphviz); --emit dot writes "
						"the DOT text without it");
				return EXIT_USAGE;
			}
			break;
		case 'd': {
			struct stat sb;
			if (strcmp(optarg, "auto") && access(optarg, R_OK) != 0) {
				cmd_usage_error("compile", "cannot read --libdevice '%s': %s", optarg,
						strerror(errno));
				return EXIT_USAGE;
			}
			/* not a device or pipe: the kernel cache hashes it to its end */
			if (strcmp(optarg, "auto") && (stat(optarg, &sb) || !S_ISREG(sb.st_mode))) {
				cmd_usage_error("compile", "--libdevice '%s' is not a regular file",
						optarg);
				return EXIT_USAGE;
			}
			o->pl.libdevice = optarg;
			break;
		}
		case 't':
			o->timing = true;
			break;
		case 'v':
			o->verify = true;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'M':
			if (!*optarg) {
				cmd_usage_error("compile", "option '--depfile' needs a file name");
				return EXIT_USAGE;
			}
			o->depfile = optarg;
			break;
		case 'p':
			if (strcmp(optarg, "compact") && strcmp(optarg, "pretty")) {
				cmd_usage_error("compile", "unknown --plan-style '%s' (compact, pretty)",
						optarg);
				return EXIT_USAGE;
			}
			o->pl.pretty = !strcmp(optarg, "pretty");
			break;
		case 'c':
			if (!*optarg) {
				cmd_usage_error("compile", "option '--cache-dir' needs a folder name");
				return EXIT_USAGE;
			}
			o->cache_dir = optarg;
			break;
		case 'C':
			o->no_cache = true;
			break;
		case 'R':
			o->no_result_cache = true;
			break;
		case 'T':
			o->trust_cache = true;
			break;
		case 'B':
			if ((v = cmd_parse_count("compile", "--shape-buckets", optarg)) < 0)
				return EXIT_USAGE;
			if (v < 1 || v > CG_MAX_BUCKETS) {
				cmd_usage_error("compile", "option '--shape-buckets' needs 1 to %d",
						CG_MAX_BUCKETS);
				return EXIT_USAGE;
			}
			o->pl.buckets = (int)v;
			break;
		case 'j':
			if ((v = cmd_parse_count("compile", "--jobs", optarg)) < 0)
				return EXIT_USAGE;
			if (v < 1 || v > 256) {
				cmd_usage_error("compile", "option '--jobs' needs 1 to 256");
				return EXIT_USAGE;
			}
			o->pl.jobs = (int)v;
			break;
		case 'f':
			o->pl.allow_tf32 = true;
			break;
		case 'X':
			break;   /* the default (cmd_x3) */
		case 'Y':
			break;   /* taken by cmd_x3 */
		case 'E':
			o->pl.search.burn_exact = true;
			break;
		default:
			return cmd_bad_option("compile", longopts, "ho:qM:j:", argv, optind);
		}
	}
	if (argc - optind != 1) {
		cmd_usage_error("compile", "expected one GRAPH argument");
		return EXIT_USAGE;
	}
	if (log && *log && pass_log_parse(log, &o->pl.search.log_level) < 0) {
		cmd_usage_error("compile", "bad log level '%s' (off, basic, medium, full)", log);
		return EXIT_USAGE;
	}
	if (log_format && *log_format) {
		if (strcmp(log_format, "text") && strcmp(log_format, "json")) {
			cmd_usage_error("compile", "bad log format '%s' (text, json)", log_format);
			return EXIT_USAGE;
		}
		o->pl.search.log_json = !strcmp(log_format, "json");
		/* asking for JSON logs without a level asks for all of them */
		if (o->pl.search.log_json && !(log && *log))
			o->pl.search.log_level = LOG_FULL;
	}
	o->pl.search.log = stderr;
	o->graph = argv[optind];
	return EXIT_OK;
}

/* ---- writing the outputs -------------------------------------------------------- */

/* A path as make reads it in a rule (GNU make; the depfile's targets and
 * prerequisites, and a phony rule per input). ' ', '#' and ':' take a backslash,
 * and so do the backslashes right before one of them; '$' becomes "$$". make
 * expands the wildcards '*', '?' and '[' in file names as a glob does, so in a path
 * that has one, they and every backslash are escaped for the glob first: it then
 * finds the file itself (a file that does not exist yet keeps the escaped name,
 * which only matters before the first build). What make has no escape for is
 * refused with a message naming the path: a line break or another control
 * character (a tab), ';' (starts a recipe), '=' (a variable assignment), '%' (a
 * pattern rule), '|' (order-only prerequisites), a '\' at the end, a name ending in
 * "(...)" (an archive member), a leading '~' (a home folder). Returns -1 after the
 * message. */
static int make_path(Buf *b, const char *depfile, const char *p)
{
	const char *why = NULL;
	size_t n = strlen(p);
	for (const char *c = p; *c && !why; c++)
		why = *c == '\n' || *c == '\r' ? "a line break"
		    : (unsigned char)*c < 0x20 || *c == 0x7f ? "a control character"
		    : *c == ';' ? "';' (make reads a recipe after it)"
		    : *c == '=' ? "'=' (make reads a variable assignment)"
		    : *c == '%' ? "'%' (make reads a pattern rule)"
		    : *c == '|' ? "'|' (make reads order-only prerequisites)" : NULL;
	if (!why && n && p[n - 1] == '\\')
		why = "a '\\' at its end";
	if (!why && n && p[n - 1] == ')' && strchr(p, '('))
		why = "a name ending in parentheses (make reads an archive member)";
	if (!why && p[0] == '~')
		why = "a '~' at its start (make reads a home folder)";
	if (why) {
		Buf q = {0};   /* the path on one line */
		for (const char *c = p; *c; c++)
			if (*c == '\n')
				buf_puts(&q, "\\n");
			else if ((unsigned char)*c < 0x20 || *c == 0x7f)
				buf_printf(&q, "\\x%02x", (unsigned char)*c);
			else
				buf_putc(&q, *c);
		cmd_error("cannot write depfile '%s': the path '%s' has %s, which a make rule "
			  "cannot hold; rename it, or leave out --depfile", depfile, q.data, why);
		buf_free(&q);
		return -1;
	}
	Buf g = {0};   /* the path as the glob reads it */
	bool wild = strpbrk(p, "*?[") != NULL;
	for (const char *c = p; *c; c++) {
		if (wild && strchr("*?[\\", *c))
			buf_putc(&g, '\\');
		buf_putc(&g, *c);
	}
	static const char escaped[] = " #:";
	for (const char *c = g.data; *c; c++) {
		if (*c == '\\') {
			size_t run = strspn(c, "\\");
			bool before = c[run] && strchr(escaped, c[run]);
			for (size_t k = 0; k < run * (before ? 2 : 1); k++)
				buf_putc(b, '\\');
			c += run - 1;
			continue;
		}
		if (strchr(escaped, *c))
			buf_putc(b, '\\');
		if (*c == '$')
			buf_putc(b, '$');
		buf_putc(b, *c);
	}
	buf_free(&g);
	return 0;
}

/* -M FILE: "DIR/NAME.plan.json DIR/NAME.ptx ...: GRAPH", plus a phony rule for the
 * graph so a deleted input does not stop make, into b. -1 after a message. */
static int depfile_text(const CompileOptions *o, const char *name, const char *const *deps,
			int ndeps, const PlFile *files, int n, Buf *b)
{
	int bad = 0;
	for (int i = 0; i < n && !bad; i++) {
		char *path = malloc(strlen(o->dir) + strlen(name) + strlen(files[i].ext) + 2);
		sprintf(path, "%s/%s%s", o->dir, name, files[i].ext);
		if (i)
			buf_putc(b, ' ');
		bad |= make_path(b, o->depfile, path);
		free(path);
	}
	buf_puts(b, ":");
	/* the files the graph was read from; constants' data files join here, then an
	 * ONNX model's external data files */
	bool from_file = strcmp(o->graph, "-") != 0;
	Arena *xa = arena_new();
	const char **ext = NULL;
	int next = from_file && cmd_is_onnx(o->graph) ? onnx_external_files(xa, o->graph, &ext) : 0;
	int nin = (from_file ? 1 : 0) + ndeps + next;
	const char **in = malloc(sizeof *in * (size_t)(nin + 1));
	int k = 0;
	if (from_file)
		in[k++] = o->graph;
	for (int i = 0; i < ndeps; i++)
		in[k++] = deps[i];
	for (int i = 0; i < next; i++)
		in[k++] = ext[i];
	for (int i = 0; i < nin && !bad; i++) {
		buf_putc(b, ' ');
		bad |= make_path(b, o->depfile, in[i]);
	}
	buf_putc(b, '\n');
	/* a phony rule per input, so that deleting one does not stop make */
	for (int i = 0; i < nin && !bad; i++) {
		buf_putc(b, '\n');
		make_path(b, o->depfile, in[i]);
		buf_puts(b, ":\n");
	}
	free(in);
	arena_free(xa);
	return bad ? -1 : 0;
}

/* The files a graph read besides itself (constants' .npy files), in tensor order:
 * the depfile's prerequisites and the result cache's dependencies. */
static int graph_deps(const Graph *g, const char **deps)
{
	int n = 0;
	for (int t = 0; t < g->ntensors; t++)
		if (g->tensors[t].src && g->tensors[t].src->npy)
			deps[n++] = g->tensors[t].src->npy;
	return n;
}

/* pl_commit's errors, printed as they come. */
static void print_error(void *ctx, const char *msg)
{
	cmd_error("%s", msg);
}

/* Commit files and the depfile together, then print the line naming what was
 * written. */
static int publish(const CompileOptions *o, const char *name, const char *const *deps,
		   int ndeps, const PlFile *files, int n)
{
	Buf dep = {0};
	PlFile *all = malloc(sizeof *all * (size_t)(n + 1));
	memcpy(all, files, sizeof *all * (size_t)n);
	int status = EXIT_OK;
	if (o->depfile) {
		if (depfile_text(o, name, deps, ndeps, files, n, &dep) != 0)
			status = EXIT_FAIL;
		all[n] = (PlFile){"", dep.data, dep.len, NULL, o->depfile};
	}
	if (status == EXIT_OK)
		status = pl_commit(o->dir, name, all, n + (o->depfile != NULL), print_error, NULL)
			 ? EXIT_FAIL : EXIT_OK;
	free(all);
	buf_free(&dep);
	if (status == EXIT_OK && !o->quiet) {
		Buf line = {0};
		buf_puts(&line, "wrote");
		for (int i = 0; i < n; i++)
			buf_printf(&line, " %s/%s%s", o->dir, name, files[i].ext);
		if (o->depfile)
			buf_printf(&line, " %s", o->depfile);
		buf_putc(&line, '\n');
		if (fwrite(line.data, 1, line.len, stdout) != line.len || fflush(stdout) != 0) {
			cmd_error("cannot write to standard output: %s", strerror(errno));
			status = EXIT_FAIL;
		}
		buf_free(&line);
	}
	return status;
}

/* Store the outputs in the result cache. The weights file, written tensor by tensor
 * when published, is put in memory here; a graph whose weights pass
 * RC_MAX_WEIGHTS is not stored (its recompile reads the .npy files again). */
#define RC_MAX_WEIGHTS ((uint64_t)64 << 20)

static void cache_outputs(const char *cache, const Buf *rkey, const Graph *g,
			  const char *const *deps, const char (*dep_sha)[65], int ndeps,
			  const PlFile *files, int n)
{
	RcFile rf[RC_MAX_FILES];
	char *wbuf = NULL;
	size_t wlen = 0;
	for (int i = 0; i < n; i++) {
		rf[i] = (RcFile){files[i].ext, files[i].text, files[i].len};
		if (!files[i].weights)
			continue;
		if (cg_weights_layout_size(files[i].weights) > RC_MAX_WEIGHTS)
			goto out;
		FILE *f = open_memstream(&wbuf, &wlen);
		if (!f)
			goto out;
		int bad = cg_weights_write_file(files[i].weights, f);
		if (fclose(f) != 0 || bad)
			goto out;
		rf[i].text = wbuf;
		rf[i].len = wlen;
	}
	rc_put(cache, rkey, g->name, (long)g->nops, deps, dep_sha, ndeps, rf, n);
out:
	free(wbuf);
}

/* The plan, the PTX and what --emit asked for, committed together; stored in the
 * result cache under rkey when it is given, with dep_sha the SHA-256 of each of
 * graph_deps' files as the graph read them. */
static int write_outputs(const CompileOptions *o, const PlResult *r, const char *cache,
			 const Buf *rkey, const char (*dep_sha)[65])
{
	const Schedule *s = r->s;
	Buf rel = {0}, dot = {0}, svg = {0};
	PlFile files[RC_MAX_FILES];
	char ext[2][CG_MAX_TARGETS][32];   /* .ptx and .ll per target */
	int n = pl_output_files(&o->pl, r, files, ext);
	if (o->emit_relative) {
		pass_dump_relative(s, &rel);
		files[n++] = (PlFile){".relative.txt", rel.data ? rel.data : "", rel.len, NULL, NULL};
	}
	if (o->emit_dot || o->emit_svg)
		pass_dump_dot(s, &dot);
	if (o->emit_dot)
		files[n++] = (PlFile){".dot", dot.data, dot.len, NULL, NULL};
	if (o->emit_svg) {
		if (cmd_dot_to_svg(dot.data, dot.len, &svg) < 0) {
			buf_free(&rel);
			buf_free(&dot);
			buf_free(&svg);
			return EXIT_FAIL;
		}
		files[n++] = (PlFile){".svg", svg.data, svg.len, NULL, NULL};
	}
	const char **deps = malloc(sizeof *deps * ((size_t)s->g->ntensors + 1));
	int ndeps = graph_deps(s->g, deps);
	int status = publish(o, s->g->name, deps, ndeps, files, n);
	if (status == EXIT_OK && rkey)
		cache_outputs(cache, rkey, s->g, deps, dep_sha, ndeps, files, n);
	free(deps);
	buf_free(&rel);
	buf_free(&dot);
	buf_free(&svg);
	return status;
}

/* ---- the kernel cache and progress ---------------------------------------------- */

/* The cache folder: --cache-dir, else $XDG_CACHE_HOME/fusec (when absolute), else
 * $HOME/.cache/fusec; NULL when there is none. malloc'd. */
static char *default_cache_dir(const char *opt)
{
	if (opt)
		return strdup(opt);
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char *p = NULL;
	if (xdg && xdg[0] == '/') {
		p = malloc(strlen(xdg) + 8);
		sprintf(p, "%s/fusec", xdg);
	} else if (home && home[0] == '/') {
		p = malloc(strlen(home) + 16);
		sprintf(p, "%s/.cache/fusec", home);
	}
	return p;
}

/* Make the cache folder, and refuse one that other users could change
 * (codegen/kcache.h, cg_cache_dir_check); one that cannot be made is not used. */
static int check_cache_dir(const CompileOptions *o, char **cache)
{
	const char *env = getenv("FUSEC_TRUST_CACHE_DIR");
	bool trust = o->trust_cache || (env && !strcmp(env, "1"));
	char why[4200];   /* a path and a few words */
	CgCacheDir st = cg_cache_dir_check(*cache, trust, why, sizeof why);
	if (st == CG_CACHE_UNSAFE)
		cmd_error("the cache folder '%s' is not safe to use: %s, so another user could "
			  "change what compiles read from it; make it private, choose another "
			  "(--cache-dir), compile without it (--no-cache), or trust it "
			  "(--trust-cache-dir, FUSEC_TRUST_CACHE_DIR=1)", *cache, why);
	if (st != CG_CACHE_OK) {
		free(*cache);
		*cache = NULL;
	}
	return st == CG_CACHE_UNSAFE ? EXIT_INPUT : EXIT_OK;
}

/* Progress on a terminal, once a compile has run for a second: one line, rewritten
 * in place as ninja does ("[12/40] kernels": LLVM's part counts distinct kernels
 * as they are done), cleared at the end. Codegen reports its phases and kernels
 * (PlanFileInfo.progress, possibly from LLVM's threads); the reading and the search
 * are marked by cmd_compile; and a ticker thread writes the current phase once the
 * first second has passed, so that a long phase without reports is not silent.
 * Never on a pipe or a file, so logs and tests see nothing of it; FUSEC_PROGRESS=1
 * shows it anyway, every report from the start (the tests of it), FUSEC_PROGRESS=0
 * never. One mutex orders the state and the writes. */
static struct {
	pthread_mutex_t mu;
	pthread_t ticker;
	bool on, forced, shown, stop;
	double start;
	char line[96];         /* the current state, as the line shows it */
} prog = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Under prog.mu: write the line when it is time. */
static void progress_write(bool tick)
{
	if (!prog.forced && clock_seconds() - prog.start < 1.0)
		return;
	if (tick && prog.shown)
		return;
	fprintf(stderr, "\r%s\033[K", prog.line);
	fflush(stderr);
	prog.shown = true;
}

static void progress_set(const char *line)
{
	if (!prog.on)
		return;
	pthread_mutex_lock(&prog.mu);
	snprintf(prog.line, sizeof prog.line, "%s", line);
	progress_write(false);
	pthread_mutex_unlock(&prog.mu);
}

static void show_progress(const char *phase, int done, int total)
{
	char line[96];
	if (!strcmp(phase, "llvm") && total > 0)
		snprintf(line, sizeof line, "[%d/%d] kernels", done, total);
	else if (!strcmp(phase, "llvm") || !strcmp(phase, "kernels"))
		snprintf(line, sizeof line, "[0/?] kernels: building");
	else
		snprintf(line, sizeof line, "[%d/%d] kernels: writing the plan", done, total);
	progress_set(line);
}

static void *progress_tick(void *arg)
{
	(void)arg;
	for (;;) {
		nanosleep(&(struct timespec){0, 100 * 1000000L}, NULL);
		pthread_mutex_lock(&prog.mu);
		bool stop = prog.stop;
		if (!stop)
			progress_write(true);
		pthread_mutex_unlock(&prog.mu);
		if (stop)
			return NULL;
	}
}

/* Start showing progress when stderr is a terminal that no log is written to,
 * unless FUSEC_PROGRESS says otherwise. */
static void progress_begin(double start, bool logs)
{
	const char *env = getenv("FUSEC_PROGRESS");
	prog.forced = env && !strcmp(env, "1");
	prog.on = prog.forced ||
		  (!(env && !strcmp(env, "0")) && !logs && isatty(STDERR_FILENO));
	prog.start = start;
	prog.stop = prog.shown = false;
	snprintf(prog.line, sizeof prog.line, "fusec: reading the graph");
	if (prog.on && pthread_create(&prog.ticker, NULL, progress_tick, NULL) != 0)
		prog.on = false;
}

/* Stop the ticker and clear the line. */
static void progress_end(void)
{
	if (!prog.on)
		return;
	pthread_mutex_lock(&prog.mu);
	prog.stop = true;
	pthread_mutex_unlock(&prog.mu);
	pthread_join(prog.ticker, NULL);
	if (prog.shown)
		fputs("\r\033[K", stderr);
	prog.on = prog.shown = false;
}

/* ---- the summary ----------------------------------------------------------------- */

static void human_bytes(double v, char *out, size_t n)
{
	static const char *const unit[] = {"B", "KB", "MB", "GB", "TB"};
	int u = 0;
	while (v >= 1000 && u < 4) {
		v /= 1000;
		u++;
	}
	snprintf(out, n, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
}

/* The line after a compile, from the plan it wrote (the same for a result cache
 * hit): "fusec: compiled NAME: 49 ops → 30 launches, 21 distinct kernels, 12.3 MB
 * moved, 0.14 s"; a plan for several arches names them after NAME ("compiled NAME
 * for sm_80, sm_90a:"), its kernels counted in the first's PTX. Bytes moved: per launch, the bytes of every tensor it reads and
 * writes, summed over the launches (an estimate of the memory traffic of a run).
 * With --log-format json, one JSON line (event "compiled"). nops < 0: count the ops
 * the plan's steps run (launches' ops, aliases and views), syncs left out. */
static void print_summary(const CompileOptions *o, const char *name, long nops,
			  const char *plan, double seconds, bool cached)
{
	PlStats ps;
	cJSON *doc = pl_plan_stats(plan, &ps) ? NULL : cJSON_Parse(plan);
	if (!doc)
		return;
	long launches = ps.launches;
	int nk = (int)ps.kernels;
	double bytes = ps.bytes;
	const cJSON *x;
	if (nops < 0)
		nops = ps.ops;
	const cJSON *variants = cJSON_GetObjectItemCaseSensitive(doc, "variants");
	const cJSON *arch = cJSON_GetObjectItemCaseSensitive(doc, "arch");
	Buf arches = {0};   /* ", "-separated, when the plan has several */
	int ranged = 0;     /* variants for ranges of sizes (--shape-buckets), per arch */
	if (cJSON_GetArraySize(variants) > 0 && cJSON_IsString(arch)) {
		cJSON_ArrayForEach(x, variants) {
			const cJSON *va = cJSON_GetObjectItemCaseSensitive(x, "arch");
			if (cJSON_GetObjectItemCaseSensitive(x, "dims"))
				ranged++;
			else if (cJSON_IsString(va))
				buf_printf(&arches, ", %s", va->valuestring);
		}
		if (arches.len) {
			Buf all = {0};
			buf_printf(&all, "%s%s", arch->valuestring, arches.data);
			buf_free(&arches);
			arches = all;
		}
	}
	if (o->pl.search.log_json) {
		cJSON *e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "event", "compiled");
		cJSON_AddNullToObject(e, "stream");
		cJSON_AddStringToObject(e, "graph", name);
		if (arches.len) {
			cJSON *list = cJSON_AddArrayToObject(e, "arches");
			cJSON_AddItemToArray(list, cJSON_CreateString(arch->valuestring));
			cJSON_ArrayForEach(x, variants) {
				const cJSON *va = cJSON_GetObjectItemCaseSensitive(x, "arch");
				if (cJSON_IsString(va))
					cJSON_AddItemToArray(list, cJSON_CreateString(va->valuestring));
			}
		}
		cJSON_AddNumberToObject(e, "ops", (double)nops);
		cJSON_AddNumberToObject(e, "launches", (double)launches);
		cJSON_AddNumberToObject(e, "kernels", nk);
		cJSON_AddNumberToObject(e, "bytes", bytes);
		cJSON_AddNumberToObject(e, "seconds", seconds);
		cJSON_AddBoolToObject(e, "result_cache", cached);
		char *text = cJSON_PrintUnformatted(e);
		fprintf(stderr, "%s\n", text);
		cJSON_free(text);
		cJSON_Delete(e);
	} else {
		char b[32];
		human_bytes(bytes, b, sizeof b);
		/* a plan for every size: its dims, and the bytes at their largest */
		Buf every = {0};
		cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(doc, "dims")) {
			const cJSON *n = cJSON_GetObjectItemCaseSensitive(x, "name");
			const cJSON *lo = cJSON_GetObjectItemCaseSensitive(x, "min");
			const cJSON *hi = cJSON_GetObjectItemCaseSensitive(x, "max");
			if (!cJSON_IsString(n) || !cJSON_IsNumber(lo) || !cJSON_IsNumber(hi))
				continue;
			buf_printf(&every, "%s%s ", every.len ? ", " : " for every ", n->valuestring);
			if (hi->valuedouble >= (double)IR_DIM_TOP)   /* no range given */
				buf_printf(&every, "≥ %.0f", lo->valuedouble);
			else
				buf_printf(&every, "in %.0f..%.0f", lo->valuedouble, hi->valuedouble);
		}
		if (every.len && ranged) {
			int narch = 1;
			for (size_t i = 0; arches.data && i < arches.len; i++)
				narch += arches.data[i] == ',';
			buf_printf(&every, " (%d ranges of sizes)", 1 + ranged / narch);
		}
		char moved[80] = "";
		if (bytes >= 0)
			snprintf(moved, sizeof moved, ", %s moved%s", b,
				 every.len ? " at the largest sizes" : "");
		fprintf(stderr, "fusec: compiled %s%s%s%s: %ld op%s → %ld launch%s, %d distinct "
			"kernel%s%s, %.2f s%s\n", name, arches.len ? " for " : "",
			arches.len ? arches.data : "", every.len ? every.data : "", nops,
			nops == 1 ? "" : "s", launches, launches == 1 ? "" : "es", nk,
			nk == 1 ? "" : "s", moved, seconds, cached ? " (result cache hit)" : "");
		buf_free(&every);
	}
	buf_free(&arches);
	cJSON_Delete(doc);
}

/* ---- the result cache ----------------------------------------------------------- */

/* Options that change nothing in the outputs, left out of the result cache's key;
 * with_value: the next argument is their value. Any other option, including ones
 * added later, is in the key as written. */
static bool key_skips(const char *arg, bool *with_value)
{
	static const char *const flags[] = {"-q", "--quiet", "--time", "--trust-cache-dir"};
	/* -o and --depfile say where outputs go, not what they hold */
	static const char *const valued[] = {"-j", "--jobs", "--cache-dir", "-o", "--output",
					     "-M", "--depfile"};
	*with_value = false;
	for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
		if (!strcmp(arg, flags[i]))
			return true;
	for (size_t i = 0; i < sizeof valued / sizeof valued[0]; i++) {
		size_t n = strlen(valued[i]);
		if (!strcmp(arg, valued[i]))
			return *with_value = true;
		if (!strncmp(arg, valued[i], n) && (arg[n] == '=' || (n == 2 && arg[n])))
			return true;
	}
	return false;
}

/* The key of a whole compile (docs/kernel-cache.md, "The result cache"). false
 * when this compile does not use the result cache: a log is asked for (it is
 * printed while the search runs), the graph is on stdin or an ONNX model,
 * --emit svg (an outside program), or a file of the key cannot be read. */
static bool result_key(const CompileOptions *o, int argc, char **argv, Buf *key,
		       char **text, size_t *len)
{
	if (o->no_result_cache || o->pl.search.log_level != LOG_OFF || o->emit_svg ||
	    !cmd_graph_cacheable(o->graph) ||
	    !fusec_build_id()[0])
		return false;
	unsigned major, minor, patch;
	LLVMGetVersion(&major, &minor, &patch);
	char cwd[4096];
	if (!getcwd(cwd, sizeof cwd))
		return false;
	const char *tiles = getenv("FUSEC_MATMUL_TILES");
	buf_printf(key, RC_FORMAT "\nfusec %s\nbuild %s\nllvm %u.%u.%u\ncwd %s\n"
		   "limits %lld %lld %lld\nFUSEC_MATMUL_TILES %s\nnvptx codegen level %d\n",
		   FUSEC_VERSION, fusec_build_id(), major, minor, patch, cwd,
		   (long long)ir_limits.max_ops, (long long)ir_limits.max_tensors,
		   (long long)ir_limits.max_elements, tiles ? tiles : "(unset)",
		   cg_nvptx_codegen_level());
	/* main took --precision and --keep-f32 out of argv */
	if (cmd_layout_name())
		buf_printf(key, "layout %s\n", cmd_layout_name());
	if (cmd_attention_name())
		buf_printf(key, "attention %s\n", cmd_attention_name());
	if (cmd_precision_name())
		buf_printf(key, "precision %s\nkeep-f32 %s\n", cmd_precision_name(),
			   cmd_precision_keep() ? cmd_precision_keep() : "(none)");
	for (int i = 1; i < argc; i++) {
		bool value;
		if (key_skips(argv[i], &value)) {
			i += value;
			continue;
		}
		buf_printf(key, "arg %zu %s\n", strlen(argv[i]), argv[i]);
	}
	if (rc_key_file(key, "graph", o->graph, text, len))
		return false;
	if (o->pl.libdevice) {
		const char *lib = strcmp(o->pl.libdevice, "auto") ? o->pl.libdevice
							: cg_math_find_libdevice();
		buf_printf(key, "libdevice %s\n", lib ? lib : "(none)");
		if (lib && rc_key_file(key, "libdevice-file", lib, NULL, NULL)) {
			free(*text);
			*text = NULL;
			return false;
		}
	}
	return true;
}

/* A hit: the outputs of the same compile before, written again. */
static int from_result_cache(const CompileOptions *o, RcEntry *e, double t0)
{
	const char *deps[64];
	PlFile files[RC_MAX_FILES];
	for (int i = 0; i < e->ndeps; i++)
		deps[i] = e->deps[i];
	for (int i = 0; i < e->nfiles; i++)
		files[i] = (PlFile){e->files[i].ext, e->files[i].text, e->files[i].len, NULL, NULL};
	int status = publish(o, e->name, deps, e->ndeps, files, e->nfiles);
	if (status == EXIT_OK && !o->quiet)
		for (int i = 0; i < e->nfiles; i++)
			if (!strcmp(e->files[i].ext, ".plan.json")) {
				char *plan = strndup(e->files[i].text, e->files[i].len);
				print_summary(o, e->name, -1, plan, clock_seconds() - t0, true);
				free(plan);
			}
	if (o->timing && status == EXIT_OK) {
		double t = clock_seconds() - t0;
		fprintf(stderr, "time: result cache hit (read, search and LLVM skipped); total "
			"%.3fs for %ld ops (%.0f ops/s)\n", t, e->nops, e->nops / (t > 0 ? t : 1e-9));
	}
	return status;
}

/* ---- the pipeline ------------------------------------------------------------- */

static void print_times(const Graph *g, const double t[3], const CgOutputs *co)
{
	double t3 = clock_seconds(), llvm = co->t_kernels + co->t_optimize + co->t_emit;
	fprintf(stderr, "time: read %.3fs, search %.3fs, kernels %.3fs, optimize %.3fs, "
		"emit %.3fs, plan %.3fs, write %.3fs; total %.3fs for %d ops (%.0f ops/s)\n"
		"time: LLVM %.3fs for %d distinct kernels (%.1f ms per kernel) in %d chunk%s "
		"on %d thread%s",
		t[1] - t[0], t[2] - t[1], co->t_kernels, co->t_optimize, co->t_emit, co->t_plan,
		t3 - t[2] - llvm - co->t_plan, t3 - t[0], g->nops, g->nops / (t3 - t[0]), llvm,
		co->nkernels, co->nkernels ? llvm * 1e3 / co->nkernels : 0.0, co->chunks,
		co->chunks == 1 ? "" : "s", co->threads, co->threads == 1 ? "" : "s");
	if (co->twins > 0)
		fprintf(stderr, " (%d compiled once for another: same code)", co->twins);
	if (co->cache_hits >= 0)
		fprintf(stderr, "; kernel cache: %d of %d chunk%s hit%s", co->cache_hits, co->chunks,
			co->chunks == 1 ? "" : "s",
			co->cache_hits == co->chunks && co->chunks ? " (LLVM skipped)" : "");
	fputc('\n', stderr);
}

int cmd_compile(int argc, char **argv)
{
	CompileOptions o;
	int status = parse_options(argc, argv, &o);
	if (status != EXIT_OK || !o.graph)
		return status;

	double t[3];
	t[0] = clock_seconds();
	char *cache = o.no_cache ? NULL : default_cache_dir(o.cache_dir);
	if (cache && (status = check_cache_dir(&o, &cache)) != EXIT_OK)
		return status;
	Buf rkey = {0};
	char *text = NULL;
	size_t len = 0;
	bool use_rc = cache && result_key(&o, argc, argv, &rkey, &text, &len);
	RcEntry hit;
	if (use_rc && rc_get(cache, &rkey, o.graph, &hit)) {
		status = from_result_cache(&o, &hit, t[0]);
		rc_entry_free(&hit);
		buf_free(&rkey);
		free(text);
		free(cache);
		return status;
	}

	/* with the result cache, the graph is read from the bytes its key names */
	progress_begin(t[0], o.pl.search.log_level != LOG_OFF);
	Arena *a = arena_new();
	Graph *g = cmd_load_graph_compile(a, o.graph, text, len);
	free(text);
	if (!g) {
		progress_end();
		arena_free(a);
		buf_free(&rkey);
		free(cache);
		return EXIT_INPUT;
	}
	/* the files the graph read besides itself, with the hash of the very bytes read
	 * (a file changed while the compile runs must not be recorded with outputs made
	 * from its old bytes) */
	char (*dep_sha)[65] = NULL;
	if (use_rc) {
		const char **deps = malloc(sizeof *deps * ((size_t)g->ntensors + 1));
		int ndeps = graph_deps(g, deps);
		dep_sha = ndeps <= 64 ? calloc((size_t)ndeps + 1, sizeof *dep_sha) : NULL;
		for (int k = 0, i = 0; dep_sha && k < g->ntensors; k++)
			if (g->tensors[k].src && g->tensors[k].src->npy)
				memcpy(dep_sha[i++], g->tensors[k].src->npy_sha256, 65);
		use_rc = dep_sha != NULL;
		free(deps);
	}
	if (o.pl.libdevice && !strcmp(o.pl.libdevice, "auto")) {
		o.pl.libdevice = cg_math_find_libdevice();
		if (!o.pl.libdevice) {
			progress_end();
			cmd_error("--libdevice auto: no CUDA install with libdevice found");
			arena_free(a);
			buf_free(&rkey);
			free(dep_sha);
			free(cache);
			return EXIT_FAIL;
		}
	}
	t[1] = clock_seconds();
	progress_set("fusec: searching fusions");
	/* FUSEC_TEST_PROGRESS_DELAY_MS=N (at most 5000) waits before the search: a
	 * compile long enough for the progress line on a terminal (t_inspect.sh) */
	const char *pdelay = getenv("FUSEC_TEST_PROGRESS_DELAY_MS");
	long pms = pdelay ? atol(pdelay) : 0;
	if (pms > 0 && pms <= 5000)
		nanosleep(&(struct timespec){pms / 1000, (pms % 1000) * 1000000L}, NULL);
	Diag d;
	PlResult r;
	o.pl.cache_dir = cache;
	o.pl.progress = prog.on ? show_progress : NULL;
	o.pl.precision = cmd_precision_name();
	o.pl.keep_f32 = cmd_precision_keep();
	if (pl_compile(g, &o.pl, &r, &d)) {
		progress_end();
		cmd_print_diag(&d);
		status = EXIT_FAIL;
	}
	progress_end();
	t[2] = r.t_search;
	if (status == EXIT_OK)
		status = write_outputs(&o, &r, cache, use_rc ? &rkey : NULL, dep_sha);
	free(dep_sha);
	free(cache);
	buf_free(&rkey);
	if (o.timing && status == EXIT_OK)
		print_times(g, t, &r.out);
	if (status == EXIT_OK && !o.quiet)
		print_summary(&o, g->name, pl_real_ops(g), r.out.plan, clock_seconds() - t[0], false);
	pl_result_free(&r);
	arena_free(a);
	return status;
}
