/* npy.c: NumPy .npy files in and out, for `fusec run --inputs/--outputs`.
 *
 * The format: the magic "\x93NUMPY", a version (1.0: u16 header length; 2.0: u32),
 * then an ASCII Python dict literal {'descr': ..., 'fortran_order': ..., 'shape':
 * (...)} padded with spaces to a newline, then the raw data. The reader accepts
 * exactly that dict with its three keys in any order, little-endian descrs of our
 * dtypes, C order, and a data size equal to what the shape says; every size is
 * checked before it is used. The writer emits version 1.0 with the header padded so
 * the data starts at a multiple of 64 bytes, as NumPy does. bf16 is written as <f4
 * (exact), since NumPy has no bf16. The host must be little-endian. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "npy.c assumes a little-endian host"
#endif

static const struct {
	const char *descr;
	DType dtype;
} descrs[] = {
	{"<f8", DT_F64}, {"<f4", DT_F32}, {"<f2", DT_F16}, {"<i8", DT_I64},
	{"<i4", DT_I32}, {"<i2", DT_I16}, {"|i1", DT_I8}, {"|u1", DT_U8}, {"|b1", DT_BOOL},
};

static const char magic[6] = "\x93NUMPY";

/* ---- header parsing -------------------------------------------------------- */

typedef struct {
	const char *p, *end;
	const char *name;
	Diag *d;
} Hdr;

static int hdr_fail(Hdr *h, const char *what)
{
	diag_set(h->d, h->name, 0, 0, "malformed .npy header: %s", what);
	return -1;
}

static void hdr_space(Hdr *h)
{
	while (h->p < h->end && (*h->p == ' ' || *h->p == '\t'))
		h->p++;
}

static int hdr_char(Hdr *h, char c)
{
	hdr_space(h);
	if (h->p < h->end && *h->p == c) {
		h->p++;
		return 1;
	}
	return 0;
}

/* A quoted string (single or double quotes, no escapes) into buf. */
static int hdr_string(Hdr *h, char *buf, size_t size)
{
	hdr_space(h);
	if (h->p >= h->end || (*h->p != '\'' && *h->p != '"'))
		return hdr_fail(h, "expected a quoted string");
	char q = *h->p++;
	size_t n = 0;
	while (h->p < h->end && *h->p != q) {
		if (n + 1 >= size || *h->p == '\\')
			return hdr_fail(h, "string too long or escaped");
		buf[n++] = *h->p++;
	}
	if (h->p >= h->end)
		return hdr_fail(h, "unterminated string");
	h->p++;
	buf[n] = 0;
	return 0;
}

static int hdr_shape(Hdr *h, int *rank, int64_t *dim)
{
	if (!hdr_char(h, '('))
		return hdr_fail(h, "'shape' must be a tuple");
	*rank = 0;
	for (;;) {
		if (hdr_char(h, ')'))
			return 0;
		hdr_space(h);
		if (h->p >= h->end || *h->p < '0' || *h->p > '9')
			return hdr_fail(h, "shape entries must be non-negative integers");
		int64_t v = 0;
		while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
			if (__builtin_mul_overflow(v, 10, &v) ||
			    __builtin_add_overflow(v, *h->p - '0', &v))
				return hdr_fail(h, "shape entry overflows");
			h->p++;
		}
		if (h->p < h->end && *h->p == 'L')
			h->p++;
		if (*rank == IR_MAX_RANK)
			return hdr_fail(h, "shape has more than 8 dims");
		dim[(*rank)++] = v;
		if (!hdr_char(h, ',')) {
			if (!hdr_char(h, ')'))
				return hdr_fail(h, "expected ',' or ')' in shape");
			if (*rank == 1)
				return hdr_fail(h, "a one-element shape needs a trailing comma");
			return 0;
		}
	}
}

