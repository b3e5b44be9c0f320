# t_compile.sh: fusec compile's options and its promise that a failed compile
# writes nothing.
G=docs/examples/reuse.yaml
check compile-ok 0 "$FUSEC" compile $G -o "$TMP/ok/deep" &&
	check compile-files 0 ls "$TMP/ok/deep/reuse.ptx" "$TMP/ok/deep/reuse.plan.json"
check compile-again 0 "$FUSEC" compile $G -o "$TMP/ok2"
same_files compile-deterministic "$TMP/ok/deep/reuse.plan.json" "$TMP/ok2/reuse.plan.json"
check compile-empty-o 2 "$FUSEC" compile $G -o ""
check compile-bad-arch 2 "$FUSEC" compile $G --arch sm_1 -o "$TMP/a" &&
	contains compile-bad-arch-msg "$TMP/err" "unknown --arch 'sm_1'"
check compile-arch-80 0 "$FUSEC" compile $G --arch sm_80 -o "$TMP/a80" &&
	contains compile-arch-80-ptx "$TMP/a80/reuse.ptx" ".target sm_80"
check compile-no-libdevice 2 "$FUSEC" compile $G --libdevice /nonexistent/libdevice.bc
check compile-bad-emit 2 "$FUSEC" compile $G --emit pdf
check compile-emit 0 "$FUSEC" compile $G -o "$TMP/e" --emit ll,relative,dot &&
	check compile-emit-files 0 ls "$TMP/e/reuse.ll" "$TMP/e/reuse.relative.txt" "$TMP/e/reuse.dot"
check compile-time 0 "$FUSEC" compile $G -o "$TMP/t" --time --no-result-cache &&
	contains compile-time-msg "$TMP/err" "time: read"
# an output path taken by a folder: exit 3 and nothing written beside it
mkdir -p "$TMP/busy/reuse.ptx"
check compile-busy 3 "$FUSEC" compile $G -o "$TMP/busy" &&
	contains compile-busy-msg "$TMP/err" "it is a folder"
same compile-busy-nothing "$(ls -A "$TMP/busy" > "$TMP/ls"; echo "$TMP/ls")" "reuse.ptx"
# an invalid graph: exit 1, and the folder is not even created
check compile-invalid 1 "$FUSEC" compile tests/errors/unknown_op.yaml -o "$TMP/inv"
check compile-invalid-nothing 0 test ! -e "$TMP/inv"
# an input that is also an output is read back by runtimes: "output": true
printf 'format: fusec-graph/1\ninputs: {a: {dtype: f32, shape: [4]}}\nops:\n  - {op: neg, in: [a], out: y}\noutputs: [a, y]\n' > "$TMP/io.yaml"
check compile-input-output 0 "$FUSEC" compile "$TMP/io.yaml" -o "$TMP/io" &&
	contains compile-input-output-flag "$TMP/io/io.plan.json" '"output":true'
# --plan-style: compact by default (one line), pretty indented for people; the same
# document either way, and deterministic
check compile-pretty 0 "$FUSEC" compile $G -o "$TMP/pp" --plan-style pretty &&
	contains compile-pretty-tabs "$TMP/pp/reuse.plan.json" '	"format":	"fusec-plan/1",'
same compile-compact-lines "$(wc -l < "$TMP/ok2/reuse.plan.json" > "$TMP/wc"; echo "$TMP/wc")" "1"
contains compile-compact-head "$TMP/ok2/reuse.plan.json" '{"format":"fusec-plan/1","compiler":"fusec '
check compile-pretty-same-doc 0 python3 -c '
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
sys.exit(0 if a == b else 1)' "$TMP/pp/reuse.plan.json" "$TMP/ok2/reuse.plan.json"
check compile-pretty-again 0 "$FUSEC" compile $G -o "$TMP/pp2" --plan-style pretty
same_files compile-pretty-deterministic "$TMP/pp/reuse.plan.json" "$TMP/pp2/reuse.plan.json"
check compile-bad-plan-style 2 "$FUSEC" compile $G --plan-style fancy -o "$TMP/ps" &&
	contains compile-bad-plan-style-msg "$TMP/err" "unknown --plan-style 'fancy'"
