/* fusecrt.c: the public runtime API (fusecrt.h) over the internal one (rt.h).
 *
 * A fusecrt_plan is an RtPlan with the lists of its caller-given inputs and its
 * outputs; a session an RtSession with its plan. Host data crosses as HostTensors
 * that borrow the caller's bytes (uploads) or are copied out of (downloads), so the
 * public header needs none of the internal types. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusecrt.h"
#include "rt.h"

struct fusecrt_plan {
	RtPlan *rt;
	int *in, nin;          /* tensor indices of the inputs the caller gives */
	int *out, nout;        /* of the outputs */
};

struct fusecrt_session {
	const fusecrt_plan *p;
	RtSession *rt;
};

static int fail(fusecrt_error *e, int status, const Diag *d)
{
	if (e) {
		e->status = status;
		snprintf(e->file, sizeof e->file, "%s", d->file);
		e->line = d->line;
		e->col = d->col;
		snprintf(e->message, sizeof e->message, "%s", d->msg);
	}
	return status;
}

static void ok(fusecrt_error *e)
{
	if (e)
		memset(e, 0, sizeof *e);
}

const char *fusecrt_version(void)
{
	return "fusec " FUSEC_VERSION;
}

const char *fusecrt_plan_format(void)
{
	return "fusec-plan/1";
}

fusecrt_plan *fusecrt_plan_load(const char *path, fusecrt_error *err)
{
	Diag d = {0};
	if (!path) {
		diag_set(&d, "", 0, 0, "fusecrt_plan_load: no path");
		fail(err, FUSECRT_INVALID, &d);
		return NULL;
	}
	RtPlan *rt = rt_plan_load(path, &d);
	if (!rt) {
		fail(err, FUSECRT_INVALID, &d);
		return NULL;
	}
	fusecrt_plan *p = xcalloc(1, sizeof *p);
	p->rt = rt;
	p->in = xcalloc((size_t)rt->ntensors + 1, sizeof *p->in);
	p->out = xcalloc((size_t)rt->ntensors + 1, sizeof *p->out);
	for (int i = 0; i < rt->ntensors; i++) {
		const RtTensor *t = &rt->tensors[i];
		if (t->role == ROLE_INPUT && !t->constant)
			p->in[p->nin++] = i;
		if (t->output)
			p->out[p->nout++] = i;
	}
	ok(err);
	return p;
}

void fusecrt_plan_free(fusecrt_plan *p)
{
	if (!p)
		return;
	rt_plan_free(p->rt);
	free(p->in);
	free(p->out);
	free(p);
}

int fusecrt_plan_ninputs(const fusecrt_plan *p)
{
	return p ? p->nin : 0;
}

const char *fusecrt_plan_input(const fusecrt_plan *p, int i)
{
	return p && i >= 0 && i < p->nin ? p->rt->tensors[p->in[i]].name : NULL;
}

int fusecrt_plan_noutputs(const fusecrt_plan *p)
{
	return p ? p->nout : 0;
}

const char *fusecrt_plan_output(const fusecrt_plan *p, int i)
{
	return p && i >= 0 && i < p->nout ? p->rt->tensors[p->out[i]].name : NULL;
}

const char *fusecrt_plan_arch(const fusecrt_plan *p)
{
	return p ? p->rt->arch : "";
}

/* The tensor called name, or -1 with err filled. */
static int find(const RtPlan *rt, const char *name, fusecrt_error *err)
{
	int t = name ? rt_plan_find_tensor(rt, name) : -1;
	if (t < 0) {
		Diag d = {0};
		diag_set(&d, rt->path, 0, 0, "the plan has no tensor '%.200s'", name ? name : "(null)");
		fail(err, FUSECRT_INVALID, &d);
	}
	return t;
}

