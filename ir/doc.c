/* doc.c: what both document readers share (doc.h): the text check before parsing,
 * byte offsets to line:col, and numeric literals. build.c checks the text and picks
 * the reader; read_json.c and read_yaml.c position their errors and read numbers
 * with these. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "doc.h"

size_t doc_bom_len(const char *text, size_t len)
{
	return len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3) ? 3 : 0;
}

void doc_position(const char *text, size_t off, int *line, int *col)
{
	int l = 1, c = 1;
	for (size_t i = doc_bom_len(text, off); i < off; i++) {
		unsigned char ch = (unsigned char)text[i];
		if (ch == '\n')
			l++, c = 1;
		else if ((ch & 0xc0) != 0x80)
			c++;
	}
	*line = l;
	*col = c;
}

/* Length of the valid UTF-8 sequence at s (at most `avail` bytes), or 0. */
static int utf8_seq(const unsigned char *s, size_t avail)
{
	unsigned char c = s[0];
	int n;
	unsigned char lo = 0x80, hi = 0xbf;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
	else
		return 0;
	if ((size_t)n > avail || s[1] < lo || s[1] > hi)
		return 0;
	for (int i = 2; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

int doc_check_text(const char *file, const char *text, size_t len, Diag *d)
{
	const unsigned char *s = (const unsigned char *)text;
	const uint64_t high = 0x8080808080808080ull, ones = 0x0101010101010101ull;
	bool blank = true;
	int line, col;
	for (size_t i = doc_bom_len(text, len); i < len;) {
		/* eight ASCII bytes, none of them NUL, at once; positions are counted only
		 * for a message */
		uint64_t w;
		if (!blank && len - i >= 8 && (memcpy(&w, s + i, 8), !(w & high)) &&
		    !((w - ones) & ~w & high)) {
			i += 8;
			continue;
		}
		unsigned char c = s[i];
		if (c == 0) {
			doc_position(text, i, &line, &col);
			diag_set(d, file, line, col, "NUL byte in the input (not a text file?)");
			return -1;
		}
		if (c < 0x80) {
			if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
				blank = false;
			i++;
			continue;
		}
		int n = utf8_seq(s + i, len - i);
		if (!n) {
			doc_position(text, i, &line, &col);
			diag_set(d, file, line, col, "invalid UTF-8 (byte 0x%02x)", c);
			return -1;
		}
		blank = false;
		i += (size_t)n;
	}
	if (blank) {
		diag_set(d, file, 1, 1, "empty document");
		return -1;
	}
	return 0;
}

static bool all_digits(const char *s, const char **end)
{
	const char *p = s;
	while (*p >= '0' && *p <= '9')
		p++;
	*end = p;
	return p > s;
}

bool doc_parse_number(DocNode *n, const char *s, bool yaml_special)
{
	const char *p = s;
	bool neg = *p == '-';
	if (*p == '-' || *p == '+')
		p++;
	if (yaml_special && *p == '.') {
		if (!strcmp(p, ".inf") || !strcmp(p, ".Inf") || !strcmp(p, ".INF")) {
			n->dval = neg ? -INFINITY : INFINITY;
			n->is_int = false;
			return true;
		}
		if (p == s && (!strcmp(p, ".nan") || !strcmp(p, ".NaN") || !strcmp(p, ".NAN"))) {
			n->dval = NAN;
			n->is_int = false;
			return true;
		}
	}
	const char *q;
	bool int_part = all_digits(p, &q);
	if (int_part && !*q) {
		n->is_int = true;
		errno = 0;
		long long v = strtoll(s, NULL, 10);
		n->int_ok = errno != ERANGE;
		n->ival = v;
		/* an int64 converts to the nearest double, as strtod rounds the literal
		 * (but "-0" is -0.0) */
		n->dval = n->int_ok && !(neg && v == 0) ? (double)v : strtod(s, NULL);
		return true;
	}
	bool frac = false;
	if (*q == '.') {
		const char *r;
		frac = all_digits(q + 1, &r);
		q = r;
	}
	if (!int_part && !frac)
		return false;
	if (*q == 'e' || *q == 'E') {
		q++;
		if (*q == '-' || *q == '+')
			q++;
		if (!all_digits(q, &q))
			return false;
	}
	if (*q)
		return false;
	n->is_int = false;
	n->dval = strtod(s, NULL);
	return true;
}
