/* bench.c: times a plan on the device with CUDA events.
 *
 * A run is every launch of the plan, back to back on the session's stream, with an
 * event recorded before the first launch and after each one; the gap between two
 * events is one launch's time and first-to-last is the run's. Runs are issued in
 * batches without host synchronization in between (so the host's launch latency
 * hides behind the device's work), after untimed warm-up runs; reported values
 * are medians over the timed runs. Then as many runs again are timed one at a
 * time: two events around the run's launches and the host waiting for the second
 * before it issues the next run. That is the latency a caller sees, the host's
 * launch cost included, and it is how a framework's per-call timing measures.
 *
 * Then the same two figures for runs replayed as CUDA graphs (runtime.c): one graph
 * per buffer set, captured and launched once each before the timing (a graph's
 * first launch uploads it), then timed with an event before and after each
 * cuGraphLaunch, back to back and one at a time. The per-launch figures come from
 * the direct launches only: a graph replays without events between its kernels.
 *
 * When a set of buffers is small next to the L2 cache, a run would find its
 * inputs left in L2 by the previous run and report cache bandwidth. Then more
 * buffer sets are allocated (inputs copied from the uploaded ones) until they
 * span three times the L2 size, and consecutive runs rotate through them.
 *
 * Bandwidth is the bytes that must move (every input read once, every output
 * written once) over the median run time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_driver.h"

enum { EVENTS_PER_BATCH = 4096 };

void rt_bench_defaults(RtBenchOptions *o)
{
	o->warmup = 3;
	o->iters = 50;
	o->max_sets = 32;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double rt_median(double *v, int n)
{
	if (n <= 0)
		return 0;
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double min_of(const double *v, int n)
{
	double m = n > 0 ? v[0] : 0;
	for (int i = 1; i < n; i++)
		if (v[i] < m)
			m = v[i];
	return m;
}

/* Buffer sets beyond the session's own (set 0). */
typedef struct {
	int nsets;
	uint64_t **bufs;       /* [set][tensor]; set 0 is the session's */
	RtArgSlot ***slots;    /* [set][launch][arg] */
	void ****argv;         /* [set][launch] */
} Sets;

/* How many sets to rotate: enough to span 3 × L2 when one set is under 2 × L2. */
static int sets_needed(uint64_t set_bytes, int l2, int max_sets)
{
	if (l2 <= 0 || set_bytes == 0 || set_bytes >= 2 * (uint64_t)l2)
		return 1;
	uint64_t n = (3 * (uint64_t)l2 + set_bytes - 1) / set_bytes;
	if (n < 2)
		n = 2;
	if (max_sets < 1)
		max_sets = 1;
	return n > (uint64_t)max_sets ? max_sets : (int)n;
}

static void sets_free(RtSession *s, Sets *st)
{
	const RtPlan *pl = s->plan;
	for (int k = 1; k < st->nsets; k++) {
		if (st->bufs && st->bufs[k]) {
			for (int t = 0; t < pl->ntensors; t++)   /* not aliases: their owner's */
				if (st->bufs[k][t] && pl->tensors[t].buffer)
					s->drv.cuMemFree(st->bufs[k][t]);
			free(st->bufs[k]);
		}
		if (st->slots && st->slots[k]) {
			for (int l = 0; l < pl->nlaunches; l++) {
				free(st->slots[k][l]);
				free(st->argv[k][l]);
			}
			free(st->slots[k]);
			free(st->argv[k]);
		}
	}
	free(st->bufs);
	free(st->slots);
	free(st->argv);
	memset(st, 0, sizeof *st);
}

