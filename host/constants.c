/* constants.c: the values of a graph file's constants (docs/graph-format.md).
 *
 * ir/build.c reads a `constants` entry into a ConstSource (inline values, or the
 * path of a .npy file beside the graph) without touching host tensors; this turns
 * each into Tensor.data, in the graph's arena, as the dtype stores it (floats
 * rounded to nearest even, ints wrapped, as host_set does). A .npy file must hold
 * exactly the constant's dtype and shape (bf16 constants read <f4 files).
 *
 * A .npy file is read once, and the result cache records the SHA-256 of those very
 * bytes (a file rewritten during a compile must not pair old outputs with its new
 * hash). It must be a regular file inside the graph's folder reached through no
 * symbolic link, to a file or to a folder: a graph cannot pull some other file
 * into NAME.weights.bin (docs/reliability.md). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host.h"

/* Why component name of folder fd could not be opened: a link is named as one. */
static void open_failed(int fd, const char *name, const char *path, size_t upto, Diag *d)
{
	int err = errno;
	struct stat sb;
	if (fstatat(fd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(sb.st_mode)) {
		if (path[upto])
			diag_set(d, path, 0, 0, "'%.*s' is a symbolic link: a constant's file must "
				 "lie inside the graph's folder, reached through no link", (int)upto,
				 path);
		else
			diag_set(d, path, 0, 0, "is a symbolic link: a constant's file must be a "
				 "regular file inside the graph's folder, not a link (copy it there)");
	} else {
		diag_set(d, path, 0, 0, "cannot open: %s", strerror(err));
	}
}

char *host_read_constant_file(const char *graph_file, const char *rel, const char *path,
			      size_t *len, Diag *d)
{
	const char *slash = strrchr(graph_file, '/');
	char *dir = slash ? strndup(graph_file, (size_t)(slash - graph_file) + 1) : strdup(".");
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (fd < 0) {
		diag_set(d, path, 0, 0, "cannot open its folder: %s", strerror(errno));
		return NULL;
	}
	/* one component at a time, none of them a link; path's tail is rel */
	size_t base = strlen(path) - strlen(rel);
	for (const char *p = rel; fd >= 0;) {
		const char *end = strchr(p, '/');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		char *name = strndup(p, n);
		if (!end) {
			int f = openat(fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
			if (f < 0)
				open_failed(fd, name, path, base + (size_t)(p - rel) + n, d);
			free(name);
			close(fd);
			fd = f;
			break;
		}
		if (n && strcmp(name, ".")) {
			int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0)
				open_failed(fd, name, path, base + (size_t)(p - rel) + n, d);
			close(fd);
			fd = sub;
		}
		free(name);
		p = end + 1;
	}
	if (fd < 0)
		return NULL;
	struct stat sb;
	if (fstat(fd, &sb) != 0) {
		diag_set(d, path, 0, 0, "cannot read: %s", strerror(errno));
		close(fd);
		return NULL;
	}
	if (!S_ISREG(sb.st_mode)) {
		diag_set(d, path, 0, 0, "not a regular file (%s)",
			 S_ISDIR(sb.st_mode) ? "a folder" : S_ISCHR(sb.st_mode) ? "a device" :
			 S_ISFIFO(sb.st_mode) ? "a pipe" : "a special file");
		close(fd);
		return NULL;
	}
	/* to the end, which may lie past the size fstat saw */
	size_t cap = (size_t)sb.st_size + 1, got = 0;
	char *bytes = xmalloc(cap + 1);
	for (;;) {
		if (got == cap)
			bytes = xrealloc(bytes, (cap *= 2) + 1);
		ssize_t r = read(fd, bytes + got, cap - got);
		if (r == 0)
			break;
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			diag_set(d, path, 0, 0, "cannot read: %s", strerror(errno));
			free(bytes);
			close(fd);
			return NULL;
		}
		got += (size_t)r;
	}
	close(fd);
	bytes[got] = 0;
	*len = got;
	return bytes;
}

static int load_one(Graph *g, Tensor *t, Diag *d)
{
	const ConstSource *src = t->src;
	HostTensor h;
	if (src->npy) {
		size_t len;
		char *bytes = host_read_constant_file(g->file, src->npy_rel, src->npy, &len, d);
		if (!bytes)
			return -1;
		sha256_hex(bytes, len, src->npy_sha256);
		int bad = npy_read_mem(src->npy, bytes, len, &h, d);
		free(bytes);
		if (bad)
			return -1;
		if (h.dtype == DT_F32 && t->dtype == DT_BF16) {
			HostTensor c;
			if (host_alloc(&c, DT_BF16, h.rank, h.dim, d)) {
				host_free(&h);
				return -1;
			}
			for (int64_t k = 0; k < h.n; k++)
				host_set(&c, k, host_get(&h, k));
			host_free(&h);
			h = c;
		}
		bool same = h.dtype == t->dtype && h.rank == t->rank &&
			    !memcmp(h.dim, t->dim, sizeof(int64_t) * (size_t)t->rank);
		if (!same) {
			char want[96], got[96];
			host_shape_text(t->dtype, t->rank, t->dim, want, sizeof want);
			host_shape_text(h.dtype, h.rank, h.dim, got, sizeof got);
			host_free(&h);
			diag_set(d, g->file, src->line, src->col,
				 "constants.%s: %s holds %s, the constant is %s", t->name, src->npy,
				 got, want);
			return -1;
		}
	} else {
		if (host_alloc(&h, t->dtype, t->rank, t->dim, d))
			return -1;
		for (int64_t k = 0; k < h.n; k++) {
			if (src->ivalues)
				host_set_i64(&h, k, src->ivalues[k]);
			else
				host_set(&h, k, src->values[k]);
		}
	}
	size_t bytes = (size_t)h.n * (size_t)ir_dtype_size(h.dtype);
	void *data = arena_alloc(g->arena, bytes ? bytes : 1);
	memcpy(data, h.data, bytes);
	host_free(&h);
	t->data = data;
	return 0;
}

int host_load_constants(Graph *g, Diag *d)
{
	for (int i = 0; i < g->ntensors; i++) {
		Tensor *t = &g->tensors[i];
		if (t->src && !t->data && load_one(g, t, d))
			return -1;
	}
	return 0;
}
