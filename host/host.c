/* host.c: host tensors, dtype conversion through double, the seeded PRNG and the
 * error comparison used by the reference interpreter and `fusec run`.
 *
 * f16 and bf16 are converted here by hand rather than through the compiler's
 * _Float16, so that the rounding is visibly round-to-nearest-even from a double
 * in one step (no double rounding through float). A finite double is split by
 * frexp, its significand scaled to the target's precision, and rint() (ties to
 * even in the default rounding mode) does the rounding; a carry out of the
 * significand bumps the exponent, past the largest exponent is infinity, and
 * below the smallest normal the value is counted in units of the subnormal step. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "host.h"

int host_alloc(HostTensor *t, DType dtype, int rank, const int64_t *dim, Diag *d)
{
	memset(t, 0, sizeof *t);
	if (rank < 0 || rank > IR_MAX_RANK) {
		diag_set(d, "", 0, 0, "tensor rank %d is out of range", rank);
		return -1;
	}
	int64_t n = 1;
	for (int i = 0; i < rank; i++) {
		if (dim[i] < 0 || __builtin_mul_overflow(n, dim[i], &n)) {
			diag_set(d, "", 0, 0, "tensor size overflows");
			return -1;
		}
		t->dim[i] = dim[i];
	}
	size_t bytes;
	if (__builtin_mul_overflow((uint64_t)n, (uint64_t)ir_dtype_size(dtype), &bytes) ||
	    bytes > ((size_t)1 << 40)) {
		diag_set(d, "", 0, 0, "tensor of %lld elements is too large", (long long)n);
		return -1;
	}
	t->data = calloc(bytes ? bytes : 1, 1);
	if (!t->data) {
		diag_set(d, "", 0, 0, "out of memory allocating %zu bytes", bytes);
		return -1;
	}
	t->dtype = dtype;
	t->rank = rank;
	t->n = n;
	return 0;
}

void host_free(HostTensor *t)
{
	free(t->data);
	memset(t, 0, sizeof *t);
}

const char *host_shape_text(DType dtype, int rank, const int64_t *dim, char *buf, size_t size)
{
	snprintf(buf, size, "%s%s", ir_dtype_name(dtype), ir_shape_text(rank, dim).s);
	return buf;
}

/* ---- f16 / bf16 ------------------------------------------------------------ */

/* Round |v| (finite or not) into a binary format with `mbits` stored significand
 * bits and `ebits` exponent bits; returns the bit pattern with the sign. */
static uint32_t small_float_bits(double v, int mbits, int ebits)
{
	uint32_t sign = signbit(v) ? 1u << (mbits + ebits) : 0;
	uint32_t inf = ((1u << ebits) - 1) << mbits;
	int bias = (1 << (ebits - 1)) - 1, emin = 1 - bias;
	if (isnan(v))
		return sign | inf | 1u << (mbits - 1);
	double a = fabs(v);
	if (isinf(a))
		return sign | inf;
	if (a < ldexp(1.0, emin))
		return sign | (uint32_t)rint(ldexp(a, mbits - emin));
	int e;
	double m = frexp(a, &e);
	double q = rint(ldexp(m, mbits + 1));
	if (q == ldexp(1.0, mbits + 1)) {
		q /= 2;
		e++;
	}
	int exp = e - 1;
	if (exp > bias)
		return sign | inf;
	return sign | (uint32_t)(exp + bias) << mbits | ((uint32_t)q - (1u << mbits));
}

static double small_float_value(uint32_t bits, int mbits, int ebits)
{
	int bias = (1 << (ebits - 1)) - 1;
	uint32_t e = (bits >> mbits) & ((1u << ebits) - 1);
	uint32_t m = bits & ((1u << mbits) - 1);
	double s = bits >> (mbits + ebits) & 1 ? -1.0 : 1.0;
	if (e == (1u << ebits) - 1)
		return m ? NAN : s * INFINITY;
	if (e == 0)
		return s * ldexp((double)m, 1 - bias - mbits);
	return s * ldexp((double)(m | 1u << mbits), (int)e - bias - mbits);
}

uint16_t host_f16_bits(double v) { return (uint16_t)small_float_bits(v, 10, 5); }
double host_f16_value(uint16_t bits) { return small_float_value(bits, 10, 5); }
uint16_t host_bf16_bits(double v) { return (uint16_t)small_float_bits(v, 7, 8); }
double host_bf16_value(uint16_t bits) { return small_float_value(bits, 7, 8); }

/* ---- element access -------------------------------------------------------- */

