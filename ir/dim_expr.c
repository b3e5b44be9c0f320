/* dim_expr.c: sizes as polynomials over named dims (dim_expr.h). */
#include <string.h>

#include "dim_expr.h"

DimExpr ir_dim_const(int64_t v)
{
	DimExpr e = {0};
	if (v) {
		e.n = 1;
		e.t[0].c = v;
	}
	return e;
}

DimExpr ir_dim_sym(int s)
{
	DimExpr e = {1, {{1, {0}}}};
	e.t[0].e[s] = 1;
	return e;
}

/* Terms in order: higher total degree first, then by exponents, so the constant
 * term is last and "batch*seq+seq" prints as people write it. */
static int term_cmp(const DimTerm *a, const DimTerm *b)
{
	int da = 0, db = 0;
	for (int s = 0; s < IR_SYM_MAX; s++) {
		da += a->e[s];
		db += b->e[s];
	}
	if (da != db)
		return da > db ? -1 : 1;
	for (int s = 0; s < IR_SYM_MAX; s++)
		if (a->e[s] != b->e[s])
			return a->e[s] > b->e[s] ? -1 : 1;
	return 0;
}

/* Add term t into e (kept canonical). -1 when full or the coefficient overflows. */
static int put_term(DimExpr *e, const DimTerm *t)
{
	int i = 0;
	while (i < e->n && term_cmp(&e->t[i], t) < 0)
		i++;
	if (i < e->n && term_cmp(&e->t[i], t) == 0) {
		if (__builtin_add_overflow(e->t[i].c, t->c, &e->t[i].c))
			return -1;
		if (!e->t[i].c) {
			memmove(&e->t[i], &e->t[i + 1], sizeof e->t[0] * (size_t)(e->n - i - 1));
			e->n--;
		}
		return 0;
	}
	if (e->n == IR_TERM_MAX)
		return -1;
	memmove(&e->t[i + 1], &e->t[i], sizeof e->t[0] * (size_t)(e->n - i));
	e->t[i] = *t;
	e->n++;
	return 0;
}

int ir_dim_add(const DimExpr *a, const DimExpr *b, DimExpr *out)
{
	DimExpr r = *a;
	for (int i = 0; i < b->n; i++)
		if (put_term(&r, &b->t[i]))
			return -1;
	*out = r;
	return 0;
}

int ir_dim_mul(const DimExpr *a, const DimExpr *b, DimExpr *out)
{
	DimExpr r = {0};
	for (int i = 0; i < a->n; i++)
		for (int j = 0; j < b->n; j++) {
			DimTerm t;
			if (__builtin_mul_overflow(a->t[i].c, b->t[j].c, &t.c))
				return -1;
			for (int s = 0; s < IR_SYM_MAX; s++) {
				int x = a->t[i].e[s] + b->t[j].e[s];
				if (x > 255)
					return -1;
				t.e[s] = (uint8_t)x;
			}
			if (put_term(&r, &t))
				return -1;
		}
	*out = r;
	return 0;
}

int ir_dim_div(const DimExpr *a, const DimExpr *b, DimExpr *out)
{
	if (b->n != 1)
		return -1;
	const DimTerm *d = &b->t[0];
	DimExpr r = {0};
	for (int i = 0; i < a->n; i++) {
		DimTerm t;
		if (a->t[i].c % d->c)
			return -1;
		t.c = a->t[i].c / d->c;
		for (int s = 0; s < IR_SYM_MAX; s++) {
			if (a->t[i].e[s] < d->e[s])
				return -1;
			t.e[s] = (uint8_t)(a->t[i].e[s] - d->e[s]);
		}
		if (put_term(&r, &t))
			return -1;
	}
	*out = r;
	return 0;
}

bool ir_dim_equal(const DimExpr *a, const DimExpr *b)
{
	if (a->n != b->n)
		return false;
	for (int i = 0; i < a->n; i++)
		if (a->t[i].c != b->t[i].c || memcmp(a->t[i].e, b->t[i].e, sizeof a->t[i].e))
			return false;
	return true;
}

static bool term_const(const DimTerm *t)
{
	for (int s = 0; s < IR_SYM_MAX; s++)
		if (t->e[s])
			return false;
	return true;
}

bool ir_dim_is_const(const DimExpr *e, int64_t *v)
{
	if (e->n > 1 || (e->n == 1 && !term_const(&e->t[0])))
		return false;
	if (v)
		*v = e->n ? e->t[0].c : 0;
	return true;
}

int64_t ir_dim_divisor(const DimExpr *e)
{
	uint64_t g = 0;
	for (int i = 0; i < e->n; i++) {
		uint64_t c = e->t[i].c < 0 ? -(uint64_t)e->t[i].c : (uint64_t)e->t[i].c;
		while (c) {
			uint64_t r = g % c;
			g = c;
			c = r;
		}
	}
	return g && g <= INT64_MAX ? (int64_t)g : 1;
}

