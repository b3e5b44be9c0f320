# t_bench.sh: `fusec bench` and `fusec run DIR --backend cuda` without a GPU: usage,
# the missing driver, and runs of the runtime fixture on the stand-in driver
# (build/tests/fakecuda.so, which emulates tests/runtime/axpb's kernels).
BIN=$(dirname "$FUSEC")
FAKE=$BIN/tests/fakecuda.so
FIX=tests/runtime/axpb.plan.json

check bench-backend 2 "$FUSEC" bench docs/examples/reuse.yaml --backend cpu &&
	contains bench-backend-msg "$TMP/err" "cannot be timed (only cuda)"
check bench-iters 2 "$FUSEC" bench docs/examples/reuse.yaml --iters 0
check bench-bad-graph 1 "$FUSEC" bench tests/errors/unknown_op.yaml
check bench-no-driver 3 env FUSEC_LIBCUDA=/nonexistent/libcuda.so.1 "$FUSEC" bench docs/examples/reuse.yaml &&
	contains bench-no-driver-msg "$TMP/err" "fusec: error: cannot load the CUDA driver library"
check run-plan-check 2 "$FUSEC" run $FIX --backend cuda --check
check run-plan-interp 2 "$FUSEC" run $FIX

check bench-plan 0 env FUSEC_LIBCUDA="$FAKE" "$FUSEC" bench $FIX --iters 5 --warmup 1 &&
	contains bench-plan-total "$TMP/out" "total: median" &&
	contains bench-plan-graph "$TMP/out" "graph total: median 15.00 us" &&
	contains bench-plan-graph-latency "$TMP/out" "graph latency: median 15.00 us" &&
	contains bench-plan-bw "$TMP/out" "bandwidth:"
check run-plan 0 env FUSEC_LIBCUDA="$FAKE" "$FUSEC" run $FIX --backend cuda --outputs "$TMP/o1" &&
	contains run-plan-y "$TMP/out" "y: f32[1000,37] sum="
# the same seed gives fusec run and fusec-run the same inputs, so the same outputs
check run-plan-launcher 0 env FUSEC_LIBCUDA="$FAKE" "$BIN/fusec-run" $FIX --outputs "$TMP/o2"
same_files run-plan-same-y "$TMP/o1/y.npy" "$TMP/o2/y.npy"
same_files run-plan-same-m "$TMP/o1/m.npy" "$TMP/o2/m.npy"
