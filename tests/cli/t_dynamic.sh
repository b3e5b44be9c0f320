# t_dynamic.sh: a graph compiled once for every size of its named dims and run at
# other sizes (issue 28; `fusec run --dynamic`, docs/graph-format.md "Every size
# at once"): the cpu backend's kernels, built once at the probe sizes and bound to
# each run's sizes (cg_host_bind), against the interpreter at several bindings;
# seeded random graphs of tests/cli/gen/symbolic_graphs.py; a probe that clashes
# with a fixed dim; and each refusal with its message.
PY=$(npy_python)
cat >"$TMP/mlp.yaml" <<'Y'
format: fusec-graph/1
name: mlp
dims: {batch: 1..64, seq: 1..512}
inputs:
  x: {dtype: f32, shape: [batch, seq, 64]}
  w: {dtype: f32, shape: [64, 96]}
ops:
  - {op: reshape, in: [x], out: x2, shape: [-1, 64]}
  - {op: matmul, in: [x2, w], out: h}
  - {op: gelu, in: [h], out: a}
  - {op: max_dim, in: [a], axis: -1, out: m}
  - {op: sub, in: [a, m], out: z}
  - {op: exp, in: [z], out: e}
  - {op: sum, in: [e], axis: -1, out: se}
  - {op: div, in: [e, se], out: s}
  - {op: reshape, in: [s], out: y, shape: [batch, seq, 96]}
  - {op: sum, in: [y], axis: 1, out: r}
