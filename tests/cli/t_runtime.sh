# t_runtime.sh: fusec-run, the standalone CUDA launcher, without a GPU: usage and
# plan errors, the missing driver, and full runs against build/tests/fakecuda.so,
# a stand-in driver that emulates the fixture's kernels (tests/runtime/).
BIN=$(dirname "$FUSEC")
RUN=$BIN/fusec-run
FAKE=$BIN/tests/fakecuda.so
FIX=tests/runtime/axpb.plan.json

check rt_no_plan 2 "$RUN"
contains rt_no_plan_msg "$TMP/err" "fusec-run: no plan given"
check rt_bad_option 2 "$RUN" $FIX --frobnicate
contains rt_bad_option_msg "$TMP/err" "unknown option '--frobnicate'"
check rt_bad_iters 2 "$RUN" $FIX --iters x
contains rt_bad_iters_msg "$TMP/err" "--iters expects a non-negative integer, got 'x'"
check rt_help 0 "$RUN" --help
contains rt_help_text "$TMP/out" "usage: fusec-run DIR|PLAN.json [OPTIONS]"
check rt_version 0 "$RUN" --version
same rt_version_text "$TMP/out" "fusec-run $(sed -n 's/^#define FUSEC_VERSION "\(.*\)"/\1/p' support/support.h)
plan format fusec-plan/1, fusec-plan/2"

check rt_plan_only 0 "$RUN" $FIX --plan-only
contains rt_plan_only_args "$TMP/out" "  args: t, f32 0.5, f32 1, i32 37000, y, m"
contains rt_plan_only_bytes "$TMP/out" "bytes that must move: 629000 (inputs 444000 + outputs 185000)"
check rt_plan_dir 0 "$RUN" tests/runtime --plan-only
contains rt_plan_dir_path "$TMP/out" "plan tests/runtime/axpb.plan.json: arch sm_90"

sed 's/"i32"/"i16"/' $FIX >"$TMP/bad.plan.json"
check rt_bad_plan 1 "$RUN" "$TMP/bad.plan.json" --plan-only
same rt_bad_plan_msg "$TMP/err" "$TMP/bad.plan.json: error: kernels[1].params[3]: unknown parameter type \"i16\" (ptr, i64, i32, f64 or f32)"
check rt_missing_plan 1 "$RUN" "$TMP/none.plan.json"
contains rt_missing_plan_msg "$TMP/err" "none.plan.json: error: cannot open"

check rt_no_driver 3 env FUSEC_LIBCUDA=/nonexistent/libcuda.so.1 "$RUN" $FIX
contains rt_no_driver_msg "$TMP/err" "fusec-run: error: cannot load the CUDA driver library '/nonexistent/libcuda.so.1': "

# The CUDA toolkit's stub library has every symbol but no driver behind it.
for stub in /usr/local/cuda/lib64/stubs/libcuda.so /usr/local/cuda/lib/stubs/libcuda.so; do
	[ -f "$stub" ] || continue
	check rt_stub 3 env FUSEC_LIBCUDA=$stub "$RUN" $FIX
	same rt_stub_msg "$TMP/err" "fusec-run: error: cuInit failed: CUDA_ERROR_STUB_LIBRARY (CUDA driver is a stub library)"
	break
done

export FUSEC_LIBCUDA="$FAKE"
check rt_run 0 "$RUN" $FIX --outputs "$TMP/o1" --save-inputs "$TMP/in"
cp "$TMP/out" "$TMP/run1"
contains rt_run_device "$TMP/run1" "device 0: Fake CUDA Device (sm_90)"
contains rt_run_y "$TMP/run1" "output y f32[1000,37] sum="
contains rt_run_m "$TMP/run1" "output m u8[1000,37] sum="
if grep -q "nan=[1-9]" "$TMP/run1"; then
	echo "FAIL rt_run_nan: an output has unwritten (NaN) elements"; fail=$((fail + 1))
else
	pass=$((pass + 1))
fi
same rt_run_clean "$TMP/err" ""
check rt_run_files 0 ls "$TMP/o1/y.npy" "$TMP/o1/m.npy" "$TMP/in/a.npy" "$TMP/in/b.npy" "$TMP/in/c.npy"

