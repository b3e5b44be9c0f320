# t_harden_files.sh: the files fusec writes, when what is in the way is not what it
# expects (issue 25, items 11, 13, 14, 15, 17, 18, 21; docs/reliability.md): a pipe,
# a device or a symbolic link where an output goes, temporary names nobody can
# predict, a depfile published with the outputs and read by make, temporaries and
# folders taken away on SIGTERM and SIGINT, write errors naming the user's file.

# graph NAME [V]: a graph with a constant (so a weights file); V changes the constant
graph() {
	printf 'format: fusec-graph/1\nname: %s\ninputs: {a: {dtype: f32, shape: [4]}}\nconstants:\n  c: {dtype: f32, shape: [4], data: [1, 2, 3, %s]}\nops:\n  - {op: add, in: [a, c], out: y}\noutputs: [y]\n' "$1" "${2:-4}"
}
# no_temp DIR...: no temporary file of fusec's in the folders
no_temp() {
	for d in "$@"; do ! ls -A "$d" | grep -q 'fusec-' || return 1; done
}
# snapshot DIR: names, sizes and hashes of what DIR holds
snapshot() {
	(cd "$1" && find . -print | sort | while read -r f; do
		if [ -f "$f" ]; then echo "$f $(sha256sum <"$f")"; else echo "$f"; fi
	done)
}
# wait_temp DIR [TEXT]: wait (at most 30 s) until a temporary file of fusec's (or a
# name with TEXT) shows in DIR
wait_temp() {
	i=0
	while [ $i -lt 600 ]; do
		ls -A "$1" 2>/dev/null | grep -qF "${2:-fusec-}" && return 0
		sleep 0.05; i=$((i + 1))
	done
	return 1
}
graph fw >"$TMP/fw.yaml"
graph fw 5 >"$TMP/fw5.yaml"

# ---- 11: a pipe where an output goes --------------------------------------------

# A FIFO at OUT/NAME.weights.bin blocked the compile forever (it was opened to see
# whether the weights changed) and left .fusec-* files. It is refused now, before
# anything is published, and left as it is.
mkdir "$TMP/fifo" && mkfifo "$TMP/fifo/fw.weights.bin"
check fifo-weights 3 timeout 60 "$FUSEC" compile -q --no-cache "$TMP/fw.yaml" -o "$TMP/fifo"
contains fifo-weights-msg "$TMP/err" "cannot write '$TMP/fifo/fw.weights.bin': it is a pipe (FIFO), not a regular file"
check fifo-weights-kept 0 test -p "$TMP/fifo/fw.weights.bin"
check fifo-weights-nothing 0 test ! -e "$TMP/fifo/fw.plan.json" -a ! -e "$TMP/fifo/fw.ptx"
check fifo-weights-no-temp 0 no_temp "$TMP/fifo"
# the same from the result cache (which replaced the pipe) and for the PTX
check fifo-cache-fill 0 "$FUSEC" compile -q "$TMP/fw.yaml" -o "$TMP/fill"
check fifo-weights-cached 3 timeout 60 "$FUSEC" compile -q "$TMP/fw.yaml" -o "$TMP/fifo"
check fifo-weights-cached-kept 0 test -p "$TMP/fifo/fw.weights.bin"
mkdir "$TMP/fifo2" && mkfifo "$TMP/fifo2/fw.ptx"
check fifo-ptx 3 timeout 60 "$FUSEC" compile -q --no-cache "$TMP/fw.yaml" -o "$TMP/fifo2"
contains fifo-ptx-msg "$TMP/err" "cannot write '$TMP/fifo2/fw.ptx': it is a pipe (FIFO)"
check fifo-ptx-no-temp 0 no_temp "$TMP/fifo2"
# a device (root only: mknod) is refused the same way
if [ "$(id -u)" = 0 ]; then
	mkdir "$TMP/dev" && mknod "$TMP/dev/fw.ptx" c 1 3
	check device-ptx 3 "$FUSEC" compile -q --no-cache "$TMP/fw.yaml" -o "$TMP/dev"
	contains device-ptx-msg "$TMP/err" "cannot write '$TMP/dev/fw.ptx': it is a device, not a regular file"
	check device-ptx-kept 0 test -c "$TMP/dev/fw.ptx"
