/* gen_graph.c: writes fusec-graph/1 JSON graphs for the search benchmark
 * (docs/benchmarks.md). Standalone C, so CI machines need no scripting language.
 *
 *   gen_graph transformer L [--hidden H] [--seq S] [--heads N] [--sync-per-layer]
 *   gen_graph transformer2d L [--hidden H] [--seq S] [--sync-per-layer]
 *   gen_graph random N [--seed S]
 *   gen_graph chain N [--dim D]
 *
 * `transformer` stacks L pre-norm transformer layers on x[S,H]: layer norm
 * decomposed into nine ops, Q/K/V projections with bias, reshape and permute into
 * heads, scores, scaling, softmax decomposed into five ops, context, merge of the
 * heads, output projection with bias, residual, a second layer norm, an MLP
 * (matmul, bias, tanh gelu, matmul, bias) and a second residual: 49 ops a layer,
 * plus a `sync` with --sync-per-layer. Every layer has weights of its own, but in
 * relative form all layers look alike, so later layers hit the plans the first one
 * settled.
 *
 * `transformer2d` is the same stack as a new user would first write it, on 2-D
 * activations x[S,H] (default [512,768]) with a single head: layer norm in nine
 * ops, Q/K/V matmuls without bias, swap_dims of K, the scores matmul, a scale, a
 * five-op softmax, p @ v, the output projection without bias, the residual, a
 * second layer norm, matmul + bias + tanh gelu, matmul + bias and the residual:
 * 38 ops a layer (3,000 layers: 114,000 ops). Without --sync-per-layer the graph is
 * one long segment.
 *
 * `random` writes N ops of a random DAG over f32 tensors of rank 2 to 4 with dims
 * from a small palette: unary math, scalar ops, broadcasting binary ops, select,
 * reductions on any axis, views (reshape, permute, swap_dims, expand) and matmuls,
 * reading mostly recent tensors, with a sync after about one op in sixteen (syncs
 * are not counted in N). The op mix, operand choices, ranks and broadcast patterns
 * vary from segment to segment, so the plan cache rarely hits. Every op result
 * nobody reads is an output. Same seed, same graph, on any machine.
 *
 * `chain` writes N unary ops in one chain on a [D,D] tensor (default 8), cycling
 * through neg, abs, relu, tanh, sigmoid and sin, in one segment without syncs
 * (issue 15's long chain of small ops).
 *
 * The graph goes to stdout, one op a line. Exit status 0, or 2 on a usage error. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_RANK = 4, WINDOW = 24 };

static void usage(void)
{
	fputs("usage: gen_graph transformer L [--hidden H] [--seq S] [--heads N] [--sync-per-layer]\n"
	      "       gen_graph transformer2d L [--hidden H] [--seq S] [--sync-per-layer]\n"
	      "       gen_graph random N [--seed S]\n"
	      "       gen_graph chain N [--dim D]\n", stderr);
	exit(2);
}

static long parse_pos(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (*end || v < 1)
		usage();
	return v;
}

/* ---- transformer ------------------------------------------------------------ */

typedef struct {
	long s, h, n, d, f;    /* seq, hidden, heads, head dim, MLP width */
	int layer;
	int nops;              /* ops written so far, for the comma */
} Tf;

static void op_begin(Tf *t)
{
	fputs(t->nops++ ? ",\n  " : "\n  ", stdout);
}

/* An op with one or two operands named "<layer>.<name>" or absolute ("x"). */
static void tf_op(Tf *t, const char *op, const char *a, const char *b, const char *out,
		  const char *extra)
{
	op_begin(t);
	printf("{\"op\": \"%s\", \"in\": [\"%s\"", op, a);
	if (b)
		printf(", \"%s\"", b);
	printf("], \"out\": \"%s\"%s%s}", out, extra ? ", " : "", extra ? extra : "");
}

static void tf_input(int *first, const char *name, long d0, long d1)
{
	printf("%s\n  \"%s\": {\"dtype\": \"f32\", \"shape\": [%ld, %ld]}", *first ? "" : ",",
	       name, d0, d1);
	*first = 0;
}