check rt_run_again 0 "$RUN" $FIX
same_files rt_deterministic "$TMP/out" "$TMP/run1"
check rt_seed 0 "$RUN" $FIX --seed 7
if cmp -s "$TMP/out" "$TMP/run1"; then
	echo "FAIL rt_seed_differs: --seed 7 gave the same values as seed 0"; fail=$((fail + 1))
else
	pass=$((pass + 1))
fi

# Inputs read back from .npy give the same outputs, bit for bit.
check rt_inputs 0 "$RUN" $FIX --inputs "$TMP/in" --outputs "$TMP/o2"
same_files rt_inputs_same "$TMP/out" "$TMP/run1"
same_files rt_inputs_y "$TMP/o1/y.npy" "$TMP/o2/y.npy"
mkdir -p "$TMP/in2" && cp "$TMP/in/b.npy" "$TMP/in/c.npy" "$TMP/in2/" && cp "$TMP/o1/m.npy" "$TMP/in2/a.npy"
check rt_inputs_dtype 1 "$RUN" $FIX --inputs "$TMP/in2"
same rt_inputs_dtype_msg "$TMP/err" "$TMP/in2/a.npy: error: holds u8[1000,37], but input 'a' is f32[1000,37]"
rm "$TMP/in2/a.npy"
check rt_inputs_missing 1 "$RUN" $FIX --inputs "$TMP/in2"
contains rt_inputs_missing_msg "$TMP/err" "$TMP/in2/a.npy"

check rt_bench 0 "$RUN" $FIX --bench --iters 9 --warmup 2
contains rt_bench_head "$TMP/out" "bench: 2 warm-up, 9 timed runs (median), 32 buffer sets rotated"
contains rt_bench_k0 "$TMP/out" "0      0      k_fma                    [145,1,1]        [256,1,1]             10.00        10.00"
contains rt_bench_k1 "$TMP/out" "1      1      k_affine                 [290,1,1]        [128,1,1]              5.00         5.00"
contains rt_bench_total "$TMP/out" "total: median 15.00 us, min 15.00 us"
contains rt_bench_latency "$TMP/out" "latency: median 15.00 us, min 15.00 us (direct launches, one run at a time, launch cost included)"
contains rt_bench_bytes "$TMP/out" "bytes that must move: 614.3 KiB (inputs 433.6 KiB + outputs 180.7 KiB)"
contains rt_bench_bw "$TMP/out" "bandwidth: 41.9 GB/s"
same rt_bench_clean "$TMP/err" ""
check rt_bench_big_l2 0 env FAKECUDA_L2=100000 "$RUN" $FIX --bench --iters 3
contains rt_bench_one_set "$TMP/out" "1 buffer set rotated"

# Device failures: exit 3 with the driver's words.
cp tests/runtime/axpb.ptx "$TMP/axpb.ptx" && echo "FAKE_JIT_ERROR" >>"$TMP/axpb.ptx"
cp $FIX "$TMP/axpb.plan.json"
# The plan's hash catches a PTX that is not the one it was compiled with.
check rt_ptx_hash 1 "$RUN" "$TMP/axpb.plan.json"
contains rt_ptx_hash_msg "$TMP/err" "$TMP/axpb.ptx: error: the PTX is not the one $TMP/axpb.plan.json was compiled with (SHA-256 "
contains rt_ptx_hash_msg2 "$TMP/err" "the folder holds files of different compiles"
# (the plan recording that PTX's hash, so that the driver sees it)
sed "s/\"ptx_sha256\": \"[0-9a-f]*\"/\"ptx_sha256\": \"$(sha256sum "$TMP/axpb.ptx" | cut -d' ' -f1)\"/" \
	$FIX >"$TMP/axpb.plan.json"
