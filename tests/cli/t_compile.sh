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
check compile-time 0 "$FUSEC" compile $G -o "$TMP/t" --time &&
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
	contains compile-input-output-flag "$TMP/io/io.plan.json" '"output":	true'

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
contains run-tf32-tolerance "$TMP/out" 'atol=0.16 rtol=0.16 ok'
