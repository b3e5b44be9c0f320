# t_harden_run.sh: issue 25, running and targets: archs the kernels cannot use
# (item 12), tensors whose .npy files would share a name (16), runs that need more
# memory than the host has (19), and the driver loaded before the inputs are made
# (20). Without a GPU: the driver is missing, or build/tests/fakecuda.so.
BIN=$(dirname "$FUSEC")
RUN=$BIN/fusec-run
FAKE=$BIN/tests/fakecuda.so
FIX=tests/runtime/axpb.plan.json
NODRV=/nonexistent/libcuda.so.1

# ---- 12: archs older than the kernels need -------------------------------------
cat >"$TMP/red.yaml" <<'EOF'
format: fusec-graph/1
inputs: {a: {dtype: f32, shape: [64, 256]}}
ops:
  - {op: sum, in: [a], axis: 1, out: s}
outputs: [s]
EOF
# shfl.sync (every cooperative reduction) is selected from sm_70 on; LLVM aborted
# (exit 134) below it
for arch in sm_20 sm_30 sm_35 sm_50 sm_53 sm_60 sm_61 sm_62; do
	check "arch-old-$arch" 1 "$FUSEC" compile "$TMP/red.yaml" --arch $arch -o "$TMP/a-$arch" &&
		same "arch-old-$arch-msg" "$TMP/err" "fusec: error: --arch $arch is older than the kernels need (shfl.sync, PTX 6.0): the lowest supported is sm_70"
	check "arch-old-$arch-nothing" 1 test -e "$TMP/a-$arch"
done
check arch-70 0 "$FUSEC" compile "$TMP/red.yaml" --arch sm_70 -o "$TMP/a70" &&
	contains arch-70-ptx "$TMP/a70/red.ptx" ".target sm_70" &&
	contains arch-70-shfl "$TMP/a70/red.ptx" "shfl.sync.bfly"
# the tiled matmuls stage operands with cp.async (sm_80): before sm_80 an f32
# matmul too takes the plain kernel (LLVM aborted on sm_70 to sm_75)
cat >"$TMP/mm.yaml" <<'EOF'
format: fusec-graph/1
inputs:
  a: {dtype: f32, shape: [512, 512]}
  b: {dtype: f32, shape: [512, 512]}
ops:
  - {op: matmul, in: [a, b], out: y}
outputs: [y]
EOF
for arch in sm_70 sm_75; do
	check "arch-mm-f32-$arch" 0 "$FUSEC" compile "$TMP/mm.yaml" --arch $arch -o "$TMP/mm-$arch" &&
		check "arch-mm-f32-$arch-no-cp-async" 1 grep -q "cp\.async" "$TMP/mm-$arch/mm.ptx"
done
check arch-mm-f32-80 0 "$FUSEC" compile "$TMP/mm.yaml" --arch sm_80 -o "$TMP/mm-80" &&
	check arch-mm-f32-80-tiled 0 grep -q "cp\.async" "$TMP/mm-80/mm.ptx"
# fusec-run names the floor for a device below it, not an arch compile refuses
check arch-device-old 3 env FUSEC_LIBCUDA="$FAKE" FAKECUDA_CC=61 "$RUN" $FIX
same arch-device-old-msg "$TMP/err" "fusec-run: error: device 0 (Fake CUDA Device) is sm_61, older than fusec's kernels need: the lowest supported is sm_70"

# ---- 16: two tensors, one file name --------------------------------------------
cat >"$TMP/clash.yaml" <<'EOF'
format: fusec-graph/1
inputs:
  "x:0": {dtype: f32, shape: [4]}
  x_0: {dtype: f32, shape: [4]}
ops:
  - {op: add, in: ["x:0", x_0], out: "y:0"}
  - {op: mul, in: ["x:0", x_0], out: y_0}
outputs: ["y:0", y_0]
EOF
note="(characters outside [A-Za-z0-9._-] become _); rename one of them"
for b in interp cpu; do
	check "clash-run-outputs-$b" 1 "$FUSEC" run "$TMP/clash.yaml" --backend $b --outputs "$TMP/co-$b" &&
		same "clash-run-outputs-$b-msg" "$TMP/err" "fusec: error: --outputs: 'y:0' and 'y_0' would both be written to $TMP/co-$b/y_0.npy $note"
	check "clash-run-outputs-$b-nothing" 1 test -e "$TMP/co-$b"
done
mkdir -p "$TMP/cin"
check clash-run-inputs 1 "$FUSEC" run "$TMP/clash.yaml" --inputs "$TMP/cin" &&
	same clash-run-inputs-msg "$TMP/err" "fusec: error: --inputs: 'x:0' and 'x_0' would both be read from $TMP/cin/x_0.npy $note"