fi
# The unchanged weights file is kept only when it is a regular file: a symbolic link
# to identical bytes is replaced (the link, never the file it names).
check weights-link-first 0 "$FUSEC" compile -q --no-cache "$TMP/fw.yaml" -o "$TMP/wl"
mv "$TMP/wl/fw.weights.bin" "$TMP/wl-target.bin"
ln -s "$TMP/wl-target.bin" "$TMP/wl/fw.weights.bin"
cp "$TMP/wl-target.bin" "$TMP/wl-target.orig"
check weights-link 0 "$FUSEC" compile -q --no-cache "$TMP/fw.yaml" -o "$TMP/wl"
check weights-link-replaced 0 test -f "$TMP/wl/fw.weights.bin" -a ! -L "$TMP/wl/fw.weights.bin"
same_files weights-link-target-untouched "$TMP/wl-target.orig" "$TMP/wl-target.bin"
# fusec run --outputs: a pipe at an output's .npy is refused too, not replaced
mkdir "$TMP/ro" && mkfifo "$TMP/ro/y.npy"
check run-outputs-fifo 3 timeout 60 "$FUSEC" run "$TMP/fw.yaml" --outputs "$TMP/ro"
contains run-outputs-fifo-msg "$TMP/err" "$TMP/ro/y.npy: error: cannot write: it is a pipe (FIFO), not a regular file"
check run-outputs-fifo-kept 0 test -p "$TMP/ro/y.npy"

# ---- 13: -M FILE and import -o FILE are never replaced when not regular files ------

# -M through a symbolic link to /dev/null: written through, the link stays
ln -s /dev/null "$TMP/null.d"
check dep-null-link 0 "$FUSEC" compile -q "$TMP/fw.yaml" -o "$TMP/o13" -M "$TMP/null.d"
check dep-null-link-kept 0 test -L "$TMP/null.d"
# -M on a device node itself (what -M /dev/null is as root; mknod needs root)
if [ "$(id -u)" = 0 ]; then
	mknod "$TMP/null.dev" c 1 3
	check dep-device 0 "$FUSEC" compile -q "$TMP/fw.yaml" -o "$TMP/o13" -M "$TMP/null.dev"
	check dep-device-kept 0 test -c "$TMP/null.dev"
fi
# -M on a pipe that a process reads: the rule goes through it, the pipe stays
mkfifo "$TMP/dep.fifo"
exec 3<>"$TMP/dep.fifo"   # a reader from the start (and a writer, closed below)
cat "$TMP/dep.fifo" >"$TMP/dep.got" 3<&- &
reader=$!
check dep-fifo 0 timeout 60 "$FUSEC" compile -q "$TMP/fw.yaml" -o "$TMP/o13" -M "$TMP/dep.fifo"
exec 3<&-
wait $reader
contains dep-fifo-rule "$TMP/dep.got" "$TMP/o13/fw.plan.json $TMP/o13/fw.ptx $TMP/o13/fw.weights.bin: $TMP/fw.yaml"
check dep-fifo-kept 0 test -p "$TMP/dep.fifo"
# a pipe that no process reads is an error, not a hang, and nothing is published
mkfifo "$TMP/dep2.fifo"
check dep-fifo-no-reader 3 timeout 60 "$FUSEC" compile -q "$TMP/fw.yaml" -o "$TMP/o13b" -M "$TMP/dep2.fifo"
contains dep-fifo-no-reader-msg "$TMP/err" "cannot write depfile '$TMP/dep2.fifo': it is a pipe that no process reads"
check dep-fifo-no-reader-nothing 0 test ! -e "$TMP/o13b"
# -M through a link to /dev/stdout
ln -s /dev/stdout "$TMP/stdout.d"
check dep-stdout 0 "$FUSEC" compile -q "$TMP/fw.yaml" -o "$TMP/o13" -M "$TMP/stdout.d"
contains dep-stdout-rule "$TMP/out" "$TMP/o13/fw.plan.json $TMP/o13/fw.ptx $TMP/o13/fw.weights.bin: $TMP/fw.yaml"
check dep-stdout-kept 0 test -L "$TMP/stdout.d"
# import -o through a symbolic link to /dev/null: the link stays
ln -s /dev/null "$TMP/imp-null.yaml"
check import-null-link 0 "$FUSEC" import "$TMP/fw.yaml" -o "$TMP/imp-null.yaml"
check import-null-link-kept 0 test -L "$TMP/imp-null.yaml"
# The depfile's temporary name was FILE.tmp, opened through a symbolic link someone
# put there; run --outputs' was y.npy.tmp. Now fresh names (O_EXCL): a link at the
# old name is neither followed nor replaced.
echo keep >"$TMP/victim"
ln -s "$TMP/victim" "$TMP/d13.mk.tmp"
check dep-tmp-link 0 "$FUSEC" compile -q "$TMP/fw.yaml" -o "$TMP/o13" -M "$TMP/d13.mk"
same dep-tmp-link-victim "$TMP/victim" "keep"
check dep-tmp-link-regular 0 test -f "$TMP/d13.mk" -a ! -L "$TMP/d13.mk"
mkdir "$TMP/ro2" && ln -s "$TMP/victim" "$TMP/ro2/y.npy.tmp"
check run-tmp-link 0 "$FUSEC" run "$TMP/fw.yaml" --outputs "$TMP/ro2"
same run-tmp-link-victim "$TMP/victim" "keep"
check run-tmp-link-regular 0 test -f "$TMP/ro2/y.npy" -a ! -L "$TMP/ro2/y.npy"
check run-tmp-no-temp 0 no_temp "$TMP/ro2"
# 80 compiles sharing one -M file, twice: all succeed (a shared FILE.tmp made some
# fail with exit 3: another compile had renamed it away)
bad=0
for round in 1 2; do
	pids=
	for k in $(seq 80); do
		"$FUSEC" compile -q "$TMP/fw.yaml" -o "$TMP/conc13" -M "$TMP/conc13.mk" 2>>"$TMP/conc13.err" &
		pids="$pids $!"
	done
	for p in $pids; do wait "$p" || bad=$((bad + 1)); done
