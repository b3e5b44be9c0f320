/* ir.h: the graph IR: op table, dtypes, tensors, ops, segments, relative form.
 *
 * In:  a fusec-graph/1 document (JSON or YAML), read by ir_read_file/ir_read_mem.
 * Out: a Graph whose every tensor has an inferred dtype and shape, whose ops carry
 *      the ReadOnly/ReadWrite status of each operand (exact liveness), and which is
 *      split into segments (runs of ops between syncs, per stream).
 * Memory: everything a Graph points to lives in the Arena given to the reader; the
 *      graph is never freed piece by piece. Free the arena to free the graph.
 *
 * Prefix: ir_. Errors are returned as a Diag, never printed or exited on here. */
#ifndef FUSEC_IR_H
#define FUSEC_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../support/support.h"
#include "dim_expr.h"

enum {
	IR_MAX_RANK = 8,     /* SPEC §1: rank 0 to 8 */
	IR_MAX_OUT = 1,      /* no op of the table has several results yet */
	IR_MM_GROUP_MAX = 4, /* matmuls sharing their first operand in one launch
				(passes/siblings.c, passes/fuser_matmul.c) */
	IR_MAX_DEPTH = 64,   /* nesting depth accepted in a document */
	IR_MAX_IN = 255,     /* operands of one op (cat); RelOp.nin is 8 bits */
};

/* ---- dtypes ---------------------------------------------------------------- */

typedef enum {
	DT_F64, DT_F32, DT_F16, DT_BF16,
	DT_I64, DT_I32, DT_I16, DT_I8, DT_U8,
	DT_BOOL,
	DT_COUNT
} DType;

const char *ir_dtype_name(DType t);          /* "f32" */
int ir_dtype_parse(const char *s, DType *out); /* 0 ok, -1 unknown */
int ir_dtype_size(DType t);                  /* bytes per element */
bool ir_dtype_is_float(DType t);
bool ir_dtype_is_int(DType t);               /* signed or unsigned, not bool */
bool ir_dtype_is_signed(DType t);            /* floats and signed ints */

/* A shape as messages write it, "[2,3,4]" (at most IR_MAX_RANK dims shown). */
typedef struct {
	char s[IR_MAX_RANK * 21 + 3];   /* "[" + 8 dims of up to 20 characters + commas + "]" */
} IrShapeText;
IrShapeText ir_shape_text(int rank, const int64_t *dim);

/* ---- the op table ---------------------------------------------------------- */

typedef enum {
	CAT_NUMERIC,    /* NumericFloat:: / NumericInt:: by dtype */
	CAT_FLOAT,      /* Float:: */
	CAT_BASE,       /* BaseFloat:: / BaseInt:: / BaseBool:: by dtype */
	CAT_BOOL,       /* Bool:: */
	CAT_ACTIVATION, /* Activation:: */
	CAT_MODULE,     /* Module:: */
	CAT_CONTROL,    /* sync */
} OpCategory;

typedef enum {
	FAM_BINARY,   /* tensor ⊕ tensor, broadcasting */
	FAM_SCALAR,   /* tensor ⊕ scalar, clamp */
	FAM_UNARY,    /* math, activations, not */
	FAM_COMPARE,  /* result bool */
	FAM_SELECT,   /* where, mask_fill */
	FAM_CAST,
	FAM_VIEW,     /* reshape permute swap_dims expand slice */
	FAM_REDUCE,
	FAM_MATMUL,
	FAM_JOIN,     /* cat, gather */
	FAM_MODULE,   /* conv2d, pools */
	FAM_CONTROL,  /* sync */
} OpFamily;
#define FAM_COUNT (FAM_CONTROL + 1)   /* keep FAM_CONTROL last */

