/* passes.h: the fusion search (SPEC §3-§4), run ahead of time over a whole graph.
 *
 * In:  a validated Graph (ir_finish done: operand status, segments) and SearchOptions.
 * Out: a Schedule: the plan store (plans with id, relative ops, triggers and strategy
 *      tree), the kernels the plans need, the steps in execution order (one per plan
 *      execution: explored, cache hit or unfused, with its launches), and the record of
 *      every decision the search took. Logs, `explain` and the plan JSON are all
 *      rendered from the Schedule and its record, never from the search itself.
 * Memory: everything a Schedule points to lives in its own arena; pass_free_schedule
 *      releases it. The Graph must outlive the Schedule.
 *
 * Prefix: pass_. Nothing here prints unless a log FILE is given, nothing exits. */
#ifndef FUSEC_PASSES_H
#define FUSEC_PASSES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../ir/ir.h"

typedef enum { LOG_OFF, LOG_BASIC, LOG_MEDIUM, LOG_FULL } LogLevel;

/* "off" "basic" "medium" "full", also "0" (off) and "1" (full). 0 ok, -1 unknown. */
int pass_log_parse(const char *s, LogLevel *out);

typedef struct {
	int max_blocks;        /* blocks per stream optimizer; default 5 */
	int max_explorations;  /* per stream; -1 unlimited */
	int max_bindings;      /* buffers one fused kernel may bind; default 32 */
	LogLevel log_level;
	bool log_json;         /* logs as JSON lines (--log-format json), not text */
	FILE *log;             /* where logs go (NULL: no logs) */
	bool no_record;        /* keep no decision record (benchmarks): no logs, no explain */
	bool burn_exact;       /* burn's rules where fusec deviates on purpose
				* (docs/burn-fidelity.md, --burn-exact) */
} SearchOptions;

void pass_default_options(SearchOptions *o);

/* ---- strategies and plans --------------------------------------------------- */

typedef enum { STRAT_FUSED, STRAT_OPS, STRAT_COMPOSED } StrategyKind;

typedef struct Strategy {
	StrategyKind kind;
	int fuser;             /* STRAT_FUSED: index in the fuser registry */
	uint64_t score;        /* STRAT_FUSED */
	int n;                 /* positions in `ordering` (FUSED, OPS) or subs (COMPOSED) */
	int *ordering;         /* relative positions in execution order */
	struct Strategy **sub; /* COMPOSED: the chunks in execution order */
} Strategy;

typedef enum { TRIG_ON_OPERATIONS, TRIG_ON_SYNC, TRIG_ALWAYS } TriggerKind;

typedef struct {
	TriggerKind kind;
	int nops;              /* TRIG_ON_OPERATIONS: the relative ops that follow */
	RelOp *ops;
} Trigger;

typedef enum { MODE_LAZY, MODE_SYNC } ExecMode;

typedef struct {
	int id;                /* #0, #1, ... in order of creation */
	int nops;              /* relative ops it covers (a prefix of its segment) */
	RelOp *ops;
	int ntriggers, cap_triggers;
	Trigger *triggers;
	Strategy *strategy;    /* positions are 0..nops-1 */
	int max_shape_id;      /* highest relative shape id its ops use */
	int first_kernel;      /* its kernels are first_kernel .. first_kernel+nkernels-1 */
	int nkernels;
} Plan;

/* ---- kernels, launches, steps ---------------------------------------------- */

/* One kernel per fused chunk of a plan and one per op that runs unfused. */
typedef struct {
	const char *name;      /* "fusec_k0_1" */
	int fuser;             /* -1: a single op run unfused */
	uint64_t score;
	int plan;              /* -1: op run without a plan (exploration limit) */
	int nops;
	int *rel;              /* relative positions within the plan, execution order */
	int *ops;              /* global op indices of the first step that launched it */
} Kernel;

