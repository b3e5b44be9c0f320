/* dump.c: a schedule as text for people and tools (fusec compile --emit relative,
 * dot). Beside log.c and explain.c, which render the search's record.
 *
 * pass_dump_relative: every plan's relative ops (ir_rel_print), its triggers and its
 * strategy. pass_dump_dot: a Graphviz digraph of the graph: one cluster per fused
 * kernel launch, un-fused ops plain, inputs, outputs, shapes on the edges, a legend. */
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

static void dot_tensor_label(Buf *b, const Tensor *t, const char *sep)
{
	dot_escape(b, t->name);
	buf_printf(b, "%s%s%s", sep, ir_dtype_name(t->dtype), ir_shape_text(t->rank, t->dim).s);
}

/* Colours by fuser (ColorBrewer Pastel1), so a colour means one kind of kernel and
 * a cluster's border, not its colour, tells one kernel from the next. */
static const char *const fuser_colors[] = {"#b3cde3", "#fbb4ae", "#ccebc5", "#decbe4",
					   "#fed9a6", "#ffffcc", "#e5d8bd", "#fddaec"};

static const char *fuser_color(int fuser)
{
	return fuser_colors[fuser % (int)COUNTOF(fuser_colors)];
}

/* One cluster per launch of a fused kernel, labelled with its kernel, fuser, score
 * and op count; ops run alone are plain boxes; graph inputs and outputs are
 * ellipses; every edge carries its tensor's name, dtype and shape; a legend names
 * the colours. Ranks run left to right for long graphs. */