static RtStatus sets_alloc(RtSession *s, Sets *st, int nsets, Diag *d)
{
	const RtPlan *pl = s->plan;
	st->nsets = nsets;
	st->bufs = xcalloc((size_t)nsets, sizeof *st->bufs);
	st->slots = xcalloc((size_t)nsets, sizeof *st->slots);
	st->argv = xcalloc((size_t)nsets, sizeof *st->argv);
	st->bufs[0] = s->bufs;
	st->slots[0] = s->slots;
	st->argv[0] = s->argv;
	for (int k = 1; k < nsets; k++) {
		st->bufs[k] = xcalloc((size_t)pl->ntensors + 1, sizeof **st->bufs);
		st->slots[k] = xcalloc((size_t)pl->nlaunches + 1, sizeof **st->slots);
		st->argv[k] = xcalloc((size_t)pl->nlaunches + 1, sizeof **st->argv);
		for (int t = 0; t < pl->ntensors; t++) {
			const RtTensor *rt = &pl->tensors[t];
			if (!rt->buffer)
				continue;
			CUdeviceptr p = 0;
			CUresult r = s->drv.cuMemAlloc(&p, (size_t)rt->bytes);
			if (r != CUDA_SUCCESS) {
				rt_driver_fail(&s->drv, d, "cuMemAlloc_v2", r);
				return RT_ERR_DEVICE;
			}
			st->bufs[k][t] = p;
			if (rt->role == ROLE_INPUT)
				RT_CU(s, d, cuMemcpyDtoD(p, s->bufs[t], (size_t)rt->bytes));
			else
				RT_CU(s, d, cuMemsetD8(p, 0xff, (size_t)rt->bytes));
		}
		for (int t = 0; t < pl->ntensors; t++)
			if (pl->tensors[t].alias >= 0)
				st->bufs[k][t] = st->bufs[k][pl->tensors[t].alias];
		st->bufs[k][pl->ntensors] = s->bufs[pl->ntensors];   /* the shared scratch */
		for (int l = 0; l < pl->nlaunches; l++) {
			int na = pl->launches[l].nargs;
			st->slots[k][l] = rt_slots_new(&pl->launches[l]);
			st->argv[k][l] = xcalloc((size_t)na + 1, sizeof ***st->argv);
			rt_pack_args(&pl->launches[l], st->bufs[k], st->slots[k][l], st->argv[k][l]);
			RtStatus rs = rt_tmaps_encode(s, &pl->launches[l], st->bufs[k],
						      st->argv[k][l], d);
			if (rs != RT_OK)
				return rs;
		}
	}
	return RT_OK;
}

/* The timed part: o->iters runs in batches; samples into r. */
static RtStatus timed_runs(RtSession *s, const Sets *st, CUevent *ev, int per_batch,
			   RtBenchResult *r, double *lsamp, double *tsamp, Diag *d)
{
	int n = s->plan->nlaunches, ne = n + 1;
	for (int done = 0; done < r->iters;) {
		int batch = r->iters - done < per_batch ? r->iters - done : per_batch;
		for (int b = 0; b < batch; b++) {
			RtStatus rs = rt_launch_all(s, st->argv[(done + b) % st->nsets], &ev[b * ne], d);
			if (rs != RT_OK)
				return rs;
		}
		RT_CU(s, d, cuEventSynchronize(ev[batch * ne - 1]));
		for (int b = 0; b < batch; b++) {
			CUevent *e = &ev[b * ne];
			float ms;
			for (int l = 0; l < n; l++) {
				RT_CU(s, d, cuEventElapsedTime(&ms, e[l], e[l + 1]));
				lsamp[(size_t)l * (size_t)r->iters + (size_t)(done + b)] = ms;
			}
			RT_CU(s, d, cuEventElapsedTime(&ms, e[0], e[n]));
			tsamp[done + b] = ms;
		}
		done += batch;
	}
	return RT_OK;
}

/* The runs timed one at a time (the file's comment), into samp. */
static RtStatus latency_runs(RtSession *s, const Sets *st, CUevent *ev, int iters,
			     double *samp, Diag *d)
{
	for (int i = 0; i < iters; i++) {
		RT_CU(s, d, cuEventRecord(ev[0], s->stream));
		RtStatus rs = rt_launch_all(s, st->argv[i % st->nsets], NULL, d);
		if (rs != RT_OK)
			return rs;
		RT_CU(s, d, cuEventRecord(ev[1], s->stream));
		RT_CU(s, d, cuEventSynchronize(ev[1]));
		float ms;
		RT_CU(s, d, cuEventElapsedTime(&ms, ev[0], ev[1]));
		samp[i] = ms;
	}
	return RT_OK;
}

