/* fuser_matmul.c: the Matmul fuser (SPEC §3, fuser 2).
 *
 * Starts with a matmul (or, outside --burn-exact, a conv2d: the implicit GEMM of
 * codegen/matmul_conv.c, with no views in front), or with at most two swap_dims / permute views of tensors
 * read from memory that are the matmul's operands and read by it alone (its last
 * read of them: the transposed operands the tiled kernel reads in place, codegen/
 * matmul_tile.c), then takes an elementwise epilogue over the matmul's output
 * shape (bias, activation, scaling). The matmul itself is neither counted in N nor
 * in U: the score is what the views and the epilogue save, with the matmul's result
 * counted as already in registers. A second matmul, a view after the matmul, a
 * reduction or an output of another shape closes it. Ready with at least one view
 * or epilogue op.
 *
 * Outside --burn-exact an attention op (passes/attention.c) is an anchor too, with
 * no views in front (those sink into its launch: passes/views.c), and takes one op
 * after it: a permute or swap_dims of its output that keeps the last axis (the
 * exporters' merge of the heads, [batch, heads, seq, dim] to [batch, seq, heads,
 * dim]). The attention kernel then stores each row of its output where the
 * permute puts it (codegen/matmul_epilogue.c, written_at), and the permute's
 * launch is gone; the output itself is written too only where something else
 * reads it.
 *
 * Outside --burn-exact a matmul anchor with no views in front also takes its
 * siblings, up to IR_MM_GROUP_MAX matmuls in all (issue 22's horizontal fusion,
 * beyond burn): a later matmul reading the same first operand, of a second operand
 * of the anchor's shape (so its output too) not made here, each followed by its own
 * epilogue, which reads nothing the other matmuls made. One kernel then runs
 * the tiles of every matmul (codegen/matmul_kernel.c), so the shared operand is read
 * by one launch instead of one each: a sibling counts as an epilogue op that reads
 * it. passes/siblings.c brings siblings together in the stream, and marks lone the
 * matmuls whose results an op reads together with a sibling's (RelAttrs.lone). */
#include "search.h"

enum { CHAIN_MAX = TRACE_MAX_OPS + 8 };

typedef struct {
	Fuser base;
	bool has_matmul;
	bool att;              /* the anchor is an attention op */
	int nviews;            /* leading operand views */
	int32_t view_out[2];   /* their results */
	RelTensor out;         /* the current matmul's result */
	RelTensor b;           /* the anchor's second operand */
	int32_t a_id;          /* the anchor's first operand */
	int nmm;               /* matmuls taken: the anchor and its siblings */
	int nchain;            /* what the current matmul and its epilogue made */
	int32_t chain[CHAIN_MAX];
	FuseStats epi;
} MatmulFuser;

/* Whether matmul op is a sibling of the anchor (the fuser's comment). */
static bool sibling(const MatmulFuser *m, const Fuser *f, const RelOp *op)
{
	const RelTensor *b = &op->t[1];
	if (op->kind != OP_MATMUL || op->attr.lone || f->burn_exact || m->att || m->nviews ||
	    m->a_id < 0 ||
	    m->nmm >= IR_MM_GROUP_MAX || op->t[0].id != m->a_id ||
	    iset_has(&m->epi.produced, b->id) || b->dtype != m->b.dtype || b->rank != m->b.rank)
		return false;
	return ir_rel_shape_equal(b, &m->b) && ir_rel_shape_equal(&op->t[op->nin], &m->out);
}

/* Whether every operand of op that the fuser made comes from the current matmul or
 * its epilogue. */
static bool reads_own_chain(const MatmulFuser *m, const RelOp *op)
{
	for (int k = 0; k < op->nin; k++) {
		if (!iset_has(&m->epi.produced, op->t[k].id))
			continue;
		bool mine = false;
		for (int c = 0; c < m->nchain && !mine; c++)
			mine = m->chain[c] == op->t[k].id;
		if (!mine)
			return false;
	}
	return true;
}

