# t_named_dims.sh: a graph file's named dims ([batch, seq, 16]) bound by
# --input-shape (docs/graph-format.md, "Named dims"): the cpu backend's kernels
# against the interpreter at several bindings, the names standing in a reshape's
# shape and a constant's, and each binding error with its message. Then the same
# names bound by the .npy files of `run --inputs`, and an ONNX model's dim_param.
cat >"$TMP/sym.yaml" <<'Y'
format: fusec-graph/1
name: sym
dims: {batch: 1..64, seq: "1..2048"}
inputs:
  x: {dtype: f32, shape: [batch, seq, 16]}
  m: {dtype: f32, shape: [batch, 1, seq]}
constants:
  w: {dtype: f32, shape: [1, 16, 16], npy: w.npy}
ops:
  - {op: matmul, in: [x, w], out: y}
  - {op: reshape, in: [y], out: r, shape: [batch, seq, 4, 4]}
  - {op: sum, in: [r], out: s, axis: 3}
  - {op: max_dim, in: [m], out: mm, axis: 2, shape: [batch, 1, 1]}
  - {op: sub, in: [m, mm], out: d}
outputs: [s, d]
Y
"$(npy_python)" -c 'import numpy as np, sys; np.save(sys.argv[1], np.linspace(-1, 1, 256, dtype=np.float32).reshape(1, 16, 16))' "$TMP/w.npy"

