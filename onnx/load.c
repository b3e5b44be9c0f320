/* load.c: ONNX files in: the model file mapped (a regular file of at most
 * MAX_MODEL_BYTES) and handed with its folder, where its external data lies, to
 * import.c; the external data files a model names (compile -M); the shapes given
 * on the command line; whether a file looks like ONNX. */
#define _DEFAULT_SOURCE   /* MAP_POPULATE, where the system has it */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx.pb-c.h"
#include "onnx_impl.h"

enum { MAX_MODEL_BYTES = 1 << 30 };

bool onnx_sniff(const char *path, const void *head, size_t n)
{
	size_t len = strlen(path);
	if (len >= 5 && !strcmp(path + len - 5, ".onnx"))
		return true;
	return n > 0 && ((const unsigned char *)head)[0] == 0x08;
}

/* ---- shapes given on the command line ----------------------------------------- */

/* ---- models ----------------------------------------------------------------- */

Graph *onnx_read_mem(Arena *a, const char *file, const void *buf, size_t len,
		     const OnnxOptions *o, Diag *d)
{
	return onnx_import_bytes(a, file, NULL, buf, len, false, o, d);
}

static char *folder_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	size_t n = (size_t)(slash - path);
	char *s = xmalloc(n + 1);
	memcpy(s, path, n);
	s[n] = 0;
	return s;
}

Graph *onnx_read_file(Arena *a, const char *path, const OnnxOptions *o, Diag *d)
{
	/* O_NONBLOCK: a FIFO fails below as not a regular file, without waiting for
	 * a writer in open */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st)) {
		diag_set(d, path, 0, 0, "cannot open: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		diag_set(d, path, 0, 0, "not a regular file (%s)",
			 S_ISDIR(st.st_mode) ? "a folder" : S_ISFIFO(st.st_mode) ? "a pipe"
			 : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" : "not a file");
		return NULL;
	}
	if ((uint64_t)st.st_size > MAX_MODEL_BYTES) {
		close(fd);
		diag_set(d, path, 0, 0,
			 "model is larger than %d MiB (keep large weights as external data)",
			 MAX_MODEL_BYTES >> 20);
		return NULL;
	}
	/* mapped, not read: the protobuf is unpacked straight from the page cache */
	size_t n = (size_t)st.st_size;
#ifndef MAP_POPULATE
#define MAP_POPULATE 0
#endif
	void *buf = n ? mmap(NULL, n, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0) : NULL;
	close(fd);
	if (n && buf == MAP_FAILED) {
		diag_set(d, path, 0, 0, "cannot read: %s", strerror(errno));
		return NULL;
	}
	char *dir = folder_of(path);
	Graph *g = onnx_import_bytes(a, path, dir, n ? buf : "", n, false, o, d);
	free(dir);
	if (n)
		munmap(buf, n);
	return g;
}

/* ---- the files a model reads (compile -M) -------------------------------------- */

static void add_external(Arena *a, const Onnx__TensorProto *tp, const char *dir,
			 const char ***files, int *n, int *cap)
{
	if (!tp || !tp->has_data_location ||
	    tp->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
		return;
	for (size_t i = 0; i < tp->n_external_data; i++) {
		const Onnx__StringStringEntryProto *e = tp->external_data[i];
		if (!e->key || !e->value || strcmp(e->key, "location") || !onnx_safe_location(e->value))
			continue;
		const char *path = strcmp(dir, ".") ? arena_printf(a, "%s/%s", dir, e->value)
						    : arena_strdup(a, e->value);
		for (int k = 0; k < *n; k++)
			if (!strcmp((*files)[k], path))
				return;
		if (*n == *cap) {
			*cap = *cap ? 2 * *cap : 8;
			const char **grown = ARENA_NEW(a, const char *, (size_t)*cap);
			if (*n)
				memcpy(grown, *files, sizeof *grown * (size_t)*n);
			*files = grown;
		}
		(*files)[(*n)++] = path;
	}
}

int onnx_external_files(Arena *a, const char *path, const char ***files)
{
	*files = NULL;
	Diag d;
	size_t len;
	char *buf = read_regular_file(path, (size_t)MAX_MODEL_BYTES + 1, &len, &d);
	if (!buf)
		return 0;
	char msg[200];
	Onnx__ModelProto *mp = onnx_unpack(NULL, buf, len, msg, sizeof msg);
	free(buf);
	if (!mp)
		return 0;
	char *dir = folder_of(path);
	int n = 0, cap = 0;
	const Onnx__GraphProto *gp = mp->graph;
	for (size_t i = 0; gp && i < gp->n_initializer; i++)
		add_external(a, gp->initializer[i], dir, files, &n, &cap);
	for (size_t i = 0; gp && i < gp->n_node; i++)
		for (size_t j = 0; j < gp->node[i]->n_attribute; j++) {
			const Onnx__AttributeProto *at = gp->node[i]->attribute[j];
			add_external(a, at->t, dir, files, &n, &cap);
			for (size_t k = 0; k < at->n_tensors; k++)
				add_external(a, at->tensors[k], dir, files, &n, &cap);
		}
	free(dir);
	onnx__model_proto__free_unpacked(mp, NULL);
	return n;
}
