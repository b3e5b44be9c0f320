/* plan.h: the execution plan file NAME.plan.json (SPEC §6, docs/plan-format.md).
 *
 * In:  a Schedule from the search (passes/passes.h), its lowering (CgProgram) and
 *      what the compile was asked.
 * Out: the plan document as text (cJSON_Print: deterministic key order and numbers).
 * Memory: the returned text is malloc'd; the caller frees it.
 *
 * The kernels and bound launches come from cg_lower (codegen.h): per kernel its
 * parameter types and block size, per launch its grid and one argument per parameter. */
#ifndef FUSEC_PLAN_H
#define FUSEC_PLAN_H

#define CG_PLAN_FORMAT "fusec-plan/1"   /* the plan's "format" (docs/plan-format.md) */
#define CG_DEFAULT_ARCH "sm_90"         /* compile's --arch default */

#include "codegen.h"

typedef struct {
	const char *arch;      /* "sm_90" */
	const char *ptx;       /* "reuse.ptx" */
	const char *libdevice; /* NULL when not given */
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
} CgOutputs;

/* Generate the kernels of s for NVPTX (arch, libdevice from info), emit the PTX
 * (and the optimized LLVM IR when want_ll), and render the plan. 0, or -1 with *d
 * (nothing to free then). cg_outputs_free releases a filled CgOutputs. */
int cg_compile_schedule(const Schedule *s, const PlanFileInfo *info, bool want_ll,
			CgOutputs *out, Diag *d);
void cg_outputs_free(CgOutputs *o);

#endif