static const char *nm(char *buf, int layer, const char *name)
{
	snprintf(buf, 48, "l%d.%s", layer, name);
	return buf;
}

/* Layer norm over the last axis of x into out; gamma and beta are l<L>.<pre>_g/_b. */
static void tf_layer_norm(Tf *t, const char *x, const char *pre, const char *out)
{
	char mu[48], d[48], d2[48], var[48], ve[48], sd[48], n[48], ng[48], g[48], b[48];
	int l = t->layer;
	snprintf(mu, sizeof mu, "l%d.%s_mu", l, pre);
	snprintf(d, sizeof d, "l%d.%s_d", l, pre);
	snprintf(d2, sizeof d2, "l%d.%s_d2", l, pre);
	snprintf(var, sizeof var, "l%d.%s_var", l, pre);
	snprintf(ve, sizeof ve, "l%d.%s_ve", l, pre);
	snprintf(sd, sizeof sd, "l%d.%s_sd", l, pre);
	snprintf(n, sizeof n, "l%d.%s_n", l, pre);
	snprintf(ng, sizeof ng, "l%d.%s_ng", l, pre);
	snprintf(g, sizeof g, "l%d.%s_g", l, pre);
	snprintf(b, sizeof b, "l%d.%s_b", l, pre);
	tf_op(t, "mean", x, NULL, mu, "\"axis\": 1");
	tf_op(t, "sub", x, mu, d, NULL);
	tf_op(t, "mul", d, d, d2, NULL);
	tf_op(t, "mean", d2, NULL, var, "\"axis\": 1");
	tf_op(t, "add_scalar", var, NULL, ve, "\"scalar\": 1e-05");
	tf_op(t, "sqrt", ve, NULL, sd, NULL);
	tf_op(t, "div", d, sd, n, NULL);
	tf_op(t, "mul", n, g, ng, NULL);
	tf_op(t, "add", ng, b, out, NULL);
}

