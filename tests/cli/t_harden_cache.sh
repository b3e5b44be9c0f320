# t_harden_cache.sh: the caches, constants' files and plans are input fusec did not
# necessarily write (issue 25, docs/reliability.md). A forged, changed, truncated or
# odd cache entry is a miss and is written again, never emitted; a cache folder
# other users can write is refused unless trusted; nothing from a cache or a plan
# names a path outside the output folder; a .npy file is read once, through no link.
G=tests/golden/fusers.yaml
T=$(cd "$TMP" && pwd -P)   # as the cache folder's check names folders
RUN=$(dirname "$FUSEC")/fusec-run
check hc-fresh 0 "$FUSEC" compile $G -o "$TMP/ref" --no-cache

# forge ENTRY FIELD VALUE: rewrite a result-cache entry's name record (name) or its
# .ptx extension (ext), or flip one byte of its plan (byte), as someone who can
# write the folder would: with the entry's digest recomputed when it has one.
forge() {
	python3 - "$@" <<'PY'
import hashlib, sys
path, field, value = sys.argv[1], sys.argv[2], sys.argv[3].encode()
data = open(path, "rb").read()
pos = data.index(b"\n") + 1
magic, recs = data[:pos], []
while True:
    e = data.index(b"\n", pos)
    line, pos = data[pos:e], e + 1
    tag = line[:1]
    if tag == b"E":
        break
    if tag == b"S":
        pos += 65
        continue
    if tag == b"O":
        recs.append([tag, line[2:], None])
        continue
    n = int(line[2:])
    body, pos = data[pos:pos + n], pos + n + 1
    extra = None
    if tag == b"D":
        extra, pos = data[pos:pos + 65], pos + 65
    recs.append([tag, body, extra])
for r in recs:
    if field == "name" and r[0] == b"N":
        r[1] = value
    if field == "ext" and r[0] == b"F" and r[1] == b".ptx":
        r[1] = value
if field == "byte":
    r = next(r for r in recs if r[0] == b"L" and r[1].startswith(b"{"))
    i = r[1].index(b'"sm_90') + 5
    r[1] = r[1][:i] + b"1" + r[1][i + 1:]
out = magic
for tag, body, extra in recs:
    out += tag + b" " + body + b"\n" if tag == b"O" else tag + b" %d\n" % len(body) + body + b"\n"
    if extra:
        out += extra
if b"/2" in magic and field != "byte":
    out += b"S 64\n" + hashlib.sha256(out).hexdigest().encode() + b"\n"
elif b"/2" in magic:   # changed by one byte: the digest is the old one
    out += data[data.rindex(b"S 64\n"):-2]
open(path, "wb").write(out + b"E\n")
PY
}
# miss NAME: the compile just checked did not answer from the result cache (its
# stderr copied first: check truncates $TMP/err before grep could read it)
miss() { cp "$TMP/err" "$TMP/err.last"; check "$1" 1 grep -q "result cache hit" "$TMP/err.last"; }

# 1. A result-cache entry names no path outside -o: a name record '../escape', or
# an extension that is a path, is a miss; the compile writes its own files.
RC="$TMP/rc1"
mkdir -p "$TMP/o1"
check hc-rc-name-cold 0 "$FUSEC" compile $G -o "$TMP/o1" --cache-dir "$RC"
forge "$RC"/r-*.res name ../escape
check hc-rc-name 0 "$FUSEC" compile $G -o "$TMP/o1" --cache-dir "$RC" --time && miss hc-rc-name-miss
check hc-rc-name-outside 1 test -e "$TMP/escape.plan.json"
same_files hc-rc-name-plan "$TMP/ref/fusers.plan.json" "$TMP/o1/fusers.plan.json"
check hc-rc-name-rewritten 0 "$FUSEC" compile $G -o "$TMP/o1b" --cache-dir "$RC" --time &&
	contains hc-rc-name-rewritten-hit "$TMP/err" "result cache hit"
same_files hc-rc-name-rewritten-ptx "$TMP/ref/fusers.ptx" "$TMP/o1b/fusers.ptx"
RC="$TMP/rc2"
mkdir -p "$TMP/o2/fusers.d"
check hc-rc-ext-cold 0 "$FUSEC" compile $G -o "$TMP/o2" --cache-dir "$RC"
forge "$RC"/r-*.res ext .d/../../escape.ptx
check hc-rc-ext 0 "$FUSEC" compile $G -o "$TMP/o2" --cache-dir "$RC" --time && miss hc-rc-ext-miss
check hc-rc-ext-outside 1 test -e "$TMP/escape.ptx"
same_files hc-rc-ext-ptx "$TMP/ref/fusers.ptx" "$TMP/o2/fusers.ptx"

