/* import.c: `fusec import MODEL -o GRAPH.json|GRAPH.yaml` writes any graph fusec
 * reads (an ONNX model, or a fusec-graph/1 file) as a fusec-graph/1 document that
 * people can read and edit (docs/graph-format.md).
 *
 * Constants of at most INLINE_MAX elements are written inline (`data`); larger
 * ones go to .npy files in GRAPH.data/ beside the output (`npy`). Strings are
 * written JSON-escaped, which YAML reads the same in double quotes; non-finite
 * numbers as the strings "nan", "inf", "-inf". The output is a function of the
 * graph: no dates, no hash order.
 *
 * All or nothing: OUT.data is staged whole in a temporary folder beside it (the
 * files it held linked in, the new .npy files written over them), OUT under a
 * temporary name; then the staged folder is exchanged with OUT.data and OUT renamed
 * into place. A failure at any step leaves OUT and OUT.data as they were. */
#define _GNU_SOURCE   /* renameat2 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../host/host.h"
#include "cmd.h"

enum { INLINE_MAX = 64 };

static const char import_usage[] =
	"usage: fusec import GRAPH [-o OUT.json|OUT.yaml]\n"
	"\n"
	"Write GRAPH (an ONNX model or a fusec-graph/1 file) as a fusec-graph/1 document:\n"
	"JSON, or YAML when OUT ends in .yaml or .yml; standard output (JSON) without -o.\n"
	"Constants of more than 64 elements go to OUT.data/*.npy beside OUT.\n"
	"\n"
	"options:\n"
	"  -o, --output OUT      the file to write\n"
	"  --input-shape N=DxD   fix a symbolic input dim of an ONNX model\n"
	"\n"
	"exit status: 0 success, 1 invalid input, 2 usage error, 3 write failure.\n";

static void str(Buf *b, const char *s)
{
	buf_putc(b, '"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			buf_printf(b, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			buf_printf(b, "\\u%04x", *p);
		else
			buf_putc(b, (char)*p);
	}
	buf_putc(b, '"');
}

static void num(Buf *b, double v)
{
	if (isnan(v)) {
		buf_puts(b, "\"nan\"");
	} else if (isinf(v)) {
		buf_puts(b, v > 0 ? "\"inf\"" : "\"-inf\"");
	} else {
		char t[40];
		fmt_double(t, sizeof t, v);
		buf_puts(b, t);
	}
}

static void ints(Buf *b, const int64_t *v, int n)
{
	buf_putc(b, '[');
	for (int i = 0; i < n; i++)
		buf_printf(b, i ? ", %lld" : "%lld", (long long)v[i]);
	buf_putc(b, ']');
}

static void pair(Buf *b, const int *v)
{
	buf_printf(b, "[%d, %d]", v[0], v[1]);
}

/* `"key": ` in JSON, `key: ` in YAML (keys are plain words). */
static void key(Buf *b, bool yaml, const char *k)
{
	if (yaml)
		buf_printf(b, "%s: ", k);
	else
		buf_printf(b, "\"%s\": ", k);
}