static void tf_layer(Tf *t, const char *x, const char *out)
{
	int l = t->layer;
	char a[48], b[48], c[48], e[48], h[48], r1[48], extra[96];
	nm(h, l, "h");
	tf_layer_norm(t, x, "ln1", h);
	static const char *const qkv[3] = {"q", "k", "v"};
	for (int i = 0; i < 3; i++) {
		char w[48], bias[48], o[48];
		snprintf(w, sizeof w, "l%d.w%s", l, qkv[i]);
		snprintf(bias, sizeof bias, "l%d.b%s", l, qkv[i]);
		snprintf(a, sizeof a, "l%d.%s0", l, qkv[i]);
		snprintf(o, sizeof o, "l%d.%s", l, qkv[i]);
		tf_op(t, "matmul", h, w, a, NULL);
		tf_op(t, "add", a, bias, o, NULL);
	}
	for (int i = 0; i < 3; i++) {
		char src[48], o[48];
		snprintf(src, sizeof src, "l%d.%s", l, qkv[i]);
		snprintf(a, sizeof a, "l%d.%sh", l, qkv[i]);
		snprintf(o, sizeof o, "l%d.%st", l, qkv[i]);
		snprintf(extra, sizeof extra, "\"shape\": [%ld, %ld, %ld]", t->s, t->n, t->d);
		tf_op(t, "reshape", src, NULL, a, extra);
		/* q, v: [N,S,D]; k: [N,D,S] so that q @ k is [N,S,S] */
		tf_op(t, "permute", a, NULL, o, i == 1 ? "\"axes\": [1, 2, 0]" : "\"axes\": [1, 0, 2]");
	}
	char qt[48], kt[48], vt[48];
	tf_op(t, "matmul", nm(qt, l, "qt"), nm(kt, l, "kt"), nm(a, l, "sc"), NULL);
	snprintf(extra, sizeof extra, "\"scalar\": %.17g", 1.0 / sqrt((double)t->d));
	tf_op(t, "mul_scalar", a, NULL, nm(b, l, "scs"), extra);
	tf_op(t, "max_dim", b, NULL, nm(c, l, "sm_m"), "\"axis\": 2");
	tf_op(t, "sub", b, c, nm(a, l, "sm_d"), NULL);
	tf_op(t, "exp", a, NULL, nm(e, l, "sm_e"), NULL);
	tf_op(t, "sum", e, NULL, nm(c, l, "sm_s"), "\"axis\": 2");
	tf_op(t, "div", e, c, nm(b, l, "p"), NULL);
	tf_op(t, "matmul", b, nm(vt, l, "vt"), nm(a, l, "ctx"), NULL);
	tf_op(t, "permute", a, NULL, nm(b, l, "ctx_t"), "\"axes\": [1, 0, 2]");
	snprintf(extra, sizeof extra, "\"shape\": [%ld, %ld]", t->s, t->h);
	tf_op(t, "reshape", b, NULL, nm(a, l, "ctx_r"), extra);
	tf_op(t, "matmul", a, nm(c, l, "wo"), nm(b, l, "o0"), NULL);
	tf_op(t, "add", b, nm(c, l, "bo"), nm(a, l, "o"), NULL);
	tf_op(t, "add", x, a, nm(r1, l, "r1"), NULL);
	tf_layer_norm(t, r1, "ln2", nm(h, l, "h2"));
	tf_op(t, "matmul", h, nm(c, l, "w1"), nm(a, l, "f0"), NULL);
	tf_op(t, "add", a, nm(c, l, "b1"), nm(b, l, "f1"), NULL);
	tf_op(t, "gelu", b, NULL, nm(a, l, "f2"), "\"approximate\": \"tanh\"");
	tf_op(t, "matmul", a, nm(c, l, "w2"), nm(b, l, "f3"), NULL);
	tf_op(t, "add", b, nm(c, l, "b2"), nm(a, l, "f4"), NULL);
	tf_op(t, "add", r1, a, out, NULL);
}

static void gen_transformer(int argc, char **argv)
{
	if (argc < 1)
		usage();
	long layers = parse_pos(argv[0]);
	Tf t = {.s = 128, .h = 512, .n = 8};
	int sync = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--sync-per-layer"))
			sync = 1;
		else if (i + 1 < argc && !strcmp(argv[i], "--hidden"))
			t.h = parse_pos(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "--seq"))
			t.s = parse_pos(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "--heads"))
			t.n = parse_pos(argv[++i]);
		else
			usage();
	}
	if (t.h % t.n) {
		fprintf(stderr, "gen_graph: --hidden %ld is not a multiple of --heads %ld\n", t.h, t.n);
		exit(2);
	}
	t.d = t.h / t.n;
	t.f = 4 * t.h;

	printf("{\"format\": \"fusec-graph/1\", \"name\": \"transformer_%ld\",\n\"inputs\": {", layers);
	int first = 1;
	tf_input(&first, "x", t.s, t.h);
	char nbuf[48];
	for (int l = 0; l < layers; l++) {
		static const char *const vec[] = {"ln1_g", "ln1_b", "bq", "bk", "bv", "bo",
						  "ln2_g", "ln2_b", "b2"};
		for (size_t i = 0; i < sizeof vec / sizeof vec[0]; i++)
			tf_input(&first, nm(nbuf, l, vec[i]), 1, t.h);
		tf_input(&first, nm(nbuf, l, "wq"), t.h, t.h);
		tf_input(&first, nm(nbuf, l, "wk"), t.h, t.h);
		tf_input(&first, nm(nbuf, l, "wv"), t.h, t.h);
		tf_input(&first, nm(nbuf, l, "wo"), t.h, t.h);
		tf_input(&first, nm(nbuf, l, "w1"), t.h, t.f);
		tf_input(&first, nm(nbuf, l, "b1"), 1, t.f);
		tf_input(&first, nm(nbuf, l, "w2"), t.f, t.h);
	}
	fputs("},\n\"ops\": [", stdout);
	char prev[48] = "x", out[48];
	for (int l = 0; l < layers; l++) {
		t.layer = l;
		nm(out, l, "y");
		tf_layer(&t, prev, out);
		if (sync) {
			op_begin(&t);
			fputs("{\"op\": \"sync\"}", stdout);
		}
		memcpy(prev, out, sizeof prev);
	}
	printf("],\n\"outputs\": [\"%s\"]}\n", prev);
}