# NAME=FILE names each file: no clash
{ printf '\223NUMPY\001\000\166\000'
  printf "%-117s\n" "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }"
  printf '\000\000\200\077\000\000\000\100\000\000\100\100\000\000\200\100'; } >"$TMP/four.npy"
check clash-run-inputs-list 0 "$FUSEC" run "$TMP/clash.yaml" --inputs "x:0=$TMP/four.npy,x_0=$TMP/four.npy" &&
	contains clash-run-inputs-list-out "$TMP/out" "y_0: f32[4] sum=30 first=[1, 4, 9, 16]"
# the interpreter's error bounds: output NAME.bound against the bound of NAME
cat >"$TMP/bound.yaml" <<'EOF'
format: fusec-graph/1
inputs: {x: {dtype: f32, shape: [4]}}
ops:
  - {op: exp, in: [x], out: y}
  - {op: neg, in: [x], out: y.bound}
outputs: [y, y.bound]
EOF
check clash-run-bound 1 "$FUSEC" run "$TMP/bound.yaml" --outputs "$TMP/cb" &&
	same clash-run-bound-msg "$TMP/err" "fusec: error: --outputs: 'the error bound of y' and 'y.bound' would both be written to $TMP/cb/y.bound.npy $note"
check clash-run-bound-cpu 0 "$FUSEC" run "$TMP/bound.yaml" --backend cpu --outputs "$TMP/cb2" &&
	check clash-run-bound-cpu-files 0 test -f "$TMP/cb2/y.npy" -a -f "$TMP/cb2/y.bound.npy"
# compiled plans: fusec run DIR and fusec-run, before the driver is loaded
check clash-compile 0 "$FUSEC" compile "$TMP/clash.yaml" -o "$TMP/cp"
check clash-plan-outputs 1 env FUSEC_LIBCUDA=$NODRV "$FUSEC" run "$TMP/cp" --backend cuda --outputs "$TMP/cpo" &&
	same clash-plan-outputs-msg "$TMP/err" "fusec: error: --outputs: 'y:0' and 'y_0' would both be written to $TMP/cpo/y_0.npy $note"
check clash-plan-inputs 1 env FUSEC_LIBCUDA=$NODRV "$FUSEC" run "$TMP/cp" --backend cuda --inputs "$TMP/cin" &&
	contains clash-plan-inputs-msg "$TMP/err" "--inputs: 'x:0' and 'x_0' would both be read from $TMP/cin/x_0.npy"
check clash-rt-outputs 1 env FUSEC_LIBCUDA=$NODRV "$RUN" "$TMP/cp" --outputs "$TMP/cro" &&
	same clash-rt-outputs-msg "$TMP/err" "fusec-run: error: --outputs: 'y:0' and 'y_0' would both be written to $TMP/cro/y_0.npy $note"
check clash-rt-inputs 1 env FUSEC_LIBCUDA=$NODRV "$RUN" "$TMP/cp" --inputs "$TMP/cin" &&
	contains clash-rt-inputs-msg "$TMP/err" "fusec-run: error: --inputs: 'x:0' and 'x_0' would both be read from"
check clash-rt-save 1 env FUSEC_LIBCUDA=$NODRV "$RUN" "$TMP/cp" --save-inputs "$TMP/crs" &&
	contains clash-rt-save-msg "$TMP/err" "fusec-run: error: --save-inputs: 'x:0' and 'x_0' would both be written to"
# --save-inputs and --outputs in one folder: input a:0 against output a_0
cat >"$TMP/io.yaml" <<'EOF'
format: fusec-graph/1
inputs: {"a:0": {dtype: f32, shape: [4]}}
ops:
  - {op: neg, in: ["a:0"], out: a_0}
outputs: [a_0]
EOF
check clash-io-compile 0 "$FUSEC" compile "$TMP/io.yaml" -o "$TMP/iop"
check clash-rt-same-dir 1 env FUSEC_LIBCUDA=$NODRV "$RUN" "$TMP/iop" --save-inputs "$TMP/sd" --outputs "$TMP/sd/." &&
	contains clash-rt-same-dir-msg "$TMP/err" "--outputs: 'a:0' and 'a_0' would both be written to $TMP/sd/./a_0.npy"
check clash-rt-two-dirs 3 env FUSEC_LIBCUDA=$NODRV "$RUN" "$TMP/iop" --save-inputs "$TMP/sd1" --outputs "$TMP/sd2"
# a path fusec-run would cut to 1023 bytes could be another tensor's
long=$(printf '%0600d' 0)
check clash-rt-long 1 env FUSEC_LIBCUDA=$NODRV "$RUN" "$TMP/cp" --outputs "$TMP/$long/$long" &&
	contains clash-rt-long-msg "$TMP/err" "--outputs: the file name of 'y:0' would be longer than 1023 bytes"