# names that need escaping reach the plan as valid JSON and read back unchanged
printf '{"format": "fusec-graph/1", "name": "esc", "inputs": {"a\\"b\\\\c/\\u00e9": {"dtype": "f32", "shape": [4]}},\n "ops": [{"op": "neg", "in": ["a\\"b\\\\c/\\u00e9"], "out": "y"}], "outputs": ["y"]}\n' > "$TMP/esc.json"
check compile-escape 0 "$FUSEC" compile "$TMP/esc.json" -o "$TMP/esc" &&
	check compile-escape-names 0 python3 -c '
import json, sys
p = json.load(open(sys.argv[1], encoding="utf-8"))
names = [t["name"] for t in p["tensors"]]
sys.exit(0 if names == ["a\"b\\c/\u00e9", "y"] else 1)' "$TMP/esc/esc.plan.json"
contains compile-escape-text "$TMP/esc/esc.plan.json" '"name":"a\"b\\c/é"'
# the kernel cache: a second compile of the same kernels skips LLVM and writes the
# very same files; --no-cache neither reads nor writes it (--no-result-cache: the
# whole-compile cache of t_result_cache.sh would answer first)
check cache-cold 0 "$FUSEC" compile $G -o "$TMP/kc1" --cache-dir "$TMP/kc" --no-result-cache --time &&
	contains cache-cold-miss "$TMP/err" "kernel cache: 0 of 1 chunk hit"
check cache-warm 0 "$FUSEC" compile $G -o "$TMP/kc2" --cache-dir "$TMP/kc" --no-result-cache --time &&
	contains cache-warm-hit "$TMP/err" "kernel cache: 1 of 1 chunk hit (LLVM skipped)"
check cache-off 0 "$FUSEC" compile $G -o "$TMP/kc3" --no-cache --time &&
	cp "$TMP/err" "$TMP/err.last" && check cache-off-silent 1 grep -q "kernel cache" "$TMP/err.last"
same_files cache-same-ptx "$TMP/kc1/reuse.ptx" "$TMP/kc2/reuse.ptx"
same_files cache-same-ptx-off "$TMP/kc1/reuse.ptx" "$TMP/kc3/reuse.ptx"
same_files cache-same-plan "$TMP/kc1/reuse.plan.json" "$TMP/kc2/reuse.plan.json"
same cache-one-entry "$(ls "$TMP/kc" | wc -l > "$TMP/n"; echo "$TMP/n")" "1"
# another arch is another entry
check cache-arch 0 "$FUSEC" compile $G -o "$TMP/kc4" --cache-dir "$TMP/kc" --no-result-cache --arch sm_80 --time &&
	contains cache-arch-miss "$TMP/err" "kernel cache: 0 of 1 chunk hit"
