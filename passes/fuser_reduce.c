/* fuser_reduce.c: the Reduce fuser (SPEC §3, fuser 3).
 *
 * Three phases: elementwise ops on the reduction's input (fused on read; their
 * outputs all have the input's shape), exactly one reduction, then elementwise ops
 * on its output (fused on write; outputs of the reduced shape). A second reduction
 * closes it, and so does an elementwise op that broadcasts a reduced value back to
 * the full shape: that is ReduceBroadcasted's pattern. Ready once the reduction is
 * in. The score counts the elementwise ops only, as burn's does. Sum, mean and prod of f16/bf16 accumulate in f32 (codegen's business). */
#include "search.h"

typedef struct {
	Fuser base;
	int phase;             /* 0 prologue, 1 after the reduction */
	bool has_ref;
	RelTensor ref;         /* prologue shape, then the reduced shape */
	FuseStats st;
} ReduceFuser;

static void rd_fuse(Fuser *f, const RelOp *op)
{
	ReduceFuser *r = (ReduceFuser *)f;
	const RelTensor *out = &op->t[op->nin];
	if (ir_ops[op->kind].family == FAM_REDUCE) {
		if (r->phase == 1) {
			fuser_close(f, CR_SECOND_REDUCTION);
			return;
		}
		/* burn (optim/reduce/fuser.rs, on_reduce) compares the input with the
		 * trace's reference shape, empty before the first op, so a leading
		 * reduction closes it; fusec starts a kernel with it (row 5, deliberate) */
		if ((r->has_ref && !ir_rel_shape_equal(&op->t[0], &r->ref)) ||
		    (!r->has_ref && f->burn_exact)) {
			fuser_close(f, CR_SHAPE);
			return;
		}
	} else if (ir_op_is_elementwise(op->kind)) {
		if (stats_at_cap(&r->st)) {
			fuser_close(f, CR_MAX_OPS);
			return;
		}
		if (r->has_ref && !ir_rel_shape_equal(out, &r->ref)) {
			fuser_close(f, r->phase == 1 ? CR_BROADCAST : CR_SHAPE);
			return;
		}
	} else {
		fuser_close(f, CR_NOT_ELEMENTWISE);
		return;
	}
	if (stats_bindings_after(&r->st, op) > f->max_bindings) {
		fuser_close(f, CR_BINDINGS);
		return;
	}
	if (ir_ops[op->kind].family == FAM_REDUCE) {
		r->phase = 1;
		r->ref = *out;
	} else if (!r->has_ref) {
		r->ref = *out;
	}
	r->has_ref = true;
	/* burn scores the trace of the ops fused on read and on write; the reduction
	 * is kept outside it (optim/reduce/fuser.rs, properties): not counted, like
	 * Matmul's matmul */
	stats_add(&r->st, op, ir_ops[op->kind].family != FAM_REDUCE);
}

static FuserProps rd_properties(const Fuser *f)
{
	const ReduceFuser *r = (const ReduceFuser *)f;
	return (FuserProps){r->phase == 1, stats_score(&r->st)};
}

static int rd_len(const Fuser *f)
{
	const ReduceFuser *r = (const ReduceFuser *)f;
	return r->st.n + r->phase;   /* the reduction is fused, though not scored */
}

static void rd_reset(Fuser *f)
{
	ReduceFuser *r = (ReduceFuser *)f;
	r->phase = 0;
	r->has_ref = false;
	stats_clear(&r->st);
}

static void rd_clone_into(Fuser *dst, const Fuser *src)
{
	ReduceFuser *d = (ReduceFuser *)dst;
	stats_own(&d->st);
}

static void rd_release(Fuser *f)
{
	stats_free(&((ReduceFuser *)f)->st);
}

const FuserVT fuser_reduce_vt = {
	"Reduce", FK_REDUCE, sizeof(ReduceFuser), rd_fuse, rd_properties, rd_len,
	rd_reset, rd_clone_into, rd_release,
};
