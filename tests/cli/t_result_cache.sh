# The result cache (docs/kernel-cache.md): the same compile again copies the
# outputs it wrote before, byte for byte; anything that changes an output is a miss.
G=tests/golden/fusers.yaml
# no_hit NAME: the compile just checked did not answer from the result cache (its
# stderr copied first: check truncates $TMP/err before grep could read it)
no_hit() { cp "$TMP/err" "$TMP/err.last"; check "$1" 1 grep -q "result cache hit" "$TMP/err.last"; }
RC="$TMP/rc"
check rc-cold 0 "$FUSEC" compile $G -o "$TMP/r1" --cache-dir "$RC" --time &&
	contains rc-cold-llvm "$TMP/err" "kernel cache: 0 of"
check rc-entry 0 sh -c 'ls "$1"/r-*.res' sh "$RC"
check rc-warm 0 "$FUSEC" compile $G -o "$TMP/r2" --cache-dir "$RC" --time -j 1 &&
	contains rc-warm-hit "$TMP/err" "result cache hit"
same rc-warm-wrote "$TMP/out" "wrote $TMP/r2/fusers.plan.json $TMP/r2/fusers.ptx"
check rc-fresh 0 "$FUSEC" compile $G -o "$TMP/r0" --no-cache
for f in fusers.plan.json fusers.ptx; do
	same_files "rc-same-$f" "$TMP/r0/$f" "$TMP/r2/$f"
