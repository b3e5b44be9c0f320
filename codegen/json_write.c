/* json_write.c: the streaming JSON writer (json_write.h). */
#include <string.h>

#include "json_write.h"

void jw_init(JsonW *w, Buf *b, bool pretty)
{
	memset(w, 0, sizeof *w);
	w->b = b;
	w->pretty = pretty;
}

static void tabs(Buf *b, int n)
{
	static const char t[] = "\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t";
	while (n > 0) {
		int k = n < 16 ? n : 16;
		buf_write(b, t, (size_t)k);
		n -= k;
	}
}

/* Before a value: the separator from the previous array element. A value of an
 * object member follows its key, which wrote the separator. */
static void before_value(JsonW *w)
{
	if (w->depth == 0)
		return;
	if (w->obj[w->depth - 1]) {
		if (!w->keyed)
			die("JSON writer: object member without a key");
		w->keyed = false;
		return;
	}
	if (w->any[w->depth - 1])
		buf_write(w->b, w->pretty ? ", " : ",", w->pretty ? 2 : 1);
	w->any[w->depth - 1] = true;
}

void jw_escape(Buf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	const unsigned char *run = p;
	for (;; p++) {
		unsigned char c = *p;
		if (c > 31 && c != '"' && c != '\\')
			continue;
		if (p > run)
			buf_write(b, run, (size_t)(p - run));
		if (!c)
			return;
		char e[6] = {'\\', 0};
		size_t n = 2;
		switch (c) {
		case '"': e[1] = '"'; break;
		case '\\': e[1] = '\\'; break;
		case '\b': e[1] = 'b'; break;
		case '\f': e[1] = 'f'; break;
		case '\n': e[1] = 'n'; break;
		case '\r': e[1] = 'r'; break;
		case '\t': e[1] = 't'; break;
		default:
			memcpy(e + 1, "u00", 3);
			e[4] = hex[c >> 4];
			e[5] = hex[c & 15];
			n = 6;
		}
		buf_write(b, e, n);
		run = p + 1;
	}
}

void jw_key(JsonW *w, const char *key)
{
	if (w->depth == 0 || !w->obj[w->depth - 1] || w->keyed)
		die("JSON writer: key '%s' outside an object", key);
	if (w->any[w->depth - 1])
		buf_write(w->b, w->pretty ? ",\n" : ",", w->pretty ? 2 : 1);
	w->any[w->depth - 1] = true;
	if (w->pretty)
		tabs(w->b, w->depth);
	buf_putc(w->b, '"');
	jw_escape(w->b, key);
	buf_write(w->b, w->pretty ? "\":\t" : "\":", w->pretty ? 3 : 2);
	w->keyed = true;
}

static void open_container(JsonW *w, bool obj)
{
	before_value(w);
	if (w->depth == JW_MAX_DEPTH)
		die("JSON writer: nesting deeper than %d", JW_MAX_DEPTH);
	w->obj[w->depth] = obj;
	w->any[w->depth] = false;
	w->depth++;
	if (obj)
		buf_write(w->b, w->pretty ? "{\n" : "{", w->pretty ? 2 : 1);
	else
		buf_putc(w->b, '[');
}

void jw_obj(JsonW *w)
{
	open_container(w, true);
}

void jw_arr(JsonW *w)
{
	open_container(w, false);
}

void jw_end(JsonW *w)
{
	if (w->depth == 0 || w->keyed)
		die("JSON writer: unbalanced end");
	w->depth--;
	if (!w->obj[w->depth]) {
		buf_putc(w->b, ']');
		return;
	}
	if (w->pretty) {
		if (w->any[w->depth])
			buf_putc(w->b, '\n');
		tabs(w->b, w->depth);
	}
	buf_putc(w->b, '}');
}

void jw_str(JsonW *w, const char *s)
{
	before_value(w);
	buf_putc(w->b, '"');
	jw_escape(w->b, s);
	buf_putc(w->b, '"');
}

void jw_raw(JsonW *w, const char *text)
{
	before_value(w);
	buf_puts(w->b, text);
}

void jw_int(JsonW *w, int64_t v)
{
	char d[24];
	int n = 0;
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	do
		d[sizeof d - 1 - n++] = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		d[sizeof d - 1 - n++] = '-';
	before_value(w);
	buf_write(w->b, d + sizeof d - n, (size_t)n);
}

void jw_bool(JsonW *w, bool v)
{
	before_value(w);
	buf_write(w->b, v ? "true" : "false", v ? 4 : 5);
}

void jw_null(JsonW *w)
{
	before_value(w);
	buf_write(w->b, "null", 4);
}
