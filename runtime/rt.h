/* rt.h: the CUDA runtime that launches a compiled fusec plan (the internal API:
 * fusec-run and `fusec run --backend cuda` use it; embedders use fusecrt.h, the
 * public one over it).
 *
 * In:  DIR/NAME.plan.json (fusec-plan/1, docs/plan-format.md) and the PTX file it
 *      names, plus one HostTensor per graph input.
 * Out: one HostTensor per graph output, or timings (rt_bench).
 * Memory: an RtPlan owns everything it points to (one arena); rt_plan_free frees it.
 *      An RtSession owns the driver library handle, the context reference, the
 *      module, its stream, its CUDA graphs and every device buffer it allocated
 *      (not memory the caller binds); rt_session_close releases them all. Host
 *      tensors passed in stay the caller's; tensors filled by the runtime
 *      (rt_session_download, rt_cuda_run outputs) become the caller's, freed with
 *      host_free.
 *
 * The driver is reached only through dlopen("libcuda.so.1") (FUSEC_LIBCUDA names
 * another file), so neither building nor loading this library needs CUDA, LLVM or
 * libyaml. Every function returns an RtStatus whose values are the exit statuses
 * of SPEC §7, and fills a Diag on failure; nothing here prints or exits.
 *
 * Prefix: rt_. */
#ifndef FUSEC_RT_H
#define FUSEC_RT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../codegen/launch_rule.h"
#include "../host/host.h"

typedef enum {
	RT_OK = 0,
	RT_ERR_INPUT = 1,      /* invalid plan, PTX file or inputs */
	RT_ERR_DEVICE = 3,     /* driver or device failure: no GPU, bad PTX, out of memory */
} RtStatus;

/* ---- the plan (docs/plan-format.md) ---------------------------------------- */

/* RT_P_TMAP: a TMA tensor map of 128 bytes, passed by value (`.param .align 64 .b8
 * NAME[128]` in the PTX), which the runtime encodes from the launch's description
 * (RtTmap) and the tensor's device address. */
typedef enum { RT_P_PTR, RT_P_I64, RT_P_I32, RT_P_F64, RT_P_F32, RT_P_TMAP, RT_P_COUNT } RtParamType;
const char *rt_param_name(RtParamType t);    /* "ptr", "i64", … */

enum { RT_TMAP_BYTES = 128, RT_TMAP_ALIGN = 64, RT_TMAP_MAXRANK = 5 };

/* A {"tmap": …} argument (docs/plan-format.md): a tiled map over the tensor's
 * buffer, dims innermost first, byte strides of dims 1.., the box, elements of the
 * tensor's dtype (f16 or bf16), 128-byte swizzle, zeros outside. In a plan for
 * every size (sym) dims and strides are set when the sizes are bound
 * (rt_plan_bind): dim k is the launch's size of shape id dim_id[k] (-1: dim[k] as
 * read), stride k sbytes[k] times the sizes of shape ids sid[k][0..nsid[k]-1]. */
typedef struct {
	int rank;
	uint64_t dim[RT_TMAP_MAXRANK];
	uint64_t stride[RT_TMAP_MAXRANK];  /* [0] unused */
	uint32_t box[RT_TMAP_MAXRANK];
	int dtype;             /* CUtensorMapDataType */
	bool sym;
	int dim_id[RT_TMAP_MAXRANK];
	uint64_t sbytes[RT_TMAP_MAXRANK];
	int nsid[RT_TMAP_MAXRANK];
	int sid[RT_TMAP_MAXRANK][IR_MAX_RANK];
} RtTmap;

typedef struct {
	const char *name;
	DType dtype;
	int rank;
	int64_t dim[IR_MAX_RANK];
	int64_t n;             /* element count */
	uint64_t bytes;        /* n × dtype size */
	TensorRole role;
	bool output;           /* read back after the run: role output, or an input the
				  graph also lists as an output ("output": true) */
	bool buffer;           /* the runtime allocates a device buffer for it */
	int alias;             /* "alias": the tensor whose buffer it shares (one with a
				  buffer, same dtype and size), or -1 */
	bool constant;         /* an input whose value is in the weights file */
	uint64_t offset;       /* constant: where its bytes start in that file */
	DimExpr *sdim;         /* a plan for every size: the dims as expressions over
				  RtPlan.dim_name (dim, n and bytes once bound); NULL in
				  a plan of fixed sizes */
} RtTensor;