/* One layer of the 2-D, single-head stack (`transformer2d`). */
static void tf2d_layer(Tf *t, const char *x, const char *out)
{
	int l = t->layer;
	char a[48], b[48], c[48], e[48], h[48], r1[48], q[48], k[48], v[48], extra[96];
	nm(h, l, "h");
	tf_layer_norm(t, x, "ln1", h);
	tf_op(t, "matmul", h, nm(c, l, "wq"), nm(q, l, "q"), NULL);
	tf_op(t, "matmul", h, nm(c, l, "wk"), nm(k, l, "k"), NULL);
	tf_op(t, "matmul", h, nm(c, l, "wv"), nm(v, l, "v"), NULL);
	tf_op(t, "swap_dims", k, NULL, nm(a, l, "kt"), "\"dims\": [0, 1]");
	tf_op(t, "matmul", q, a, nm(b, l, "sc"), NULL);
	snprintf(extra, sizeof extra, "\"scalar\": %.17g", 1.0 / sqrt((double)t->h));
	tf_op(t, "mul_scalar", b, NULL, nm(a, l, "scs"), extra);
	tf_op(t, "max_dim", a, NULL, nm(c, l, "sm_m"), "\"axis\": 1");
	tf_op(t, "sub", a, c, nm(b, l, "sm_d"), NULL);
	tf_op(t, "exp", b, NULL, nm(e, l, "sm_e"), NULL);
	tf_op(t, "sum", e, NULL, nm(c, l, "sm_s"), "\"axis\": 1");
	tf_op(t, "div", e, c, nm(b, l, "p"), NULL);
	tf_op(t, "matmul", b, v, nm(a, l, "ctx"), NULL);
	tf_op(t, "matmul", a, nm(c, l, "wo"), nm(b, l, "o"), NULL);
	tf_op(t, "add", x, b, nm(r1, l, "r1"), NULL);
	tf_layer_norm(t, r1, "ln2", nm(h, l, "h2"));
	tf_op(t, "matmul", h, nm(c, l, "w1"), nm(a, l, "f0"), NULL);
	tf_op(t, "add", a, nm(c, l, "b1"), nm(b, l, "f1"), NULL);
	tf_op(t, "gelu", b, NULL, nm(a, l, "f2"), "\"approximate\": \"tanh\"");
	tf_op(t, "matmul", a, nm(c, l, "w2"), nm(b, l, "f3"), NULL);
	tf_op(t, "add", b, nm(c, l, "b2"), nm(a, l, "f4"), NULL);
	tf_op(t, "add", r1, a, out, NULL);
}