void pass_dump_dot(const Schedule *s, Buf *b)
{
	const Graph *g = s->g;
	buf_puts(b, "digraph \"");
	dot_escape(b, g->name);
	buf_puts(b, "\" {\n"
		 "  graph [rankdir=TB, fontname=\"Helvetica\", fontsize=11, nodesep=0.15, "
		 "ranksep=0.3, newrank=true];\n"
		 "  node [shape=box, style=\"rounded,filled\", fillcolor=white, fontname=\"Helvetica\", "
		 "fontsize=10, height=0.3, margin=\"0.08,0.03\"];\n"
		 "  edge [fontname=\"Helvetica\", fontsize=8, color=\"#555555\", arrowsize=0.6];\n");
	int nlaunch = 0;
	for (int i = 0; i < s->nsteps; i++)
		nlaunch += s->steps[i].nlaunch;
	buf_puts(b, "  label=\"");
	dot_escape(b, g->name);
	buf_printf(b, ": %d ops, %d kernel launch%s\";\n  labelloc=t;\n", g->nops, nlaunch,
		   nlaunch == 1 ? "" : "es");

	/* graph inputs */
	for (int i = 0; i < g->ninputs; i++) {
		const Tensor *t = &g->tensors[g->inputs[i]];
		buf_printf(b, "  t%d [shape=ellipse, style=filled, fillcolor=\"#eeeeee\", label=\"",
			   g->inputs[i]);
		dot_tensor_label(b, t, "\\n");
		buf_puts(b, "\"];\n");
	}

	/* launches: a cluster per fused kernel, plain ops for the rest */
	bool *used = xcalloc((size_t)pass_nfusers() + 1, sizeof(bool));
	bool any_plain = false;
	for (int i = 0, li = 0; i < s->nsteps; i++)
		for (int k = 0; k < s->steps[i].nlaunch; k++, li++) {
			const Launch *l = &s->steps[i].launch[k];
			const Kernel *kern = &s->kernels[l->kernel];
			const char *indent = "  ";
			if (kern->fuser >= 0) {
				used[kern->fuser] = true;
				buf_printf(b, "  subgraph cluster_%d {\n    label=\"#%d %s · %s · score %llu · "
					   "%d op%s", li, li, kern->name, pass_fuser_name(kern->fuser),
					   (unsigned long long)kern->score, l->nops, l->nops == 1 ? "" : "s");
				/* NHWCRelayout: the tensor kept channel-last between its launches */
				int x = pass_nhwc_relayout(s, &s->steps[i], k), px = k > 0 ?
					pass_nhwc_relayout(s, &s->steps[i], k - 1) : -1;
				if (x >= 0 || px >= 0) {
					buf_printf(b, " · %s ", x >= 0 ? "writes" : "reads");
					dot_escape(b, g->tensors[x >= 0 ? x : px].name);
					buf_puts(b, " NHWC");
				}
				buf_printf(b, "\";\n    labeljust=l; style=\"rounded,filled\"; "
					   "fillcolor=\"%s\"; color=\"#333333\"; penwidth=1.2;\n",
					   fuser_color(kern->fuser));
				indent = "    ";
			} else {
				any_plain = true;
			}
			for (int j = 0; j < l->nops; j++) {
				int o = l->ops[j];
				char kind[96];
				buf_printf(b, "%sop%d [label=\"%d %s", indent, o, o,
					   ir_op_display(g, &g->ops[o], kind, sizeof kind));
				if (g->ops[o].name) {
					buf_puts(b, "\\n");
					dot_escape(b, g->ops[o].name);
				}
				buf_puts(b, "\"");
				if (kern->fuser < 0)
					buf_printf(b, ", tooltip=\"#%d %s: un-fused\"", li, kern->name);
				buf_puts(b, "];\n");
			}
			if (kern->fuser >= 0)
				buf_puts(b, "  }\n");
		}

	/* edges: producer (or input) to each reader, labelled with the tensor */
	for (int i = 0; i < g->nops; i++) {
		if (g->ops[i].kind == OP_SYNC)
			continue;
		for (int j = 0; j < g->ops[i].nin; j++) {
			int tid = g->ops[i].in[j];
			const Tensor *t = &g->tensors[tid];
			if (t->producer >= 0)
				buf_printf(b, "  op%d -> op%d [label=\"", t->producer, i);
			else
				buf_printf(b, "  t%d -> op%d [label=\"", tid, i);
			dot_tensor_label(b, t, " ");
			buf_puts(b, "\"];\n");
		}
	}
	/* graph outputs */
	for (int i = 0; i < g->noutputs; i++) {
		int tid = g->outputs[i];
		const Tensor *t = &g->tensors[tid];
		buf_printf(b, "  out%d [shape=ellipse, style=\"filled,bold\", fillcolor=\"#eeeeee\", "
			   "label=\"", tid);
		dot_tensor_label(b, t, "\\n");
		buf_puts(b, "\"];\n");
		if (t->producer >= 0)
			buf_printf(b, "  op%d -> out%d;\n", t->producer, tid);
		else
			buf_printf(b, "  t%d -> out%d;\n", tid, tid);
	}

	/* legend */
	buf_puts(b, "  subgraph cluster_legend {\n    label=\"legend\"; labeljust=l; style=dashed; "
		 "color=\"#999999\";\n"
		 "    legend_in [shape=ellipse, style=filled, fillcolor=\"#eeeeee\", "
		 "label=\"graph input\\nname dtype[shape]\"];\n"
		 "    legend_out [shape=ellipse, style=\"filled,bold\", fillcolor=\"#eeeeee\", "
		 "label=\"graph output\"];\n");
	if (any_plain)
		buf_puts(b, "    legend_plain [label=\"op run alone (un-fused)\"];\n");
	for (int f = 0; f < pass_nfusers(); f++)
		if (used[f])
			buf_printf(b, "    legend_f%d [label=\"fused by %s\\n(box: one kernel launch)\", "
				   "fillcolor=\"%s\"];\n", f, pass_fuser_name(f), fuser_color(f));
	buf_puts(b, "    legend_in -> legend_out [label=\"tensor dtype[shape]\"];\n  }\n}\n");
	free(used);
}
