/* plan.h: the execution plan file NAME.plan.json (SPEC §6, docs/plan-format.md).
 *
 * In:  a Schedule from the search (passes/passes.h), its lowering (CgProgram) for
 *      each arch asked, and what the compile was asked.
 * Out: the plan document as text, compact or pretty (json_write.h), deterministic
 *      byte for byte: fixed key order, integers exact, doubles shortest round-trip.
 * Memory: the returned text is malloc'd; the caller frees it.
 *
 * The kernels and bound launches come from cg_lower (codegen.h): per kernel its
 * parameter types and block size, per launch its grid and one argument per parameter. */
#ifndef FUSEC_PLAN_H
#define FUSEC_PLAN_H

#define CG_PLAN_FORMAT "fusec-plan/1"   /* the plan's "format" (docs/plan-format.md) */
#define CG_PLAN_FORMAT2 "fusec-plan/2"  /* a graph compiled for every size (Graph.sym) */

#include "codegen.h"

/* The arches one plan carries (fusec compile --arch sm_80,sm_90a): no two alike, so
 * at most the ones the kernels support (sm_70 to sm_90a, nine); a plan for every
 * size has up to CG_MAX_BUCKETS ranges of sizes, each lowered for every arch. */
enum { CG_MAX_ARCHES = 9, CG_MAX_BUCKETS = 4, CG_MAX_TARGETS = CG_MAX_ARCHES * CG_MAX_BUCKETS };

/* One arch of a plan and its PTX file. The search runs once; each target is
 * lowered, optimized and emitted on its own (its tile configurations, launches and
 * kernel cache entries are its own). The first is the plan's top level, the others
 * its "variants" (docs/plan-format.md, "Several arches"). */
typedef struct {
	const char *arch;      /* "sm_90a" */
	const char *ptx;       /* "reuse.ptx"; "reuse.sm_80.ptx" beside other targets */
	const char *ptx_sha256;  /* the PTX's SHA-256 (hex); set by cg_compile_schedule */
	/* A plan for every size: a variant for a range of the sizes (--shape-buckets) is
	 * lowered from g, the schedule's graph at probe sizes in that range (ir_sym_at),
	 * lo[k]..hi[k] for each symbol. NULL: the schedule's own graph, every size. */
	const Graph *g;
	const int64_t *lo, *hi;
} PlanTarget;

typedef struct {
	PlanTarget target[CG_MAX_TARGETS];
	int ntargets;          /* at least 1 */
	const char *libdevice; /* NULL when not given */
	const char *weights;   /* "reuse.weights.bin"; NULL when the graph has no constants */
	bool pretty;           /* indented for people (--plan-style pretty); else compact */
	const char *cache_dir; /* the kernel cache (kcache.h), or NULL for none */
	int threads;           /* LLVM worker threads; 0: cg_default_threads() */
	/* Called, when not NULL, as each phase of cg_compile_schedule starts ("kernels",
	 * "llvm", "plan"), and in "llvm" again as kernels are done: done of total
	 * distinct kernels (0 of 0 before they are known). In "llvm" it may be called
	 * from LLVM's worker threads, one call at a time. */
	void (*progress)(const char *phase, int done, int total);
	bool allow_tf32;       /* --allow-tf32: f32 matmuls may use tf32 tensor cores */
	bool allow_3xtf32;     /* --allow-3xtf32: or three tf32 products a step */
	const char *weights_sha256; /* the weights file's SHA-256 (hex); NULL when none */
	const char *precision; /* --precision: "bf16" or "f16"; NULL when not given */
	const char *keep_f32;  /* with it, --keep-f32 LIST as given, or NULL */
} PlanFileInfo;

/* The weights file: every constant of the graph (Tensor.data), in tensor order,
 * each at an offset aligned to CG_WEIGHTS_ALIGN, zero bytes between. offsets gets
 * one entry per tensor (-1 for tensors that are not constants); returns the file
 * size (0 when there are no constants). */
enum { CG_WEIGHTS_ALIGN = 256 };
uint64_t cg_weights_layout(const Graph *g, int64_t *offsets);
uint64_t cg_weights_layout_size(const Graph *g);
/* The file written to f, tensor by tensor (no copy of the whole file); returns 0,
 * or -1 when a write fails (errno set). */
int cg_weights_write_file(const Graph *g, FILE *f);
/* Whether the file at path holds exactly those bytes (a recompile need not write
 * and sync an unchanged weights file again). Only a regular file, not followed
 * through a symbolic link, can be the same; a pipe is not waited on. */
bool cg_weights_same(const Graph *g, const char *path);
/* The SHA-256 of the file cg_weights_write_file writes, computed tensor by tensor. */
void cg_weights_sha256(const Graph *g, char out[65]);

/* The plan of s lowered once per target: prog[t] for info->target[t]. The targets
 * share the tensors and steps (lowering does not depend on the arch for them: a
 * difference is an internal error); each has its kernels and launches. With one
 * target the plan has no "variants". */
char *cg_plan_json(const Schedule *s, const CgProgram *prog, const PlanFileInfo *info);

/* Everything `fusec compile` writes, built in memory. */
typedef struct {
	Buf ptx[CG_MAX_TARGETS];  /* per target: its PTX file (PlanTarget.ptx) */
	Buf ll[CG_MAX_TARGETS];   /* per target: the LLVM IR, when asked */
	int ntargets;
	char *plan;            /* NAME.plan.json text, ending in a newline (malloc'd) */
	int nkernels;          /* distinct kernels in the PTX files, summed over targets */
	double t_kernels;      /* seconds: building the kernels' IR (cg_lower) */
	double t_optimize;     /* verify, libdevice, default<O3> (cg_module_finish) */
	double t_emit;         /* NVPTX instruction selection and PTX text */
	double t_plan;         /* rendering the plan JSON */
	int chunks;            /* kernel chunks optimized apart (emit_par.h); 0: one module */
	int cache_hits;        /* chunks the kernel cache had; -1: no cache */
	int threads;           /* LLVM worker threads used */
	int twins;             /* kernels whose code an earlier one has (emit_par.h) */
} CgOutputs;

/* Generate the kernels of s for NVPTX (each target's arch, libdevice from info),
 * emit each target's PTX (and the optimized LLVM IR when want_ll), and render the
 * plan. The times and counts below add up the targets. Without want_ll
 * the kernels are built in chunks, optimized and emitted on info->threads threads
 * (emit_par.h), and with a cache_dir a chunk whose PTX is cached skips LLVM; a
 * miss stores what it emitted. With want_ll, one module, no threads, no cache. 0, or -1 with *d
 * (nothing to free then). cg_outputs_free releases a filled CgOutputs. */
int cg_compile_schedule(const Schedule *s, const PlanFileInfo *info, bool want_ll,
			CgOutputs *out, Diag *d);
void cg_outputs_free(CgOutputs *o);

#endif