/* Attribute bits. ORDER ATTR: ir_attr_name() lists the names in this order. */
enum {
	A_SCALAR   = 1 << 0,
	A_MIN      = 1 << 1,
	A_MAX      = 1 << 2,
	A_DTYPE    = 1 << 3,
	A_SHAPE    = 1 << 4,
	A_AXES     = 1 << 5,
	A_DIMS     = 1 << 6,
	A_RANGES   = 1 << 7,
	A_AXIS     = 1 << 8,
	A_STRIDE   = 1 << 9,
	A_PADDING  = 1 << 10,
	A_DILATION = 1 << 11,
	A_GROUPS   = 1 << 12,
	A_KERNEL   = 1 << 13,
	A_APPROX   = 1 << 14,
	A_LAYOUT   = 1 << 15,
	A_CAUSAL   = 1 << 16,
	A_ZERO_NAN = 1 << 17,
	A_COUNT_   = 18,
};
const char *ir_attr_name(unsigned bit);      /* "scalar" for A_SCALAR */

typedef enum {
	SR_NONE,
	SR_BINARY,              /* same dtype, broadcast, no bool */
	SR_BINARY_FLOAT,        /* as SR_BINARY, float only */
	SR_BINARY_BOOL,         /* bool and bool -> bool */
	SR_UNARY,               /* same dtype and shape, no bool */
	SR_UNARY_SIGNED,        /* floats and signed ints */
	SR_UNARY_NUMERIC,       /* any but bool */
	SR_UNARY_FLOAT,         /* floats only */
	SR_UNARY_FLOAT_TO_BOOL, /* floats only, result bool */
	SR_UNARY_BOOL,          /* bool -> bool */
	SR_COMPARE,             /* same dtype, broadcast -> bool */
	SR_COMPARE_SCALAR,      /* any -> bool */
	SR_WHERE,               /* (bool mask, a, b) three-way broadcast */
	SR_MASK_FILL,           /* (x, bool mask) broadcast -> x's dtype */
	SR_CAST,
	SR_RESHAPE, SR_PERMUTE, SR_SWAP_DIMS, SR_EXPAND, SR_SLICE,
	SR_REDUCE, SR_ARG_REDUCE,
	SR_MATMUL, SR_ATTENTION, SR_CAT, SR_GATHER, SR_CONV2D, SR_POOL2D,
	SR_COUNT_
} ShapeRule;
/* The dtypes a rule accepts, in words: "float", "numeric (not bool)", ... */
const char *ir_rule_dtypes(ShapeRule r);

typedef enum {
#define X(e, file, variant, cat, fam, nmin, nmax, req, opt, rule) e,
#include "ops.def"
#undef X
	OP_COUNT
} OpKind;

typedef struct {
	const char *file;      /* "mul_scalar" */
	const char *variant;   /* "MulScalar" */
	OpCategory cat;
	OpFamily family;
	int nin_min, nin_max;  /* nin_max < 0: unbounded */
	unsigned required;     /* A_* bits */
	unsigned optional;
	ShapeRule rule;
} OpInfo;

extern const OpInfo ir_ops[OP_COUNT];
int ir_op_lookup(const char *file_name);     /* OpKind, or -1 */
/* The elementwise families: binary, scalar, unary, compare, select, cast. One
 * output element reads each operand at the broadcast of its own position. */
bool ir_family_is_elementwise(OpFamily f);
bool ir_op_is_elementwise(int kind);         /* of an OpKind */

/* ---- tensors and ops ------------------------------------------------------- */

typedef enum { ST_READ_ONLY, ST_READ_WRITE, ST_NOT_INIT } TensorStatus;
const char *ir_status_name(TensorStatus s); /* "ReadOnly" */

typedef enum { ROLE_INPUT, ROLE_INTERMEDIATE, ROLE_OUTPUT } TensorRole;

typedef struct {
	const char *name;
	DType dtype;
	int rank;
	int64_t dim[IR_MAX_RANK];
	int producer;     /* op index; -1 for graph inputs */
	int last_read;    /* op index of the last op reading it; -1 if never read */
	TensorRole role;  /* ROLE_OUTPUT when listed in outputs (inputs stay ROLE_INPUT) */
	bool is_output;   /* listed in outputs, whatever its role */
	const void *data; /* a constant: its elements (dtype, C order, little-endian),
			     in the graph's arena; NULL for every other tensor. A
			     constant is a graph input whose value the graph carries. */
	const struct ConstSource *src; /* a constant of a graph file before
			     host_load_constants (host/host.h) turns it into data */
} Tensor;

/* Where a constant of a fusec-graph/1 file comes from (docs/graph-format.md):
 * values written inline, or a .npy file (path resolved beside the graph). */