check rt_bad_ptx 3 "$RUN" "$TMP/axpb.plan.json"
same rt_bad_ptx_msg "$TMP/err" "fusec-run: error: loading $TMP/axpb.ptx: cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX (a PTX JIT compilation failed): ptxas application ptx input, line 3; fatal   : Parsing error near 'FAKE_JIT_ERROR'"
rm "$TMP/axpb.ptx"
check rt_no_ptx 1 "$RUN" "$TMP/axpb.plan.json"
same rt_no_ptx_msg "$TMP/err" "$TMP/axpb.ptx: error: the plan's PTX file: cannot open: No such file or directory"
# Only regular files are read, and within bounds: not a device, a pipe or a folder.
mkdir -p "$TMP/zero" && ln -sf /dev/zero "$TMP/zero/axpb.ptx" && cp $FIX "$TMP/zero/"
check rt_ptx_dev_zero 1 "$RUN" "$TMP/zero/axpb.plan.json"
same rt_ptx_dev_zero_msg "$TMP/err" "$TMP/zero/axpb.ptx: error: the plan's PTX file: not a regular file (a device)"
check rt_plan_dev_zero 1 "$RUN" /dev/zero
same rt_plan_dev_zero_msg "$TMP/err" "/dev/zero: error: not a regular file (a device)"
mkfifo "$TMP/fifo.plan.json"
check rt_plan_fifo 1 "$RUN" "$TMP/fifo.plan.json"
same rt_plan_fifo_msg "$TMP/err" "$TMP/fifo.plan.json: error: not a regular file (a pipe)"
rm -f "$TMP/fifo.plan.json"
check rt_oom 3 env FAKECUDA_MEM=300000 "$RUN" $FIX
same rt_oom_msg "$TMP/err" "fusec-run: error: allocating 148000 bytes for tensor 'c': cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)"
check rt_no_device 3 env FAKECUDA_NO_DEVICE=1 "$RUN" $FIX
same rt_no_device_msg "$TMP/err" "fusec-run: error: cuInit failed: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)"
check rt_old_gpu 3 env FAKECUDA_CC=80 "$RUN" $FIX
same rt_old_gpu_msg "$TMP/err" "fusec-run: error: the plan targets sm_90 but device 0 (Fake CUDA Device) is sm_80; compile it with --arch sm_80"
check rt_bad_device 3 "$RUN" $FIX --device 2
same rt_bad_device_msg "$TMP/err" "fusec-run: error: there is no CUDA device 2 (1 device found)"
sed 's/"entry": "fix_fma"/"entry": "fix_nope"/' $FIX >"$TMP/entry.plan.json"
cp tests/runtime/axpb.ptx "$TMP/"
check rt_bad_entry 1 "$RUN" "$TMP/entry.plan.json"
same rt_bad_entry_msg "$TMP/err" "$TMP/axpb.ptx: error: kernel 'k_fma': the PTX has no entry 'fix_nope'"
# The plan's parameters are checked against the PTX entry's signature before any
# launch: too few (the driver would read past the arguments), or of another kind.
sed -e 's/"params": \["ptr", "ptr", "ptr", "f64", "i64", "ptr"\]/"params": ["ptr", "ptr", "ptr", "f64", "i64"]/' \
    -e 's/{"i64": 37000}, {"tensor": "t"}\]/{"i64": 37000}]/' $FIX >"$TMP/few.plan.json"
check rt_few_params 1 "$RUN" "$TMP/few.plan.json"
same rt_few_params_msg "$TMP/err" "$TMP/axpb.ptx: error: entry 'fix_fma' takes 6 parameters in the PTX but the plan lists 5"
sed -e 's/"params": \["ptr", "f32", "f32", "i32"/"params": ["ptr", "f32", "f32", "i64"/' \
    -e 's/{"i32": 37000}/{"i64": 37000}/' $FIX >"$TMP/kind.plan.json"
check rt_param_kind 1 "$RUN" "$TMP/kind.plan.json"
same rt_param_kind_msg "$TMP/err" "$TMP/axpb.ptx: error: entry 'fix_affine': parameter 3 is '.u32' in the PTX but i64 in the plan"

# A grid too small leaves output elements unwritten: they read back as NaN.
sed 's/"grid": \[290, 1, 1\]/"grid": [200, 1, 1]/' $FIX >"$TMP/grid.plan.json"
check rt_short_grid 0 "$RUN" "$TMP/grid.plan.json"
contains rt_short_grid_nan "$TMP/out" "nan=11400 "
unset FUSEC_LIBCUDA