/* Capture a graph per buffer set (g[0] is the session's own) and launch each once,
 * then r->warmup more; false, with r->graph_why, when graphs are off or a capture
 * failed. */
static bool graph_warmup(RtSession *s, const Sets *st, RtGraph **g, RtBenchResult *r,
			 RtStatus *rs, Diag *d)
{
	for (int k = 0; k < st->nsets; k++)
		if (!rt_graph_prepare(s, g[k], st->bufs[k], st->argv[k])) {
			snprintf(r->graph_why, sizeof r->graph_why, "%s", s->graph_why);
			return false;
		}
	int n = st->nsets > r->warmup ? st->nsets : r->warmup;
	for (int w = 0; *rs == RT_OK && w < n; w++)
		*rs = rt_graph_launch(s, g[w % st->nsets], d);
	if (*rs == RT_OK) {
		CUresult cr = s->drv.cuCtxSynchronize();
		if (cr != CUDA_SUCCESS)
			*rs = rt_driver_fail(&s->drv, d, "cuCtxSynchronize", cr);
	}
	return *rs == RT_OK;
}

/* The graph runs: r->iters back to back in batches (an event pair around each
 * cuGraphLaunch) into tsamp, then r->iters one at a time into latsamp. */
static RtStatus graph_runs(RtSession *s, const Sets *st, RtGraph **g, CUevent *ev,
			   int per_batch, RtBenchResult *r, double *tsamp, double *latsamp,
			   Diag *d)
{
	float ms;
	for (int done = 0; done < r->iters;) {
		int batch = r->iters - done < per_batch ? r->iters - done : per_batch;
		for (int b = 0; b < batch; b++) {
			RT_CU(s, d, cuEventRecord(ev[2 * b], s->stream));
			RtStatus rs = rt_graph_launch(s, g[(done + b) % st->nsets], d);
			if (rs != RT_OK)
				return rs;
			RT_CU(s, d, cuEventRecord(ev[2 * b + 1], s->stream));
		}
		RT_CU(s, d, cuEventSynchronize(ev[2 * batch - 1]));
		for (int b = 0; b < batch; b++) {
			RT_CU(s, d, cuEventElapsedTime(&ms, ev[2 * b], ev[2 * b + 1]));
			tsamp[done + b] = ms;
		}
		done += batch;
	}
	for (int i = 0; i < r->iters; i++) {
		RT_CU(s, d, cuEventRecord(ev[0], s->stream));
		RtStatus rs = rt_graph_launch(s, g[i % st->nsets], d);
		if (rs != RT_OK)
			return rs;
		RT_CU(s, d, cuEventRecord(ev[1], s->stream));
		RT_CU(s, d, cuEventSynchronize(ev[1]));
		RT_CU(s, d, cuEventElapsedTime(&ms, ev[0], ev[1]));
		latsamp[i] = ms;
	}
	return RT_OK;
}