typedef struct ConstSource {
	const char *npy;         /* the file: npy_rel joined to the graph's folder */
	const char *npy_rel;     /* the file as the graph names it */
	char *npy_sha256;        /* 65 bytes: the SHA-256 of the bytes host_load_constants
				    read (the result cache's record of them) */
	const double *values;    /* float dtypes: count values */
	const int64_t *ivalues;  /* int and bool dtypes */
	int line, col;           /* of the constant, for messages */
} ConstSource;

typedef enum { GELU_NONE, GELU_TANH } GeluApprox;

/* The layout of a conv2d's or a pool's tensors (attribute `layout`): NCHW, or
 * channels last: x [N][H][W][C], a conv's weight [OC][KH][KW][C/groups], the
 * result [N][OH][OW][OC] (passes/layout.c rewrites a graph to it). */
typedef enum { LAYOUT_NCHW, LAYOUT_NHWC } Layout;

/* Attributes of one op; which fields mean something is told by `has`. */
typedef struct {
	unsigned has;            /* A_* bits present */
	double scalar, min, max; /* placeholders in relative form */
	DType dtype;             /* cast target */
	int axis;                /* normalized to 0..rank-1 */
	int n;                   /* entries in shape / axes / range */
	int64_t shape[IR_MAX_RANK];    /* reshape, expand (as written; -1 allowed in reshape) */
	int axes[IR_MAX_RANK];         /* permute; swap_dims uses axes[0], axes[1] */
	int64_t range[IR_MAX_RANK][2]; /* slice: [start, end) per leading dim */
	int stride[2], padding[2], dilation[2], kernel[2], groups;
	GeluApprox approx;
	Layout layout;
	int64_t causal;                /* attention: 1 + c, key j of row i masked where j > i + c;
					  0: none */
	bool zero_nan;                 /* attention: a row whose weights are NaN (a NaN score,
					  or every key at -inf) gives 0, as the exporters'
					  where(isnan(p), 0, p) after the softmax does */
	uint8_t sym[IR_MAX_RANK];      /* a graph read for every size (Graph.sym): 1 + the
					  symbol an entry of `shape` names, or 1 + IR_SYM_MAX
					  + an IrSymbolic.aexpr; 0 a number */
	uint8_t rsym[IR_MAX_RANK];     /* the same for a slice's lengths: the end of range
					  k is its start plus that size */
} Attrs;

typedef struct {
	OpKind kind;
	int stream;
	int nin, nout;
	int *in;                 /* tensor ids, nin of them */
	uint8_t *in_status;      /* TensorStatus of each operand (ReadOnly / ReadWrite) */
	int out[IR_MAX_OUT];     /* tensor ids */
	const Attrs *attr;       /* NULL when the op has no attributes */
	int line, col;           /* position in the source document */
	const char *name;        /* the op's own name (its `name` key; an ONNX importer
				    puts the node name there); NULL when it has none */
	bool lone;               /* a matmul that is no sibling of an earlier one: an op
				    reads both results (passes/siblings.c) */
} Op;

/* A segment: the ops of one stream between two syncs (or the end of the graph). */
typedef struct {
	int stream;
	int *ops;                /* op indices in stream order, syncs excluded */
	int nops;
	int sync_op;             /* index of the sync that ends it; -1 at the end of the graph */
} Segment;

typedef struct {
	Arena *arena;
	const char *file;        /* as given on the command line; "<stdin>" for - */
	const char *name;
	Tensor *tensors; int ntensors;
	Op *ops; int nops;
	int *inputs; int ninputs;
	int *outputs; int noutputs;
	Segment *segs; int nsegs;
	int nstreams;            /* 1 + the highest stream number used */
	const struct IrSymbolic *sym; /* compiled for every size of its named dims
				    (IrShapeLookup.symbolic); NULL for every other graph */
} Graph;

/* A graph read for every size of its named dims (issue 28): each unbound named dim
 * whose range holds more than one size is a symbol, and the graph is built with it
 * at a probe size (a prime no other dim of the graph has), so that every tensor
 * has concrete dims as in any other graph; `dim` gives each of them as an
 * expression over the symbols (ir/infer_sym.c). */
