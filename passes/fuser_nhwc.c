/* fuser_nhwc.c: the NHWCRelayout fuser (burn's fifth fuser, docs/burn-fidelity.md
 * row 11).
 *
 * burn (burn-cubecl-fusion, optim/nhwc_relayout/fuser.rs) builds an elementwise
 * trace with the same trace fuser and settings as ElementWise, and ends it at a
 * pooling op whose input is at its last use (ReadWrite): the pool is taken, the
 * fuser closes, and the trace is told to write the pool's input channel-last
 * (permutation [0, 2, 3, 1] of NCHW). The optimization then runs two launches: the
 * trace, and the pool alone on the channel-last tensor. A pool whose input is still
 * read afterwards (ReadOnly) is not taken: the trace fuser is offered it and closes
 * on it, as on any op it does not know. Ready once the pool is in and the trace holds
 * an op; score the trace's plus 100; its length counts the pool.
 *
 * fusec's pools are max_pool2d and avg_pool2d (burn also ends the trace at its 1-d
 * and adaptive pools and at interpolate, which fusec does not have). The trace rule
 * is ElementWise's (trace_fuse in fuser_elemwise.c), so the two close together on
 * every other op. Which tensor the trace writes channel-last, and whether it does (it
 * must be the trace's own result, read by nothing else), is codegen's business
 * (codegen/lower.c): the search sees only the ops. */
#include "search.h"

typedef struct {
	Fuser base;
	FuseStats st;
	RelTensor ref;
	bool pool;             /* the closing pool is in */
} NhwcFuser;

bool pass_op_is_pool(int kind)
{
	return kind == OP_MAX_POOL2D || kind == OP_AVG_POOL2D;
}

static void nhwc_fuse(Fuser *f, const RelOp *op)
{
	NhwcFuser *e = (NhwcFuser *)f;
	if (pass_op_is_pool(op->kind) && op->t[0].status == ST_READ_WRITE) {
		e->pool = true;
		fuser_close(f, CR_POOL_TAKEN);
		return;
	}
	trace_fuse(f, &e->st, &e->ref, op);
}

static FuserProps nhwc_properties(const Fuser *f)
{
	const NhwcFuser *e = (const NhwcFuser *)f;
	uint64_t score = stats_score(&e->st) + (e->pool ? 100 : 0);
	return (FuserProps){e->st.n >= 1 && e->pool, score};
}

static int nhwc_len(const Fuser *f)
{
	const NhwcFuser *e = (const NhwcFuser *)f;
	return e->st.n + e->pool;
}

static void nhwc_reset(Fuser *f)
{
	stats_clear(&((NhwcFuser *)f)->st);
	((NhwcFuser *)f)->pool = false;
}

static void nhwc_clone_into(Fuser *dst, const Fuser *src)
{
	stats_own(&((NhwcFuser *)dst)->st);
}

static void nhwc_release(Fuser *f)
{
	stats_free(&((NhwcFuser *)f)->st);
}

const FuserVT fuser_nhwc_vt = {
	"NHWCRelayout", FK_NHWC, sizeof(NhwcFuser), nhwc_fuse, nhwc_properties, nhwc_len,
	nhwc_reset, nhwc_clone_into, nhwc_release,
};

int pass_nhwc_relayout(const Schedule *s, const Step *st, int li)
{
	const Graph *g = s->g;
	const Launch *l = &st->launch[li];
	int nhwc = pass_nhwc_fuser();
	if (li + 1 >= st->nlaunch || s->kernels[l->kernel].fuser != nhwc)
		return -1;
	const Launch *p = &st->launch[li + 1];
	if (s->kernels[p->kernel].fuser != nhwc || p->nops != 1 ||
	    !pass_op_is_pool(g->ops[p->ops[0]].kind))
		return -1;
	int x = g->ops[p->ops[0]].in[0];
	const Tensor *t = &g->tensors[x];
	if (t->is_output || t->role == ROLE_INPUT || t->rank != 4 || t->producer < 0)
		return -1;
	bool made = false;
	for (int k = 0; k < l->nops; k++)
		made |= l->ops[k] == t->producer;
	if (!made)
		return -1;
	/* its readers lie between its producer and its last read */
	for (int i = t->producer + 1; i <= t->last_read && i < g->nops; i++) {
		const Op *op = &g->ops[i];
		bool reads = false;
		for (int j = 0; j < op->nin; j++)
			reads |= op->in[j] == x;
		if (!reads || i == p->ops[0])
			continue;
		bool inside = false;
		for (int k = 0; k < l->nops; k++)
			inside |= l->ops[k] == i;
		if (!inside)
			return -1;
	}
	return x;
}