/* A launch is the contract between the search and codegen: cg_lower builds its
 * kernel from `ops` and writes to memory exactly the tensors of `out` (pass_verify
 * checks both lists before codegen reads them). Scalars and dims are bound from
 * the kernel's own relative form, since sunk views join its ops there. */
typedef struct {
	int kernel;
	int nops;
	int *ops;              /* global op indices, execution order */
	int nin, nout;
	int *in;               /* global tensors read from memory (made before it) */
	int *out;              /* results written to memory: read by a later launch,
				  or a graph output */
} Launch;

/* Whether tensor t is among the launch's memory reads or writes. */
static inline bool launch_reads(const Launch *l, int t)
{
	for (int i = 0; i < l->nin; i++)
		if (l->in[i] == t)
			return true;
	return false;
}

static inline bool launch_writes(const Launch *l, int t)
{
	for (int i = 0; i < l->nout; i++)
		if (l->out[i] == t)
			return true;
	return false;
}

typedef enum { STEP_EXPLORED, STEP_CACHE_HIT, STEP_UNFUSED } StepKind;

typedef struct {
	StepKind kind;
	ExecMode mode;
	int stream;
	int segment;           /* index in Graph.segs of its first op */
	int plan;              /* -1 for STEP_UNFUSED without a plan */
	int guarded;           /* plan matched but ran unfused (unknown shape ids) */
	int nops;
	int *ops;              /* global op indices in execution order */
	int nlaunch;
	Launch *launch;
} Step;

typedef struct Record Record;

typedef struct {
	Arena *arena;
	const Graph *g;
	SearchOptions opt;
	Plan **plans; int nplans;
	Kernel *kernels; int nkernels;
	Step *steps; int nsteps;
	Record *rec;
	int nexplorations;
	int nhits;
} Schedule;

/* Run the search over every stream of g. Never fails on a valid graph. */
Schedule *pass_search(const Graph *g, const SearchOptions *opt);
void pass_free_schedule(Schedule *s);

/* The schedule verifier (verify.c): every op but the syncs runs in exactly one
 * launch; each launch reads from memory only graph inputs and what earlier launches
 * wrote, lists every operand it does not make itself, and writes every result read
 * by a later launch or output by the graph. 0, or -1 with the first fault in *d. */
int pass_verify(const Schedule *s, Diag *d);

/* ---- views that launch nothing (views.c) -------------------------------------
 *
 * A launch of one un-fused view (swap_dims, permute, expand, slice, or a reshape of
 * such a view) gets no kernel when every op reading its result runs in a launch
 * whose kernel can read through it: that launch's kernel gets the view's op (and
 * the sunk views it reads in turn) in front of its own ops and reads the view's
 * input buffer (codegen/lower.c). Readers that can: launches of elementwise, view
 * and reduce ops; a launch with a matmul when the view is a swap_dims or a full
 * permute whose result is an operand of the matmul alone, at most two such views
 * in front of it with its own (the matmul kernel's strided operands). Never sunk:
 * a graph output, a view read by a conv, pool, cat or gather launch or by another
 * view that keeps its kernel, and a reshape of a tensor in memory (an alias). A
 * function of the schedule alone, so compile, run and explain agree. */
typedef struct {
	const Graph *g;
	bool *sunk;            /* per op: a lone view launch that gets no kernel */
	int nsunk;
	int *producer;         /* per tensor: the op writing it, -1 */
	int *pos;              /* per op: its position in execution order */
	uint32_t *mark, stamp; /* pass_view_chain's scratch */
} ViewSink;

ViewSink *pass_view_sink(const Schedule *s);
/* The sunk views launch l reads through, in execution order, into out (room for
 * every op of the graph); returns how many. */
int pass_view_chain(ViewSink *v, const Launch *l, int *out);
void pass_view_sink_free(ViewSink *v);

/* ---- fusers ----------------------------------------------------------------- */