static void gen_transformer2d(int argc, char **argv)
{
	if (argc < 1)
		usage();
	long layers = parse_pos(argv[0]);
	Tf t = {.s = 512, .h = 768, .n = 1};
	int sync = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--sync-per-layer"))
			sync = 1;
		else if (i + 1 < argc && !strcmp(argv[i], "--hidden"))
			t.h = parse_pos(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "--seq"))
			t.s = parse_pos(argv[++i]);
		else
			usage();
	}
	t.d = t.h;
	t.f = 4 * t.h;

	printf("{\"format\": \"fusec-graph/1\", \"name\": \"transformer2d_%ld\",\n\"inputs\": {",
	       layers);
	int first = 1;
	tf_input(&first, "x", t.s, t.h);
	char nbuf[48];
	for (int l = 0; l < layers; l++) {
		static const char *const vec[] = {"ln1_g", "ln1_b", "ln2_g", "ln2_b", "b2"};
		for (size_t i = 0; i < sizeof vec / sizeof vec[0]; i++)
			tf_input(&first, nm(nbuf, l, vec[i]), 1, t.h);
		tf_input(&first, nm(nbuf, l, "wq"), t.h, t.h);
		tf_input(&first, nm(nbuf, l, "wk"), t.h, t.h);
		tf_input(&first, nm(nbuf, l, "wv"), t.h, t.h);
		tf_input(&first, nm(nbuf, l, "wo"), t.h, t.h);
		tf_input(&first, nm(nbuf, l, "w1"), t.h, t.f);
		tf_input(&first, nm(nbuf, l, "b1"), 1, t.f);
		tf_input(&first, nm(nbuf, l, "w2"), t.f, t.h);
	}
	fputs("},\n\"ops\": [", stdout);
	char prev[48] = "x", out[48];
	for (int l = 0; l < layers; l++) {
		t.layer = l;
		nm(out, l, "y");
		tf2d_layer(&t, prev, out);
		if (sync) {
			op_begin(&t);
			fputs("{\"op\": \"sync\"}", stdout);
		}
		memcpy(prev, out, sizeof prev);
	}
	printf("],\n\"outputs\": [\"%s\"]}\n", prev);
}

/* ---- random DAG --------------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int rndn(int n)
{
	return (int)(rnd() % (uint64_t)n);
}

typedef struct {
	int rank;
	long dim[MAX_RANK];
	int is_bool;
	int reads;
	int input;             /* a graph input, not an op result */
} RT;

typedef struct {
	RT *t;
	int n, cap;
	int nops;
	int ninputs;
} Dag;

static const long palette[] = {3, 5, 7, 8, 12, 16, 24, 32, 48, 64, 96, 128};

static long rnd_dim(void)
{
	return palette[rndn((int)(sizeof palette / sizeof palette[0]))];
}

static int dag_new(Dag *g, int rank, const long *dim, int is_bool, int input)
{
	if (g->n == g->cap) {
		g->cap = g->cap ? g->cap * 2 : 256;
		g->t = realloc(g->t, sizeof(RT) * (size_t)g->cap);
		if (!g->t) {
			fputs("gen_graph: out of memory\n", stderr);
			exit(1);
		}
	}
	RT *t = &g->t[g->n];
	memset(t, 0, sizeof *t);
	t->rank = rank;
	memcpy(t->dim, dim, sizeof(long) * (size_t)rank);
	t->is_bool = is_bool;
	t->input = input;
	return g->n++;
}

/* A new graph input, declared up front: written to the inputs buffer. */
static int dag_input(Dag *g, FILE *decl, int rank, const long *dim)
{
	int id = dag_new(g, rank, dim, 0, 1);
	fprintf(decl, "%s\n  \"t%d\": {\"dtype\": \"f32\", \"shape\": [", g->ninputs++ ? "," : "", id);
	for (int i = 0; i < rank; i++)
		fprintf(decl, i ? ", %ld" : "%ld", dim[i]);
	fputs("]}", decl);
	return id;
}

static int dag_input_rnd(Dag *g, FILE *decl)
{
	long d[MAX_RANK];
	int rank = 2 + rndn(3);
	for (int i = 0; i < rank; i++)
		d[i] = rnd_dim();
	return dag_input(g, decl, rank, d);
}

/* A recent float tensor (most of the time), or an older one. */
static int pick(const Dag *g)
{
	for (int tries = 0; tries < 16; tries++) {
		int w = g->n < WINDOW || rndn(8) == 0 ? g->n : WINDOW;
		int id = g->n - 1 - rndn(w);
		if (!g->t[id].is_bool)
			return id;
	}
	return -1;
}

/* A recent float tensor with exactly shape (rank, dim), or -1. */
static int pick_same(const Dag *g, const RT *like, int not)
{
	int lo = g->n > 4 * WINDOW ? g->n - 4 * WINDOW : 0;
	int start = lo + rndn(g->n - lo);
	for (int k = 0; k < g->n - lo; k++) {
		int id = lo + (start - lo + k) % (g->n - lo);
		const RT *t = &g->t[id];
		if (id != not && !t->is_bool && t->rank == like->rank &&
		    !memcmp(t->dim, like->dim, sizeof(long) * (size_t)t->rank))
			return id;
	}
	return -1;
}