static int parse_header(Hdr *h, DType *dtype, int *rank, int64_t *dim)
{
	bool have_descr = false, have_order = false, have_shape = false;
	if (!hdr_char(h, '{'))
		return hdr_fail(h, "expected '{'");
	while (!hdr_char(h, '}')) {
		char key[32], val[32];
		if (hdr_string(h, key, sizeof key))
			return -1;
		if (!hdr_char(h, ':'))
			return hdr_fail(h, "expected ':' after a key");
		if (!strcmp(key, "descr") && !have_descr) {
			if (hdr_string(h, val, sizeof val))
				return -1;
			size_t i = 0;
			while (i < sizeof descrs / sizeof descrs[0] && strcmp(descrs[i].descr, val))
				i++;
			if (i == sizeof descrs / sizeof descrs[0]) {
				diag_set(h->d, h->name, 0, 0,
					 "unsupported .npy dtype '%s' (want little-endian "
					 "<f8 <f4 <f2 <i8 <i4 <i2 |i1 |u1 |b1)", val);
				return -1;
			}
			*dtype = descrs[i].dtype;
			have_descr = true;
		} else if (!strcmp(key, "fortran_order") && !have_order) {
			hdr_space(h);
			if ((size_t)(h->end - h->p) >= 5 && !memcmp(h->p, "False", 5)) {
				h->p += 5;
			} else if ((size_t)(h->end - h->p) >= 4 && !memcmp(h->p, "True", 4)) {
				diag_set(h->d, h->name, 0, 0,
					 "Fortran-order .npy arrays are not supported");
				return -1;
			} else {
				return hdr_fail(h, "'fortran_order' must be True or False");
			}
			have_order = true;
		} else if (!strcmp(key, "shape") && !have_shape) {
			if (hdr_shape(h, rank, dim))
				return -1;
			have_shape = true;
		} else {
			return hdr_fail(h, "unknown or repeated key");
		}
		if (!hdr_char(h, ',')) {
			if (!hdr_char(h, '}'))
				return hdr_fail(h, "expected ',' or '}'");
			break;
		}
	}
	if (!have_descr || !have_order || !have_shape)
		return hdr_fail(h, "needs 'descr', 'fortran_order' and 'shape'");
	hdr_space(h);
	if (h->p != h->end - 1 || *h->p != '\n')
		return hdr_fail(h, "must end with a newline after the dict");
	return 0;
}

/* Where the header dict of b[0..len) starts and how long it says it is, from the
 * magic and the version; len may end inside the dict. */
static int header_span(const char *name, const unsigned char *b, size_t len, size_t *start,
		       size_t *hlen, Diag *d)
{
	if (len < 10 || memcmp(b, magic, 6)) {
		diag_set(d, name, 0, 0, "not a .npy file (bad magic)");
		return -1;
	}
	if (b[6] == 1 && b[7] == 0) {
		*hlen = (size_t)b[8] | (size_t)b[9] << 8;
		*start = 10;
	} else if (b[6] == 2 && b[7] == 0) {
		if (len < 12) {
			diag_set(d, name, 0, 0, "truncated .npy header");
			return -1;
		}
		*hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 |
			(size_t)b[11] << 24;
		*start = 12;
	} else {
		diag_set(d, name, 0, 0, "unsupported .npy version %d.%d", b[6], b[7]);
		return -1;
	}
	return 0;
}

/* The header of b[0..len): dtype and shape; *data: where the data begins. */
static int read_header(const char *name, const unsigned char *b, size_t len, size_t *data,
		       DType *dtype, int *rank, int64_t *dim, Diag *d)
{
	size_t hlen, start;
	if (header_span(name, b, len, &start, &hlen, d))
		return -1;
	if (hlen == 0 || hlen > len - start) {
		diag_set(d, name, 0, 0, "truncated .npy header");
		return -1;
	}
	for (size_t i = 0; i < hlen; i++)
		if (b[start + i] < 0x20 && b[start + i] != '\n' && b[start + i] != '\t') {
			diag_set(d, name, 0, 0, "malformed .npy header: control character");
			return -1;
		}
	Hdr h = {(const char *)b + start, (const char *)b + start + hlen, name, d};
	*dtype = DT_F32;
	*rank = 0;
	memset(dim, 0, sizeof(int64_t) * IR_MAX_RANK);
	*data = start + hlen;
	return parse_header(&h, dtype, rank, dim);
}