typedef struct {
	const char *name;      /* what launches refer to */
	const char *entry;     /* the .entry symbol in the PTX */
	RtParamType *params;
	int nparams;
	uint32_t block[3];     /* 0 when the plan gives none */
	uint32_t cluster;      /* blocks of a cluster along x ("cluster"; 1: none) */
	bool pdl;              /* waits for the grids before it ("pdl"): launched with
				  programmatic stream serialization */
	uint32_t shared_bytes;
	CgLaunch launch;       /* a plan for every size: its launch rule ("launch") */
} RtKernel;

typedef struct {
	RtParamType type;
	int tensor;            /* RT_P_PTR, RT_P_TMAP: index into RtPlan.tensors;
				  RtPlan.ntensors for the launch's scratch (i = its bytes) */
	RtTmap *tm;            /* RT_P_TMAP */
	int64_t i;             /* RT_P_I64, RT_P_I32 */
	double f;              /* RT_P_F64, RT_P_F32 */
	int dim;               /* a plan for every size: i is the launch's size of this
				  shape id ({"dim": ID}), or -1; the scratch: -2 (its
				  bytes are the rule's) */
} RtArg;

typedef struct {
	int kernel;            /* index into RtPlan.kernels */
	int step;              /* index into RtPlan.steps */
	uint32_t grid[3], block[3];
	uint32_t shared_bytes;
	RtArg *args;           /* one per kernel parameter */
	int nargs;
	DimExpr *sdims;        /* a plan for every size: the size of each shape id from
				  1 on ("dims"), ndims of them; NULL otherwise */
	int ndims;
} RtLaunch;

typedef struct {
	int segment, plan;     /* -1 when the plan omits them */
	const char *mode;      /* "explored", "cache hit"; "" when omitted */
	int first_launch;      /* index into RtPlan.launches */
	int nlaunches;
} RtStep;

typedef struct {
	int *slot;             /* open addressing: an index or -1 */
	uint32_t mask;
} RtNameIndex;

/* One arch's PTX and what differs between arches: the kernels and the launches
 * (grids, blocks, shared and scratch bytes, arguments). A plan compiled for several
 * arches (fusec compile --arch sm_80,sm_90a) has one per arch: the top level's
 * first, then its "variants" (docs/plan-format.md, "Several arches"); tensors,
 * weights and steps are the same for all. */
typedef struct {
	const char *arch;      /* "sm_90a"; "" when a plan of one arch omits it */
	const char *ptx_path;  /* its PTX file, resolved beside the plan */
	const char *ptx_sha256;
	RtKernel *kernels; int nkernels;
	RtLaunch *launches; int nlaunches;   /* as many as every variant's, in step order */
	uint64_t scratch_bytes;
	RtNameIndex kernel_index;
	/* a plan for every size: the range of sizes this variant was made for (its
	 * "dims"; fusec compile --shape-buckets), per named dim; NULL: all of them */
	const int64_t *lo, *hi;
} RtVariant;

typedef struct {
	Arena *arena;
	const char *path;      /* the plan file as given */
	/* ptx_path, ptx_sha256, arch, kernels, launches, scratch_bytes and kernel_index
	 * are those of one variant: the first after loading, the device's in a
	 * session (rt_plan_use) */
	const char *ptx_path;  /* the PTX file, resolved beside the plan */
	const char *weights_path; /* the weights file beside the plan; NULL when none */
	const char *ptx_sha256;  /* its SHA-256 as the plan records it (required) */
	const char *weights_sha256; /* the weights file's SHA-256 (required with the file);
				       "" when the plan names none */
	const char *arch;      /* "sm_90"; "" when omitted */
	const char *compiler;  /* "" when omitted */
	RtTensor *tensors; int ntensors;
	RtKernel *kernels; int nkernels;
	RtStep *steps; int nsteps;
	RtLaunch *launches; int nlaunches;   /* every step's launches, in order */
	uint64_t scratch_bytes;  /* the largest {"scratch": N} argument; 0 when none */
	RtNameIndex tensor_index, kernel_index;   /* names to indices (plan_read.c) */
	RtVariant *variants; int nvariants;       /* every arch's; at least one */
	/* a plan for every size (fusec-plan/2, docs/plan-format.md "Format 2"): its
	 * named dims; their sizes once rt_plan_bind has bound them */
	int ndim_names;                           /* 0: a plan of fixed sizes */
	const char *dim_name[IR_SYM_MAX];
	int64_t dim_lo[IR_SYM_MAX], dim_hi[IR_SYM_MAX];
	int64_t dim_val[IR_SYM_MAX];
	bool bound;                               /* sizes known: always, with no names */
} RtPlan;