# import numbers its .npy files (c0_, c1_): constants w:0 and w_0 stay apart
awk 'BEGIN {
	printf "format: fusec-graph/1\ninputs: {x: {dtype: f32, shape: [100]}}\nconstants:\n"
	for (k = 0; k < 2; k++) {
		printf "  %s: {dtype: f32, shape: [100], data: [", k ? "w_0" : "\"w:0\""
		for (i = 0; i < 100; i++) printf "%s%d", (i ? ", " : ""), k + 1
		printf "]}\n"
	}
	printf "ops:\n  - {op: add, in: [x, \"w:0\"], out: t}\n  - {op: mul, in: [t, w_0], out: y}\noutputs: [y]\n" }' >"$TMP/cw.yaml"
check clash-import 0 "$FUSEC" import "$TMP/cw.yaml" -o "$TMP/cwi.yaml" &&
	check clash-import-files 0 test -f "$TMP/cwi.data/c0_w_0.npy" -a -f "$TMP/cwi.data/c1_w_0.npy"
check clash-import-run-a 0 "$FUSEC" run "$TMP/cw.yaml" && cp "$TMP/out" "$TMP/cw.out"
check clash-import-run-b 0 "$FUSEC" run "$TMP/cwi.yaml" && same_files clash-import-same "$TMP/out" "$TMP/cw.out"

# ---- 19: the memory a run needs, against what the host has -----------------------
# 4 inputs of 1 TiB: refused at once on any host (the interpreter failed at the
# first allocation, or filled memory for minutes where overcommit let it)
cat >"$TMP/huge.yaml" <<'EOF'
format: fusec-graph/1
inputs:
  a: {dtype: f32, shape: [262144, 1048576]}
  b: {dtype: f32, shape: [262144, 1048576]}
  c: {dtype: f32, shape: [262144, 1048576]}
  d: {dtype: f32, shape: [262144, 1048576]}
ops:
  - {op: add, in: [a, b], out: t}
  - {op: add, in: [c, d], out: u}
  - {op: mul, in: [t, u], out: y}
outputs: [y]
EOF
for b in interp cpu cuda; do
	check "mem-huge-$b" 1 env FUSEC_LIBCUDA=$NODRV "$FUSEC" run "$TMP/huge.yaml" --backend $b &&
		contains "mem-huge-$b-msg" "$TMP/err" "fusec: error: the run needs "
done
contains mem-huge-cuda-detail "$TMP/err" "of memory (inputs 4096.0 GiB, outputs 1024.0 GiB) but "
# under ulimit -v: 2 x 256 MiB of inputs; the interpreter's values peak at 1 GiB (with
# --check, each value also carries an f64 bound; f32 ones no tight part)
cat >"$TMP/big.yaml" <<'EOF'
format: fusec-graph/1
inputs:
  a: {dtype: f32, shape: [4096, 16384]}
  b: {dtype: f32, shape: [4096, 16384]}
ops:
  - {op: add, in: [a, b], out: c}
  - {op: exp, in: [c], out: y}
outputs: [y]
EOF
# (an ASan build cannot start under ulimit -v or -d: its shadow memory; skipped)
if sh -c "ulimit -v 1000000; ulimit -d 1000000; exec '$FUSEC' --version" >/dev/null 2>&1; then
	check mem-ulimit 1 sh -c "ulimit -v 1000000; exec '$FUSEC' run '$TMP/big.yaml'" &&
		contains mem-ulimit-msg "$TMP/err" "fusec: error: the run needs 1.5 GiB of memory (inputs 512.0 MiB, the interpreter's values at their peak 1.0 GiB) but " &&
		contains mem-ulimit-which "$TMP/err" " is available (RLIMIT_AS, ulimit -v)"
	check mem-ulimit-check 1 sh -c "ulimit -v 1000000; exec '$FUSEC' run '$TMP/big.yaml' --backend cpu --check" &&
		contains mem-ulimit-check-msg "$TMP/err" "(inputs 512.0 MiB, outputs 256.0 MiB; with --check's reference 3.2 GiB)"
	check mem-ulimit-data 1 sh -c "ulimit -d 1000000; exec '$FUSEC' run '$TMP/big.yaml'" &&
		contains mem-ulimit-data-msg "$TMP/err" " is available (RLIMIT_DATA, ulimit -d)"
	# a plan: its inputs, constants and outputs, before the driver
	check mem-plan-compile 0 "$FUSEC" compile "$TMP/big.yaml" -o "$TMP/bigp"
	check mem-plan-run 1 sh -c "ulimit -v 500000; FUSEC_LIBCUDA=$NODRV exec '$FUSEC' run '$TMP/bigp' --backend cuda" &&
		contains mem-plan-run-msg "$TMP/err" "fusec: error: the run needs 768.0 MiB of memory (inputs 512.0 MiB, constants 0 bytes, outputs 256.0 MiB) but "
	check mem-plan-rt 1 sh -c "ulimit -v 500000; FUSEC_LIBCUDA=$NODRV exec '$RUN' '$TMP/bigp'" &&
		contains mem-plan-rt-msg "$TMP/err" "fusec-run: error: the run needs 768.0 MiB of memory (inputs 512.0 MiB, constants 0 bytes, outputs 256.0 MiB) but "
