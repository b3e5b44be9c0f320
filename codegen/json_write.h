/* json_write.h: a streaming JSON writer for the plan (codegen/plan.c).
 *
 * In:  calls in document order: containers opened and closed, keys, values.
 * Out: JSON text appended to a Buf, compact (no whitespace at all) or pretty.
 *      Pretty is the layout cJSON_Print gives (a tab per level, an object's
 *      members one a line as `"key":<TAB>value`, arrays on one line with ", "),
 *      so a plan reads the same as before the writer streamed.
 * Memory: the caller owns the Buf; the writer holds nothing else.
 *
 * Strings are escaped as cJSON escapes them: `"` and `\` and the control bytes
 * below 0x20 (\b \f \n \r \t by name, the others as \u00XX); every other byte,
 * UTF-8 included, is copied. Numbers are written from their text (jw_raw), so
 * the caller decides their exact form. The plan is parsed back with cJSON by the
 * runtime and the tests; nothing here parses. */
#ifndef FUSEC_JSON_WRITE_H
#define FUSEC_JSON_WRITE_H

#include <stdbool.h>
#include <stdint.h>

#include "../support/support.h"

enum { JW_MAX_DEPTH = 32 };

typedef struct {
	Buf *b;
	bool pretty;
	int depth;
	bool obj[JW_MAX_DEPTH];    /* per open container: an object (else an array) */
	bool any[JW_MAX_DEPTH];    /* ... and whether it has a member yet */
	bool keyed;                /* a key was written; its value comes next */
} JsonW;

void jw_init(JsonW *w, Buf *b, bool pretty);
void jw_key(JsonW *w, const char *key);    /* inside an object, before each value */
void jw_obj(JsonW *w);                     /* open an object as the next value */
void jw_arr(JsonW *w);                     /* open an array as the next value */
void jw_end(JsonW *w);                     /* close the innermost container */
void jw_str(JsonW *w, const char *s);      /* NULL writes "" */
void jw_raw(JsonW *w, const char *text);   /* a number's text, as is */
void jw_int(JsonW *w, int64_t v);
void jw_bool(JsonW *w, bool v);
void jw_null(JsonW *w);

/* Append s as the inside of a JSON string (no quotes). */
void jw_escape(Buf *b, const char *s);

#endif
