/* runtime.c: runs a fusec-plan/1 plan on a GPU through the CUDA driver API.
 *
 * The plan comes from plan_read.c, which has validated it completely before any
 * device work; this file checks the PTX and weights files against the hashes the
 * plan records, and the PTX's entry signatures against the plan
 * (rt_ptx_check_params in plan_read.c), before the driver sees them.
 *
 * The driver library is opened with dlopen and its functions looked up by symbol
 * name (the versioned names that cuda.h maps the plain ones to), so nothing here
 * needs the CUDA toolkit at build time. Every driver call is checked; a failure
 * becomes "CALL failed: CUDA_ERROR_NAME (description)", and a PTX that does not
 * JIT-compile brings the JIT's error log along. The session uses the device's
 * primary context, one stream of its own and one allocation per buffer tensor;
 * kernel arguments are packed once when the session opens (again when the caller
 * binds a buffer of its own).
 *
 * A plan is a fixed list of launches, so a run is captured once into a CUDA graph
 * (stream capture on the session's stream: the legacy default stream cannot be
 * captured) and replayed with one cuGraphLaunch, which saves the per-launch host
 * cost that dominates small batches. A graph holds the argument values it was
 * captured with, so it is kept with the buffer addresses it bakes in and captured
 * again when they change. The captured launches form one chain in plan order, as
 * on a stream, so results are the same bits. Everything a capture may not do
 * (cuFuncSetAttribute for large shared memory, allocation, copies) happens when the
 * session opens. A capture that fails leaves runs on direct launches, with the
 * failing call and its CUresult kept for the caller (rt_session_graph_info). */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rt_driver.h"

/* ---- what a run of the plan moves and holds -------------------------------- */

uint64_t rt_plan_bytes_in(const RtPlan *p)
{
	uint64_t b = 0;
	for (int i = 0; i < p->ntensors; i++)
		if (p->tensors[i].role == ROLE_INPUT)
			b += p->tensors[i].bytes;
	return b;
}

uint64_t rt_plan_bytes_out(const RtPlan *p)
{
	uint64_t b = 0;
	for (int i = 0; i < p->ntensors; i++)
		if (p->tensors[i].output)
			b += p->tensors[i].bytes;
	return b;
}

RtStatus rt_plan_host_check(const RtPlan *p, Diag *d)
{
	uint64_t in = 0, w = 0, out = 0;
	for (int i = 0; i < p->ntensors; i++) {
		const RtTensor *t = &p->tensors[i];
		uint64_t *to = t->constant ? &w : t->role == ROLE_INPUT ? &in : NULL;
		if (to)
			*to = *to > UINT64_MAX - t->bytes ? UINT64_MAX : *to + t->bytes;
		if (t->output)
			out = out > UINT64_MAX - t->bytes ? UINT64_MAX : out + t->bytes;
	}
	uint64_t need = in > UINT64_MAX - w ? UINT64_MAX : in + w;
	need = need > UINT64_MAX - out ? UINT64_MAX : need + out;
	char a[32], b[32], c[32], detail[160];
	snprintf(detail, sizeof detail, "inputs %s, constants %s, outputs %s",
		 host_bytes_text(in, a, sizeof a), host_bytes_text(w, b, sizeof b),
		 host_bytes_text(out, c, sizeof c));
	if (host_mem_check(need, detail, d))
		return RT_ERR_INPUT;
	return RT_OK;
}

uint64_t rt_launch_bytes(const RtPlan *p, const RtLaunch *l)
{
	uint64_t b = 0;
	for (int i = 0; i < l->nargs; i++) {
		if (l->args[i].type != RT_P_PTR)
			continue;
		/* an alias and the tensor it shares are one buffer */
		int t = l->args[i].tensor;
		if (t < p->ntensors && p->tensors[t].alias >= 0)
			t = p->tensors[t].alias;
		bool seen = false;
		for (int k = 0; k < i; k++) {
			int u = l->args[k].tensor;
			if (l->args[k].type != RT_P_PTR)
				continue;
			if (u < p->ntensors && p->tensors[u].alias >= 0)
				u = p->tensors[u].alias;
			seen |= u == t;
		}
		if (!seen)
			b += l->args[i].tensor < p->ntensors ? p->tensors[l->args[i].tensor].bytes : 0;
	}
	return b;
}

/* ---- argument packing ------------------------------------------------------ */

/* Bytes of launch l's slots, up to its tensor maps (a multiple of RT_TMAP_ALIGN). */
static size_t slots_bytes(const RtLaunch *l)
{
	size_t n = ((size_t)l->nargs + 1) * sizeof(RtArgSlot);
	return (n + RT_TMAP_ALIGN - 1) / RT_TMAP_ALIGN * RT_TMAP_ALIGN;
}

RtArgSlot *rt_slots_new(const RtLaunch *l)
{
	size_t n = slots_bytes(l);
	for (int i = 0; i < l->nargs; i++)
		n += l->args[i].type == RT_P_TMAP ? RT_TMAP_BYTES : 0;
	void *p = aligned_alloc(RT_TMAP_ALIGN, n);
	if (!p)
		die("out of memory (%zu bytes)", n);
	memset(p, 0, n);
	return p;
}

void rt_pack_args(const RtLaunch *l, const uint64_t *bufs, RtArgSlot *slots, void **argv)
{
	unsigned char *maps = (unsigned char *)slots + slots_bytes(l);
	for (int i = 0; i < l->nargs; i++) {
		const RtArg *a = &l->args[i];
		RtArgSlot *s = &slots[i];
		memset(s, 0, sizeof *s);
		if (a->type == RT_P_TMAP) {
			memset(maps, 0, RT_TMAP_BYTES);
			argv[i] = maps;
			maps += RT_TMAP_BYTES;
			continue;
		}
		switch (a->type) {
		case RT_P_PTR: s->ptr = bufs[a->tensor]; break;
		case RT_P_I64: s->i64 = a->i; break;
		case RT_P_I32: s->i32 = (int32_t)a->i; break;
		case RT_P_F64: s->f64 = a->f; break;
		case RT_P_F32: s->f32 = (float)a->f; break;
		default: die("bad parameter type %d", (int)a->type);
		}
		argv[i] = s;
	}
}