int pass_nfusers(void);
const char *pass_fuser_name(int i);      /* "ElementWise" */
/* What a fuser's kernels compute, for code generation: an elementwise trace (with
 * views), a matmul or conv with its epilogue, reductions with what they fuse, or
 * NHWCRelayout's trace then pool. */
typedef enum { FK_NONE, FK_ELEMWISE, FK_MATMUL, FK_REDUCE, FK_NHWC } FuserKind;
FuserKind pass_fuser_kind(int i);        /* FK_NONE: not a fuser (an op alone) */
/* The registry index of NHWCRelayout, whose fused strategy runs as two launches: its
 * elementwise trace, then the pool alone (processor.c; codegen/lower.c decides which
 * tensor the trace writes channel-last). */
int pass_nhwc_fuser(void);
/* Launch li of step st as an NHWCRelayout trace (the launch after it its pool): the
 * tensor it writes channel-last, or -1 (not such a launch, or the pool's input is
 * not made by the trace, is a graph output, or is read by anything but the trace's
 * ops and the pool). A function of the schedule alone (fuser_nhwc.c), so compile,
 * run and explain agree. */
int pass_nhwc_relayout(const Schedule *s, const Step *st, int li);
/* max_pool2d and avg_pool2d: the ops that end an NHWCRelayout trace. */
bool pass_op_is_pool(int kind);
/* Fusers (bit i: registry index i) that take an op of this kind as a first op; in
 * *after_matmul those that take it only after a matmul (fuser_probe.c). */
unsigned pass_fusers_taking(int kind, bool burn_exact, unsigned *after_matmul);
/* Fusers that take an op of this kind, at its input's last use, to end an
 * elementwise trace (NHWCRelayout and the pools). burn_exact: the fusers of
 * --burn-exact (NHWCRelayout competes only there), else the default ones. */
unsigned pass_fusers_ending(int kind, bool burn_exact);

/* ---- rendering from the record ----------------------------------------------- */

/* Write the log lines of `level` and below (SPEC §4) to f: text, or with
 * s->opt.log_json one JSON object a line (docs/inspect.md names the fields). */
void pass_log_write(const Schedule *s, LogLevel level, FILE *f);
/* The same events as JSON lines (log_json.c). */
void pass_log_write_json(const Schedule *s, LogLevel level, Buf *b);
/* Level of an event kind (record.c); shared by both log formats. */
LogLevel pass_event_level(int kind);
/* The fusion trace table of one step, as logged after each execution. */
void pass_trace_table(const Schedule *s, int step, Buf *out);
/* `fusec explain`: every op (op < 0) or one op; text, or one JSON document
 * ("format": "fusec-explain/1", docs/inspect.md). entry, when not NULL, names the
 * PTX kernel of every launch (steps in order, each step's launches in order; NULL
 * for a launch that launches nothing: an alias, a view read through), as the plan
 * and the PTX name it; without it kernels are named by their search unit. */
void pass_explain(const Schedule *s, int op, Buf *out);
/* att, when not NULL, is what --attention fuse did: where it fused a chain or left
 * one apart, the JSON document holds it under "attention" (the text form's lines
 * come from pass_attention_summary). */
struct AttentionInfo;
void pass_explain_ex(const Schedule *s, int op, bool json, const char *const *entry,
		     const struct AttentionInfo *att, Buf *out);

/* ---- dumping a schedule (dump.c) --------------------------------------------- */

/* Every plan's relative ops, triggers and strategy (--emit relative). */
void pass_dump_relative(const Schedule *s, Buf *b);
/* A Graphviz digraph of the ops, coloured by the kernel that runs each (--emit dot). */
void pass_dump_dot(const Schedule *s, Buf *b);

/* The shared score of SPEC §3: max(0, 100·max(0,U−F) + 10·(N−1) − 50·V). */
uint64_t pass_score(int64_t u, int64_t f, int64_t n, int64_t v);

/* "#0: Optimization(ElementWise, score=630, [0,1,2,3])" style one-line form. */
void pass_strategy_print(Buf *b, const Strategy *st);
const char *pass_trigger_name(TriggerKind k);  /* "OnOperations" */