/* A plan for every size at the sizes val[] of its named dims (in the order of
 * RtPlan.dim_name), each within its range: every tensor's dims and bytes, every
 * variant's launches (grid, block, shared bytes from the kernel's rule, the size
 * arguments, the scratch). The plan is then one of fixed sizes to everything else;
 * binding again rebinds it. RT_ERR_INPUT with *d naming the dim, tensor or launch
 * that does not fit; the plan is then not bound (a session refuses it). */
RtStatus rt_plan_bind(RtPlan *p, const int64_t *val, Diag *d);
/* The sizes from the shapes of some inputs (names[i] with shape rank[i], dim[i]):
 * each named dim an input's dim stands for alone, then every given shape checked
 * against the plan's at those sizes; then rt_plan_bind. Every named dim must be
 * given by one of them. */
RtStatus rt_plan_bind_shapes(RtPlan *p, const char *const *names, const int *rank,
			     const int64_t (*dim)[IR_MAX_RANK], int n, Diag *d);
/* rt_plan_bind_shapes from the headers of DIR/NAME.npy (host/npy.c) of the inputs
 * whose shapes name a dim. */
RtStatus rt_plan_bind_npy(RtPlan *p, const char *dir, Diag *d);
/* "batch=8, seq=100" into b (nothing for a plan of fixed sizes). */
void rt_plan_dims_text(const RtPlan *p, Buf *b);

/* The variant for a device of compute capability major.minor: the highest arch it
 * can run (sm_XYa only on exactly X.Y, sm_XY on X.Y and later; of sm_90 and sm_90a
 * on a 9.0 device, sm_90a); a variant without an arch runs anywhere, below every
 * other. -1 when none can. */
int rt_plan_pick(const RtPlan *p, int major, int minor);
/* Of the variants of variant best's arch, the one made for the narrowest range of
 * sizes that holds the plan's bound sizes (a plan for every size compiled with
 * --shape-buckets); best when none is, or the plan is not bound. rt_plan_pick
 * ends with it. */
int rt_plan_pick_range(const RtPlan *p, int best);
/* Make variant v the plan's kernels, launches, PTX and arch (a copy of an RtPlan,
 * as a session keeps, can take another variant than the plan it copies). */
void rt_plan_use(RtPlan *p, int v);

/* Check every kernel of the plan against its .entry in the PTX text: the entry is
 * there, with as many parameters as the plan lists, each of the plan's kind (ptr and
 * i64: a 64-bit integer; i32: a 32-bit integer; f64, f32). The driver reads the
 * launch arguments by the PTX's signature, so a plan that disagrees would make it
 * read past them. Returns 0, or -1 with *d set. Linear in the PTX's size plus
 * n log n in the kernels. */
int rt_ptx_check_params(const RtPlan *p, const char *ptx, size_t len, Diag *d);

/* Bounds on what the runtime reads: larger files are refused unread. */
#define RT_PLAN_MAX_BYTES ((size_t)1 << 30)
#define RT_PTX_MAX_BYTES ((size_t)1 << 30)

/* Load a plan from a file, or from a folder holding exactly one *.plan.json.
 * Returns NULL with *d set (the file name and JSON path of the problem). */
RtPlan *rt_plan_load(const char *path, Diag *d);
/* Parse plan text; `file` names it in messages and locates the PTX file. */
RtPlan *rt_plan_parse(const char *file, const char *text, size_t len, Diag *d);
void rt_plan_free(RtPlan *p);
int rt_plan_find_tensor(const RtPlan *p, const char *name);  /* index or -1 */

/* Bytes that must move: every input read once and every output written once. */
uint64_t rt_plan_bytes_in(const RtPlan *p);
uint64_t rt_plan_bytes_out(const RtPlan *p);
/* Whether this host can hold what a run of the plan keeps in its memory at once:
 * the inputs, the constants (the weights file is read whole to upload them) and
 * the outputs read back (host_mem_check); RT_ERR_INPUT with the sizes if not. */
RtStatus rt_plan_host_check(const RtPlan *p, Diag *d);
/* Bytes of the distinct buffers a launch binds (an upper bound on what it moves). */
uint64_t rt_launch_bytes(const RtPlan *p, const RtLaunch *l);