# 4. A result-cache entry changed by one byte (its plan says sm_91a) is a miss, and
# is written again.
RC="$TMP/rc3"
check hc-rc-byte-cold 0 "$FUSEC" compile $G -o "$TMP/o3" --cache-dir "$RC"
forge "$RC"/r-*.res byte x
check hc-rc-byte 0 "$FUSEC" compile $G -o "$TMP/o3" --cache-dir "$RC" --time && miss hc-rc-byte-miss
same_files hc-rc-byte-plan "$TMP/ref/fusers.plan.json" "$TMP/o3/fusers.plan.json"
check hc-rc-byte-rewritten 0 "$FUSEC" compile $G -o "$TMP/o3b" --cache-dir "$RC" --time &&
	contains hc-rc-byte-rewritten-hit "$TMP/err" "result cache hit"
same_files hc-rc-byte-rewritten-plan "$TMP/ref/fusers.plan.json" "$TMP/o3b/fusers.plan.json"

# 2. A kernel-cache entry changed by someone (one instruction of its PTX) is a miss:
# the PTX is the one LLVM emits, and the entry is written again.
KC="$TMP/kc"
check hc-kc-cold 0 "$FUSEC" compile $G -o "$TMP/k0" --cache-dir "$KC" --no-result-cache
for f in "$KC"/*.ptx; do
	python3 -c 'import sys; p = sys.argv[1]; d = open(p, "rb").read(); i = d.rindex(b"ret;")
open(p, "wb").write(d[:i] + b"exit" + d[i + 4:])' "$f"
done
check hc-kc-changed 0 "$FUSEC" compile $G -o "$TMP/k1" --cache-dir "$KC" --no-result-cache --time &&
	contains hc-kc-changed-miss "$TMP/err" "kernel cache: 0 of"
same_files hc-kc-changed-ptx "$TMP/ref/fusers.ptx" "$TMP/k1/fusers.ptx"
check hc-kc-changed-rewritten 0 "$FUSEC" compile $G -o "$TMP/k2" --cache-dir "$KC" --no-result-cache --time &&
	contains hc-kc-changed-rewritten-hit "$TMP/err" "(LLVM skipped)"
same_files hc-kc-changed-rewritten-ptx "$TMP/ref/fusers.ptx" "$TMP/k2/fusers.ptx"

# 3. A truncated kernel-cache entry is a miss (it was a hit with the PTX cut short).
for f in "$KC"/*.ptx; do
	n=$(wc -c <"$f")
	head -c $((n - 300)) "$f" >"$f.x" && mv "$f.x" "$f"
done
check hc-kc-truncated 0 "$FUSEC" compile $G -o "$TMP/k3" --cache-dir "$KC" --no-result-cache --time &&
	contains hc-kc-truncated-miss "$TMP/err" "kernel cache: 0 of"
same_files hc-kc-truncated-ptx "$TMP/ref/fusers.ptx" "$TMP/k3/fusers.ptx"
check hc-kc-truncated-plan-only 0 "$RUN" "$TMP/k3/fusers.plan.json" --plan-only

# 11. A kernel-cache entry that is a FIFO, or a link, is a miss, and no wait; the
# entry is written again as a file. So is a result-cache entry that is a FIFO.
mkdir -p "$TMP/saved" && cp "$KC"/*.ptx "$TMP/saved/"
for f in "$KC"/*.ptx; do rm "$f" && mkfifo "$f"; done
check hc-kc-fifo 0 timeout 60 "$FUSEC" compile $G -o "$TMP/k4" --cache-dir "$KC" --no-result-cache --time &&
	contains hc-kc-fifo-miss "$TMP/err" "kernel cache: 0 of"
same_files hc-kc-fifo-ptx "$TMP/ref/fusers.ptx" "$TMP/k4/fusers.ptx"
for f in "$KC"/*.ptx; do check hc-kc-fifo-replaced 0 test -f "$f"; done
for f in "$TMP"/saved/*.ptx; do rm -f "$KC/${f##*/}" && ln -s "$f" "$KC/${f##*/}"; done
check hc-kc-link 0 "$FUSEC" compile $G -o "$TMP/k5" --cache-dir "$KC" --no-result-cache --time &&
	contains hc-kc-link-miss "$TMP/err" "kernel cache: 0 of"
for f in "$RC"/r-*.res; do rm "$f" && mkfifo "$f"; done
check hc-rc-fifo 0 timeout 60 "$FUSEC" compile $G -o "$TMP/o4" --cache-dir "$RC" --time && miss hc-rc-fifo-miss
same_files hc-rc-fifo-ptx "$TMP/ref/fusers.ptx" "$TMP/o4/fusers.ptx"

# The cache folder: made private; refused, with exit 1 and a message, when other
# users can write it or one above it (a sticky one such as /tmp is fine), or it
# belongs to another user; used when the user trusts it.
check hc-dir-new 0 "$FUSEC" compile $G -o "$TMP/d0" --cache-dir "$TMP/new/cache"
same hc-dir-new-mode "$(stat -c %a "$TMP/new/cache" >"$TMP/mode"; echo "$TMP/mode")" "700"
mkdir -p "$TMP/open" && chmod 777 "$TMP/open"
check hc-dir-open 1 "$FUSEC" compile $G -o "$TMP/d1" --cache-dir "$TMP/open"
same hc-dir-open-msg "$TMP/err" "fusec: error: the cache folder '$TMP/open' is not safe to use: '$T/open' can be written by other users (mode 0777), so another user could change what compiles read from it; make it private, choose another (--cache-dir), compile without it (--no-cache), or trust it (--trust-cache-dir, FUSEC_TRUST_CACHE_DIR=1)"
check hc-dir-open-nothing 1 test -e "$TMP/d1"
check hc-dir-open-below 1 "$FUSEC" compile $G -o "$TMP/d1" --cache-dir "$TMP/open/mine"
contains hc-dir-open-below-msg "$TMP/err" "'$T/open' can be written by other users (mode 0777)"
check hc-dir-trusted 0 "$FUSEC" compile $G -o "$TMP/d2" --cache-dir "$TMP/open" --trust-cache-dir
check hc-dir-trusted-env 0 env FUSEC_TRUST_CACHE_DIR=1 "$FUSEC" compile $G -o "$TMP/d3" --cache-dir "$TMP/open" --time &&
	contains hc-dir-trusted-env-hit "$TMP/err" "result cache hit"
check hc-dir-no-cache 0 "$FUSEC" compile $G -o "$TMP/d4" --cache-dir "$TMP/open" --no-cache
mkdir -p "$TMP/sticky" && chmod 1777 "$TMP/sticky"
check hc-dir-sticky-above 0 "$FUSEC" compile $G -o "$TMP/d5" --cache-dir "$TMP/sticky/mine"
check hc-dir-sticky-itself 1 "$FUSEC" compile $G -o "$TMP/d6" --cache-dir "$TMP/sticky"
ln -s "$TMP/open" "$TMP/open-link"
check hc-dir-link 1 "$FUSEC" compile $G -o "$TMP/d7" --cache-dir "$TMP/open-link"
contains hc-dir-link-msg "$TMP/err" "'$T/open' can be written by other users"
check hc-dir-xdg 1 env XDG_CACHE_HOME="$TMP/open" "$FUSEC" compile $G -o "$TMP/d8"
contains hc-dir-xdg-msg "$TMP/err" "the cache folder '$TMP/open/fusec' is not safe to use"
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	mkdir -p "$TMP/theirs" && chown nobody "$TMP/theirs" && chmod 755 "$TMP/theirs"
	check hc-dir-owner 1 "$FUSEC" compile $G -o "$TMP/d9" --cache-dir "$TMP/theirs"
	contains hc-dir-owner-msg "$TMP/err" "'$T/theirs' belongs to another user (uid $(id -u nobody))"
fi

# npy_graph DIR NPY: a graph in DIR whose constant w is read from NPY (relative).
npy_graph() {
	mkdir -p "$1"
	cat >"$1/c.yaml" <<YAML
format: fusec-graph/1
name: consts
inputs:
  x: {dtype: f32, shape: [4]}
constants:
  w: {dtype: f32, shape: [4], npy: $2}
ops:
  - {op: mul, in: [x, w], out: y}
outputs: [y]
YAML
}
# npy FILE V: a <f4 .npy of [V, 2, 3, 4]
npy() {
	python3 - "$1" "$2" <<'PY'
import struct, sys
hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }"
hdr += " " * (64 - 10 - len(hdr) - 1) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
    f.write(struct.pack("<4f", float(sys.argv[2]), 2, 3, 4))
PY
}