else
	echo "skip mem-ulimit*, mem-plan-*: $FUSEC does not start under ulimit -v (ASan?)"
fi

# ---- 20: the driver before the inputs ----------------------------------------------
# An input folder without the files: the missing driver or device is what is
# reported (exit 3), not the inputs it never got to (exit 1).
mkdir -p "$TMP/noin"
check drv-first-rt 3 env FUSEC_LIBCUDA=$NODRV "$RUN" $FIX --inputs "$TMP/noin" &&
	contains drv-first-rt-msg "$TMP/err" "fusec-run: error: cannot load the CUDA driver library '$NODRV'"
check drv-first-rt-nodev 3 env FUSEC_LIBCUDA="$FAKE" FAKECUDA_NO_DEVICE=1 "$RUN" $FIX --inputs "$TMP/noin" &&
	same drv-first-rt-nodev-msg "$TMP/err" "fusec-run: error: cuInit failed: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)"
check drv-first-rt-old 3 env FUSEC_LIBCUDA="$FAKE" FAKECUDA_CC=80 "$RUN" $FIX --inputs "$TMP/noin" &&
	contains drv-first-rt-old-msg "$TMP/err" "the plan targets sm_90 but device 0 (Fake CUDA Device) is sm_80"
# with the driver, the missing input is reported, and the session closed cleanly
check drv-first-rt-input 1 env FUSEC_LIBCUDA="$FAKE" "$RUN" $FIX --inputs "$TMP/noin" &&
	same drv-first-rt-input-msg "$TMP/err" "$TMP/noin/a.npy: error: cannot open: No such file or directory"
check drv-first-plan 3 env FUSEC_LIBCUDA=$NODRV "$FUSEC" run tests/runtime --backend cuda --inputs "$TMP/noin" &&
	contains drv-first-plan-msg "$TMP/err" "fusec: error: cannot load the CUDA driver library '$NODRV'"
check drv-first-plan-nodev 3 env FUSEC_LIBCUDA="$FAKE" FAKECUDA_NO_DEVICE=1 "$FUSEC" run tests/runtime --backend cuda --inputs "$TMP/noin"
check drv-first-graph 3 env FUSEC_LIBCUDA=$NODRV "$FUSEC" run "$TMP/red.yaml" --backend cuda --inputs "$TMP/noin" &&
	contains drv-first-graph-msg "$TMP/err" "fusec: error: cannot load the CUDA driver library '$NODRV'"
check drv-first-bench 3 env FUSEC_LIBCUDA=$NODRV "$FUSEC" bench tests/runtime --inputs "$TMP/noin"
check drv-first-bench-graph 3 env FUSEC_LIBCUDA=$NODRV "$FUSEC" bench "$TMP/red.yaml" --inputs "$TMP/noin" &&
	contains drv-first-bench-graph-msg "$TMP/err" "fusec: error: cannot load the CUDA driver library '$NODRV'"
check mem-huge-bench 1 env FUSEC_LIBCUDA=$NODRV "$FUSEC" bench "$TMP/huge.yaml" &&
	contains mem-huge-bench-msg "$TMP/err" "fusec: error: the run needs "
# the fixture still runs through the fake driver, inputs made after the session
check drv-first-rt-ok 0 env FUSEC_LIBCUDA="$FAKE" "$RUN" $FIX --save-inputs "$TMP/si" --outputs "$TMP/so" &&
	same drv-first-rt-ok-clean "$TMP/err" ""
check drv-first-plan-ok 0 env FUSEC_LIBCUDA="$FAKE" "$FUSEC" run tests/runtime --backend cuda --inputs "$TMP/si" &&
	same drv-first-plan-ok-clean "$TMP/err" ""
