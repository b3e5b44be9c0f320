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

#include "../runtime/rt.h"

typedef struct {
	const Graph *g;
	const HostTensor *inputs;  /* g->ninputs, in g->inputs order, checked to fit */
	void *state;               /* the backend's own */
	bool allow_tf32;           /* --allow-tf32 (cpu, cuda) */
	bool allow_3xtf32;         /* --allow-3xtf32 (cpu, cuda) */
	bool burn_exact;           /* --burn-exact: search with burn's rules (cpu, cuda) */
	const Graph *gsym;         /* --dynamic (cpu): the graph read for every size of its
				      named dims, compiled in g's place and bound to g's
				      sizes; NULL otherwise */
} RunCtx;

typedef struct {
	int (*prepare)(RunCtx *c, Diag *d);
	int (*run)(RunCtx *c, Diag *d);
	int (*outputs)(RunCtx *c, HostTensor *outs, Diag *d);
	void (*release)(RunCtx *c);
} RunBackend;

/* A graph compiled into a private temporary folder (cmd/run_cuda.c). */
typedef struct {
	char dir[256];
	char plan[640], ptx[640];
	UndoStep *undo;   /* removes dir on a signal */
} RunTemp;
int run_cuda_compile(const Graph *g, bool allow_tf32, bool allow_3xtf32, bool burn_exact,
		     RunTemp *t, Diag *d);
void run_cuda_cleanup(RunTemp *t);

/* A compiled plan (a folder, or NAME.plan.json) with inputs for it: DIR/NAME.npy
 * files, or seeded random values drawn as `fusec run` and fusec-run draw them.
 * Before any input is made, run_plan_open checks that the inputs (from DIR) and
 * the outputs (to DIR `outputs`, NULL for none) map to distinct files, that the
 * host has the memory (rt_plan_host_check) and that the driver loads with device 0
 * fit for the plan (rt_device_check). RT_OK, RT_ERR_INPUT or RT_ERR_DEVICE. */
typedef struct {
	RtPlan *plan;
	RtNamed *in, *out;       /* graph inputs; outputs (filled by rt_cuda_run) */
	int nin, nout;
} RunPlan;
bool run_is_plan(const char *path);
RtStatus run_plan_open(const char *path, const char *inputs, const char *outputs, uint64_t seed,
		       RunPlan *rp, Diag *d);
void run_plan_close(RunPlan *rp);

/* The graph of `fusec run` and `fusec bench` (cmd_load_graph): with --inputs (or
 * NULL), the named dims of an input that no --input-shape gives are bound by the
 * shape of its .npy file (docs/graph-format.md, "Named dims"); the strings of the
 * binding live in a. Prints its error; NULL then. */
Graph *run_load_graph(Arena *a, const char *path, const char *inputs);
/* The graph read for every size of the named dims that --input-shape leaves
 * unbound (Graph.sym; IrShapeLookup.symbolic). Prints its error; NULL then. */
Graph *run_load_graph_symbolic(Arena *a, const char *path);
/* Inputs of a graph (cmd/run.c): seeded random, or .npy files (DIR, or NAME=FILE,...).
 * Each prints its own error and returns -1. */
int run_random_inputs(const Graph *g, uint64_t seed, HostTensor *in);
int run_load_inputs(const Graph *g, const char *spec, HostTensor *in);
/* What can fail before the inputs of backend vt are made: two tensors of one file
 * name under --inputs DIR or --outputs DIR (with bounds, the interpreter's error
 * bounds too), too little memory for the inputs, then the interpreter's values at
 * their peak (interp_peak_bytes) or the outputs, and with check the reference run;
 * for cuda, no driver or device 0 (rt_device_check). Prints the error; returns the
 * exit status. */
int run_precheck(const Graph *g, const RunBackend *vt, const char *inputs, const char *outputs,
		 bool check, bool bounds);

/* The backends beside interp (cmd/run_cpu.c, cmd/run_cuda.c). */
extern const RunBackend run_cpu_backend;
extern const RunBackend run_cuda_backend;

#endif
