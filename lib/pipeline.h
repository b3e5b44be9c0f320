/* pipeline.h: the one compile pipeline, for cmd/ and for the public API (fusec.h).
 *
 * What goes in: a graph's source (a file, or bytes already read: graph text or an
 * ONNX model) and the options of a compile. What comes out: the loaded Graph (in
 * the caller's arena), the Schedule the search made (verified), and everything a
 * compile writes, built in memory (CgOutputs: the plan and one PTX per arch). The
 * steps, in pl_compile:
 *
 *     load → convert → weights → search → verify → lower → emit → plan
 *
 * (convert: --precision bf16|f16, pl_convert, when asked; weights: pl_kmajor.)
 * Every subcommand goes through it: compile and the cuda backend of run and bench
 * all of it, explain and the cpu backend up to verify (then their own lowering).
 * Nothing here prints or exits: errors come back as Diags, which cmd/ prints and
 * the library hands over as fusec_error. Writing the outputs all or none is
 * pl_commit (lib/outputs.c).
 *
 * Memory: pl_load's graph lives in the arena it is given; a PlResult owns its
 * schedule and outputs until pl_result_free. */
#ifndef FUSEC_PIPELINE_H
#define FUSEC_PIPELINE_H

#include "../codegen/plan.h"
#include "../onnx/onnx.h"
#include "../passes/passes.h"

enum { PL_ARCH_LEN = 9, PL_MAX_ERRORS = 1000 };
/* What went wrong, as the exit statuses of SPEC §7 (and fusec.h's codes). */
enum { PL_OK = 0, PL_INVALID = 1, PL_USAGE = 2, PL_FAILED = 3 };

/* Where a graph comes from. */
typedef struct {
	const char *path;         /* a file ("-" is stdin), or the name of text in messages */
	const char *text;         /* set: the bytes, already read (graph text or ONNX) */
	size_t len;
	const OnnxInputShape *shapes;  /* --input-shape: an ONNX input's symbolic dims, a graph
					  file's named dims */
	int nshapes;
	int max_errors;           /* errors reported per graph file (1..PL_MAX_ERRORS) */
	const IrShapeLookup *lookup;  /* or NULL: the shapes of the run's input data, for
				       * the named dims no --input-shape binds */
} PlSource;

/* The options of one compile. pl_default_options fills the defaults. */
typedef struct {
	SearchOptions search;     /* pass_default_options */
	char arch[CG_MAX_TARGETS][PL_ARCH_LEN];   /* in the order given; CG_DEFAULT_ARCH */
	int narch;                /* 1 */
	bool allow_tf32;
	bool allow_3xtf32;        /* f32 matmuls as three tf32 products (when not tf32) */
	const char *libdevice;    /* a bitcode file, or NULL for fusec's own math */
	bool pretty;              /* the plan indented for people */
	const char *cache_dir;    /* the kernel cache, or NULL for none */
	int jobs;                 /* LLVM threads; 0: the CPUs, at most 8 */
	bool emit_ll;             /* keep the optimized LLVM IR (CgOutputs.ll) */
	bool weights;             /* name a weights file in the plan when the graph has
				   * constants (compile: yes; run's cuda backend: no) */
	const char *precision;    /* the plan's record of --precision ("bf16"), or NULL */
	const char *keep_f32;     /* and of --keep-f32 LIST, or NULL */
	void (*progress)(const char *phase, int done, int total);  /* PlanFileInfo.progress */
	int buckets;              /* a plan for every size: its ranges of sizes, each lowered
				   * at its own probe sizes (--shape-buckets; 1..CG_MAX_BUCKETS,
				   * default 3) */
} PlOptions;

/* A compile's products. */
typedef struct {
	Schedule *s;              /* the search's schedule, verified */
	CgOutputs out;            /* the plan, the PTX per arch (and LLVM IR) */
	char ptx_name[CG_MAX_TARGETS][512];  /* NAME.ptx, or NAME.ARCH.ptx beside others */
	double t_search;          /* clock_seconds() when the search ended */
	int64_t bucket_lo[CG_MAX_BUCKETS][IR_SYM_MAX], bucket_hi[CG_MAX_BUCKETS][IR_SYM_MAX];
} PlResult;

/* What the line after a compile says, counted from a plan's text (a result cache
 * hit has no schedule): launches, distinct kernels (of the first arch), bytes moved
 * (per launch, the bytes of every tensor it reads and writes, summed), and the ops
 * the steps run (launches' ops, aliases, views). -1 when the text is not JSON.
 * bytes is -1 for a plan for every size whose dims have no largest size. */
typedef struct {
	long ops, launches, kernels;
	double bytes;
} PlStats;

void pl_default_options(PlOptions *o);
/* Whether a file is an ONNX model: by extension, or by its first byte. */
bool pl_is_onnx(const char *path);

/* --arch LIST: one arch or several, comma-separated ("sm_80,sm_90a"), each sm_NN or
 * sm_NNN with an optional `a`, one LLVM 19 knows and the kernels run on (sm_70
 * on), none twice; at most max, copied into arch[] in the order given (*n of
 * them). PL_OK; PL_USAGE (not such a list) or PL_INVALID (an arch LLVM 19 does
 * not know, one older than sm_70, a duplicate) with the message in d->msg. */