/* Control characters in a message become '?', so that it stays one line: messages
 * quote strings from the plan, which may hold anything (plan_read.c). */
void rt_one_line(char *s);

/* ---- argument packing ------------------------------------------------------ */

/* One kernel argument's storage; 4-byte values sit at offset 0. */
typedef union {
	uint64_t ptr;
	int64_t i64;
	int32_t i32;
	double f64;
	float f32;
} RtArgSlot;

/* The argument storage of launch l: its slots, then room for its tensor maps, 64
 * bytes aligned (free() frees it). */
RtArgSlot *rt_slots_new(const RtLaunch *l);
/* Fill slots[i] with the value of launch argument i and argv[i] = &slots[i], the
 * kernelParams array cuLaunchKernel reads. bufs[t] is tensor t's device address.
 * A tensor map's argument points into the room after the slots (rt_slots_new),
 * zeroed here: the session encodes it (it needs the driver). */
void rt_pack_args(const RtLaunch *l, const uint64_t *bufs, RtArgSlot *slots, void **argv);

/* ---- sessions on a device -------------------------------------------------- */

typedef struct RtSession RtSession;

typedef struct {
	char name[128];        /* "NVIDIA H200" */
	int ordinal;
	int cc_major, cc_minor;
	int sms;
	int l2_bytes;
	int driver_version;    /* 12080 for 12.8 */
} RtDeviceInfo;

/* Load the driver and check that device `ordinal` exists and is recent enough
 * for the kernels (sm_70) and for one of the plan's arches, as rt_session_open
 * does first: a caller checks before it spends time and memory on inputs. The
 * library stays loaded for the session that follows. info may be NULL. */
RtStatus rt_device_check(const RtPlan *plan, int ordinal, RtDeviceInfo *info, Diag *d);
/* Load the driver, create a context on device `ordinal`, pick the plan's variant
 * for it (rt_plan_pick), load that PTX (a JIT error log is part of the message),
 * look up every kernel and allocate every buffer. The plan must outlive the
 * session. Outputs and intermediates are filled with 0xff bytes first, so an
 * element no kernel writes reads back as NaN (floats) or all ones. */
RtStatus rt_session_open(RtSession **out, const RtPlan *plan, int ordinal, Diag *d);
void rt_session_close(RtSession *s);           /* NULL is fine */
const RtDeviceInfo *rt_session_device(const RtSession *s);
/* The plan as the session runs it: the variant picked for its device (its kernels,
 * launches, PTX and arch), everything else the plan's. */
const RtPlan *rt_session_plan(const RtSession *s);
/* "arch: sm_90a (of the plan's sm_80, sm_90a)\n" into b for a plan of several
 * arches; nothing for a plan of one. */
void rt_session_arch_line(const RtSession *s, Buf *b);
/* Copy a host tensor into tensor `tensor`'s buffer; dtype and shape must match. */
RtStatus rt_session_upload(RtSession *s, int tensor, const HostTensor *t, Diag *d);
/* Run the plan once and wait for the device: every step's launches in order on the
 * session's stream. By default the launches are captured once into a CUDA graph
 * (per set of bound buffers) and each run replays it with one cuGraphLaunch; the
 * kernels, their order and their arguments are the same either way, so are the
 * results. When the capture fails the run launches directly and
 * rt_session_graph_info says why; that is not an error. */
RtStatus rt_session_run(RtSession *s, Diag *d);
/* rt_session_run queued on the caller's CUstream `stream` (0: the legacy default
 * stream), after whatever is queued there, without waiting: a graph is captured
 * on the session's own stream as before and replayed on `stream`, or the launches
 * go there. The outputs are ready when the stream reaches them. */
RtStatus rt_session_run_on(RtSession *s, uint64_t stream, Diag *d);

/* Bind tensor `tensor` (one with a buffer) to device memory the caller owns, at
 * least the tensor's bytes, from now on: runs read or write it there, uploads and
 * downloads go there, tensors aliasing it follow. devptr 0 binds the session's own
 * buffer again. The next run captures a new graph for the new set of addresses. */
RtStatus rt_session_bind(RtSession *s, int tensor, uint64_t devptr, Diag *d);

/* ---- CUDA graphs ------------------------------------------------------------ */