/* ---- reduced precision (precision.c) ----------------------------------------- */

/* `--precision bf16|f16` (docs/precision.md): an f32 graph rewritten, before the
 * search, to compute in a 16-bit float dtype. Ops whose result was f32 compute in
 * `to`, except the ops kept in f32 (the default kinds of pass_precision_default_keep,
 * and --keep-f32), and elementwise ops that read an f32 result, which compute in
 * f32 as autocast's promotion does; matmul and conv2d always take `to`. Constants
 * of more than one element are converted once (round to nearest even, saturated at
 * the dtype's largest finite value); graph inputs and outputs keep their dtype,
 * with a cast inserted next to the first reader and after the producer. Integer,
 * bool, f64 and f16/bf16 tensors of the graph are left as they are. */
typedef struct {
	DType to;              /* DT_BF16 or DT_F16 */
	const char *keep;      /* --keep-f32 LIST (comma-separated), or NULL */
} PrecisionOptions;

typedef struct {
	DType to;              /* DT_F32 when no conversion was asked */
	const char *keep;      /* the LIST as given, or NULL */
	/* The converted graph with every converted tensor back in f32 and each
	 * converted constant holding its original f32 data: it computes exactly the
	 * original graph's values (an inserted cast between f32 and f32 is the
	 * identity), op for op and tensor for tensor like the converted graph, which
	 * is what --check needs (host/bounds.c, docs/tolerances.md). */
	Graph *shadow;
	DType *store;          /* per tensor: the dtype the converted graph stores it in */
	char *mode;            /* per op of the converted graph: 'L' computes in `to`,
				  'F' kept in f32 as a default kind, 'K' by --keep-f32,
				  'P' in f32 because it reads an f32 result, 'C' a cast
				  inserted here, 0 untouched */
	int nlow, nkept, npromoted, ncasts;  /* ops per mode */
	int nconst;            /* constants converted */
	int64_t const_bytes[2];   /* their bytes before and after */
	int64_t nsaturated;    /* constant elements beyond the dtype's range, saturated */
	int64_t nflushed;      /* non-zero constant elements that became 0 */
} PrecisionInfo;

/* "bf16" / "f16" into *to. 0 ok, -1 otherwise. */
int pass_precision_parse(const char *s, DType *to);
/* The op kinds kept in f32 unless the list says `none`: "sum,mean,prod,exp,..." */
const char *pass_precision_default_keep(void);
/* Rewrite g in place (its arrays are replaced, in its arena). info is filled; it
 * points into g's arena. Returns 0, or -1 with *d set (an unknown --keep-f32 entry). */
int pass_precision(Graph *g, const PrecisionOptions *o, PrecisionInfo *info, Diag *d);
/* One paragraph for `explain` and the log: what was converted and kept. */
void pass_precision_summary(const Graph *g, const PrecisionInfo *info, Buf *out);

/* ---- --layout nhwc (layout.c) ----------------------------------------------- */

typedef enum {
	LAYOUT_MODE_AUTO,      /* channels last when pass_layout_wanted says so */
	LAYOUT_MODE_KEEP,      /* --layout nchw: the graph as it is */
	LAYOUT_MODE_NHWC,      /* --layout nhwc */
} LayoutMode;

typedef struct {
	LayoutMode mode;
	bool tensor_cores;     /* f32 convs run on tensor cores: --allow-tf32, 3xTF32
				  (the default on sm_90a: pl_x3_weights), or
				  --precision bf16|f16 converts them */
} LayoutOptions;

typedef struct {
	bool automatic;        /* chosen by LAYOUT_MODE_AUTO */
	int nwindow;           /* convs and pools made channels last */
	int npermutes;         /* permutes inserted (reshapes that move only dims of
				  size 1 are not counted: they launch nothing) */
	int nconst;            /* constants whose bytes were permuted */
} LayoutInfo;

