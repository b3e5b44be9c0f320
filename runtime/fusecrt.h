/* fusecrt.h: fusec's runtime, for programs that run a compiled plan (C11, C++17).
 *
 * A plan is the folder `fusec compile GRAPH -o DIR` writes: NAME.plan.json, the PTX
 * it names and the weights file. The runtime loads it, copies the inputs to a CUDA
 * GPU, runs the plan's launches (replayed as a CUDA graph unless turned off) and
 * copies the outputs back; or it runs on device memory the caller binds.
 *
 *     fusecrt_error e;
 *     fusecrt_plan *p = fusecrt_plan_load("out", &e);          // a folder or a .plan.json
 *     fusecrt_session *s = p ? fusecrt_session_open(p, 0, &e) : NULL;
 *     // fusecrt_session_set_input(s, "x", data, bytes, &e) for every input, then
 *     fusecrt_session_run(s, &e);
 *     fusecrt_session_get_output(s, "y", out, bytes, &e);
 *     fusecrt_session_close(s);
 *     fusecrt_plan_free(p);
 *
 * The driver is loaded at run time (dlopen of libcuda.so.1, or the file
 * FUSEC_LIBCUDA names), so building against this header needs no CUDA. Link with
 * `pkg-config --cflags --libs fusecrt`.
 *
 * Errors: every call that can fail takes a fusecrt_error (NULL is allowed) and
 * returns FUSECRT_OK (0) or a status below; on failure the error holds the status,
 * one line of message and, when a file is at fault, the file and position. Nothing
 * here prints or exits.
 *
 * Memory: a plan owns everything its functions return pointers to (names, dtype
 * names), valid until fusecrt_plan_free. A session owns the device memory it
 * allocated (not memory the caller binds) and must be closed before its plan is
 * freed. Data passed in stays the caller's.
 *
 * Threads: a plan may be shared by sessions on several threads once loaded; a
 * session is used by one thread at a time. */
#ifndef FUSECRT_H
#define FUSECRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
	FUSECRT_OK = 0,
	FUSECRT_INVALID = 1,   /* an invalid plan, PTX or weights file, name or size */
	FUSECRT_DEVICE = 3,    /* the driver or the device: no GPU, bad PTX, out of memory */
};

typedef struct fusecrt_error {
	int status;            /* one of the enum above; FUSECRT_OK when nothing failed */
	char file[256];        /* the file at fault; "" when none */
	int line, col;         /* its position, 0 when unknown */
	char message[1024];    /* one line, without the file */
} fusecrt_error;

typedef struct fusecrt_plan fusecrt_plan;
typedef struct fusecrt_session fusecrt_session;

/* "fusec VERSION" and the plan format it reads ("fusec-plan/1"). */
const char *fusecrt_version(void);
const char *fusecrt_plan_format(void);

/* ---- plans ---------------------------------------------------------------- */

/* Load a plan: a NAME.plan.json file, or a folder holding exactly one. Reads and
 * checks the plan and its PTX (no device needed). NULL on failure. */
fusecrt_plan *fusecrt_plan_load(const char *path, fusecrt_error *err);
void fusecrt_plan_free(fusecrt_plan *p);       /* NULL is fine */

/* The inputs the caller gives (constants are in the weights file) and the outputs
 * a run produces, in the plan's order; i from 0. NULL past the end. */
int fusecrt_plan_ninputs(const fusecrt_plan *p);
const char *fusecrt_plan_input(const fusecrt_plan *p, int i);
int fusecrt_plan_noutputs(const fusecrt_plan *p);
const char *fusecrt_plan_output(const fusecrt_plan *p, int i);

/* A tensor's dtype ("f32", "bf16", "i64", ...: docs/graph-format.md), rank, dims (up
 * to 8; dims may be NULL) and size in bytes (dense, row-major). Of a plan for every
 * size not bound yet (fusecrt_plan_bind), a dim that depends on the named dims is
 * -1 and bytes is 0. FUSECRT_INVALID when the plan has no tensor of that name. */
int fusecrt_plan_tensor(const fusecrt_plan *p, const char *name, const char **dtype,
			int *rank, int64_t *dims, size_t *bytes, fusecrt_error *err);
/* The arch the plan's PTX was built for ("sm_90a"); of a plan compiled for several
 * (--arch sm_80,sm_90a), the first: a session runs the one its device runs best
 * (fusecrt_session_arch). */
const char *fusecrt_plan_arch(const fusecrt_plan *p);

