/* score.c: the one scoring function every fuser uses, and the kernel accounting
 * behind it (SPEC §3).
 *
 * U counts the tensor reads and writes of the fused ops as if each ran alone; F the
 * global reads and writes of the fused kernel: tensors read before anything in the
 * kernel produced them, plus tensors it produces that are still needed afterwards.
 * A produced tensor read ReadWrite inside the kernel is dead after that read (SPEC
 * §2), so it lives in registers and is never written. N counts the fused ops and V
 * the kernel inputs read through a reshape / swap_dims (or permute) view. */
#include "search.h"

uint64_t pass_score(int64_t u, int64_t f, int64_t n, int64_t v)
{
	int64_t saved = u - f > 0 ? u - f : 0;
	int64_t s = 100 * saved + 10 * (n - 1) - 50 * v;
	return s > 0 ? (uint64_t)s : 0;
}

static bool reads_through_view(int kind)
{
	return kind == OP_RESHAPE || kind == OP_SWAP_DIMS || kind == OP_PERMUTE;
}

void stats_add(FuseStats *s, const RelOp *op, bool count)
{
	for (int i = 0; i < op->nin; i++) {
		const RelTensor *t = &op->t[i];
		if (!iset_has(&s->produced, t->id)) {
			if (!iset_has(&s->inputs, t->id) && reads_through_view(op->kind))
				s->v++;
			iset_add(&s->inputs, t->id);
		} else if (t->status == ST_READ_WRITE) {
			iset_add(&s->freed, t->id);
		}
	}
	for (int i = 0; i < op->nout; i++)
		iset_add(&s->produced, op->t[op->nin + i].id);
	if (count) {
		int fam = ir_ops[op->kind].family;
		if (fam != FAM_VIEW && fam != FAM_REDUCE && op->kind != OP_MATMUL)
			s->traced++;
		s->n++;
		s->u += op->nin + op->nout;
	}
}

void stats_copy(FuseStats *dst, const FuseStats *src)
{
	dst->n = src->n;
	dst->u = src->u;
	dst->v = src->v;
	dst->traced = src->traced;
	iset_copy(&dst->inputs, &src->inputs);
	iset_copy(&dst->produced, &src->produced);
	iset_copy(&dst->freed, &src->freed);
}

void stats_own(FuseStats *s)
{
	iset_own(&s->inputs);
	iset_own(&s->produced);
	iset_own(&s->freed);
}

void stats_free(FuseStats *s)
{
	iset_free(&s->inputs);
	iset_free(&s->produced);
	iset_free(&s->freed);
	s->n = s->v = s->traced = 0;
	s->u = 0;
}

void stats_clear(FuseStats *s)
{
	iset_clear(&s->inputs);
	iset_clear(&s->produced);
	iset_clear(&s->freed);
	s->n = s->v = s->traced = 0;
	s->u = 0;
}

int64_t stats_global_rw(const FuseStats *s)
{
	return s->inputs.size + s->produced.size - s->freed.size;
}

/* Buffers bound if op were added: inputs, plus produced tensors not yet dead. */
int stats_bindings_after(const FuseStats *s, const RelOp *op)
{
	int extra = 0;
	for (int i = 0; i < op->nin; i++) {
		const RelTensor *t = &op->t[i];
		bool dup = false;
		for (int j = 0; j < i; j++)
			dup |= op->t[j].id == t->id;
		if (dup)
			continue;
		if (!iset_has(&s->produced, t->id) && !iset_has(&s->inputs, t->id))
			extra++;
		else if (iset_has(&s->produced, t->id) && t->status == ST_READ_WRITE &&
			 !iset_has(&s->freed, t->id))
			extra--;
	}
	extra += op->nout;
	return (int)stats_global_rw(s) + extra;
}

uint64_t stats_score(const FuseStats *s)
{
	if (s->n == 0)
		return 0;
	return pass_score(s->u, stats_global_rw(s), s->n, s->v);
}