int fusecrt_plan_tensor(const fusecrt_plan *p, const char *name, const char **dtype,
			int *rank, int64_t *dims, size_t *bytes, fusecrt_error *err)
{
	int t = find(p->rt, name, err);
	if (t < 0)
		return FUSECRT_INVALID;
	const RtTensor *x = &p->rt->tensors[t];
	if (!p->rt->bound) {
		/* a plan for every size not bound yet: the fixed dims, -1 for the others */
		if (dtype)
			*dtype = ir_dtype_name(x->dtype);
		if (rank)
			*rank = x->rank;
		for (int i = 0; dims && i < x->rank; i++) {
			int64_t c;
			dims[i] = ir_dim_is_const(&x->sdim[i], &c) ? c : -1;
		}
		if (bytes)
			*bytes = 0;
		ok(err);
		return FUSECRT_OK;
	}
	if (dtype)
		*dtype = ir_dtype_name(x->dtype);
	if (rank)
		*rank = x->rank;
	if (dims)
		for (int i = 0; i < x->rank; i++)
			dims[i] = x->dim[i];
	if (bytes)
		*bytes = (size_t)x->bytes;
	ok(err);
	return FUSECRT_OK;
}

int fusecrt_plan_ndims(const fusecrt_plan *p)
{
	return p ? p->rt->ndim_names : 0;
}

const char *fusecrt_plan_dim(const fusecrt_plan *p, int i, int64_t *min, int64_t *max)
{
	if (!p || i < 0 || i >= p->rt->ndim_names)
		return NULL;
	if (min)
		*min = p->rt->dim_lo[i];
	if (max)
		*max = p->rt->dim_hi[i];
	return p->rt->dim_name[i];
}

int fusecrt_plan_bind(fusecrt_plan *p, int n, const char *const *names, const int *ranks,
		      const int64_t *dims, fusecrt_error *err)
{
	Diag d = {0};
	if (!p || n < 0 || (n && (!names || !ranks || !dims))) {
		diag_set(&d, "", 0, 0, "fusecrt_plan_bind: no plan, or no shapes");
		fail(err, FUSECRT_INVALID, &d);
		return FUSECRT_INVALID;
	}
	int64_t (*dim)[IR_MAX_RANK] = xcalloc((size_t)n + 1, sizeof *dim);
	RtStatus st = RT_OK;
	for (int k = 0; k < n && st == RT_OK; k++) {
		if (!names[k] || ranks[k] < 0 || ranks[k] > IR_MAX_RANK) {
			diag_set(&d, p->rt->path, 0, 0, "fusecrt_plan_bind: shape %d has no name or a "
				 "rank outside 0..%d", k, IR_MAX_RANK);
			st = RT_ERR_INPUT;
		}
		for (int j = 0; st == RT_OK && j < ranks[k]; j++)
			dim[k][j] = dims[(size_t)IR_MAX_RANK * (size_t)k + (size_t)j];
	}
	if (st == RT_OK && p->rt->ndim_names)
		st = rt_plan_bind_shapes(p->rt, names, ranks,
					 (const int64_t (*)[IR_MAX_RANK])dim, n, &d);
	/* every input given has the plan's shape (as bound) */
	for (int k = 0; k < n && st == RT_OK; k++) {
		int t = rt_plan_find_tensor(p->rt, names[k]);
		const RtTensor *x = t >= 0 ? &p->rt->tensors[t] : NULL;
		bool same = x && x->role == ROLE_INPUT && !x->constant && x->rank == ranks[k];
		for (int j = 0; same && j < ranks[k]; j++)
			same = x->dim[j] == dim[k][j];
		if (!same) {
			diag_set(&d, p->rt->path, 0, 0, "input '%.200s' %s", names[k],
				 !x || x->role != ROLE_INPUT || x->constant
				 ? "is not an input of the plan" : "does not have the plan's shape at "
				 "these sizes");
			st = RT_ERR_INPUT;
		}
	}
	free(dim);
	if (st != RT_OK) {
		fail(err, FUSECRT_INVALID, &d);
		return FUSECRT_INVALID;
	}
	ok(err);
	return FUSECRT_OK;
}

