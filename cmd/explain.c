/* explain.c: `fusec explain GRAPH [--op I]`: why each op was or was not fused.
 * Runs the same search as compile (default options, or those given) and prints,
 * from its record, each op's segment, step, kernel, block and competing fusers. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "../passes/passes.h"
#include "cmd.h"

static const char explain_usage[] =
	"usage: fusec explain GRAPH [--op I] [--max-blocks N] [--max-bindings N]\n"
	"\n"
	"Show, for every op of GRAPH (or only op I), the segment and block it was settled\n"
	"in, the fuser that took it or why none did, the op each fuser closed on with the\n"
	"reason, and the scores that competed.\n";

int cmd_explain(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'},
		{"op", required_argument, NULL, 'o'},
		{"max-blocks", required_argument, NULL, 'b'},
		{"max-bindings", required_argument, NULL, 'n'},
		{0, 0, 0, 0},
	};
	SearchOptions so;
	pass_default_options(&so);
	long op = -1, v;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			fputs(explain_usage, stdout);
			return EXIT_OK;
		case 'o':
			if ((op = cmd_parse_count("explain", "--op", optarg)) < 0)
				return EXIT_USAGE;
			break;
		case 'b':
			if ((v = cmd_parse_count("explain", "--max-blocks", optarg)) < 1) {
				if (v == 0)
					cmd_usage_error("explain", "option '--max-blocks' needs at least 1");
				return EXIT_USAGE;
			}
			so.max_blocks = (int)v;
			break;
		case 'n':
			if ((v = cmd_parse_count("explain", "--max-bindings", optarg)) < 0)
				return EXIT_USAGE;
			so.max_bindings = (int)v;
			break;
		default:
			cmd_usage_error("explain", "unknown option or missing value '%s'", argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		cmd_usage_error("explain", "expected one GRAPH argument");
		return EXIT_USAGE;
	}
	Arena *a = arena_new();
	Graph *g = cmd_load_graph(a, argv[optind]);
	if (!g) {
		arena_free(a);
		return EXIT_INPUT;
	}
	if (op >= g->nops) {
		cmd_usage_error("explain", "--op %ld: the graph has %d ops", op, g->nops);
		arena_free(a);
		return EXIT_USAGE;
	}
	Schedule *s = pass_search(g, &so);
	Buf b = {0};
	pass_explain(s, (int)op, &b);
	if (b.len)
		fwrite(b.data, 1, b.len, stdout);
	buf_free(&b);
	pass_free_schedule(s);
	arena_free(a);
	return EXIT_OK;
}
