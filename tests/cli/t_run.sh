# t_run.sh: `fusec run` with the reference interpreter: summaries, .npy inputs and
# outputs, deterministic random inputs, --check, and the exit codes of bad inputs,
# runtime failures and backends still to come.

cat >"$TMP/sq.yaml" <<'EOF'
format: fusec-graph/1
inputs:
  a: {dtype: f32, shape: [4]}
  b: {dtype: f32, shape: [4]}
ops:
  - {op: mul, in: [a, b], out: t}
  - {op: sum, in: [t], axis: 0, out: s}
  - {op: cast, in: [t], dtype: bf16, out: h}
outputs: [t, s, h]
EOF

cat >"$TMP/gather.yaml" <<'EOF'
format: fusec-graph/1
inputs:
  x: {dtype: f32, shape: [4]}
  i: {dtype: i64, shape: [1]}
ops:
  - {op: gather, in: [x, i], axis: 0, out: y}
outputs: [y]
EOF

# npy_head DESCR SHAPE: a .npy v1.0 header whose dict is padded to 118 bytes.
npy_head() {
	printf '\223NUMPY\001\000\166\000'
	printf "%-117s\n" "{'descr': '$1', 'fortran_order': False, 'shape': $2, }"
}
mkdir -p "$TMP/in"
{ npy_head '<f4' '(4,)'; printf '\000\000\200\077\000\000\000\100\000\000\100\100\000\000\200\100'; } >"$TMP/in/a.npy"
cp "$TMP/in/a.npy" "$TMP/in/b.npy"
{ npy_head '<f4' '(2,)'; printf '\000\000\200\077\000\000\000\100'; } >"$TMP/short.npy"
{ npy_head '<i8' '(1,)'; printf '\007\000\000\000\000\000\000\000'; } >"$TMP/i7.npy"
{ npy_head '<i8' '(1,)'; printf '\002\000\000\000\000\000\000\000'; } >"$TMP/i2.npy"
printf 'not a npy file' >"$TMP/junk.npy"

sq_text='t: f32[4] sum=30 first=[1, 4, 9, 16]
s: f32[1] sum=30 first=[30]
h: bf16[4] sum=30 first=[1, 4, 9, 16]'

check run-inputs-dir 0 "$FUSEC" run "$TMP/sq.yaml" --backend interp --inputs "$TMP/in" &&
	same run-inputs-dir-out "$TMP/out" "$sq_text"
check run-inputs-list 0 "$FUSEC" run "$TMP/sq.yaml" --inputs "a=$TMP/in/a.npy,b=$TMP/in/b.npy" &&
	same run-inputs-list-out "$TMP/out" "$sq_text"
check run-inputs-partial 0 "$FUSEC" run "$TMP/sq.yaml" --inputs "a=$TMP/in/a.npy" --seed 1 &&
	contains run-inputs-partial-out "$TMP/out" "t: f32[4] sum="

# --outputs: .npy files, byte-identical from run to run; bf16 goes out as <f4.
check run-outputs 0 "$FUSEC" run "$TMP/sq.yaml" --inputs "$TMP/in" --outputs "$TMP/o1"
check run-outputs-again 0 "$FUSEC" run "$TMP/sq.yaml" --inputs "$TMP/in" --outputs "$TMP/o2"
for f in t s h; do
	same_files "run-outputs-$f" "$TMP/o1/$f.npy" "$TMP/o2/$f.npy"
done
wc -c <"$TMP/o1/t.npy" | tr -d ' ' >"$TMP/n"
same run-outputs-size "$TMP/n" "144"
contains run-outputs-header "$TMP/o1/t.npy" "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }"
contains run-outputs-bf16 "$TMP/o1/h.npy" "'descr': '<f4'"
# the interpreter also writes each output's error bound, <f8
for f in t s h; do
	same_files "run-outputs-bound-$f" "$TMP/o1/$f.bound.npy" "$TMP/o2/$f.bound.npy"
done
contains run-outputs-bound "$TMP/o1/t.bound.npy" "{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }"
# an output written by run reads back as an input
check run-outputs-read-back 0 "$FUSEC" run "$TMP/sq.yaml" --inputs "a=$TMP/o1/t.npy,b=$TMP/in/b.npy" &&
	contains run-outputs-read-back-out "$TMP/out" "t: f32[4] sum=100 first=[1, 8, 27, 64]"

# Random inputs are deterministic per seed.
check run-seed-a 0 "$FUSEC" run "$TMP/sq.yaml" --seed 7 --outputs "$TMP/r1" && cp "$TMP/out" "$TMP/r1.txt"
check run-seed-b 0 "$FUSEC" run "$TMP/sq.yaml" --seed 7 --outputs "$TMP/r2"
same_files run-seed-same-text "$TMP/out" "$TMP/r1.txt"
same_files run-seed-same-npy "$TMP/r1/t.npy" "$TMP/r2/t.npy"
check run-seed-c 0 "$FUSEC" run "$TMP/sq.yaml" --seed 8
if cmp -s "$TMP/out" "$TMP/r1.txt"; then
	echo "FAIL run-seed-differs: seeds 7 and 8 give the same inputs"; fail=$((fail + 1))
else
	pass=$((pass + 1))
fi

check run-check 0 "$FUSEC" run "$TMP/sq.yaml" --check &&
	contains run-check-out "$TMP/out" "check s: max_abs=0 max_err/bound=0 ok"

