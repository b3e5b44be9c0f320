/* host.h: tensors in host memory, their dtype conversions, seeded random fill,
 * error comparison, .npy files, and the tolerance table of `fusec run --check`.
 *
 * A HostTensor holds its elements in its own dtype, C order, in one malloc'd block
 * (f16 and bf16 as their 16-bit patterns, bool as one byte 0/1). Values cross
 * dtypes through double: host_get widens exactly, host_set rounds the way a
 * kernel's store does (floats: round to nearest even; ints from floats: truncate
 * toward zero, saturate, NaN to 0; ints from ints: wrap; bool: nonzero is 1).
 * Memory: host_free releases the data; a zeroed HostTensor is empty and safe to free.
 *
 * Prefix: host_ (tensors), npy_ (files), check_ (tolerances). Nothing here prints
 * or exits; errors come back as a Diag. */
#ifndef FUSEC_HOST_H
#define FUSEC_HOST_H

#include <stdbool.h>
#include <stdint.h>

#include "../ir/ir.h"

typedef struct {
	DType dtype;
	int rank;
	int64_t dim[IR_MAX_RANK];
	int64_t n;             /* element count: product of dims (1 for rank 0) */
	void *data;            /* n elements of dtype; NULL only when empty */
} HostTensor;

/* Allocate a zeroed tensor. Returns 0, or -1 (with *d set) if the size overflows
 * or memory runs out. */
int host_alloc(HostTensor *t, DType dtype, int rank, const int64_t *dim, Diag *d);
void host_free(HostTensor *t);
/* "f32[2,3]" into buf; returns buf. */
const char *host_shape_text(DType dtype, int rank, const int64_t *dim, char *buf, size_t size);

/* ---- element access -------------------------------------------------------- */

double host_get(const HostTensor *t, int64_t i);
void host_set(HostTensor *t, int64_t i, double v);
/* Integer access, exact for i64: floats truncate (saturating, NaN 0) on get. */
int64_t host_get_i64(const HostTensor *t, int64_t i);
void host_set_i64(HostTensor *t, int64_t i, int64_t v);   /* wraps to the dtype */

/* The value v becomes when stored as dtype (same rules as host_set). */
double host_round(DType dtype, double v);
/* v wrapped to an integer dtype's width (two's complement); bool: v != 0. */
int64_t host_wrap_int(DType dtype, int64_t v);
/* A double as an integer dtype stores it: truncated toward zero, saturated to the
 * dtype's range, NaN 0; bool: v != 0. */
int64_t host_to_int(DType dtype, double v);

uint16_t host_f16_bits(double v);      /* round to nearest even; NaN stays NaN */
double host_f16_value(uint16_t bits);
uint16_t host_bf16_bits(double v);
double host_bf16_value(uint16_t bits);

/* ---- random fill ----------------------------------------------------------- */

/* Deterministic per (seed, stream): splitmix64 over a state mixed from both, so
 * every input can draw its own sequence from one --seed. */
typedef struct {
	uint64_t s;            /* splitmix64 state */
} HostRng;

void host_rng_init(HostRng *r, uint64_t seed, uint64_t stream);
/* The stream of a graph input's random values: a hash of its name, so adding or
 * reordering inputs leaves the values of the others alone. */
uint64_t host_input_stream(const char *name);
uint64_t host_rng_next(HostRng *r);
double host_rng_unit(HostRng *r);      /* uniform in [0, 1) with 53 bits */

/* The default range of random values: floats [-1, 1), signed ints [-5, 5],
 * u8 [0, 9], bool [0, 1]. Integer ranges are inclusive, float ranges half-open. */
void host_default_range(DType dtype, double *lo, double *hi);
/* Fill with uniform values in [lo, hi) (floats, then rounded to the dtype) or
 * [lo, hi] (ints and bool). */
void host_fill_random(HostTensor *t, HostRng *r, double lo, double hi);

/* ---- comparison ------------------------------------------------------------ */

typedef struct {
	double max_abs;        /* max |got - want| over all elements */
	double max_rel;        /* max |got - want| / |want| over elements with want != 0 */
	int64_t nbad;          /* elements over tolerance */
	int64_t first_bad;     /* index of the first one; -1 when none */
	bool ok;               /* nbad == 0 and the shapes and dtypes agree */
} HostCompare;

/* An element passes when |got - want| <= atol + rtol * |want|; NaN matches NaN and
 * an infinity matches the same infinity. A shape or dtype mismatch fails with
 * every element counted bad. */
void host_compare(const HostTensor *got, const HostTensor *want, double atol, double rtol,
		  HostCompare *out);

/* ---- memory ------------------------------------------------------------------ */

/* The bytes this process may still take: the least of MemAvailable + SwapFree
 * (/proc/meminfo; sysconf where it is unreadable), the cgroup's memory.max less
 * memory.current (cgroup v2, each group up to the root) and RLIMIT_AS / RLIMIT_DATA
 * less what the process maps now. *what names the bound that decided it;
 * UINT64_MAX when none is known. */