typedef struct IrSymbolic {
	int nsym;
	const char *name[IR_SYM_MAX];
	int64_t lo[IR_SYM_MAX], hi[IR_SYM_MAX];   /* the range of each (`dims:`) */
	int64_t probe[IR_SYM_MAX];                /* the size the graph was built at */
	DimExpr **dim;           /* per tensor: its rank's expressions */
	int ndim;                /* tensors dim covers */
	/* sizes of attributes that are expressions, not one symbol (an ONNX model's
	 * expand to [batch*seq, 768]): Attrs.sym = 1 + IR_SYM_MAX + its index */
	DimExpr aexpr[IR_AEXPR_MAX];
	int naexpr;
} IrSymbolic;

/* Give every tensor of g its dims as expressions (s->dim allocated, the inputs'
 * filled); the ops' results by their rules. -1 with *d naming the op when an op's
 * result is beyond them. */
int ir_infer_symbolic(const Graph *g, IrSymbolic *s, Diag *d);
/* The same after a rewrite of g (pass_simplify, pass_attention, ...): the inputs
 * keep their expressions, the ops' are inferred again. */
int ir_sym_refresh(Graph *g, Diag *d);
/* Whether two different expressions of g have one size at the probe: -1 (and
 * *clash the size) when they do. */
int ir_sym_check(const Graph *g, const IrSymbolic *s, int64_t *clash);
/* The symbols' values val[] of g, the graph gs (read for every size) read at
 * other sizes: from the inputs, then every tensor's expression checked against
 * its size in g. -1 with *d naming the first tensor that disagrees. */
int ir_sym_bind(const Graph *gs, const Graph *g, int64_t *val, Diag *d);
/* gs (read for every size) at the sizes of g's inputs (matched by name; each
 * checked against its symbol's range): the same ops and tensors, every dim and
 * every named size of an attribute evaluated; in gs's arena. NULL with *d naming
 * the input whose size is refused. */
Graph *ir_sym_instance(const Graph *gs, const Graph *g, Diag *d);
/* gs at the symbols' sizes val[] (no range check); keep_sym keeps Graph.sym (a
 * plan's variant for a range of sizes is lowered from it), else NULL. */
Graph *ir_sym_at(const Graph *gs, const int64_t *val, bool keep_sym, Diag *d);
/* The probe size of a symbol of range lo..hi, the size a graph for every size is
 * built at: the largest prime up to IR_PROBE_TOP that none of the nused sizes in
 * used[] is (a size no other dim is likely to have, so that the relative form tells
 * them apart), else any such size past 1; 0 when the range has none. The reader
 * (--dims), the ONNX importer's two imports and a plan's ranges of sizes all take
 * their probes here. */
enum { IR_PROBE_TOP = 4096 };
int64_t ir_sym_probe(int64_t lo, int64_t hi, const int64_t *used, int nused);
bool ir_is_prime(int64_t v);
/* The size an Attrs.sym or Attrs.rsym code names (not 0). */
DimExpr ir_sym_code(const IrSymbolic *s, int code);
/* The expression of a dim of g (read for every size) that is v at the probe sizes
 * (ir_sym_check keeps it one), or NULL: g has no Graph.sym, or no dim is v. */
const DimExpr *ir_sym_of_size(const Graph *g, int64_t v);
/* For a graph read for every size, append "for every batch in 1..64, seq ≥ 1 (built
 * at batch=61, seq=4093)\n"; nothing for another graph. */
void ir_sym_header(Buf *b, const Graph *g);
/* Append "[batch,seq,768]". */
void ir_sym_text(Buf *b, const IrSymbolic *s, const DimExpr *d, int rank);

/* The display prefix of a category for a value dtype: "NumericFloat". */
const char *ir_category_prefix(OpCategory cat, DType t);
/* Display name in burn style: "NumericFloat::MulScalar". Writes into buf, returns buf. */
const char *ir_op_display(const Graph *g, const Op *op, char *buf, size_t size);
/* Where a person finds op `op` in their file: "ops[12] → y" (its global index and
 * the tensor it writes), with its own name when it has one: "ops[12] 'Add_3' → y".
 * Every message about an op carries this beside burn's relative numbering. */