outputs: [y, r]
Y
for b in 1x1 3x7 8x100 2x512; do
	n=${b%x*} s=${b#*x}
	check "dyn-mlp-$b" 0 "$FUSEC" run "$TMP/mlp.yaml" --backend cpu --dynamic --check \
		--input-shape x=${n}x${s}x64 &&
		contains "dyn-mlp-$b-built" "$TMP/err" "fusec: compiled for every batch in 1..64, seq in 1..512 (built at batch=61, seq=509); run at batch=$n, seq=$s" &&
		contains "dyn-mlp-$b-shape" "$TMP/out" "r: f32[$n,1,96]" &&
		check "dyn-mlp-$b-ok" 1 grep -q "FAIL\|unbounded\|not checked" "$TMP/out"
done

# attention over named dims: heads by reshape and permute, the fused attention op,
# and a cat along seq (its result is 2*seq)
cat >"$TMP/att.yaml" <<'Y'
format: fusec-graph/1
name: att
dims: {batch: 1..16, seq: 1..256}
inputs:
  x: {dtype: f32, shape: [batch, seq, 32]}
  wq: {dtype: f32, shape: [1, 32, 32]}
  wk: {dtype: f32, shape: [1, 32, 32]}
  bias: {dtype: f32, shape: [32]}
ops:
  - {op: matmul, in: [x, wq], out: q0}
  - {op: matmul, in: [x, wk], out: k0}
  - {op: reshape, in: [q0], out: q1, shape: [batch, seq, 4, 8]}
  - {op: permute, in: [q1], out: q, axes: [0, 2, 1, 3]}
  - {op: reshape, in: [k0], out: k1, shape: [batch, seq, 4, 8]}
  - {op: permute, in: [k1], out: kt, axes: [0, 2, 3, 1]}
  - {op: matmul, in: [q, kt], out: sc}
  - {op: mul_scalar, in: [sc], scalar: 0.35, out: sc2}
  - {op: max_dim, in: [sc2], axis: -1, out: m}
  - {op: sub, in: [sc2, m], out: z}
  - {op: exp, in: [z], out: e}
  - {op: sum, in: [e], axis: -1, out: se}
  - {op: div, in: [e, se], out: p}
  - {op: matmul, in: [p, q], out: o}
  - {op: permute, in: [o], out: o1, axes: [0, 2, 1, 3]}
  - {op: reshape, in: [o1], out: o2, shape: [batch, seq, 32]}
  - {op: reshape, in: [bias], out: bias2, shape: [1, 1, 32]}
  - {op: add, in: [o2, bias2], out: y0}
  - {op: cat, in: [y0, x], axis: 1, out: y}
outputs: [y]
Y
for b in 1x1 3x7 16x33; do
	n=${b%x*} s=${b#*x}
	check "dyn-att-$b" 0 "$FUSEC" run "$TMP/att.yaml" --backend cpu --dynamic --check \
		--input-shape x=${n}x${s}x32 &&
		contains "dyn-att-$b-shape" "$TMP/out" "y: f32[$n,$((2 * s)),32]" &&
		check "dyn-att-$b-ok" 1 grep -q "FAIL\|unbounded\|not checked" "$TMP/out"
done
# the sizes from the inputs' .npy files, as without --dynamic
"$PY" -c 'import numpy as np, sys; np.save(sys.argv[1], np.linspace(-1, 1, 5 * 9 * 32, dtype=np.float32).reshape(5, 9, 32))' "$TMP/x.npy"
check dyn-att-inputs 0 "$FUSEC" run "$TMP/att.yaml" --backend cpu --dynamic --check \
	--inputs "x=$TMP/x.npy" &&
	contains dyn-att-inputs-at "$TMP/err" "run at batch=5, seq=9" &&
	contains dyn-att-inputs-shape "$TMP/out" "y: f32[5,18,32]"

# seeded random graphs, each compiled once per run and bound to three sizes
for seed in 1 2 3 4 5 6 7 8 9 10 11 12; do
	"$PY" tests/cli/gen/symbolic_graphs.py $seed "$TMP/g.yaml"
	d=$(sed -n 's/^  x: {dtype: f32, shape: \[b, s, \([0-9]*\)\]}$/\1/p' "$TMP/g.yaml")
	for b in 1x1 3x7 32x64; do
		check "dyn-random-$seed-$b" 0 "$FUSEC" run "$TMP/g.yaml" --backend cpu --dynamic \
			--check --seed $seed --input-shape x=${b}x$d &&
			contains "dyn-random-$seed-$b-bound" "$TMP/err" "run at b=${b%x*}, s=${b#*x}" &&
			check "dyn-random-$seed-$b-ok" 1 grep -q "FAIL\|unbounded\|not checked" "$TMP/out"
	done
done

# a probe that would equal a fixed dim is passed over: 251 and 241 are taken
cat >"$TMP/clash.yaml" <<'Y'
format: fusec-graph/1
dims: {seq: 1..256}
inputs:
  x: {dtype: f32, shape: [seq, 251]}
  w: {dtype: f32, shape: [251, 241]}
ops:
  - {op: matmul, in: [x, w], out: y}
outputs: [y]
Y
check dyn-clash 0 "$FUSEC" run "$TMP/clash.yaml" --backend cpu --dynamic --check \
	--input-shape x=8x251 &&
	contains dyn-clash-probe "$TMP/err" "(built at seq=239); run at seq=8"

# refusals: exit 1 (2 for usage), nothing run
cat >"$TMP/slice.yaml" <<'Y'
format: fusec-graph/1
dims: {seq: 1..256}
inputs:
  x: {dtype: f32, shape: [seq, 32]}
ops:
  - {op: slice, in: [x], out: y, ranges: [[0, 4]]}
outputs: [y]
Y
check dyn-slice 1 "$FUSEC" run "$TMP/slice.yaml" --backend cpu --dynamic --input-shape x=8x32
same dyn-slice-msg "$TMP/err" "$TMP/slice.yaml:6:5: error: ops[0] → y (slice): dim 0 of size seq is sliced; not supported yet for a graph compiled for every size of its named dims (bind them with --input-shape)"
check dyn-interp 2 "$FUSEC" run "$TMP/slice.yaml" --backend interp --dynamic
contains dyn-interp-msg "$TMP/err" "--dynamic compiles: it takes --backend cpu or cuda"
check dyn-range 1 "$FUSEC" run "$TMP/clash.yaml" --backend cpu --dynamic --input-shape x=300x251
contains dyn-range-msg "$TMP/err" "'seq' = 300 is outside its range 1..256 (dims)"
cat >"$TMP/const.yaml" <<'Y'
format: fusec-graph/1
dims: {seq: 1..256}
inputs:
  x: {dtype: f32, shape: [seq, 2]}
constants:
  c: {dtype: f32, shape: [seq, 2], data: [1, 2]}
ops:
  - {op: add, in: [x, c], out: y}
outputs: [y]
Y
check dyn-const 1 "$FUSEC" run "$TMP/const.yaml" --backend cpu --dynamic --input-shape x=1x2
contains dyn-const-msg "$TMP/err" "constants.c.shape[0]: 'seq' stands for every size of its range here; not supported yet"
# a dim whose range holds one size is that size; with nothing left symbolic the
# run is an ordinary one (no binding line)
sed 's/seq: 1..256/seq: 8/' "$TMP/clash.yaml" >"$TMP/fixed.yaml"
check dyn-fixed 0 "$FUSEC" run "$TMP/fixed.yaml" --backend cpu --dynamic --check --input-shape x=8x251 &&
	check dyn-fixed-quiet 1 grep -q "compiled for every" "$TMP/err"

# ---- a plan for every size (fusec-plan/2): fusec compile without --input-shape ----
# what fusec-run --plan-only prints for the plan bound at sizes S must be what it
# prints for a plan compiled at S, launch for launch, wherever both launch one
# kernel (at the probe sizes every kernel is the same), or a reduce kernel that
# the compile at S built for its row length and block (CgKernelSpec.red_row: its
# own name, the same grid, block and arguments)
RUNBIN=${FUSEC_RUN:-$(dirname "$FUSEC")/fusec-run}
same_launches() {   # NAME DYNAMIC STATIC ALL: launch lines of one kernel agree
	cp "$3" "$TMP/static.txt"
	check "$1" 0 "$PY" -c '
import sys
def launches(path):
    out, cur = [], None
    for line in open(path):
        if line.startswith("launch "):
            cur = [line.split(": ", 1)[1].strip()]
            out.append(cur)
        elif line.startswith("  args:") and cur is not None:
            cur.append(line.strip())
    return out
a, b = launches(sys.argv[1]), launches(sys.argv[2])
if len(a) != len(b):
    sys.exit("%d launches against %d" % (len(a), len(b)))
same = 0
for x, y in zip(a, b):
    kx, ky = x[0].split()[0], y[0].split()[0]
    x = [x[0].split(None, 1)[1]] + x[1:]
    y = [y[0].split(None, 1)[1]] + y[1:]
    if kx != ky and not (kx.startswith("reduce_") and ky.startswith("reduce_") and x == y):
        continue   # another kernel (a tile configuration chosen by size)
    if x != y:
        sys.exit("differ:\n  %s\n  %s" % (x, y))
    same += 1
if int(sys.argv[3]) and same != len(a):
    sys.exit("only %d of %d launches have one kernel" % (same, len(a)))
' "$2" "$TMP/static.txt" "$4"
}
check dyn-plan-compile 0 "$FUSEC" compile "$TMP/mlp.yaml" -o "$TMP/pd" --no-cache
contains dyn-plan-summary "$TMP/err" "fusec: compiled mlp for every batch in 1..64, seq in 1..512 (3 ranges of sizes): 10 ops → 3 launches"
contains dyn-plan-format "$TMP/pd/mlp.plan.json" '"format":"fusec-plan/2"'
contains dyn-plan-dims "$TMP/pd/mlp.plan.json" '"dims":[{"name":"batch","min":1,"max":64},{"name":"seq","min":1,"max":512}]'
contains dyn-plan-shape "$TMP/pd/mlp.plan.json" '{"name":"x2","dtype":"f32","shape":["batch*seq",64]'
check dyn-plan-unbound 0 "$RUNBIN" "$TMP/pd" --plan-only
contains dyn-plan-unbound-dims "$TMP/out" "for every batch in 1..64, seq in 1..512 (--input-shape binds them)"
contains dyn-plan-unbound-launch "$TMP/out" "rule reduce, sizes [batch*seq,96]"
for b in 61x509 1x1 8x100 64x512; do
	check "dyn-plan-bound-$b" 0 "$RUNBIN" "$TMP/pd" --plan-only --input-shape x=${b}x64 &&
		cp "$TMP/out" "$TMP/dyn.txt" &&
		contains "dyn-plan-bound-$b-sizes" "$TMP/out" "sizes: batch=${b%x*}, seq=${b#*x}" &&
		check "dyn-plan-static-$b" 0 "$FUSEC" compile "$TMP/mlp.yaml" -o "$TMP/ps" -q --no-cache \
			--input-shape x=${b}x64 &&
		check "dyn-plan-static-$b-print" 0 "$RUNBIN" "$TMP/ps" --plan-only &&
		same_launches "dyn-plan-same-$b" "$TMP/dyn.txt" "$TMP/out" $([ $b = 61x509 ] && echo 1 || echo 0)
done
# the random graphs and the attention graph: bound at the probe sizes, launch for
# launch what a compile at those sizes gives
for g in att 1 2 3 4 5 6; do
	if [ $g = att ]; then f=$TMP/att.yaml d=32; else
		"$PY" tests/cli/gen/symbolic_graphs.py $g "$TMP/g$g.yaml"
		f=$TMP/g$g.yaml d=$(sed -n 's/^  x: {dtype: f32, shape: \[b, s, \([0-9]*\)\]}$/\1/p' "$f")
	fi
	"$FUSEC" run "$f" --backend cpu --dynamic --input-shape x=1x1x$d >/dev/null 2>"$TMP/built"
	probe=$(sed -n 's/.*(built at [a-z]*=\([0-9]*\), [a-z]*=\([0-9]*\)).*/\1x\2/p' "$TMP/built")
	check "dyn-plan-$g-compile" 0 "$FUSEC" compile "$f" -o "$TMP/pd$g" -q --no-cache &&
		check "dyn-plan-$g-bound" 0 "$RUNBIN" "$TMP/pd$g" --plan-only --input-shape x=${probe}x$d &&
		cp "$TMP/out" "$TMP/dyn.txt" &&
		check "dyn-plan-$g-static" 0 "$FUSEC" compile "$f" -o "$TMP/ps$g" -q --no-cache \
			--input-shape x=${probe}x$d &&
		check "dyn-plan-$g-static-print" 0 "$RUNBIN" "$TMP/ps$g" --plan-only &&
		same_launches "dyn-plan-$g-same" "$TMP/dyn.txt" "$TMP/out" 1
done
# sizes from the --inputs files' headers

mkdir -p "$TMP/in" && cp "$TMP/x.npy" "$TMP/in/x.npy"
check dyn-plan-npy 0 "$RUNBIN" "$TMP/pdatt" --plan-only --inputs "$TMP/in" &&
	contains dyn-plan-npy-sizes "$TMP/out" "sizes: batch=5, seq=9" &&
	contains dyn-plan-npy-y "$TMP/out" "tensor y f32[5,18,32] output"

# refusals, exit 1 with the reason
check dyn-plan-range 1 "$RUNBIN" "$TMP/pd" --plan-only --input-shape x=65x2x64
contains dyn-plan-range-msg "$TMP/err" "'batch' = 65 is outside the plan's range 1..64"
check dyn-plan-fixed 1 "$RUNBIN" "$TMP/pd" --plan-only --input-shape x=2x2x63
contains dyn-plan-fixed-msg "$TMP/err" "input 'x' is [2,2,63], but at these sizes the plan needs [2,2,64]"
check dyn-plan-none 1 "$RUNBIN" "$TMP/pd" --seed 1
contains dyn-plan-none-msg "$TMP/err" "the plan is for every size of 'batch': no input given says its size"
check dyn-plan-cuda 1 "$FUSEC" run "$TMP/pd" --backend cuda
contains dyn-plan-cuda-msg "$TMP/err" "the plan is for every size of its named dims: give --inputs, whose shapes bind them, or --input-shape"
# --input-shape binds a plan for every size for `fusec run DIR` and `fusec bench DIR`
# (random inputs of those shapes): the binding is checked before the driver loads
check dyn-plan-cuda-shape 3 env FUSEC_LIBCUDA=/nonexistent "$FUSEC" run "$TMP/pd" --backend cuda \
	--input-shape x=2x3x64
contains dyn-plan-cuda-shape-msg "$TMP/err" "cannot load the CUDA driver library '/nonexistent'"
check dyn-plan-cuda-outside 1 env FUSEC_LIBCUDA=/nonexistent "$FUSEC" run "$TMP/pd" --backend cuda \
	--input-shape x=2x600x64
same dyn-plan-cuda-outside-msg "$TMP/err" "$TMP/pd/mlp.plan.json: error: 'seq' = 600 is outside the plan's range 1..512"
check dyn-plan-bench-outside 1 env FUSEC_LIBCUDA=/nonexistent "$FUSEC" bench "$TMP/pd" --input-shape x=70x3x64
same dyn-plan-bench-outside-msg "$TMP/err" "$TMP/pd/mlp.plan.json: error: 'batch' = 70 is outside the plan's range 1..64"
# hostile plans: every size and rule is checked before use
plan=$TMP/pd/mlp.plan.json
bad_plan() {   # NAME SED MESSAGE: the plan edited by SED is refused with MESSAGE
	mkdir -p "$TMP/bad" && cp "$TMP/pd/mlp.ptx" "$TMP/bad/" && sed "$2" "$plan" >"$TMP/bad/mlp.plan.json"
	check "dyn-plan-bad-$1" 1 "$RUNBIN" "$TMP/bad" --plan-only --input-shape x=2x3x64 &&
		contains "dyn-plan-bad-$1-msg" "$TMP/err" "$3"
}
bad_plan expr 's/"batch\*seq",64\]/"batch*seq)",64]/' "is not a size over the plan's dims"
bad_plan arg 's/"rule":"matmul","block":256,"arg":\[128,/"rule":"matmul","block":256,"arg":[0,/' \
	"the values do not fit the matmul rule"
# a matmul's block is 256 threads or a warp-specialized kernel's 384; at most 4
# sibling matmuls share a launch
bad_plan block 's/"rule":"matmul","block":256,"arg":\[128,/"rule":"matmul","block":512,"arg":[128,/' \
	"the values do not fit the matmul rule"
bad_plan siblings 's/"arg":\[128,128,1,3,0,52224\]/"arg":[128,128,1,3,0,52224,0,0,9]/' \
	"the values do not fit the matmul rule"
bad_plan rule 's/"rule":"reduce"/"rule":"scan"/' 'unknown launch rule "scan"'
bad_plan dimid 's/{"dim":3}/{"dim":9}/' "shape id 9, but the launch has 3 sizes"
bad_plan max 's/"max":64}/"max":0}/' "is out of range"
bad_plan format 's/"fusec-plan\/2"/"fusec-plan\/3"/' 'unsupported plan format "fusec-plan/3"'
bad_plan twice 's/{"name":"seq","min":1,"max":512}/{"name":"batch","min":1,"max":512}/' \
	"dim 'batch' is listed twice"

# an ONNX model's dim_params (tests/onnx/dynamic, made by its gen.py): the model is
# imported at two sets of probe sizes and the two graphs compared (onnx/every.c), the
# shape arithmetic an exporter writes (Shape, Gather, Concat into Reshape and Expand)
# becoming expressions. Each run at a binding is held to the interpreter (--check) and
# its outputs to those of the model imported and compiled at that one size.
OD=tests/onnx/dynamic
check dyn-onnx-compile 0 "$FUSEC" compile "$OD/heads.onnx" -o "$TMP/oh" --no-cache &&
	contains dyn-onnx-compile-line "$TMP/err" "fusec: compiled heads for every batch ≥ 1, seq ≥ 1 (3 ranges of sizes): 26 ops" &&
	contains dyn-onnx-compile-format "$TMP/oh/heads.plan.json" '"format":"fusec-plan/2"' &&
	contains dyn-onnx-compile-shape "$TMP/oh/heads.plan.json" '"shape":["batch","seq",4,4]'
check dyn-onnx-compile-dims 0 "$FUSEC" compile "$OD/heads.onnx" -o "$TMP/oh2" --no-cache \
	--dims batch=1..64,seq=1..512 &&
	contains dyn-onnx-compile-dims-line "$TMP/err" "fusec: compiled heads for every batch in 1..64, seq in 1..512 (3 ranges of sizes): 26 ops" &&
	contains dyn-onnx-compile-dims-plan "$TMP/oh2/heads.plan.json" '{"name":"seq","min":1,"max":512}'
for case in heads:16:1..64:1..512:1x1,3x7,16x61,64x512 cls:8:1..64:1..60:1x1,5x13,64x60; do
	IFS=: read -r m w rb rs sizes <<E
$case
E
	for b in $(echo "$sizes" | tr , ' '); do
		sh=${b}x$w
		check "dyn-onnx-$m-$b" 0 "$FUSEC" run "$OD/$m.onnx" --backend cpu --dynamic --check \
			--dims "batch=$rb,seq=$rs" --input-shape "x=$sh" --outputs "$TMP/od_$m$b" &&
			contains "dyn-onnx-$m-$b-built" "$TMP/err" "; run at batch=${b%x*}, seq=${b#*x}" &&
			check "dyn-onnx-$m-$b-ok" 1 grep -q "FAIL\|unbounded\|not checked" "$TMP/out" &&
			check "dyn-onnx-$m-$b-static" 0 "$FUSEC" run "$OD/$m.onnx" --backend cpu \
				--input-shape "x=$sh" --outputs "$TMP/os_$m$b" &&
			check "dyn-onnx-$m-$b-same" 0 "$PY" -c 'import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
sys.exit(0 if a.shape == b.shape and np.allclose(a, b, rtol=1e-5, atol=1e-6) else 1)' \
				"$TMP/od_$m$b/y.npy" "$TMP/os_$m$b/y.npy"
	done
done
# a range and a table cut to a size in the graph: held to the interpreter and to a
# compile at that size
for m in range slice mean; do
	for b in 1x1 3x7 8x64; do
		check "dyn-onnx-$m-$b" 0 "$FUSEC" run "$OD/$m.onnx" --backend cpu --dynamic --check \
			--dims batch=1..8,seq=1..64 --input-shape "x=$b" --outputs "$TMP/od_$m$b" &&
			check "dyn-onnx-$m-$b-ok" 1 grep -q "FAIL\|unbounded\|not checked" "$TMP/out" &&
			check "dyn-onnx-$m-$b-static" 0 "$FUSEC" run "$OD/$m.onnx" --backend cpu \
				--input-shape "x=$b" --outputs "$TMP/os_$m$b" &&
			check "dyn-onnx-$m-$b-same" 0 "$PY" -c 'import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
sys.exit(0 if a.shape == b.shape and np.allclose(a, b, rtol=1e-6, atol=1e-6) else 1)' \
				"$TMP/od_$m$b/y.npy" "$TMP/os_$m$b/y.npy"
	done
done
# exported by torch.onnx.export with dynamic batch and seq (tests/onnx/dynamic/gen.py):
# BERT's padding mask (ranges, index arithmetic, a gather of the flattened mask,
# position ids cut from a table) and Llama's causal mask and rotary embeddings;
# compiled once, run at three sizes, held to the interpreter and to onnxruntime's
# output stored beside them
for m in bert llama; do
	check "dyn-micro-$m" 0 "$FUSEC" compile "$OD/${m}_micro.onnx" -o "$TMP/om_$m" --no-cache \
		--dims batch=1..8,seq=1..64 &&
		contains "dyn-micro-$m-line" "$TMP/err" "fusec: compiled ${m}_micro for every batch in 1..8, seq in 1..64 (2 ranges of sizes):"
	for b in 1x1 3x7 2x64; do
		ref=$OD/micro/${m}_$b
		check "dyn-micro-$m-$b" 0 "$FUSEC" run "$OD/${m}_micro.onnx" --backend cpu --dynamic --check \
			--dims batch=1..8,seq=1..64 --inputs "$ref" --outputs "$TMP/omo_$m$b" &&
			check "dyn-micro-$m-$b-ok" 1 grep -q "FAIL\|unbounded\|not checked" "$TMP/out" &&
			check "dyn-micro-$m-$b-ort" 0 "$PY" -c 'import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
sys.exit(0 if a.shape == b.shape and np.abs(a - b).max() < 1e-5 else 1)' \
				"$TMP/omo_$m$b/last_hidden_state.npy" "$ref/last_hidden_state.npy"
	done
done
# refusals: a value made from a size that the importer cannot keep in the graph, a
# table cut past its end, a binding outside the range, and --dims that names nothing
# or leaves too few sizes
check dyn-onnx-double 1 "$FUSEC" compile "$OD/double.onnx" -o "$TMP/om" --dims batch=1..8,seq=1..64
contains dyn-onnx-double-msg "$TMP/err" "constant 'r' is computed from the sizes of the dim_params"
test ! -e "$TMP/om" && pass=$((pass + 1)) || { echo "FAIL dyn-onnx-double-nothing-written"; fail=$((fail + 1)); }
check dyn-onnx-recip 1 "$FUSEC" compile "$OD/recip.onnx" -o "$TMP/om" --dims batch=1..8,seq=1..64
contains dyn-onnx-recip-msg "$TMP/err" "ops[0] 'y' → y: its scalar, 0.0163934 here and 0.0169492 at other sizes, is computed from the sizes of the dim_params (a size used as a value)"
# a shape entry that is a sum (seq + 1): refused in an Expand; in a Reshape one is
# left to be computed (-1), a second is refused; at one size both run
check dyn-onnx-expand-sum 1 "$FUSEC" compile "$OD/expand_sum.onnx" -o "$TMP/oe" --dims batch=1..8,seq=1..64
contains dyn-onnx-expand-sum-msg "$TMP/err" "ops[3] 'y' → y: entry 1 of its shape, 62 here and 60 at other sizes, is not a product of dim_params; not supported yet in a model compiled for every size of its dim_params (fix them with --input-shape)"
test ! -e "$TMP/oe" && pass=$((pass + 1)) || { echo "FAIL dyn-onnx-expand-sum-nothing-written"; fail=$((fail + 1)); }
check dyn-onnx-reshape-sum 1 "$FUSEC" compile "$OD/reshape_sum.onnx" -o "$TMP/oe" --dims batch=1..8,seq=1..64
contains dyn-onnx-reshape-sum-msg "$TMP/err" "ops[6] 'y' → y: entry 2 of its shape, 62 here and 60 at other sizes, is not a product of dim_params, and entry 1 is already left to be computed (-1): a reshape can leave one;"
for m in expand_sum reshape_sum; do
	check dyn-onnx-$m-fixed 0 "$FUSEC" run "$OD/$m.onnx" --backend cpu --input-shape x=3x7 --check
	contains dyn-onnx-$m-fixed-ok "$TMP/out" "check y: "
done
check dyn-onnx-slice-past 1 "$FUSEC" compile "$OD/slice.onnx" -o "$TMP/os" --dims batch=1..8,seq=1..65
contains dyn-onnx-slice-past-msg "$TMP/err" "ops[0] 'cut' → cut (slice): dim 1 takes seq of its 64 from 0: give the named dims ranges it fits (--dims)"
check dyn-onnx-outside 1 "$FUSEC" run "$OD/cls.onnx" --backend cpu --dynamic --dims batch=1..64,seq=1..60 \
	--input-shape x=3x61x8
same dyn-onnx-outside-msg "$TMP/err" "$OD/cls.onnx: error: input 'x' dim 1 is 61: 'seq' is compiled for 1..60"
check dyn-onnx-nodim 1 "$FUSEC" compile "$OD/heads.onnx" -o "$TMP/on" --dims sq=1..8
same dyn-onnx-nodim-msg "$TMP/err" "$OD/heads.onnx: error: --dims: no input of the model has the dim_param 'sq'"
check dyn-onnx-few 1 "$FUSEC" compile "$OD/heads.onnx" -o "$TMP/on" --dims batch=1..3,seq=1..3
contains dyn-onnx-few-msg "$TMP/err" "dim_param 'batch': its range 1..3 holds too few sizes to compile the model at"
check dyn-onnx-dims-syntax 2 "$FUSEC" compile "$OD/heads.onnx" -o "$TMP/on" --dims batch=4..2
contains dyn-onnx-dims-syntax-msg "$TMP/err" "--dims: expected NAME=LO..HI with 1 <= LO <= HI <= 2^40, got 'batch=4..2'"
check dyn-onnx-dims-twice 2 "$FUSEC" compile "$OD/heads.onnx" -o "$TMP/on" --dims batch=1..4,batch=1..5
contains dyn-onnx-dims-twice-msg "$TMP/err" "--dims: 'batch' is given twice"
# a range of one size fixes the dim, as --input-shape would: 25 ops, one symbol
check dyn-onnx-fixed 0 "$FUSEC" compile "$OD/heads.onnx" -o "$TMP/of" --no-cache --dims batch=1..1,seq=1..9 &&
	contains dyn-onnx-fixed-line "$TMP/err" "fusec: compiled heads for every seq in 1..9 (3 ranges of sizes):"
# --dims also narrows a graph file's own ranges
check dyn-dims-graph 0 "$FUSEC" run "$TMP/mlp.yaml" --backend cpu --dynamic --dims seq=1..32 \
	--input-shape x=2x20x64 &&
	contains dyn-dims-graph-built "$TMP/err" "fusec: compiled for every batch in 1..64, seq in 1..32 (built at batch=61, seq=31)"
check dyn-dims-graph-outside 1 "$FUSEC" run "$TMP/mlp.yaml" --backend cpu --dynamic --dims seq=1..32 \
	--input-shape x=2x40x64
contains dyn-dims-graph-outside-msg "$TMP/err" "error: input 'x' dim 1 is 40: 'seq' is compiled for 1..32"
check dyn-dims-graph-none 1 "$FUSEC" run "$TMP/mlp.yaml" --backend cpu --dynamic --dims sq=1..32 \
	--input-shape x=2x20x64
contains dyn-dims-graph-none-msg "$TMP/err" "error: --dims: the graph has no named dim 'sq'"

# --shape-buckets: variants of the plan for narrower ranges of sizes, each lowered at
# sizes in its range; fusec-run takes the narrowest that holds the bound sizes, and
# that variant is the plan a compile for its range alone writes, launch for launch
check dyn-buckets 0 "$FUSEC" compile "$OD/heads.onnx" -o "$TMP/ob" --no-cache \
	--dims batch=1..32,seq=1..512 --shape-buckets 3 &&
	contains dyn-buckets-line "$TMP/err" "fusec: compiled heads for every batch in 1..32, seq in 1..512 (3 ranges of sizes): 26 ops" &&
	contains dyn-buckets-files "$TMP/out" "$TMP/ob/heads.b1.ptx $TMP/ob/heads.b2.ptx"
for c in 2x3:b2:1..8:1..128 9x200:b1:1..16:1..256 17x3:-:1..32:1..512 32x512:-:1..32:1..512; do
	IFS=: read -r b v rb rs <<E
$c
E
	check "dyn-buckets-$b" 0 "$RUNBIN" "$TMP/ob" --plan-only --input-shape "x=${b}x16" &&
		contains "dyn-buckets-$b-variant" "$TMP/out" "variant: arch sm_90a, sizes batch in 1..16, seq in 1..256, ptx $TMP/ob/heads.b1.ptx, 5 kernels"
	sed -n '/^launch/,$p' "$TMP/out" >"$TMP/ob_$b.txt"
	if [ "$v" = - ]; then
		check "dyn-buckets-$b-top" 1 grep -q "^runs:" "$TMP/out"
	else
		contains "dyn-buckets-$b-runs" "$TMP/out" "runs: the variant of ptx $TMP/ob/heads.$v.ptx"
	fi
	check "dyn-buckets-$b-alone" 0 "$FUSEC" compile "$OD/heads.onnx" -o "$TMP/oa_$b" --no-cache \
		--dims "batch=$rb,seq=$rs" --shape-buckets 1 &&
		check "dyn-buckets-$b-alone-print" 0 "$RUNBIN" "$TMP/oa_$b" --plan-only --input-shape "x=${b}x16" &&
		sed -n '/^launch/,$p' "$TMP/out" >"$TMP/oa_$b.txt" &&
		check "dyn-buckets-$b-same" 0 cmp "$TMP/ob_$b.txt" "$TMP/oa_$b.txt"
done
check dyn-buckets-range 2 "$FUSEC" compile "$OD/heads.onnx" -o "$TMP/ob2" --shape-buckets 5
contains dyn-buckets-range-msg "$TMP/err" "option '--shape-buckets' needs 1 to 4"
# hostile variants: a range outside the plan's, a dim of another name, a variant twice
bplan=$TMP/ob/heads.plan.json
bad_bucket() {   # NAME SED MESSAGE
	mkdir -p "$TMP/bb" && cp "$TMP/ob/"*.ptx "$TMP/ob/heads.weights.bin" "$TMP/bb/" &&
		sed "$2" "$bplan" >"$TMP/bb/heads.plan.json"
	check "dyn-buckets-bad-$1" 1 "$RUNBIN" "$TMP/bb" --plan-only --input-shape x=2x3x16 &&
		contains "dyn-buckets-bad-$1-msg" "$TMP/err" "$3"
}
bad_bucket max 's/{"name":"seq","min":1,"max":256}/{"name":"seq","min":1,"max":600}/' \
	"variants[0].dims[1].max"
bad_bucket name 's/{"name":"seq","min":1,"max":256}/{"name":"sq","min":1,"max":256}/' \
	"\"sq\", but the plan's dim 1 is 'seq'"
bad_bucket twice 's/{"name":"batch","min":1,"max":8},{"name":"seq","min":1,"max":128}/{"name":"batch","min":1,"max":16},{"name":"seq","min":1,"max":256}/' \
	"the plan has a variant for sm_90a and these sizes already"
# a named dim without a range: its plan loads, and binds at any size
check dyn-unranged 0 "$FUSEC" compile "$OD/heads.onnx" -o "$TMP/ou" --no-cache &&
	check dyn-unranged-bind 0 "$RUNBIN" "$TMP/ou" --plan-only --input-shape x=5000x3x16 &&
	contains dyn-unranged-sizes "$TMP/out" "sizes: batch=5000, seq=3"
# fusec-run reads --input-shape as fusec does (ir_parse_shape)
check dyn-run-shape-bad 2 "$RUNBIN" "$TMP/pd" --plan-only --input-shape x=2y3
contains dyn-run-shape-bad-msg "$TMP/err" "--input-shape: expected dims from 1 to 2^40 separated by 'x' in 'x=2y3'"
check dyn-run-shape-noname 2 "$RUNBIN" "$TMP/pd" --plan-only --input-shape =2
contains dyn-run-shape-noname-msg "$TMP/err" "--input-shape: expected NAME=DxDx..., got '=2'"
# explain, normalize and the log of a graph left for every size show its sizes as
# written: the header, shape ids as expressions, the log's shapes
check dyn-explain 0 "$FUSEC" explain "$TMP/mlp.yaml" &&
	contains dyn-explain-head "$TMP/out" "for every batch in 1..64, seq in 1..512 (built at batch=61, seq=509)" &&
	contains dyn-explain-op "$TMP/out" "op 1 Float::Matmul [ops[1] → h]"
check dyn-normalize 0 "$FUSEC" normalize "$TMP/mlp.yaml" &&
	contains dyn-normalize-ids "$TMP/out" "  shape ids: 0=1 1=batch 2=seq 3=64 4=batch*seq 5=96"
check dyn-normalize-bound 0 "$FUSEC" normalize "$TMP/mlp.yaml" --input-shape x=2x3x64 &&
	contains dyn-normalize-bound-ids "$TMP/out" "  shape ids: 0=1 1=2 2=3 3=64 4=6 5=96"
check dyn-log 0 "$FUSEC" compile "$TMP/mlp.yaml" -o "$TMP/ml" --no-cache --log full &&
	contains dyn-log-shape "$TMP/err" "t0(x):f32[batch,seq,64]  t2(x2):f32[batch*seq,64]"
check dyn-explain-onnx 0 "$FUSEC" explain "$OD/heads.onnx" --dims batch=1..8,seq=1..64 &&
	contains dyn-explain-onnx-head "$TMP/out" "for every batch in 1..8, seq in 1..64 (built at batch=7, seq=61)"
# --input-shape of one input fixes its dim_params in every input (attention_mask's
# batch and seq are input_ids' too): a plan of fixed sizes, as onnxruntime computes
check dyn-onnx-fix-one 0 "$FUSEC" compile "$OD/bert_micro.onnx" -o "$TMP/of1" --no-cache \
	--dims batch=1..8,seq=1..64 --input-shape attention_mask=3x7 &&
	contains dyn-onnx-fix-one-line "$TMP/err" "fusec: compiled bert_micro: 86 ops" &&
	contains dyn-onnx-fix-one-plan "$TMP/of1/bert_micro.plan.json" '"format":"fusec-plan/1"'
check dyn-onnx-fix-one-run 0 "$FUSEC" run "$OD/bert_micro.onnx" --backend cpu --check \
	--input-shape attention_mask=3x7 --inputs "$OD/micro/bert_3x7" --outputs "$TMP/of1o" &&
	check dyn-onnx-fix-one-ort 0 "$PY" -c 'import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
sys.exit(0 if a.shape == b.shape and np.abs(a - b).max() < 1e-5 else 1)' \
		"$TMP/of1o/last_hidden_state.npy" "$OD/micro/bert_3x7/last_hidden_state.npy"
# a Range as long as a dim without a range cannot be cut from a finite one
check dyn-onnx-range-unbounded 1 "$FUSEC" compile "$OD/bert_micro.onnx" -o "$TMP/oru" --dims seq=1..64
contains dyn-onnx-range-unbounded-msg "$TMP/err" "a range as long as dim_param 'batch' is made as long as its largest size, which must be at most 2^20: give it a range (--dims batch=LO..HI)"