done
# every option that changes an output is part of the key
for opt in "--max-blocks 2" "--arch sm_80" "--plan-style pretty" "--max-bindings 4" \
	"--emit relative" "--verify"; do
	check "rc-opt-$opt" 0 "$FUSEC" compile $G -o "$TMP/r3" --cache-dir "$RC" --time $opt &&
		no_hit "rc-opt-miss-$opt"
	check "rc-opt-fresh-$opt" 0 "$FUSEC" compile $G -o "$TMP/r4" --no-cache $opt
	for f in "$TMP"/r4/*; do
		same_files "rc-opt-same-$opt-$(basename "$f")" "$f" "$TMP/r3/$(basename "$f")"
	done
	rm -rf "$TMP/r3" "$TMP/r4"
done
check rc-opt-hit-again 0 "$FUSEC" compile $G -o "$TMP/r3" --cache-dir "$RC" --time --emit relative &&
	contains rc-opt-hit-again-msg "$TMP/err" "result cache hit"
check rc-relative 0 test -s "$TMP/r3/fusers.relative.txt"
# so are the resource caps, which main takes out of argv
check rc-caps 1 "$FUSEC" compile $G -o "$TMP/r5" --cache-dir "$RC" --max-ops 2
# a log is printed while the search runs: such a compile does not use the cache
check rc-log 0 "$FUSEC" compile $G -o "$TMP/r6" --cache-dir "$RC" --log full --time &&
	contains rc-log-text "$TMP/err" "[explorer]" &&
	no_hit rc-log-miss
# --no-cache and --no-result-cache store no entry
check rc-off 0 "$FUSEC" compile $G -o "$TMP/r7" --cache-dir "$TMP/rc-off" --no-result-cache
check rc-off-none 1 sh -c 'ls "$1" | grep -q "^r-"' sh "$TMP/rc-off"
# the graph's bytes are in the key: an edited file is a miss
sed 's/op: exp,/op: abs,/' $G > "$TMP/g.yaml"
cp $G "$TMP/same.yaml"
check rc-graph-same 0 "$FUSEC" compile "$TMP/same.yaml" -o "$TMP/r8" --cache-dir "$RC" --time
check rc-graph-changed 0 "$FUSEC" compile "$TMP/g.yaml" -o "$TMP/r9" --cache-dir "$RC" --time &&
	no_hit rc-graph-changed-miss
cp "$TMP/g.yaml" "$TMP/same.yaml"
check rc-graph-edited 0 "$FUSEC" compile "$TMP/same.yaml" -o "$TMP/r10" --cache-dir "$RC" --time &&
	no_hit rc-graph-edited-miss
same_files rc-graph-edited-ptx "$TMP/r9/fusers.ptx" "$TMP/r10/fusers.ptx"
# a damaged entry is a miss, and is replaced
for f in "$RC"/r-*.res; do head -c 200 "$f" > "$f.x" && mv "$f.x" "$f"; done
check rc-damaged 0 "$FUSEC" compile $G -o "$TMP/r11" --cache-dir "$RC" --time &&
	no_hit rc-damaged-miss
same_files rc-damaged-ptx "$TMP/r0/fusers.ptx" "$TMP/r11/fusers.ptx"
check rc-repaired 0 "$FUSEC" compile $G -o "$TMP/r12" --cache-dir "$RC" --time &&
	contains rc-repaired-hit "$TMP/err" "result cache hit"
# constants from a .npy file: the file's bytes are checked on every hit
python3 - "$TMP/w.npy" 1 <<'PY'
import struct, sys
hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }"
hdr += " " * (64 - 10 - len(hdr) - 1) + "\n"
v = float(sys.argv[2])
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
    f.write(struct.pack("<4f", v, 2, 3, 4))
PY
cat > "$TMP/c.yaml" <<'YAML'
format: fusec-graph/1
name: consts
inputs:
  x: {dtype: f32, shape: [4]}
constants:
  w: {dtype: f32, shape: [4], npy: w.npy}
ops:
  - {op: mul, in: [x, w], out: y}
outputs: [y]
YAML
check rc-npy-cold 0 "$FUSEC" compile "$TMP/c.yaml" -o "$TMP/c1" --cache-dir "$RC" -M "$TMP/c1.mk"
check rc-npy-warm 0 "$FUSEC" compile "$TMP/c.yaml" -o "$TMP/c1" --cache-dir "$RC" -M "$TMP/c2.mk" --time &&
	contains rc-npy-warm-hit "$TMP/err" "result cache hit"
same_files rc-npy-depfile "$TMP/c1.mk" "$TMP/c2.mk"
# a hit into a fresh folder writes the weights file the cold compile wrote
check rc-npy-warm-fresh 0 "$FUSEC" compile "$TMP/c.yaml" -o "$TMP/c1b" --cache-dir "$RC" --time &&
	contains rc-npy-warm-fresh-hit "$TMP/err" "result cache hit"
same_files rc-npy-warm-weights "$TMP/c1/consts.weights.bin" "$TMP/c1b/consts.weights.bin"
cp "$TMP/c1/consts.weights.bin" "$TMP/w1.bin"
python3 - "$TMP/w.npy" 7 <<'PY'
import struct, sys
hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }"
hdr += " " * (64 - 10 - len(hdr) - 1) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
    f.write(struct.pack("<4f", float(sys.argv[2]), 2, 3, 4))
PY
check rc-npy-changed 0 "$FUSEC" compile "$TMP/c.yaml" -o "$TMP/c3" --cache-dir "$RC" --time &&
	no_hit rc-npy-changed-miss
check rc-npy-fresh 0 "$FUSEC" compile "$TMP/c.yaml" -o "$TMP/c4" --no-cache
same_files rc-npy-weights "$TMP/c4/consts.weights.bin" "$TMP/c3/consts.weights.bin"
check rc-npy-weights-differ 1 cmp -s "$TMP/w1.bin" "$TMP/c3/consts.weights.bin"
# 8 compiles at once sharing a cache, half of them warm: all write the same files
i=0
while [ $i -lt 8 ]; do
	"$FUSEC" compile tests/golden/holes.yaml -q -o "$TMP/p$i" --cache-dir "$TMP/rcp" 2>/dev/null &
	i=$((i + 1))
done
wait
"$FUSEC" compile tests/golden/holes.yaml -q -o "$TMP/pref" --no-cache
i=0
while [ $i -lt 8 ]; do
	same_files "rc-parallel-$i" "$TMP/pref/holes.plan.json" "$TMP/p$i/holes.plan.json"
	i=$((i + 1))
done
check rc-parallel-no-temp 1 sh -c 'ls -A "$1" | grep -q "^\.tmp"' sh "$TMP/rcp"
