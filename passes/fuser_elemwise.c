/* fuser_elemwise.c: the ElementWise fuser (SPEC §3, fuser 1).
 *
 * Takes elementwise, scalar, comparison, cast and select ops, with broadcasting of
 * size-1 input dims, plus views read from kernel inputs (a reshape / swap_dims /
 * permute / expand of a tensor that comes from memory is index arithmetic on the
 * load). Every fused op writes within one reference shape, as burn's trace fuser does
 * (engine/fuser.rs, output_is_compatible; docs/burn-fidelity.md row 1): the first
 * op's output shape, grown where it has a size-1 dim and a later output does not. An
 * output may be smaller than the reference on size-1 dims; the kernel iterates the
 * reference and writes such an output once per position (codegen/eval.c). It closes
 * on any other op, on a view of a tensor it produced itself (that would need the
 * value in memory), on slices, on an output that is neither, past 65 non-view ops
 * (TRACE_MAX_OPS) and past the binding limit. A reshape follows burn's rule: it
 * fuses only when the kernel already reads its input, and never to a lower rank
 * (docs/burn-fidelity.md row 2); under --burn-exact a swap_dims too, and a permute or
 * an expand closes it. Ready with one op or more. */
#include "search.h"

typedef struct {
	Fuser base;
	FuseStats st;
	RelTensor ref;         /* the iteration shape (shape ids) */
} ElemwiseFuser;

/* The trace rule itself, shared with the NHWCRelayout fuser (fuser_nhwc.c), whose
 * trace is burn's same TraceOperationFuser with the same settings. */
void trace_fuse(Fuser *f, FuseStats *st, RelTensor *ref, const RelOp *op)
{
	int fam = ir_ops[op->kind].family;
	const RelTensor *out = &op->t[op->nin];
	if (fam == FAM_VIEW) {
		if (op->kind == OP_SLICE) {
			fuser_close(f, CR_VIEW_UNSUPPORTED);
			return;
		}
		if (iset_has(&st->produced, op->t[0].id)) {
			fuser_close(f, CR_VIEW_INTERMEDIATE);
			return;
		}
		/* burn (engine/fuser.rs, fuse_base; trace/block.rs, input_reshaped): a
		 * reshape to another shape fuses only when its input is already read
		 * in the kernel, and never to a lower rank. Un-fused it costs nothing:
		 * an alias of its input's buffer (codegen/lower.c), as it is a metadata
		 * update in burn (docs/burn-fidelity.md row 2) */
		/* --burn-exact: burn fuses no permute or expand (they are not in
		 * fuse_base), and a swap_dims only as a reshape, once its input is read
		 * (input_swap_dims); fusec fuses both by default, as index arithmetic on
		 * the load (docs/burn-fidelity.md row 2) */
		if (f->burn_exact && (op->kind == OP_PERMUTE || op->kind == OP_EXPAND)) {
			fuser_close(f, CR_VIEW_UNSUPPORTED);
			return;
		}
		if (f->burn_exact && op->kind == OP_SWAP_DIMS &&
		    !iset_has(&st->inputs, op->t[0].id)) {
			fuser_close(f, CR_VIEW_FIRST_USE);
			return;
		}
		if (op->kind == OP_RESHAPE && !ir_rel_shape_equal(&op->t[0], out)) {
			if (out->rank < op->t[0].rank) {
				fuser_close(f, CR_VIEW_RANK);
				return;
			}
			if (!iset_has(&st->inputs, op->t[0].id)) {
				fuser_close(f, CR_VIEW_FIRST_USE);
				return;
			}
		}
	} else if (!ir_op_is_elementwise(op->kind)) {
		fuser_close(f, CR_NOT_ELEMENTWISE);
		return;
	}
	if (stats_at_cap(st)) {
		fuser_close(f, CR_MAX_OPS);
		return;
	}
	RelTensor grown = *ref;
	if (st->n > 0 && !rel_output_compatible(ref, out, true, &grown)) {
		fuser_close(f, CR_SHAPE);
		return;
	}
	if (stats_bindings_after(st, op) > f->max_bindings) {
		fuser_close(f, CR_BINDINGS);
		return;
	}
	*ref = st->n == 0 ? *out : grown;
	stats_add(st, op, true);
}

static void ew_fuse(Fuser *f, const RelOp *op)
{
	ElemwiseFuser *e = (ElemwiseFuser *)f;
	trace_fuse(f, &e->st, &e->ref, op);
}

static FuserProps ew_properties(const Fuser *f)
{
	const ElemwiseFuser *e = (const ElemwiseFuser *)f;
	return (FuserProps){e->st.n >= 1, stats_score(&e->st)};
}

static int ew_len(const Fuser *f)
{
	return ((const ElemwiseFuser *)f)->st.n;
}

static void ew_reset(Fuser *f)
{
	stats_clear(&((ElemwiseFuser *)f)->st);
}

static void ew_clone_into(Fuser *dst, const Fuser *src)
{
	stats_own(&((ElemwiseFuser *)dst)->st);
}

static void ew_release(Fuser *f)
{
	stats_free(&((ElemwiseFuser *)f)->st);
}

const FuserVT fuser_elemwise_vt = {
	"ElementWise", FK_ELEMWISE, sizeof(ElemwiseFuser), ew_fuse, ew_properties, ew_len,
	ew_reset, ew_clone_into, ew_release,
};
