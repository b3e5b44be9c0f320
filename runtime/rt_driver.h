/* rt_driver.h: the CUDA driver API as the runtime sees it, and the layout of a
 * session. Private to runtime/runtime.c and runtime/bench.c; embedders use fusecrt.h, the rest rt.h.
 *
 * cuda.h is never included: the handful of types, enum values and signatures the
 * runtime calls are written out here (from the driver API's documented ABI) and
 * the functions are looked up with dlsym at run time. */
#ifndef FUSEC_RT_DRIVER_H
#define FUSEC_RT_DRIVER_H

#include "rt.h"

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUevent_st *CUevent;
typedef struct CUstream_st *CUstream;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;

enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CUDA_ERROR_NO_DEVICE = 100,
	CUDA_ERROR_INVALID_PTX = 218,
	CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
	CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
	CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
	CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
	CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
	CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
	CU_JIT_INFO_LOG_BUFFER = 3,
	CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
	CU_JIT_ERROR_LOG_BUFFER = 5,
	CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
	CU_EVENT_DEFAULT = 0,
	CU_STREAM_DEFAULT = 0,          /* a blocking stream: ordered after the legacy
					   default stream's work, so copies there stay in order */
	CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,   /* CUstreamCaptureMode: only this thread's
						      unsafe calls break the capture */
	CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4,
	CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6,
};

/* cuLaunchKernelEx's configuration (cuda.h's CUlaunchConfig and CUlaunchAttribute:
 * an attribute is its id, padded to 8 bytes, and a value of 64 bytes), for the
 * kernels launched in clusters. */
typedef struct {
	int id;
	char pad[4];
	union {
		char bytes[64];
		struct {
			unsigned x, y, z;
		} cluster;
		int programmatic;   /* programmaticStreamSerializationAllowed */
	} value;
} CUlaunchAttribute;

typedef struct {
	unsigned grid[3], block[3];
	unsigned shared_bytes;
	CUstream stream;
	CUlaunchAttribute *attrs;
	unsigned nattrs;
} CUlaunchConfig;

/* X(return-less name used here, symbol looked up, required, parameter list).
 * The graph calls are optional: a driver without them (before CUDA 11.4) runs every
 * plan launch by launch (rt_graph_prepare says why). cuda.h maps cuStreamBeginCapture
 * to cuStreamBeginCapture_v2 (the one with a mode) and, from CUDA 12,
 * cuGraphInstantiate to cuGraphInstantiateWithFlags; the _ptsz variants are the
 * per-thread default stream's, which the runtime does not use. */
#define RT_DRIVER_FUNCS(X) \
	X(cuGetErrorName, "cuGetErrorName", 1, (CUresult, const char **)) \
	X(cuGetErrorString, "cuGetErrorString", 1, (CUresult, const char **)) \
	X(cuInit, "cuInit", 1, (unsigned)) \
	X(cuDriverGetVersion, "cuDriverGetVersion", 1, (int *)) \
	X(cuDeviceGetCount, "cuDeviceGetCount", 1, (int *)) \
	X(cuDeviceGet, "cuDeviceGet", 1, (CUdevice *, int)) \
	X(cuDeviceGetName, "cuDeviceGetName", 1, (char *, int, CUdevice)) \
	X(cuDeviceGetAttribute, "cuDeviceGetAttribute", 1, (int *, int, CUdevice)) \
	X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 1, (CUcontext *, CUdevice)) \
	X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", 1, (CUdevice)) \
	X(cuCtxSetCurrent, "cuCtxSetCurrent", 1, (CUcontext)) \
	X(cuCtxSynchronize, "cuCtxSynchronize", 1, (void)) \
	X(cuModuleLoadDataEx, "cuModuleLoadDataEx", 1, \
	  (CUmodule *, const void *, unsigned, int *, void **)) \
	X(cuModuleUnload, "cuModuleUnload", 1, (CUmodule)) \
	X(cuModuleGetFunction, "cuModuleGetFunction", 1, (CUfunction *, CUmodule, const char *)) \
	X(cuFuncSetAttribute, "cuFuncSetAttribute", 1, (CUfunction, int, int)) \
	X(cuMemAlloc, "cuMemAlloc_v2", 1, (CUdeviceptr *, size_t)) \
	X(cuMemFree, "cuMemFree_v2", 1, (CUdeviceptr)) \
	X(cuMemcpyHtoD, "cuMemcpyHtoD_v2", 1, (CUdeviceptr, const void *, size_t)) \
	X(cuMemcpyDtoH, "cuMemcpyDtoH_v2", 1, (void *, CUdeviceptr, size_t)) \
	X(cuMemcpyDtoD, "cuMemcpyDtoD_v2", 1, (CUdeviceptr, CUdeviceptr, size_t)) \
	X(cuMemsetD8, "cuMemsetD8_v2", 1, (CUdeviceptr, unsigned char, size_t)) \
	X(cuLaunchKernel, "cuLaunchKernel", 1, \
	  (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, \
	   unsigned, CUstream, void **, void **)) \
	X(cuLaunchKernelEx, "cuLaunchKernelEx", 0, \
	  (const CUlaunchConfig *, CUfunction, void **, void **)) \
	X(cuEventCreate, "cuEventCreate", 1, (CUevent *, unsigned)) \
	X(cuEventRecord, "cuEventRecord", 1, (CUevent, CUstream)) \
	X(cuEventSynchronize, "cuEventSynchronize", 1, (CUevent)) \
	X(cuEventElapsedTime, "cuEventElapsedTime", 1, (float *, CUevent, CUevent)) \
	X(cuEventDestroy, "cuEventDestroy_v2", 1, (CUevent)) \
	X(cuStreamCreate, "cuStreamCreate", 1, (CUstream *, unsigned)) \
	X(cuStreamDestroy, "cuStreamDestroy_v2", 1, (CUstream)) \
	X(cuStreamBeginCapture, "cuStreamBeginCapture_v2", 0, (CUstream, int)) \
	X(cuStreamEndCapture, "cuStreamEndCapture", 0, (CUstream, CUgraph *)) \
	X(cuGraphInstantiate, "cuGraphInstantiateWithFlags", 0, \
	  (CUgraphExec *, CUgraph, unsigned long long)) \
	X(cuGraphLaunch, "cuGraphLaunch", 0, (CUgraphExec, CUstream)) \
	X(cuGraphExecDestroy, "cuGraphExecDestroy", 0, (CUgraphExec)) \
	X(cuGraphDestroy, "cuGraphDestroy", 0, (CUgraph)) \
	X(cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled", 0, \
	  (void *, int, unsigned, void *, const uint64_t *, const uint64_t *, const unsigned *, \
	   const unsigned *, int, int, int, int))

