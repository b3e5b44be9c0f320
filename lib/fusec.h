/* fusec.h: fusec's compiler as a library, for programs that compile graphs (C11,
 * C++17).
 *
 * A compile reads a graph (a fusec-graph/1 file in JSON or YAML, or an ONNX model),
 * searches fusions, checks the schedule, generates the kernels' PTX through LLVM
 * and writes the plan the runtime (<fusecrt.h>) loads: the same pipeline, with the
 * same outputs, as `fusec compile` (docs/library.md).
 *
 *     fusec_options o;
 *     fusec_options_init(&o);                  // the defaults below
 *     o.arch = "sm_80,sm_90a";                 // optional: a list of arches
 *     fusec_error e;
 *     fusec_result *r = fusec_compile_file("model.yaml", &o, "out", &e);
 *     if (!r) fprintf(stderr, "%s:%d:%d: %s\n", e.file, e.line, e.column, e.message);
 *     // fusec_result_launches(r), fusec_result_file(r, i), ...; then
 *     // fusecrt_plan_load("out", ...) runs it
 *     fusec_result_free(r);
 *
 * Link with `pkg-config --cflags --libs fusec` (LLVM 19, libyaml, cJSON,
 * protobuf-c and libcrypto come with it).
 *
 * Errors: every call that can fail takes a fusec_error (NULL is allowed) and
 * returns NULL or a status below; the error then holds the code, one line of
 * message and, when the input is at fault, the file and the position in it
 * (line and column from 1; 0 when unknown). Of a graph with several errors, the
 * first. Nothing here prints or exits.
 *
 * The options struct may grow at its end in later versions: build against the
 * header of the library you link, and fill it with fusec_options_init.
 *
 * Memory: a result owns the strings and bytes its functions return, valid until
 * fusec_result_free; fusec_explain's text is freed with fusec_free. Options and
 * inputs stay the caller's and are not kept after a call returns.
 *
 * Threads: compile from one thread at a time (the readers' resource caps and
 * LLVM's setup are process-wide). */
#ifndef FUSEC_H
#define FUSEC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
	FUSEC_OK = 0,
	FUSEC_INVALID = 1,     /* the graph or model, or an option's value (an unknown arch) */
	FUSEC_USAGE = 2,       /* an option out of its range, a malformed arch list */
	FUSEC_FAILED = 3,      /* code generation, or writing the outputs */
};

typedef struct fusec_error {
	int code;              /* one of the enum above; FUSEC_OK when nothing failed */
	char file[256];        /* the file at fault; "" when none */
	int line, column;      /* its position, from 1; 0 when unknown */
	char message[1024];    /* one line, without the file */
} fusec_error;

/* A compile's options; fusec_options_init sets the defaults written beside each
 * (those of `fusec compile`, except the kernel cache: none unless cache_dir). */
typedef struct fusec_options {
	const char *arch;      /* "sm_90a"; or a list, "sm_80,sm_90a": one PTX file per arch */
	int allow_tf32;        /* 0; 1: f32 matmuls may run on tensor cores as tf32 */
	int burn_exact;        /* 0; 1: burn-fusion's rules where fusec deviates */
	int max_blocks;        /* 5: blocks per stream optimizer, at least 1 */
	int max_explorations;  /* -1: unlimited; else explorations per stream, then unfused */
	int max_bindings;      /* 32: buffers one fused kernel may bind */
	int jobs;              /* 0: the CPUs, at most 8; LLVM threads, 1 to 256 */
	const char *cache_dir; /* NULL: no kernel cache; else a private folder for one */
	int pretty_plan;       /* 0; 1: the plan indented for people */
	int emit_ll;           /* 0; 1: also NAME.ll, the optimized LLVM IR per arch */
	const char *libdevice; /* NULL: fusec's own math; a libdevice bitcode file */
	const char *const *input_shapes;  /* NULL; "NAME=1x3x224x224" each, ONNX models */
	int ninput_shapes;     /* 0 */
	int max_errors;        /* 20: errors read per graph file before stopping */
	const char *precision; /* NULL: as the graph says; "bf16" or "f16": an f32 graph
				* computed in that dtype (docs/precision.md) */
	const char *keep_f32;  /* NULL; with precision, op kinds, names or ops[N] kept
				* in f32, comma-separated */
	const char *layout;    /* NULL or "nchw": as the graph says; "nhwc": its convs
				* and pools rewritten channels last (docs/design.md,
				* "Channels last"); inputs and outputs stay as they are */
	const char *attention; /* NULL or "fuse": each attention written as matmul, scale,
				* bias or mask, softmax, matmul computed as one attention
				* op (docs/graph-format.md; NULL with burn_exact: as
				* "keep"); "keep": as the graph says */
	int allow_3xtf32;      /* 0 or 1: f32 matmuls may run on sm_90a's tensor cores
				* as three tf32 products a step, summed in f32 between
				* steps (unless allow_tf32; docs/tolerances.md, "3xTF32");
				* -1: never (compile's --no-3xtf32) */
} fusec_options;