const char *ir_op_ref(const Graph *g, int op, char *buf, size_t size);
/* The dtype that decides the display category (where: its `a` operand). */
DType ir_op_value_dtype(const Graph *g, const Op *op);

/* ---- reading --------------------------------------------------------------- */

typedef enum { FMT_AUTO, FMT_JSON, FMT_YAML } GraphFormat;

/* Resource caps a graph must stay within, checked while it is read (before its ops
 * are built), so that a huge graph is refused with a positioned error instead of
 * exhausting memory. Every fusec command takes --max-ops, --max-tensors and
 * --max-elements to change them (docs/reliability.md). */
typedef struct {
	int64_t max_ops;        /* default 10,000,000 */
	int64_t max_tensors;    /* inputs plus op results; default 20,000,000 */
	int64_t max_elements;   /* summed over every tensor; default INT64_MAX (no cap) */
} IrLimits;
extern IrLimits ir_limits;

/* Read and validate a graph. `file` is the name used in messages and for the
 * default graph name; `path` "-" reads stdin. Returns NULL and fills *d on error. */
Graph *ir_read_file(Arena *a, const char *path, GraphFormat fmt, Diag *d);
Graph *ir_read_mem(Arena *a, const char *file, const char *text, size_t len,
		   GraphFormat fmt, Diag *d);
/* The same, reporting up to maxd errors: d points to maxd Diags, and *nd tells how
 * many were filled when NULL is returned. After an input, constant, op or output
 * that fails, reading goes on with the next; entries that read a tensor whose
 * definition failed fail silently, so one mistake gives one message. */
Graph *ir_read_file_errors(Arena *a, const char *path, GraphFormat fmt, Diag *d, int maxd,
			   int *nd);
Graph *ir_read_mem_errors(Arena *a, const char *file, const char *text, size_t len,
			  GraphFormat fmt, Diag *d, int maxd, int *nd);
/* A shape given for one graph input (--input-shape NAME=2x128x768). In a graph
 * file it binds the input's named dims (docs/graph-format.md, "Named dims"); the
 * ONNX importer fixes an input's symbolic dims with it. */
typedef struct {
	const char *name;
	int rank;
	int64_t dim[IR_MAX_RANK];
	const char *from;        /* NULL: --input-shape; else the file of the input's data
				  * it was read from (--inputs), named in messages */
} IrInputShape;
/* Parse "NAME=1x3x224x224" (--input-shape; "NAME=scalar" for rank 0) into *s, its
 * name copied into a; dims from 1 to 2^40. 0, or -1 with a message in msg. */
int ir_parse_shape(Arena *a, const char *spec, IrInputShape *s, char *msg, size_t size);
/* Where the data a run is given says an input's shape (`fusec run --inputs`: the
 * header of its .npy file). Asked only for an input whose shape names a dim (an ONNX
 * input: one not static) and that no IrInputShape names; the answer binds as an
 * --input-shape would. Returns 1 with *s filled (s->from set), 0 when there is no
 * data for that input, -1 with *d filled when its data cannot be read. */
/* The range a named dim (an ONNX dim_param) may take in a plan for every size:
 * `--dims NAME=LO..HI`. */
typedef struct {
	const char *name;
	int64_t lo, hi;
} IrDimRange;

typedef struct {
	int (*shape)(void *ctx, const char *input, IrInputShape *s, Diag *d);  /* or NULL */
	void *ctx;
	bool symbolic;   /* named dims that nothing binds stay symbolic (Graph.sym)
			    instead of being an error */
	const IrDimRange *ranges;   /* --dims: ranges that replace the graph's `dims:` */
	int nranges;
} IrShapeLookup;
/* ir_read_*_errors with shapes for the inputs, which bind their named dims; lookup
 * (or NULL) binds those of the inputs the shapes leave out. */
Graph *ir_read_mem_shapes(Arena *a, const char *file, const char *text, size_t len,
			  GraphFormat fmt, const IrInputShape *shapes, int nshapes,
			  const IrShapeLookup *lookup, Diag *d, int maxd, int *nd);