typedef struct {
	void *lib;             /* dlopen handle */
	char path[256];        /* the library as named to dlopen */
#define X(name, sym, req, args) CUresult (*name) args;
	RT_DRIVER_FUNCS(X)
#undef X
} RtDriver;

/* One captured CUDA graph: every launch of the plan with one set of bound buffers. */
typedef struct {
	CUgraphExec exec;      /* NULL until captured */
	uint64_t *bound;       /* the addresses it was captured with (ntensors + 1) */
} RtGraph;

struct RtSession {
	const RtPlan *plan;    /* &view once the device is known; the caller's before */
	RtPlan view;           /* the caller's plan with the variant picked for the device */
	int variant;           /* that variant (rt_plan_pick) */
	RtDriver drv;
	RtDeviceInfo dev;
	CUdevice device;
	CUcontext ctx;         /* the device's primary context, retained */
	CUmodule module;
	CUfunction *funcs;     /* one per plan kernel */
	CUstream stream;       /* every launch and event record: the session's own, as
				  the legacy default stream cannot be captured */
	uint64_t *bufs;        /* one device address per plan tensor (+ the scratch at
				  [ntensors]); 0 without a buffer */
	uint64_t *own;         /* the same, of the allocations the session made (freed at
				  close); bufs[t] differs where the caller bound its own */
	RtArgSlot **slots;     /* per launch: packed argument values */
	void ***argv;          /* per launch: kernelParams pointing into slots */
	RtGraph graph;         /* the session's buffers' graph */
	RtGraphMode graph_mode;
	char graph_why[768];   /* graph_mode != RT_GRAPH_ON: why (a Diag message) */
	bool pdl;              /* launch "pdl" kernels with programmatic stream
				  serialization (FUSEC_NO_PDL=1 turns it off) */
	int graph_captures, graph_replays;
};

/* Format "CALL failed: CUDA_ERROR_X (text)" into d and return RT_ERR_DEVICE. */
RtStatus rt_driver_fail(const RtDriver *drv, Diag *d, const char *call, CUresult r);
/* Check a driver call: on failure set d and return RT_ERR_DEVICE from the caller. */
#define RT_CU(s, d, call) do { \
		CUresult rt_r_ = (s)->drv.call; \
		if (rt_r_ != CUDA_SUCCESS) \
			return rt_driver_fail(&(s)->drv, (d), rt_call_name_(#call), rt_r_); \
	} while (0)
/* "cuMemAlloc(&p, n)" -> "cuMemAlloc_v2": the symbol name of a call's text. */
const char *rt_call_name_(const char *call_text);

/* Encode launch l's tensor maps (argv from rt_pack_args) over the buffers bufs:
 * 128-byte swizzle, L2 promotion of 256 bytes, zeros outside. RT_ERR_DEVICE when
 * the driver has no cuTensorMapEncodeTiled (before CUDA 12) or refuses a map (a
 * buffer bound by the caller that is not 16-byte aligned). */
RtStatus rt_tmaps_encode(RtSession *s, const RtLaunch *l, const uint64_t *bufs, void **argv,
			 Diag *d);

/* Launch step launches [0, n) with the buffer set whose packed arguments are argv
 * (argv[i] for launch i); between launches, record events ev[i] (may be NULL). */
RtStatus rt_launch_all(RtSession *s, void ***argv, CUevent *ev, Diag *d);

/* Make g a graph of the plan's launches with the buffer set `bufs` (argv packed from
 * it): kept when it was captured with the same addresses, captured (again)
 * otherwise; true when g is ready to launch. False when graphs are off, or when the
 * capture failed: that is no error, the session falls back to direct launches and
 * s->graph_why names the driver call and its CUresult. The capture runs nothing. */
bool rt_graph_prepare(RtSession *s, RtGraph *g, const uint64_t *bufs, void ***argv);
/* Replay g (prepared) on the session's stream; does not wait. */
RtStatus rt_graph_launch(RtSession *s, RtGraph *g, Diag *d);
void rt_graph_release(RtSession *s, RtGraph *g);

/* Load the plan at plan_path, check the named inputs against it, open a session and
 * upload them (rt_cuda_run, rt_cuda_bench). *plp and *sp are set even on failure
 * (either may be NULL) and are the caller's to free. */
RtStatus rt_open_and_upload(const char *plan_path, const RtNamed *inputs, int ninputs,
			    RtPlan **plp, RtSession **sp, Diag *d);

#endif
