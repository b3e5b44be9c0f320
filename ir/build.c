/* build.c: reading a graph: bytes -> document tree -> validated Graph (SPEC §1).
 *
 * ir_read_file/ir_read_mem check the bytes (UTF-8, no NUL, not empty), pick the
 * format (by extension, else by the first non-blank byte: `{` or `[` is JSON), hand
 * the text to read_json.c or read_yaml.c, and validate the resulting document tree
 * here, once for both formats. Every message names the place with a path
 * ("ops[1].in[0]: ...", "inputs.a.dtype: ...") or the op ("op 'add' (ops[2]): ...")
 * and carries the line:col of the node at fault, so JSON and YAML give the same text.
 *
 * Each op is checked as it is read: its operands must be defined above, its
 * attributes are type-checked into an Attrs, then ir_infer gives the output's dtype
 * and shape, which any stated `dtype`/`shape` must match. Tensor names go through an
 * open-addressing hash table, so reading is linear in the size of the document.
 * The document tree lives in a scratch arena freed before returning; only the
 * Graph is left in the caller's arena. */
#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "doc.h"
#include "ir.h"

enum { MAX_STREAM = 1023, MAX_INPUT_BYTES = 1 << 30 };

IrLimits ir_limits = {10000000, 20000000, INT64_MAX};

/* ---- the tensor name table -------------------------------------------------- */

typedef struct {
	int *slot;               /* tensor id + 1; 0 is empty */
	size_t mask;             /* capacity - 1, capacity a power of two */
} Names;

static size_t name_hash(const char *s)
{
	return (size_t)hash_u64(hash_bytes(HASH_SEED, s, strlen(s)), 0);
}

static int names_find(const Names *m, const Tensor *ts, const char *s)
{
	for (size_t i = name_hash(s) & m->mask;; i = (i + 1) & m->mask) {
		int id = m->slot[i] - 1;
		if (id < 0)
			return -1;
		if (!strcmp(ts[id].name, s))
			return id;
	}
}

static void names_add(Names *m, const Tensor *ts, int id)
{
	size_t i = name_hash(ts[id].name) & m->mask;
	while (m->slot[i])
		i = (i + 1) & m->mask;
	m->slot[i] = id + 1;
}

/* ---- messages --------------------------------------------------------------- */

/* dst = a b c, then "[k]" when k >= 0, cut to size like snprintf. The paths of
 * every op are built this way rather than with snprintf, which was a fifth of the
 * time of reading a large graph. */
static void path_cat(char *dst, size_t size, const char *a, const char *b, const char *c,
		     int k)
{
	char num[16];
	size_t nn = 0;
	if (k >= 0) {
		char rev[12];
		int r = 0;
		do
			rev[r++] = (char)('0' + k % 10);
		while ((k /= 10) && r < 11);
		num[nn++] = '[';
		while (r)
			num[nn++] = rev[--r];
		num[nn++] = ']';
	}
	num[nn] = 0;
	const char *part[4] = {a, b, c, num};
	size_t len = 0;
	for (int i = 0; i < 4; i++)
		for (const char *p = part[i]; *p && len + 1 < size; p++)
			dst[len++] = *p;
	dst[len] = 0;
}

/* A user string cut to fit a message, control characters shown as '?'. */
typedef struct {
	char s[80];
} Clip;

static Clip clip(const char *s)
{
	Clip c;
	size_t n = 0, max = 60;
	while (s[n] && n < max) {
		c.s[n] = (unsigned char)s[n] < 0x20 || s[n] == 0x7f ? '?' : s[n];
		n++;
	}
	if (s[n]) {
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
		memcpy(c.s + n, "...", 4);
	} else {
		c.s[n] = 0;
	}
	return c;
}

typedef struct {
	char s[96];
} Desc;

/* What a node is, for "expected X, got Y". */
static Desc describe(const DocNode *n)
{
	Desc c;
	switch (n->kind) {
	case DOC_MAP: snprintf(c.s, sizeof c.s, "a map"); break;
	case DOC_SEQ: snprintf(c.s, sizeof c.s, "a list"); break;
	case DOC_NULL: snprintf(c.s, sizeof c.s, "null"); break;
	case DOC_BOOL: snprintf(c.s, sizeof c.s, "%s", n->bval ? "true" : "false"); break;
	case DOC_NUM: snprintf(c.s, sizeof c.s, "%s", clip(n->text).s); break;
	case DOC_STR: snprintf(c.s, sizeof c.s, "'%s'", clip(n->text).s); break;
	}
	return c;
}

/* ---- the builder ------------------------------------------------------------ */

enum { K_OP, K_IN, K_OUT, K_STREAM, K_NAME, K_ATTR0, NOPKEYS = K_ATTR0 + A_COUNT_ };

static int attr_slot(unsigned bit)
{
	return K_ATTR0 + __builtin_ctz(bit);
}

/* A named dim of the inputs' shapes ([batch, seq, 768]), bound by --input-shape
 * (docs/graph-format.md, "Named dims"). While the inputs are read, the dim of name
 * i is held as DIM_NAMED - i; bind_inputs puts the bound values in its place. */
enum { MAX_DIM_NAMES = 32, DIM_NAMED = -16 };
typedef struct {
	const char *name;
	int64_t value;           /* 0: not bound yet */
	int64_t lo, hi;          /* its range (`dims:`; 1..IR_DIM_TOP when not given) */
	const char *by;          /* what bound it, for messages: "--input-shape x" */
} DimName;

typedef struct {
	Graph *g;
	Diag *d;                 /* room for maxd messages; the next goes to d[nd] */
	int maxd, nd;
	bool *poison;            /* per tensor id: a name whose definition failed */
	int maxt;                /* room in g->tensors */
	int lost;                /* failed entries whose result name is unknown */
	const char *file;
	Names names;
	const char *opkeys[NOPKEYS];
	int64_t elements;        /* summed over the tensors read so far */
	const IrInputShape *shapes;   /* --input-shape: binds the inputs' named dims */
	int nshapes;
	const IrShapeLookup *lookup;  /* or NULL: binds those of inputs no shape names */
	bool naming;             /* reading the inputs: a dim may be a new name */
	DimName dn[MAX_DIM_NAMES];
	int ndn;
	const DocNode **shape_of;     /* per input (in order): its shape's node */
	/* a graph read for every size of its named dims (IrShapeLookup.symbolic) */
	IrSymbolic *sym;         /* NULL otherwise */
	int8_t dsym[MAX_DIM_NAMES];   /* per dim name: its symbol, or -1 (bound) */
	int8_t *in_dn;           /* per input, IR_MAX_RANK each: the dim name, or -1 */
	uint8_t *attr_at;        /* Attrs.sym of the op whose shape attribute is read;
				    NULL otherwise */
	bool constant_dims;      /* reading a constant's shape */
	const int64_t *avoid;    /* sizes no probe may take (they clashed before) */
	int navoid;
} Builder;