int64_t host_wrap_int(DType dtype, int64_t v)
{
	switch (dtype) {
	case DT_I32: return (int32_t)(uint32_t)(uint64_t)v;
	case DT_I16: return (int16_t)(uint16_t)(uint64_t)v;
	case DT_I8: return (int8_t)(uint8_t)(uint64_t)v;
	case DT_U8: return (uint8_t)(uint64_t)v;
	case DT_BOOL: return v != 0;
	default: return v;
	}
}

/* Float to integer as a kernel's cvt.rzi.sat does: truncate, saturate, NaN to 0. */
int64_t host_to_int(DType dtype, double v)
{
	if (dtype == DT_BOOL)
		return v != 0;
	if (isnan(v))
		return 0;
	double lo, hi;
	switch (dtype) {
	case DT_I32: lo = INT32_MIN; hi = INT32_MAX; break;
	case DT_I16: lo = INT16_MIN; hi = INT16_MAX; break;
	case DT_I8: lo = INT8_MIN; hi = INT8_MAX; break;
	case DT_U8: lo = 0; hi = UINT8_MAX; break;
	default:
		if (v >= 0x1p63)
			return INT64_MAX;
		if (v < -0x1p63)
			return INT64_MIN;
		return (int64_t)v;
	}
	v = trunc(v);
	return (int64_t)(v < lo ? lo : v > hi ? hi : v);
}

double host_round(DType dtype, double v)
{
	switch (dtype) {
	case DT_F64: return v;
	case DT_F32: return (double)(float)v;
	case DT_F16: return host_f16_value(host_f16_bits(v));
	case DT_BF16: return host_bf16_value(host_bf16_bits(v));
	default: return (double)host_to_int(dtype, v);
	}
}

double host_get(const HostTensor *t, int64_t i)
{
	const void *p = t->data;
	switch (t->dtype) {
	case DT_F64: return ((const double *)p)[i];
	case DT_F32: return ((const float *)p)[i];
	case DT_F16: return host_f16_value(((const uint16_t *)p)[i]);
	case DT_BF16: return host_bf16_value(((const uint16_t *)p)[i]);
	case DT_I64: return (double)((const int64_t *)p)[i];
	case DT_I32: return ((const int32_t *)p)[i];
	case DT_I16: return ((const int16_t *)p)[i];
	case DT_I8: return ((const int8_t *)p)[i];
	case DT_U8: return ((const uint8_t *)p)[i];
	case DT_BOOL: return ((const uint8_t *)p)[i] != 0;
	case DT_COUNT: break;
	}
	die("bad dtype %d", (int)t->dtype);
}

int64_t host_get_i64(const HostTensor *t, int64_t i)
{
	const void *p = t->data;
	switch (t->dtype) {
	case DT_I64: return ((const int64_t *)p)[i];
	case DT_I32: return ((const int32_t *)p)[i];
	case DT_I16: return ((const int16_t *)p)[i];
	case DT_I8: return ((const int8_t *)p)[i];
	case DT_U8: return ((const uint8_t *)p)[i];
	case DT_BOOL: return ((const uint8_t *)p)[i] != 0;
	default: return host_to_int(DT_I64, host_get(t, i));
	}
}

void host_set_i64(HostTensor *t, int64_t i, int64_t v)
{
	void *p = t->data;
	switch (t->dtype) {
	case DT_I64: ((int64_t *)p)[i] = v; break;
	case DT_I32: ((int32_t *)p)[i] = (int32_t)host_wrap_int(DT_I32, v); break;
	case DT_I16: ((int16_t *)p)[i] = (int16_t)host_wrap_int(DT_I16, v); break;
	case DT_I8: ((int8_t *)p)[i] = (int8_t)host_wrap_int(DT_I8, v); break;
	case DT_U8: ((uint8_t *)p)[i] = (uint8_t)host_wrap_int(DT_U8, v); break;
	case DT_BOOL: ((uint8_t *)p)[i] = v != 0; break;
	default: host_set(t, i, (double)v); break;
	}
}

void host_set(HostTensor *t, int64_t i, double v)
{
	void *p = t->data;
	switch (t->dtype) {
	case DT_F64: ((double *)p)[i] = v; break;
	case DT_F32: ((float *)p)[i] = (float)v; break;
	case DT_F16: ((uint16_t *)p)[i] = host_f16_bits(v); break;
	case DT_BF16: ((uint16_t *)p)[i] = host_bf16_bits(v); break;
	case DT_COUNT: die("bad dtype");
	default: host_set_i64(t, i, host_to_int(t->dtype, v)); break;
	}
}

/* ---- random fill ----------------------------------------------------------- */

