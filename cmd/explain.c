/* explain.c: `fusec explain GRAPH [--op OP] [--json]`: why each op was or was not
 * fused. Runs the same search as compile (default options, or those given) and
 * prints, from its record, each op's segment, step, kernel, block and competing
 * fusers; --json prints the same as one JSON document (docs/inspect.md).
 *
 * Kernels are named as in the plan, the PTX and a profiler: the schedule is
 * lowered as compile lowers it (codegen's cg_lower, for the same --arch and
 * --allow-tf32; no LLVM optimization or emission), which names each launch's
 * kernel. Given several arches, the first names them: the plan's top level. The
 * schedule comes from the compile pipeline's search and verify (lib/pipeline.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/pipeline.h"
#include "cmd.h"

static const char explain_usage[] =
	"usage: fusec explain GRAPH [--op OP] [--json] [--max-blocks N] [--max-bindings N]\n"
	"                     [--burn-exact] [--arch sm_XX[,sm_YY...]] [--allow-tf32]\n"
	"                     [--no-3xtf32]\n"
	"\n"
	"Show, for every op of GRAPH (or only OP), the segment and block it was settled\n"
	"in, the fuser that took it or why none did, the op each fuser closed on with the\n"
	"reason, and the scores that competed. An op no fuser took gets a `why:` line\n"
	"saying what each fuser said about it. Kernels are named as in the plan and the\n"
	"PTX (the plan's kernels[].name, the PTX .entry), with the search's unit beside.\n"
	"\n"
	"  --op OP     one op: its index in `ops` (ops[OP]), the name of the tensor it\n"
	"              writes, or its own `name` (an ONNX node name)\n"
	"  --json      one JSON document (format fusec-explain/1, docs/inspect.md)\n"
	"  --burn-exact  burn-fusion's rules where fusec deviates on purpose\n"
	"              (docs/burn-fidelity.md)\n"
	"  --arch sm_XX, --allow-tf32, --no-3xtf32\n"
	"              as for compile: the kernel names are those of that compile (of\n"
	"              a list of arches, the first's: the plan's top level)\n"
	"  --precision bf16|f16, --keep-f32 LIST, --layout nhwc\n"
	"              the graph converted as compile converts it; a first line says\n"
	"              what was converted and kept (docs/precision.md)\n";

/* The PTX entry of every launch of s (pl_kernel_names), NULL where a launch
 * launches nothing. NULL after a message when the lowering fails: explain then
 * names kernels by their search unit. */
static const char **entry_names(const Schedule *s, const char *arch, bool tf32, bool x3,
				 Arena *a)
{
	Diag d;
	const char **names = pl_kernel_names(s, arch, tf32, x3, a, &d);
	if (!names) {
		cmd_print_diag(&d);
		fprintf(stderr, "%s: explain: the kernels could not be built; they are named by "
			"their search unit below\n", cmd_prog);
	}
	return names;
}

int cmd_explain(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'},
		{"op", required_argument, NULL, 'o'},
		{"json", no_argument, NULL, 'j'},
		{"max-blocks", required_argument, NULL, 'b'},
		{"max-bindings", required_argument, NULL, 'n'},
		{"burn-exact", no_argument, NULL, 'E'},
		{"arch", required_argument, NULL, 'a'},
		{"allow-tf32", no_argument, NULL, 'f'},
		{"allow-3xtf32", no_argument, NULL, 'X'},
		{"no-3xtf32", no_argument, NULL, 'Y'},
		{0, 0, 0, 0},
	};
	char arch[CG_MAX_TARGETS][CMD_ARCH_LEN];
	int narch = 1;
	snprintf(arch[0], sizeof arch[0], "%s", CG_DEFAULT_ARCH);
	bool tf32 = false, x3 = cmd_x3();
	SearchOptions so;
	pass_default_options(&so);
	long op = -1, v;
	const char *opspec = NULL;
	bool json = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			fputs(explain_usage, stdout);
			return EXIT_OK;
		case 'o':
			if (!*optarg) {
				cmd_usage_error("explain", "option '--op' needs an op index or name");
				return EXIT_USAGE;
			}
			opspec = optarg;
			break;
		case 'j':
			json = true;
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
		case 'E':
			so.burn_exact = true;
			break;
		case 'a': {
			int rc = cmd_parse_arches("explain", optarg, arch, CG_MAX_TARGETS, &narch);
			if (rc != EXIT_OK)
				return rc;
			break;
		}
		case 'X':
		case 'Y':
			break;   /* cmd_x3 */
		case 'f':
			tf32 = true;
			break;
		default:
			return cmd_bad_option("explain", longopts, "h", argv, optind);
		}
	}
	if (argc - optind != 1) {
		cmd_usage_error("explain", "expected one GRAPH argument");
		return EXIT_USAGE;
	}
	Arena *a = arena_new();
	/* named dims --input-shape leaves unbound: the graph for every size of them, as
	 * compile makes it */
	Graph *g = cmd_load_graph_compile(a, argv[optind], NULL, 0);
	if (!g) {
		arena_free(a);
		return EXIT_INPUT;
	}
	if (opspec) {
		op = pl_find_op(g, opspec);
		if (op == -2 || op == -1 || op >= g->nops) {
			if (op == -2)
				cmd_usage_error("explain", "--op %s: a graph input; no op writes it",
						opspec);
			else if (op == -1)
				cmd_usage_error("explain", "--op %s: no op has this index, writes a "
						"tensor of this name or has this name", opspec);
			else
				cmd_usage_error("explain", "--op %s: the graph has %d ops", opspec,
						g->nops);
			arena_free(a);
			return EXIT_USAGE;
		}
	}
	Diag d;
	Schedule *s = pl_schedule(g, &so, &d);
	if (!s) {
		cmd_print_diag(&d);
		arena_free(a);
		return EXIT_FAIL;
	}
	Buf b = {0};
	if (!json)
		ir_sym_header(&b, g);
	/* --precision: what the conversion did, before the ops it made */
	if (!json) {
		pass_siblings_summary(cmd_sibling_info(), &b);
		pass_attention_summary(cmd_attention_info(), &b);
	}
	if (cmd_layout_info() && !json)
		pass_layout_summary(cmd_layout_info(), &b);
	if (cmd_precision_info() && !json)
		pass_precision_summary(g, cmd_precision_info(), &b);
	if (!json)
		pass_kmajor_summary(cmd_kmajor_made(), &b);
	const char **entry = entry_names(s, arch[0], tf32, x3, a);
	pass_explain_ex(s, (int)op, json, entry, cmd_attention_info(), &b);
	if (b.len)
		fwrite(b.data, 1, b.len, stdout);
	buf_free(&b);
	pass_free_schedule(s);
	arena_free(a);
	return EXIT_OK;
}