static void dag_op_begin(Dag *g, FILE *ops)
{
	fputs(g->nops++ ? ",\n  " : "\n  ", ops);
}

static void dag_emit(Dag *g, FILE *ops, const char *op, const int *in, int nin, int out,
		     const char *extra)
{
	dag_op_begin(g, ops);
	fprintf(ops, "{\"op\": \"%s\", \"in\": [", op);
	for (int i = 0; i < nin; i++) {
		fprintf(ops, i ? ", \"t%d\"" : "\"t%d\"", in[i]);
		g->t[in[i]].reads++;
	}
	fprintf(ops, "], \"out\": \"t%d\"%s%s}", out, extra ? ", " : "", extra ? extra : "");
}

/* A second operand broadcast-compatible with a: a tensor of the same shape, or a
 * new input with some of a's dims set to 1. */
static int operand_like(Dag *g, FILE *decl, int a)
{
	RT like = g->t[a];
	if (rndn(2)) {
		int b = pick_same(g, &like, a);
		if (b >= 0)
			return b;
	}
	for (int i = 0; i < like.rank; i++)
		if (rndn(3) == 0)
			like.dim[i] = 1;
	return dag_input(g, decl, like.rank, like.dim);
}

static void gen_dag_op(Dag *g, FILE *decl, FILE *ops)
{
	static const char *const unary[] = {"exp", "tanh", "relu", "sigmoid", "neg", "abs",
					    "log", "sin", "silu", "sqrt", "erf"};
	static const char *const scalar[] = {"add_scalar", "mul_scalar", "sub_scalar",
					     "div_scalar", "pow_scalar"};
	static const char *const binary[] = {"add", "mul", "sub", "div", "max", "min"};
	static const char *const reduce[] = {"sum", "mean", "max_dim", "min_dim", "prod"};
	char extra[160];
	int a = pick(g);
	if (a < 0)
		a = dag_input_rnd(g, decl);
	RT ta = g->t[a];
	int in[3], r = rndn(100);
	if (r < 22) {
		in[0] = a;
		int o = dag_new(g, ta.rank, ta.dim, 0, 0);
		const char *u = unary[rndn((int)(sizeof unary / sizeof unary[0]))];
		dag_emit(g, ops, u, in, 1, o, NULL);
	} else if (r < 36) {
		in[0] = a;
		int o = dag_new(g, ta.rank, ta.dim, 0, 0);
		snprintf(extra, sizeof extra, "\"scalar\": %.3g", (double)(rndn(2000) - 1000) / 100.0);
		dag_emit(g, ops, scalar[rndn((int)(sizeof scalar / sizeof scalar[0]))], in, 1, o,
			 extra);
	} else if (r < 60) {
		int b = operand_like(g, decl, a);
		if (rndn(2)) {
			in[0] = b;
			in[1] = a;
		} else {
			in[0] = a;
			in[1] = b;
		}
		RT out = ta;
		for (int i = 0; i < out.rank; i++)
			if (g->t[b].dim[i] > out.dim[i])
				out.dim[i] = g->t[b].dim[i];
		int o = dag_new(g, out.rank, out.dim, 0, 0);
		dag_emit(g, ops, binary[rndn((int)(sizeof binary / sizeof binary[0]))], in, 2, o,
			 NULL);
	} else if (r < 64) {
		/* where(x > s, x, y) */
		in[0] = a;
		int m = dag_new(g, ta.rank, ta.dim, 1, 0);
		snprintf(extra, sizeof extra, "\"scalar\": %.3g", (double)(rndn(200) - 100) / 100.0);
		dag_emit(g, ops, "gt_scalar", in, 1, m, extra);
		in[0] = m;
		in[1] = a;
		in[2] = operand_like(g, decl, a);
		int o = dag_new(g, ta.rank, ta.dim, 0, 0);
		dag_emit(g, ops, "where", in, 3, o, NULL);
	} else if (r < 76) {
		in[0] = a;
		int axis = rndn(ta.rank);
		RT out = ta;
		out.dim[axis] = 1;
		int o = dag_new(g, out.rank, out.dim, 0, 0);
		snprintf(extra, sizeof extra, "\"axis\": %d", axis);
		dag_emit(g, ops, reduce[rndn((int)(sizeof reduce / sizeof reduce[0]))], in, 1, o,
			 extra);
	} else if (r < 90) {
		in[0] = a;
		RT out = ta;
		int kind = rndn(4);
		int n = snprintf(extra, sizeof extra, "\"%s\": [",
				 kind == 0 ? "shape" : kind == 1 ? "axes" : kind == 2 ? "dims" : "shape");
		const char *op = "reshape";
		if (kind == 0) {
			/* merge two adjacent dims, or split one in two when it is even */
			int i = rndn(ta.rank - 1);
			if (ta.rank > 2 && rndn(2)) {
				out.rank = ta.rank - 1;
				out.dim[i] = ta.dim[i] * ta.dim[i + 1];
				for (int k = i + 1; k < out.rank; k++)
					out.dim[k] = ta.dim[k + 1];
			} else if (ta.rank < MAX_RANK && ta.dim[i] % 2 == 0) {
				out.rank = ta.rank + 1;
				out.dim[i] = 2;
				out.dim[i + 1] = ta.dim[i] / 2;
				for (int k = i + 1; k < ta.rank; k++)
					out.dim[k + 1] = ta.dim[k];
			} else {
				out.rank = 2;
				out.dim[0] = 1;
				out.dim[1] = 1;
				for (int k = 0; k < ta.rank; k++)
					out.dim[k == 0 ? 0 : 1] *= ta.dim[k];
			}
		} else if (kind == 1) {
			int perm[MAX_RANK];
			for (int i = 0; i < ta.rank; i++)
				perm[i] = i;
			for (int i = ta.rank - 1; i > 0; i--) {
				int j = rndn(i + 1), t = perm[i];
				perm[i] = perm[j];
				perm[j] = t;
			}
			for (int i = 0; i < ta.rank; i++) {
				out.dim[i] = ta.dim[perm[i]];
				n += snprintf(extra + n, sizeof extra - (size_t)n, i ? ", %d" : "%d", perm[i]);
			}
			op = "permute";
		} else if (kind == 2) {
			int i = rndn(ta.rank), j = rndn(ta.rank);
			out.dim[i] = ta.dim[j];
			out.dim[j] = ta.dim[i];
			n += snprintf(extra + n, sizeof extra - (size_t)n, "%d, %d", i, j);
			op = "swap_dims";
		} else {
			/* expand: a size-1 dim (a fresh reduction when there is none) */
			int i = -1;
			for (int k = 0; k < ta.rank && i < 0; k++)
				if (ta.dim[k] == 1)
					i = k;
			if (i < 0) {
				i = rndn(ta.rank);
				RT red = ta;
				red.dim[i] = 1;
				int m = dag_new(g, red.rank, red.dim, 0, 0);
				char ax[32];
				snprintf(ax, sizeof ax, "\"axis\": %d", i);
				dag_emit(g, ops, "sum", in, 1, m, ax);
				in[0] = m;
			}
			out.dim[i] = rnd_dim();
			op = "expand";
		}
		if (kind == 0 || kind == 3)
			for (int i = 0; i < out.rank; i++)
				n += snprintf(extra + n, sizeof extra - (size_t)n, i ? ", %ld" : "%ld",
					      out.dim[i]);
		snprintf(extra + n, sizeof extra - (size_t)n, "]");
		int o = dag_new(g, out.rank, out.dim, 0, 0);
		dag_emit(g, ops, op, in, 1, o, extra);
	} else {
		/* a @ w with w a new input [lead..., K, N] */
		long d[MAX_RANK];
		memcpy(d, ta.dim, sizeof d);
		d[ta.rank - 2] = ta.dim[ta.rank - 1];
		d[ta.rank - 1] = rnd_dim();
		for (int i = 0; i < ta.rank - 2; i++)
			if (rndn(2))
				d[i] = 1;
		in[0] = a;
		in[1] = dag_input(g, decl, ta.rank, d);
		RT out = ta;
		out.dim[ta.rank - 1] = d[ta.rank - 1];
		int o = dag_new(g, out.rank, out.dim, 0, 0);
		dag_emit(g, ops, "matmul", in, 2, o, NULL);
	}
}

