/* fuser_reduce_bcast.c: the ReduceBroadcasted fuser (SPEC §3, fuser 4).
 *
 * A chain of Reduce blocks over one input shape S and one axis, the last, where
 * later elementwise ops broadcast the reduced values (shape R) back over S: softmax
 * (max, sub, exp, sum, div) and layer norm (mean, sub, square, mean, rsqrt, mul) in
 * one kernel. Every elementwise output has shape S or R; every reduction reads S.
 *
 * The score is the sum of the Reduce blocks' scores, each counting its elementwise
 * ops only, not the reduction (burn: reduce_broadcasted/fuser/base.rs, properties,
 * sums the blocks' ReduceFuser scores). The ops split into blocks at
 * each reduction: an S-shaped op after a block's reduction opens the next block
 * (its prologue), and when no reduction follows, those trailing ops are the last
 * block's epilogue. So the fuser keeps the scores of finished blocks, the current
 * block P, the tentative next block T, and P+T for the case T never gets a
 * reduction. Each block holds at most TRACE_MAX_OPS elementwise ops. Ready once a reduction is in, as in burn. */
#include "search.h"

typedef struct {
	Fuser base;
	bool has_s, has_r, p_red, broadcast;
	RelTensor s, r;        /* the input and reduced shapes */
	int axis;
	int n;                 /* ops fused */
	uint64_t done;         /* scores of finished blocks */
	FuseStats p, t, pt;
	bool t_used;
} ReduceBcastFuser;

static bool reads_shape(const RelOp *op, const RelTensor *shape)
{
	for (int i = 0; i < op->nin; i++)
		if (ir_rel_shape_equal(&op->t[i], shape))
			return true;
	return false;
}

static void rb_fuse(Fuser *f, const RelOp *op)
{
	ReduceBcastFuser *b = (ReduceBcastFuser *)f;
	const RelTensor *out = &op->t[op->nin];
	bool red = ir_ops[op->kind].family == FAM_REDUCE;
	bool to_s = false;
	if (red) {
		const RelTensor *in = &op->t[0];
		if (op->attr.axis != in->rank - 1 || (b->has_r && op->attr.axis != b->axis)) {
			fuser_close(f, CR_AXIS);
			return;
		}
		/* --burn-exact: its first block is a Reduce fuser, which closes on a
		 * leading reduction (fuser_reduce.c, row 5) */
		if ((b->has_s && !ir_rel_shape_equal(in, &b->s)) || (!b->has_s && f->burn_exact)) {
			fuser_close(f, CR_SHAPE);
			return;
		}
	} else if (ir_op_is_elementwise(op->kind)) {
		if (!b->has_s || ir_rel_shape_equal(out, &b->s))
			to_s = true;
		else if (!(b->has_r && ir_rel_shape_equal(out, &b->r))) {
			fuser_close(f, CR_SHAPE);
			return;
		}
	} else {
		fuser_close(f, CR_NOT_ELEMENTWISE);
		return;
	}
	FuseStats *cur = b->t_used ? &b->t : &b->p;
	/* burn's blocks are Reduce fusers, each with its own trace and op cap */
	bool opens_t = !red && to_s && b->p_red && !b->t_used;
	if (!red && !opens_t && stats_at_cap(cur)) {
		fuser_close(f, CR_MAX_OPS);
		return;
	}
	if (stats_bindings_after(&b->pt, op) > f->max_bindings) {
		fuser_close(f, CR_BINDINGS);
		return;
	}
	if (red) {
		if (!b->has_s)
			b->s = op->t[0];
		b->has_s = true;
		if (!b->has_r) {
			b->r = *out;
			b->axis = op->attr.axis;
			b->has_r = true;
		}
		if (b->p_red && b->t_used) {
			/* T gets its reduction: P is finished */
			stats_add(&b->t, op, false);
			b->done += stats_score(&b->p);
			stats_copy(&b->p, &b->t);
			stats_copy(&b->pt, &b->t);
			stats_clear(&b->t);
			b->t_used = false;
		} else if (b->p_red) {
			b->done += stats_score(&b->p);
			stats_clear(&b->p);
			stats_add(&b->p, op, false);
			stats_copy(&b->pt, &b->p);
		} else {
			stats_add(&b->p, op, false);
			stats_add(&b->pt, op, false);
		}
		b->p_red = true;
	} else {
		if (to_s && !b->has_s) {
			b->s = *out;
			b->has_s = true;
		}
		if (to_s && b->has_r && reads_shape(op, &b->r))
			b->broadcast = true;
		if (to_s && b->p_red && !b->t_used)
			b->t_used = true;
		cur = b->t_used ? &b->t : &b->p;
		stats_add(cur, op, true);
		stats_add(&b->pt, op, true);
	}
	b->n++;
}

static FuserProps rb_properties(const Fuser *f)
{
	const ReduceBcastFuser *b = (const ReduceBcastFuser *)f;
	/* burn (reduce_broadcasted/fuser/base.rs, properties): ready once out of Starting,
	 * i.e. once a reduction is fused; no broadcast back is needed */
	return (FuserProps){b->p_red, b->done + stats_score(&b->pt)};
}

static int rb_len(const Fuser *f)
{
	return ((const ReduceBcastFuser *)f)->n;
}

static void rb_reset(Fuser *f)
{
	ReduceBcastFuser *b = (ReduceBcastFuser *)f;
	b->has_s = b->has_r = b->p_red = b->broadcast = b->t_used = false;
	b->n = 0;
	b->done = 0;
	stats_clear(&b->p);
	stats_clear(&b->t);
	stats_clear(&b->pt);
}

static void rb_clone_into(Fuser *dst, const Fuser *src)
{
	ReduceBcastFuser *d = (ReduceBcastFuser *)dst;
	stats_own(&d->p);
	stats_own(&d->t);
	stats_own(&d->pt);
}

static void rb_release(Fuser *f)
{
	ReduceBcastFuser *b = (ReduceBcastFuser *)f;
	stats_free(&b->p);
	stats_free(&b->t);
	stats_free(&b->pt);
}

const FuserVT fuser_reduce_bcast_vt = {
	"ReduceBroadcasted", FK_REDUCE, sizeof(ReduceBcastFuser), rb_fuse, rb_properties, rb_len,
	rb_reset, rb_clone_into, rb_release,
};