done
check dep-concurrent 0 test "$bad" -eq 0 || echo "    $bad of 160 compiles failed"
same dep-concurrent-no-errors "$TMP/conc13.err" ""
contains dep-concurrent-rule "$TMP/conc13.mk" "$TMP/conc13/fw.plan.json $TMP/conc13/fw.ptx $TMP/conc13/fw.weights.bin: $TMP/fw.yaml"
check dep-concurrent-no-temp 0 no_temp "$TMP" "$TMP/conc13"

# ---- 14: the depfile is published with the outputs, or nothing is -------------------

check dep-no-folder 3 "$FUSEC" compile -q "$TMP/fw.yaml" -o "$TMP/o14" -M "$TMP/nodir/d.mk"
contains dep-no-folder-msg "$TMP/err" "cannot write depfile '$TMP/nodir/d.mk': No such file or directory"
check dep-no-folder-nothing 0 test ! -e "$TMP/o14"
# a rename failing part-way (FUSEC_TEST_FAIL_RENAME=K: the PTX, the weights, the
# depfile, then the plan): the outputs and the depfile are put back
check dep-first 0 "$FUSEC" compile -q "$TMP/fw.yaml" -o "$TMP/o14b" -M "$TMP/o14b.mk"
cp "$TMP/o14b.mk" "$TMP/o14b.mk.before"
snapshot "$TMP/o14b" >"$TMP/o14b.before"
sed "s|$TMP/fw.yaml|$TMP/fw5.yaml|g" "$TMP/o14b.mk" >"$TMP/o14b.mk.new"
for k in 1 2 3 4; do
	check "dep-rollback-$k" 3 env FUSEC_TEST_FAIL_RENAME=$k "$FUSEC" compile -q "$TMP/fw5.yaml" \
		-o "$TMP/o14b" -M "$TMP/o14b.mk"
	snapshot "$TMP/o14b" >"$TMP/o14b.after"
	same_files "dep-rollback-$k-outputs" "$TMP/o14b.before" "$TMP/o14b.after"
	same_files "dep-rollback-$k-depfile" "$TMP/o14b.mk.before" "$TMP/o14b.mk"
done
check dep-rollback-no-temp 0 no_temp "$TMP" "$TMP/o14b"
check dep-replace 0 "$FUSEC" compile -q "$TMP/fw5.yaml" -o "$TMP/o14b" -M "$TMP/o14b.mk"
same_files dep-replace-depfile "$TMP/o14b.mk.new" "$TMP/o14b.mk"

# ---- 15: import -o OUT with OUT.data a symbolic link -------------------------------

# (the link's target lost its files: OUT.data was exchanged with the staging folder,
# and the old one, through the link, emptied)
awk 'BEGIN { printf "format: fusec-graph/1\ninputs: {x: {dtype: f32, shape: [100]}}\n"
	printf "constants:\n  b: {dtype: f32, shape: [100], data: ["
	for (i = 0; i < 100; i++) printf "%s%d", (i ? ", " : ""), i
	printf "]}\nops:\n  - {op: add, in: [x, b], out: y}\noutputs: [y]\n" }' >"$TMP/big.yaml"