static void gen_random(int argc, char **argv)
{
	if (argc < 1)
		usage();
	long n = parse_pos(argv[0]);
	rng_state = 1;
	for (int i = 1; i < argc; i++) {
		if (i + 1 < argc && !strcmp(argv[i], "--seed"))
			rng_state = (uint64_t)strtoull(argv[++i], NULL, 10);
		else
			usage();
	}
	char *declbuf = NULL, *opsbuf = NULL;
	size_t decllen = 0, opslen = 0;
	FILE *decl = open_memstream(&declbuf, &decllen);
	FILE *ops = open_memstream(&opsbuf, &opslen);
	if (!decl || !ops) {
		fputs("gen_graph: out of memory\n", stderr);
		exit(1);
	}
	Dag g = {0};
	for (int i = 0; i < 4; i++)
		dag_input_rnd(&g, decl);
	int nsync = 0;
	while (g.nops - nsync < n) {
		gen_dag_op(&g, decl, ops);
		if (rndn(16) == 0) {
			dag_op_begin(&g, ops);
			fputs("{\"op\": \"sync\"}", ops);
			nsync++;
		}
	}
	fclose(decl);
	fclose(ops);
	printf("{\"format\": \"fusec-graph/1\", \"name\": \"random_%ld\",\n\"inputs\": {%s},\n"
	       "\"ops\": [%s],\n\"outputs\": [", n, declbuf, opsbuf);
	/* every op result nobody reads is an output, so nothing is dead */
	int first = 1;
	for (int i = 0; i < g.n; i++)
		if (!g.t[i].input && !g.t[i].reads) {
			printf(first ? "\"t%d\"" : ", \"t%d\"", i);
			first = 0;
		}
	puts("]}");
	free(declbuf);
	free(opsbuf);
	free(g.t);
}