typedef enum {
	RT_GRAPH_ON,           /* runs replay a captured graph */
	RT_GRAPH_OFF,          /* turned off: FUSEC_NO_GRAPH=1 when the session opened,
				  or rt_session_set_graph(s, false) */
	RT_GRAPH_FALLBACK,     /* a capture failed: runs launch directly */
} RtGraphMode;

typedef struct {
	RtGraphMode mode;
	const char *why;       /* OFF, FALLBACK: why, one line ("cuStreamBeginCapture_v2
				  failed: CUDA_ERROR_…"); "" when on. The session's. */
	int captures;          /* graphs captured so far (each set of bound buffers once) */
	int replays;           /* runs replayed through a graph so far */
} RtGraphInfo;

void rt_session_graph_info(const RtSession *s, RtGraphInfo *out);
/* Turn graphs off (the captured ones are destroyed) or on again (a failed capture
 * is tried again at the next run). FUSEC_NO_GRAPH=1 in the environment when the
 * session opens is the same as rt_session_set_graph(s, false) after it. */
void rt_session_set_graph(RtSession *s, bool on);
/* Copy tensor `tensor` back into a new host tensor. */
RtStatus rt_session_download(RtSession *s, int tensor, HostTensor *out, Diag *d);

/* ---- timing (runtime/bench.c) -------------------------------------------------- */

typedef struct {
	int warmup;            /* untimed runs first; default 3 */
	int iters;             /* timed runs; default 50 */
	int max_sets;          /* cap on rotated buffer sets; default 32 */
} RtBenchOptions;

typedef struct {
	int iters, warmup;
	int nsets;             /* buffer sets rotated across iterations */
	int nlaunches;
	double *launch_ms;     /* median per launch, nlaunches of them (malloc'd) */
	double *launch_min_ms; /* minimum per launch */
	double total_ms;       /* median of one whole run (first launch to last) */
	double total_min_ms;
	double latency_ms;     /* median of one run issued alone, the host waiting for it
				  (its launch cost included, no per-launch events) */
	double latency_min_ms;
	bool graph;            /* the graph figures below were measured */
	char graph_why[768];   /* !graph: why not (graphs off, or the capture failed) */
	double graph_total_ms; /* median of one run replayed as a CUDA graph, back to back
				  (an event before and after each cuGraphLaunch) */
	double graph_total_min_ms;
	double graph_latency_ms; /* median of one graph run issued alone, the host waiting */
	double graph_latency_min_ms;
	uint64_t bytes_in, bytes_out;  /* bytes that must move */
	double gbps;           /* (bytes_in + bytes_out) / total_ms */
} RtBenchResult;

void rt_bench_defaults(RtBenchOptions *o);
/* Warm up, then time o->iters runs with CUDA events around every launch (direct
 * launches: the per-launch times, the total and the latency), then, unless the
 * session's graphs are off, as many runs replayed as CUDA graphs (one graph per
 * buffer set, captured before the timing), back to back and one at a time. When
 * one set of buffers is under twice the L2 size, further sets are allocated
 * (inputs copied from the uploaded ones) to span three times L2, and runs rotate
 * through them so that no run finds the previous run's data in L2. */
RtStatus rt_bench(RtSession *s, const RtBenchOptions *o, RtBenchResult *r, Diag *d);
void rt_bench_result_free(RtBenchResult *r);
/* The median of n values (mean of the middle two when n is even); v is sorted. */
double rt_median(double *v, int n);
/* The report fusec-run --bench and fusec bench print: one line per launch, then
 * the total and latency of direct launches, the same two of graph replays, and
 * the achieved bandwidth. */
void rt_bench_report(Buf *b, const RtSession *s, const RtBenchResult *r);

/* ---- one call for `fusec run --backend cuda` / `fusec bench` -------------------- */

typedef struct {
	const char *name;      /* graph tensor name */
	HostTensor t;
} RtNamed;

/* Load the plan, run it once on device 0 with the given inputs (matched by name;
 * every plan input must be given) and fill outputs[i].t for each outputs[i].name.
 * On failure no output is left allocated. */
RtStatus rt_cuda_run(const char *plan_path, const RtNamed *inputs, int ninputs,
		     RtNamed *outputs, int noutputs, Diag *d);
/* The same, then rt_bench; the report is appended to *report. */
RtStatus rt_cuda_bench(const char *plan_path, const RtNamed *inputs, int ninputs,
		       const RtBenchOptions *o, Buf *report, Diag *d);

#endif