mkdir "$TMP/i15" "$TMP/target15"
echo mine >"$TMP/target15/keep.txt"
echo old >"$TMP/target15/c0_b.npy"
ln -s "$TMP/target15" "$TMP/i15/g.data"
snapshot "$TMP/target15" >"$TMP/target15.before"
check import-data-link 3 "$FUSEC" import "$TMP/big.yaml" -o "$TMP/i15/g.yaml"
contains import-data-link-msg "$TMP/err" "cannot write the constants to '$TMP/i15/g.data': it is a symbolic link"
snapshot "$TMP/target15" >"$TMP/target15.after"
same_files import-data-link-target-untouched "$TMP/target15.before" "$TMP/target15.after"
check import-data-link-kept 0 test -L "$TMP/i15/g.data"
check import-data-link-nothing 0 test ! -e "$TMP/i15/g.yaml"
check import-data-link-no-temp 0 no_temp "$TMP/i15"

# ---- 17: SIGTERM and SIGINT take back what was made -------------------------------

# A compile into a new, deep folder, killed while it publishes (each rename waits
# 0.9 s): no temporary file, and no folder it made, is left.
FUSEC_TEST_RENAME_DELAY_MS=900 "$FUSEC" compile -q --no-cache "$TMP/fw.yaml" \
	-o "$TMP/sig/new/deep" -M "$TMP/sig.mk" 2>"$TMP/sig.err" &
pid=$!
wait_temp "$TMP/sig/new/deep"
kill -TERM $pid
wait $pid 2>/dev/null
check sigterm-compile-killed 0 test $? -eq 143
check sigterm-compile-no-folder 0 test ! -e "$TMP/sig"
check sigterm-compile-no-depfile 0 test ! -e "$TMP/sig.mk"
check sigterm-compile-no-temp 0 no_temp "$TMP"
# Into a folder that holds an earlier compile, SIGINT in the middle of the renames:
# the renamed files are put back, byte for byte. (env --default-signal: a
# background job of a script starts with SIGINT ignored, and fusec keeps it so.)
if env --default-signal=INT true 2>/dev/null; then
	check sigint-first 0 "$FUSEC" compile -q --no-cache "$TMP/fw.yaml" -o "$TMP/sig2" -M "$TMP/sig2.mk"
	snapshot "$TMP/sig2" >"$TMP/sig2.before"
	cp "$TMP/sig2.mk" "$TMP/sig2.mk.before"
	env --default-signal=INT FUSEC_TEST_RENAME_DELAY_MS=900 "$FUSEC" compile -q --no-cache \
		"$TMP/fw5.yaml" -o "$TMP/sig2" -M "$TMP/sig2.mk" 2>"$TMP/sig2.err" &
	pid=$!
	wait_temp "$TMP/sig2"
	sleep 0.5   # past the first rename
	kill -INT $pid
	wait $pid 2>/dev/null
	check sigint-compile-killed 0 test $? -eq 130
	snapshot "$TMP/sig2" >"$TMP/sig2.after"
	same_files sigint-compile-unchanged "$TMP/sig2.before" "$TMP/sig2.after"
	same_files sigint-compile-depfile-unchanged "$TMP/sig2.mk.before" "$TMP/sig2.mk"
	check sigint-compile-no-temp 0 no_temp "$TMP" "$TMP/sig2"
