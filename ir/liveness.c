/* liveness.c: exact liveness and segments, computed once the graph is read.
 *
 * Status (SPEC §2): a graph input is always ReadOnly; an intermediate is ReadWrite
 * at its last read (it may be freed or overwritten there) and ReadOnly before; a
 * tensor listed in `outputs` is never ReadWrite. Every operand of the op holding
 * the last read gets ReadWrite, so `x * x` at x's last use marks both.
 *
 * Segments: a `sync` drains every stream, so it closes the open segment of each
 * stream; the end of the graph is an implicit sync. Segments are listed in the
 * order they close, and by stream number at the same sync. */
#include "ir.h"

static void close_segments(Graph *g, int **open, int *nopen, int sync_op)
{
	for (int s = 0; s < g->nstreams; s++) {
		if (nopen[s] == 0)
			continue;
		Segment *seg = &g->segs[g->nsegs++];
		seg->stream = s;
		seg->ops = open[s];
		seg->nops = nopen[s];
		seg->sync_op = sync_op;
		open[s] += nopen[s];
		nopen[s] = 0;
	}
}

void ir_finish(Graph *g)
{
	Arena *a = g->arena;

	for (int t = 0; t < g->ntensors; t++)
		g->tensors[t].last_read = -1;
	g->nstreams = 1;
	for (int i = 0; i < g->nops; i++) {
		Op *op = &g->ops[i];
		for (int k = 0; k < op->nin; k++)
			g->tensors[op->in[k]].last_read = i;
		if (op->stream + 1 > g->nstreams)
			g->nstreams = op->stream + 1;
	}

	for (int i = 0; i < g->nops; i++) {
		Op *op = &g->ops[i];
		if (!op->in_status && op->nin)
			op->in_status = ARENA_NEW(a, uint8_t, op->nin);
		for (int k = 0; k < op->nin; k++) {
			const Tensor *t = &g->tensors[op->in[k]];
			bool rw = t->producer >= 0 && !t->is_output && t->last_read == i;
			op->in_status[k] = rw ? ST_READ_WRITE : ST_READ_ONLY;
		}
	}

	/* Each stream's ops are stored in one array, segment after segment. */
	int *count = ARENA_NEW(a, int, g->nstreams);
	for (int i = 0; i < g->nops; i++)
		if (g->ops[i].kind != OP_SYNC)
			count[g->ops[i].stream]++;
	int **open = ARENA_NEW(a, int *, g->nstreams);
	int *nopen = ARENA_NEW(a, int, g->nstreams);
	for (int s = 0; s < g->nstreams; s++)
		open[s] = ARENA_NEW(a, int, count[s] + 1);
	/* Count the segments exactly: one per stream with ops between two syncs. */
	bool *busy = ARENA_NEW(a, bool, g->nstreams);
	int nsegs = 0;
	for (int i = 0; i <= g->nops; i++) {
		if (i == g->nops || g->ops[i].kind == OP_SYNC) {
			for (int s = 0; s < g->nstreams; s++) {
				nsegs += busy[s];
				busy[s] = false;
			}
		} else {
			busy[g->ops[i].stream] = true;
		}
	}
	g->segs = ARENA_NEW(a, Segment, nsegs);
	g->nsegs = 0;
	for (int i = 0; i < g->nops; i++) {
		const Op *op = &g->ops[i];
		if (op->kind == OP_SYNC)
			close_segments(g, open, nopen, i);
		else
			open[op->stream][nopen[op->stream]++] = i;
	}
	close_segments(g, open, nopen, -1);
}
