/* cmd.h: the subcommands of the fusec driver. Each takes the arguments after its
 * name (argv[0] is the subcommand) and returns the process exit status (SPEC §7):
 * 0 success, 1 invalid input, 2 usage error, 3 code generation or runtime failure;
 * `run --check` adds 4: nothing failed, but some output element had no error bound
 * and was not checked (docs/tolerances.md).
 * Only cmd/ prints errors for the user and decides exit codes. */
#ifndef FUSEC_CMD_H
#define FUSEC_CMD_H

#include "../ir/ir.h"
#include "../passes/passes.h"

enum { EXIT_OK = 0, EXIT_INPUT = 1, EXIT_USAGE = 2, EXIT_FAIL = 3, EXIT_NOT_CHECKED = 4 };

int cmd_normalize(int argc, char **argv);
int cmd_compile(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_ops(int argc, char **argv);
int cmd_import(int argc, char **argv);

/* Shared helpers (cmd/fusec.c). */
extern const char *cmd_prog;                 /* "fusec" */
void cmd_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cmd_usage_error(const char *sub, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cmd_print_diag(const Diag *d);
/* The same with a code for --diagnostics json ("invalid-input", "error", "usage"). */
void cmd_print_diag_code(const Diag *d, const char *code);
extern bool cmd_diag_json;   /* --diagnostics json */
/* Whether path names an ONNX model: by extension, or by its first byte. */
bool cmd_is_onnx(const char *path);
/* Read a graph named on the command line ("-" is stdin); prints the error itself. */
Graph *cmd_load_graph(Arena *a, const char *path);
/* `fusec compile`: the same (text, when not NULL, is the file's bytes, read
 * already), and a graph file's named dims that --input-shape leaves unbound keep
 * every size of their range (Graph.sym): a plan for every size. */
Graph *cmd_load_graph_compile(Arena *a, const char *path, const char *text, size_t len);
/* The same for a run given its inputs' data: lookup gives the shape of an input
 * whose named dims (an ONNX model's symbolic ones) no --input-shape binds. */
Graph *cmd_load_graph_data(Arena *a, const char *path, const IrShapeLookup *lookup);
/* Read for every size of the named dims nothing binds (run --dynamic), with the
 * ranges of --dims; --input-shape is left to the run. */
Graph *cmd_load_graph_every(Arena *a, const char *path);
/* (With lookup->symbolic, the graph for every size of its named dims: --input-shape
 * is then left to the run it gives the sizes of.) */
/* Whether a compile of path may use the result cache: a graph file (not stdin, not
 * an ONNX model), no --input-shape. */
bool cmd_graph_cacheable(const char *path);
/* For a command given a compiled plan: 1 (the error printed) when --precision (or
 * --keep-f32, --layout, --attention), which apply to graphs, or --dims was given;
 * else 0. --input-shape is left to the plan (run_plan_open: it binds a plan for
 * every size). */
int cmd_refuse_input_shapes(const char *path);
/* The --input-shape options given: how many, *s the first. */
int cmd_input_shapes(const IrInputShape **s);
/* --precision (taken out of argv by main, applied by cmd_load_graph*): its name
 * ("bf16"; NULL when not given), the --keep-f32 LIST (or NULL), and what the
 * conversion of the last graph loaded did (NULL without --precision). */
const char *cmd_precision_name(void);
const char *cmd_precision_keep(void);
const PrecisionInfo *cmd_precision_info(void);
/* --layout nchw|nhwc (taken out with --precision, applied before it): as given, or
 * NULL (automatic); what the pass did to the last graph loaded (NULL: nothing). */
const char *cmd_layout_name(void);
const LayoutInfo *cmd_layout_info(void);
/* --attention's mode as given (NULL: not given), and what it did to the last graph */
const char *cmd_attention_name(void);
const AttentionInfo *cmd_attention_info(void);
const SiblingInfo *cmd_sibling_info(void);      /* passes/siblings.c */
/* f32 matmuls as three tf32 products (the default of compile, explain, run and
 * bench; not after --no-3xtf32): codegen/matmul_wgmma.c */
bool cmd_x3(void);
int cmd_kmajor_made(void);                      /* passes/kmajor.c */
/* A getopt_long call of subcommand sub returned '?' (opterr is 0): say which option
 * was unknown, with a "did you mean" from longopts and the driver's own options
 * (--max-ops, --input-shape, ...), or which one lacks its value. Always returns
 * EXIT_USAGE. */
struct option;
int cmd_bad_option(const char *sub, const struct option *longopts, const char *shortopts,
		   char **argv, int optind_now);
/* Parse a non-negative integer option value; prints a usage error and returns -1 if bad. */
long cmd_parse_count(const char *sub, const char *opt, const char *val);
/* --arch LIST of compile and explain: one arch or several, comma-separated
 * ("sm_80,sm_90a"), each of the shape sm_NN or sm_NNN with an optional `a`, one
 * LLVM 19 knows and the kernels run on (sm_70 on), none twice; at most max, copied
 * into arch[] in the order given (*n of them). Returns EXIT_OK, or after the
 * message EXIT_USAGE (not such a list) or EXIT_INPUT (an arch LLVM 19 does not
 * know, such as sm_100, with the ones it knows; one older than sm_70; a
 * duplicate). */
enum { CMD_ARCH_LEN = 9 };   /* PL_ARCH_LEN */
int cmd_parse_arches(const char *sub, const char *list, char (*arch)[CMD_ARCH_LEN], int max,
		     int *n);

/* Graphviz at run time (cmd/graphviz.c): is `dot` on PATH; DOT text to SVG (prints
 * its own error, returns -1). */
bool cmd_have_dot(void);
int cmd_dot_to_svg(const char *dot, size_t len, Buf *svg);

#endif