contains cache-arch-ptx "$TMP/kc4/reuse.ptx" ".target sm_80"
# a damaged entry is a miss, and is replaced
for f in "$TMP"/kc/*.ptx; do printf 'garbage' > "$f"; done
check cache-damaged 0 "$FUSEC" compile $G -o "$TMP/kc5" --cache-dir "$TMP/kc" --no-result-cache --time &&
	contains cache-damaged-miss "$TMP/err" "kernel cache: 0 of 1 chunk hit"
same_files cache-damaged-ptx "$TMP/kc1/reuse.ptx" "$TMP/kc5/reuse.ptx"
check cache-repaired 0 "$FUSEC" compile $G -o "$TMP/kc6" --cache-dir "$TMP/kc" --no-result-cache --time &&
	contains cache-repaired-hit "$TMP/err" "(LLVM skipped)"
# the default folder is $XDG_CACHE_HOME/fusec
check cache-xdg 0 env XDG_CACHE_HOME="$TMP/xdg" "$FUSEC" compile $G -o "$TMP/kc7"
check cache-xdg-entry 0 sh -c 'ls "$1"/xdg/fusec/*.ptx' sh "$TMP"
# a cache that cannot be written is skipped
check cache-unwritable 0 "$FUSEC" compile $G -o "$TMP/kc8" --cache-dir /proc/fusec-cache
same_files cache-unwritable-ptx "$TMP/kc1/reuse.ptx" "$TMP/kc8/reuse.ptx"
check cache-empty-dir 2 "$FUSEC" compile $G --cache-dir "" -o "$TMP/kc9"
# 8 compiles at once sharing one cache: every output is the one a lone compile writes
for g in tests/golden/chains.yaml tests/golden/fusers.yaml; do
	n=$(basename "$g" .yaml)
	"$FUSEC" compile "$g" -q -o "$TMP/par-ref" --no-cache 2>/dev/null
	i=0
	while [ $i -lt 8 ]; do
		"$FUSEC" compile "$g" -q -o "$TMP/par$i" --cache-dir "$TMP/kpar" 2>/dev/null &
		i=$((i + 1))
	done
	wait
	i=0
	while [ $i -lt 8 ]; do
		same_files "cache-parallel-$n-$i" "$TMP/par-ref/$n.ptx" "$TMP/par$i/$n.ptx"
		i=$((i + 1))
	done
done
check cache-parallel-no-temp 1 sh -c 'ls -A "$1"/kpar | grep -q "^\.tmp"' sh "$TMP"
# LLVM threads: the same files for every -j, and the same PTX with --emit ll (one
# module, no threads)
for g in tests/golden/chains.yaml tests/golden/fusers.yaml tests/golden/holes.yaml; do
	n=$(basename "$g" .yaml)
	check "jobs-1-$n" 0 "$FUSEC" compile "$g" -o "$TMP/j1" -j 1 --no-cache
	check "jobs-3-$n" 0 "$FUSEC" compile "$g" -o "$TMP/j3" --jobs 3 --no-cache
	same_files "jobs-ptx-$n" "$TMP/j1/$n.ptx" "$TMP/j3/$n.ptx"
	same_files "jobs-plan-$n" "$TMP/j1/$n.plan.json" "$TMP/j3/$n.plan.json"
	check "jobs-ll-$n" 0 "$FUSEC" compile "$g" -o "$TMP/jll" --emit ll --no-cache
	check "jobs-ll-entries-$n" 0 sh -c '[ "$(grep -c "^.visible .entry" "$1")" = "$(grep -c "^.visible .entry" "$2")" ]' sh "$TMP/j1/$n.ptx" "$TMP/jll/$n.ptx"
done
check jobs-zero 2 "$FUSEC" compile $G -j 0 -o "$TMP/j0"
# a heavy kernel (a tiled matmul, a cooperative reduction) ends its chunk, so that
# such kernels go to different threads: at least as many chunks as tiled kernels
# here (three kernels, two of them tiled: one chunk each, and one for the plain one)
g=tests/bench/gpu/mm_check_f32.json
check jobs-heavy-chunks 0 sh -c '"$1" compile "$2" -o "$3" -j 2 --no-cache --time 2>"$3.err" &&
	t=$(grep -o "\"tiles\":\"" "$3/mm_check_f32.plan.json" | wc -l) && [ "$t" -ge 2 ] &&
	c=$(sed -n "s/.* in \([0-9]*\) chunks on 2 threads.*/\1/p" "$3.err") && [ "$c" -ge "$t" ]' \
	sh "$FUSEC" "$g" "$TMP/heavy"
# matmul tiles past 48 KiB of shared memory declare the launch's dynamic shared
# memory at module level: joined once whatever the chunks, the launches ask for it
g=tests/bench/gpu/mm_check_long_bf16.json
check jobs-dynshared-1 0 "$FUSEC" compile "$g" -o "$TMP/d1" -j 1 --no-cache
check jobs-dynshared-3 0 "$FUSEC" compile "$g" -o "$TMP/d3" -j 3 --no-cache
same_files jobs-dynshared-ptx "$TMP/d1/mm_check_long_bf16.ptx" "$TMP/d3/mm_check_long_bf16.ptx"
check jobs-dynshared-once 0 sh -c '[ "$(grep -c "^\.extern \.shared .* fusec_dynamic_shared\[\];" "$1")" = 1 ]' sh "$TMP/d3/mm_check_long_bf16.ptx"
contains jobs-dynshared-tiles "$TMP/d3/mm_check_long_bf16.plan.json" '"tiles":"wg128x128x64s4"'
contains jobs-dynshared-bytes "$TMP/d3/mm_check_long_bf16.plan.json" '"shared_bytes":132096'