/* Rewrite g in place (its arrays replaced, in its arena) so that its convs and
 * pools run channels last, what lies between them stays so, and the graph's
 * inputs and outputs are as they were. info says what changed. Returns 0. */
int pass_layout(Graph *g, const LayoutOptions *o, LayoutInfo *info);
/* The automatic choice: channels last when g has convs, every one of them on
 * tensor cores (f16 or bf16, or f32 with o->tensor_cores) with a constant weight. */
bool pass_layout_wanted(const Graph *g, const LayoutOptions *o);
/* One line for `explain`: what --layout nhwc did; nothing when it did nothing. */
void pass_layout_summary(const LayoutInfo *info, Buf *out);

/* ---- rewrites that change no value (simplify.c) -------------------------------- */

typedef struct {
	int nsquares;          /* pow_scalar(x, 2) written as mul(x, x) */
} SimplifyInfo;

/* Rewrite g in place: pow_scalar(x, 2) of a float x becomes mul(x, x). Returns 0. */
int pass_simplify(Graph *g, SimplifyInfo *info);

/* ---- --attention fuse (attention.c) ------------------------------------------- */

typedef enum {
	ATTENTION_KEEP,        /* --attention keep: the graph's ops as they are */
	ATTENTION_FUSE,        /* --attention fuse: every chain it can take */
	ATTENTION_AUTO,        /* the default: the chains the flash kernel runs, f16 or
				  bf16 with head dims up to 128 (matmul_pick.c); an f32
				  chain would run on the plain evaluator, far slower than
				  its three launches, so it stays apart */
	ATTENTION_AUTO_HALF,   /* the same where f32 becomes f16/bf16 later (--precision) */
	ATTENTION_AUTO_TF32,   /* the default under --allow-tf32: also f32 chains of head
				  dims up to 64, which the tf32 flash kernel runs from
				  sm_80 on (past 64 it needs sm_90's shared memory) */
} AttentionMode;

enum { ATTENTION_MAX_WHY = 16 };

typedef struct AttentionInfo {
	int nfused;            /* attention ops made */
	int ncausal;           /* of them, those whose constant mask became `causal` */
	int nwhy;              /* matmuls after a softmax left apart, with the reason */
	char why[ATTENTION_MAX_WHY][320];
} AttentionInfo;

/* Rewrite g in place (its arrays replaced, in its arena): each chain matmul, scale,
 * bias, softmax, matmul becomes one attention op. Returns 0. */
int pass_attention(Graph *g, AttentionMode mode, AttentionInfo *info);

/* Where a chain of views reads the tensor it starts from (view_map.c): each dim of
 * the result a product of sub-dims (first[d] .. first[d + 1] - 1, outer first),
 * each stepping str elements of the source, from element off. */
enum { VM_SUB = 32 };
typedef struct {
	int rank;
	int first[IR_MAX_RANK + 1];
	int64_t ext[VM_SUB], str[VM_SUB];
	int64_t off;
} ViewMap;
/* The map of dense tensor t onto itself. */
void vm_dense(ViewMap *v, const Tensor *t);
/* v after view op op (reshape, permute, swap_dims or slice) reads its result; false
 * where the op is another kind or the map leaves what sub-dims describe. */
bool vm_apply(ViewMap *v, const Graph *g, const Op *op);
/* v after a reshape to dims (rank of them) or a permute by axes (n of them). */
bool vm_reshape(ViewMap *v, const int64_t *dims, int rank);
bool vm_permute(ViewMap *v, const int *axes, int n);
/* The sub-dims of every dim in order, those of one dim folded where they step as
 * one, unit ones left out: ext[], str[] (VM_SUB entries); returns how many. */