# the same graph at three bindings; x alone binds both names (m shares them)
for b in 1x1 3x5 8x37; do
	n=${b%x*} s=${b#*x}
	check "named-dims-cpu-$b" 0 "$FUSEC" run "$TMP/sym.yaml" --backend cpu --check --seed 3 \
		--input-shape x=${n}x${s}x16 &&
		contains "named-dims-cpu-$b-shape" "$TMP/out" "s: f32[$n,$s,4,1]" &&
		contains "named-dims-cpu-$b-m" "$TMP/out" "d: f32[$n,1,$s]" &&
		check "named-dims-cpu-$b-ok" 1 grep -q "FAIL\|unbounded\|not checked" "$TMP/out"
done
# both inputs given, and the plan has the bound sizes
check named-dims-both 0 "$FUSEC" compile "$TMP/sym.yaml" -o "$TMP/p" -q --no-cache \
	--input-shape m=2x1x9 --input-shape x=2x9x16
contains named-dims-plan "$TMP/p/sym.plan.json" '{"name":"s","dtype":"f32","shape":[2,9,4,1],"role":"output"'

# errors: each exits 1, names the input, the dim and the name
# unbound: a run needs the sizes (a compile makes a plan for every size: t_dynamic.sh)
check named-dims-unbound 1 "$FUSEC" run "$TMP/sym.yaml" --backend interp
same named-dims-unbound-msg "$TMP/err" "$TMP/sym.yaml:5:26: error: inputs.x.shape[0]: the dim 'batch' is not bound: give the input's shape with --input-shape x=DxD..."
check named-dims-range 1 "$FUSEC" compile "$TMP/sym.yaml" -o "$TMP/p1" --input-shape x=65x2x16
same named-dims-range-msg "$TMP/err" "$TMP/sym.yaml:5:26: error: --input-shape x: 'batch' = 65 is outside its range 1..64 (dims)"
check named-dims-clash 1 "$FUSEC" compile "$TMP/sym.yaml" -o "$TMP/p1" \
	--input-shape x=2x3x16 --input-shape m=2x1x4
same named-dims-clash-msg "$TMP/err" "$TMP/sym.yaml:6:26: error: --input-shape m: 'seq' = 4, but --input-shape x made it 3"
check named-dims-fixed 1 "$FUSEC" compile "$TMP/sym.yaml" -o "$TMP/p1" --input-shape x=2x3x15
same named-dims-fixed-msg "$TMP/err" "$TMP/sym.yaml:5:26: error: --input-shape x: dim 2 is 15, but the graph fixes it at 16"
check named-dims-rank 1 "$FUSEC" compile "$TMP/sym.yaml" -o "$TMP/p1" --input-shape x=2x3
same named-dims-rank-msg "$TMP/err" "$TMP/sym.yaml:5:26: error: --input-shape x: 2 dims, but input 'x' has 3"
check named-dims-noinput 1 "$FUSEC" compile "$TMP/sym.yaml" -o "$TMP/p1" --input-shape w=1x16x16
same named-dims-noinput-msg "$TMP/err" "$TMP/sym.yaml:5:3: error: --input-shape: the graph has no input 'w'"
test ! -e "$TMP/p1" && pass=$((pass + 1)) || { echo "FAIL named-dims-nothing-written"; fail=$((fail + 1)); }
sed 's/shape: \[batch, seq, 4, 4\]/shape: [batch, sequ, 4, 4]/' "$TMP/sym.yaml" >"$TMP/sym2.yaml"
check named-dims-unknown 1 "$FUSEC" compile "$TMP/sym2.yaml" -o "$TMP/p1" --input-shape x=2x3x16
same named-dims-unknown-msg "$TMP/err" "$TMP/sym2.yaml:11:51: error: ops[1].shape[1]: 'sequ' names no dim of the inputs' shapes"
sed 's/batch: 1..64/batch: 9..3/' "$TMP/sym.yaml" >"$TMP/sym3.yaml"
check named-dims-bad-range 1 "$FUSEC" compile "$TMP/sym3.yaml" -o "$TMP/p1" --input-shape x=2x3x16
same named-dims-bad-range-msg "$TMP/err" "$TMP/sym3.yaml:3:15: error: dims.batch: expected LO..HI with 1 <= LO <= HI <= 2^40, or a positive integer, got '9..3'"
sed 's/\[batch, seq, 16\]/[2bad, seq, 16]/' "$TMP/sym.yaml" >"$TMP/sym4.yaml"
check named-dims-bad-name 1 "$FUSEC" compile "$TMP/sym4.yaml" -o "$TMP/p1" --input-shape x=2x3x16
same named-dims-bad-name-msg "$TMP/err" "$TMP/sym4.yaml:5:27: error: inputs.x.shape[0]: expected a positive integer, got '2bad'"
sed 's/\[batch, seq, 16\]/[bat-ch, seq, 16]/' "$TMP/sym.yaml" >"$TMP/sym5.yaml"
check named-dims-bad-name2 1 "$FUSEC" compile "$TMP/sym5.yaml" -o "$TMP/p1" --input-shape x=2x3x16
same named-dims-bad-name2-msg "$TMP/err" "$TMP/sym5.yaml:5:27: error: inputs.x.shape[0]: a dim name is a letter or '_' then letters, digits or '_', got 'bat-ch'"
# the same document in JSON reads the same
"$(npy_python)" -c 'import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), open(sys.argv[2], "w"))' \
	"$TMP/sym.yaml" "$TMP/sym.json"
check named-dims-json 0 "$FUSEC" run "$TMP/sym.json" --backend cpu --check --seed 3 --input-shape x=4x6x16 &&
	contains named-dims-json-shape "$TMP/out" "s: f32[4,6,4,1]"
# after an input that fails, a name in an op is still read as a name (no size
# stands for it), not as a dim of its own
cat >"$TMP/bad.yaml" <<'Y'
format: fusec-graph/1
inputs:
  x: {dtype: f33, shape: [2, 4]}
  z: {dtype: f32, shape: [2, 4]}
ops:
  - {op: reshape, in: [z], out: r, shape: [foo, 4]}
outputs: [r]
Y
check named-dims-after-error 1 "$FUSEC" compile "$TMP/bad.yaml" -o "$TMP/p1" --max-errors 5
contains named-dims-after-error-msg "$TMP/err" "ops[0].shape[0]: 'foo' names no dim of the inputs' shapes"

# --inputs binds the names from the .npy files' shapes: NAME=FILE at three shapes,
# the cpu backend checked against the interpreter
npy_inputs() {   # npy_inputs DIR N S [M_S]: DIR/x.npy [N,S,16], DIR/m.npy [N,1,M_S]
	mkdir -p "$1"
	"$(npy_python)" -c 'import numpy as np, sys
d, n, s, ms = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
r = np.random.default_rng(n * 100 + s)
np.save(d + "/x.npy", r.standard_normal((n, s, 16)).astype(np.float32))
np.save(d + "/m.npy", r.standard_normal((n, 1, ms)).astype(np.float32))' "$1" "$2" "$3" "${4:-$3}"
}
for b in 2x3 5x7 9x33; do
	n=${b%x*} s=${b#*x}
	npy_inputs "$TMP/in$b" "$n" "$s"
	check "named-dims-inputs-$b" 0 "$FUSEC" run "$TMP/sym.yaml" --backend cpu --check \
		--inputs "x=$TMP/in$b/x.npy,m=$TMP/in$b/m.npy" &&
		contains "named-dims-inputs-$b-shape" "$TMP/out" "s: f32[$n,$s,4,1]" &&
		contains "named-dims-inputs-$b-m" "$TMP/out" "d: f32[$n,1,$s]" &&
		check "named-dims-inputs-$b-ok" 1 grep -q "FAIL\|unbounded\|not checked" "$TMP/out"
done
# --inputs DIR: interp and cpu write the same outputs; one file (x) binds both
# names, m is random at the bound shape
check named-dims-inputs-dir-interp 0 "$FUSEC" run "$TMP/sym.yaml" --inputs "$TMP/in5x7" \
	--outputs "$TMP/o_interp"
check named-dims-inputs-dir-cpu 0 "$FUSEC" run "$TMP/sym.yaml" --backend cpu \
	--inputs "$TMP/in5x7" --outputs "$TMP/o_cpu"
same_npy named-dims-inputs-dir-same "$TMP/o_interp" "$TMP/o_cpu" 1e-5
check named-dims-inputs-one 0 "$FUSEC" run "$TMP/sym.yaml" --inputs "x=$TMP/in2x3/x.npy" &&
	contains named-dims-inputs-one-m "$TMP/out" "d: f32[2,1,3]"
# an --input-shape of another input binds with them
check named-dims-inputs-mixed 0 "$FUSEC" run "$TMP/sym.yaml" --inputs "m=$TMP/in2x3/m.npy" \
	--input-shape x=2x3x16 &&
	contains named-dims-inputs-mixed-shape "$TMP/out" "s: f32[2,3,4,1]"

# errors from --inputs: exit 1, the input and its file named, nothing written
npy_inputs "$TMP/big" 65 2
npy_inputs "$TMP/clash" 2 3 4
"$(npy_python)" -c 'import numpy as np, sys
np.save(sys.argv[1] + "/x2.npy", np.zeros((2, 3), np.float32))
np.save(sys.argv[1] + "/x15.npy", np.zeros((2, 3, 15), np.float32))
np.save(sys.argv[1] + "/x0.npy", np.zeros((0, 3, 16), np.float32))' "$TMP/clash"
check named-dims-inputs-zero 1 "$FUSEC" run "$TMP/sym.yaml" --inputs "x=$TMP/clash/x0.npy"
same named-dims-inputs-zero-msg "$TMP/err" "$TMP/sym.yaml:5:26: error: --inputs x ($TMP/clash/x0.npy): dim 0 is 0; a shape has no zero dims"
# fusec bench binds the same way, before it looks for a GPU
check named-dims-bench-range 1 "$FUSEC" bench "$TMP/sym.yaml" --inputs "$TMP/big"
contains named-dims-bench-range-msg "$TMP/err" "--inputs x ($TMP/big/x.npy): 'batch' = 65 is outside its range 1..64 (dims)"
check named-dims-inputs-range 1 "$FUSEC" run "$TMP/sym.yaml" --inputs "x=$TMP/big/x.npy" \
	--outputs "$TMP/o_bad"
same named-dims-inputs-range-msg "$TMP/err" "$TMP/sym.yaml:5:26: error: --inputs x ($TMP/big/x.npy): 'batch' = 65 is outside its range 1..64 (dims)"
check named-dims-inputs-clash 1 "$FUSEC" run "$TMP/sym.yaml" --backend cpu --inputs "$TMP/clash" \
	--outputs "$TMP/o_bad"
same named-dims-inputs-clash-msg "$TMP/err" "$TMP/sym.yaml:6:26: error: --inputs m ($TMP/clash/m.npy): 'seq' = 4, but --inputs x ($TMP/clash/x.npy) made it 3"
check named-dims-inputs-fixed 1 "$FUSEC" run "$TMP/sym.yaml" --inputs "x=$TMP/clash/x15.npy"
same named-dims-inputs-fixed-msg "$TMP/err" "$TMP/sym.yaml:5:26: error: --inputs x ($TMP/clash/x15.npy): dim 2 is 15, but the graph fixes it at 16"
check named-dims-inputs-rank 1 "$FUSEC" run "$TMP/sym.yaml" --inputs "x=$TMP/clash/x2.npy"
same named-dims-inputs-rank-msg "$TMP/err" "$TMP/sym.yaml:5:26: error: --inputs x ($TMP/clash/x2.npy): 2 dims, but input 'x' has 3"
# an --input-shape of the other input that the file contradicts
check named-dims-inputs-vs-shape 1 "$FUSEC" run "$TMP/sym.yaml" --inputs "m=$TMP/clash/m.npy" \
	--input-shape x=2x3x16
same named-dims-inputs-vs-shape-msg "$TMP/err" "$TMP/sym.yaml:6:26: error: --inputs m ($TMP/clash/m.npy): 'seq' = 4, but --input-shape x made it 3"
# an --input-shape of the same input wins; its file then does not fit (run's message)
check named-dims-inputs-shape-wins 1 "$FUSEC" run "$TMP/sym.yaml" --inputs "x=$TMP/in2x3/x.npy" \
	--input-shape x=2x4x16 --outputs "$TMP/o_bad"
same named-dims-inputs-shape-wins-msg "$TMP/err" "fusec: error: $TMP/in2x3/x.npy: input 'x' needs f32[2,4,16], got f32[2,3,16]"
check named-dims-inputs-missing 1 "$FUSEC" run "$TMP/sym.yaml" --inputs "$TMP/big/none"
same named-dims-inputs-missing-msg "$TMP/err" "$TMP/big/none/x.npy: error: cannot open: No such file or directory"
test ! -e "$TMP/o_bad" && pass=$((pass + 1)) || { echo "FAIL named-dims-inputs-nothing-written"; fail=$((fail + 1)); }

# an ONNX model's dim_param, bound the same way: y = a + b, both [N, 4] (the model
# encoded by hand, no onnx package needed)
"$(npy_python)" -c 'import sys
import numpy as np
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[2])
from onnx_wire import field, value, model
node = field(1, "a") + field(1, "b") + field(2, "y") + field(3, "add") + field(4, "Add")
graph = (field(1, node) + field(2, "g") + field(11, value("a", ["N", 4])) +
         field(11, value("b", ["N", 4])) + field(12, value("y", ["N", 4])))
d = sys.argv[1]
open(d + "/add.onnx", "wb").write(model(graph))
np.save(d + "/a.npy", np.arange(12, dtype=np.float32).reshape(3, 4))
np.save(d + "/b.npy", np.ones((3, 4), np.float32))
np.save(d + "/b5.npy", np.ones((3, 5), np.float32))' "$TMP" tests/cli
check named-dims-onnx-unbound 1 "$FUSEC" run "$TMP/add.onnx"
same named-dims-onnx-unbound-msg "$TMP/err" "$TMP/add.onnx: error: input 'a' dim 0 ('N') is not static: fix the shape with --input-shape a=DxD..."
check named-dims-onnx-inputs 0 "$FUSEC" run "$TMP/add.onnx" --backend cpu --check \
	--inputs "a=$TMP/a.npy,b=$TMP/b.npy" &&
	same named-dims-onnx-inputs-out "$TMP/out" "y: f32[3,4] sum=78 first=[1, 2, 3, 4, ...]
check y: max_abs=0 max_err/bound=0 ok"
check named-dims-onnx-fixed 1 "$FUSEC" run "$TMP/add.onnx" --inputs "a=$TMP/a.npy,b=$TMP/b5.npy"
same named-dims-onnx-fixed-msg "$TMP/err" "$TMP/add.onnx: error: --inputs b ($TMP/b5.npy) gives dim 1 = 5, the model fixes it to 4"