static void attrs(Buf *b, bool yaml, const Op *op)
{
	const Attrs *a = op->attr;
	unsigned bits = ir_ops[op->kind].required | ir_ops[op->kind].optional;
	if (!a)
		return;
	for (int i = 0; i < A_COUNT_; i++) {
		unsigned bit = 1u << i;
		if (!(bits & bit) || (bit == A_LAYOUT && a->layout == LAYOUT_NCHW) ||
		    (bit == A_CAUSAL && !a->causal) || (bit == A_ZERO_NAN && !a->zero_nan))
			continue;
		buf_puts(b, ", ");
		key(b, yaml, ir_attr_name(bit));
		switch (bit) {
		case A_SCALAR: num(b, a->scalar); break;
		case A_MIN: num(b, a->min); break;
		case A_MAX: num(b, a->max); break;
		case A_DTYPE: str(b, ir_dtype_name(a->dtype)); break;
		case A_SHAPE: ints(b, a->shape, a->n); break;
		case A_AXES:
		case A_DIMS: {
			int64_t v[IR_MAX_RANK];
			int n = bit == A_DIMS ? 2 : a->n;
			for (int k = 0; k < n; k++)
				v[k] = a->axes[k];
			ints(b, v, n);
			break;
		}
		case A_RANGES:
			buf_putc(b, '[');
			for (int k = 0; k < a->n; k++)
				buf_printf(b, k ? ", [%lld, %lld]" : "[%lld, %lld]",
					   (long long)a->range[k][0], (long long)a->range[k][1]);
			buf_putc(b, ']');
			break;
		case A_AXIS: buf_printf(b, "%d", a->axis); break;
		case A_STRIDE: pair(b, a->stride); break;
		case A_PADDING: pair(b, a->padding); break;
		case A_DILATION: pair(b, a->dilation); break;
		case A_KERNEL: pair(b, a->kernel); break;
		case A_GROUPS: buf_printf(b, "%d", a->groups); break;
		case A_APPROX: str(b, a->approx == GELU_TANH ? "tanh" : "none"); break;
		case A_LAYOUT: str(b, "nhwc"); break;
		case A_CAUSAL: buf_printf(b, "%lld", (long long)a->causal - 1); break;
		case A_ZERO_NAN: buf_puts(b, "true"); break;
		}
	}
}

static int64_t count_of(const Tensor *t)
{
	int64_t n = 1;
	for (int i = 0; i < t->rank; i++)
		n *= t->dim[i];
	return n;
}

/* The constant's data: inline, or a .npy file written into stage, the staging
 * folder of datadir (named in the graph as datarel/FILE). */
