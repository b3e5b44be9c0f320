/* search.h: the pieces of the fusion search shared between the files of passes/:
 * integer sets, the fuser vtable, kernel accounting for scores, blocks, the stream
 * optimizer, the plan store and policy, and the decision record.
 *
 * Internal to passes/; the layer's contract is passes.h. */
#ifndef FUSEC_SEARCH_H
#define FUSEC_SEARCH_H

#include "passes.h"

/* ---- sets of small non-negative ints (intset.c) ------------------------------ */

enum { ISET_SMALL = 8 };   /* slots kept inside the set: up to 4 members */

/* Slots hold a member, -1 (empty) or -2 (deleted). A zeroed IntSet is empty and
 * valid; a set may be copied or moved bytewise while it is small. */
typedef struct {
	int *heap;             /* the slots once cap > ISET_SMALL, else NULL */
	int cap;               /* 0, or a power of two */
	int n;                 /* occupied slots, deleted ones included */
	int size;              /* members */
	uint64_t bits;         /* bit v % 64 of every member added since the last clear */
	int small[ISET_SMALL]; /* the slots while cap <= ISET_SMALL */
} IntSet;

#define ISET_SLOTS(s) ((s)->cap > ISET_SMALL ? (s)->heap : (s)->small)

bool iset_has(const IntSet *s, int v);
void iset_add(IntSet *s, int v);
void iset_del(IntSet *s, int v);
void iset_copy(IntSet *dst, const IntSet *src);
void iset_own(IntSet *s);      /* after a bytewise copy of a set: own its slots */
void iset_clear(IntSet *s);
void iset_free(IntSet *s);
bool iset_intersects(const IntSet *a, const IntSet *b);
#define ISET_EACH(s, i) for (int i = 0; i < (s)->cap; i++) if (ISET_SLOTS(s)[i] >= 0)

/* ---- the decision record (record.c) ------------------------------------------ */

typedef enum {
	EV_REGISTER_NEW,        /* a=pos, b=blocks */
	EV_REGISTER_ACCEPTED,   /* a=pos, b=accepted in, c=blocks */
	EV_REGISTER_DEPENDENT,  /* a=pos, b=blocks */
	EV_REGISTER_DROPPED,    /* a=pos, b=stopped at */
	EV_STOPPED,             /* a=pos, b=max_blocks, c=0 max blocks / 1 on dependency / 2 cycle */
	EV_MERGE,               /* a=blocks in, b=blocks out, c=accepted, reason */
	EV_MERGE_REFUSED,       /* a,b = start positions of the two blocks, reason */
	EV_FUSER_CLOSED,        /* a=fuser, b=ops it had, reason, op */
	EV_STILL_OPT_FALSE,     /* a=explored */
	EV_EXPLORE,             /* mode, a=deferred, b=queued */
	EV_EXPLORATION_LIMIT,   /* a=ops run unfused */
	EV_BLOCK,               /* a=block id, b=ops, c=winner fuser or -1, d=taken, score */
	EV_BLOCK_OP,            /* a=block id, b=pos, op */
	EV_BLOCK_FUSER,         /* a=block id, b=fuser, c=flags, d=ops, score, reason, op (closed on) */
	EV_HOLES,               /* a=holes */
	EV_SELECTED,            /* a=strategies */
	EV_REPAIR,              /* a=ops */
	EV_COMPLETED,           /* mode, a=optimized, b=queued, c=plan, d=1 new plan */
	EV_CACHE_HIT,           /* mode, a=plan, b=queued */
	EV_GUARD,               /* a=plan, b=max shape id, c=assigned, d=ops */
	EV_EXECUTE,             /* a=step */
} EventKind;

enum { BF_READY = 1, BF_CLOSED = 2 };

typedef struct {
	uint8_t kind, mode, reason, pad;
	int32_t stream;
	int32_t a, b, c, d;
	int32_t op;            /* global op index or -1 */
	uint64_t score;
} Event;

struct Record {
	Event *ev;
	int n, cap;
	bool on;               /* keep events (explain, logs); off keeps only executions */
};

Event *rec_add(Record *r, EventKind kind, int stream);

/* ---- kernel accounting for the score (score.c) ------------------------------- */

/* What a fused kernel reads and writes, kept op by op in execution order. */
typedef struct {
	int n;                 /* N: ops counted */
	int64_t u;             /* U: reads + writes if each op ran alone */
	int v;                 /* V: kernel inputs read through reshape/swap_dims/permute */
	int traced;            /* ops counted that are not views, reductions or matmuls */
	IntSet inputs;         /* relative ids read before being produced here */
	IntSet produced;
	IntSet freed;          /* produced here and read ReadWrite here: never written */
} FuseStats;

void stats_add(FuseStats *s, const RelOp *op, bool count);
/* burn's cap on a trace (engine/fuser.rs, TryTraceFuser::fuse: an op is refused once
 * num_ops_fused() > max_ops = 64): a trace holds at most 65 ops. Its ops are the
 * elementwise ones; views, the reduction and the matmul are not trace ops. */