Graph *ir_read_file_shapes(Arena *a, const char *path, GraphFormat fmt,
			   const IrInputShape *shapes, int nshapes, const IrShapeLookup *lookup,
			   Diag *d, int maxd, int *nd);
/* Whether s may be a graph's name, and so the stem of its output files: letters,
 * digits, '_', '-' and '.', not empty and not starting with '.'. */
bool ir_graph_name_ok(const char *s);

/* ---- inference ------------------------------------------------------------- */

/* Infer the dtype and shape of op's output from its operands and attributes,
 * checking every rule of SPEC §1. Fills out->dtype, ->rank, ->dim. On error
 * returns -1 and writes a message without position ("shapes [64,64] and [32,64]
 * do not broadcast") into msg. Attributes are already type-checked by the reader;
 * axis values arrive as written and are normalized here (attr is writable). */
int ir_infer(const Graph *g, const Op *op, Attrs *attr, Tensor *out, char *msg, size_t msgsize);

/* ---- liveness and segments ------------------------------------------------- */

/* Compute last_read, operand status and segments. Called by the readers. */
void ir_finish(Graph *g);

/* ---- relative form (SPEC §2) ----------------------------------------------- */

typedef struct {
	int32_t id;                  /* relative tensor id */
	uint8_t dtype, rank, status;
	uint32_t shape[IR_MAX_RANK]; /* shape ids; 0 is the value 1 */
} RelTensor;

/* Attributes that stay in relative form; scalars and slice ranges do not. */
typedef struct {
	uint8_t dtype, approx, axis, n;
	uint8_t axes[IR_MAX_RANK];
	int32_t stride[2], padding[2], dilation[2], kernel[2], groups, layout;
	uint8_t lone;                  /* Op.lone (hashed only when set) */
	int64_t causal;                /* attention: Attrs.causal (hashed only when set) */
	uint8_t zero_nan;              /* attention: Attrs.zero_nan (hashed only when set) */
} RelAttrs;

typedef struct {
	uint16_t kind;
	uint8_t nin, nout;
	uint16_t nplace;             /* placeholders this op introduces */
	int32_t place0;              /* number of its first placeholder (#place0) */
	RelTensor *t;                /* nin operands, then nout results */
	RelAttrs attr;
	uint64_t hash;
} RelOp;

/* The converter: state that carries from one op of a segment to the next. */
typedef struct RelConv RelConv;

RelConv *ir_rel_new(const Graph *g);   /* malloc'd; free with ir_rel_free */
void ir_rel_free(RelConv *c);
void ir_rel_reset(RelConv *c);         /* start a new segment */
/* Convert global op `op` into *out; t storage comes from arena a. Placeholder values
 * are appended to the converter's value list (ir_rel_values). */
void ir_rel_op(RelConv *c, Arena *a, int op, RelOp *out);
const double *ir_rel_values(const RelConv *c, int *n);
/* The global dim value of each shape id seen since the last reset (id 0 is 1). */
const int64_t *ir_rel_dims(const RelConv *c, int *n);
/* The global tensor id of each relative id seen since the last reset. */
const int *ir_rel_tensors(const RelConv *c, int *n);
/* Per shape id (ir_rel_dims; id 0, the size 1, excepted): the global tensor and the
 * axis it was first seen at, two entries an id. */
const int32_t *ir_rel_dim_sources(const RelConv *c, int *n);

bool ir_rel_equal(const RelOp *a, const RelOp *b);
bool ir_rel_shape_equal(const RelTensor *a, const RelTensor *b);   /* rank and shape ids */
/* Whether op is a permute or swap_dims of tensor id that keeps the last axis (the
 * heads merged back after an attention op: its launch writes through it). */
bool ir_rel_head_merge(const RelOp *op, int32_t id);
/* Deep copy of a relative op (its tensors from arena a). */
void ir_rel_copy(Arena *a, RelOp *dst, const RelOp *src);
int ir_rel_max_shape_id(const RelOp *op);
uint64_t ir_rel_hash(const RelOp *op);  /* stable across runs and machines */
/* "NumericFloat::MulScalar(t2:f32[1,1] ReadOnly, #0) -> t3:f32[1,1]" */
void ir_rel_print(Buf *b, const RelOp *op);

#endif