static int fail_at(Builder *b, int line, int col, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail_at(Builder *b, int line, int col, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char msg[sizeof b->d->msg];
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	diag_set(&b->d[b->nd], b->file, line, col, "%s", msg);
	return -1;
}
#define fail(b, n, ...) fail_at((b), (n)->line, (n)->col, __VA_ARGS__)
#define fail_key(b, n, ...) fail_at((b), (n)->key_line, (n)->key_col, __VA_ARGS__)

/* Index the entries of map n by keys[]; an unknown or repeated key is an error. */
static int scan_map(Builder *b, const DocNode *n, const char *path, const char *const *keys,
		    int nkeys, const DocNode **slot)
{
	const char *sep = *path ? ": " : "";
	for (const DocNode *e = n->first; e; e = e->next) {
		int k = 0;
		while (k < nkeys && strcmp(keys[k], e->key))
			k++;
		if (k == nkeys) {
			const char *near = closest_word(e->key, keys, nkeys);
			if (near)
				return fail_key(b, e, "%s%sunknown key '%s'; did you mean '%s'?", path,
						sep, clip(e->key).s, near);
			return fail_key(b, e, "%s%sunknown key '%s'", path, sep, clip(e->key).s);
		}
		if (slot[k])
			return fail_key(b, e, "%s%sduplicate key '%s'", path, sep, clip(e->key).s);
		slot[k] = e;
	}
	return 0;
}

static int read_int(Builder *b, const DocNode *n, const char *path, int64_t lo, int64_t hi,
		    int64_t *out)
{
	if (n->kind == DOC_NUM && n->is_int && n->int_ok && n->ival >= lo && n->ival <= hi) {
		*out = n->ival;
		return 0;
	}
	if (lo == 1 && hi >= INT_MAX)
		return fail(b, n, "%s: expected a positive integer, got %s", path, describe(n).s);
	if (lo == 0 && hi >= INT_MAX)
		return fail(b, n, "%s: expected a non-negative integer, got %s", path,
			    describe(n).s);
	if (lo == INT64_MIN)
		return fail(b, n, "%s: expected an integer, got %s", path, describe(n).s);
	return fail(b, n, "%s: expected an integer from %lld to %lld, got %s", path,
		    (long long)lo, (long long)hi, describe(n).s);
}

static int read_real(Builder *b, const DocNode *n, const char *path, double *out)
{
	if (n->kind == DOC_NUM) {
		if (isinf(n->dval) && !strpbrk(n->text, "iI"))
			return fail(b, n, "%s: %s is out of range for a 64-bit float", path,
				    describe(n).s);
		*out = n->dval;
		return 0;
	}
	if (n->kind == DOC_STR) {
		if (!strcmp(n->text, "inf") || !strcmp(n->text, "+inf")) {
			*out = INFINITY;
			return 0;
		}
		if (!strcmp(n->text, "-inf")) {
			*out = -INFINITY;
			return 0;
		}
		if (!strcmp(n->text, "nan")) {
			*out = NAN;
			return 0;
		}
	}
	return fail(b, n, "%s: expected a number, got %s", path, describe(n).s);
}

static int read_dtype(Builder *b, const DocNode *n, const char *path, DType *out)
{
	if (n->kind != DOC_STR)
		return fail(b, n, "%s: expected a dtype name, got %s", path, describe(n).s);
	if (ir_dtype_parse(n->text, out) == 0)
		return 0;
	/* other frameworks' spellings, then the nearest of ours */
	static const struct { const char *alias, *dtype; } aliases[] = {
		{"float64", "f64"}, {"double", "f64"}, {"float32", "f32"}, {"float", "f32"},
		{"float16", "f16"}, {"half", "f16"}, {"bfloat16", "bf16"}, {"int64", "i64"},
		{"long", "i64"}, {"int32", "i32"}, {"int", "i32"}, {"int16", "i16"},
		{"short", "i16"}, {"int8", "i8"}, {"uint8", "u8"}, {"byte", "u8"},
		{"boolean", "bool"},
	};
	const char *near = NULL;
	for (size_t i = 0; i < COUNTOF(aliases) && !near; i++)
		if (!strcasecmp(n->text, aliases[i].alias))
			near = aliases[i].dtype;
	const char *names[DT_COUNT];
	for (int t = 0; t < DT_COUNT; t++)
		names[t] = ir_dtype_name((DType)t);
	if (!near)
		near = closest_word(n->text, names, DT_COUNT);
	if (near)
		return fail(b, n, "%s: unknown dtype '%s'; did you mean '%s'?", path,
			    clip(n->text).s, near);
	return fail(b, n, "%s: unknown dtype '%s' (f64, f32, f16, bf16, i64, i32, i16, i8, "
		    "u8, bool)", path, clip(n->text).s);
}

static bool name_start(char c)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool ident(const char *s)
{
	if (!name_start(*s))
		return false;
	for (s++; *s; s++)
		if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9')))
			return false;
	return true;
}

static int find_dim_name(const Builder *b, const char *name)
{
	for (int i = 0; i < b->ndn; i++)
		if (!strcmp(b->dn[i].name, name))
			return i;
	return -1;
}

static int add_dim_name(Builder *b, const DocNode *e, const char *path, const char *name)
{
	if (!ident(name))
		return fail(b, e, "%s: a dim name is a letter or '_' then letters, digits or '_', "
			    "got '%s'", path, clip(name).s);
	if (b->ndn == MAX_DIM_NAMES)
		return fail(b, e, "%s: more than %d dim names", path, MAX_DIM_NAMES);
	b->dn[b->ndn] = (DimName){arena_strdup(b->g->arena, name), 0, 1, IR_DIM_TOP, NULL};
	return b->ndn++;
}

/* A dim written as a name: while the inputs are read, the name's code (a new name
 * is added); after them, its bound value. */
static int dim_name(Builder *b, const DocNode *e, const char *path, int64_t *out)
{
	int i = find_dim_name(b, e->text);
	if (i < 0 && !b->naming)
		return fail(b, e, "%s: '%s' names no dim of the inputs' shapes", path,
			    clip(e->text).s);
	if (i < 0 && (i = add_dim_name(b, e, path, e->text)) < 0)
		return -1;
	*out = b->naming ? DIM_NAMED - i : b->dn[i].value;
	return 0;
}

/* A list of dimensions: positive integers (one -1 where allowed) or names
 * (dim_name), rank <= 8, and an element count that fits in int64. */
static int read_dims(Builder *b, const DocNode *n, const char *path, bool allow_minus1,
		     int *rank, int64_t *dim)
{
	if (n->kind != DOC_SEQ)
		return fail(b, n, "%s: expected a list of dimensions, got %s", path,
			    describe(n).s);
	if (n->n > IR_MAX_RANK)
		return fail(b, n, "%s: rank %d exceeds the maximum of %d", path, n->n,
			    IR_MAX_RANK);
	int k = 0;
	bool minus1 = false;
	int64_t count = 1;
	for (const DocNode *e = n->first; e; e = e->next, k++) {
		if (e->kind == DOC_NUM && e->is_int && e->int_ok && e->ival > 0) {
			/* the common case, without building the path of a message */
			dim[k] = e->ival;
			if (__builtin_mul_overflow(count, dim[k], &count))
				return fail(b, n, "%s: element count overflows", path);
			continue;
		}
		char at[160];
		path_cat(at, sizeof at, path, "", "", k);
		if (e->kind == DOC_STR && name_start(e->text[0])) {
			/* a name; any other text ("64", quoted) is a mistyped number */
			if (dim_name(b, e, at, &dim[k]))
				return -1;
			int i = b->naming ? -1 : find_dim_name(b, e->text);
			if (i >= 0 && b->dsym[i] >= 0 && b->attr_at)
				b->attr_at[k] = (uint8_t)(b->dsym[i] + 1);
			else if (i >= 0 && b->dsym[i] >= 0 && b->constant_dims)
				return fail(b, e, "%s: '%s' stands for every size of its range "
					    "here; not supported yet outside the inputs' shapes "
					    "and the shape attributes of reshape and expand "
					    "(bind it with --input-shape)", at, b->dn[i].name);
			if (dim[k] > 0 && __builtin_mul_overflow(count, dim[k], &count))
				return fail(b, n, "%s: element count overflows", path);
			continue;
		}
		if (allow_minus1 && e->kind == DOC_NUM && e->is_int && e->int_ok && e->ival == -1) {
			if (minus1)
				return fail(b, e, "%s: only one dimension may be -1", at);
			minus1 = true;
			dim[k] = -1;
			continue;
		}
		if (allow_minus1 && !(e->kind == DOC_NUM && e->is_int && e->int_ok && e->ival > 0))
			return fail(b, e, "%s: expected a positive integer or -1, got %s", at,
				    describe(e).s);
		if (read_int(b, e, at, 1, INT64_MAX, &dim[k]))
			return -1;
		if (__builtin_mul_overflow(count, dim[k], &count))
			return fail(b, n, "%s: element count overflows", path);
	}
	*rank = k;
	return 0;
}

/* A tensor's byte size (elements × dtype size) must fit int64: codegen, plans and
 * runtimes all compute it. `what` names the tensor in the message. */
static int check_bytes(Builder *b, const DocNode *n, const char *what, DType dt, int rank,
		       const int64_t *dim)
{
	int64_t count = 1, bytes;
	for (int k = 0; k < rank; k++)
		if (__builtin_mul_overflow(count, dim[k], &count))
			return fail(b, n, "%s: element count overflows", what);
	if (__builtin_mul_overflow(count, (int64_t)ir_dtype_size(dt), &bytes))
		return fail(b, n, "%s: %s × %d bytes (%s) overflows a 64-bit byte size", what,
			    ir_shape_text(rank, dim).s, ir_dtype_size(dt), ir_dtype_name(dt));
	if (__builtin_add_overflow(b->elements, count, &b->elements) ||
	    b->elements > ir_limits.max_elements)
		return fail(b, n, "%s: the graph's tensors hold more than %lld elements in all, "
			    "the limit (--max-elements)", what, (long long)ir_limits.max_elements);
	return 0;
}

/* check_bytes without a message: true (and the elements counted) when it would
 * pass, false (nothing counted) when check_bytes must say why not. */
static bool bytes_fit(Builder *b, DType dt, int rank, const int64_t *dim)
{
	int64_t count = 1, bytes, total;
	for (int k = 0; k < rank; k++)
		if (__builtin_mul_overflow(count, dim[k], &count))
			return false;
	if (__builtin_mul_overflow(count, (int64_t)ir_dtype_size(dt), &bytes) ||
	    __builtin_add_overflow(b->elements, count, &total) || total > ir_limits.max_elements)
		return false;
	b->elements = total;
	return true;
}

/* A list of at most `max` small integers (axes). */
static int read_axes(Builder *b, const DocNode *n, const char *path, int want, int *out,
		     int *count)
{
	if (n->kind != DOC_SEQ || (want >= 0 && n->n != want)) {
		if (want >= 0)
			return fail(b, n, "%s: expected a list of %d axes, got %s", path, want,
				    describe(n).s);
		return fail(b, n, "%s: expected a list of axes, got %s", path, describe(n).s);
	}
	if (n->n > IR_MAX_RANK)
		return fail(b, n, "%s: more than %d axes", path, IR_MAX_RANK);
	int k = 0;
	for (const DocNode *e = n->first; e; e = e->next, k++) {
		char at[160];
		int64_t v;
		path_cat(at, sizeof at, path, "", "", k);
		if (read_int(b, e, at, -IR_MAX_RANK, IR_MAX_RANK - 1, &v))
			return -1;
		out[k] = (int)v;
	}
	*count = k;
	return 0;
}

static int read_ranges(Builder *b, const DocNode *n, const char *path, Attrs *at)
{
	if (n->kind != DOC_SEQ)
		return fail(b, n, "%s: expected a list of [start, end] pairs, got %s", path,
			    describe(n).s);
	if (n->n > IR_MAX_RANK)
		return fail(b, n, "%s: more than %d ranges", path, IR_MAX_RANK);
	int k = 0;
	for (const DocNode *e = n->first; e; e = e->next, k++) {
		char p[160];
		path_cat(p, sizeof p, path, "", "", k);
		if (e->kind != DOC_SEQ || e->n != 2)
			return fail(b, e, "%s: expected a [start, end] pair of integers, got %s", p,
				    describe(e).s);
		int j = 0;
		for (const DocNode *v = e->first; v; v = v->next, j++) {
			char q[176];
			path_cat(q, sizeof q, p, "", "", j);
			if (read_int(b, v, q, INT64_MIN, INT64_MAX, &at->range[k][j]))
				return -1;
		}
	}
	at->n = k;
	return 0;
}

/* stride, padding, dilation, kernel: one integer for both dims, or [h, w]. */
static int read_pair(Builder *b, const DocNode *n, const char *path, int64_t lo, int *out)
{
	int64_t v[2];
	if (n->kind == DOC_NUM) {
		if (read_int(b, n, path, lo, INT_MAX, &v[0]))
			return -1;
		out[0] = out[1] = (int)v[0];
		return 0;
	}
	if (n->kind != DOC_SEQ || n->n != 2)
		return fail(b, n, "%s: expected an integer or a [h, w] pair, got %s", path,
			    describe(n).s);
	int j = 0;
	for (const DocNode *e = n->first; e; e = e->next, j++) {
		char at[160];
		path_cat(at, sizeof at, path, "", "", j);
		if (read_int(b, e, at, lo, INT_MAX, &v[j]))
			return -1;
		out[j] = (int)v[j];
	}
	return 0;
}

static int read_attr(Builder *b, const DocNode *n, const char *path, OpKind kind,
		     unsigned bit, Attrs *at)
{
	int64_t v;
	switch (bit) {
	case A_SCALAR: return read_real(b, n, path, &at->scalar);
	case A_MIN: return read_real(b, n, path, &at->min);
	case A_MAX: return read_real(b, n, path, &at->max);
	case A_DTYPE: return read_dtype(b, n, path, &at->dtype);
	case A_SHAPE: {
		int rc = read_dims(b, n, path, kind == OP_RESHAPE, &at->n, at->shape);
		b->attr_at = NULL;
		return rc;
	}
	case A_AXES: return read_axes(b, n, path, -1, at->axes, &at->n);
	case A_DIMS: return read_axes(b, n, path, 2, at->axes, &at->n);
	case A_RANGES: return read_ranges(b, n, path, at);
	case A_AXIS:
		if (read_int(b, n, path, -IR_MAX_RANK, IR_MAX_RANK - 1, &v))
			return -1;
		at->axis = (int)v;
		return 0;
	case A_STRIDE: return read_pair(b, n, path, 1, at->stride);
	case A_PADDING: return read_pair(b, n, path, 0, at->padding);
	case A_DILATION: return read_pair(b, n, path, 1, at->dilation);
	case A_KERNEL: return read_pair(b, n, path, 1, at->kernel);
	case A_GROUPS:
		if (read_int(b, n, path, 1, INT_MAX, &v))
			return -1;
		at->groups = (int)v;
		return 0;
	case A_LAYOUT:
		if (n->kind == DOC_STR && !strcmp(n->text, "nchw"))
			at->layout = LAYOUT_NCHW;
		else if (n->kind == DOC_STR && !strcmp(n->text, "nhwc"))
			at->layout = LAYOUT_NHWC;
		else
			return fail(b, n, "%s: expected 'nchw' or 'nhwc', got %s", path,
				    describe(n).s);
		return 0;
	case A_ZERO_NAN:
		if (n->kind != DOC_BOOL)
			return fail(b, n, "%s: expected true or false, got %s", path, describe(n).s);
		at->zero_nan = n->bval;
		return 0;
	case A_CAUSAL:
		/* c >= 0: every row keeps at least its first key; 1 + c kept */
		if (read_int(b, n, path, 0, INT_MAX, &at->causal))
			return -1;
		at->causal++;
		return 0;
	case A_APPROX:
		if (n->kind == DOC_STR && !strcmp(n->text, "none"))
			at->approx = GELU_NONE;
		else if (n->kind == DOC_STR && !strcmp(n->text, "tanh"))
			at->approx = GELU_TANH;
		else
			return fail(b, n, "%s: expected 'none' or 'tanh', got %s", path,
				    describe(n).s);
		return 0;
	}
	die("attribute bit %#x", bit);
}

/* A tensor name: a non-empty string without control characters. */
static int check_name(Builder *b, const DocNode *n, const char *path)
{
	if (n->kind != DOC_STR)
		return fail(b, n, "%s: expected a tensor name, got %s", path, describe(n).s);
	if (!n->text[0])
		return fail(b, n, "%s: tensor names must not be empty", path);
	for (const char *p = n->text; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return fail(b, n, "%s: tensor name '%s' contains a control character",
				    path, clip(n->text).s);
	return 0;
}

static int new_tensor(Builder *b, const char *name, int producer)
{
	Graph *g = b->g;
	int id = g->ntensors++;
	Tensor *t = &g->tensors[id];
	t->name = arena_strdup(g->arena, name);
	t->producer = producer;
	t->last_read = -1;
	names_add(&b->names, g->tensors, id);
	return id;
}

/* After an entry failed with rc (-1: its message is in d[nd]; -2: it read a name
 * whose definition failed, and says nothing more): count the message, and define
 * `name` (the entry's own, when known) as failed too, so that entries reading it
 * fail silently instead of piling up "not defined" errors. Whether to go on
 * reading: up to maxd messages per file (--max-errors). */
static bool more_errors(Builder *b, int rc, const char *name, int producer)
{
	if (rc == -1)
		b->nd++;
	if (!name && producer >= 0)
		b->lost++;   /* a failed op without a readable `out`: names may be missing */
	if (name && b->g->ntensors < b->maxt && names_find(&b->names, b->g->tensors, name) < 0)
		b->poison[new_tensor(b, name, producer)] = true;
	return b->nd < b->maxd;
}

static int read_input(Builder *b, const DocNode *e)
{
	static const char *const keys[] = {"dtype", "shape"};
	Graph *g = b->g;
	if (!e->key[0])
		return fail_key(b, e, "inputs: tensor names must not be empty");
	if (names_find(&b->names, g->tensors, e->key) >= 0)
		return fail_key(b, e, "inputs: duplicate key '%s'", clip(e->key).s);
	for (const char *p = e->key; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return fail_key(b, e, "inputs: tensor name '%s' contains a control character",
					clip(e->key).s);
	char path[128], sub[160];
	snprintf(path, sizeof path, "inputs.%s", clip(e->key).s);
	if (e->kind != DOC_MAP)
		return fail(b, e, "%s: expected a map with dtype and shape, got %s", path,
			    describe(e).s);
	const DocNode *slot[2] = {0};
	if (scan_map(b, e, path, keys, 2, slot))
		return -1;
	for (int k = 0; k < 2; k++)
		if (!slot[k])
			return fail(b, e, "%s: missing key '%s'", path, keys[k]);
	Tensor t = {0};
	snprintf(sub, sizeof sub, "%s.dtype", path);
	if (read_dtype(b, slot[0], sub, &t.dtype))
		return -1;
	snprintf(sub, sizeof sub, "%s.shape", path);
	if (read_dims(b, slot[1], sub, false, &t.rank, t.dim))
		return -1;
	bool named = false;
	for (int k = 0; k < t.rank; k++)
		named |= t.dim[k] <= DIM_NAMED;
	/* with named dims its size is known once bind_inputs has bound them */
	if (!named && check_bytes(b, slot[1], sub, t.dtype, t.rank, t.dim))
		return -1;
	b->shape_of[g->ninputs] = slot[1];
	int id = new_tensor(b, e->key, -1);
	Tensor *dst = &g->tensors[id];
	dst->dtype = t.dtype;
	dst->rank = t.rank;
	memcpy(dst->dim, t.dim, sizeof t.dim);
	dst->role = ROLE_INPUT;
	g->inputs[g->ninputs++] = id;
	return 0;
}

static int read_inputs(Builder *b, const DocNode *n)
{
	Graph *g = b->g;
	if (n->kind != DOC_MAP)
		return fail(b, n, "inputs: expected a map of name: {dtype, shape}, got %s",
			    describe(n).s);
	g->inputs = ARENA_NEW(g->arena, int, n->n);
	b->shape_of = ARENA_NEW(g->arena, const DocNode *, n->n + 1);
	for (const DocNode *e = n->first; e; e = e->next)
		if (read_input(b, e) && !more_errors(b, -1, e->key[0] ? e->key : NULL, -1))
			return -3;
	return 0;
}

/* `dims`: name: LO..HI (a string) or N (LO = HI = N), the range a named dim may be
 * bound to. */
static int read_dim_ranges(Builder *b, const DocNode *n)
{
	if (n->kind != DOC_MAP)
		return fail(b, n, "dims: expected a map of name: LO..HI, got %s", describe(n).s);
	for (const DocNode *e = n->first; e; e = e->next) {
		char path[128];
		snprintf(path, sizeof path, "dims.%s", clip(e->key).s);
		if (find_dim_name(b, e->key) >= 0)
			return fail_key(b, e, "dims: duplicate key '%s'", clip(e->key).s);
		int i = add_dim_name(b, e, path, e->key);
		if (i < 0)
			return -1;
		DimName *dn = &b->dn[i];
		if (e->kind == DOC_NUM) {
			if (read_int(b, e, path, 1, INT64_MAX, &dn->lo))
				return -1;
			dn->hi = dn->lo;
			continue;
		}
		long long lo, hi;
		int used = -1;
		if (e->kind != DOC_STR || sscanf(e->text, "%lld..%lld%n", &lo, &hi, &used) != 2 ||
		    used != (int)strlen(e->text) || lo < 1 || hi < lo || hi > IR_DIM_TOP)
			return fail(b, e, "%s: expected LO..HI with 1 <= LO <= HI <= 2^40, or a "
				    "positive integer, got %s", path, describe(e).s);
		dn->lo = lo;
		dn->hi = hi;
	}
	return 0;
}

/* Where a shape came from, as messages name it: "--input-shape x", or "--inputs x
 * (d/x.npy)" for one read from the input's data (IrShapeLookup; the file's path
 * whole, as the messages about reading it show it). */
static const char *shape_origin(Builder *b, const IrInputShape *sh)
{
	if (sh->from)
		return arena_printf(b->g->arena, "--inputs %s (%.240s)", clip(sh->name).s,
				    sh->from);
	return arena_printf(b->g->arena, "--input-shape %s", clip(sh->name).s);
}

/* Bind input i's named dims from sh, checked against the input's rank and fixed
 * dims, the names' ranges and what bound them before. */
static int bind_input(Builder *b, int i, const IrInputShape *sh)
{
	const Tensor *t = &b->g->tensors[b->g->inputs[i]];
	const DocNode *at = b->shape_of[i];
	const char *by = shape_origin(b, sh);
	if (sh->rank != t->rank)
		return fail(b, at, "%s: %d dims, but input '%s' has %d", by, sh->rank,
			    clip(t->name).s, t->rank);
	for (int k = 0; k < t->rank; k++) {
		int64_t v = sh->dim[k];
		if (v < 1)   /* only data can say 0: --input-shape takes positive dims */
			return fail(b, at, "%s: dim %d is %lld; a shape has no zero dims", by, k,
				    (long long)v);
		if (t->dim[k] > 0) {
			if (t->dim[k] != v)
				return fail(b, at, "%s: dim %d is %lld, but the graph fixes it at "
					    "%lld", by, k, (long long)v, (long long)t->dim[k]);
			continue;
		}
		DimName *dn = &b->dn[DIM_NAMED - t->dim[k]];
		if (v < dn->lo || v > dn->hi)
			return fail(b, at, "%s: '%s' = %lld is outside its range %lld..%lld (dims)",
				    by, dn->name, (long long)v, (long long)dn->lo,
				    (long long)dn->hi);
		if (dn->value && dn->value != v)
			return fail(b, at, "%s: '%s' = %lld, but %s made it %lld", by, dn->name,
				    (long long)v, dn->by, (long long)dn->value);
		dn->value = v;
		dn->by = by;
	}
	return 0;
}

/* Dim name di, unbound in a graph read for every size: one size in its range makes
 * it that size; otherwise it becomes a symbol, built at a probe size (ir_sym_probe)
 * that no other symbol took and that did not clash before. */
static int symbolize(Builder *b, int di, const DocNode *at)
{
	DimName *dn = &b->dn[di];
	if (dn->lo == dn->hi) {
		dn->value = dn->lo;
		dn->by = "its range (dims)";
		return 0;
	}
	IrSymbolic *s = b->sym;
	if (s->nsym == IR_SYM_MAX)
		return fail(b, at, "more than %d named dims left for every size; bind some "
			    "with --input-shape", IR_SYM_MAX);
	int64_t used[IR_SYM_MAX + 16];
	int nused = 0;
	for (int i = 0; i < b->navoid; i++)
		used[nused++] = b->avoid[i];
	for (int i = 0; i < s->nsym; i++)
		used[nused++] = s->probe[i];
	int64_t v = ir_sym_probe(dn->lo, dn->hi, used, nused);
	if (!v)
		return fail(b, at, "'%s': its range %lld..%lld holds no size to compile the "
			    "graph at; bind it with --input-shape", dn->name, (long long)dn->lo,
			    (long long)dn->hi);
	int k = s->nsym++;
	s->name[k] = dn->name;
	s->lo[k] = dn->lo;
	s->hi[k] = dn->hi;
	s->probe[k] = v;
	b->dsym[di] = (int8_t)k;
	dn->value = v;
	dn->by = "its probe size";
	return 0;
}

/* Bind the inputs' named dims from --input-shape, then from the lookup for the
 * inputs with a name that no --input-shape gives (bind_input checks each), then put
 * the values in the inputs' shapes. Every named dim must be bound. */
static int bind_inputs(Builder *b, const DocNode *in)
{
	Graph *g = b->g;
	/* --dims: ranges in place of the graph's own */
	for (int r = 0; b->lookup && r < b->lookup->nranges; r++) {
		const IrDimRange *dr = &b->lookup->ranges[r];
		int i = find_dim_name(b, dr->name);
		if (i < 0)
			return fail(b, in, "--dims: the graph has no named dim '%s'",
				    clip(dr->name).s);
		b->dn[i].lo = dr->lo;
		b->dn[i].hi = dr->hi;
	}
	bool *given = ARENA_NEW(g->arena, bool, g->ninputs + 1);   /* by --input-shape */
	for (int s = 0; s < b->nshapes; s++) {
		const IrInputShape *sh = &b->shapes[s];
		int i = 0;
		while (i < g->ninputs && strcmp(g->tensors[g->inputs[i]].name, sh->name))
			i++;
		if (i == g->ninputs)
			return fail(b, in, "--input-shape: the graph has no input '%s'",
				    clip(sh->name).s);
		if (bind_input(b, i, sh))
			return -1;
		given[i] = true;
	}
	for (int i = 0; b->lookup && b->lookup->shape && i < g->ninputs; i++) {
		const Tensor *t = &g->tensors[g->inputs[i]];
		bool named = false;
		for (int k = 0; k < t->rank; k++)
			named |= t->dim[k] <= DIM_NAMED;
		if (!named || given[i])
			continue;
		IrInputShape sh = {0};
		int rc = b->lookup->shape(b->lookup->ctx, t->name, &sh, &b->d[b->nd]);
		if (rc < 0)
			return -1;
		if (rc > 0 && bind_input(b, i, &sh))
			return -1;
	}
	for (int i = 0; i < g->ninputs; i++) {
		Tensor *t = &g->tensors[g->inputs[i]];
		bool named = false;
		for (int k = 0; k < t->rank; k++) {
			if (t->dim[k] > 0)
				continue;
			int di = (int)(DIM_NAMED - t->dim[k]);
			DimName *dn = &b->dn[di];
			if (b->in_dn)
				b->in_dn[i * IR_MAX_RANK + k] = (int8_t)di;
			if (!dn->value && b->sym && symbolize(b, di, b->shape_of[i]))
				return -1;
			if (!dn->value)
				return fail(b, b->shape_of[i], "inputs.%s.shape[%d]: the dim '%s' is "
					    "not bound: give the input's shape with --input-shape "
					    "%s=DxD...", clip(t->name).s, k, dn->name,
					    clip(t->name).s);
			t->dim[k] = dn->value;
			named = true;
		}
		char path[160];
		snprintf(path, sizeof path, "inputs.%s.shape", clip(t->name).s);
		if (named && check_bytes(b, b->shape_of[i], path, t->dtype, t->rank, t->dim))
			return -1;
	}
	return 0;
}

/* A .npy path of a constant: relative, inside the graph file's folder. */
static bool safe_rel_path(const char *p)
{
	if (!p[0] || p[0] == '/')
		return false;
	for (const char *q = p; *q;) {
		const char *slash = strchr(q, '/');
		size_t n = slash ? (size_t)(slash - q) : strlen(q);
		if (n == 2 && q[0] == '.' && q[1] == '.')
			return false;
		q += n + (slash ? 1 : 0);
	}
	return true;
}

/* `constants`: name: {dtype, shape, data: [...]} or {dtype, shape, npy: FILE};
 * each becomes an input of the graph that carries its value (Tensor.data). */
static int read_constant(Builder *b, const DocNode *e)
{
	static const char *const keys[] = {"dtype", "shape", "data", "npy"};
	Graph *g = b->g;
	char path[128], sub[160];
	snprintf(path, sizeof path, "constants.%s", clip(e->key).s);
	if (!e->key[0])
		return fail_key(b, e, "constants: tensor names must not be empty");
	if (names_find(&b->names, g->tensors, e->key) >= 0)
		return fail_key(b, e, "%s: tensor '%s' is already defined", path,
				clip(e->key).s);
	for (const char *p = e->key; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return fail_key(b, e, "constants: tensor name '%s' contains a control "
					"character", clip(e->key).s);
	if (e->kind != DOC_MAP)
		return fail(b, e, "%s: expected a map with dtype, shape and data or npy, got %s",
			    path, describe(e).s);
	const DocNode *slot[4] = {0};
	if (scan_map(b, e, path, keys, 4, slot))
		return -1;
	for (int k = 0; k < 2; k++)
		if (!slot[k])
			return fail(b, e, "%s: missing key '%s'", path, keys[k]);
	if (!slot[2] == !slot[3])
		return fail(b, e, "%s: needs exactly one of 'data' and 'npy'", path);
	Tensor t = {0};
	snprintf(sub, sizeof sub, "%s.dtype", path);
	if (read_dtype(b, slot[0], sub, &t.dtype))
		return -1;
	snprintf(sub, sizeof sub, "%s.shape", path);
	b->constant_dims = true;
	int rc = read_dims(b, slot[1], sub, false, &t.rank, t.dim);
	b->constant_dims = false;
	if (rc)
		return -1;
	int64_t count = 1;
	for (int k = 0; k < t.rank; k++)
		count *= t.dim[k];
	ConstSource *src = ARENA_NEW(g->arena, ConstSource, 1);
	src->line = e->line;
	src->col = e->col;
	if (slot[3]) {
		const DocNode *f = slot[3];
		snprintf(sub, sizeof sub, "%s.npy", path);
		if (f->kind != DOC_STR || !safe_rel_path(f->text))
			return fail(b, f, "%s: expected a relative path inside the graph's "
				    "folder, got %s", sub, describe(f).s);
		const char *slash = strrchr(b->file, '/');
		src->npy = slash ? arena_printf(g->arena, "%.*s/%s", (int)(slash - b->file),
						b->file, f->text)
				 : arena_strdup(g->arena, f->text);
		src->npy_rel = arena_strdup(g->arena, f->text);
		src->npy_sha256 = arena_alloc(g->arena, 65);
	} else {
		const DocNode *dn = slot[2];
		snprintf(sub, sizeof sub, "%s.data", path);
		if (dn->kind != DOC_SEQ)
			return fail(b, dn, "%s: expected a list of %lld numbers, got %s", sub,
				    (long long)count, describe(dn).s);
		if (dn->n != count)
			return fail(b, dn, "%s: has %d values, the shape needs %lld", sub, dn->n,
				    (long long)count);
		bool isint = ir_dtype_is_int(t.dtype) || t.dtype == DT_BOOL;
		double *dv = isint ? NULL : ARENA_NEW(g->arena, double, count);
		int64_t *iv = isint ? ARENA_NEW(g->arena, int64_t, count) : NULL;
		int64_t k = 0;
		for (const DocNode *v = dn->first; v; v = v->next, k++) {
			char at[200];
			snprintf(at, sizeof at, "%s[%lld]", sub, (long long)k);
			if (t.dtype == DT_BOOL && v->kind == DOC_BOOL)
				iv[k] = v->bval;
			else if (isint && read_int(b, v, at, INT64_MIN, INT64_MAX, &iv[k]))
				return -1;
			else if (!isint && read_real(b, v, at, &dv[k]))
				return -1;
		}
		src->values = dv;
		src->ivalues = iv;
	}
	int id = new_tensor(b, e->key, -1);
	Tensor *dst = &g->tensors[id];
	dst->dtype = t.dtype;
	dst->rank = t.rank;
	memcpy(dst->dim, t.dim, sizeof t.dim);
	dst->role = ROLE_INPUT;
	dst->src = src;
	g->inputs[g->ninputs++] = id;
	return 0;
}

static int read_constants(Builder *b, const DocNode *n)
{
	if (n->kind != DOC_MAP)
		return fail(b, n, "constants: expected a map of name: {dtype, shape, data or npy}, "
			    "got %s", describe(n).s);
	for (const DocNode *e = n->first; e; e = e->next)
		if (read_constant(b, e) && !more_errors(b, -1, e->key[0] ? e->key : NULL, -1))
			return -3;
	return 0;
}

static int read_operands(Builder *b, const DocNode *in, const char *at, const char *name,
			 const OpInfo *info, Op *op)
{
	Graph *g = b->g;
	if (in->kind != DOC_SEQ)
		return fail(b, in, "%s.in: expected a list of tensor names, got %s", at,
			    describe(in).s);
	int n = in->n;
	if (n < info->nin_min || (info->nin_max >= 0 && n > info->nin_max)) {
		if (info->nin_max < 0)
			return fail(b, in, "op '%s' (%s): needs at least %d inputs, got %d", name,
				    at, info->nin_min, n);
		if (info->nin_min == info->nin_max)
			return fail(b, in, "op '%s' (%s): needs %d inputs, got %d", name, at,
				    info->nin_min, n);
		return fail(b, in, "op '%s' (%s): needs %d to %d inputs, got %d", name, at,
			    info->nin_min, info->nin_max, n);
	}
	if (n > IR_MAX_IN)
		return fail(b, in, "op '%s' (%s): needs at most %d inputs, got %d", name, at,
			    IR_MAX_IN, n);
	op->in = ARENA_NEW(g->arena, int, n);
	op->in_status = ARENA_NEW(g->arena, uint8_t, n);
	int k = 0;
	bool failed = false;
	for (const DocNode *e = in->first; e; e = e->next, k++) {
		/* a defined name is a valid one: the path is needed only for a message */
		int id = e->kind == DOC_STR ? names_find(&b->names, g->tensors, e->text) : -1;
		if (id < 0) {
			char path[48];
			path_cat(path, sizeof path, at, ".in", "", k);
			if (check_name(b, e, path))
				return -1;
			if (b->lost)
				return -2;   /* perhaps the result of an op that failed: said already */
			return fail(b, e, "%s: tensor '%s' is not defined above", path,
				    clip(e->text).s);
		}
		failed = failed || b->poison[id];
		op->in[k] = id;
	}
	op->nin = n;
	return failed ? -2 : 0;
}

/* What read_op knows about the op it is reading. */
typedef struct {
	const DocNode *n;              /* the op's map */
	const DocNode *slot[NOPKEYS];  /* its entries by key (K_*) */
	const DocNode *stated_dtype;   /* output statements, when not attributes */
	const DocNode *stated_shape;
	const DocNode *result;         /* the node naming the result */
	const OpInfo *info;
	const char *name;              /* "mul_scalar" */
	char at[32];                   /* "ops[3]" */
	Op *op;
} OpRead;

/* An attribute the op does not take: the nearest it does take, and all of them. */
static int unknown_attr(Builder *b, const OpRead *r, const DocNode *e, unsigned allowed)
{
	const char *names[A_COUNT_] = {0};
	char list[256] = "";
	size_t len = 0;
	for (int i = 0; i < A_COUNT_; i++)
		if (allowed & (1u << i)) {
			names[i] = ir_attr_name(1u << i);
			len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", len ? ", " : "",
						names[i]);
			if (len >= sizeof list)
				len = sizeof list - 1;
		}
	const char *near = closest_word(e->key, names, A_COUNT_);
	char hint[320];
	if (!allowed)
		snprintf(hint, sizeof hint, "; '%s' takes no attributes", r->name);
	else if (near)
		snprintf(hint, sizeof hint, "; did you mean '%s'? ('%s' takes: %s)", near, r->name,
			 list);
	else
		snprintf(hint, sizeof hint, " ('%s' takes: %s)", r->name, list);
	return fail_key(b, e, "%s: unknown attribute '%s' for op '%s'%s", r->at, clip(e->key).s,
			r->name, hint);
}

/* Keys in document order: attributes the op does not take, sync's operands, and
 * `dtype`/`shape` as output statements where they are not attributes. */
static int op_keys(Builder *b, OpRead *r)
{
	unsigned allowed = r->info->required | r->info->optional;
	bool sync = r->op->kind == OP_SYNC;
	for (const DocNode *e = r->n->first; e; e = e->next) {
		int k = 0;
		while (strcmp(b->opkeys[k], e->key))
			k++;
		if (sync && k == K_IN)
			return fail_key(b, e, "%s.in: sync takes no operands", r->at);
		if (sync && k == K_OUT)
			return fail_key(b, e, "%s.out: sync has no result", r->at);
		if (k < K_ATTR0)
			continue;
		unsigned bit = 1u << (k - K_ATTR0);
		if (allowed & bit)
			continue;
		if (!sync && bit == A_DTYPE)
			r->stated_dtype = e;
		else if (!sync && bit == A_SHAPE)
			r->stated_shape = e;
		else
			return unknown_attr(b, r, e, allowed);
	}
	return 0;
}

/* The attributes, type-checked, with defaults for the optional ones: every
 * attribute the op takes is then present in `has`. */
static int op_attrs(Builder *b, OpRead *r, Attrs *at)
{
	const OpInfo *info = r->info;
	unsigned allowed = info->required | info->optional;
	for (int i = 0; i < A_COUNT_; i++) {
		unsigned bit = 1u << i;
		const DocNode *v = r->slot[K_ATTR0 + i];
		if (!(allowed & bit))
			continue;
		if (!v) {
			if (info->required & bit)
				return fail(b, r->n, "op '%s' (%s): missing attribute '%s'", r->name,
					    r->at, ir_attr_name(bit));
			continue;
		}
		char path[48];
		path_cat(path, sizeof path, r->at, ".", ir_attr_name(bit), -1);
		if (bit == A_SHAPE && b->sym)
			b->attr_at = at->sym;
		if (read_attr(b, v, path, r->op->kind, bit, at))
			return -1;
	}
	if (allowed & A_STRIDE && !r->slot[attr_slot(A_STRIDE)]) {
		bool pool = r->op->kind == OP_MAX_POOL2D || r->op->kind == OP_AVG_POOL2D;
		at->stride[0] = pool ? at->kernel[0] : 1;
		at->stride[1] = pool ? at->kernel[1] : 1;
	}
	if (allowed & A_DILATION && !r->slot[attr_slot(A_DILATION)])
		at->dilation[0] = at->dilation[1] = 1;
	if (allowed & A_GROUPS && !r->slot[attr_slot(A_GROUPS)])
		at->groups = 1;
	at->has = allowed;
	return 0;
}

/* `out`: a new name, or a list of exactly as many names as the op has results. */
static int op_result(Builder *b, OpRead *r)
{
	const DocNode *o = r->slot[K_OUT];
	if (!o)
		return fail(b, r->n, "%s: missing key 'out'", r->at);
	char path[48];
	path_cat(path, sizeof path, r->at, ".out", "", -1);
	if (o->kind == DOC_SEQ) {
		if (o->n != IR_MAX_OUT)
			return fail(b, o, "%s: op '%s' has %d result, got a list of %d names", path,
				    r->name, IR_MAX_OUT, o->n);
		o = o->first;
		path_cat(path, sizeof path, r->at, ".out", "", 0);
	}
	if (check_name(b, o, path))
		return -1;
	int old = names_find(&b->names, b->g->tensors, o->text);
	if (old >= 0) {
		int p = b->g->tensors[old].producer;
		if (p < 0)
			return fail(b, o, "%s: tensor '%s' is already defined in inputs", path,
				    clip(o->text).s);
		return fail(b, o, "%s: tensor '%s' is already defined by ops[%d]", path,
			    clip(o->text).s, p);
	}
	r->result = o;
	return 0;
}

/* Stated `dtype`/`shape` must match what inference found. */
static int op_stated(Builder *b, OpRead *r, const Tensor *out)
{
	char path[48];
	if (r->stated_dtype) {
		DType t;
		path_cat(path, sizeof path, r->at, ".dtype", "", -1);
		if (read_dtype(b, r->stated_dtype, path, &t))
			return -1;
		if (t != out->dtype)
			return fail(b, r->stated_dtype,
				    "op '%s' (%s): stated dtype %s does not match the inferred dtype %s",
				    r->name, r->at, ir_dtype_name(t), ir_dtype_name(out->dtype));
	}
	if (r->stated_shape) {
		int rank;
		int64_t dim[IR_MAX_RANK];
		path_cat(path, sizeof path, r->at, ".shape", "", -1);
		if (read_dims(b, r->stated_shape, path, false, &rank, dim))
			return -1;
		if (rank != out->rank || memcmp(dim, out->dim, sizeof dim[0] * (size_t)rank))
			return fail(b, r->stated_shape,
				    "op '%s' (%s): stated shape %s does not match the inferred shape %s",
				    r->name, r->at, ir_shape_text(rank, dim).s,
				    ir_shape_text(out->rank, out->dim).s);
	}
	return 0;
}

static int read_op(Builder *b, const DocNode *n, int index, int *max_stream)
{
	Graph *g = b->g;
	OpRead r = {.n = n, .op = &g->ops[index]};
	Op *op = r.op;
	path_cat(r.at, sizeof r.at, "ops", "", "", index);
	if (n->kind != DOC_MAP)
		return fail(b, n, "%s: expected a map with op, in and out, got %s", r.at,
			    describe(n).s);
	if (scan_map(b, n, r.at, b->opkeys, NOPKEYS, r.slot))
		return -1;
	const DocNode *kn = r.slot[K_OP];
	if (!kn)
		return fail(b, n, "%s: missing key 'op'", r.at);
	if (kn->kind != DOC_STR)
		return fail(b, kn, "%s.op: expected an op name, got %s", r.at, describe(kn).s);
	int kind = ir_op_lookup(kn->text);
	if (kind < 0) {
		const char *names[OP_COUNT];
		for (int k = 0; k < OP_COUNT; k++)
			names[k] = ir_ops[k].file;
		const char *near = closest_word(kn->text, names, OP_COUNT);
		if (near)
			return fail(b, kn, "%s.op: unknown op '%s'; did you mean '%s'?", r.at,
				    clip(kn->text).s, near);
		return fail(b, kn, "%s.op: unknown op '%s' (`fusec ops` lists them)", r.at,
			    clip(kn->text).s);
	}
	r.info = &ir_ops[kind];
	r.name = r.info->file;
	op->kind = (OpKind)kind;
	op->line = n->line;
	op->col = n->col;
	if (op_keys(b, &r))
		return -1;

	if (r.info->nin_max != 0) {
		if (!r.slot[K_IN])
			return fail(b, n, "%s: missing key 'in'", r.at);
		int rc = read_operands(b, r.slot[K_IN], r.at, r.name, r.info, op);
		if (rc)
			return rc;
	}
	if (r.slot[K_STREAM]) {
		char path[48];
		int64_t s;
		path_cat(path, sizeof path, r.at, ".stream", "", -1);
		if (read_int(b, r.slot[K_STREAM], path, 0, MAX_STREAM, &s))
			return -1;
		op->stream = (int)s;
		if (op->stream > *max_stream)
			*max_stream = op->stream;
	}
	if (r.slot[K_NAME]) {
		/* the op's own name (an ONNX node name): shown beside it in logs */
		const DocNode *nn = r.slot[K_NAME];
		char path[48];
		path_cat(path, sizeof path, r.at, ".name", "", -1);
		if (nn->kind != DOC_STR)
			return fail(b, nn, "%s: expected an op name, got %s", path, describe(nn).s);
		if (!nn->text[0])
			return fail(b, nn, "%s: op names must not be empty", path);
		for (const char *p = nn->text; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				return fail(b, nn, "%s: op name '%s' contains a control character",
					    path, clip(nn->text).s);
		op->name = arena_strdup(g->arena, nn->text);
	}
	Attrs attr = {0};
	if (op_attrs(b, &r, &attr))
		return -1;
	if (op->kind != OP_SYNC && op_result(b, &r))
		return -1;

	Attrs *ap = NULL;
	if (attr.has) {
		ap = ARENA_NEW(g->arena, Attrs, 1);
		*ap = attr;
	}
	op->attr = ap;
	Tensor out = {0};
	char msg[512];
	if (ir_infer(g, op, ap, &out, msg, sizeof msg))
		return fail(b, n, "op '%s' (%s): %s", r.name, r.at, msg);
	if (op->kind == OP_SYNC)
		return 0;
	if (op_stated(b, &r, &out))
		return -1;
	if (!bytes_fit(b, out.dtype, out.rank, out.dim)) {
		char what[300];
		snprintf(what, sizeof what, "op '%s' (%s): output", r.name, r.at);
		return check_bytes(b, n, what, out.dtype, out.rank, out.dim);
	}

	int id = new_tensor(b, r.result->text, index);
	Tensor *t = &g->tensors[id];
	t->dtype = out.dtype;
	t->rank = out.rank;
	memcpy(t->dim, out.dim, sizeof out.dim);
	op->out[0] = id;
	op->nout = 1;
	return 0;
}

static int read_outputs(Builder *b, const DocNode *n)
{
	Graph *g = b->g;
	if (n->kind != DOC_SEQ)
		return fail(b, n, "outputs: expected a list of tensor names, got %s",
			    describe(n).s);
	g->outputs = ARENA_NEW(g->arena, int, n->n);
	int k = 0;
	for (const DocNode *e = n->first; e; e = e->next, k++) {
		char path[32];
		path_cat(path, sizeof path, "outputs", "", "", k);
		if (check_name(b, e, path)) {
			if (!more_errors(b, -1, NULL, -1))
				return -3;
			continue;
		}
		int id = names_find(&b->names, g->tensors, e->text), rc = 0;
		if (id < 0 && b->lost)
			continue;
		if (id < 0)
			rc = fail(b, e, "%s: tensor '%s' is not defined", path, clip(e->text).s);
		else if (b->poison[id])
			continue;
		else if (g->tensors[id].is_output)
			rc = fail(b, e, "%s: tensor '%s' is listed twice", path, clip(e->text).s);
		if (rc && !more_errors(b, rc, NULL, -1))
			return -3;
		if (rc)
			continue;
		g->tensors[id].is_output = true;
		g->outputs[g->noutputs++] = id;
	}
	return 0;
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-' || c == '.';
}

/* The file name without folders and its last extension, made safe for output
 * file names; "stdin" for standard input. */
static const char *default_name(Arena *a, const char *file)
{
	if (!strcmp(file, "<stdin>"))
		return "stdin";
	const char *base = strrchr(file, '/');
	base = base ? base + 1 : file;
	const char *dot = strrchr(base, '.');
	size_t len = dot && dot > base ? (size_t)(dot - base) : strlen(base);
	if (len == 0)
		return "graph";
	char *s = arena_strndup(a, base, len);
	for (char *p = s; *p; p++)
		if (!name_char(*p))
			*p = '_';
	if (s[0] == '.')
		s[0] = '_';
	return s;
}

bool ir_graph_name_ok(const char *s)
{
	for (const char *p = s; *p; p++)
		if (!name_char(*p) || (p == s && *p == '.'))
			return false;
	return s[0] != 0;
}

static int read_name(Builder *b, const DocNode *n)
{
	if (n->kind != DOC_STR)
		return fail(b, n, "name: expected a string, got %s", describe(n).s);
	if (!n->text[0])
		return fail(b, n, "name: must not be empty");
	if (!ir_graph_name_ok(n->text))
		return fail(b, n,
			    "name: '%s' may only contain letters, digits, '_', '-' and '.' "
			    "(and not start with '.')",
			    clip(n->text).s);
	b->g->name = arena_strdup(b->g->arena, n->text);
	return 0;
}

/* The name an op's map gives its result (`out`, or the first of a list); NULL when
 * it has none that reads as a name. */
static const char *op_out_name(const DocNode *n)
{
	if (n->kind != DOC_MAP)
		return NULL;
	for (const DocNode *e = n->first; e; e = e->next)
		if (!strcmp(e->key, "out")) {
			if (e->kind == DOC_SEQ)
				e = e->first;
			return e && e->kind == DOC_STR && e->text[0] ? e->text : NULL;
		}
	return NULL;
}

/* Read root into a Graph; on errors, d[0..*nd) holds up to maxd messages. */
/* A graph read for every size (IrShapeLookup.symbolic): the sizes its probes must
 * avoid, and the size two expressions shared at the last probe (clash). */
typedef struct {
	int64_t avoid[16];
	int navoid;
	int64_t clash;           /* 0: none */
} Probes;

/* The expressions of g's dims (IrSymbolic.dim): the inputs' from their names, the
 * constants' their sizes, the ops' by ir_infer_symbolic. Then whether two of them
 * share a size (p->clash, the graph is then read again). */
static int symbolic_dims(Builder *b, int ninputs, Probes *p)
{
	Graph *g = b->g;
	IrSymbolic *s = b->sym;
	s->dim = ARENA_NEW(g->arena, DimExpr *, g->ntensors + 1);
	s->ndim = g->ntensors;
	for (int t = 0; t < g->ntensors; t++) {
		const Tensor *x = &g->tensors[t];
		s->dim[t] = ARENA_NEW(g->arena, DimExpr, x->rank + 1);
		for (int k = 0; k < x->rank; k++)
			s->dim[t][k] = ir_dim_const(x->dim[k]);
	}
	for (int i = 0; i < ninputs; i++)
		for (int k = 0; k < g->tensors[g->inputs[i]].rank; k++) {
			int di = b->in_dn[i * IR_MAX_RANK + k];
			if (di >= 0 && b->dsym[di] >= 0)
				s->dim[g->inputs[i]][k] = ir_dim_sym(b->dsym[di]);
		}
	if (ir_infer_symbolic(g, s, &b->d[b->nd]))
		return -1;
	if (ir_sym_check(g, s, &p->clash) == 0)
		p->clash = 0;
	return 0;
}

static Graph *build(Arena *a, const char *file, const DocNode *root,
		    const IrInputShape *shapes, int nshapes, const IrShapeLookup *lookup, Diag *d,
		    int maxd, int *nd, Probes *probes)
{
	static const char *const keys[] = {"format", "name", "inputs", "ops", "outputs",
					   "constants", "dims"};
	enum { R_FORMAT, R_NAME, R_INPUTS, R_OPS, R_OUTPUTS, R_CONSTANTS, R_DIMS, NROOT };
	Graph *g = ARENA_NEW(a, Graph, 1);
	g->arena = a;
	g->file = arena_strdup(a, file);
	Builder b = {.g = g, .d = d, .maxd = maxd, .file = file, .shapes = shapes,
		     .nshapes = nshapes, .lookup = lookup, .naming = true};
	*nd = 1;   /* until the ops: every error ends the reading */
	b.opkeys[K_OP] = "op";
	b.opkeys[K_IN] = "in";
	b.opkeys[K_OUT] = "out";
	b.opkeys[K_STREAM] = "stream";
	b.opkeys[K_NAME] = "name";
	for (int i = 0; i < A_COUNT_; i++)
		b.opkeys[K_ATTR0 + i] = ir_attr_name(1u << i);

	if (root->kind != DOC_MAP) {
		fail(&b, root, "the document must be a map with format, inputs, ops and outputs, got %s",
		     describe(root).s);
		return NULL;
	}
	const DocNode *slot[NROOT] = {0};
	if (scan_map(&b, root, "", keys, NROOT, slot))
		return NULL;
	if (!slot[R_FORMAT]) {
		fail(&b, root, "missing key 'format'");
		return NULL;
	}
	const DocNode *f = slot[R_FORMAT];
	if (f->kind != DOC_STR || strcmp(f->text, "fusec-graph/1")) {
		fail(&b, f, "format: expected 'fusec-graph/1', got %s", describe(f).s);
		return NULL;
	}
	for (int k = R_INPUTS; k <= R_OUTPUTS; k++)
		if (!slot[k]) {
			fail(&b, root, "missing key '%s'", keys[k]);
			return NULL;
		}
	if (slot[R_NAME]) {
		if (read_name(&b, slot[R_NAME]))
			return NULL;
	} else {
		g->name = default_name(a, file);
	}

	const DocNode *in = slot[R_INPUTS], *ops = slot[R_OPS];
	if (in->kind != DOC_MAP) {
		fail(&b, in, "inputs: expected a map of name: {dtype, shape}, got %s",
		     describe(in).s);
		return NULL;
	}
	if (ops->kind != DOC_SEQ) {
		fail(&b, ops, "ops: expected a list of ops, got %s", describe(ops).s);
		return NULL;
	}
	const DocNode *cn = slot[R_CONSTANTS];
	if ((int64_t)ops->n > ir_limits.max_ops) {
		fail(&b, ops, "ops: %zu ops, more than the limit of %lld (--max-ops)",
		     (size_t)ops->n, (long long)ir_limits.max_ops);
		return NULL;
	}
	size_t maxt = (size_t)in->n + (size_t)ops->n + (cn ? (size_t)cn->n : 0);
	if ((int64_t)maxt > ir_limits.max_tensors) {
		fail(&b, root, "%zu tensors (inputs, constants and op results), more than the limit "
		     "of %lld (--max-tensors)", maxt, (long long)ir_limits.max_tensors);
		return NULL;
	}
	g->tensors = ARENA_NEW(a, Tensor, maxt + 1);
	g->ops = ARENA_NEW(a, Op, ops->n + 1);
	size_t cap = 16;
	while (cap < 2 * maxt + 2)
		cap *= 2;
	b.names.slot = xcalloc(cap, sizeof(int));
	b.names.mask = cap - 1;
	b.poison = xcalloc(maxt + 1, sizeof *b.poison);
	b.maxt = (int)maxt;

	if (cn)
		g->inputs = NULL;
	if (lookup && lookup->symbolic) {
		b.sym = ARENA_NEW(a, IrSymbolic, 1);
		b.in_dn = ARENA_NEW(a, int8_t, (in->n + 1) * IR_MAX_RANK);
		memset(b.in_dn, -1, (in->n + 1) * IR_MAX_RANK);
		memset(b.dsym, -1, sizeof b.dsym);
		b.avoid = probes->avoid;
		b.navoid = probes->navoid;
	}
	int max_stream = 0, rc = slot[R_DIMS] ? read_dim_ranges(&b, slot[R_DIMS]) : 0;
	if (!rc)
		rc = read_inputs(&b, in);
	if (!rc && !b.nd)
		rc = bind_inputs(&b, in);
	else if (!rc && b.ndn)
		rc = -3;   /* an input failed: its named dims stay unbound */
	b.naming = false;   /* below the inputs a name stands for its bound size */
	if (!rc && cn) {
		/* inputs then constants in one list */
		int *all = ARENA_NEW(a, int, (size_t)in->n + (size_t)cn->n + 1);
		memcpy(all, g->inputs, sizeof *all * (size_t)g->ninputs);
		g->inputs = all;
		rc = read_constants(&b, cn);
	}
	/* An entry (input, constant, op, output) that fails is counted and reading goes
	 * on with the next, up to maxd messages (more_errors). */
	int i = 0;
	for (const DocNode *e = ops->first; e && !rc; e = e->next, i++) {
		int r = read_op(&b, e, i, &max_stream);
		if (r && !more_errors(&b, r, op_out_name(e), i))
			rc = -3;
		g->nops = i + 1;
	}
	if (!rc)
		rc = read_outputs(&b, slot[R_OUTPUTS]);
	free(b.names.slot);
	free(b.poison);
	*nd = b.nd + (rc == -1);
	if (rc || b.nd)
		return NULL;

	for (int t = 0; t < g->ntensors; t++) {
		Tensor *x = &g->tensors[t];
		x->role = x->producer < 0 ? ROLE_INPUT : x->is_output ? ROLE_OUTPUT
								      : ROLE_INTERMEDIATE;
	}
	g->nstreams = max_stream + 1;
	ir_finish(g);
	if (b.sym && b.sym->nsym) {
		int ninputs = in->n;
		b.nd = 0;
		if (symbolic_dims(&b, ninputs, probes)) {
			*nd = 1;
			return NULL;
		}
		g->sym = b.sym;
	}
	return g;
}

/* ---- entry points ----------------------------------------------------------- */

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

static GraphFormat choose_format(const char *file, const char *text, size_t len)
{
	if (ends_with(file, ".json"))
		return FMT_JSON;
	if (ends_with(file, ".yaml") || ends_with(file, ".yml"))
		return FMT_YAML;
	for (size_t i = doc_bom_len(text, len); i < len; i++) {
		char c = text[i];
		if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
			continue;
		return c == '{' || c == '[' ? FMT_JSON : FMT_YAML;
	}
	return FMT_YAML;
}

Graph *ir_read_mem(Arena *a, const char *file, const char *text, size_t len,
		   GraphFormat fmt, Diag *d)
{
	int n;
	return ir_read_mem_errors(a, file, text, len, fmt, d, 1, &n);
}

Graph *ir_read_mem_errors(Arena *a, const char *file, const char *text, size_t len,
			  GraphFormat fmt, Diag *d, int maxd, int *nd)
{
	return ir_read_mem_shapes(a, file, text, len, fmt, NULL, 0, NULL, d, maxd, nd);
}

Graph *ir_read_mem_shapes(Arena *a, const char *file, const char *text, size_t len,
			  GraphFormat fmt, const IrInputShape *shapes, int nshapes,
			  const IrShapeLookup *lookup, Diag *d, int maxd, int *nd)
{
	*nd = 1;
	if (maxd < 1)
		maxd = 1;
	if (!file)
		file = "<memory>";
	if (doc_check_text(file, text, len, d))
		return NULL;
	if (fmt == FMT_AUTO)
		fmt = choose_format(file, text, len);
	/* The parsers want a NUL after the text. */
	char *copy = xmalloc(len + 1);
	memcpy(copy, text, len);
	copy[len] = 0;
	Arena *tmp = arena_new();
	DocNode *root = fmt == FMT_JSON ? doc_read_json(tmp, file, copy, len, d)
					: doc_read_yaml(tmp, file, copy, len, d);
	Probes probes = {0};
	Graph *g = root ? build(a, file, root, shapes, nshapes, lookup, d, maxd, nd, &probes)
			: NULL;
	/* a graph read for every size, whose probes gave two expressions one size:
	 * again, with that size avoided */
	while (g && g->sym && probes.clash && probes.navoid < (int)(sizeof probes.avoid / sizeof probes.avoid[0])) {
		probes.avoid[probes.navoid++] = probes.clash;
		probes.clash = 0;
		g = build(a, file, root, shapes, nshapes, lookup, d, maxd, nd, &probes);
	}
	if (g && g->sym && probes.clash) {
		diag_set(d, file, 0, 0, "the named dims found no probe sizes that keep their "
			 "expressions apart (%lld clashed last); bind some with --input-shape",
			 (long long)probes.clash);
		g = NULL;
	}
	arena_free(tmp);
	free(copy);
	return g;
}

Graph *ir_read_file(Arena *a, const char *path, GraphFormat fmt, Diag *d)
{
	int n;
	return ir_read_file_errors(a, path, fmt, d, 1, &n);
}

Graph *ir_read_file_errors(Arena *a, const char *path, GraphFormat fmt, Diag *d, int maxd,
			   int *nd)
{
	return ir_read_file_shapes(a, path, fmt, NULL, 0, NULL, d, maxd, nd);
}

Graph *ir_read_file_shapes(Arena *a, const char *path, GraphFormat fmt,
			   const IrInputShape *shapes, int nshapes, const IrShapeLookup *lookup,
			   Diag *d, int maxd, int *nd)
{
	size_t len = 0;
	*nd = 1;
	char *text = read_file(path, MAX_INPUT_BYTES, &len, d);
	if (!text)
		return NULL;
	Graph *g = ir_read_mem_shapes(a, strcmp(path, "-") ? path : "<stdin>", text, len, fmt,
				      shapes, nshapes, lookup, d, maxd, nd);
	free(text);
	return g;
}