fi
# An import killed between publishing OUT.data and OUT (FUSEC_TEST_RENAME_DELAY_MS
# waits there): OUT and OUT.data are as they were, no staging folder is left.
mkdir "$TMP/sig3"
check sigterm-import-first 0 "$FUSEC" import "$TMP/big.yaml" -o "$TMP/sig3/g.yaml"
echo mine >"$TMP/sig3/g.data/keep.txt"
snapshot "$TMP/sig3" >"$TMP/sig3.before"
sed 's/data: \[0,/data: [7,/' "$TMP/big.yaml" >"$TMP/big2.yaml"
FUSEC_TEST_RENAME_DELAY_MS=5000 "$FUSEC" import "$TMP/big2.yaml" -o "$TMP/sig3/g.yaml" 2>"$TMP/sig3.err" &
pid=$!
wait_temp "$TMP/sig3" g.yaml.fusec-   # written just before OUT.data is exchanged
sleep 0.3
kill -TERM $pid
wait $pid 2>/dev/null
check sigterm-import-killed 0 test $? -eq 143
snapshot "$TMP/sig3" >"$TMP/sig3.after"
same_files sigterm-import-unchanged "$TMP/sig3.before" "$TMP/sig3.after"
check sigterm-import-no-temp 0 no_temp "$TMP/sig3" "$TMP/sig3/g.data"
# Into a new OUT.data: the folder goes again.
mkdir "$TMP/sig4"
FUSEC_TEST_RENAME_DELAY_MS=5000 "$FUSEC" import "$TMP/big.yaml" -o "$TMP/sig4/g.yaml" 2>"$TMP/sig4.err" &
pid=$!
wait_temp "$TMP/sig4" g.yaml.fusec-
sleep 0.3
kill -TERM $pid
wait $pid 2>/dev/null
check sigterm-import-new-killed 0 test $? -eq 143
check sigterm-import-new-nothing 0 test -z "$(ls -A "$TMP/sig4")"

# ---- 18: paths make reads back, or a clear refusal ----------------------------------

# ' ', '#', '$', ':', '[', '*', '?' and a backslash before a space, in the graph's
# folder and in -o: make reads the depfile, finds the outputs up to date, and
# rebuilds once the graph is newer.
GD="$TMP/a:b c#d\$e[f]*g?h\\ i"
OD="$TMP/o:1 #2"
mkdir -p "$GD"
graph mk >"$GD/g.yaml"
check depfile-escape 0 "$FUSEC" compile -q "$GD/g.yaml" -o "$OD" -M "$TMP/esc.mk"
contains depfile-escape-text "$TMP/esc.mk" "$TMP/o\\:1\\ \\#2/mk.ptx"
printf 'all: %s\n%s:\n\t@echo rebuild\ninclude %s\n' "$TMP/o\\:1\\ \\#2/mk.plan.json" \
	"$TMP/o\\:1\\ \\#2/mk.plan.json" "$TMP/esc.mk" >"$TMP/esc.Makefile"
check depfile-escape-make 0 env MAKEFLAGS= MAKELEVEL= make -s --no-print-directory -f "$TMP/esc.Makefile"
same depfile-escape-uptodate "$TMP/out" ""
touch -d '+2 seconds' "$GD/g.yaml"
check depfile-escape-make-again 0 env MAKEFLAGS= MAKELEVEL= make -s --no-print-directory -f "$TMP/esc.Makefile"
same depfile-escape-stale "$TMP/out" "rebuild"
# ';', '%', '=' and a line break have no escape in a make rule: refused, naming the
# path, and nothing is published
for c in semi pct eq nl; do
	case $c in
	semi) d="$TMP/x;y"; shown=$d; what="';'" ;;
	pct) d="$TMP/50%"; shown=$d; what="'%'" ;;
	eq) d="$TMP/k=v"; shown=$d; what="'='" ;;
	nl) d="$TMP/new
line"; shown="$TMP/new\\nline"; what="a line break" ;;
	esac
	mkdir -p "$d"
	graph mk >"$d/g.yaml"
	check "depfile-refuse-$c" 3 "$FUSEC" compile -q "$d/g.yaml" -o "$TMP/o18$c" -M "$TMP/r$c.mk"
	contains "depfile-refuse-$c-msg" "$TMP/err" "cannot write depfile '$TMP/r$c.mk': the path '$shown/g.yaml' has $what"
	check "depfile-refuse-$c-nothing" 0 test ! -e "$TMP/o18$c" -a ! -e "$TMP/r$c.mk"
done
# in the targets too (-o)
check depfile-refuse-target 3 "$FUSEC" compile -q "$TMP/fw.yaml" -o "$TMP/50%" -M "$TMP/rt.mk"
contains depfile-refuse-target-msg "$TMP/err" "the path '$TMP/50%/fw.plan.json' has '%'"

# ---- 21: a full disk names the user's file, not a temporary one ----------------------

check full-disk-compile 3 sh -c "trap '' XFSZ; ulimit -f 1; '$FUSEC' compile -q --no-cache '$TMP/fw.yaml' -o '$TMP/o21' --emit ll"
contains full-disk-compile-msg "$TMP/err" "cannot write '$TMP/o21/fw."
check full-disk-no-temp-name 1 grep -q 'fusec-' "$TMP/err"
check full-disk-nothing 0 test ! -e "$TMP/o21"