static int constant(Buf *b, bool yaml, const Tensor *t, int index, const char *stage,
		    const char *datadir, const char *datarel, Arena *a)
{
	HostTensor v = {.dtype = t->dtype, .rank = t->rank, .n = count_of(t),
			.data = (void *)t->data};
	memcpy(v.dim, t->dim, sizeof v.dim);
	key(b, yaml, "dtype");
	str(b, ir_dtype_name(t->dtype));
	buf_puts(b, ", ");
	key(b, yaml, "shape");
	ints(b, t->dim, t->rank);
	buf_puts(b, ", ");
	if (v.n <= INLINE_MAX || !stage) {
		key(b, yaml, "data");
		buf_putc(b, '[');
		for (int64_t k = 0; k < v.n; k++) {
			if (k)
				buf_puts(b, ", ");
			if (ir_dtype_is_float(t->dtype))
				num(b, host_get(&v, k));
			else
				buf_printf(b, "%lld", (long long)host_get_i64(&v, k));
		}
		buf_putc(b, ']');
		return 0;
	}
	char *base = arena_printf(a, "c%d_%s.npy", index, t->name);
	for (char *p = base; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' || *p == '.'))
			*p = '_';
	Diag d;
	if (npy_write_file(arena_printf(a, "%s/%s", stage, base), &v, &d)) {
		/* named as it would be published */
		snprintf(d.file, sizeof d.file, "%.200s/%.50s", datadir, base);
		cmd_print_diag(&d);
		return -1;
	}
	key(b, yaml, "npy");
	str(b, arena_printf(a, "%s/%s", datarel, base));
	return 0;
}

static int write_graph(Buf *b, const Graph *g, bool yaml, const char *stage,
		       const char *datadir, const char *datarel, Arena *a)
{
	const char *nl = yaml ? "\n" : ",\n";
	if (yaml)
		buf_printf(b, "format: fusec-graph/1\nname: ");
	else
		buf_printf(b, "{\n\"format\": \"fusec-graph/1\",\n\"name\": ");
	str(b, g->name);
	buf_puts(b, nl);
	int nin = 0, nconst = 0;
	for (int i = 0; i < g->ninputs; i++)
		g->tensors[g->inputs[i]].data ? nconst++ : nin++;
	buf_puts(b, yaml ? (nin ? "inputs:\n" : "inputs: {}\n") : "\"inputs\": {");
	for (int i = 0, k = 0; i < g->ninputs; i++) {
		const Tensor *t = &g->tensors[g->inputs[i]];
		if (t->data)
			continue;
		buf_puts(b, yaml ? "  " : k ? ",\n  " : "\n  ");
		k++;
		str(b, t->name);
		buf_puts(b, yaml ? ": {" : ": {");
		key(b, yaml, "dtype");
		str(b, ir_dtype_name(t->dtype));
		buf_puts(b, ", ");
		key(b, yaml, "shape");
		ints(b, t->dim, t->rank);
		buf_puts(b, yaml ? "}\n" : "}");
	}
	if (!yaml)
		buf_puts(b, nin ? "\n},\n" : "},\n");
	if (nconst) {
		buf_puts(b, yaml ? "constants:\n" : "\"constants\": {");
		for (int i = 0, k = 0; i < g->ninputs; i++) {
			const Tensor *t = &g->tensors[g->inputs[i]];
			if (!t->data)
				continue;
			buf_puts(b, yaml ? "  " : k ? ",\n  " : "\n  ");
			str(b, t->name);
			buf_puts(b, ": {");
			if (constant(b, yaml, t, k, stage, datadir, datarel, a))
				return -1;
			k++;
			buf_puts(b, yaml ? "}\n" : "}");
		}
		if (!yaml)
			buf_puts(b, "\n},\n");
	}
	buf_puts(b, yaml ? (g->nops ? "ops:\n" : "ops: []\n") : "\"ops\": [");
	for (int i = 0; i < g->nops; i++) {
		const Op *op = &g->ops[i];
		buf_puts(b, yaml ? "  - {" : i ? ",\n  {" : "\n  {");
		key(b, yaml, "op");
		str(b, ir_ops[op->kind].file);
		if (op->kind != OP_SYNC) {
			buf_puts(b, ", ");
			key(b, yaml, "in");
			buf_putc(b, '[');
			for (int k = 0; k < op->nin; k++) {
				if (k)
					buf_puts(b, ", ");
				str(b, g->tensors[op->in[k]].name);
			}
			buf_puts(b, "], ");
			key(b, yaml, "out");
			str(b, g->tensors[op->out[0]].name);
		}
		if (op->stream) {
			buf_puts(b, ", ");
			key(b, yaml, "stream");
			buf_printf(b, "%d", op->stream);
		}
		if (op->name) {
			buf_puts(b, ", ");
			key(b, yaml, "name");
			str(b, op->name);
		}
		attrs(b, yaml, op);
		buf_puts(b, yaml ? "}\n" : "}");
	}
	if (!yaml)
		buf_puts(b, g->nops ? "\n],\n" : "],\n");
	buf_puts(b, yaml ? "outputs: [" : "\"outputs\": [");
	for (int i = 0; i < g->noutputs; i++) {
		if (i)
			buf_puts(b, ", ");
		str(b, g->tensors[g->outputs[i]].name);
	}
	buf_puts(b, yaml ? "]\n" : "]\n}\n");
	return 0;
}

/* Remove a folder of files (a staging folder: flat; a symbolic link in its place is
 * unlinked, never followed), and forget the step that removes it on a signal. */
static void remove_flat(const char *dir, UndoStep *undo)
{
	dir_remove_flat(dir);
	undo_drop(undo);
}

/* A staging folder for datadir: a fresh folder beside it holding a hard link to
 * each file datadir has (so files this import does not write stay), or NULL
 * (message printed). A folder inside datadir is not copied: refused. datadir is
 * never followed through a symbolic link (cmd_import refuses one). The staging
 * folder is registered to be removed on a signal (*undo). */
static char *stage_data(Arena *a, const char *datadir, UndoStep **undo)
{
	char *prefix = arena_printf(a, "%s.fusec-", datadir);
	char *made = dir_temp(prefix, undo);
	if (!made) {
		cmd_error("cannot create a folder beside '%s': %s", datadir, strerror(errno));
		return NULL;
	}
	char *stage = arena_strdup(a, made);
	free(made);
	int dfd = open(datadir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d && dfd < 0 && errno == ENOENT)
		return stage;
	if (!d) {
		cmd_error("cannot read '%s': %s", datadir, strerror(errno));
		if (dfd >= 0)
			close(dfd);
		remove_flat(stage, *undo);
		return NULL;
	}
	struct dirent *e;
	const char *bad = NULL;
	int err = 0;
	while (!bad && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) || S_ISDIR(st.st_mode) ||
		    linkat(dirfd(d), e->d_name, AT_FDCWD, arena_printf(a, "%s/%s", stage, e->d_name),
			   0)) {
			err = S_ISDIR(st.st_mode) ? EISDIR : errno;
			bad = arena_strdup(a, e->d_name);
		}
	}
	closedir(d);
	if (bad) {
		cmd_error("cannot keep '%s/%s' in the new constants folder: %s", datadir, bad,
			  strerror(err));
		remove_flat(stage, *undo);
		return NULL;
	}
	return stage;
}

