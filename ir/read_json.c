/* read_json.c: JSON text -> document tree (doc.h), through cJSON.
 *
 * cJSON parses but keeps no positions. After a successful parse the source text is
 * walked once more in lockstep with the cJSON tree: a small structural skipper
 * (whitespace, strings, number and literal tokens, brackets) that only ever runs
 * over JSON cJSON has already accepted, counting lines and columns as it goes, so
 * every node and key gets its line:col in one linear pass. Numbers keep the literal
 * as written, so integers are read exactly (cJSON only keeps a double).
 *
 * Before cJSON sees the text, a bracket count (outside strings) refuses nesting
 * deeper than IR_MAX_DEPTH, so hostile input never reaches cJSON's recursion.
 * A syntax error is placed at the offset where cJSON stopped.
 *
 * Speed: the fast path (below) reads the root and its containers itself and
 * gives cJSON one value below them at a time, in a scratch arena emptied after
 * each, so cJSON's tree of the whole document never exists; the walk copies those
 * values' strings and keys into the document's arena. The whole-document path,
 * taken only when the fast one steps aside (an error, an unusual key), parses in
 * the document's arena and takes cJSON's strings as they are. cJSON's allocation
 * hooks are pointed at an arena for each call and reset after it; they are
 * process-wide, so the graph readers are not called from several threads at once. */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "doc.h"
#include "ir.h"

/* The arena cJSON allocates from during doc_read_json's parse. */
static Arena *parse_arena;

static void *parse_alloc(size_t n)
{
	return arena_alloc(parse_arena, n);
}

static void parse_free(void *p)
{
	(void)p; /* the arena owns it */
}

typedef struct {
	const char *p, *end;
	int line, col;           /* position of *p */
	Arena *a;
	const char *file;
	Diag *d;
	bool failed;
	bool copy;               /* copy cJSON's strings and keys into a (a scratch parse) */
} Walk;

/* cJSON counts every byte up to 32 as whitespace; so does the walker. */
static bool json_space(char c)
{
	return c != 0 && (unsigned char)c <= 32;
}

static void step(Walk *w)
{
	unsigned char c = (unsigned char)*w->p++;
	if (c == '\n') {
		w->line++;
		w->col = 1;
	} else if ((c & 0xc0) != 0x80) {
		w->col++;
	}
}

static void skip_space(Walk *w)
{
	while (w->p < w->end && json_space(*w->p))
		step(w);
}

static bool expect(Walk *w, char c)
{
	skip_space(w);
	if (w->p >= w->end || *w->p != c) {
		if (!w->failed)
			diag_set(w->d, w->file, w->line, w->col,
				 "JSON reader lost its place (expected '%c')", c);
		w->failed = true;
		return false;
	}
	step(w);
	return true;
}

static void skip_string(Walk *w)
{
	if (!expect(w, '"'))
		return;
	while (w->p < w->end && *w->p != '"') {
		if (*w->p == '\\' && w->end - w->p >= 6 && !memcmp(w->p + 1, "u0000", 5)) {
			diag_set(w->d, w->file, w->line, w->col, "NUL character (\\u0000) in a string");
			w->failed = true;
			return;
		}
		if (*w->p == '\\' && w->p + 1 < w->end)
			step(w);
		step(w);
	}
	if (w->p < w->end)
		step(w);
}

static DocNode *walk(Walk *w, const cJSON *j);
static bool only_space(const char *p, const char *end);

static DocNode *walk_children(Walk *w, const cJSON *j, DocNode *n, char close)
{
	step(w);
	bool is_map = close == '}';
	for (const cJSON *c = j->child; c && !w->failed; c = c->next) {
		skip_space(w);
		int kl = w->line, kc = w->col;
		if (is_map) {
			skip_string(w);
			if (w->failed || !expect(w, ':'))
				break;
		}
		DocNode *child = walk(w, c);
		if (!child)
			break;
		if (is_map) {
			child->key = !c->string ? "" : w->copy ? arena_strdup(w->a, c->string) : c->string;
			child->key_line = kl;
			child->key_col = kc;
		}
		doc_append(n, child);
		skip_space(w);
		if (c->next && !expect(w, ','))
			break;
	}
	if (w->failed || !expect(w, close))
		return NULL;
	return n;
}

