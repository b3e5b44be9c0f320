/* read_yaml.c: YAML text -> document tree (doc.h), through libyaml's event parser.
 *
 * Events are folded into the tree with an explicit stack, one frame per open map or
 * sequence, so nesting is bounded by IR_MAX_DEPTH without recursion. Positions are
 * libyaml's marks, turned 1-based. Plain scalars are typed as the YAML 1.2 core
 * schema does (integers, floats with .inf/.nan, true/false, null/~/empty); quoted
 * and block scalars are strings.
 *
 * Refused on purpose: aliases (so a "billion laughs" file fails at its first alias
 * instead of expanding), merge keys, tags other than !!str, non-scalar map keys, and
 * more than one document. Messages for a tab in indentation and for keys past YAML's
 * 1024-character limit say so. */
#include <stdio.h>
#include <string.h>

#include <yaml.h>

#include "doc.h"
#include "ir.h"

typedef struct {
	DocNode *node;           /* the open map or sequence */
	const char *key;         /* map: the key waiting for its value, or NULL */
	int key_line, key_col;
} Frame;

typedef struct {
	Arena *a;
	const char *file;
	Diag *d;
	Frame stack[IR_MAX_DEPTH];
	int depth;
	DocNode *root;
} Fold;

static int fail_mark(Fold *f, yaml_mark_t m, const char *msg)
{
	diag_set(f->d, f->file, (int)m.line + 1, (int)m.column + 1, "%s", msg);
	return -1;
}

static bool one_of(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(s, *list))
			return true;
	return false;
}

static DocNode *scalar_node(Fold *f, const yaml_event_t *ev)
{
	static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
	static const char *const trues[] = {"true", "True", "TRUE", NULL};
	static const char *const falses[] = {"false", "False", "FALSE", NULL};
	yaml_mark_t m = ev->start_mark;
	const char *text = arena_strndup(f->a, (const char *)ev->data.scalar.value,
					 ev->data.scalar.length);
	DocNode *n = doc_new(f->a, DOC_STR, (int)m.line + 1, (int)m.column + 1);
	n->text = text;
	if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || ev->data.scalar.tag)
		return n;
	if (one_of(text, nulls))
		n->kind = DOC_NULL;
	else if (one_of(text, trues) || one_of(text, falses))
		n->kind = DOC_BOOL, n->bval = one_of(text, trues);
	else if (doc_parse_number(n, text, true))
		n->kind = DOC_NUM;
	return n;
}

/* Attach a finished node to the open collection, or make it the root. */
static int attach(Fold *f, DocNode *n, yaml_mark_t m)
{
	if (f->depth == 0) {
		f->root = n;
		return 0;
	}
	Frame *top = &f->stack[f->depth - 1];
	if (top->node->kind == DOC_SEQ) {
		doc_append(top->node, n);
		return 0;
	}
	if (!top->key) {
		if (n->kind == DOC_MAP || n->kind == DOC_SEQ)
			return fail_mark(f, m, "map keys must be scalars");
		top->key = n->text;
		top->key_line = n->line;
		top->key_col = n->col;
		return 0;
	}
	n->key = top->key;
	n->key_line = top->key_line;
	n->key_col = top->key_col;
	top->key = NULL;
	doc_append(top->node, n);
	return 0;
}

static int check_tag(Fold *f, const yaml_char_t *tag, yaml_mark_t m, bool scalar)
{
	if (!tag || (scalar && !strcmp((const char *)tag, YAML_STR_TAG)))
		return 0;
	return fail_mark(f, m, "YAML tags are not supported");
}

