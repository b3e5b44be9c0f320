/* host_exec.c: the `cpu` backend's executor (codegen.h, cg_host_*).
 *
 * The schedule is lowered exactly as for PTX, but into a host module; the JIT turns
 * it into functions `void NAME(void **args, int64_t thread, int64_t nthreads)` that
 * run a kernel's whole grid. Launches are then called in plan order with their
 * arguments packed the way cuLaunchKernel reads kernelParams: args[k] points to the
 * value of parameter k. Cooperative kernels also get their launch's geometry in the
 * slot after the last parameter, and the scratch: as on the GPU (runtime.c), one
 * buffer of the largest size any launch asks, zero-filled once per run and shared by
 * every launch, so a kernel that leaves a counter nonzero breaks the next launch
 * here too. */
#include <stdlib.h>
#include <string.h>

#include "codegen.h"
#include "jit.h"

typedef void (*HostKernelFn)(void **args, int64_t thread, int64_t nthreads);

struct CgHost {
	Arena *arena;
	CgProgram prog;
	CgJit *jit;
	HostKernelFn *fn;        /* per kernel index of the module */
	int nfn;
	int ntensors;
};

CgHost *cg_host_new(const Schedule *s, bool allow_tf32, bool allow_3xtf32, Diag *d)
{
	CgHost *h = xcalloc(1, sizeof *h);
	h->arena = arena_new();
	h->ntensors = s->g->ntensors;
	CgOptions o = {.target = CG_TARGET_HOST, .name = s->g->name, .allow_tf32 = allow_tf32,
		       .allow_3xtf32 = allow_3xtf32};
	CgModule *m = cg_module_new(&o, h->arena, d);
	LLVMModuleRef mod = NULL;
	LLVMContextRef ctx = NULL;
	if (!m || cg_lower(m, s, h->arena, &h->prog, d) || cg_module_finish(m, d) ||
	    cg_module_take(m, &mod, &ctx, d)) {
		cg_module_free(m);
		cg_host_free(h);
		return NULL;
	}
	cg_module_free(m);
	h->jit = cg_cpu_quick() ? cg_jit_new_quick(d) : cg_jit_new(d);
	if (h->jit)
		cg_jit_set_passes(h->jit, "");   /* cg_module_finish already ran the pipeline */
	if (!h->jit || cg_jit_add_module(h->jit, mod, ctx, d)) {
		if (!h->jit) {
			LLVMDisposeModule(mod);
			LLVMContextDispose(ctx);
		}
		cg_host_free(h);
		return NULL;
	}
	for (int i = 0; i < h->prog.nkernels; i++)
		if (h->prog.kernels[i]->index + 1 > h->nfn)
			h->nfn = h->prog.kernels[i]->index + 1;
	h->fn = xcalloc((size_t)(h->nfn ? h->nfn : 1), sizeof *h->fn);
	for (int i = 0; i < h->prog.nkernels; i++) {
		const CgKernel *k = h->prog.kernels[i];
		void *f = cg_jit_lookup(h->jit, k->name, d);
		if (!f) {
			cg_host_free(h);
			return NULL;
		}
		/* the JIT hands out an object pointer; it is the function's address */
		memcpy(&h->fn[k->index], &f, sizeof f);
	}
	return h;
}

const bool *cg_host_buffers(const CgHost *h)
{
	return h->prog.buffer;
}

typedef union {
	void *ptr;
	double f64;
	int64_t i64;
} ArgSlot;

int cg_host_run(CgHost *h, void **data, Diag *d)
{
	for (int i = 0; i < h->prog.naliases; i++) {
		const CgAlias *al = &h->prog.aliases[i];
		data[al->tensor] = data[al->of];
	}
	int max = 0;
	for (int i = 0; i < h->prog.nlaunch; i++)
		if (h->prog.launch[i].nargs > max)
			max = h->prog.launch[i].nargs;
	ArgSlot *slot = xcalloc((size_t)max + 1, sizeof *slot);
	void **argv = xcalloc((size_t)max + 2, sizeof *argv);
	int64_t sbytes = 0;
	for (int i = 0; i < h->prog.nlaunch; i++)
		for (int p = 0; p < h->prog.launch[i].nargs; p++) {
			const CgArg *a = &h->prog.launch[i].args[p];
			if (a->kind == CG_ARG_SCRATCH && a->i > sbytes)
				sbytes = a->i;
		}
	void *scratch = sbytes ? xcalloc((size_t)sbytes, 1) : NULL;
	int rc = 0;
	for (int i = 0; i < h->prog.nlaunch && !rc; i++) {
		const CgBound *b = &h->prog.launch[i];
		int64_t geom[7] = {b->at.grid[0], b->at.grid[1], b->at.grid[2], b->at.block[0],
				   b->at.block[1], b->at.block[2], b->at.shared_bytes};
		argv[b->nargs] = geom;
		for (int p = 0; p < b->nargs; p++) {
			const CgArg *a = &b->args[p];
			switch (a->kind) {
			case CG_ARG_TENSOR:
				slot[p].ptr = data[a->tensor];
				if (!slot[p].ptr) {
					diag_set(d, "cpu", 0, 0, "launch %d of kernel %s binds tensor %d, "
						 "which has no buffer", i, b->kernel->name, a->tensor);
					rc = -1;
				}
				break;
			case CG_ARG_F64:
				slot[p].f64 = a->f;
				break;
			case CG_ARG_I64:
				slot[p].i64 = a->i;
				break;
			case CG_ARG_SCRATCH:
				slot[p].ptr = scratch;
				break;
			case CG_ARG_TMAP:   /* GPU kernels only (CG_PARAM_TMAP) */
				diag_set(d, "cpu", 0, 0, "internal: launch %d of kernel %s takes a "
					 "tensor map", i, b->kernel->name);
				rc = -1;
				break;
			}
			argv[p] = &slot[p];
		}
		if (!rc)
			h->fn[b->kernel->index](argv, 0, 1);
	}
	free(scratch);
	free(slot);
	free(argv);
	return rc;
}

int cg_host_bind(CgHost *h, const Graph *g, Diag *d)
{
	if (g->ntensors != h->ntensors) {
		diag_set(d, "cpu", 0, 0, "internal: the graph bound has %d tensors, the compiled "
			 "one %d", g->ntensors, h->ntensors);
		return -1;
	}
	int64_t *dims = NULL;
	int cap = 0;
	for (int i = 0; i < h->prog.nlaunch; i++) {
		CgBound *b = &h->prog.launch[i];
		if (!b->dsrc)
			continue;
		if (b->ndims > cap) {
			cap = b->ndims;
			dims = xrealloc(dims, sizeof *dims * (size_t)cap);
		}
		dims[0] = 1;
		for (int s = 1; s < b->ndims; s++) {
			int t = b->dsrc[2 * s], axis = b->dsrc[2 * s + 1];
			dims[s] = g->tensors[t].dim[axis];
		}
		cg_launch_dims(b->kernel, dims, b->ndims, &b->at);
		for (int p = 0; p < b->nargs; p++) {
			const CgParam *pp = &b->kernel->params[p];
			if (pp->kind == CG_PARAM_DIM)
				b->args[p].i = pp->id < b->ndims ? dims[pp->id] : 1;
			else if (pp->kind == CG_PARAM_SCRATCH)
				b->args[p].i = b->at.scratch_bytes;
		}
	}
	free(dims);
	return 0;
}

void cg_host_free(CgHost *h)
{
	if (!h)
		return;
	cg_jit_free(h->jit);
	free(h->fn);
	arena_free(h->arena);
	free(h);
}
