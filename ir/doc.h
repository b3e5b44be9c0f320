/* doc.h: the generic document tree both graph readers produce (private to ir/).
 *
 * JSON (read_json.c) and YAML (read_yaml.c) are parsed into the same small tree of
 * maps (keys kept in order, duplicates kept so the validator can name them),
 * sequences and scalars. Scalars remember what they were written as: a string, a
 * number, a bool or null. Every node carries the 1-based line and column where it
 * starts, and a map entry also where its key starts, so build.c can validate a
 * graph and report positions once for both formats.
 *
 * Memory: every node and string lives in the Arena handed to the reader; the tree
 * is thrown away with that arena once the Graph is built. */
#ifndef FUSEC_DOC_H
#define FUSEC_DOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../support/support.h"

typedef enum { DOC_MAP, DOC_SEQ, DOC_STR, DOC_NUM, DOC_BOOL, DOC_NULL } DocKind;

typedef struct DocNode DocNode;
struct DocNode {
	DocKind kind;
	int line, col;           /* where the node starts, 1-based */
	const char *key;         /* the entry's key when the parent is a map */
	int key_line, key_col;   /* where that key starts */
	const char *text;        /* scalars: string contents or the literal as written */
	DocNode *first, *last;   /* children of a map or sequence, in document order */
	DocNode *next;           /* next sibling */
	int n;                   /* number of children */
	bool bval;               /* DOC_BOOL */
	bool is_int;             /* DOC_NUM written as an integer */
	bool int_ok;             /* ... and it fits in int64 (ival is exact) */
	int64_t ival;            /* DOC_NUM when is_int && int_ok */
	double dval;             /* DOC_NUM */
};

static inline DocNode *doc_new(Arena *a, DocKind kind, int line, int col)
{
	DocNode *n = ARENA_NEW(a, DocNode, 1);
	n->kind = kind;
	n->line = line;
	n->col = col;
	return n;
}

static inline void doc_append(DocNode *parent, DocNode *child)
{
	if (parent->last)
		parent->last->next = child;
	else
		parent->first = child;
	parent->last = child;
	parent->n++;
}

/* Parse `text` (len bytes, text[len] == 0, already checked to be NUL-free UTF-8
 * by doc_check_text) into a tree. Returns NULL and fills *d (with `file` and a
 * position) on a syntax error, too deep nesting, YAML aliases or several documents. */
DocNode *doc_read_json(Arena *a, const char *file, const char *text, size_t len, Diag *d);
DocNode *doc_read_yaml(Arena *a, const char *file, const char *text, size_t len, Diag *d);
/* doc_read_json's two paths after its nesting check, for the tests that hold them
 * to the same tree (read_json.c): the fast one (NULL, and no message, where it
 * steps aside) and the whole-document one (every syntax error message is its). */
DocNode *doc_read_json_fast(Arena *a, const char *file, const char *text, size_t len);
DocNode *doc_read_json_whole(Arena *a, const char *file, const char *text, size_t len, Diag *d);

/* Shared helpers (doc.c). */

/* Length of a UTF-8 byte order mark at the start of text (0 or 3). */
size_t doc_bom_len(const char *text, size_t len);
/* Rejects NUL bytes and invalid UTF-8 with the position of the first bad byte,
 * and a text that holds nothing but whitespace ("empty document"). 0 ok, -1 error. */
int doc_check_text(const char *file, const char *text, size_t len, Diag *d);
/* The 1-based line and column (in characters) of byte offset `off`. */
void doc_position(const char *text, size_t off, int *line, int *col);
/* Fill n's number fields from a numeric literal. Returns false when `s` is not a
 * number: decimal integers, decimals with optional exponent, and (when
 * yaml_special) .inf, -.inf, .nan as YAML writes them. */
bool doc_parse_number(DocNode *n, const char *s, bool yaml_special);

#endif