typedef struct fusec_result fusec_result;

/* "fusec VERSION". */
const char *fusec_version(void);
void fusec_options_init(fusec_options *o);

/* Compile the graph in file `path` (JSON, YAML or ONNX; the extension or first
 * byte decides) and, when out_dir is not NULL, write its files there, all or none
 * (created if missing; files of the same names replaced). With out_dir NULL the
 * files stay in memory (fusec_result_file_data). NULL on failure. */
fusec_result *fusec_compile_file(const char *path, const fusec_options *o,
				 const char *out_dir, fusec_error *err);
/* The same for bytes already in memory: graph text or an ONNX model. `name` stands
 * for the file in messages and names the graph when it has no `name` key
 * ("model.yaml" names it model); constants' .npy files and ONNX external data are
 * looked for beside it. */
fusec_result *fusec_compile_bytes(const char *name, const void *data, size_t len,
				  const fusec_options *o, const char *out_dir,
				  fusec_error *err);
void fusec_result_free(fusec_result *r);        /* NULL is fine */

/* The graph's name: the stem of its files (NAME.plan.json). */
const char *fusec_result_name(const fusec_result *r);
/* What the line after `fusec compile` says: the ops computed (syncs left out),
 * the launches of a run, the distinct kernels of the first arch's PTX, and the
 * bytes a run moves (per launch, every tensor it reads and writes). */
long fusec_result_ops(const fusec_result *r);
long fusec_result_launches(const fusec_result *r);
long fusec_result_kernels(const fusec_result *r);
double fusec_result_bytes_moved(const fusec_result *r);
/* The files of the compile: the plan first, then the PTX per arch, the weights
 * file when the graph has constants, the LLVM IR when asked. fusec_result_file
 * gives the path written (OUT_DIR/NAME.ptx), or with out_dir NULL the file name;
 * NULL past the end. fusec_result_file_data gives its bytes (*len their count). */
int fusec_result_nfiles(const fusec_result *r);
const char *fusec_result_file(const fusec_result *r, int i);
const void *fusec_result_file_data(fusec_result *r, int i, size_t *len);

/* Why each op of a graph was or was not fused, as `fusec explain` prints it: text,
 * or with json 1 one JSON document (fusec-explain/1, docs/inspect.md). op: NULL
 * for every op, else one op by index, the tensor it writes or its name. The path
 * and options are those of fusec_compile_file (arch names the kernels). Returns
 * the text (freed with fusec_free), or NULL. */
/* ---- running on the host ------------------------------------------------------
 *
 * A result can run its graph on this machine, for tests and for programs without a
 * GPU: FUSEC_RUN_CPU runs the same kernels and launches as the plan, built for the
 * host and JIT-compiled (the `cpu` backend of `fusec run`; built on the first run
 * and kept in the result), FUSEC_RUN_INTERP the reference interpreter (host/interp.c,
 * every op in double). A graph compiled with a precision runs as converted.
 *
 * The graph's inputs (those the caller gives: not its constants, which the graph
 * carries) and outputs in its order: fusec_result_input and
 * fusec_result_output give the name (NULL past the end) and, through the pointers
 * that are not NULL, the dtype ("f32", "bf16", "i64", ...: docs/graph-format.md;
 * f16 and bf16 as their 16-bit patterns, bool one byte), rank, dims (up to 8) and
 * the dense row-major size in bytes. fusec_run reads inputs[i] and writes
 * outputs[i], the caller's buffers of those sizes. Not thread-safe on one result. */
enum { FUSEC_RUN_CPU = 0, FUSEC_RUN_INTERP = 1 };
int fusec_result_ninputs(const fusec_result *r);
int fusec_result_noutputs(const fusec_result *r);
const char *fusec_result_input(const fusec_result *r, int i, const char **dtype, int *rank,
			       int64_t *dims, size_t *bytes);
const char *fusec_result_output(const fusec_result *r, int i, const char **dtype, int *rank,
				int64_t *dims, size_t *bytes);
/* FUSEC_OK, or FUSEC_USAGE (an unknown `how`), FUSEC_INVALID (a runtime error of
 * the graph: a gather index out of range) or FUSEC_FAILED (building the kernels,
 * memory). */
int fusec_run(fusec_result *r, int how, const void *const *inputs, void *const *outputs,
	      fusec_error *err);

char *fusec_explain(const char *path, const fusec_options *o, const char *op, int json,
		    fusec_error *err);
void fusec_free(void *p);

#ifdef __cplusplus
}
#endif

#endif