RtStatus rt_bench(RtSession *s, const RtBenchOptions *o, RtBenchResult *r, Diag *d)
{
	const RtPlan *pl = s->plan;
	int n = pl->nlaunches;
	memset(r, 0, sizeof *r);
	r->iters = o->iters > 0 ? o->iters : 1;
	r->warmup = o->warmup > 0 ? o->warmup : 0;
	r->nlaunches = n;
	r->bytes_in = rt_plan_bytes_in(pl);
	r->bytes_out = rt_plan_bytes_out(pl);
	r->launch_ms = xcalloc((size_t)n + 1, sizeof *r->launch_ms);
	r->launch_min_ms = xcalloc((size_t)n + 1, sizeof *r->launch_min_ms);

	uint64_t set_bytes = 0;
	for (int t = 0; t < pl->ntensors; t++)
		if (pl->tensors[t].buffer)
			set_bytes += pl->tensors[t].bytes;
	Sets st = {0};
	RtStatus rs = sets_alloc(s, &st, sets_needed(set_bytes, s->dev.l2_bytes, o->max_sets), d);
	r->nsets = st.nsets;

	int per_batch = EVENTS_PER_BATCH / (n + 1);
	if (per_batch < 1)
		per_batch = 1;
	if (per_batch > r->iters)
		per_batch = r->iters;
	int nev = per_batch * (n + 1 > 2 ? n + 1 : 2);   /* graph_runs: a pair per run */
	CUevent *ev = xcalloc((size_t)nev, sizeof *ev);
	int created = 0;
	for (int i = 0; rs == RT_OK && i < nev; i++) {
		CUresult cr = s->drv.cuEventCreate(&ev[i], CU_EVENT_DEFAULT);
		if (cr != CUDA_SUCCESS)
			rs = rt_driver_fail(&s->drv, d, "cuEventCreate", cr);
		else
			created++;
	}

	for (int w = 0; rs == RT_OK && w < r->warmup; w++)
		rs = rt_launch_all(s, st.argv[w % st.nsets], NULL, d);
	if (rs == RT_OK) {
		CUresult cr = s->drv.cuCtxSynchronize();
		if (cr != CUDA_SUCCESS)
			rs = rt_driver_fail(&s->drv, d, "cuCtxSynchronize", cr);
	}

	double *lsamp = xcalloc((size_t)n * (size_t)r->iters + 1, sizeof *lsamp);
	double *tsamp = xcalloc((size_t)r->iters, sizeof *tsamp);
	if (rs == RT_OK)
		rs = timed_runs(s, &st, ev, per_batch, r, lsamp, tsamp, d);
	double *latsamp = xcalloc((size_t)r->iters, sizeof *latsamp);
	if (rs == RT_OK)
		rs = latency_runs(s, &st, ev, r->iters, latsamp, d);
	if (rs == RT_OK) {
		for (int l = 0; l < n; l++) {
			double *v = &lsamp[(size_t)l * (size_t)r->iters];
			r->launch_min_ms[l] = min_of(v, r->iters);
			r->launch_ms[l] = rt_median(v, r->iters);
		}
		r->total_min_ms = min_of(tsamp, r->iters);
		r->total_ms = rt_median(tsamp, r->iters);
		if (r->total_ms > 0)
			r->gbps = (double)(r->bytes_in + r->bytes_out) / (r->total_ms * 1e6);
		r->latency_min_ms = min_of(latsamp, r->iters);
		r->latency_ms = rt_median(latsamp, r->iters);
	}

	RtGraph **g = xcalloc((size_t)st.nsets + 1, sizeof *g);
	for (int k = 0; k < st.nsets; k++) {
		g[k] = k ? xcalloc(1, sizeof **g) : &s->graph;
		if (k)
			g[k]->bound = xcalloc((size_t)pl->ntensors + 1, sizeof *g[k]->bound);
	}
	if (rs == RT_OK && graph_warmup(s, &st, g, r, &rs, d))
		rs = graph_runs(s, &st, g, ev, per_batch, r, tsamp, latsamp, d);
	if (rs == RT_OK && !r->graph_why[0]) {
		r->graph = true;
		r->graph_total_min_ms = min_of(tsamp, r->iters);
		r->graph_total_ms = rt_median(tsamp, r->iters);
		r->graph_latency_min_ms = min_of(latsamp, r->iters);
		r->graph_latency_ms = rt_median(latsamp, r->iters);
	}
	for (int k = 1; k < st.nsets; k++) {
		rt_graph_release(s, g[k]);
		free(g[k]->bound);
		free(g[k]);
	}
	free(g);
	free(latsamp);
	free(lsamp);
	free(tsamp);
	for (int i = 0; i < created; i++)
		s->drv.cuEventDestroy(ev[i]);
	free(ev);
	sets_free(s, &st);
	if (rs != RT_OK)
		rt_bench_result_free(r);
	return rs;
}

void rt_bench_result_free(RtBenchResult *r)
{
	free(r->launch_ms);
	free(r->launch_min_ms);
	r->launch_ms = r->launch_min_ms = NULL;
}

static const char *human_bytes(uint64_t b, char *buf, size_t size)
{
	if (b < 1024)
		snprintf(buf, size, "%llu B", (unsigned long long)b);
	else if (b < 1024 * 1024)
		snprintf(buf, size, "%.1f KiB", (double)b / 1024);
	else if (b < (uint64_t)1024 * 1024 * 1024)
		snprintf(buf, size, "%.1f MiB", (double)b / (1024.0 * 1024));
	else
		snprintf(buf, size, "%.2f GiB", (double)b / (1024.0 * 1024 * 1024));
	return buf;
}