# --check holds each element to the interpreter's error bound; --atol/--rtol
# replace it, and a failing output lists its worst elements.
cat >"$TMP/expsum.yaml" <<'EOF2'
format: fusec-graph/1
inputs: {x: {dtype: f32, shape: [16, 512]}}
ops:
  - {op: exp, in: [x], out: e}
  - {op: sum, in: [e], axis: 1, out: s}
outputs: [s]
EOF2
check run-check-bound 0 "$FUSEC" run "$TMP/expsum.yaml" --backend cpu --check &&
	contains run-check-bound-out "$TMP/out" "check s: max_abs=" &&
	contains run-check-bound-worst "$TMP/out" "  worst ["
check run-check-flat 3 "$FUSEC" run "$TMP/expsum.yaml" --backend cpu --check --atol 0 --rtol 0 &&
	contains run-check-flat-out "$TMP/out" "(atol=0 rtol=0) bad=" &&
	contains run-check-flat-fail "$TMP/out" " FAIL" &&
	contains run-check-flat-worst "$TMP/out" "  worst ["
check run-check-loose 0 "$FUSEC" run "$TMP/expsum.yaml" --backend cpu --check --rtol 1e-3
check run-atol-alone 2 "$FUSEC" run "$TMP/expsum.yaml" --atol 1 &&
	contains run-atol-alone-err "$TMP/err" "--atol and --rtol apply to --check"
check run-rtol-bad 2 "$FUSEC" run "$TMP/expsum.yaml" --check --rtol -1 &&
	contains run-rtol-bad-err "$TMP/err" "option '--rtol' needs a number >= 0, got '-1'"

# Bad inputs exit 1 with a clear message.
check run-input-missing 1 "$FUSEC" run "$TMP/sq.yaml" --inputs "$TMP/nowhere" &&
	contains run-input-missing-msg "$TMP/err" "cannot open"
check run-input-shape 1 "$FUSEC" run "$TMP/sq.yaml" --inputs "a=$TMP/short.npy" &&
	contains run-input-shape-msg "$TMP/err" "input 'a' needs f32[4], got f32[2]"
check run-input-dtype 1 "$FUSEC" run "$TMP/sq.yaml" --inputs "a=$TMP/i2.npy" &&
	contains run-input-dtype-msg "$TMP/err" "input 'a' needs f32[4], got i64[1]"
check run-input-junk 1 "$FUSEC" run "$TMP/sq.yaml" --inputs "b=$TMP/junk.npy" &&
	contains run-input-junk-msg "$TMP/err" "junk.npy: error: not a .npy file"
check run-input-unknown 1 "$FUSEC" run "$TMP/sq.yaml" --inputs "zz=$TMP/in/a.npy" &&
	contains run-input-unknown-msg "$TMP/err" "the graph has no input 'zz'"
check run-input-syntax 1 "$FUSEC" run "$TMP/sq.yaml" --inputs "a=$TMP/in/a.npy,oops"

# A gather index out of range is a runtime failure (3); in range it runs.
check run-gather-ok 0 "$FUSEC" run "$TMP/gather.yaml" --inputs "x=$TMP/in/a.npy,i=$TMP/i2.npy" &&
	same run-gather-ok-out "$TMP/out" "y: f32[1] sum=3 first=[3]"
check run-gather-range 3 "$FUSEC" run "$TMP/gather.yaml" --inputs "x=$TMP/in/a.npy,i=$TMP/i7.npy" &&
	contains run-gather-range-msg "$TMP/err" "index 7 is out of range"
check run-gather-random 0 "$FUSEC" run "$TMP/gather.yaml" --seed 3

# Backends and usage.
check run-backend-cpu 0 "$FUSEC" run "$TMP/sq.yaml" --backend cpu --check &&
	contains run-backend-cpu-check "$TMP/out" " ok"
FUSEC_LIBCUDA=/nonexistent/libcuda.so.1 check run-backend-cuda-no-driver 3 "$FUSEC" run "$TMP/sq.yaml" --backend cuda &&
	contains run-backend-cuda-msg "$TMP/err" "libcuda"
check run-backend-unknown 2 "$FUSEC" run "$TMP/sq.yaml" --backend tpu
check run-folder-interp 2 "$FUSEC" run "$TMP/in" &&
	contains run-folder-msg "$TMP/err" "is a compiled plan: it runs with --backend cuda"
check run-seed-bad 2 "$FUSEC" run "$TMP/sq.yaml" --seed x
check run-no-graph 2 "$FUSEC" run
check run-help 0 "$FUSEC" run --help && contains run-help-text "$TMP/out" "usage: fusec run"

# two streams sharing tensors: the reader's stream waits for the producer's
check run-streams 0 "$FUSEC" run docs/examples/streams.yaml --backend cpu --check &&
	contains run-streams-ok "$TMP/out" "check y: " && contains run-streams-r "$TMP/out" "check r: "
# a scalar of -0.0 keeps its sign through the plan (x / -0 is -inf)
printf 'format: fusec-graph/1\ninputs: {a: {dtype: f32, shape: [4]}}\nops:\n  - {op: abs, in: [a], out: p}\n  - {op: div_scalar, in: [p], scalar: -0.0, out: y}\noutputs: [y]\n' > "$TMP/negz.yaml"
check run-negzero 0 "$FUSEC" compile "$TMP/negz.yaml" -o "$TMP/nz" &&
	contains run-negzero-plan "$TMP/nz/negz.plan.json" '"f64":-0.0'