int npy_read_mem(const char *name, const void *buf, size_t len, HostTensor *out, Diag *d)
{
	const unsigned char *b = buf;
	memset(out, 0, sizeof *out);
	size_t start;
	DType dtype;
	int rank;
	int64_t dim[IR_MAX_RANK];
	if (read_header(name, b, len, &start, &dtype, &rank, dim, d))
		return -1;
	HostTensor t;
	if (host_alloc(&t, dtype, rank, dim, d)) {
		snprintf(d->file, sizeof d->file, "%s", name);
		return -1;
	}
	size_t bytes = (size_t)t.n * (size_t)ir_dtype_size(dtype);
	size_t avail = len - start;
	if (avail != bytes) {
		diag_set(d, name, 0, 0, ".npy data is %zu bytes; shape and dtype need %zu",
			 avail, bytes);
		host_free(&t);
		return -1;
	}
	memcpy(t.data, b + start, bytes);
	if (dtype == DT_BOOL)
		for (int64_t i = 0; i < t.n; i++)
			if (((uint8_t *)t.data)[i] > 1) {
				diag_set(d, name, 0, 0, "bool element %lld is %d, not 0 or 1",
					 (long long)i, ((uint8_t *)t.data)[i]);
				host_free(&t);
				return -1;
			}
	*out = t;
	return 0;
}

int npy_read_shape(const char *path, DType *dtype, int *rank, int64_t *dim, Diag *d)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		diag_set(d, path, 0, 0, "cannot open: %s", strerror(errno));
		return -1;
	}
	struct stat sb;
	if (fstat(fileno(f), &sb) == 0 && !S_ISREG(sb.st_mode)) {
		diag_set(d, path, 0, 0, "not a regular file (%s)", file_kind(sb.st_mode));
		fclose(f);
		return -1;
	}
	/* the header alone, not the data: the magic and version say its length */
	unsigned char head[12], *b = NULL;
	size_t n = fread(head, 1, sizeof head, f), start, hlen;
	int rc = -1;
	if (!ferror(f) && !header_span(path, head, n, &start, &hlen, d)) {
		size_t want = start + hlen < ((size_t)1 << 24) ? start + hlen : (size_t)1 << 24;
		b = xmalloc(want > n ? want : n);
		memcpy(b, head, n);
		if (want > n)
			n += fread(b + n, 1, want - n, f);
		if (!ferror(f))
			rc = read_header(path, b, n, &start, dtype, rank, dim, d);
	}
	if (ferror(f))
		diag_set(d, path, 0, 0, "cannot read: %s", strerror(errno));
	free(b);
	fclose(f);
	return rc;
}

int npy_read_file(const char *path, HostTensor *out, Diag *d)
{
	memset(out, 0, sizeof *out);
	size_t len = 0;
	char *bytes = read_regular_file(path, 0, &len, d);   /* not /dev/zero, a FIFO */
	if (!bytes)
		return -1;
	int rc = npy_read_mem(path, bytes, len, out, d);
	free(bytes);
	return rc;
}

/* ---- writing --------------------------------------------------------------- */