fusecrt_session *fusecrt_session_open(const fusecrt_plan *p, int device, fusecrt_error *err)
{
	Diag d = {0};
	RtSession *rt = NULL;
	RtStatus st = rt_session_open(&rt, p->rt, device, &d);
	if (st != RT_OK) {
		fail(err, (int)st, &d);
		return NULL;
	}
	fusecrt_session *s = xcalloc(1, sizeof *s);
	s->p = p;
	s->rt = rt;
	ok(err);
	return s;
}

const char *fusecrt_session_arch(const fusecrt_session *s)
{
	return s ? rt_session_plan(s->rt)->arch : "";
}

void fusecrt_session_close(fusecrt_session *s)
{
	if (!s)
		return;
	rt_session_close(s->rt);
	free(s);
}

/* Tensor `name` with a buffer whose size is `bytes`, or -1 with err filled. */
static int sized(fusecrt_session *s, const char *name, size_t bytes, fusecrt_error *err)
{
	int t = find(s->p->rt, name, err);
	if (t < 0)
		return -1;
	const RtTensor *x = &s->p->rt->tensors[t];
	Diag d = {0};
	if (bytes != (size_t)x->bytes) {
		diag_set(&d, s->p->rt->path, 0, 0, "tensor '%.200s' is %llu bytes, not %zu", name,
			 (unsigned long long)x->bytes, bytes);
		fail(err, FUSECRT_INVALID, &d);
		return -1;
	}
	return t;
}

int fusecrt_session_set_input(fusecrt_session *s, const char *name, const void *data,
			      size_t bytes, fusecrt_error *err)
{
	int t = sized(s, name, bytes, err);
	if (t < 0)
		return FUSECRT_INVALID;
	const RtTensor *x = &s->p->rt->tensors[t];
	HostTensor h = {.dtype = x->dtype, .rank = x->rank, .n = x->n, .data = (void *)data};
	memcpy(h.dim, x->dim, sizeof h.dim);
	Diag d = {0};
	RtStatus st = rt_session_upload(s->rt, t, &h, &d);
	if (st != RT_OK)
		return fail(err, (int)st, &d);
	ok(err);
	return FUSECRT_OK;
}

int fusecrt_session_run(fusecrt_session *s, fusecrt_error *err)
{
	Diag d = {0};
	RtStatus st = rt_session_run(s->rt, &d);
	if (st != RT_OK)
		return fail(err, (int)st, &d);
	ok(err);
	return FUSECRT_OK;
}

int fusecrt_session_run_async(fusecrt_session *s, uint64_t stream, fusecrt_error *err)
{
	Diag d = {0};
	RtStatus st = rt_session_run_on(s->rt, stream, &d);
	if (st != RT_OK)
		return fail(err, (int)st, &d);
	ok(err);
	return FUSECRT_OK;
}

int fusecrt_session_get_output(fusecrt_session *s, const char *name, void *data,
			       size_t bytes, fusecrt_error *err)
{
	int t = sized(s, name, bytes, err);
	if (t < 0)
		return FUSECRT_INVALID;
	HostTensor h = {0};
	Diag d = {0};
	RtStatus st = rt_session_download(s->rt, t, &h, &d);
	if (st != RT_OK)
		return fail(err, (int)st, &d);
	memcpy(data, h.data, bytes);
	host_free(&h);
	ok(err);
	return FUSECRT_OK;
}

int fusecrt_session_bind(fusecrt_session *s, const char *name, uint64_t devptr,
			 fusecrt_error *err)
{
	int t = find(s->p->rt, name, err);
	if (t < 0)
		return FUSECRT_INVALID;
	Diag d = {0};
	RtStatus st = rt_session_bind(s->rt, t, devptr, &d);
	if (st != RT_OK)
		return fail(err, (int)st, &d);
	ok(err);
	return FUSECRT_OK;
}

void fusecrt_session_set_graph(fusecrt_session *s, int on)
{
	rt_session_set_graph(s->rt, on != 0);
}

int fusecrt_session_graph(const fusecrt_session *s, const char **why)
{
	RtGraphInfo g;
	rt_session_graph_info(s->rt, &g);
	if (why)
		*why = g.why ? g.why : "";
	return g.mode == RT_GRAPH_ON;
}
