/* plan.h: the execution plan file NAME.plan.json (SPEC §6, docs/plan-format.md).
 *
 * In:  a Schedule from the search (passes/passes.h) and what the compile was asked.
 * Out: the plan document as text (cJSON_Print: deterministic key order and numbers).
 * Memory: the returned text is malloc'd; the caller frees it.
 *
 * Code generation adds per kernel its parameter list and launch rule, and per launch
 * its grid and arguments; this writer leaves those keys out until they exist. */
#ifndef FUSEC_PLAN_H
#define FUSEC_PLAN_H

#include "../passes/passes.h"

typedef struct {
	const char *arch;      /* "sm_90" */
	const char *ptx;       /* "reuse.ptx" */
	const char *libdevice; /* NULL when not given */
} PlanFileInfo;

char *cg_plan_json(const Schedule *s, const PlanFileInfo *info);

#endif