bool ir_dim_is_sym(const DimExpr *e, int *s)
{
	if (e->n != 1 || e->t[0].c != 1)
		return false;
	int found = -1;
	for (int i = 0; i < IR_SYM_MAX; i++) {
		if (!e->t[0].e[i])
			continue;
		if (e->t[0].e[i] != 1 || found >= 0)
			return false;
		found = i;
	}
	if (found < 0)
		return false;
	*s = found;
	return true;
}

int ir_dim_eval(const DimExpr *e, const int64_t *val, int64_t *out)
{
	int64_t sum = 0;
	for (int i = 0; i < e->n; i++) {
		int64_t p = e->t[i].c;
		for (int s = 0; s < IR_SYM_MAX; s++)
			for (int k = 0; k < e->t[i].e[s]; k++)
				if (__builtin_mul_overflow(p, val[s], &p))
					return -1;
		if (__builtin_add_overflow(sum, p, &sum))
			return -1;
	}
	*out = sum;
	return 0;
}

void ir_dim_print(Buf *b, const DimExpr *e, const char *const *names)
{
	if (!e->n) {
		buf_putc(b, '0');
		return;
	}
	for (int i = 0; i < e->n; i++) {
		const DimTerm *t = &e->t[i];
		/* the magnitude, unsigned: a coefficient may be INT64_MIN (a plan's) */
		uint64_t c = t->c < 0 ? 0 - (uint64_t)t->c : (uint64_t)t->c;
		if (t->c < 0)
			buf_putc(b, '-');
		else if (i)
			buf_putc(b, '+');
		bool any = false;
		if (c != 1 || term_const(t)) {
			buf_printf(b, "%llu", (unsigned long long)c);
			any = true;
		}
		for (int s = 0; s < IR_SYM_MAX; s++)
			for (int k = 0; k < t->e[s]; k++) {
				if (any)
					buf_putc(b, '*');
				buf_puts(b, names[s]);
				any = true;
			}
	}
}

/* ---- parsing (a plan's sizes: docs/plan-format.md, "Format 2") ---- */

typedef struct {
	const char *s;
	const char *const *names;
	int nnames;
	int depth;
} DxParser;

static int parse_sum(DxParser *p, DimExpr *out);

static void skip_blanks(DxParser *p)
{
	while (*p->s == ' ')
		p->s++;
}

static int parse_factor(DxParser *p, DimExpr *out)
{
	skip_blanks(p);
	const char *q = p->s;
	if (*q == '(') {
		if (++p->depth > 32)
			return -1;
		p->s++;
		if (parse_sum(p, out))
			return -1;
		skip_blanks(p);
		if (*p->s != ')')
			return -1;
		p->s++;
		p->depth--;
		return 0;
	}
	if (*q >= '0' && *q <= '9') {
		int64_t v = 0;
		while (*q >= '0' && *q <= '9') {
			if (__builtin_mul_overflow(v, 10, &v) ||
			    __builtin_add_overflow(v, *q - '0', &v))
				return -1;
			q++;
		}
		p->s = q;
		*out = ir_dim_const(v);
		return 0;
	}
	size_t n = 0;
	while (q[n] == '_' || (q[n] >= 'a' && q[n] <= 'z') || (q[n] >= 'A' && q[n] <= 'Z') ||
	       (n && q[n] >= '0' && q[n] <= '9'))
		n++;
	for (int i = 0; n && i < p->nnames; i++)
		if (strlen(p->names[i]) == n && !memcmp(p->names[i], q, n)) {
			p->s = q + n;
			*out = ir_dim_sym(i);
			return 0;
		}
	return -1;
}

static int parse_product(DxParser *p, DimExpr *out)
{
	if (parse_factor(p, out))
		return -1;
	for (;;) {
		skip_blanks(p);
		if (*p->s != '*')
			return 0;
		p->s++;
		DimExpr f;
		if (parse_factor(p, &f) || ir_dim_mul(out, &f, out))
			return -1;
	}
}

static int parse_sum(DxParser *p, DimExpr *out)
{
	skip_blanks(p);
	bool neg = *p->s == '-';
	if (neg)
		p->s++;
	if (parse_product(p, out))
		return -1;
	DimExpr m1 = ir_dim_const(-1);
	if (neg && ir_dim_mul(out, &m1, out))
		return -1;
	for (;;) {
		skip_blanks(p);
		char op = *p->s;
		if (op != '+' && op != '-')
			return 0;
		p->s++;
		DimExpr t;
		if (parse_product(p, &t) || (op == '-' && ir_dim_mul(&t, &m1, &t)) ||
		    ir_dim_add(out, &t, out))
			return -1;
	}
}

int ir_dim_parse(const char *s, const char *const *names, int nnames, DimExpr *out)
{
	DxParser p = {s, names, nnames, 0};
	if (parse_sum(&p, out))
		return -1;
	skip_blanks(&p);
	return *p.s ? -1 : 0;
}
