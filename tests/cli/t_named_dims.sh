# t_named_dims.sh: a graph file's named dims ([batch, seq, 16]) bound by
# --input-shape (docs/graph-format.md, "Named dims"): the cpu backend's kernels
# against the interpreter at several bindings, the names standing in a reshape's
# shape and a constant's, and each binding error with its message.
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
check named-dims-unbound 1 "$FUSEC" compile "$TMP/sym.yaml" -o "$TMP/p1"
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
same named-dims-bad-range-msg "$TMP/err" "$TMP/sym3.yaml:3:15: error: dims.batch: expected LO..HI with 1 <= LO <= HI, or a positive integer, got '9..3'"
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