# the schedule verifier (--verify) between search and codegen, on every example and
# benchmark graph (the goldens go through it in t_search.sh)
for g in docs/examples/*.yaml docs/examples/*.json tests/bench/gpu/*.json; do
	check "compile-verify-$(basename "$g")" 0 "$FUSEC" compile "$g" -o "$TMP/v" --verify
done

# --allow-tf32: the plan records it and f32 matmuls (M > 16) take tf32 tiles;
# without it neither; run --backend cpu emulates it and checks at tf32's tolerance
TF=tests/bench/gpu/mm_check_tf32.json
check compile-tf32 0 "$FUSEC" compile $TF -o "$TMP/tf" --allow-tf32
contains compile-tf32-option "$TMP/tf/mm_check_tf32.plan.json" '"allow_tf32":'
contains compile-tf32-tiles "$TMP/tf/mm_check_tf32.plan.json" '"tf32x128x128x16s3"'
check compile-no-tf32 0 "$FUSEC" compile $TF -o "$TMP/ntf"
check compile-no-tf32-option 1 grep -q '"allow_tf32"\|"tf32x' "$TMP/ntf/mm_check_tf32.plan.json"
check run-tf32-check 0 "$FUSEC" run $TF --backend cpu --check --allow-tf32
contains run-tf32-bound "$TMP/out" 'check at_big_y: '
# the kernel cache keys kernels with their tile configuration: the same ops compiled
# again with --allow-tf32 (other tiles, other entry names) must not hit f32 entries
check compile-tf32-cache-1 0 "$FUSEC" compile $TF -o "$TMP/kc1" --cache-dir "$TMP/kc"
check compile-tf32-cache-2 0 "$FUSEC" compile $TF -o "$TMP/kc2" --cache-dir "$TMP/kc" --allow-tf32
contains compile-tf32-cache-ptx "$TMP/kc2/mm_check_tf32.ptx" 'mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32'
# twins (codegen/module.c): the two matmuls (tiled: K = 128) differ only in
# whether their first operand may be overwritten, so their code is the same; LLVM
# compiles it once and the second kernel's PTX is the first's renamed, the same
# bytes as compiling both (two first operands: matmuls sharing one are siblings,
# one launch)
printf 'format: fusec-graph/1\nname: twins\ninputs:\n  x0: {dtype: f32, shape: [64, 128]}\n  w1: {dtype: f32, shape: [128, 64]}\n  w2: {dtype: f32, shape: [128, 64]}\nops:\n  - {op: neg, in: [x0], out: x}\n  - {op: relu, in: [x0], out: x2}\n  - {op: sync}\n  - {op: matmul, in: [x, w1], out: q}\n  - {op: matmul, in: [x2, w2], out: k}\n  - {op: add, in: [x2, x2], out: z}\n  - {op: sync}\n  - {op: add, in: [q, k], out: y}\noutputs: [y, z]\n' > "$TMP/twins.yaml"
check twins 0 "$FUSEC" compile "$TMP/twins.yaml" -o "$TMP/tw1" --no-cache --time &&
	contains twins-found "$TMP/err" "(1 compiled once for another: same code)"
check twins-off 0 env FUSEC_NO_TWINS=1 "$FUSEC" compile "$TMP/twins.yaml" -o "$TMP/tw2" --no-cache
same_files twins-same-ptx "$TMP/tw1/twins.ptx" "$TMP/tw2/twins.ptx"
same_files twins-same-plan "$TMP/tw1/twins.plan.json" "$TMP/tw2/twins.plan.json"
check twins-entries 0 sh -c 'grep -q "entry matmul_3e3aeb898856d01a" "$1" && grep -q "entry matmul_aaca2ed40f745c76" "$1"' sh "$TMP/tw1/twins.ptx"