int vm_subdims(const ViewMap *v, int64_t *ext, int64_t *str);
/* Each dim's extent and stride, when its sub-dims fold into one; else false. */
bool vm_strided(const ViewMap *v, int64_t *ext, int64_t *str);
/* Whether the strided map (rank dims, ext[], str[], off) reads each of the numel
 * elements of a dense tensor once: then it is permute(reshape(source, R), P), the
 * permute's result dim d being R's dim P[d], R's dims in the source's order. */
bool vm_dense_permute(int rank, const int64_t *ext, const int64_t *str, int64_t off,
		      int64_t numel, int64_t *R, int *P);

/* The view kinds a map follows: reshape, permute, swap_dims, slice. */
bool vm_kind(OpKind k);
/* The ops reading each tensor t: op[first[t] .. first[t + 1] - 1], in op order (an
 * op reading a tensor twice is there twice). */
typedef struct {
	int *first, *op;
} VmReaders;
void vm_readers(const Graph *g, VmReaders *r);
void vm_readers_free(VmReaders *r);

/* A graph rewritten op by op (rebuild.c): new arrays with room for `tensors` more
 * tensors, `inputs` more inputs (new constants) and `ops` more ops; the kept ops
 * are copied into ops[k++], new ones emitted beside them. */
typedef struct {
	Graph *g;
	Tensor *tens;
	int nt;
	int *inputs, nin;
	Op *ops;
	int k;
} Rebuild;
void rb_begin(Rebuild *o, Graph *g, int tensors, int inputs, int ops);
/* A new intermediate tensor like tensor `like` (no data), named its name + suffix. */
int rb_tensor(Rebuild *o, int like, const char *suffix);
/* A reshape to shape or a permute by axes (n entries) from x into y, with the
 * stream, place and name of op near. */
void rb_view(Rebuild *o, const Op *near, OpKind kind, int x, int y, const int64_t *shape,
	     const int *axes, int n);
/* Install the rebuilt graph in g: compacted, finished, its dead views dropped. */
void rb_finish(Rebuild *o);

/* Matmuls that share their first operand, each moved with its epilogue up to the
 * one before it so that the Matmul fuser takes them into one launch (siblings.c;
 * not under --burn-exact). */
typedef struct {
	int ngroups, nmatmuls;   /* groups moved together, their matmuls */
	int nlone;               /* matmuls marked Op.lone */
	int nunsplit, nparts;    /* packed projections cut apart, the matmuls made */
	int nrows;               /* matmuls computing their rows in their reader's order */
	int nrot;                /* rotate_half of a projection made a projection */
} SiblingInfo;
int pass_siblings(Graph *g, SiblingInfo *info);
/* Matmuls whose result a chain of views reorders by rows, for one permute of
 * the tensor under their operand's views (row_order.c): *nmoved of them. */
int pass_row_order(Graph *g, int *nmoved);
/* rotate_half (cat(-t[..., h:], t[..., :h])) of a projection's head dim computed as
 * a matmul by the weight's columns rotated (rotary.c): *nrot of them. */
int pass_rotary(Graph *g, int *nrot);
/* The constant weights of f16/bf16 matmuls (half), of f32 ones (f32) stored
 * transposed and read through a swap_dims view, K-major (kmajor.c): *nmade matmuls
 * read them so. */
int pass_kmajor(Graph *g, bool half, bool f32, int *nmade);
/* The line for `explain` (nothing when nmade is 0). */
void pass_kmajor_summary(int nmade, Buf *out);
/* Drop the views whose results nothing reads (chains a rewrite left), last first. */
void pass_drop_dead_views(Graph *g);
/* Lines for `explain`: the groups brought together, the matmuls left lone. */
void pass_siblings_summary(const SiblingInfo *info, Buf *out);
/* Keep g's ops but those drop marks (drop may be NULL) and the tensors something
 * still uses, renumbered in order; call ir_finish after (attention.c). */
void pass_compact(Graph *g, const bool *drop);
/* Lines for `explain`: what --attention fuse did, and why a chain stayed apart. */
void pass_attention_summary(const AttentionInfo *info, Buf *out);

#endif