static int on_event(Fold *f, const yaml_event_t *ev, int *ndocs)
{
	yaml_mark_t m = ev->start_mark;
	switch (ev->type) {
	case YAML_DOCUMENT_START_EVENT:
		if (++*ndocs > 1)
			return fail_mark(f, m, "several YAML documents in one file are not supported");
		return 0;
	case YAML_ALIAS_EVENT:
		return fail_mark(f, m, "YAML aliases are not supported");
	case YAML_SCALAR_EVENT: {
		if (check_tag(f, ev->data.scalar.tag, m, true))
			return -1;
		if (strlen((const char *)ev->data.scalar.value) != ev->data.scalar.length)
			return fail_mark(f, m, "NUL character in a YAML scalar");
		if (f->depth > 0 && f->stack[f->depth - 1].node->kind == DOC_MAP &&
		    !f->stack[f->depth - 1].key && ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
		    !strcmp((const char *)ev->data.scalar.value, "<<"))
			return fail_mark(f, m, "YAML merge keys ('<<') are not supported");
		return attach(f, scalar_node(f, ev), m);
	}
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT: {
		bool map = ev->type == YAML_MAPPING_START_EVENT;
		if (check_tag(f, map ? ev->data.mapping_start.tag : ev->data.sequence_start.tag,
			      m, false))
			return -1;
		if (f->depth >= IR_MAX_DEPTH) {
			char msg[64];
			snprintf(msg, sizeof msg, "nesting deeper than %d levels", IR_MAX_DEPTH);
			return fail_mark(f, m, msg);
		}
		DocNode *n = doc_new(f->a, map ? DOC_MAP : DOC_SEQ, (int)m.line + 1,
				     (int)m.column + 1);
		if (attach(f, n, m))
			return -1;
		f->stack[f->depth++] = (Frame){.node = n};
		return 0;
	}
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		if (f->depth > 0)
			f->depth--;
		return 0;
	default:
		return 0;
	}
}

/* The byte offset of a libyaml mark index, which counts characters after the BOM. */
static size_t mark_offset(const char *text, size_t len, size_t index)
{
	size_t i = len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3) ? 3 : 0;
	for (; i < len && index > 0; index--) {
		i++;
		while (i < len && ((unsigned char)text[i] & 0xc0) == 0x80)
			i++;
	}
	return i;
}

static void syntax_error(Fold *f, const yaml_parser_t *p, const char *text, size_t len)
{
	const char *problem = p->problem ? p->problem : "unknown problem";
	const char *hint = "";
	char found[64];
	int line, col;
	size_t nchars = 0;
	for (size_t i = 0; i < len; i++)
		nchars += ((unsigned char)text[i] & 0xc0) != 0x80;
	if (p->error == YAML_READER_ERROR) {
		doc_position(text, p->problem_offset < len ? p->problem_offset : len, &line, &col);
	} else if (p->problem_mark.index >= nchars) {
		/* libyaml places errors at the end past a virtual line break. */
		doc_position(text, len, &line, &col);
	} else {
		line = (int)p->problem_mark.line + 1;
		col = (int)p->problem_mark.column + 1;
	}
	if (p->error == YAML_SCANNER_ERROR &&
	    !strcmp(problem, "found character that cannot start any token")) {
		size_t off = mark_offset(text, len, p->problem_mark.index);
		unsigned char c = off < len ? (unsigned char)text[off] : 0;
		if (c == '\t') {
			problem = "a tab where YAML expects indentation or a token (indent with spaces)";
		} else if (c > 0x20 && c < 0x7f) {
			snprintf(found, sizeof found, "found character '%c' that cannot start any token",
				 c);
			problem = found;
		}
	}
	if (p->problem_mark.column >= 1024 &&
	    (!strcmp(problem, "mapping values are not allowed in this context") ||
	     !strcmp(problem, "could not find expected ':'")))
		hint = " (a YAML key must fit in 1024 characters; write a longer one as '? KEY')";
	if (p->context)
		diag_set(f->d, f->file, line, col, "YAML syntax error: %s %s%s", problem, p->context,
			 hint);
	else
		diag_set(f->d, f->file, line, col, "YAML syntax error: %s%s", problem, hint);
}

DocNode *doc_read_yaml(Arena *a, const char *file, const char *text, size_t len, Diag *d)
{
	yaml_parser_t p;
	if (!yaml_parser_initialize(&p))
		die("yaml_parser_initialize failed");
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	Fold f = {.a = a, .file = file, .d = d};
	int ndocs = 0;
	bool ok = true, done = false;
	while (ok && !done) {
		yaml_event_t ev;
		if (!yaml_parser_parse(&p, &ev)) {
			syntax_error(&f, &p, text, len);
			ok = false;
			break;
		}
		done = ev.type == YAML_STREAM_END_EVENT;
		ok = on_event(&f, &ev, &ndocs) == 0;
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
	if (!ok)
		return NULL;
	if (!f.root) {
		diag_set(d, file, 1, 1, "empty document");
		return NULL;
	}
	return f.root;
}
