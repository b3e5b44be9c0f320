/* check.c: the comparison of `fusec run --check` (docs/tolerances.md).
 *
 * The reference interpreter gives, beside every output element, an error bound
 * (interp_run_bounds: a first-order model of how far a correct kernel may be from
 * the exact f64 result, built op by op from the magnitudes of what was summed and
 * the ulps of each op). check_compare holds each element to its bound, or to a
 * flat atol + rtol·|want| when the user gives one, and keeps the worst elements
 * for the report. An element whose bound is +inf is not checked, and an output
 * with such an element is `not checked`, never `ok`. */
#include <math.h>
#include <string.h>

#include "host.h"

/* Insert e among r's worst elements: larger ratio first, then lower index. */
static void keep_worst(CheckResult *r, CheckElem e)
{
	int k = r->nworst;
	if (k == CHECK_WORST) {
		if (!(e.ratio > r->worst[k - 1].ratio))
			return;
		k--;
	} else {
		r->nworst++;
	}
	while (k > 0 && e.ratio > r->worst[k - 1].ratio) {
		r->worst[k] = r->worst[k - 1];
		k--;
	}
	r->worst[k] = e;
}

void check_compare(const HostTensor *got, const HostTensor *want, const HostTensor *bound,
		   double atol, double rtol, CheckResult *r)
{
	memset(r, 0, sizeof *r);
	bool same = got->dtype == want->dtype && got->rank == want->rank && got->n == want->n;
	for (int i = 0; same && i < got->rank; i++)
		same = got->dim[i] == want->dim[i];
	if (!same || (bound && bound->n != want->n)) {
		r->nbad = want->n ? want->n : 1;
		r->max_abs = r->max_ratio = INFINITY;
		r->status = CHECK_FAIL;
		return;
	}
	for (int64_t i = 0; i < got->n; i++) {
		double g = host_get(got, i), w = host_get(want, i), err;
		double b = bound ? host_get(bound, i) : atol + rtol * (isfinite(w) ? fabs(w) : 0);
		bool special = !isfinite(g) || !isfinite(w);
		if (special)
			err = (isnan(g) && isnan(w)) || g == w ? 0 : INFINITY;
		else
			err = fabs(g - w);
		if (!special && err > r->max_abs)
			r->max_abs = err;
		if (isinf(b) && !special) {
			r->nunbounded++;
			continue;
		}
		if (err == 0)
			continue;
		double ratio = special || !(b > 0) ? INFINITY : err / b;
		if (ratio > r->max_ratio)
			r->max_ratio = ratio;
		if (ratio > 1)
			r->nbad++;
		keep_worst(r, (CheckElem){i, g, w, b, ratio});
	}
	r->ok = r->nbad == 0;
	r->status = !r->ok ? CHECK_FAIL : r->nunbounded ? CHECK_NOT_CHECKED : CHECK_OK;
}

const char *check_status_name(CheckStatus s)
{
	switch (s) {
	case CHECK_OK: return "ok";
	case CHECK_FAIL: return "FAIL";
	case CHECK_NOT_CHECKED: return "not checked";
	}
	return "?";
}
