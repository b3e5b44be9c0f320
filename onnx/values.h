/* values.h: the importer's state and its values (values.c): every ONNX value a
 * Val, the graph being built, the name tables, and imp_emit, which adds an op or
 * folds it. Shared by import.c (the model), the builders (builders.c) and the
 * handlers. Private to onnx/. */
#ifndef FUSEC_ONNX_VALUES_H
#define FUSEC_ONNX_VALUES_H

#include "onnx_impl.h"

enum { ONNX_OPSET_MIN = 1, ONNX_OPSET_MAX = 21 };

struct Onnx__NodeProto;

/* A string-keyed open-addressing table; keys are borrowed. */
typedef struct {
	const char **key;
	void **val;
	size_t n, cap;
} NameMap;

/* One ONNX value: a constant (k holds it) or a graph tensor, or both once a
 * constant has been made a graph constant. */
typedef struct Val {
	DType dt;
	int rank;
	int64_t dim[IR_MAX_RANK];
	bool is_const;
	HostTensor k;          /* the value of a constant */
	int tensor;            /* graph tensor id, or -1 */
	const char *name;      /* the ONNX name a constant gets in the graph */
	bool borrowed;         /* k.data lies in the graph's arena: not freed, not copied */
	/* The same elements as a [rows, last dim] matrix: the matmul of a [.., M, K] by a
	 * [K, N] (flat = the [M', K] x [K, N] product) and the elementwise ops after it.
	 * Such a value is made a graph tensor (a reshape of flat) only when an op needs
	 * it whole (imp_tensor); the elementwise ops (un, sc, bin, cast) run on flat,
	 * so they follow the matmul without a reshape between and fuse as its epilogue. */
	struct Val *flat;
} Val;

/* Bounds on what the import itself computes, so that a hostile model cannot make
 * it slow or large. The import has a budget of element operations: IMP_FOLD_WORK,
 * plus IMP_FOLD_PER_VALUE for each element of the model's initializers, so that it
 * grows with the data a model carries, not with sizes it states. Folding an op on
 * constants spends its element reads, writes and multiply-adds (an op past the
 * budget is not folded: it stays in the graph, to run with the rest); a constant a
 * handler makes (an index table, a mask, a fill) spends its elements (past the
 * budget, or past IMP_MAX_MADE elements, it is "not supported yet"). A small
 * hostile model imports in about 2 s in the fuzz build (ASan and coverage; folding
 * a view costs about 1 µs an element there), 0.1 s in a normal build. */
enum { IMP_MAX_MADE = 1 << 26, IMP_FOLD_WORK = 1 << 21, IMP_FOLD_PER_VALUE = 8 };

/* A model read for every size of its dim_params (onnx/every.c): the symbols the
 * inputs' shapes name, in the order met, the size each is imported at, and the
 * symbol of each input dim. */
typedef struct {
	int nsym;
	const char *name[IR_SYM_MAX];
	int64_t lo[IR_SYM_MAX], hi[IR_SYM_MAX];   /* the range of each (--dims) */
	int64_t probe[IR_SYM_MAX];   /* the size each is imported at */
	const int64_t *first;        /* the first import's probes, which the second's avoid */
	int nfirst;
	int8_t *insym;               /* per tensor id below cin: IR_MAX_RANK symbols, -1 none */
	int cin;
	bool used[2 * IR_SYM_MAX];   /* which --dims ranges name a dim_param */
	/* dim_params an --input-shape fixes in some input: that size in every input */
	const char *fixed_name[4 * IR_SYM_MAX];
	int64_t fixed[4 * IR_SYM_MAX];
	int nfixed;
} OnnxEvery;

/* Give ga (the model imported at ea's probes) its expressions (Graph.sym), from gb,
 * the same model imported at the sizes pb: sizes that differ between the two are
 * the symbols'; a constant that differs depends on them, and is refused. -1 with *d
 * naming what could not be written over the symbols. */
int onnx_every_diff(Graph *ga, const Graph *gb, const OnnxEvery *ea, const int64_t *pb,
		    Diag *d);

typedef struct {
	Arena *a, *tmp;        /* the graph's arena; scratch (Vals) */
	OnnxEvery *every;      /* a model read for every size; NULL otherwise */
	int keep;              /* > 0: ops on constants are added, not folded (a range cut
				  to a size in the graph, a size counted there) */
	Graph *g;              /* tensors, ops and inputs in growable arrays */
	int tcap, ocap, icap, hcap;
	const char **hint;     /* per tensor: the node output it was made for */
	const char *cur_hint;
	Diag *d;
	const char *file, *dir;
	const OnnxOptions *opt;
	NameMap vals;          /* ONNX name -> Val */
	NameMap used;          /* tensor names taken */
	Val **consts;          /* every constant, freed at the end */
	size_t nconsts, cconsts;
	int opset;
	int node;              /* the node being imported, -1 outside */
	int64_t elements;      /* of every graph tensor so far (--max-elements) */
	int64_t fold_work;     /* spent folding so far, of fold_budget */
	int64_t fold_budget;
	const char *node_name, *op_type;
	const struct Onnx__NodeProto *n;
	/* the last [.., M, K] operand a matmul read as [M', K] (ob_matmul), and that
	 * reshape: the next matmul of the same operand (a layer's projections) reads
	 * the same tensor, so that they are siblings (passes/siblings.c) */
	struct Val *mm_src, *mm_flat;
} Imp;

int imp_fail(Imp *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void *imp_map_get(NameMap *m, const char *key);
void imp_map_put(NameMap *m, const char *key, void *v);
void imp_map_free(NameMap *m);
/* A constant from a host tensor (taken over; *k is left empty). */
Val *imp_const(Imp *m, HostTensor *k);
Val *imp_graph_input(Imp *m, const char *name, DType dt, int rank, const int64_t *dim);
int imp_tensor(Imp *m, Val *v);
Val *imp_flat(Imp *m, Val *flat, int rank, const int64_t *dim);
/* Spend n element operations of the import's budget: -1 (error set) when past it. */
int imp_charge(Imp *m, int64_t n);
/* Attributes for op k with every bit it takes set, options at their defaults. */
Attrs imp_attrs(OpKind k);
/* Add op k (folded when all operands are constants); NULL with the Diag filled. */
Val *imp_emit(Imp *m, OpKind k, Val **in, int n, const Attrs *at);

#endif