# 6. A constant's .npy file is read through no symbolic link, to a file or to a
# folder: refused with exit 1, naming the file.
npy_graph "$TMP/n1" w.npy
npy "$TMP/elsewhere.npy" 1
ln -s "$TMP/elsewhere.npy" "$TMP/n1/w.npy"
check hc-npy-link 1 "$FUSEC" compile "$TMP/n1/c.yaml" -o "$TMP/n1o" --no-cache
same hc-npy-link-msg "$TMP/err" "$TMP/n1/w.npy: error: is a symbolic link: a constant's file must be a regular file inside the graph's folder, not a link (copy it there)"
check hc-npy-link-run 1 "$FUSEC" run "$TMP/n1/c.yaml" --backend interp
npy_graph "$TMP/n2" data/w.npy
mkdir -p "$TMP/data" && npy "$TMP/data/w.npy" 1 && ln -s "$TMP/data" "$TMP/n2/data"
check hc-npy-link-folder 1 "$FUSEC" compile "$TMP/n2/c.yaml" -o "$TMP/n2o" --no-cache
same hc-npy-link-folder-msg "$TMP/err" "$TMP/n2/data/w.npy: error: '$TMP/n2/data' is a symbolic link: a constant's file must lie inside the graph's folder, reached through no link"
rm "$TMP/n2/data" && mkdir -p "$TMP/n2/data" && cp "$TMP/data/w.npy" "$TMP/n2/data/"
check hc-npy-subfolder 0 "$FUSEC" compile "$TMP/n2/c.yaml" -o "$TMP/n2o" --no-cache
mkfifo "$TMP/n2/data/f.npy" && npy_graph "$TMP/n2" data/f.npy
check hc-npy-fifo 1 timeout 60 "$FUSEC" compile "$TMP/n2/c.yaml" -o "$TMP/n2o" --no-cache
same hc-npy-fifo-msg "$TMP/err" "$TMP/n2/data/f.npy: error: not a regular file (a pipe)"
# a result-cache hit reads its dependencies as the graph does: a .npy file that has
# become a link (to the same bytes) is refused, not served
npy_graph "$TMP/n4" w.npy
npy "$TMP/n4/w.npy" 1
check hc-npy-hit-cold 0 "$FUSEC" compile "$TMP/n4/c.yaml" -o "$TMP/n4o" --cache-dir "$TMP/rc4"
mv "$TMP/n4/w.npy" "$TMP/w4.npy" && ln -s "$TMP/w4.npy" "$TMP/n4/w.npy"
check hc-npy-hit-link 1 "$FUSEC" compile "$TMP/n4/c.yaml" -o "$TMP/n4o" --cache-dir "$TMP/rc4"
contains hc-npy-hit-link-msg "$TMP/err" "$TMP/n4/w.npy: error: is a symbolic link"

