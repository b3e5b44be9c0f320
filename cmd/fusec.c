/* fusec.c: the driver. Dispatches to a subcommand and owns the shared pieces of
 * command-line handling: error printing, graph loading, exit codes. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

const char *cmd_prog = "fusec";

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
	"\n"
	"GRAPH is a fusec-graph/1 file (.json, .yaml, .yml) or - for stdin.\n"
	"`fusec COMMAND --help` describes each command.\n"
	"\n"
	"exit status: 0 success, 1 invalid input, 2 usage error, 3 code generation\n"
	"or runtime failure.\n";

void cmd_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: error: ", cmd_prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

void cmd_usage_error(const char *sub, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s %s: ", cmd_prog, sub);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\nTry '%s %s --help'.\n", cmd_prog, sub);
	va_end(ap);
}

void cmd_print_diag(const Diag *d)
{
	char line[1200];
	diag_format(d, line, sizeof line);
	/* a message that names no file still says who speaks */
	fprintf(stderr, "%s%s\n", d->file[0] ? "" : "fusec: ", line);
}

Graph *cmd_load_graph(Arena *a, const char *path)
{
	Diag d;
	Graph *g = ir_read_file(a, path, FMT_AUTO, &d);
	if (!g)
		cmd_print_diag(&d);
	return g;
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
};

int main(int argc, char **argv)
{
	opterr = 0;   /* each subcommand words its own usage errors */
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
		printf("fusec %s\n", FUSEC_VERSION);
		return EXIT_OK;
	}
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (!strcmp(c, commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "%s: unknown command '%s'\n\n%s", cmd_prog, c, usage_text);
	return EXIT_USAGE;
}