uint64_t host_rng_next(HostRng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void host_rng_init(HostRng *r, uint64_t seed, uint64_t stream)
{
	r->s = seed;
	r->s = host_rng_next(r) ^ (stream * 0xd1b54a32d192ed03ULL);
	host_rng_next(r);
}

uint64_t host_input_stream(const char *name)
{
	return hash_bytes(HASH_SEED, name, strlen(name));
}

double host_rng_unit(HostRng *r)
{
	return (double)(host_rng_next(r) >> 11) * 0x1p-53;
}

void host_default_range(DType dtype, double *lo, double *hi)
{
	if (ir_dtype_is_float(dtype)) {
		*lo = -1;
		*hi = 1;
	} else if (dtype == DT_BOOL) {
		*lo = 0;
		*hi = 1;
	} else if (dtype == DT_U8) {
		*lo = 0;
		*hi = 9;
	} else {
		*lo = -5;
		*hi = 5;
	}
}

void host_fill_random(HostTensor *t, HostRng *r, double lo, double hi)
{
	if (ir_dtype_is_float(t->dtype)) {
		for (int64_t i = 0; i < t->n; i++)
			host_set(t, i, lo + (hi - lo) * host_rng_unit(r));
		return;
	}
	int64_t a = (int64_t)ceil(lo), b = (int64_t)floor(hi);
	uint64_t span = b >= a ? (uint64_t)b - (uint64_t)a + 1 : 1;
	for (int64_t i = 0; i < t->n; i++) {
		uint64_t x = span ? host_rng_next(r) % span : host_rng_next(r);
		host_set_i64(t, i, (int64_t)((uint64_t)a + x));
	}
}

/* ---- comparison ------------------------------------------------------------ */

void host_compare(const HostTensor *got, const HostTensor *want, double atol, double rtol,
		  HostCompare *out)
{
	memset(out, 0, sizeof *out);
	out->first_bad = -1;
	bool same = got->dtype == want->dtype && got->rank == want->rank && got->n == want->n;
	for (int i = 0; same && i < got->rank; i++)
		same = got->dim[i] == want->dim[i];
	if (!same) {
		out->nbad = want->n ? want->n : 1;
		out->first_bad = 0;
		out->max_abs = out->max_rel = INFINITY;
		return;
	}
	for (int64_t i = 0; i < got->n; i++) {
		double g = host_get(got, i), w = host_get(want, i), err;
		if (isnan(g) || isnan(w))
			err = isnan(g) && isnan(w) ? 0 : INFINITY;
		else if (isinf(g) || isinf(w))
			err = g == w ? 0 : INFINITY;
		else
			err = fabs(g - w);
		if (err > out->max_abs)
			out->max_abs = err;
		if (w != 0 && !isnan(w) && err / fabs(w) > out->max_rel)
			out->max_rel = err / fabs(w);
		if (!(err <= atol + rtol * (isfinite(w) ? fabs(w) : 0))) {
			if (out->nbad++ == 0)
				out->first_bad = i;
		}
	}
	out->ok = out->nbad == 0;
}

/* ---- memory ---------------------------------------------------------------- */

/* The value of "KEY: N kB" in a /proc file, in bytes; -1 when absent. */
static int64_t proc_kb(const char *file, const char *key)
{
	FILE *f = fopen(file, "r");
	if (!f)
		return -1;
	char line[256];
	int64_t v = -1;
	size_t n = strlen(key);
	while (v < 0 && fgets(line, sizeof line, f))
		if (!strncmp(line, key, n) && line[n] == ':')
			v = strtoll(line + n + 1, NULL, 10) * 1024;
	fclose(f);
	return v;
}

/* One number from a file, or -1 ("max" and unreadable files alike). */
static int64_t file_number(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char line[64] = "";
	bool ok = fgets(line, sizeof line, f) && line[0] >= '0' && line[0] <= '9';
	fclose(f);
	return ok ? strtoll(line, NULL, 10) : -1;
}

static void mem_lower(uint64_t *avail, const char **what, uint64_t v, const char *why)
{
	if (v < *avail) {
		*avail = v;
		*what = why;
	}
}

/* The value of "KEY N" in a cgroup's memory.stat; 0 when absent. */
static int64_t stat_value(const char *file, const char *key)
{
	FILE *f = fopen(file, "r");
	if (!f)
		return 0;
	char line[256];
	int64_t v = 0;
	size_t n = strlen(key);
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, key, n) && line[n] == ' ')
			v = strtoll(line + n + 1, NULL, 10);
	fclose(f);
	return v;
}

/* Lower *avail to the room under a cgroup's limit: the group at base/path, and
 * each one above it up to base itself. Its page cache (cache_key in memory.stat)
 * counts as room: the kernel reclaims it before it fails an allocation. */