static void gen_chain(int argc, char **argv)
{
	static const char *const ops[] = {"neg", "abs", "relu", "tanh", "sigmoid", "sin"};
	if (argc < 1)
		usage();
	long n = parse_pos(argv[0]), d = 8;
	for (int i = 1; i < argc; i++) {
		if (i + 1 < argc && !strcmp(argv[i], "--dim"))
			d = parse_pos(argv[++i]);
		else
			usage();
	}
	printf("{\"format\": \"fusec-graph/1\", \"name\": \"chain_%ld\",\n"
	       "\"inputs\": {\"t0\": {\"dtype\": \"f32\", \"shape\": [%ld, %ld]}},\n\"ops\": [\n",
	       n, d, d);
	for (long i = 0; i < n; i++)
		printf("{\"op\": \"%s\", \"in\": [\"t%ld\"], \"out\": \"t%ld\"}%s\n",
		       ops[i % 6], i, i + 1, i + 1 < n ? "," : "");
	printf("],\n\"outputs\": [\"t%ld\"]}\n", n);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	if (!strcmp(argv[1], "transformer"))
		gen_transformer(argc - 2, argv + 2);
	else if (!strcmp(argv[1], "transformer2d"))
		gen_transformer2d(argc - 2, argv + 2);
	else if (!strcmp(argv[1], "random"))
		gen_random(argc - 2, argv + 2);
	else if (!strcmp(argv[1], "chain"))
		gen_chain(argc - 2, argv + 2);
	else
		usage();
	return 0;
}