/* ---- the driver ------------------------------------------------------------ */

static const struct { int code; const char *name, *text; } known_errors[] = {
	{1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	{2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	{3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
	{34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
	{35, "CUDA_ERROR_INSUFFICIENT_DRIVER", "CUDA driver version is insufficient"},
	{100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
	{101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
	{200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
	{209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
	{218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
	{222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain"},
	{401, "CUDA_ERROR_ILLEGAL_STATE", "the operation cannot be performed in the present state"},
	{500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
	{700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
	{701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
	{702, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
	{719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
	{801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
	{900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted when stream is capturing"},
	{901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", "operation failed due to a previous error during capture"},
	{999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

RtStatus rt_driver_fail(const RtDriver *drv, Diag *d, const char *call, CUresult r)
{
	const char *name = NULL, *text = NULL;
	if (!drv->cuGetErrorName || drv->cuGetErrorName(r, &name) != CUDA_SUCCESS)
		name = NULL;
	if (!drv->cuGetErrorString || drv->cuGetErrorString(r, &text) != CUDA_SUCCESS)
		text = NULL;
	for (size_t i = 0; i < sizeof known_errors / sizeof known_errors[0]; i++)
		if (known_errors[i].code == r) {
			if (!name)
				name = known_errors[i].name;
			if (!text)
				text = known_errors[i].text;
		}
	char num[32];
	if (!name) {
		snprintf(num, sizeof num, "CUDA error %d", r);
		name = num;
	}
	if (text)
		diag_set(d, "", 0, 0, "%s failed: %s (%s)", call, name, text);
	else
		diag_set(d, "", 0, 0, "%s failed: %s", call, name);
	return RT_ERR_DEVICE;
}

const char *rt_call_name_(const char *call_text)
{
	static const struct { const char *name, *sym; } syms[] = {
#define X(name, sym, req, args) {#name, sym},
		RT_DRIVER_FUNCS(X)
#undef X
	};
	size_t n = strcspn(call_text, "( ");
	for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++)
		if (strlen(syms[i].name) == n && strncmp(syms[i].name, call_text, n) == 0)
			return syms[i].sym;
	return call_text;
}

/* Put "context: " in front of a message already in d. */
static void diag_prefix(Diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void diag_prefix(Diag *d, const char *fmt, ...)
{
	char pre[300], old[sizeof d->msg];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(pre, sizeof pre, fmt, ap);
	va_end(ap);
	snprintf(old, sizeof old, "%s", d->msg);
	if (snprintf(d->msg, sizeof d->msg, "%s: %s", pre, old) >= (int)sizeof d->msg)
		d->msg[sizeof d->msg - 1] = '\0';
}

RtStatus rt_tmaps_encode(RtSession *s, const RtLaunch *l, const uint64_t *bufs, void **argv,
			 Diag *d)
{
	for (int i = 0; i < l->nargs; i++) {
		const RtArg *a = &l->args[i];
		if (a->type != RT_P_TMAP)
			continue;
		if (!s->drv.cuTensorMapEncodeTiled) {
			diag_set(d, "", 0, 0, "the CUDA driver library '%s' has no "
				 "cuTensorMapEncodeTiled, which the plan's TMA tiles need (CUDA 12 "
				 "or later)", s->drv.path);
			return RT_ERR_DEVICE;
		}
		const RtTmap *tm = a->tm;
		unsigned box[RT_TMAP_MAXRANK], one[RT_TMAP_MAXRANK];
		for (int k = 0; k < tm->rank; k++) {
			box[k] = tm->box[k];
			one[k] = 1;
		}
		/* swizzle 128B (3), L2 promotion 256B (3), zeros outside (OOB fill none) */
		CUresult r = s->drv.cuTensorMapEncodeTiled(argv[i], tm->dtype, (unsigned)tm->rank,
			(void *)(uintptr_t)bufs[a->tensor], tm->dim, tm->stride + 1, box, one,
			0, 3, 3, 0);
		if (r != CUDA_SUCCESS) {
			rt_driver_fail(&s->drv, d, "cuTensorMapEncodeTiled", r);
			diag_prefix(d, "the tensor map of argument %d over tensor '%s' (at 0x%llx)",
				    i, s->plan->tensors[a->tensor].name,
				    (unsigned long long)bufs[a->tensor]);
			return RT_ERR_DEVICE;
		}
	}
	return RT_OK;
}

static RtStatus driver_open(RtDriver *drv, Diag *d)
{
	memset(drv, 0, sizeof *drv);
	const char *path = getenv("FUSEC_LIBCUDA");
	if (!path || !path[0])
		path = "libcuda.so.1";
	snprintf(drv->path, sizeof drv->path, "%s", path);
	drv->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!drv->lib) {
		const char *why = dlerror();
		diag_set(d, "", 0, 0, "cannot load the CUDA driver library '%s': %s; is an NVIDIA "
			 "driver installed? (FUSEC_LIBCUDA names another path)", path,
			 why ? why : "unknown reason");
		return RT_ERR_DEVICE;
	}
	void *sym;
#define X(name, symname, req, args) \
	sym = dlsym(drv->lib, symname); \
	if (!sym && (req)) { \
		diag_set(d, "", 0, 0, "the CUDA driver library '%s' has no %s (driver too old?)", \
			 path, symname); \
		dlclose(drv->lib); \
		memset(drv, 0, sizeof *drv); \
		return RT_ERR_DEVICE; \
	} \
	memcpy(&drv->name, &sym, sizeof sym);
	RT_DRIVER_FUNCS(X)
#undef X
	return RT_OK;
}

/* The oldest device the kernels run on: CG_MIN_ARCH (codegen/codegen.h), which
 * fusec-run does not link. MIN ARCH */
enum { RT_MIN_ARCH = 70 };

/* Initialise the driver and fill s->dev for device `ordinal`, which must exist and
 * be recent enough for the kernels and for one of s->plan's arches: s->variant. */
static RtStatus device_info(RtSession *s, int ordinal, Diag *d)
{
	RtDeviceInfo *dev = &s->dev;
	int count = 0;
	RT_CU(s, d, cuInit(0));
	RT_CU(s, d, cuDriverGetVersion(&dev->driver_version));
	RT_CU(s, d, cuDeviceGetCount(&count));
	if (count == 0) {
		diag_set(d, "", 0, 0, "no CUDA device found");
		return RT_ERR_DEVICE;
	}
	if (ordinal < 0 || ordinal >= count) {
		diag_set(d, "", 0, 0, "there is no CUDA device %d (%d device%s found)", ordinal,
			 count, count == 1 ? "" : "s");
		return RT_ERR_DEVICE;
	}
	dev->ordinal = ordinal;
	RT_CU(s, d, cuDeviceGet(&s->device, ordinal));
	RT_CU(s, d, cuDeviceGetName(dev->name, (int)sizeof dev->name - 1, s->device));
	RT_CU(s, d, cuDeviceGetAttribute(&dev->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
					 s->device));
	RT_CU(s, d, cuDeviceGetAttribute(&dev->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
					 s->device));
	RT_CU(s, d, cuDeviceGetAttribute(&dev->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
					 s->device));
	RT_CU(s, d, cuDeviceGetAttribute(&dev->l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
					 s->device));
	int have = dev->cc_major * 10 + dev->cc_minor;
	if (have < RT_MIN_ARCH) {
		diag_set(d, "", 0, 0, "device %d (%s) is sm_%d, older than fusec's kernels "
			 "need: the lowest supported is sm_%d", ordinal, dev->name, have,
			 RT_MIN_ARCH);
		return RT_ERR_DEVICE;
	}
	if (!s->plan)
		return RT_OK;
	s->variant = rt_plan_pick(s->plan, dev->cc_major, dev->cc_minor);
	if (s->variant < 0 && s->plan->nvariants <= 1) {
		diag_set(d, "", 0, 0, "the plan targets %s but device %d (%s) is sm_%d; compile it "
			 "with --arch sm_%d", s->plan->arch, ordinal, dev->name, have, have);
		return RT_ERR_DEVICE;
	}
	if (s->variant < 0) {
		Buf list = {0};
		for (int v = 0; v < s->plan->nvariants; v++)
			buf_printf(&list, "%s%s", v ? ", " : "", s->plan->variants[v].arch);
		diag_set(d, "", 0, 0, "the plan targets %s, none of which device %d (%s), sm_%d, "
			 "can run; compile it with --arch sm_%d among them", list.data, ordinal,
			 dev->name, have, have);
		buf_free(&list);
		return RT_ERR_DEVICE;
	}
	return RT_OK;
}

static RtStatus open_device(RtSession *s, int ordinal, Diag *d)
{
	RtStatus st = device_info(s, ordinal, d);
	if (st != RT_OK)
		return st;
	RT_CU(s, d, cuDevicePrimaryCtxRetain(&s->ctx, s->device));
	RT_CU(s, d, cuCtxSetCurrent(s->ctx));
	return RT_OK;
}

enum { JIT_LOG_SIZE = 16384 };

static void trim_log(char *log)
{
	size_t n = strlen(log);
	while (n > 0 && (log[n - 1] == '\n' || log[n - 1] == ' ' || log[n - 1] == '\r'))
		log[--n] = '\0';
}

static RtStatus load_module(RtSession *s, Diag *d)
{
	const RtPlan *pl = s->plan;
	size_t len;
	char *ptx = read_regular_file(pl->ptx_path, RT_PTX_MAX_BYTES, &len, d);
	if (!ptx) {
		diag_prefix(d, "the plan's PTX file");
		return RT_ERR_INPUT;
	}
	char sha[65];
	sha256_hex(ptx, len, sha);
	if (strcmp(sha, pl->ptx_sha256) != 0) {
		free(ptx);
		diag_set(d, pl->ptx_path, 0, 0, "the PTX is not the one %s was compiled with "
			 "(SHA-256 %.12s…, the plan records %.12s…): the folder holds "
			 "files of different compiles", pl->path, sha, pl->ptx_sha256);
		return RT_ERR_INPUT;
	}
	if (rt_ptx_check_params(pl, ptx, len, d) < 0) {
		free(ptx);
		return RT_ERR_INPUT;
	}
	char *errlog = xcalloc(JIT_LOG_SIZE, 1), *infolog = xcalloc(JIT_LOG_SIZE, 1);
	int opts[4] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
		       CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
	void *vals[4] = {errlog, (void *)(uintptr_t)JIT_LOG_SIZE,
			 infolog, (void *)(uintptr_t)JIT_LOG_SIZE};
	CUresult r = s->drv.cuModuleLoadDataEx(&s->module, ptx, 4, opts, vals);
	free(ptx);
	RtStatus st = RT_OK;
	if (r != CUDA_SUCCESS) {
		s->module = NULL;
		st = rt_driver_fail(&s->drv, d, "cuModuleLoadDataEx", r);
		errlog[JIT_LOG_SIZE - 1] = '\0';
		trim_log(errlog);
		if (errlog[0]) {
			size_t n = strlen(d->msg);
			snprintf(d->msg + n, sizeof d->msg - n, ": %s", errlog);
		}
		diag_prefix(d, "loading %s", pl->ptx_path);
	}
	free(errlog);
	free(infolog);
	return st;
}

static RtStatus get_functions(RtSession *s, Diag *d)
{
	const RtPlan *pl = s->plan;
	s->funcs = xcalloc((size_t)pl->nkernels + 1, sizeof *s->funcs);
	for (int i = 0; i < pl->nkernels; i++) {
		const RtKernel *k = &pl->kernels[i];
		CUresult r = s->drv.cuModuleGetFunction(&s->funcs[i], s->module, k->entry);
		if (r != CUDA_SUCCESS) {
			rt_driver_fail(&s->drv, d, "cuModuleGetFunction", r);
			diag_prefix(d, "kernel '%s' (entry '%s')", k->name, k->entry);
			return RT_ERR_DEVICE;
		}
		if (k->cluster > 1 && !s->drv.cuLaunchKernelEx) {
			diag_set(d, "", 0, 0, "the CUDA driver library '%s' has no cuLaunchKernelEx, "
				 "which kernel '%s' needs (launched in clusters of %u blocks; CUDA "
				 "12 or later)", s->drv.path, k->name, k->cluster);
			return RT_ERR_DEVICE;
		}
		uint32_t most = 0;
		for (int l = 0; l < pl->nlaunches; l++)
			if (pl->launches[l].kernel == i && pl->launches[l].shared_bytes > most)
				most = pl->launches[l].shared_bytes;
		/* a reduce kernel's row cache in dynamic shared memory: as much as its
		 * rule may ask at any size, since the plan may be bound again */
		const CgLaunch *kl = &k->launch;
		if (kl->coop && kl->rule == CG_RULE_REDUCE && kl->arg[13] && kl->arg[14] > 0) {
			int64_t cap = cg_reduce_dyn_threads(kl->arg[14]) * kl->arg[14];
			if (cap > most)
				most = (uint32_t)cap;
		}
		if (most > 48 * 1024) {
			r = s->drv.cuFuncSetAttribute(s->funcs[i],
						      CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
						      (int)most);
			if (r != CUDA_SUCCESS) {
				rt_driver_fail(&s->drv, d, "cuFuncSetAttribute", r);
				diag_prefix(d, "kernel '%s' asking for %u bytes of shared memory",
					    k->name, most);
				return RT_ERR_DEVICE;
			}
		}
	}
	return RT_OK;
}

/* Upload every constant from the plan's weights file (read once). */
static RtStatus upload_constants(RtSession *s, Diag *d)
{
	const RtPlan *pl = s->plan;
	bool any = false;
	for (int i = 0; i < pl->ntensors; i++)
		any = any || pl->tensors[i].constant;
	if (!any)
		return RT_OK;
	if (!pl->weights_path) {
		diag_set(d, pl->path, 0, 0, "the plan has constants but names no weights file");
		return RT_ERR_INPUT;
	}
	/* Read no more than the constants need: the file is a regular file of exactly
	 * their extent (codegen/plan.c), and a hostile plan or file bounds nothing. */
	uint64_t need = 0;
	for (int i = 0; i < pl->ntensors; i++) {
		const RtTensor *t = &pl->tensors[i];
		if (t->constant)
			need = t->bytes > UINT64_MAX - t->offset ? UINT64_MAX
				: t->offset + t->bytes > need ? t->offset + t->bytes : need;
	}
	struct stat sb;
	if (stat(pl->weights_path, &sb) == 0 && S_ISREG(sb.st_mode) && (uint64_t)sb.st_size > need) {
		diag_set(d, pl->weights_path, 0, 0, "the weights file has %llu bytes, more than the "
			 "%llu the plan's constants take: it is not the one %s was compiled with",
			 (unsigned long long)sb.st_size, (unsigned long long)need, pl->path);
		return RT_ERR_INPUT;
	}
	size_t len;
	char *w = read_regular_file(pl->weights_path, need >= SIZE_MAX ? 0 : (size_t)need + 1, &len, d);
	if (!w) {
		diag_prefix(d, "the plan's weights file");
		return RT_ERR_INPUT;
	}
	char sha[65];
	sha256_hex(w, len, sha);
	if (strcmp(sha, pl->weights_sha256) != 0) {
		free(w);
		diag_set(d, pl->weights_path, 0, 0, "the weights are not the ones %s was "
			 "compiled with (SHA-256 %.12s…, the plan records %.12s…): the folder "
			 "holds files of different compiles", pl->path, sha, pl->weights_sha256);
		return RT_ERR_INPUT;
	}
	RtStatus st = RT_OK;
	for (int i = 0; st == RT_OK && i < pl->ntensors; i++) {
		const RtTensor *t = &pl->tensors[i];
		if (!t->constant)
			continue;
		if (t->offset > len || len - t->offset < t->bytes) {
			diag_set(d, pl->weights_path, 0, 0,
				 "constant '%s' (%llu bytes at %llu) lies past the end of the file "
				 "(%zu bytes)", t->name, (unsigned long long)t->bytes,
				 (unsigned long long)t->offset, len);
			st = RT_ERR_INPUT;
			break;
		}
		HostTensor h = {.dtype = t->dtype, .rank = t->rank, .n = t->n,
				.data = w + t->offset};
		memcpy(h.dim, t->dim, sizeof h.dim);
		st = rt_session_upload(s, i, &h, d);
	}
	free(w);
	return st;
}

static RtStatus alloc_buffers(RtSession *s, Diag *d)
{
	const RtPlan *pl = s->plan;
	s->bufs = xcalloc((size_t)pl->ntensors + 1, sizeof *s->bufs);
	s->own = xcalloc((size_t)pl->ntensors + 1, sizeof *s->own);
	for (int i = 0; i < pl->ntensors; i++) {
		const RtTensor *t = &pl->tensors[i];
		if (!t->buffer)
			continue;
		CUdeviceptr p = 0;
		CUresult r = s->drv.cuMemAlloc(&p, (size_t)t->bytes);
		if (r != CUDA_SUCCESS) {
			rt_driver_fail(&s->drv, d, "cuMemAlloc_v2", r);
			diag_prefix(d, "allocating %llu bytes for tensor '%s'",
				    (unsigned long long)t->bytes, t->name);
			return RT_ERR_DEVICE;
		}
		s->bufs[i] = s->own[i] = p;
		if (t->role != ROLE_INPUT)
			RT_CU(s, d, cuMemsetD8(p, 0xff, (size_t)t->bytes));
	}
	for (int i = 0; i < pl->ntensors; i++)
		if (pl->tensors[i].alias >= 0)
			s->bufs[i] = s->bufs[pl->tensors[i].alias];
	if (pl->scratch_bytes) {
		/* one zeroed workspace serves every launch: they run in order on one
		 * stream, and each kernel leaves the zeros it relies on (codegen.h) */
		CUdeviceptr p = 0;
		CUresult r = s->drv.cuMemAlloc(&p, (size_t)pl->scratch_bytes);
		if (r != CUDA_SUCCESS) {
			rt_driver_fail(&s->drv, d, "cuMemAlloc_v2", r);
			diag_prefix(d, "allocating %llu bytes of scratch",
				    (unsigned long long)pl->scratch_bytes);
			return RT_ERR_DEVICE;
		}
		s->bufs[pl->ntensors] = s->own[pl->ntensors] = p;
		RT_CU(s, d, cuMemsetD8(p, 0, (size_t)pl->scratch_bytes));
	}
	s->slots = xcalloc((size_t)pl->nlaunches + 1, sizeof *s->slots);
	s->argv = xcalloc((size_t)pl->nlaunches + 1, sizeof *s->argv);
	for (int i = 0; i < pl->nlaunches; i++) {
		const RtLaunch *l = &pl->launches[i];
		s->slots[i] = rt_slots_new(l);
		s->argv[i] = xcalloc((size_t)l->nargs + 1, sizeof **s->argv);
		rt_pack_args(l, s->bufs, s->slots[i], s->argv[i]);
		RtStatus st = rt_tmaps_encode(s, l, s->bufs, s->argv[i], d);
		if (st != RT_OK)
			return st;
	}
	return RT_OK;
}

static RtStatus create_stream(RtSession *s, Diag *d)
{
	CUresult r = s->drv.cuStreamCreate(&s->stream, CU_STREAM_DEFAULT);
	if (r != CUDA_SUCCESS) {
		s->stream = NULL;
		return rt_driver_fail(&s->drv, d, "cuStreamCreate", r);
	}
	return RT_OK;
}

RtStatus rt_session_open(RtSession **out, const RtPlan *plan, int ordinal, Diag *d)
{
	*out = NULL;
	if (!plan->bound) {
		diag_set(d, plan->path, 0, 0, "the plan is for every size of its named dims "
			 "(fusec-plan/2): bind their sizes first (rt_plan_bind)");
		return RT_ERR_INPUT;
	}
	RtSession *s = xcalloc(1, sizeof *s);
	s->plan = plan;
	s->graph.bound = xcalloc((size_t)plan->ntensors + 1, sizeof *s->graph.bound);
	/* programmatic dependent launch where the driver has cuLaunchKernelEx, unless
	 * FUSEC_NO_PDL is set (measuring; the kernels' waits are then no-ops) */
	const char *nopdl = getenv("FUSEC_NO_PDL");
	s->pdl = !(nopdl && nopdl[0] && strcmp(nopdl, "0") != 0);
	const char *no = getenv("FUSEC_NO_GRAPH");
	if (no && no[0] && strcmp(no, "0") != 0) {
		s->graph_mode = RT_GRAPH_OFF;
		snprintf(s->graph_why, sizeof s->graph_why, "turned off by FUSEC_NO_GRAPH=%.40s", no);
		rt_one_line(s->graph_why);
	}
	*out = NULL;
	RtStatus st = driver_open(&s->drv, d);
	if (st == RT_OK && !s->drv.cuLaunchKernelEx)
		s->pdl = false;   /* a driver before CUDA 12: launched as before */
	if (st == RT_OK)
		st = open_device(s, ordinal, d);
	if (st == RT_OK) {
		/* the device's variant from here on: its PTX, kernels and launches */
		s->view = *plan;
		rt_plan_use(&s->view, s->variant);
		s->plan = &s->view;
	}
	if (st == RT_OK)
		st = create_stream(s, d);
	if (st == RT_OK)
		st = load_module(s, d);
	if (st == RT_OK)
		st = get_functions(s, d);
	if (st == RT_OK)
		st = alloc_buffers(s, d);
	if (st == RT_OK)
		st = upload_constants(s, d);
	if (st != RT_OK) {
		rt_session_close(s);
		return st;
	}
	*out = s;
	return RT_OK;
}

RtStatus rt_device_check(const RtPlan *plan, int ordinal, RtDeviceInfo *info, Diag *d)
{
	RtSession s = {.plan = plan};
	RtStatus st = driver_open(&s.drv, d);
	if (st == RT_OK)
		st = device_info(&s, ordinal, d);
	if (st == RT_OK && info)
		*info = s.dev;
	/* the library stays loaded (not dlclose'd): the session that follows opens it
	 * again, initialised */
	return st;
}

void rt_session_close(RtSession *s)
{
	if (!s)
		return;
	const RtPlan *pl = s->plan;
	rt_graph_release(s, &s->graph);
	free(s->graph.bound);
	if (s->stream)
		s->drv.cuStreamDestroy(s->stream);
	if (s->own)
		for (int i = 0; i <= pl->ntensors; i++)
			if (s->own[i])
				s->drv.cuMemFree(s->own[i]);
	if (s->module)
		s->drv.cuModuleUnload(s->module);
	if (s->ctx)
		s->drv.cuDevicePrimaryCtxRelease(s->device);
	if (s->drv.lib)
		dlclose(s->drv.lib);
	if (s->slots)
		for (int i = 0; i < pl->nlaunches; i++) {
			free(s->slots[i]);
			free(s->argv[i]);
		}
	free(s->slots);
	free(s->argv);
	free(s->bufs);
	free(s->own);
	free(s->funcs);
	free(s);
}

const RtDeviceInfo *rt_session_device(const RtSession *s)
{
	return &s->dev;
}

const RtPlan *rt_session_plan(const RtSession *s)
{
	return s->plan;
}

void rt_session_arch_line(const RtSession *s, Buf *b)
{
	const RtPlan *pl = s->plan;
	if (pl->nvariants <= 1)
		return;
	buf_printf(b, "arch: %s (of the plan's ", pl->arch);
	for (int v = 0; v < pl->nvariants; v++)
		buf_printf(b, "%s%s", v ? ", " : "", pl->variants[v].arch);
	buf_puts(b, ")\n");
}

static RtStatus check_shape(const RtTensor *t, const HostTensor *h, Diag *d)
{
	bool same = h->dtype == t->dtype && h->rank == t->rank;
	for (int i = 0; same && i < t->rank; i++)
		same = h->dim[i] == t->dim[i];
	if (!same) {
		char want[160], got[160];
		diag_set(d, "", 0, 0, "tensor '%s': expected %s, got %s", t->name,
			 host_shape_text(t->dtype, t->rank, t->dim, want, sizeof want),
			 host_shape_text(h->dtype, h->rank, h->dim, got, sizeof got));
		return RT_ERR_INPUT;
	}
	return RT_OK;
}

RtStatus rt_session_upload(RtSession *s, int tensor, const HostTensor *h, Diag *d)
{
	if (tensor < 0 || tensor >= s->plan->ntensors || !s->bufs[tensor])
		die("upload to tensor %d, which has no buffer", tensor);
	const RtTensor *t = &s->plan->tensors[tensor];
	RtStatus st = check_shape(t, h, d);
	if (st != RT_OK)
		return st;
	RT_CU(s, d, cuMemcpyHtoD(s->bufs[tensor], h->data, (size_t)t->bytes));
	return RT_OK;
}

RtStatus rt_session_download(RtSession *s, int tensor, HostTensor *out, Diag *d)
{
	if (tensor < 0 || tensor >= s->plan->ntensors || !s->bufs[tensor])
		die("download of tensor %d, which has no buffer", tensor);
	const RtTensor *t = &s->plan->tensors[tensor];
	if (host_alloc(out, t->dtype, t->rank, t->dim, d) < 0)
		return RT_ERR_INPUT;
	CUresult r = s->drv.cuMemcpyDtoH(out->data, s->bufs[tensor], (size_t)t->bytes);
	if (r != CUDA_SUCCESS) {
		host_free(out);
		return rt_driver_fail(&s->drv, d, "cuMemcpyDtoH_v2", r);
	}
	return RT_OK;
}

/* Whether launch l goes through cuLaunchKernelEx: a kernel in clusters, or one that
 * waits for the grids before it (programmatic dependent launch: its blocks may be
 * placed while the grid before it runs; the kernel's griddepcontrol.wait holds them
 * until that grid completed and its writes are visible). */
static bool launch_ex(const RtSession *s, const RtKernel *k)
{
	return k->cluster > 1 || (k->pdl && s->pdl);
}

static CUresult launch(RtSession *s, const RtLaunch *l, void **argv)
{
	const RtKernel *k = &s->plan->kernels[l->kernel];
	if (launch_ex(s, k)) {
		CUlaunchAttribute at[2];
		unsigned n = 0;
		memset(at, 0, sizeof at);
		if (k->cluster > 1) {
			at[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
			at[n].value.cluster.x = k->cluster;
			at[n].value.cluster.y = at[n].value.cluster.z = 1;
			n++;
		}
		if (k->pdl && s->pdl) {
			at[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
			at[n].value.programmatic = 1;
			n++;
		}
		CUlaunchConfig c = {{l->grid[0], l->grid[1], l->grid[2]},
				    {l->block[0], l->block[1], l->block[2]},
				    l->shared_bytes, s->stream, at, n};
		return s->drv.cuLaunchKernelEx(&c, s->funcs[l->kernel], argv, NULL);
	}
	return s->drv.cuLaunchKernel(s->funcs[l->kernel], l->grid[0], l->grid[1], l->grid[2],
				     l->block[0], l->block[1], l->block[2], l->shared_bytes,
				     s->stream, argv, NULL);
}

/* The driver call that launches kernel k (for its errors). */
static const char *launch_call(const RtSession *s, const RtKernel *k)
{
	return launch_ex(s, k) ? "cuLaunchKernelEx" : "cuLaunchKernel";
}

RtStatus rt_launch_all(RtSession *s, void ***argv, CUevent *ev, Diag *d)
{
	const RtPlan *pl = s->plan;
	if (ev)
		RT_CU(s, d, cuEventRecord(ev[0], s->stream));
	for (int i = 0; i < pl->nlaunches; i++) {
		const RtLaunch *l = &pl->launches[i];
		CUresult r = launch(s, l, argv[i]);
		if (r != CUDA_SUCCESS) {
			rt_driver_fail(&s->drv, d, launch_call(s, &pl->kernels[l->kernel]), r);
			diag_prefix(d, "launch %d (step %d, kernel '%s')", i, l->step,
				    pl->kernels[l->kernel].name);
			return RT_ERR_DEVICE;
		}
		if (ev)
			RT_CU(s, d, cuEventRecord(ev[i + 1], s->stream));
	}
	return RT_OK;
}

RtStatus rt_session_run(RtSession *s, Diag *d)
{
	bool graph = rt_graph_prepare(s, &s->graph, s->bufs, s->argv);
	RtStatus st = graph ? rt_graph_launch(s, &s->graph, d) : rt_launch_all(s, s->argv, NULL, d);
	if (st != RT_OK)
		return st;
	CUresult r = s->drv.cuCtxSynchronize();
	if (r != CUDA_SUCCESS) {
		rt_driver_fail(&s->drv, d, "cuCtxSynchronize", r);
		diag_prefix(d, "running the plan's kernels%s", graph ? " (replayed as a CUDA graph)" : "");
		return RT_ERR_DEVICE;
	}
	return RT_OK;
}

RtStatus rt_session_run_on(RtSession *s, uint64_t stream, Diag *d)
{
	bool graph = rt_graph_prepare(s, &s->graph, s->bufs, s->argv);
	CUstream own = s->stream;
	s->stream = (CUstream)(uintptr_t)stream;
	RtStatus st = graph ? rt_graph_launch(s, &s->graph, d) : rt_launch_all(s, s->argv, NULL, d);
	s->stream = own;
	return st;
}

RtStatus rt_session_bind(RtSession *s, int tensor, uint64_t devptr, Diag *d)
{
	const RtPlan *pl = s->plan;
	if (tensor < 0 || tensor >= pl->ntensors || !pl->tensors[tensor].buffer) {
		diag_set(d, "", 0, 0, "cannot bind tensor %d: %s", tensor,
			 tensor < 0 || tensor >= pl->ntensors ? "the plan has no such tensor"
			 : "it has no buffer of its own (bind the tensor it aliases)");
		return RT_ERR_INPUT;
	}
	uint64_t p = devptr ? devptr : s->own[tensor];
	s->bufs[tensor] = p;
	for (int i = 0; i < pl->ntensors; i++)
		if (pl->tensors[i].alias == tensor)
			s->bufs[i] = p;
	for (int i = 0; i < pl->nlaunches; i++) {
		rt_pack_args(&pl->launches[i], s->bufs, s->slots[i], s->argv[i]);
		RtStatus st = rt_tmaps_encode(s, &pl->launches[i], s->bufs, s->argv[i], d);
		if (st != RT_OK)
			return st;
	}
	return RT_OK;
}

/* ---- CUDA graphs ------------------------------------------------------------ */

void rt_session_graph_info(const RtSession *s, RtGraphInfo *out)
{
	out->mode = s->graph_mode;
	out->why = s->graph_mode == RT_GRAPH_ON ? "" : s->graph_why;
	out->captures = s->graph_captures;
	out->replays = s->graph_replays;
}

void rt_session_set_graph(RtSession *s, bool on)
{
	if (on) {
		s->graph_mode = RT_GRAPH_ON;
		s->graph_why[0] = '\0';
		return;
	}
	rt_graph_release(s, &s->graph);
	s->graph_mode = RT_GRAPH_OFF;
	snprintf(s->graph_why, sizeof s->graph_why, "turned off by the caller");
}

void rt_graph_release(RtSession *s, RtGraph *g)
{
	if (g->exec)
		s->drv.cuGraphExecDestroy(g->exec);
	g->exec = NULL;
}

/* The capture failed as *why says: runs launch directly from now on. */
static bool fall_back(RtSession *s, RtGraph *g, const Diag *why)
{
	rt_graph_release(s, g);
	rt_graph_release(s, &s->graph);
	s->graph_mode = RT_GRAPH_FALLBACK;
	snprintf(s->graph_why, sizeof s->graph_why, "%s", why->msg);
	return false;
}

static bool plan_has_pdl(const RtPlan *pl);
static bool capture(RtSession *s, RtGraph *g, const uint64_t *bufs, void ***argv, Diag *why);

bool rt_graph_prepare(RtSession *s, RtGraph *g, const uint64_t *bufs, void ***argv)
{
	const RtPlan *pl = s->plan;
	size_t nb = ((size_t)pl->ntensors + 1) * sizeof *bufs;
	if (s->graph_mode != RT_GRAPH_ON)
		return false;
	if (g->exec && memcmp(g->bound, bufs, nb) == 0)
		return true;
	rt_graph_release(s, g);
	Diag why;
	const char *missing = !s->drv.cuStreamBeginCapture ? "cuStreamBeginCapture_v2"
		: !s->drv.cuStreamEndCapture ? "cuStreamEndCapture"
		: !s->drv.cuGraphInstantiate ? "cuGraphInstantiateWithFlags"
		: !s->drv.cuGraphLaunch ? "cuGraphLaunch"
		: !s->drv.cuGraphExecDestroy ? "cuGraphExecDestroy"
		: !s->drv.cuGraphDestroy ? "cuGraphDestroy" : NULL;
	if (missing) {
		diag_set(&why, "", 0, 0, "the CUDA driver library '%s' has no %s (CUDA 11.4 or "
			 "later has)", s->drv.path, missing);
		return fall_back(s, g, &why);
	}
	if (capture(s, g, bufs, argv, &why))
		return true;
	/* a driver may refuse programmatic launches in a capture: try once more
	 * without them (the session's direct launches too, from here on) */
	if (s->pdl && plan_has_pdl(pl)) {
		s->pdl = false;
		if (capture(s, g, bufs, argv, &why))
			return true;
	}
	return fall_back(s, g, &why);
}

/* Whether a kernel of plan pl waits for the grids before it ("pdl"). */
static bool plan_has_pdl(const RtPlan *pl)
{
	for (int k = 0; k < pl->nkernels; k++)
		if (pl->kernels[k].pdl)
			return true;
	return false;
}

/* Capture the plan's launches into g's executable graph; false with *why. */
static bool capture(RtSession *s, RtGraph *g, const uint64_t *bufs, void ***argv, Diag *why)
{
	const RtPlan *pl = s->plan;
	size_t nb = ((size_t)pl->ntensors + 1) * sizeof *bufs;
	CUresult r = s->drv.cuStreamBeginCapture(s->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
	if (r != CUDA_SUCCESS) {
		rt_driver_fail(&s->drv, why, "cuStreamBeginCapture_v2", r);
		return false;
	}
	bool failed = false;
	for (int i = 0; i < pl->nlaunches && !failed; i++) {
		const RtLaunch *l = &pl->launches[i];
		r = launch(s, l, argv[i]);
		if (r != CUDA_SUCCESS) {
			rt_driver_fail(&s->drv, why, launch_call(s, &pl->kernels[l->kernel]), r);
			diag_prefix(why, "capturing launch %d (step %d, kernel '%s')", i, l->step,
				    pl->kernels[l->kernel].name);
			failed = true;
		}
	}
	/* always: it ends the capture, failed or not, and hands back what it holds */
	CUgraph graph = NULL;
	r = s->drv.cuStreamEndCapture(s->stream, &graph);
	if (!failed && r != CUDA_SUCCESS) {
		rt_driver_fail(&s->drv, why, "cuStreamEndCapture", r);
		failed = true;
	} else if (!failed && !graph) {
		diag_set(why, "", 0, 0, "cuStreamEndCapture returned no graph");
		failed = true;
	}
	CUgraphExec exec = NULL;
	if (!failed) {
		r = s->drv.cuGraphInstantiate(&exec, graph, 0);
		if (r != CUDA_SUCCESS) {
			rt_driver_fail(&s->drv, why, "cuGraphInstantiateWithFlags", r);
			exec = NULL;
			failed = true;
		}
	}
	if (graph)   /* the executable graph does not need it */
		s->drv.cuGraphDestroy(graph);
	if (failed)
		return false;
	g->exec = exec;
	memcpy(g->bound, bufs, nb);
	s->graph_captures++;
	return true;
}

RtStatus rt_graph_launch(RtSession *s, RtGraph *g, Diag *d)
{
	CUresult r = s->drv.cuGraphLaunch(g->exec, s->stream);
	if (r != CUDA_SUCCESS) {
		rt_driver_fail(&s->drv, d, "cuGraphLaunch", r);
		diag_prefix(d, "replaying the plan's %d launches as a CUDA graph (FUSEC_NO_GRAPH=1 "
			    "launches them one by one)", s->plan->nlaunches);
		return RT_ERR_DEVICE;
	}
	s->graph_replays++;
	return RT_OK;
}

/* ---- one call ------------------------------------------------------------- */

RtStatus rt_open_and_upload(const char *plan_path, const RtNamed *inputs, int ninputs,
			    RtPlan **plp, RtSession **sp, Diag *d)
{
	*sp = NULL;
	RtPlan *pl = *plp = rt_plan_load(plan_path, d);
	if (!pl)
		return RT_ERR_INPUT;
	if (pl->ndim_names) {
		/* a plan for every size: the sizes of the inputs given */
		const char **names = xcalloc((size_t)ninputs + 1, sizeof *names);
		int *rank = xcalloc((size_t)ninputs + 1, sizeof *rank);
		int64_t (*dim)[IR_MAX_RANK] = xcalloc((size_t)ninputs + 1, sizeof *dim);
		for (int k = 0; k < ninputs; k++) {
			names[k] = inputs[k].name;
			rank[k] = inputs[k].t.rank;
			memcpy(dim[k], inputs[k].t.dim, sizeof dim[k]);
		}
		RtStatus bs = rt_plan_bind_shapes(pl, names, rank, (const int64_t (*)[IR_MAX_RANK])dim,
						  ninputs, d);
		free(names);
		free(rank);
		free(dim);
		if (bs != RT_OK)
			return bs;
	}
	/* given[t]: the input value for plan tensor t (a lookup per input, not a scan
	 * of the inputs per tensor: linear in the plan). */
	int *given = xmalloc(((size_t)pl->ntensors + 1) * sizeof *given);
	for (int i = 0; i < pl->ntensors; i++)
		given[i] = -1;
	for (int k = 0; k < ninputs; k++) {
		int t = rt_plan_find_tensor(pl, inputs[k].name);
		if (t >= 0 && given[t] < 0)
			given[t] = k;
	}
	RtStatus st = RT_OK;
	for (int i = 0; st == RT_OK && i < pl->ntensors; i++) {
		if (pl->tensors[i].role != ROLE_INPUT || pl->tensors[i].constant)
			continue;
		if (given[i] < 0) {
			diag_set(d, "", 0, 0, "no value given for input '%s'", pl->tensors[i].name);
			st = RT_ERR_INPUT;
		} else {
			st = check_shape(&pl->tensors[i], &inputs[given[i]].t, d);
		}
	}
	if (st == RT_OK)
		st = rt_session_open(sp, pl, 0, d);
	for (int i = 0; st == RT_OK && i < pl->ntensors; i++)
		if (pl->tensors[i].role == ROLE_INPUT && !pl->tensors[i].constant)
			st = rt_session_upload(*sp, i, &inputs[given[i]].t, d);
	free(given);
	return st;
}

RtStatus rt_cuda_run(const char *plan_path, const RtNamed *inputs, int ninputs,
		     RtNamed *outputs, int noutputs, Diag *d)
{
	RtPlan *pl;
	RtSession *s;
	for (int i = 0; i < noutputs; i++)
		memset(&outputs[i].t, 0, sizeof outputs[i].t);
	RtStatus st = rt_open_and_upload(plan_path, inputs, ninputs, &pl, &s, d);
	if (st == RT_OK)
		st = rt_session_run(s, d);
	for (int i = 0; st == RT_OK && i < noutputs; i++) {
		int t = rt_plan_find_tensor(pl, outputs[i].name);
		if (t < 0 || (!pl->tensors[t].buffer && pl->tensors[t].alias < 0)) {
			diag_set(d, pl->path, 0, 0, "the plan has no buffer for output '%s'",
				 outputs[i].name);
			st = RT_ERR_INPUT;
			break;
		}
		st = rt_session_download(s, t, &outputs[i].t, d);
	}
	if (st != RT_OK)
		for (int i = 0; i < noutputs; i++)
			host_free(&outputs[i].t);
	rt_session_close(s);
	rt_plan_free(pl);
	return st;
}