void npy_write_buf(Buf *b, const HostTensor *t)
{
	DType dt = t->dtype == DT_BF16 ? DT_F32 : t->dtype;
	const char *descr = "?";
	for (size_t i = 0; i < sizeof descrs / sizeof descrs[0]; i++)
		if (descrs[i].dtype == dt)
			descr = descrs[i].descr;
	Buf h = {0};
	buf_printf(&h, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
	for (int i = 0; i < t->rank; i++)
		buf_printf(&h, i ? ", %lld" : "%lld", (long long)t->dim[i]);
	buf_puts(&h, t->rank == 1 ? ",), }" : "), }");
	while ((10 + h.len + 1) % 64)
		buf_putc(&h, ' ');
	buf_putc(&h, '\n');
	buf_write(b, magic, 6);
	unsigned char v[4] = {1, 0, (unsigned char)(h.len & 0xff), (unsigned char)(h.len >> 8)};
	buf_write(b, v, 4);
	buf_write(b, h.data, h.len);
	buf_free(&h);
	if (t->dtype == DT_BF16) {
		for (int64_t i = 0; i < t->n; i++) {
			float f = (float)host_get(t, i);
			buf_write(b, &f, sizeof f);
		}
	} else if (t->n) {
		buf_write(b, t->data, (size_t)t->n * (size_t)ir_dtype_size(t->dtype));
	}
}

int npy_write_file(const char *path, const HostTensor *t, Diag *d)
{
	/* a pipe, a device or a socket in the way is refused, not replaced; a symbolic
	 * link is replaced (the link, never the file it names) */
	struct stat st;
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
		diag_set(d, path, 0, 0, "cannot write: it is %s, not a regular file",
			 file_kind(st.st_mode));
		return -1;
	}
	Buf b = {0};
	npy_write_buf(&b, t);
	/* a fresh name beside it (O_EXCL: never a file or link someone put there) */
	char *prefix = file_dir_prefix(path);
	FileReplace r;
	int fd = file_replace_begin(&r, prefix);
	int err = fd < 0 ? errno : 0;
	if (fd >= 0) {
		err = file_write_all(fd, b.data, b.len) ? errno : 0;
		if (close(fd) && !err)
			err = errno;
		if (file_replace_end(&r, path, !err, 0) && !err)
			err = errno;
	}
	if (err)
		diag_set(d, path, 0, 0, "cannot write: %s", strerror(err));
	free(prefix);
	buf_free(&b);
	return err ? -1 : 0;
}

const char *npy_path(char *buf, size_t size, const char *dir, const char *name)
{
	int n = snprintf(buf, size, "%s/", dir);
	size_t k = n < 0 ? 0 : (size_t)n;
	for (const char *p = name; *p && k + 5 < size; p++, k++) {
		char c = *p;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '_' || c == '-' || (c == '.' && p != name);
		buf[k] = ok ? c : '_';
	}
	snprintf(buf + k, size - k, ".npy");
	return buf;
}

typedef struct {
	const char *file;      /* the name as npy_path makes it */
	int i;                 /* index into the caller's arrays */
} NpyName;

static int npy_name_cmp(const void *a, const void *b)
{
	const NpyName *x = a, *y = b;
	int c = strcmp(x->file, y->file);
	return c ? c : (x->i > y->i) - (x->i < y->i);
}

int npy_check_names(const char *dir, const char *const *names, const char *const *labels,
		    int n, size_t size, const char *opt, const char *verb, Diag *d)
{
	NpyName *v = xcalloc((size_t)n + 1, sizeof *v);
	int rc = 0;
	for (int i = 0; i < n; i++) {
		size_t len = strlen(dir) + strlen(names[i]) + 6;
		char *p = xmalloc(len);
		v[i] = (NpyName){npy_path(p, len, dir, names[i]), i};
		/* npy_path cuts a name that does not fit: a cut name could be another's */
		if (len - 1 >= size && !rc) {
			diag_set(d, "", 0, 0, "%s: the file name of '%s' would be longer than %zu "
				 "bytes", opt, labels ? labels[i] : names[i], size - 1);
			rc = -1;
		}
	}
	if (!rc)
		qsort(v, (size_t)n, sizeof *v, npy_name_cmp);
	/* of the clashes, the one of the earliest name in the caller's order */
	int best = 0;
	for (int k = 1; k < n && !rc; k++)
		if (!strcmp(v[k - 1].file, v[k].file) && (!best || v[k - 1].i < v[best - 1].i))
			best = k;
	if (best) {
		const char *a = labels ? labels[v[best - 1].i] : names[v[best - 1].i];
		const char *b = labels ? labels[v[best].i] : names[v[best].i];
		diag_set(d, "", 0, 0, "%s: '%s' and '%s' would both be %s %s (characters outside "
			 "[A-Za-z0-9._-] become _); rename one of them", opt, a, b, verb,
			 v[best].file);
		rc = -1;
	}
	for (int i = 0; i < n; i++)
		free((char *)v[i].file);
	free(v);
	return rc;
}