static DocNode *walk(Walk *w, const cJSON *j)
{
	skip_space(w);
	DocNode *n;
	const char *start = w->p;
	int line = w->line, col = w->col;
	if (cJSON_IsObject(j)) {
		n = doc_new(w->a, DOC_MAP, line, col);
		if (*w->p != '{')
			goto lost;
		return walk_children(w, j, n, '}');
	}
	if (cJSON_IsArray(j)) {
		n = doc_new(w->a, DOC_SEQ, line, col);
		if (*w->p != '[')
			goto lost;
		return walk_children(w, j, n, ']');
	}
	if (cJSON_IsString(j)) {
		n = doc_new(w->a, DOC_STR, line, col);
		n->text = !j->valuestring ? "" : w->copy ? arena_strdup(w->a, j->valuestring)
							 : j->valuestring;
		skip_string(w);
		return w->failed ? NULL : n;
	}
	if (cJSON_IsNumber(j)) {
		n = doc_new(w->a, DOC_NUM, line, col);
		while (w->p < w->end && *w->p && strchr("0123456789+-.eE", *w->p))
			step(w);
		n->text = arena_strndup(w->a, start, (size_t)(w->p - start));
		if (!doc_parse_number(n, n->text, false)) {
			n->dval = j->valuedouble;
			n->is_int = false;
		}
		return n;
	}
	if (cJSON_IsBool(j) || cJSON_IsNull(j)) {
		const char *lit = cJSON_IsTrue(j) ? "true" : cJSON_IsFalse(j) ? "false" : "null";
		size_t len = strlen(lit);
		if ((size_t)(w->end - w->p) < len || memcmp(w->p, lit, len))
			goto lost;
		n = doc_new(w->a, cJSON_IsNull(j) ? DOC_NULL : DOC_BOOL, line, col);
		n->text = lit;
		n->bval = cJSON_IsTrue(j);
		for (size_t i = 0; i < len; i++)
			step(w);
		return n;
	}
lost:
	if (!w->failed)
		diag_set(w->d, w->file, line, col, "JSON reader lost its place");
	w->failed = true;
	return NULL;
}

/* ---- the fast path ------------------------------------------------------------
 * A graph is one map whose few entries hold the many small values: inputs, ops,
 * outputs. Parsed whole, cJSON's tree of it is as large as the document tree
 * and lives as long, so a large graph touches twice the memory it needs (fresh
 * memory is most of the read's cost: docs/benchmarks.md). Here the root and the
 * containers directly in it are read by the walker itself, and each value below
 * them is parsed by cJSON on its own into a scratch arena that is emptied after
 * its walk (strings and keys copied out). Anything this path does not expect
 * (a syntax error, an escape in a key at those two levels, trailing text) ends
 * it with no message, and the whole text is read again by the path below, whose
 * tree is the same and whose errors are the reader's. */

/* A key at the top two levels: its bytes as written, when they hold no escape
 * and no control character (cJSON would decode or keep those); NULL otherwise. */
static const char *plain_key(Walk *w)
{
	if (w->p >= w->end || *w->p != '"')
		return NULL;
	const char *start = w->p + 1, *q = start;
	while (q < w->end && *q != '"') {
		if (*q == '\\' || (unsigned char)*q < 0x20)
			return NULL;
		q++;
	}
	if (q >= w->end)
		return NULL;
	const char *key = arena_strndup(w->a, start, (size_t)(q - start));
	while (w->p <= q)
		step(w);
	return key;
}

static DocNode *fast_value(Walk *w, Arena *scratch, int depth)
{
	skip_space(w);
	if (w->p >= w->end)
		return NULL;
	char open = *w->p;
	if (depth < 2 && (open == '{' || open == '[')) {
		char close = open == '{' ? '}' : ']';
		DocNode *n = doc_new(w->a, open == '{' ? DOC_MAP : DOC_SEQ, w->line, w->col);
		step(w);
		skip_space(w);
		if (w->p < w->end && *w->p == close) {
			step(w);
			return n;
		}
		for (;;) {
			skip_space(w);
			int kl = w->line, kc = w->col;
			const char *key = NULL;
			if (close == '}') {
				if (!(key = plain_key(w)))
					return NULL;
				skip_space(w);
				if (w->p >= w->end || *w->p != ':')
					return NULL;
				step(w);
			}
			DocNode *child = fast_value(w, scratch, depth + 1);
			if (!child)
				return NULL;
			if (key) {
				child->key = key;
				child->key_line = kl;
				child->key_col = kc;
			}
			doc_append(n, child);
			skip_space(w);
			if (w->p < w->end && *w->p == ',') {
				step(w);
				continue;
			}
			if (w->p < w->end && *w->p == close) {
				step(w);
				return n;
			}
			return NULL;
		}
	}
	parse_arena = scratch;
	cJSON_InitHooks(&(cJSON_Hooks){parse_alloc, parse_free});
	const char *stop = NULL;
	cJSON *j = cJSON_ParseWithLengthOpts(w->p, (size_t)(w->end - w->p) + 1, &stop, 0);
	cJSON_InitHooks(NULL);
	parse_arena = NULL;
	DocNode *n = j ? walk(w, j) : NULL;
	arena_reset(scratch);
	return w->failed ? NULL : n;
}