static void cgroup_bound(const char *base, char *path, const char *max_file,
			 const char *cur_file, const char *cache_key, uint64_t *avail,
			 const char **what)
{
	char file[1400];
	for (;;) {
		snprintf(file, sizeof file, "%s%s/%s", base, path, max_file);
		int64_t max = file_number(file);
		snprintf(file, sizeof file, "%s%s/%s", base, path, cur_file);
		int64_t cur = file_number(file);
		if (cur >= 0) {
			snprintf(file, sizeof file, "%s%s/memory.stat", base, path);
			int64_t cache = stat_value(file, cache_key);
			cur = cur > cache ? cur - cache : 0;
		}
		if (max >= 0 && cur >= 0)
			mem_lower(avail, what, max > cur ? (uint64_t)(max - cur) : 0,
				  "the cgroup's memory limit");
		char *slash = strrchr(path, '/');
		if (!slash)
			break;
		*slash = 0;     /* "/a/b" -> "/a" -> "" (base itself) */
	}
}

uint64_t host_mem_available(const char **what)
{
	uint64_t avail = UINT64_MAX;
	*what = "unknown";
	int64_t mem = proc_kb("/proc/meminfo", "MemAvailable");
	int64_t swap = proc_kb("/proc/meminfo", "SwapFree");
	long page = sysconf(_SC_PAGESIZE);
	if (mem < 0 && sysconf(_SC_AVPHYS_PAGES) > 0 && page > 0)
		mem = (int64_t)sysconf(_SC_AVPHYS_PAGES) * page;
	if (mem >= 0)
		mem_lower(&avail, what, (uint64_t)mem + (uint64_t)(swap > 0 ? swap : 0),
			  swap > 0 ? "MemAvailable + SwapFree" : "MemAvailable");
	/* the limit of this process's memory cgroup and of every group above it, v2
	 * ("0::/PATH") or v1 ("N:memory:/PATH"; in a container the mount's root is the
	 * container's group) */
	FILE *f = fopen("/proc/self/cgroup", "r");
	char line[1024];
	while (f && fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = 0;
		char *p = strchr(line, ':');
		char *q = p ? strchr(p + 1, ':') : NULL;
		if (!q || q[1] != '/')
			continue;
		bool v2 = !strncmp(line, "0::", 3);
		if (v2 || (q - p - 1 == 6 && !strncmp(p + 1, "memory", 6)))
			cgroup_bound(v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory", q + 1,
				     v2 ? "memory.max" : "memory.limit_in_bytes",
				     v2 ? "memory.current" : "memory.usage_in_bytes",
				     v2 ? "file" : "total_cache", &avail, what);
	}
	if (f)
		fclose(f);
	/* the process's own limits, less what it has mapped already */
	long size = -1, data = -1;
	f = fopen("/proc/self/statm", "r");
	if (f && fscanf(f, "%ld %*d %*d %*d %*d %ld", &size, &data) != 2)
		size = data = -1;
	if (f)
		fclose(f);
	static const struct { int res; const char *why; } lims[] = {
		{RLIMIT_AS, "RLIMIT_AS, ulimit -v"},
		{RLIMIT_DATA, "RLIMIT_DATA, ulimit -d"},
	};
	for (int k = 0; k < 2; k++) {
		struct rlimit rl;
		long used = k == 0 ? size : data;
		if (getrlimit(lims[k].res, &rl) || rl.rlim_cur == RLIM_INFINITY || used < 0 ||
		    page <= 0)
			continue;
		uint64_t u = (uint64_t)used * (uint64_t)page;
		mem_lower(&avail, what, rl.rlim_cur > u ? rl.rlim_cur - u : 0, lims[k].why);
	}
	return avail;
}

const char *host_bytes_text(uint64_t n, char *buf, size_t size)
{
	if (n < 1024 * 1024)
		snprintf(buf, size, "%llu bytes", (unsigned long long)n);
	else if (n < (uint64_t)1 << 30)
		snprintf(buf, size, "%.1f MiB", (double)n / (1 << 20));
	else
		snprintf(buf, size, "%.1f GiB", (double)n / (1 << 30));
	return buf;
}

int host_mem_check(uint64_t need, const char *detail, Diag *d)
{
	const char *what;
	uint64_t avail = host_mem_available(&what);
	if (need <= avail)
		return 0;
	char a[32], b[32];
	diag_set(d, "", 0, 0, "the run needs %s of memory (%s) but %s is available (%s)",
		 host_bytes_text(need, a, sizeof a), detail, host_bytes_text(avail, b, sizeof b),
		 what);
	return -1;
}