# Aliases (docs/plan-format.md): a tensor without a buffer of its own reads its
# bytes from another's. k_affine reads t through the alias t2 of another shape;
# tv (an output) aliases the intermediate t, yv (an output) the output y.
export FUSEC_LIBCUDA="$FAKE"
python3 - $FIX "$TMP/alias.plan.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["tensors"] += [
    {"name": "t2", "dtype": "f32", "shape": [37000], "role": "intermediate", "alias": "t", "buffer": False},
    {"name": "tv", "dtype": "f32", "shape": [37, 1000], "role": "output", "alias": "t", "buffer": False},
    {"name": "yv", "dtype": "f32", "shape": [37000], "role": "output", "alias": "y", "buffer": False}]
p["steps"][1]["launches"][0]["args"][0] = {"tensor": "t2"}
json.dump(p, open(sys.argv[2], "w"))
PY
cp tests/runtime/axpb.ptx "$TMP/"
check rt_alias_plan 0 "$RUN" "$TMP/alias.plan.json" --plan-only
contains rt_alias_dump "$TMP/out" "tensor t2 f32[37000] intermediate alias of t"
contains rt_alias_args "$TMP/out" "  args: t2, f32 0.5, f32 1, i32 37000, y, m"
check rt_alias_run 0 "$RUN" "$TMP/alias.plan.json" --inputs "$TMP/in" --outputs "$TMP/o3"
same rt_alias_clean "$TMP/err" ""
check rt_alias_y 0 cmp "$TMP/o1/y.npy" "$TMP/o3/y.npy"
cat >"$TMP/rt_alias_values.py" <<'PY'
import struct, sys
def npy(path):
    b = open(path, "rb").read()
    n = struct.unpack("<H", b[8:10])[0]
    data = b[10 + n:]
    return struct.unpack("<%df" % (len(data) // 4), data)
a, b, c = (npy("%s/%s.npy" % (sys.argv[1], k)) for k in "abc")
tv, y, yv = (npy("%s/%s.npy" % (sys.argv[2], k)) for k in ("tv", "y", "yv"))
assert len(tv) == 37000 and yv == y, "alias outputs differ"
for i in range(37000):
    want = a[i] * b[i] + 2 * c[i]
    assert abs(tv[i] - want) <= 1e-5 * (1 + abs(want)), (i, tv[i], want)
PY
check rt_alias_values 0 python3 "$TMP/rt_alias_values.py" "$TMP/in" "$TMP/o3"
check rt_alias_bench 0 "$RUN" "$TMP/alias.plan.json" --bench --iters 3
same rt_alias_bench_clean "$TMP/err" ""
# alias errors: an alias with a buffer, of a tensor without one, of another size
sed 's/"name": "ab", "dtype": "f32", "shape": \[1000, 37\], "role": "intermediate", "buffer": false/"name": "ab", "dtype": "f32", "shape": [1000, 37], "role": "intermediate", "alias": "t", "buffer": true/' $FIX >"$TMP/ab.plan.json"
check rt_alias_own_buffer 1 "$RUN" "$TMP/ab.plan.json" --plan-only
same rt_alias_own_buffer_msg "$TMP/err" "$TMP/ab.plan.json: error: tensors[3].alias: tensor 'ab' is an alias, so it has no buffer of its own (\"buffer\": false)"
sed 's/"name": "t", "dtype": "f32", "shape": \[1000, 37\], "role": "intermediate", "buffer": true/"name": "t", "dtype": "f32", "shape": [1000, 37], "role": "intermediate", "alias": "ab", "buffer": false/' $FIX >"$TMP/nb.plan.json"
check rt_alias_no_buffer 1 "$RUN" "$TMP/nb.plan.json" --plan-only
same rt_alias_no_buffer_msg "$TMP/err" "$TMP/nb.plan.json: error: tensors[4].alias: tensor 't' is an alias of 'ab', which has no buffer of its own"
sed 's/"name": "ab", "dtype": "f32", "shape": \[1000, 37\], "role": "intermediate", "buffer": false/"name": "ab", "dtype": "f32", "shape": [1000], "role": "intermediate", "alias": "t", "buffer": false/' $FIX >"$TMP/sz.plan.json"
check rt_alias_size 1 "$RUN" "$TMP/sz.plan.json" --plan-only
same rt_alias_size_msg "$TMP/err" "$TMP/sz.plan.json: error: tensors[3].alias: tensor 'ab' (f32, 4000 bytes) cannot alias 't' (f32, 148000 bytes)"
unset FUSEC_LIBCUDA

# Programmatic dependent launch (docs/plan-format.md, "pdl"): a kernel marked "pdl"
# is launched by cuLaunchKernelEx with programmatic stream serialization (which
# fakecuda traces as "pdl"), kernel by kernel and in the graph; FUSEC_NO_PDL=1
# launches it as before, and so does a driver without cuLaunchKernelEx; the
# outputs are the same bytes. A "pdl" that is no boolean is refused.
export FUSEC_LIBCUDA="$FAKE"
sed 's/"name": "k_fma",/"name": "k_fma", "pdl": true,/' $FIX >"$TMP/pdl.plan.json"
cp tests/runtime/axpb.ptx "$TMP/"
check rt_pdl_base 0 "$RUN" $FIX --seed 3 --outputs "$TMP/pdl0"
rm -f "$TMP/pdl.trace"
check rt_pdl_direct 0 env FUSEC_NO_GRAPH=1 FAKECUDA_TRACE="$TMP/pdl.trace" "$RUN" "$TMP/pdl.plan.json" --seed 3 --outputs "$TMP/pdl1"
# each launch of k_fma (and only those) goes with the attribute
grep -c '^pdl$' "$TMP/pdl.trace" >"$TMP/pdl.n"
grep -c '^kernel fix_fma ' "$TMP/pdl.trace" >"$TMP/fma.n"
same rt_pdl_direct_trace "$TMP/pdl.n" "$(cat "$TMP/fma.n")"
check rt_pdl_direct_some 1 grep -qx 0 "$TMP/fma.n"
same_files rt_pdl_direct_same "$TMP/pdl1/y.npy" "$TMP/pdl0/y.npy"
rm -f "$TMP/pdl.trace"
check rt_pdl_graph 0 env FAKECUDA_TRACE="$TMP/pdl.trace" "$RUN" "$TMP/pdl.plan.json" --seed 3 --outputs "$TMP/pdl2"
contains rt_pdl_graph_trace "$TMP/pdl.trace" "pdl"
same_files rt_pdl_graph_same "$TMP/pdl2/y.npy" "$TMP/pdl0/y.npy"
rm -f "$TMP/pdl.trace"
check rt_pdl_off 0 env FUSEC_NO_PDL=1 FUSEC_NO_GRAPH=1 FAKECUDA_TRACE="$TMP/pdl.trace" "$RUN" "$TMP/pdl.plan.json" --seed 3
check rt_pdl_off_trace 1 grep -q "pdl" "$TMP/pdl.trace"
check rt_pdl_noex 0 env FUSEC_LIBCUDA="$BIN/tests/fakecuda_noex.so" "$RUN" "$TMP/pdl.plan.json" --seed 3 --outputs "$TMP/pdl3"
same_files rt_pdl_noex_same "$TMP/pdl3/y.npy" "$TMP/pdl0/y.npy"
# a driver that refuses programmatic launches in a capture: the runtime captures
# again without them, and the run still replays a graph, the same bytes
rm -f "$TMP/pdl.trace"
check rt_pdl_capture 0 env FAKECUDA_PDL_NO_CAPTURE=1 FAKECUDA_TRACE="$TMP/pdl.trace" "$RUN" "$TMP/pdl.plan.json" --seed 3 --outputs "$TMP/pdl4"
contains rt_pdl_capture_graph "$TMP/pdl.trace" "instantiate:"
check rt_pdl_capture_nopdl 1 grep -qx "pdl" "$TMP/pdl.trace"
same_files rt_pdl_capture_same "$TMP/pdl4/y.npy" "$TMP/pdl0/y.npy"
sed 's/"name": "k_fma",/"name": "k_fma", "pdl": "yes",/' $FIX >"$TMP/pdlbad.plan.json"
check rt_pdl_bad 1 "$RUN" "$TMP/pdlbad.plan.json" --plan-only
contains rt_pdl_bad_msg "$TMP/err" "kernels[0].pdl: expected a boolean, got a string"
unset FUSEC_LIBCUDA