enum { TRACE_MAX_OPS = 65 };
static inline bool stats_at_cap(const FuseStats *s) { return s->traced >= TRACE_MAX_OPS; }
void stats_copy(FuseStats *dst, const FuseStats *src);
void stats_own(FuseStats *s);  /* after a bytewise copy: own the sets */
void stats_free(FuseStats *s);
void stats_clear(FuseStats *s);
int64_t stats_global_rw(const FuseStats *s);      /* F */
int stats_bindings_after(const FuseStats *s, const RelOp *op);
uint64_t stats_score(const FuseStats *s);

/* ---- fusers (fusers.c and fuser_*.c) ----------------------------------------- */

typedef enum { FS_OPEN, FS_CLOSED } FuserStatus;

/* Why a fuser closed. ORDER REASON: close_reason_names in fusers.c. */
typedef enum {
	CR_NONE,
	CR_NOT_ELEMENTWISE,     /* an op this fuser never fuses */
	CR_SHAPE,               /* output shape incompatible with the kernel's */
	CR_MAX_OPS,             /* 65 trace ops (TRACE_MAX_OPS) */
	CR_BINDINGS,            /* binding limit */
	CR_VIEW_INTERMEDIATE,   /* a view of a tensor produced inside the kernel */
	CR_VIEW_UNSUPPORTED,    /* slice; under --burn-exact also permute and expand */
	CR_NOT_MATMUL,          /* Matmul starts only with matmul */
	CR_SECOND_MATMUL,
	CR_SECOND_REDUCTION,
	CR_BROADCAST,           /* elementwise op broadcasting a reduced value back */
	CR_AXIS,                /* reduction over another axis / not the last */
	CR_VIEW_FIRST_USE,      /* a reshape (--burn-exact: or swap_dims) of a tensor the
				   kernel does not read yet (burn fuses no single-use view) */
	CR_VIEW_RANK,           /* a reshape that lowers the rank */
	CR_POOL_TAKEN,          /* NHWCRelayout: took the pool that ends its trace */
	CR_AFTER_ATTENTION,     /* Matmul: an attention takes only a permute of its output */
	CR_SIBLINGS_MIX,        /* Matmul: an epilogue op reads another sibling's result */
	CR_COUNT_
} CloseReason;

const char *pass_close_reason(CloseReason r);

/* burn's output_is_compatible (engine/fuser.rs) with broadcasting on: out fits the
 * reference shape ref when the ranks are equal and every dim is equal, or size 1 in
 * out, or (when grow) size 1 in ref; a grown reference must then equal out exactly.
 * *grown receives the reference after out (ref itself, or out when it grew). */
bool rel_output_compatible(const RelTensor *ref, const RelTensor *out, bool grow,
			   RelTensor *grown);

typedef struct { bool ready; uint64_t score; } FuserProps;

typedef struct Fuser Fuser;
typedef struct {
	const char *name;
	FuserKind kind;                              /* what its kernels compute */
	size_t size;                                 /* of the concrete struct */
	void (*fuse)(Fuser *f, const RelOp *op);     /* accept, or close with a reason */
	FuserProps (*properties)(const Fuser *f);
	int (*len)(const Fuser *f);                  /* ops fused */
	void (*reset)(Fuser *f);
	void (*clone_into)(Fuser *dst, const Fuser *src); /* after a byte copy: own the sets */
	void (*release)(Fuser *f);                   /* free what clone_into made */
} FuserVT;

struct Fuser {
	const FuserVT *vt;
	FuserStatus status;
	CloseReason reason;
	int seen;              /* ops offered so far */
	int closed_at;         /* index (in offer order) of the op it closed on */
	int max_bindings;
	bool burn_exact;       /* --burn-exact: burn's rule for a leading reduction (row 5) */
};

/* The registry: fresh fusers in registration order (ElementWise, Matmul, Reduce,
 * ReduceBroadcasted, NHWCRelayout; the last only under --burn-exact). */
int fusers_count(void);
/* The fusers a search runs: all of them under --burn-exact, else all but
 * NHWCRelayout (the last registered). */
int fusers_active(bool burn_exact);
Fuser *fuser_new(int i, int max_bindings);
Fuser *fuser_clone(const Fuser *f);
void fuser_free(Fuser *f);
void fuser_fuse(Fuser *f, const RelOp *op);    /* offer one op; tracks seen/closed_at */
void fuser_reset(Fuser *f);
void fuser_close(Fuser *f, CloseReason r);

extern const FuserVT fuser_elemwise_vt, fuser_matmul_vt, fuser_reduce_vt,
	fuser_reduce_bcast_vt, fuser_nhwc_vt;

/* ElementWise's trace rule (fuser_elemwise.c): accept op into the trace st whose
 * reference shape is *ref, or close f with the reason. */
void trace_fuse(Fuser *f, FuseStats *st, RelTensor *ref, const RelOp *op);


/* ---- blocks (block.c) --------------------------------------------------------- */