# 5. A .npy file rewritten while a compile runs (right after the compile read it:
# an LD_PRELOAD shim renames new bytes over it when the file is closed) must not
# pair the outputs of its old bytes with the hash of its new ones: the next compile
# is a miss and writes the new weights.
cat >"$TMP/shim.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static int done;
static int is_target(int fd)
{
	char link[64], path[4096];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, sizeof path - 1);
	const char *want = getenv("SHIM_FILE");
	if (n < 0 || !want)
		return 0;
	path[n] = 0;
	return !strcmp(path, want);
}
static void rewrite(void)
{
	done = 1;
	rename(getenv("SHIM_NEW"), getenv("SHIM_FILE"));
}
int close(int fd)
{
	int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "close");
	int hit = !done && is_target(fd), r = real(fd);
	if (hit)
		rewrite();
	return r;
}
int fclose(FILE *f)
{
	int (*real)(FILE *) = (int (*)(FILE *))dlsym(RTLD_NEXT, "fclose");
	int hit = !done && is_target(fileno(f)), r = real(f);
	if (hit)
		rewrite();
	return r;
}
C
if ${CC:-cc} -shared -fPIC -o "$TMP/shim.so" "$TMP/shim.c" -ldl 2>/dev/null; then
	npy_graph "$TMP/n5" w.npy
	npy "$TMP/n5/w.npy" 1 && npy "$TMP/new.npy" 7
	N5=$(cd "$TMP/n5" && pwd -P)
	# (a sanitizer build, make sanitize, takes a preloaded library after its own)
	check hc-race-cold 0 env LD_PRELOAD="$TMP/shim.so" SHIM_FILE="$N5/w.npy" SHIM_NEW="$TMP/new.npy" \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" "$FUSEC" compile "$TMP/n5/c.yaml" -o "$TMP/n5a" --cache-dir "$TMP/rc5"
	check hc-race-rewritten 1 test -e "$TMP/new.npy"
	check hc-race-next 0 "$FUSEC" compile "$TMP/n5/c.yaml" -o "$TMP/n5b" --cache-dir "$TMP/rc5" --time &&
		miss hc-race-next-miss
	check hc-race-fresh 0 "$FUSEC" compile "$TMP/n5/c.yaml" -o "$TMP/n5c" --no-cache
	same_files hc-race-weights "$TMP/n5c/consts.weights.bin" "$TMP/n5b/consts.weights.bin"
