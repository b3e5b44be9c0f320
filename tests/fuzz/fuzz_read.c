/* fuzz_read.c: libFuzzer target for the graph readers (make fuzz; see README.md).
 *
 * Each input is read three times, as JSON, as YAML and with the format sniffed,
 * through ir_read_mem, which runs the whole reader stack: the text checks, cJSON or
 * libyaml, the document tree, validation, inference and liveness. A graph that
 * validates is then put through the relative form, segment by segment, and printed,
 * so code downstream of the readers also sees fuzzed graphs. A rejected input must
 * come back with a message; an accepted one must be consistent enough that the
 * relative form stays inside its tensors and segments. Anything else traps. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../ir/ir.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_graph(const Graph *g)
{
	for (int s = 0; s < g->nsegs; s++) {
		const Segment *seg = &g->segs[s];
		if (seg->stream < 0 || seg->stream >= g->nstreams || seg->nops < 1)
			__builtin_trap();
		for (int i = 0; i < seg->nops; i++)
			if (seg->ops[i] < 0 || seg->ops[i] >= g->nops ||
			    g->ops[seg->ops[i]].kind == OP_SYNC)
				__builtin_trap();
	}
}

static void relative_form(const Graph *g)
{
	RelConv *c = ir_rel_new(g);
	Arena *a = arena_new();
	Buf b = {0};
	for (int s = 0; s < g->nsegs; s++) {
		const Segment *seg = &g->segs[s];
		ir_rel_reset(c);
		for (int i = 0; i < seg->nops; i++) {
			RelOp op;
			ir_rel_op(c, a, seg->ops[i], &op);
			if (op.hash != ir_rel_hash(&op) || !ir_rel_equal(&op, &op))
				__builtin_trap();
			b.len = 0;
			ir_rel_print(&b, &op);
		}
	}
	buf_free(&b);
	arena_free(a);
	ir_rel_free(c);
}

static void read_as(const uint8_t *data, size_t size, const char *file, GraphFormat fmt)
{
	Arena *a = arena_new();
	/* the sniffed read collects up to 8 errors (--max-errors), the others one */
	enum { MAXD = 8 };
	Diag d[MAXD];
	memset(d, 0, sizeof d);
	int nd = 0, maxd = fmt == FMT_AUTO ? MAXD : 1;
	Graph *g = ir_read_mem_errors(a, file, (const char *)data, size, fmt, d, maxd, &nd);
	if (g) {
		check_graph(g);
		relative_form(g);
	} else {
		if (nd < 1 || nd > maxd)
			__builtin_trap();
		for (int i = 0; i < nd; i++) {
			char msg[1100];
			diag_format(&d[i], msg, sizeof msg);
			if (!d[i].msg[0] || d[i].line < 0 || d[i].col < 0 || strchr(msg, '\n'))
				__builtin_trap();
		}
	}
	arena_free(a);
}

/* Read for every size of the named dims (IrShapeLookup.symbolic): every tensor's
 * expressions must give its dims at the probe sizes, and no two different
 * expressions one size (ir_sym_check); a refusal is a one-line message. */
static void read_symbolic(const uint8_t *data, size_t size)
{
	Arena *a = arena_new();
	Diag d;
	memset(&d, 0, sizeof d);
	int nd = 0;
	IrShapeLookup every = {NULL, NULL, true, NULL, 0};
	Graph *g = ir_read_mem_shapes(a, "fuzz", (const char *)data, size, FMT_AUTO, NULL, 0,
				      &every, &d, 1, &nd);
	if (g && g->sym) {
		const IrSymbolic *s = g->sym;
		for (int t = 0; t < g->ntensors && t < s->ndim; t++)
			for (int k = 0; k < g->tensors[t].rank; k++) {
				int64_t v;
				if (ir_dim_eval(&s->dim[t][k], s->probe, &v) || v != g->tensors[t].dim[k])
					__builtin_trap();
			}
		int64_t clash;
		if (ir_sym_check(g, s, &clash))
			__builtin_trap();
		relative_form(g);
	} else if (!g) {
		char msg[1100];
		diag_format(&d, msg, sizeof msg);
		if (!d.msg[0] || strchr(msg, '\n'))
			__builtin_trap();
	}
	arena_free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	read_as(data, size, "fuzz.json", FMT_JSON);
	read_as(data, size, "fuzz.yaml", FMT_YAML);
	read_as(data, size, "fuzz", FMT_AUTO);
	read_symbolic(data, size);
	return 0;
}
