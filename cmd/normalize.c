/* normalize.c: `fusec normalize GRAPH` prints the relative form of every segment
 * (SPEC §2), one op a line, followed by the values the relative form abstracted:
 * the dim value of each shape id and the value of each placeholder. */
#include <getopt.h>
#include <stdio.h>

#include "cmd.h"

static const char normalize_usage[] =
	"usage: fusec normalize GRAPH\n"
	"\n"
	"Print the relative form of each segment of GRAPH: tensors renumbered by first\n"
	"appearance, dims replaced by shape ids (1 is always id 0), scalars and slice\n"
	"ranges replaced by placeholders #N, and the status of every operand.\n"
	"GRAPH may be - for stdin.\n";

/* Append the relative form of segment s to b. */
static void print_segment(Buf *b, const Graph *g, RelConv *conv, Arena *scratch, int s)
{
	const Segment *seg = &g->segs[s];
	buf_printf(b, "segment %d: stream %d, %d op%s, ", s, seg->stream, seg->nops,
		   seg->nops == 1 ? "" : "s");
	if (seg->sync_op >= 0)
		buf_printf(b, "ends at sync (ops[%d])\n", seg->sync_op);
	else
		buf_puts(b, "ends at the end of the graph\n");

	ir_rel_reset(conv);
	for (int i = 0; i < seg->nops; i++) {
		RelOp r;
		ir_rel_op(conv, scratch, seg->ops[i], &r);
		buf_printf(b, "  ops[%d]  ", seg->ops[i]);
		ir_rel_print(b, &r);
		buf_putc(b, '\n');
	}

	int n;
	const int64_t *dims = ir_rel_dims(conv, &n);
	buf_puts(b, "  shape ids:");
	for (int i = 0; i < n; i++) {
		/* a graph read for every size: the size as an expression of its names */
		const DimExpr *e = i ? ir_sym_of_size(g, dims[i]) : NULL;
		int64_t c;
		if (e && !ir_dim_is_const(e, &c)) {
			buf_printf(b, " %d=", i);
			ir_dim_print(b, e, g->sym->name);
		} else {
			buf_printf(b, " %d=%lld", i, (long long)dims[i]);
		}
	}
	buf_putc(b, '\n');
	const double *vals = ir_rel_values(conv, &n);
	if (n) {
		buf_puts(b, "  placeholders:");
		for (int i = 0; i < n; i++) {
			char num[40];
			fmt_double(num, sizeof num, vals[i]);
			buf_printf(b, " #%d=%s", i, num);
		}
		buf_putc(b, '\n');
	}
}

int cmd_normalize(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'},
		{0, 0, 0, 0},
	};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'h') {
			fputs(normalize_usage, stdout);
			return EXIT_OK;
		}
		return cmd_bad_option("normalize", longopts, "h", argv, optind);
	}
	if (argc - optind != 1) {
		cmd_usage_error("normalize", "expected one GRAPH argument");
		return EXIT_USAGE;
	}

	Arena *a = arena_new();
	/* named dims --input-shape leaves unbound: the graph for every size of them */
	Graph *g = cmd_load_graph_compile(a, argv[optind], NULL, 0);
	if (!g) {
		arena_free(a);
		return EXIT_INPUT;
	}
	RelConv *conv = ir_rel_new(g);
	Buf b = {0};
	ir_sym_header(&b, g);
	for (int s = 0; s < g->nsegs; s++)
		print_segment(&b, g, conv, a, s);
	if (b.len)
		fwrite(b.data, 1, b.len, stdout);
	buf_free(&b);
	ir_rel_free(conv);
	arena_free(a);
	return EXIT_OK;
}
