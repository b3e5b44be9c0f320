/* plan.h: the execution plan file NAME.plan.json (SPEC §6, docs/plan-format.md).
 *
 * In:  a Schedule from the search (passes/passes.h), its lowering (CgProgram) and
 *      what the compile was asked.
 * Out: the plan document as text, compact or pretty (json_write.h), deterministic
 *      byte for byte: fixed key order, integers exact, doubles shortest round-trip.
 * Memory: the returned text is malloc'd; the caller frees it.
 *
 * The kernels and bound launches come from cg_lower (codegen.h): per kernel its
 * parameter types and block size, per launch its grid and one argument per parameter. */
#ifndef FUSEC_PLAN_H
#define FUSEC_PLAN_H

#include "codegen.h"

typedef struct {
	const char *arch;      /* "sm_90" */
	const char *ptx;       /* "reuse.ptx" */
	const char *libdevice; /* NULL when not given */
	bool pretty;           /* indented for people (--plan-style pretty); else compact */
	const char *cache_dir; /* the kernel cache (kcache.h), or NULL for none */
	/* Called, when not NULL, as each phase of cg_compile_schedule starts ("kernels",
	 * "llvm", "plan") with the number of distinct kernels (0 before they are known). */
	void (*progress)(const char *phase, int nkernels);
} PlanFileInfo;

char *cg_plan_json(const Schedule *s, const CgProgram *prog, const PlanFileInfo *info);

/* Everything `fusec compile` writes, built in memory. */
typedef struct {
	Buf ptx;               /* NAME.ptx */
	Buf ll;                /* NAME.ll, when asked */
	char *plan;            /* NAME.plan.json text, ending in a newline (malloc'd) */
	int nkernels;          /* distinct kernels in the PTX */
	double t_kernels;      /* seconds: building the kernels' IR (cg_lower) */
	double t_optimize;     /* verify, libdevice, default<O3> (cg_module_finish) */
	double t_emit;         /* NVPTX instruction selection and PTX text */
	double t_plan;         /* rendering the plan JSON */
	int cache;             /* -1 no cache, 0 miss (stored), 1 hit (LLVM skipped) */
} CgOutputs;

/* Generate the kernels of s for NVPTX (arch, libdevice from info), emit the PTX
 * (and the optimized LLVM IR when want_ll), and render the plan. With a cache_dir
 * (and no want_ll), PTX cached for the very same kernels skips LLVM's optimizer and
 * emission; a miss stores what it emitted. 0, or -1 with *d
 * (nothing to free then). cg_outputs_free releases a filled CgOutputs. */
int cg_compile_schedule(const Schedule *s, const PlanFileInfo *info, bool want_ll,
			CgOutputs *out, Diag *d);
void cg_outputs_free(CgOutputs *o);

#endif
