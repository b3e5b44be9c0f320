/* dump.c: a schedule as text for people and tools (fusec compile --emit relative,
 * dot). Beside log.c and explain.c, which render the search's record.
 *
 * pass_dump_relative: every plan's relative ops (ir_rel_print), its triggers and its
 * strategy. pass_dump_dot: a Graphviz digraph of the graph's ops, each filled with
 * the colour of the kernel that runs it (white: no kernel, sync), edges named by the
 * tensor they carry. */
#include <stdlib.h>

#include "search.h"

void pass_dump_relative(const Schedule *s, Buf *b)
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

void pass_dump_dot(const Schedule *s, Buf *b)
{
	static const char *colors[] = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3",
				       "#fdb462", "#b3de69", "#fccde5", "#d9d9d9", "#bc80bd"};
	const Graph *g = s->g;
	int *kernel_of = xmalloc(sizeof(int) * (size_t)(g->nops ? g->nops : 1));
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
