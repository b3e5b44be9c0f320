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
 * files) with their SHA-256; a hit requires each to still hold the same bytes.
 * Entries are DIR/r-<SHA-256 of the key>.res and hold the key itself, which a read
 * compares whole. They are written to a temporary file in DIR and renamed into
 * place, so parallel compiles sharing DIR see whole entries or none; an entry that
 * is damaged or unreadable is a miss. Memory: an entry is one malloc'd block
 * (rc_entry_free). */
#ifndef FUSEC_RESULT_CACHE_H
#define FUSEC_RESULT_CACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "../support/support.h"

typedef struct {
	const char *ext;         /* ".ptx" */
	const char *text;
	size_t len;
} RcFile;

typedef struct {
	char *data;              /* the entry as read; the strings below point into it */
	const char *name;        /* the graph's name */
	long nops;
	const char *deps[64];    /* files the graph read besides itself */
	int ndeps;
	RcFile files[8];
	int nfiles;
} RcEntry;

/* Append "LABEL SIZE SHA256\n" for a regular file to key. -1 when it is not one
 * or cannot be read (the result cache is then not used). With text, the file's
 * bytes are kept there (malloc'd, NUL-terminated, *len bytes), so that the compile
 * reads the very bytes the key names. */
int rc_key_file(Buf *key, const char *label, const char *path, char **text, size_t *len);
/* The SHA-256 of a regular file's bytes; -1 when it cannot be read. */
int rc_file_sha(const char *path, char out[65]);
/* The entry for key in dir: true on a hit (every dependency unchanged). */
bool rc_get(const char *dir, const Buf *key, RcEntry *e);
void rc_entry_free(RcEntry *e);
/* Store an entry (dir created when missing): deps with their SHA-256 (taken when
 * the graph read them, rc_file_sha). 0, or -1 when nothing was stored. */
int rc_put(const char *dir, const Buf *key, const char *name, long nops,
	   const char *const *deps, const char (*dep_sha)[65], int ndeps,
	   const RcFile *files, int nfiles);

#endif