int pl_parse_arches(const char *list, char (*arch)[PL_ARCH_LEN], int max, int *n, Diag *d);
/* An op named by its index in `ops`, the tensor it writes or its own `name`; -2
 * for a graph input (no op writes it), -1 for none. */
long pl_find_op(const Graph *g, const char *spec);

/* load: the graph, with its constants' data; NULL with the errors in diags[0..*nd)
 * (up to src->max_errors of a graph file, then one saying that it stopped; diags
 * has room for src->max_errors + 1). */
Graph *pl_load(Arena *a, const PlSource *src, Diag *diags, int *nd);
/* layout: g's convs and pools rewritten channels last (--layout nhwc, or by
 * default where every conv runs on tensor cores; passes/layout.c), before the
 * conversion. Returns 0. */
int pl_layout(Graph *g, const LayoutOptions *o, LayoutInfo *info);
/* simplify: rewrites that change no value (pow_scalar(x, 2) as mul(x, x);
 * passes/simplify.c; matmuls sharing their first operand brought together with
 * their epilogues, passes/siblings.c), first; none under burn_exact. Returns 0. */
int pl_simplify(Graph *g, bool burn_exact, SiblingInfo *sib);
/* --attention fuse: each chain matmul, softmax, matmul as one op (passes/attention.c),
 * before the layout and the precision. */
int pl_attention(Graph *g, AttentionMode mode, AttentionInfo *info);
/* convert: g rewritten in place to compute in p->to (--precision,
 * passes/precision.c); info says what was converted. 0, or -1 with *d (an unknown
 * --keep-f32 entry). */
int pl_convert(Graph *g, const PrecisionOptions *p, PrecisionInfo *info, Diag *d);
/* Whether f32 weights go K-major for the 3xTF32 tiles (pl_kmajor's x3): x3 (not
 * --no-3xtf32), not tf32 (--allow-tf32 wins), and the comma-separated arch list
 * (NULL: CG_DEFAULT_ARCH) has sm_90a, the one arch whose tiles take them. The CLI
 * and the library ask it alike. */
bool pl_x3_weights(bool x3, bool tf32, const char *arches);
/* weights: the constant weights of f16/bf16 matmuls stored K-major (after the
 * conversion, which decides their dtype; passes/kmajor.c), where FUSEC_KMAJOR=1 is
 * set (off by default: lib/pipeline.c says why); those of f32 matmuls where x3
 * (pl_x3_weights); none under burn_exact. *nmade (may be NULL): the matmuls that
 * read them so. Returns 0. */
int pl_kmajor(Graph *g, bool burn_exact, bool x3, int *nmade);
/* search → verify: the schedule, or NULL with the fault in *d. */
Schedule *pl_schedule(const Graph *g, const SearchOptions *so, Diag *d);
/* search → verify → lower → emit → plan. 0, or -1 with *d (r freed). */
int pl_compile(const Graph *g, const PlOptions *o, PlResult *r, Diag *d);
void pl_result_free(PlResult *r);
/* The file of target i: "NAME.ptx" (ext ".ptx") alone, "NAME.sm_80.ptx" beside
 * other arches, "NAME.b1.ptx" for the variant of the second range of sizes (target
 * i is arch i % narch of range i / narch); with name NULL, only the extension. */
void pl_target_ext(const PlOptions *o, int i, const char *ext, char *out, size_t n,
		   const char *name);
/* lower only: the PTX entry of every launch of s (steps, then launches; NULL where
 * a launch launches nothing), for arch; strings in a. NULL with *d when the
 * lowering fails. */
const char **pl_kernel_names(const Schedule *s, const char *arch, bool tf32, bool x3, Arena *a,
			     Diag *d);
int pl_plan_stats(const char *plan, PlStats *st);
/* Ops of g that compute (syncs left out): the summary's count after a compile. */
long pl_real_ops(const Graph *g);

/* ---- writing the outputs (outputs.c) ------------------------------------------ */

typedef struct {
	const char *ext;         /* ".ptx" */
	const char *text;
	size_t len;
	const Graph *weights;    /* set: the weights file of this graph, written tensor by
				  * tensor instead of text */
	const char *path;        /* set: a file the user named (the depfile), written there
				  * instead of DIR/NAME<ext> */
} PlFile;

/* Called with each error message (one line, no "error:" prefix). */
typedef void (*PlErrorFn)(void *ctx, const char *msg);

/* Write files[0..n) as DIR/NAME<ext>, all or none (docs/reliability.md; the steps
 * are in outputs.c). 0, or -1 after reporting the error through err. */
int pl_commit(const char *dir, const char *name, const PlFile *files, int n, PlErrorFn err,
	      void *ctx);
/* The plan, the PTX per arch, the weights file and the LLVM IR (o->emit_ll) of r,
 * in that order, into files (room for 2 + 2 * CG_MAX_TARGETS); ext holds the
 * extensions' text. Returns how many. */
int pl_output_files(const PlOptions *o, const PlResult *r, PlFile *files,
		    char (*ext)[CG_MAX_TARGETS][32]);

#endif