uint64_t host_mem_available(const char **what);
/* 0 when need bytes fit in host_mem_available, else -1 with d set: "the run needs
 * N of memory (detail) but A is available (what)". */
int host_mem_check(uint64_t need, const char *detail, Diag *d);
/* "812 bytes", "3.5 MiB", "4.0 GiB" into buf; returns buf. */
const char *host_bytes_text(uint64_t n, char *buf, size_t size);

/* ---- .npy files (host/npy.c) ------------------------------------------------ */

/* Read NumPy format 1.0 or 2.0, little-endian, C order, descr one of <f8 <f4 <f2
 * <i8 <i4 <i2 |i1 |u1 |b1. `name` is used in messages. The tensor gets the file's
 * dtype (never bf16). */
int npy_read_mem(const char *name, const void *buf, size_t len, HostTensor *out, Diag *d);
int npy_read_file(const char *path, HostTensor *out, Diag *d);
/* Only the dtype and shape in a file's header (its data is not read, nor its size
 * checked): what `fusec run --inputs` binds named dims with. 0, or -1 with d set. */
int npy_read_shape(const char *path, DType *dtype, int *rank, int64_t *dim, Diag *d);
/* Write format 1.0 with a 64-byte aligned header. bf16 has no NumPy dtype: it is
 * written as <f4, which holds every bf16 value exactly. */
void npy_write_buf(Buf *b, const HostTensor *t);
/* DIR/NAME.npy for a tensor name: characters outside [A-Za-z0-9._-], and a
 * leading '.', become '_' (docs/graph-format.md). Writes into buf, returns it. */
const char *npy_path(char *buf, size_t size, const char *dir, const char *name);
/* Check that the n distinct tensors names[] get n distinct files DIR/NAME.npy from
 * npy_path into buffers of size bytes: two names it makes alike ("y:0", "y_0") or
 * a path that does not fit are refused in d, with the option (opt, "--outputs"),
 * the tensors (labels[i], or names[i] when labels is NULL) and the file, "written
 * to" or "read from" (verb). 0, or -1. */
int npy_check_names(const char *dir, const char *const *names, const char *const *labels,
		    int n, size_t size, const char *opt, const char *verb, Diag *d);
/* Write atomically: a fresh temporary name in PATH's folder (support.h, file_temp),
 * then renamed over PATH. A pipe, a device or a socket at PATH is refused. */
int npy_write_file(const char *path, const HostTensor *t, Diag *d);

/* ---- constants of graph files (host/constants.c) ------------------------------ */

/* Give every constant read from a graph file (Tensor.src) its Tensor.data: inline
 * values stored as its dtype stores them, or its .npy file, which must hold its
 * dtype and shape; the SHA-256 of the bytes read goes to src->npy_sha256. 0, or
 * -1 with *d set (positioned at the constant). */
int host_load_constants(Graph *g, Diag *d);
/* The bytes of a constant's file: rel (ConstSource.npy_rel) inside the folder of
 * graph_file, a regular file reached through no symbolic link, read once without
 * waiting on a pipe. malloc'd (*len bytes, then a NUL), or NULL with *d set at the
 * file (path: rel joined to the graph's folder, ConstSource.npy). */
char *host_read_constant_file(const char *graph_file, const char *rel, const char *path,
			      size_t *len, Diag *d);

/* ---- checks (host/check.c; docs/tolerances.md) ----------------------------- */

enum { CHECK_WORST = 5 };

typedef struct {
	int64_t index;         /* flat (C order) index of the element */
	double got, want;
	double bound;          /* what |got - want| was allowed */
	double ratio;          /* |got - want| / bound; +inf for a NaN/inf mismatch */
} CheckElem;

/* The verdict on one output: every element within its bound (OK), some element
 * over its bound or a shape/dtype mismatch (FAIL), or none over but some not
 * bounded at all (NOT_CHECKED: a bound of +inf checks nothing, so the output is
 * not called ok). */
typedef enum { CHECK_OK, CHECK_FAIL, CHECK_NOT_CHECKED } CheckStatus;

typedef struct {
	CheckStatus status;
	bool ok;               /* nbad == 0 and the shapes and dtypes agree */
	int64_t nbad;          /* elements over their bound */
	int64_t nunbounded;    /* elements whose bound is +inf: not checked */
	double max_abs;        /* max |got - want| over pairs of finite values */
	double max_ratio;      /* max |got - want| / bound */
	int nworst;
	CheckElem worst[CHECK_WORST];   /* largest ratio first, then lowest index */
} CheckResult;

/* Compare got with want element by element. An element passes when |got - want| <=
 * its bound: bound[i] (f64, want's shape; from interp_run_bounds) or, when bound
 * is NULL, atol + rtol·|want|. NaN matches NaN and an infinity the same infinity,
 * whatever the bound; a finite element whose bound is +inf is counted unbounded.
 * A shape or dtype mismatch fails with every element bad. r->status says which. */
void check_compare(const HostTensor *got, const HostTensor *want, const HostTensor *bound,
		   double atol, double rtol, CheckResult *r);
/* "ok", "FAIL", "not checked". */
const char *check_status_name(CheckStatus s);

#endif