fi

# 7. A plan records the hashes of the files beside it, and names them by plain
# file names: a plan without ptx_sha256, or with weights but no weights_sha256, or
# whose "ptx" is a path, is refused with exit 1 before anything is read.
FIX=tests/runtime/axpb.plan.json
grep -v '"ptx_sha256"' $FIX >"$TMP/nohash.plan.json"
check hc-plan-no-ptx-hash 1 "$RUN" "$TMP/nohash.plan.json" --plan-only
same hc-plan-no-ptx-hash-msg "$TMP/err" "$TMP/nohash.plan.json: error: missing key \"ptx_sha256\": a plan must record the SHA-256 of its PTX file, so that no other file is used in its place (fusec compile writes it)"
sed 's|"ptx": "axpb.ptx"|"ptx": "/etc/passwd"|' $FIX >"$TMP/abs.plan.json"
check hc-plan-ptx-path 1 "$RUN" "$TMP/abs.plan.json" --plan-only
same hc-plan-ptx-path-msg "$TMP/err" "$TMP/abs.plan.json: error: ptx: \"/etc/passwd\" is not a plain file name: the PTX file must lie beside the plan"
sed 's|"ptx": "axpb.ptx"|"ptx": "../runtime/axpb.ptx"|' $FIX >"$TMP/up.plan.json"
check hc-plan-ptx-up 1 "$RUN" "$TMP/up.plan.json" --plan-only
contains hc-plan-ptx-up-msg "$TMP/err" "ptx: \"../runtime/axpb.ptx\" is not a plain file name"
sed 's|"ptx": "axpb.ptx",|"ptx": "axpb.ptx", "weights": "axpb.weights.bin",|' $FIX >"$TMP/w.plan.json"
check hc-plan-no-weights-hash 1 "$RUN" "$TMP/w.plan.json" --plan-only
same hc-plan-no-weights-hash-msg "$TMP/err" "$TMP/w.plan.json: error: missing key \"weights_sha256\": a plan must record the SHA-256 of its weights file, so that no other file is used in its place (fusec compile writes it)"
# what fusec compile writes has both
npy_graph "$TMP/n6" w.npy && npy "$TMP/n6/w.npy" 3
check hc-plan-compiled 0 "$FUSEC" compile "$TMP/n6/c.yaml" -o "$TMP/n6o" --no-cache
check hc-plan-compiled-ok 0 "$RUN" "$TMP/n6o/consts.plan.json" --plan-only
contains hc-plan-compiled-ptx "$TMP/n6o/consts.plan.json" "\"ptx_sha256\":\"$(sha256sum "$TMP/n6o/consts.ptx" | cut -d' ' -f1)\""
contains hc-plan-compiled-weights "$TMP/n6o/consts.plan.json" "\"weights_sha256\":\"$(sha256sum "$TMP/n6o/consts.weights.bin" | cut -d' ' -f1)\""
# the plan's schema says the same (docs/schema/fusec-plan-1.schema.json)
if python3 -c 'import jsonschema' 2>/dev/null; then
	S=docs/schema/fusec-plan-1.schema.json
	check hc-schema-ok 0 python3 tests/schema/validate.py $S "$TMP/n6o/consts.plan.json"
	sed 's/"ptx_sha256":"[0-9a-f]*",//' "$TMP/n6o/consts.plan.json" >"$TMP/s1.plan.json"
	check hc-schema-no-ptx-hash 1 python3 tests/schema/validate.py $S "$TMP/s1.plan.json"
	sed 's/,"weights_sha256":"[0-9a-f]*"//' "$TMP/n6o/consts.plan.json" >"$TMP/s2.plan.json"
	check hc-schema-no-weights-hash 1 python3 tests/schema/validate.py $S "$TMP/s2.plan.json"
	for p in /etc/passwd ..; do
		sed "s|\"ptx\":\"consts.ptx\"|\"ptx\":\"$p\"|" "$TMP/n6o/consts.plan.json" >"$TMP/s3.plan.json"
		check "hc-schema-ptx-$p" 1 python3 tests/schema/validate.py $S "$TMP/s3.plan.json"
	done
fi
