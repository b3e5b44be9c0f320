/* fuser_probe.c: which fusers take an op kind (`fusec ops`).
 *
 * Asked of the fusers themselves, not written down a second time: a fresh clone of
 * each fuser is offered a small op of the kind (rank-2 f32 operands of one shape,
 * reductions on the last axis); if it stays open, it takes the kind as a first op.
 * Otherwise it is offered a matmul first and then the op: if it stays open, it
 * takes the kind after a matmul (an epilogue). pass_fusers_ending offers an exp and
 * then the op at its input's last use: a fuser that counts it without taking it
 * first takes it to end its trace (NHWCRelayout and the pools). */
#include <string.h>

#include "search.h"

static void probe_op(RelOp *op, RelTensor *t, int kind, int first_id)
{
	const OpInfo *info = &ir_ops[kind];
	int nin = info->nin_min > 0 ? info->nin_min : 0;
	memset(op, 0, sizeof *op);
	op->kind = (uint16_t)kind;
	op->nin = (uint8_t)nin;
	op->nout = info->nin_max == 0 && info->family == FAM_CONTROL ? 0 : 1;
	op->t = t;
	for (int i = 0; i < nin + op->nout; i++) {
		memset(&t[i], 0, sizeof t[i]);
		t[i].id = i < nin ? first_id + i : 1000 + i;
		t[i].dtype = DT_F32;
		t[i].rank = 2;
		t[i].shape[0] = 1;
		t[i].shape[1] = 3;
		t[i].status = ST_READ_ONLY;
	}
	if (info->family == FAM_REDUCE)
		t[nin].shape[1] = 0;   /* the reduced dim keeps size 1 */
	op->attr.axis = 1;
}

unsigned pass_fusers_taking(int kind, bool burn_exact, unsigned *after_matmul)
{
	unsigned first = 0, epi = 0;
	RelTensor t[IR_MAX_IN + 1], mt[3];
	RelOp op, mm;
	for (int f = 0; f < fusers_active(burn_exact); f++) {
		Fuser *fu = fuser_new(f, 32);
		fu->burn_exact = burn_exact;
		probe_op(&op, t, kind, 0);
		fuser_fuse(fu, &op);
		if (fu->status == FS_OPEN) {
			first |= 1u << f;
			fuser_free(fu);
			continue;
		}
		fuser_free(fu);
		/* a matmul [1,2]x[2,3] -> [1,3] (shape ids), then the op reading its result */
		fu = fuser_new(f, 32);
		fu->burn_exact = burn_exact;
		probe_op(&mm, mt, OP_MATMUL, 100);
		mt[0].shape[1] = 2;
		mt[1].shape[0] = 2;
		mt[2].id = 102;
		fuser_fuse(fu, &mm);
		if (fu->status == FS_OPEN) {
			probe_op(&op, t, kind, 102);
			fuser_fuse(fu, &op);
			if (fu->status == FS_OPEN)
				epi |= 1u << f;
		}
		fuser_free(fu);
	}
	if (after_matmul)
		*after_matmul = epi;
	return first;
}

unsigned pass_fusers_ending(int kind, bool burn_exact)
{
	unsigned ending = 0, first = pass_fusers_taking(kind, burn_exact, NULL);
	RelTensor t[IR_MAX_IN + 1], et[2];
	RelOp op, ex;
	for (int f = 0; f < fusers_active(burn_exact); f++) {
		if (first & (1u << f))
			continue;
		Fuser *fu = fuser_new(f, 32);
		fu->burn_exact = burn_exact;
		probe_op(&ex, et, OP_EXP, 0);
		et[1].id = 50;
		fuser_fuse(fu, &ex);
		int before = fu->vt->len(fu);
		if (fu->status == FS_OPEN && before == 1) {
			probe_op(&op, t, kind, 50);
			if (op.nin > 0)
				t[0].status = ST_READ_WRITE;
			fuser_fuse(fu, &op);
			if (fu->vt->len(fu) == before + 1)
				ending |= 1u << f;
		}
		fuser_free(fu);
	}
	return ending;
}