void rt_bench_report(Buf *b, const RtSession *s, const RtBenchResult *r)
{
	const RtPlan *pl = s->plan;
	const RtDeviceInfo *dv = &s->dev;
	char h1[32], h2[32], h3[32], g[48], bl[48];
	buf_printf(b, "device %d: %s (sm_%d%d, %d SMs, L2 %s), driver %d.%d\n", dv->ordinal,
		   dv->name, dv->cc_major, dv->cc_minor, dv->sms,
		   human_bytes((uint64_t)(dv->l2_bytes > 0 ? dv->l2_bytes : 0), h1, sizeof h1),
		   dv->driver_version / 1000, dv->driver_version % 1000 / 10);
	rt_session_arch_line(s, b);
	buf_printf(b, "bench: %d warm-up, %d timed runs (median), %d buffer set%s rotated\n",
		   r->warmup, r->iters, r->nsets, r->nsets == 1 ? "" : "s");
	buf_printf(b, "%-6s %-6s %-24s %-16s %-14s %12s %12s %10s\n", "launch", "step", "kernel",
		   "grid", "block", "median_us", "min_us", "bound_GB/s");
	for (int i = 0; i < r->nlaunches; i++) {
		const RtLaunch *l = &pl->launches[i];
		snprintf(g, sizeof g, "[%u,%u,%u]", l->grid[0], l->grid[1], l->grid[2]);
		snprintf(bl, sizeof bl, "[%u,%u,%u]", l->block[0], l->block[1], l->block[2]);
		double ms = r->launch_ms[i];
		double gbps = ms > 0 ? (double)rt_launch_bytes(pl, l) / (ms * 1e6) : 0;
		buf_printf(b, "%-6d %-6d %-24s %-16s %-14s %12.2f %12.2f %10.1f\n", i, l->step,
			   pl->kernels[l->kernel].name, g, bl, ms * 1e3, r->launch_min_ms[i] * 1e3,
			   gbps);
	}
	buf_printf(b, "total: median %.2f us, min %.2f us (direct launches, back to back, an "
		   "event after each)\n", r->total_ms * 1e3, r->total_min_ms * 1e3);
	buf_printf(b, "latency: median %.2f us, min %.2f us (direct launches, one run at a time, "
		   "launch cost included)\n", r->latency_ms * 1e3, r->latency_min_ms * 1e3);
	if (r->graph) {
		buf_printf(b, "graph total: median %.2f us, min %.2f us (replayed as a CUDA graph, "
			   "back to back)\n", r->graph_total_ms * 1e3, r->graph_total_min_ms * 1e3);
		buf_printf(b, "graph latency: median %.2f us, min %.2f us (replayed as a CUDA graph, "
			   "one run at a time, launch cost included)\n", r->graph_latency_ms * 1e3,
			   r->graph_latency_min_ms * 1e3);
	} else {
		buf_printf(b, "graph: not timed: %s\n", r->graph_why);
	}
	buf_printf(b, "bytes that must move: %s (inputs %s + outputs %s)\n",
		   human_bytes(r->bytes_in + r->bytes_out, h1, sizeof h1),
		   human_bytes(r->bytes_in, h2, sizeof h2), human_bytes(r->bytes_out, h3, sizeof h3));
	buf_printf(b, "bandwidth: %.1f GB/s\n", r->gbps);
}

/* ---- one call ------------------------------------------------------------- */

RtStatus rt_cuda_bench(const char *plan_path, const RtNamed *inputs, int ninputs,
		       const RtBenchOptions *o, Buf *report, Diag *d)
{
	RtPlan *pl;
	RtSession *s;
	RtBenchResult r = {0};
	RtStatus st = rt_open_and_upload(plan_path, inputs, ninputs, &pl, &s, d);
	if (st == RT_OK)
		st = rt_bench(s, o, &r, d);
	if (st == RT_OK)
		rt_bench_report(report, s, &r);
	rt_bench_result_free(&r);
	rt_session_close(s);
	rt_plan_free(pl);
	return st;
}
