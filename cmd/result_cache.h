/* result_cache.h: whole-compile results in the cache folder (docs/kernel-cache.md).
 *
 * In:  the key text of a compile (compile.c writes it: the format, fusec's version
 *      and build, LLVM's version, the working folder, every option as written, the
 *      resource caps, the environment that changes outputs, and the size and SHA-256
 *      of the graph file and of the libdevice file).
 * Out: on a hit, the files the same compile wrote before (plan, PTX, weights, what
 *      --emit asked for), the graph's name and op count; on a miss after a
 *      successful compile, a new entry.
 *
 * An entry also lists the files the graph read besides itself (constants' .npy
 * files) with the SHA-256 of the bytes the graph read; a hit requires each to
 * still hold the same bytes, read as the graph reads them. Entries are
 * DIR/r-<SHA-256 of the key>.res and hold the key itself, which a read compares
 * whole, and end with the SHA-256 of all they hold: an entry that is damaged,
 * changed, unreadable, or that names a file outside the output folder (its name
 * or an extension) or a dependency outside the graph's folder is a miss, and the
 * compile writes it again. They are written to a temporary file in DIR and renamed
 * into place, so parallel compiles sharing DIR see whole entries or none. DIR has
 * passed cg_cache_dir_check (codegen/kcache.h). Memory: an entry is one malloc'd
 * block (rc_entry_free). */
#ifndef FUSEC_RESULT_CACHE_H
#define FUSEC_RESULT_CACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "../support/support.h"

/* The first line of an entry and of a key (compile.c, result_key): a new format
 * makes every older entry a miss. */
#define RC_FORMAT "fusec-result/2"

/* The most files a compile writes: the plan, a PTX and an .ll per arch (nine
 * arches at most), the weights, relative, dot and svg files. */
enum { RC_MAX_FILES = 24 };

typedef struct {
	const char *ext;         /* ".ptx"; ".sm_80.ptx" beside other arches */
	const char *text;
	size_t len;
} RcFile;

typedef struct {
	char *data;              /* the entry as read; the strings below point into it */
	const char *name;        /* the graph's name */
	long nops;
	const char *deps[64];    /* files the graph read besides itself */
	int ndeps;
	RcFile files[RC_MAX_FILES];
	int nfiles;
} RcEntry;

/* Append "LABEL SIZE SHA256\n" for a regular file to key. -1 when it is not one
 * or cannot be read (the result cache is then not used). With text, the file's
 * bytes are kept there (malloc'd, NUL-terminated, *len bytes), so that the compile
 * reads the very bytes the key names. */
int rc_key_file(Buf *key, const char *label, const char *path, char **text, size_t *len);
/* The entry for key in dir, for a compile of the graph file graph: true on a hit
 * (the entry whole and unchanged, every dependency unchanged). */
bool rc_get(const char *dir, const Buf *key, const char *graph, RcEntry *e);
void rc_entry_free(RcEntry *e);
/* Store an entry: deps with the SHA-256 of the bytes the graph read
 * (ConstSource.npy_sha256). 0, or -1 when nothing was stored. */
int rc_put(const char *dir, const Buf *key, const char *name, long nops,
	   const char *const *deps, const char (*dep_sha)[65], int ndeps,
	   const RcFile *files, int nfiles);

#endif