/* Exchange the folders a and b (b may not exist: then a is renamed to b, and
 * *created set). 0, or -1 with errno. */
static int exchange(const char *a, const char *b, bool *created)
{
	if (!renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE))
		return 0;
	if (errno == ENOENT) {
		*created = true;
		return renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_NOREPLACE);
	}
	return -1;
}

/* OUT as given to -o: a regular file or a new name is replaced by a rename (below);
 * anything else (/dev/stdout, a pipe, a symbolic link) is opened here to be written
 * in place, never replaced (*in_place); a folder is refused. */
static int open_out(const char *out, int *in_place)
{
	struct stat st;
	*in_place = -1;
	if (lstat(out, &st) != 0 || S_ISREG(st.st_mode))
		return EXIT_OK;
	if (S_ISDIR(st.st_mode)) {
		cmd_error("cannot write '%s': it is a folder", out);
		return EXIT_FAIL;
	}
	*in_place = file_open_in_place(out);
	if (*in_place < 0) {
		cmd_error("cannot write '%s': %s", out,
			  errno == EPIPE ? "it is a pipe that no process reads" : strerror(errno));
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

/* OUT.data is replaced whole, so it must be a folder (or not exist): a symbolic
 * link there is refused, never followed (the files of the folder it names would be
 * taken for OUT.data's). */
static int check_datadir(const char *datadir)
{
	struct stat st;
	if (lstat(datadir, &st) != 0 || S_ISDIR(st.st_mode))
		return EXIT_OK;
	if (S_ISLNK(st.st_mode))
		cmd_error("cannot write the constants to '%s': it is a symbolic link; fusec "
			  "replaces that folder whole and does not follow a link there (remove "
			  "the link, or import into the folder it names)", datadir);
	else
		cmd_error("cannot write the constants to '%s': it is %s, not a folder", datadir,
			  file_kind(st.st_mode));
	return EXIT_FAIL;
}

/* Publish the graph text b as OUT and the staged folder *stage (when there is one)
 * as OUT.data: the constants first, then the graph that names them; undone on
 * failure, and on a signal (the undo list). A failed write (a full disk) leaves the
 * previous OUT as it was. *stage becomes NULL when it is OUT.data now (nothing old
 * to remove). */
static int publish(Arena *a, const char *out, const Buf *b, char **stage, const char *datadir,
		   int in_place)
{
	/* written beside OUT under a fresh name, then renamed over it */
	char *tmp = NULL;
	UndoStep *tmp_undo = NULL;
	int err = 0;
	if (in_place < 0) {
		int fd = file_temp(arena_printf(a, "%s.fusec-", out), &tmp, &tmp_undo);
		if (fd < 0) {
			err = errno;
		} else {
			if (file_write_all(fd, b->data, b->len))
				err = errno;
			if (close(fd) && !err)
				err = errno;
		}
	}
	bool created = false, swapped = false;
	UndoStep *swap_undo = NULL;
	if (err) {
		cmd_error("cannot write '%s': %s", out, strerror(err));
	} else if (*stage) {
		undo_hold();
		swapped = exchange(*stage, datadir, &created) == 0;
		err = swapped ? 0 : errno;
		if (swapped)
			swap_undo = created ? undo_push(UNDO_CLEAR_DIR, datadir, NULL)
					    : undo_push(UNDO_EXCHANGE, *stage, datadir);
		undo_release();
		if (!swapped)
			cmd_error("cannot replace '%s': %s", datadir, strerror(err));
	}
	/* FUSEC_TEST_RENAME_DELAY_MS=N: wait N ms here, between the constants and the
	 * graph, for the signal tests (tests/cli/t_harden_files.sh) */
	const char *delay = getenv("FUSEC_TEST_RENAME_DELAY_MS");
	int delay_ms = delay ? atoi(delay) : 0;
	if (!err && delay_ms > 0 && delay_ms <= 10000)
		nanosleep(&(struct timespec){delay_ms / 1000, (delay_ms % 1000) * 1000000L}, NULL);
	if (!err) {
		int rc;
		if (in_place >= 0) {
			rc = file_write_in_place(in_place, b->data, b->len);
			err = rc ? errno : 0;
			undo_hold();
		} else {
			undo_hold();
			rc = rename(tmp, out);
			err = rc ? errno : 0;
		}
		if (!err) {
			undo_drop(swap_undo);
			undo_drop(tmp_undo);
			swap_undo = tmp_undo = NULL;
		}
		undo_release();
		if (err)
			cmd_error("cannot write '%s': %s", out, strerror(err));
	}
	if (err && swapped && (created ? rename(datadir, *stage) : exchange(*stage, datadir, &created)))
		cmd_error("cannot put back '%s': %s", datadir, strerror(errno));
	undo_drop(swap_undo);
	if (err && tmp)
		unlink(tmp);
	undo_drop(tmp_undo);
	free(tmp);
	if (!err && created)
		*stage = NULL;
	return err ? EXIT_FAIL : EXIT_OK;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

int cmd_import(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'},
		{"output", required_argument, NULL, 'o'},
		{0, 0, 0, 0},
	};
	const char *out = NULL;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
		switch (c) {
		case 'h': fputs(import_usage, stdout); return EXIT_OK;
		case 'o': out = optarg; break;
		default:
			return cmd_bad_option("import", longopts, "ho:", argv, optind);
		}
	}
	if (argc - optind != 1) {
		cmd_usage_error("import", "expected one GRAPH argument");
		return EXIT_USAGE;
	}
	Arena *a = arena_new();
	Graph *g = cmd_load_graph(a, argv[optind]);
	if (!g) {
		arena_free(a);
		return EXIT_INPUT;
	}
	bool yaml = out && (ends_with(out, ".yaml") || ends_with(out, ".yml"));
	const char *datadir = NULL, *datarel = NULL;
	bool big = false;
	for (int i = 0; i < g->ninputs; i++) {
		const Tensor *t = &g->tensors[g->inputs[i]];
		big = big || (t->data && count_of(t) > INLINE_MAX);
	}
	int in_place = -1;   /* OUT, when it is written in place */
	int status = out ? open_out(out, &in_place) : EXIT_OK;
	char *stage = NULL;   /* OUT.data's new contents, published with OUT */
	UndoStep *stage_undo = NULL;
	if (status == EXIT_OK && out && big) {
		const char *dot = strrchr(out, '.'), *slash = strrchr(out, '/');
		size_t stem = dot && (!slash || dot > slash) ? (size_t)(dot - out) : strlen(out);
		datadir = arena_printf(a, "%.*s.data", (int)stem, out);
		datarel = slash ? datadir + (slash - out) + 1 : datadir;
		status = check_datadir(datadir);
		if (status == EXIT_OK && !(stage = stage_data(a, datadir, &stage_undo)))
			status = EXIT_FAIL;
	}
	Buf b = {0};
	if (status == EXIT_OK && write_graph(&b, g, yaml, stage, datadir, datarel, a))
		status = EXIT_FAIL;
	if (status == EXIT_OK && !out) {
		if (fwrite(b.data, 1, b.len, stdout) != b.len) {
			cmd_error("cannot write '<stdout>': %s", strerror(errno));
			status = EXIT_FAIL;
		}
	} else if (status == EXIT_OK) {
		status = publish(a, out, &b, &stage, datadir, in_place);
	}
	if (stage)
		remove_flat(stage, stage_undo);   /* the unpublished new folder, or the old one */
	undo_drop(stage_undo);
	if (in_place >= 0)
		close(in_place);
	buf_free(&b);
	arena_free(a);
	return status;
}