typedef struct {
	Fuser **fusers; int nfusers;
	RelOp *ops;            /* copies, in registration order */
	int *pos;              /* segment position of each op */
	int nops, cap;
	IntSet ids, produced, read, freed;
	int start_pos, end_pos;
} Block;

typedef struct SearchCtx SearchCtx;

Block *block_new(const SearchCtx *c);
Block *block_clone(const Block *b);
void block_free(Block *b);
/* Returns true when accepted (the block shares a tensor with op, or force). */
bool block_register(Block *b, const RelOp *op, int pos, bool force, SearchCtx *c, bool log);
bool block_still_optimizing(const Block *b);
bool block_has_ready(const Block *b);
bool block_contains_any(const Block *b, const RelOp *op);
bool block_can_append(const Block *a, const Block *b);
/* Merge `other` into `self` by registering its ops; true when the merge is accepted
 * (SPEC §3). `self` is left as it was when refused. */
bool block_merge(Block *self, const Block *other);
/* The same merge into a new block; NULL when refused. */
Block *block_merged(const Block *self, const Block *other);
bool block_depends_on(const Block *x, const Block *y);  /* x must run after y */
/* Kahn order of blocks by dependency, ties to the lower start position. NULL: cycle. */
bool blocks_topo_order(Block **blocks, int n, int *order);

/* Order check over op sequences (produce before read, read before free). */
bool ops_order_valid(const RelOp *const *ops, int n);

/* ---- the search context and the stream optimizer (explorer.c) ----------------- */

struct SearchCtx {
	Schedule *s;
	Record *rec;
	int stream;
	int max_blocks;
	int max_bindings;
	const int *global;     /* segment position -> global op index */
	int block_serial;      /* next block id for the record */
	bool burn_exact;       /* --burn-exact (docs/burn-fidelity.md rows 5, 7, 12) */
};

typedef struct {
	Strategy *strategy;
	int n;                 /* ops covered */
	int *ordering;         /* segment positions, execution order */
} BlockOpt;

typedef struct {
	SearchCtx *c;
	Block **blocks; int nblocks, cap;
	int length;
	int calls;             /* ops offered, dropped ones included */
	bool stopped;
} StreamOpt;

void sopt_init(StreamOpt *o, SearchCtx *c);
void sopt_reset(StreamOpt *o);
void sopt_free(StreamOpt *o);
void sopt_register(StreamOpt *o, const RelOp *op);
bool sopt_still_optimizing(const StreamOpt *o);
/* Settle a plan for the registered ops; `ops` holds the segment's relative ops by position.
 * Strategies are allocated in arena a. */
BlockOpt sopt_optimize(StreamOpt *o, const RelOp *ops, int nops, Arena *a);
/* burn's include_trailing (search/block.rs), --burn-exact at a sync: the positions
 * bo leaves uncovered (a trailing run up to nops) run unfused after it. */
BlockOpt sopt_include_trailing(BlockOpt bo, int nops, Arena *a);

/* ---- plan store and policy (plan_store.c) ------------------------------------- */

typedef struct {
	Plan **plans; int n, cap;
	int *bucket; int nbuckets;   /* index: hash of first op -> chain of starter groups */
	struct Starter { RelOp op; int next; int *ids; int nids, cap; } *starters;
	int nstarters, capstarters;
} PlanStore;

void store_init(PlanStore *st);
void store_free(PlanStore *st);
int store_add(PlanStore *st, Plan *p);
void store_add_trigger(PlanStore *st, int id, const Trigger *t, Arena *a);
/* Plans whose first relative op equals op; *n set; NULL when none. */
const int *store_starting_with(const PlanStore *st, const RelOp *op, int *n);

typedef enum { ACT_EXPLORE, ACT_DEFER, ACT_EXECUTE } ActionKind;
typedef struct { ActionKind kind; int plan; } Action;

typedef struct { int id; int state; int size; } Candidate;  /* state 0 validating, 1 found, 2 invalid */
typedef struct {
	int id, size;
	int ntrig;
	struct TrigVal { int kind; int state; int checked; bool init; } *trig;
} Available;

typedef struct {
	Candidate *cand; int ncand, capcand;
	Available *avail; int navail, capavail;
	int found_id, found_size;   /* found_id < 0: none */
	int nops;                   /* ops analysed */
	bool settled;               /* no further op can change the policy's answer */
	bool burn_exact;            /* a sync runs only a plan of the whole queue (row 7) */
} Policy;

void policy_init(Policy *p);
void policy_free(Policy *p);
void policy_reset(Policy *p);
void policy_update(Policy *p, const PlanStore *st, const RelOp *op);
/* Settled: no candidate is being compared and no OnOperations trigger of an
 * available plan is still following the queue, so every further update would only
 * count the op. policy_skip counts n ops without looking at them; only while settled. */
bool policy_settled(const Policy *p);
void policy_skip(Policy *p, int n);
Action policy_action(const Policy *p, const PlanStore *st, int nops, ExecMode mode);

#endif
