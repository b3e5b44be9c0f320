# t_graph.sh: fusec-run replays a plan as a CUDA graph (docs/design.md, "Runtime"),
# on the stand-in driver build/tests/fakecuda.so, whose FAKECUDA_TRACE file records
# every kernel it runs ("direct" or "graph") and every capture step. The graph must
# run the same kernels in the same order with the same arguments as direct launches.
BIN=$(dirname "$FUSEC")
RUN=$BIN/fusec-run
FIX=tests/runtime/axpb.plan.json
export FUSEC_LIBCUDA="$BIN/tests/fakecuda.so"
unset FUSEC_NO_GRAPH FAKECUDA_CAPTURE_FAIL FAKECUDA_LAUNCH_US

# kernels FILE: the kernel lines of a trace without their "(direct)"/"(graph)" tail
kernels() {
	grep '^kernel ' "$1" | sed 's/ ([a-z]*)$//'
}

check graph_run 0 env FAKECUDA_TRACE="$TMP/g.trace" "$RUN" $FIX --outputs "$TMP/og"
contains graph_run_line "$TMP/out" "launches: 2, replayed as a CUDA graph"
same graph_run_clean "$TMP/err" ""
grep -v '^launches: ' "$TMP/out" >"$TMP/g.out"
same graph_trace "$TMP/g.trace" "capture begin
captured fix_fma (1)
captured fix_affine (2)
capture end: 2 launches
instantiate: 2 launches
graph launch: 2 launches
$(kernels "$TMP/g.trace" | sed -n 1p) (graph)
$(kernels "$TMP/g.trace" | sed -n 2p) (graph)"

check graph_env_off 0 env FUSEC_NO_GRAPH=1 FAKECUDA_TRACE="$TMP/d.trace" "$RUN" $FIX --outputs "$TMP/od"
contains graph_env_off_line "$TMP/out" "launches: 2, direct (graph turned off by FUSEC_NO_GRAPH=1)"
grep -v '^launches: ' "$TMP/out" >"$TMP/d.out"
check graph_direct_only 1 grep -q -v ' (direct)$' "$TMP/d.trace"
kernels "$TMP/g.trace" >"$TMP/g.k"
kernels "$TMP/d.trace" >"$TMP/d.k"
check graph_two_kernels 0 test "$(wc -l <"$TMP/g.k")" -eq 2
same_files graph_same_launches "$TMP/g.k" "$TMP/d.k"
same_files graph_same_checksums "$TMP/g.out" "$TMP/d.out"
same_files graph_same_y "$TMP/og/y.npy" "$TMP/od/y.npy"
same_files graph_same_m "$TMP/og/m.npy" "$TMP/od/m.npy"

check graph_flag_off 0 env FAKECUDA_TRACE="$TMP/f.trace" "$RUN" $FIX --no-graph
contains graph_flag_off_line "$TMP/out" "launches: 2, direct (graph turned off by --no-graph)"
check graph_flag_no_capture 1 grep -q capture "$TMP/f.trace"
check graph_env_zero 0 env FUSEC_NO_GRAPH=0 "$RUN" $FIX
contains graph_env_zero_line "$TMP/out" "launches: 2, replayed as a CUDA graph"
check graph_help 0 "$RUN" --help
contains graph_help_flag "$TMP/out" "  --no-graph         launch kernel by kernel instead of replaying the plan as a"

# A capture that fails is no error: the run launches directly, says why, and
# gives the same outputs.
check graph_capture_fails 0 env FAKECUDA_CAPTURE_FAIL=launch FAKECUDA_TRACE="$TMP/c.trace" \
	"$RUN" $FIX --outputs "$TMP/oc"