static void mm_fuse(Fuser *f, const RelOp *op)
{
	MatmulFuser *m = (MatmulFuser *)f;
	if (!m->has_matmul) {
		if ((op->kind == OP_SWAP_DIMS || op->kind == OP_PERMUTE) && m->nviews < 2 &&
		    !iset_has(&m->epi.produced, op->t[0].id)) {
			m->view_out[m->nviews++] = op->t[1].id;
			stats_add(&m->epi, op, true);
			return;
		}
		/* a conv is an anchor too (the implicit GEMM, codegen/matmul_conv.c),
		 * alone: no views in front; not in burn's search (--burn-exact) */
		bool conv = op->kind == OP_CONV2D && !f->burn_exact && m->nviews == 0;
		bool att = op->kind == OP_ATTENTION && !f->burn_exact && m->nviews == 0;
		if (op->kind != OP_MATMUL && !conv && !att) {
			fuser_close(f, CR_NOT_MATMUL);
			return;
		}
		/* every view is an operand, read here for the last time */
		for (int v = 0; v < m->nviews; v++) {
			bool used = false;
			for (int k = 0; k < op->nin; k++)
				used |= op->t[k].id == m->view_out[v] && op->t[k].status == ST_READ_WRITE;
			if (!used) {
				fuser_close(f, CR_NOT_MATMUL);
				return;
			}
		}
		m->has_matmul = true;
		m->att = att;
		m->out = op->t[op->nin];
		m->nmm = 1;
		m->a_id = op->kind == OP_MATMUL ? op->t[0].id : -1;
		m->b = op->t[1];
		m->nchain = 1;
		m->chain[0] = m->out.id;
		stats_add(&m->epi, op, false);
		/* the matmul's operands are not the epilogue's traffic */
		iset_clear(&m->epi.inputs);
		return;
	}
	if (sibling(m, f, op)) {
		if (stats_bindings_after(&m->epi, op) + 2 > f->max_bindings) {
			fuser_close(f, CR_BINDINGS);
			return;
		}
		m->nmm++;
		m->out = op->t[op->nin];
		m->nchain = 1;
		m->chain[0] = m->out.id;
		stats_add(&m->epi, op, true);
		/* the first sibling brings the shared operand into F (the anchor's read
		 * of it was cleared) next to the anchor's result: count both in U as
		 * well, so that U - F is the reads of it the group saves */
		if (m->nmm == 2)
			m->epi.u += 2;
		return;
	}
	if (op->kind == OP_MATMUL || op->kind == OP_CONV2D || op->kind == OP_ATTENTION) {
		fuser_close(f, CR_SECOND_MATMUL);
		return;
	}
	if (m->att) {
		if (m->epi.n > 0 || !ir_rel_head_merge(op, m->out.id)) {
			fuser_close(f, CR_AFTER_ATTENTION);
			return;
		}
		stats_add(&m->epi, op, true);
		return;
	}
	if (!ir_op_is_elementwise(op->kind)) {
		fuser_close(f, CR_NOT_ELEMENTWISE);
		return;
	}
	if (stats_at_cap(&m->epi)) {
		fuser_close(f, CR_MAX_OPS);
		return;
	}
	if (!ir_rel_shape_equal(&op->t[op->nin], &m->out)) {
		fuser_close(f, CR_SHAPE);
		return;
	}
	if (stats_bindings_after(&m->epi, op) + 2 > f->max_bindings) {
		fuser_close(f, CR_BINDINGS);
		return;
	}
	/* a sibling's epilogue reads its own matmul's values only: the kernel has
	 * one matmul's tile in hand at a time */
	if (m->nmm > 1 && !reads_own_chain(m, op)) {
		fuser_close(f, CR_SIBLINGS_MIX);
		return;
	}
	if (m->nchain == CHAIN_MAX) {
		fuser_close(f, CR_MAX_OPS);
		return;
	}
	m->chain[m->nchain++] = op->t[op->nin].id;
	stats_add(&m->epi, op, true);
}

static FuserProps mm_properties(const Fuser *f)
{
	const MatmulFuser *m = (const MatmulFuser *)f;
	return (FuserProps){m->has_matmul && m->epi.n >= 1, stats_score(&m->epi)};
}

static int mm_len(const Fuser *f)
{
	const MatmulFuser *m = (const MatmulFuser *)f;
	return m->has_matmul + m->epi.n;
}

static void mm_reset(Fuser *f)
{
	MatmulFuser *m = (MatmulFuser *)f;
	m->has_matmul = false;
	m->att = false;
	m->nviews = 0;
	m->nmm = 0;
	m->nchain = 0;
	m->a_id = -1;
	stats_clear(&m->epi);
}

static void mm_clone_into(Fuser *dst, const Fuser *src)
{
	MatmulFuser *d = (MatmulFuser *)dst;
	stats_own(&d->epi);
}

static void mm_release(Fuser *f)
{
	stats_free(&((MatmulFuser *)f)->epi);
}

const FuserVT fuser_matmul_vt = {
	"Matmul", FK_MATMUL, sizeof(MatmulFuser), mm_fuse, mm_properties, mm_len,
	mm_reset, mm_clone_into, mm_release,
};
