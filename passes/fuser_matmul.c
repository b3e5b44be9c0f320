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
 * reads it. */
#include "search.h"

typedef struct {
	Fuser base;
	bool has_matmul;
	bool att;              /* the anchor is an attention op */
	int nviews;            /* leading operand views */
	int32_t view_out[2];   /* their results */
	RelTensor out;         /* the matmul's result */
	FuseStats epi;
} MatmulFuser;

/* Whether op is a permute or swap_dims of tensor y that keeps the last axis (what
 * an attention op takes after it). */
static bool head_merge(const RelOp *op, int32_t y)
{
	int r = op->t[1].rank;
	if (op->t[0].id != y || r < 2)
		return false;
	if (op->kind == OP_PERMUTE)
		return op->attr.n == r && op->attr.axes[r - 1] == r - 1;
	return op->kind == OP_SWAP_DIMS && op->attr.axes[0] < r - 1 && op->attr.axes[1] < r - 1;
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
		stats_add(&m->epi, op, false);
		/* the matmul's operands are not the epilogue's traffic */
		iset_clear(&m->epi.inputs);
		return;
	}
	if (op->kind == OP_MATMUL || op->kind == OP_CONV2D || op->kind == OP_ATTENTION) {
		fuser_close(f, CR_SECOND_MATMUL);
		return;
	}
	if (m->att) {
		if (m->epi.n > 0 || !head_merge(op, m->out.id)) {
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
