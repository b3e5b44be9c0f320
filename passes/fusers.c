/* fusers.c: the fuser registry and what every fuser shares.
 *
 * A fuser is a vtable plus state (search.h). The registry lists them in SPEC §3
 * order; adding a fuser is one file and one line in `registry`. fuser_fuse wraps
 * the per-fuser `fuse` so that every fuser ignores ops once closed and remembers
 * the op it closed on, which the record and the block head settlement need. */
#include <stdlib.h>
#include <string.h>

#include "search.h"

static const FuserVT *const registry[] = {
	&fuser_elemwise_vt,
	&fuser_matmul_vt,
	&fuser_reduce_vt,
	&fuser_reduce_bcast_vt,
	&fuser_nhwc_vt,
};

/* ORDER REASON */
static const char *const close_reason_names[] = {
	"none", "not-elementwise", "shape-mismatch", "max-ops", "max-bindings",
	"view-of-intermediate", "view-unsupported", "not-matmul", "second-matmul",
	"second-reduction", "broadcast-after-reduction", "axis-mismatch", "view-first-use",
	"view-lowers-rank", "pool-taken", "after-attention",
	"siblings-mix",
};
_Static_assert(COUNTOF(registry) == 5, "pass_nhwc_fuser: NHWCRelayout is registry[4]");
_Static_assert(COUNTOF(close_reason_names) == CR_COUNT_, "close_reason_names: one per CloseReason");

const char *pass_close_reason(CloseReason r)
{
	return (unsigned)r < CR_COUNT_ ? close_reason_names[r] : "?";
}

bool rel_output_compatible(const RelTensor *ref, const RelTensor *out, bool grow,
			   RelTensor *grown)
{
	*grown = *ref;
	if (ref->rank != out->rank)
		return false;
	bool grew = false;
	for (int d = 0; d < ref->rank; d++) {
		if (ref->shape[d] == out->shape[d] || out->shape[d] == 0)
			continue;
		if (ref->shape[d] == 0 && grow) {
			grown->shape[d] = out->shape[d];
			grew = true;
			continue;
		}
		return false;
	}
	if (grew) {
		if (!ir_rel_shape_equal(grown, out))
			return false;
		*grown = *out;
	}
	return true;
}

int pass_nhwc_fuser(void)
{
	return 4;
}

/* NHWCRelayout competes only under --burn-exact: on the H200 its relayout made
 * every pooling graph slower (docs/burn-fidelity.md row 11, docs/benchmarks.md
 * "NHWCRelayout"), so by default the search runs the four other fusers. */
int fusers_active(bool burn_exact)
{
	return burn_exact ? fusers_count() : pass_nhwc_fuser();
}

int fusers_count(void)
{
	return (int)(sizeof registry / sizeof registry[0]);
}

int pass_nfusers(void)
{
	return fusers_count();
}

const char *pass_fuser_name(int i)
{
	return i >= 0 && i < fusers_count() ? registry[i]->name : "none";
}

FuserKind pass_fuser_kind(int i)
{
	return i >= 0 && i < fusers_count() ? registry[i]->kind : FK_NONE;
}

Fuser *fuser_new(int i, int max_bindings)
{
	const FuserVT *vt = registry[i];
	Fuser *f = xcalloc(1, vt->size);
	f->vt = vt;
	f->max_bindings = max_bindings;
	f->closed_at = -1;
	return f;
}

Fuser *fuser_clone(const Fuser *f)
{
	Fuser *c = xmalloc(f->vt->size);
	memcpy(c, f, f->vt->size);
	f->vt->clone_into(c, f);
	return c;
}

void fuser_free(Fuser *f)
{
	if (!f)
		return;
	f->vt->release(f);
	free(f);
}

void fuser_close(Fuser *f, CloseReason r)
{
	f->status = FS_CLOSED;
	f->reason = r;
}

void fuser_fuse(Fuser *f, const RelOp *op)
{
	if (f->status == FS_OPEN) {
		f->vt->fuse(f, op);
		if (f->status == FS_CLOSED)
			f->closed_at = f->seen;
	}
	f->seen++;
}

void fuser_reset(Fuser *f)
{
	f->vt->reset(f);
	f->status = FS_OPEN;
	f->reason = CR_NONE;
	f->seen = 0;
	f->closed_at = -1;
}