contains graph_capture_fails_line "$TMP/out" "launches: 2, direct (the CUDA graph capture failed: capturing launch 0 (step 0, kernel 'k_fma'): cuLaunchKernel failed: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (operation not permitted when stream is capturing))"
same graph_capture_fails_clean "$TMP/err" ""
kernels "$TMP/c.trace" >"$TMP/c.k"
same_files graph_capture_fails_launches "$TMP/c.k" "$TMP/d.k"
same_files graph_capture_fails_y "$TMP/oc/y.npy" "$TMP/od/y.npy"
check graph_begin_fails 0 env FAKECUDA_CAPTURE_FAIL=begin "$RUN" $FIX
contains graph_begin_fails_line "$TMP/out" "launches: 2, direct (the CUDA graph capture failed: cuStreamBeginCapture_v2 failed: CUDA_ERROR_NOT_SUPPORTED (operation not supported))"
check graph_instantiate_fails 0 env FAKECUDA_CAPTURE_FAIL=instantiate "$RUN" $FIX
contains graph_instantiate_fails_line "$TMP/out" "launches: 2, direct (the CUDA graph capture failed: cuGraphInstantiateWithFlags failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory))"
same graph_instantiate_fails_clean "$TMP/err" ""
# A graph that fails to launch fails the run (exit 3), named.
check graph_launch_fails 3 env FAKECUDA_CAPTURE_FAIL=graph-launch "$RUN" $FIX
same graph_launch_fails_msg "$TMP/err" "fusec-run: error: replaying the plan's 2 launches as a CUDA graph (FUSEC_NO_GRAPH=1 launches them one by one): cuGraphLaunch failed: CUDA_ERROR_LAUNCH_FAILED (unspecified launch failure)"

# --bench: the per-launch table and the first total and latency from direct
# launches, then the graph's. The stand-in's launch cost (3 us of idle device
# before each direct launch, once per graph launch) sets them apart: direct
# 3 + 10 + 3 + 5 = 21 us a run, the graph 3 + 10 + 5 = 18 us.
check graph_bench 0 env FAKECUDA_LAUNCH_US=3 FAKECUDA_TRACE="$TMP/b.trace" "$RUN" $FIX --bench --iters 5 --warmup 1
contains graph_bench_k0 "$TMP/out" "0      0      k_fma                    [145,1,1]        [256,1,1]             13.00        13.00"
contains graph_bench_k1 "$TMP/out" "1      1      k_affine                 [290,1,1]        [128,1,1]              8.00         8.00"
contains graph_bench_total "$TMP/out" "total: median 21.00 us, min 21.00 us (direct launches, back to back, an event after each)"
contains graph_bench_latency "$TMP/out" "latency: median 21.00 us, min 21.00 us (direct launches, one run at a time, launch cost included)"
contains graph_bench_gtotal "$TMP/out" "graph total: median 18.00 us, min 18.00 us (replayed as a CUDA graph, back to back)"
contains graph_bench_glatency "$TMP/out" "graph latency: median 18.00 us, min 18.00 us (replayed as a CUDA graph, one run at a time, launch cost included)"
same graph_bench_clean "$TMP/err" ""
# 32 buffer sets: the run's graph serves set 0, each other set is captured once
# with its own buffers, so the graph runs bind 32 different argument lists.
check graph_bench_captures 0 test "$(grep -c '^capture begin$' "$TMP/b.trace")" -eq 32
check graph_bench_sets 0 test "$(grep '^kernel fix_fma .*(graph)$' "$TMP/b.trace" | sort -u | wc -l)" -eq 32
check graph_bench_off 0 env FUSEC_NO_GRAPH=1 "$RUN" $FIX --bench --iters 3
contains graph_bench_off_line "$TMP/out" "graph: not timed: turned off by FUSEC_NO_GRAPH=1"
check graph_bench_off_no_total 1 grep -q "graph total" "$TMP/out"
check graph_bench_flag_off 0 "$RUN" $FIX --bench --iters 3 --no-graph
contains graph_bench_flag_off_line "$TMP/out" "graph: not timed: turned off by --no-graph"
check graph_bench_fails 0 env FAKECUDA_CAPTURE_FAIL=end "$RUN" $FIX --bench --iters 3
contains graph_bench_fails_line "$TMP/out" "graph: not timed: cuStreamEndCapture failed: CUDA_ERROR_UNKNOWN (unknown error)"
unset FUSEC_LIBCUDA