/* ---- plans for every size (fusec-plan/2) ------------------------------------ */

/* A plan compiled for every size of its named dims (docs/plan-format.md, Format 2)
 * has their sizes bound before a session opens. fusecrt_plan_ndims: how many named
 * dims (0 for a plan of fixed sizes); fusecrt_plan_dim: dim i's name (NULL past the
 * end) and its range (min, max may be NULL). */
int fusecrt_plan_ndims(const fusecrt_plan *p);
const char *fusecrt_plan_dim(const fusecrt_plan *p, int i, int64_t *min, int64_t *max);
/* Bind the sizes from the shapes of n inputs: names[k] has ranks[k] dims,
 * dims[8 * k + j] (j < ranks[k]). Every named dim must be the whole of some input
 * dim, inputs must agree, each size must lie in its range, and every input given
 * must then have the plan's shape. Then fusecrt_plan_tensor gives the bound sizes
 * and a session runs them; binding other sizes needs a new session. A plan of
 * fixed sizes checks the shapes only. FUSECRT_INVALID, with the reason, when they
 * do not fit. */
int fusecrt_plan_bind(fusecrt_plan *p, int n, const char *const *names, const int *ranks,
		      const int64_t *dims, fusecrt_error *err);

/* ---- sessions --------------------------------------------------------------- */

/* A session of the plan on CUDA device `device`: the driver loaded, a context, the
 * PTX loaded (a JIT error log is part of the message), every buffer allocated and
 * the constants uploaded. NULL on failure (FUSECRT_DEVICE when there is no usable
 * GPU, or none that can run the plan's arch). */
fusecrt_session *fusecrt_session_open(const fusecrt_plan *p, int device, fusecrt_error *err);
void fusecrt_session_close(fusecrt_session *s);  /* NULL is fine */
/* The arch of the PTX the session loaded: of a plan's arches, the highest its
 * device can run (sm_90a only on compute capability 9.0 exactly). "" for NULL. */
const char *fusecrt_session_arch(const fusecrt_session *s);

/* Copy `bytes` of host data (the tensor's dtype, dense, row-major; bytes must be
 * its size) into input `name`. */
int fusecrt_session_set_input(fusecrt_session *s, const char *name, const void *data,
			      size_t bytes, fusecrt_error *err);
/* Run the plan once and wait for the device. Every input must have been set or
 * bound (an input never set holds what the session allocated: garbage). */
int fusecrt_session_run(fusecrt_session *s, fusecrt_error *err);
/* Run the plan once on the caller's CUDA stream `stream` (a CUstream in the
 * session's device's primary context; 0 the legacy default stream) without
 * waiting: the launches (or the replay of the session's CUDA graph) are queued
 * after whatever the caller queued there, and the outputs are ready when the
 * stream reaches them. For frameworks that own the stream (torch's current
 * stream) and bind their tensors (fusecrt_session_bind). */
int fusecrt_session_run_async(fusecrt_session *s, uint64_t stream, fusecrt_error *err);
/* Copy output (or any tensor with a buffer) `name` into `data`, `bytes` its size. */
int fusecrt_session_get_output(fusecrt_session *s, const char *name, void *data,
			       size_t bytes, fusecrt_error *err);

/* Run on the caller's device memory: tensor `name` (an input or an output) is read
 * or written at device address `devptr` (a CUdeviceptr, at least its size, in the
 * session's device's primary context) from the next run on; 0 binds the session's
 * own buffer again. set_input and get_output then copy there. Zero-copy for
 * frameworks that own the tensors. */
int fusecrt_session_bind(fusecrt_session *s, const char *name, uint64_t devptr,
			 fusecrt_error *err);

/* CUDA graphs: runs replay one captured graph per set of bound addresses (on by
 * default; FUSEC_NO_GRAPH=1 in the environment turns it off for new sessions).
 * Kernels of sm_90 plans go with programmatic dependent launch, directly and in the
 * graphs (FUSEC_NO_PDL=1 turns it off for new sessions; docs/plan-format.md, "pdl").
 * fusecrt_session_graph returns 1 when the next run replays a graph, 0 when it
 * launches kernel by kernel, with why (one line, or "" when on) if why is not NULL;
 * the string is the session's. */
void fusecrt_session_set_graph(fusecrt_session *s, int on);
int fusecrt_session_graph(const fusecrt_session *s, const char **why);

#ifdef __cplusplus
}
#endif

#endif
