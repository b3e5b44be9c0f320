/* run.h: the backend interface of `fusec run` (cmd/run.c).
 *
 * A backend is a RunBackend: prepare (compile or load what it needs), run (execute
 * the graph on the inputs), outputs (hand over one HostTensor per graph output, in
 * g->outputs order; the caller frees them with host_free), release (free whatever
 * the backend holds; called once after prepare, whether or not the others failed).
 * Each returns 0 or -1 with the Diag filled. Adding a backend is a new file that
 * defines its RunBackend and one line in the backends table of cmd/run.c. */
#ifndef FUSEC_RUN_H
#define FUSEC_RUN_H

#include "../lib/host.h"

typedef struct {
	const Graph *g;
	const HostTensor *inputs;  /* g->ninputs, in g->inputs order, checked to fit */
	void *state;               /* the backend's own */
} RunCtx;

typedef struct {
	int (*prepare)(RunCtx *c, Diag *d);
	int (*run)(RunCtx *c, Diag *d);
	int (*outputs)(RunCtx *c, HostTensor *outs, Diag *d);
	void (*release)(RunCtx *c);
} RunBackend;

/* The backends beside interp (cmd/run_cpu.c, cmd/run_cuda.c). */
extern const RunBackend run_cpu_backend;
extern const RunBackend run_cuda_backend;

#endif