/* The document tree by the fast path, or NULL when it stepped aside. */
DocNode *doc_read_json_fast(Arena *a, const char *file, const char *text, size_t len)
{
	Diag quiet = {0};
	Walk w = {.p = text, .end = text + len, .line = 1, .col = 1, .a = a, .file = file,
		  .d = &quiet, .copy = true};
	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
		w.p += 3;
	Arena *scratch = arena_new();
	DocNode *root = fast_value(&w, scratch, 0);
	arena_free(scratch);
	return root && only_space(w.p, w.end) ? root : NULL;
}

/* Refuse nesting deeper than IR_MAX_DEPTH before cJSON recurses into it. */
static int check_depth(const char *file, const char *text, size_t len, Diag *d)
{
	int depth = 0;
	bool in_str = false;
	for (size_t i = 0; i < len; i++) {
		char c = text[i];
		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = false;
		} else if (c == '"') {
			in_str = true;
		} else if (c == '{' || c == '[') {
			if (++depth > IR_MAX_DEPTH) {
				int line, col;
				doc_position(text, i, &line, &col);
				diag_set(d, file, line, col, "nesting deeper than %d levels",
					 IR_MAX_DEPTH);
				return -1;
			}
		} else if (c == '}' || c == ']') {
			depth--;
		}
	}
	return 0;
}

/* A short excerpt of the text at an error, up to the end of its line, control
 * characters shown as '?'. */
static void excerpt(const char *p, const char *end, char *buf, size_t size)
{
	size_t n = 0;
	while (p < end && n + 1 < size && n < 16 && *p != '\n' && *p != '\r') {
		unsigned char c = (unsigned char)*p++;
		buf[n++] = (c < 0x20 && c != '\t') || c == 0x7f ? '?' : (char)c;
	}
	while (n > 0 && (buf[n - 1] & 0xc0) == 0x80)
		n--;
	if (n > 0 && (unsigned char)buf[n - 1] >= 0xc0)
		n--;
	buf[n] = 0;
}

static bool only_space(const char *p, const char *end)
{
	while (p < end && json_space(*p))
		p++;
	return p >= end;
}

DocNode *doc_read_json(Arena *a, const char *file, const char *text, size_t len, Diag *d)
{
	if (check_depth(file, text, len, d))
		return NULL;
	DocNode *fast = doc_read_json_fast(a, file, text, len);
	return fast ? fast : doc_read_json_whole(a, file, text, len, d);
}

DocNode *doc_read_json_whole(Arena *a, const char *file, const char *text, size_t len, Diag *d)
{
	const char *end = text + len;
	const char *stop = NULL;
	/* len + 1 takes in the terminating NUL, so a truncated text fails at its end. */
	parse_arena = a;
	cJSON_InitHooks(&(cJSON_Hooks){parse_alloc, parse_free});
	cJSON *root = cJSON_ParseWithLengthOpts(text, len + 1, &stop, 0);
	cJSON_InitHooks(NULL);
	parse_arena = NULL;
	if (!root) {
		if (!stop || stop < text || stop > end)
			stop = end;
		int line, col;
		doc_position(text, (size_t)(stop - text), &line, &col);
		if (only_space(stop, end)) {
			diag_set(d, file, line, col, "JSON syntax error: unexpected end of input");
		} else if (end - stop >= 3 && !memcmp(stop, "\xef\xbb\xbf", 3)) {
			diag_set(d, file, line, col,
				 "JSON syntax error: a byte order mark (U+FEFF) may only start the text");
		} else {
			char ex[64];
			excerpt(stop, end, ex, sizeof ex);
			diag_set(d, file, line, col, "JSON syntax error at '%s'", ex);
		}
		return NULL;
	}
	if (stop && stop >= text && stop <= end && !only_space(stop, end)) {
		int line, col;
		char ex[64];
		while (json_space(*stop))
			stop++;
		doc_position(text, (size_t)(stop - text), &line, &col);
		excerpt(stop, end, ex, sizeof ex);
		diag_set(d, file, line, col, "JSON syntax error: unexpected '%s' after the document",
			 ex);
		return NULL;
	}

	Walk w = {.p = text, .end = end, .line = 1, .col = 1, .a = a, .file = file, .d = d};
	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
		w.p += 3;
	return walk(&w, root);
}
