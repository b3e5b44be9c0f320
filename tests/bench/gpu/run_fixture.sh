#!/bin/sh
# run_fixture.sh: check fusec-run on a real GPU with the hand-made fixture in
# tests/runtime/ (axpb.cu → axpb.ptx, axpb.plan.json): t = a*b + 2c, then
# y = 0.5 t + 1 and m = (y > 1) as u8. Needs python3 with numpy.
# Run from the project root:  sh tests/bench/gpu/run_fixture.sh [BUILD_DIR]
# (BUILD_DIR defaults to build; fusec-run is built there if missing).
set -u
B=${1:-build}
RUN=$B/fusec-run
FIX=tests/runtime/axpb.plan.json
[ -x "$RUN" ] || make BUILD="$B" "$RUN" || exit 1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }

# check_outputs NAME INDIR OUTDIR: compare with numpy's float32 arithmetic.
check_outputs() {
	if python3 - "$2" "$3" <<'PY'
import sys
import numpy as np
i, o = sys.argv[1], sys.argv[2]
a, b, c = (np.load(f"{i}/{n}.npy") for n in "abc")
y, m = np.load(f"{o}/y.npy"), np.load(f"{o}/m.npy")
assert y.dtype == np.float32 and y.shape == (1000, 37), (y.dtype, y.shape)
assert m.dtype == np.uint8 and m.shape == (1000, 37), (m.dtype, m.shape)
t = a * b + np.float32(2) * c
want = t * np.float32(0.5) + np.float32(1)
assert not np.isnan(y).any(), "y has unwritten (NaN) elements"
err = np.abs(y - want).max()
assert np.allclose(y, want, rtol=1e-5, atol=1e-5), f"y differs: max abs error {err}"
assert (m == (y > 1)).all(), "m differs from y > 1"
assert 0 < int(m.sum()) < m.size, "m is constant: inputs not random?"
print(f"    y max abs error {err:.3g}, m ones {int(m.sum())}")
PY
	then ok "$1"; else bad "$1"; fi
}

# 1. Inputs made by numpy.
mkdir -p "$T/in1"
python3 - "$T/in1" <<'PY'
import sys
import numpy as np
r = np.random.default_rng(42)
for n in "abc":
    np.save(f"{sys.argv[1]}/{n}.npy", r.uniform(-2, 2, (1000, 37)).astype(np.float32))
PY
if "$RUN" $FIX --inputs "$T/in1" --outputs "$T/out1"; then
	check_outputs numpy_inputs "$T/in1" "$T/out1"
else
	bad "numpy_inputs (exit $?)"
fi

# 2. fusec-run's own seeded random inputs, saved for the check.
if "$RUN" $FIX --seed 3 --save-inputs "$T/in2" --outputs "$T/out2"; then
	check_outputs random_inputs "$T/in2" "$T/out2"
else
	bad "random_inputs (exit $?)"
fi

# 3. Timing.
if "$RUN" $FIX --bench --iters 100 --warmup 10 >"$T/bench" 2>&1 &&
   grep -q "^bandwidth: " "$T/bench"; then
	sed 's/^/    /' "$T/bench"; ok bench
else
	cat "$T/bench"; bad bench
fi

# 4. Driver errors are exit 3 with the driver's words.
cp $FIX "$T/bad.plan.json"
sed 's/^\.visible \.entry fix_fma(/.visible .entry fix_fma(\n\tthis is not ptx;/' \
	tests/runtime/axpb.ptx >"$T/axpb.ptx"
"$RUN" "$T/bad.plan.json" 2>"$T/err"
rc=$?
cat "$T/err"
if [ $rc -eq 3 ] && grep -q "cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX" "$T/err"; then
	ok bad_ptx
else
	bad "bad_ptx (exit $rc)"
fi
sed 's/"entry": "fix_fma"/"entry": "fix_nope"/' $FIX >"$T/bad.plan.json"
cp tests/runtime/axpb.ptx "$T/axpb.ptx"
"$RUN" "$T/bad.plan.json" 2>"$T/err"
rc=$?
cat "$T/err"
if [ $rc -eq 3 ] && grep -q "CUDA_ERROR_NOT_FOUND" "$T/err"; then
	ok bad_entry
else
	bad "bad_entry (exit $rc)"
fi

echo "run_fixture: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
