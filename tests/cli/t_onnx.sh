# t_onnx.sh: ONNX models on the command line: every command takes a .onnx file
# (sniffed by extension or content), constants go to a weights file beside the
# plan, inputs and outputs by sanitized name, import to fusec-graph/1 and back,
# --input-shape, and the errors of truncated files, unmapped ops and symbolic dims.
NODE=${ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}/node
M=tests/onnx/models

# compile: plan, PTX and weights; byte-identical when repeated
check onnx-compile 0 "$FUSEC" compile "$M/gpt2/model.onnx" -o "$TMP/p1" &&
	contains onnx-compile-weights "$TMP/p1/model.plan.json" '"weights":"model.weights.bin"'
check onnx-compile-again 0 "$FUSEC" compile "$M/gpt2/model.onnx" -o "$TMP/p2"
same_files onnx-weights-deterministic "$TMP/p1/model.weights.bin" "$TMP/p2/model.weights.bin"
same_files onnx-plan-deterministic "$TMP/p1/model.plan.json" "$TMP/p2/model.plan.json"
contains onnx-compile-constant "$TMP/p1/model.plan.json" '"constant":0,'
# a recompile into the same folder leaves an unchanged weights file as it is (same
# inode: not written again) and rewrites one that differs
ino1=$(stat -c %i "$TMP/p1/model.weights.bin")
check onnx-recompile 0 "$FUSEC" compile "$M/gpt2/model.onnx" -o "$TMP/p1"
stat -c %i "$TMP/p1/model.weights.bin" >"$TMP/ino2"
same onnx-recompile-keeps-weights "$TMP/ino2" "$ino1"
printf 'X' | dd of="$TMP/p1/model.weights.bin" bs=1 seek=300 conv=notrunc 2>/dev/null
check onnx-recompile-changed 0 "$FUSEC" compile "$M/gpt2/model.onnx" -o "$TMP/p1"
same_files onnx-recompile-rewrites-weights "$TMP/p1/model.weights.bin" "$TMP/p2/model.weights.bin"

# sniffed by content: the same model under another extension
cp "$M/bert/model.onnx" "$TMP/bert.bin"
check onnx-sniff 0 "$FUSEC" normalize "$TMP/bert.bin" &&
	contains onnx-sniff-out "$TMP/out" "Matmul"
check onnx-explain 0 "$FUSEC" explain "$M/vit2/model.onnx"
# MatMul of a [1, S, K] activation by a [K, N] weight stays rank 3 (no reshape
# around the matmul), so the bias Add after it fuses as the matmul's epilogue
check onnx-matmul-epilogue 0 "$FUSEC" explain "$M/bert/model.onnx" &&
	grep -A2 "'/blocks.0/attn/qkv/Add'" "$TMP/out" > "$TMP/qkv" &&
	contains onnx-matmul-epilogue-fused "$TMP/qkv" "fused Matmul"

# run by name: inputs DIR/NAME.npy, outputs DIR/NAME.npy; interp and cpu agree
mkdir -p "$TMP/in"
check onnx-run-seeded 0 "$FUSEC" run "$M/bert/model.onnx" --outputs "$TMP/o1"
check onnx-run-outputs-named 0 test -f "$TMP/o1/pooled.npy"
check onnx-run-cpu-check 0 "$FUSEC" run "$M/llama/model.onnx" --backend cpu --check &&
	contains onnx-run-cpu-check-out "$TMP/out" "check logits:"
cp "$TMP/o1/pooled.npy" "$TMP/in/x.npy"
check onnx-run-bad-input 1 "$FUSEC" run "$M/resnet18/model.onnx" --inputs "$TMP/in" &&
	contains onnx-run-bad-input-msg "$TMP/err" "input 'x' needs f32[1,3,32,32], got f32[1,32]"


# import writes fusec-graph/1 that reads back to the same results
check onnx-import-json 0 "$FUSEC" import "$M/gpt2/model.onnx" -o "$TMP/g.json"
check onnx-import-yaml 0 "$FUSEC" import "$M/gpt2/model.onnx" -o "$TMP/g.yaml"
check onnx-import-npy 0 test -d "$TMP/g.data"
check onnx-run-onnx 0 "$FUSEC" run "$M/gpt2/model.onnx" --seed 3
cp "$TMP/out" "$TMP/want"
check onnx-run-json 0 "$FUSEC" run "$TMP/g.json" --seed 3 &&
	same_files onnx-json-same "$TMP/out" "$TMP/want"
check onnx-run-yaml 0 "$FUSEC" run "$TMP/g.yaml" --seed 3 &&
	same_files onnx-yaml-same "$TMP/out" "$TMP/want"

# errors
head -c 300 "$M/gpt2/model.onnx" >"$TMP/cut.onnx"
check onnx-truncated 1 "$FUSEC" compile "$TMP/cut.onnx" -o "$TMP/cut" &&
	contains onnx-truncated-msg "$TMP/err" "not a valid ONNX model"
check onnx-truncated-nothing-written 1 test -e "$TMP/cut"
check onnx-unmapped 1 "$FUSEC" run "$NODE/test_top_k/model.onnx" &&
	same onnx-unmapped-msg "$TMP/err" "$NODE/test_top_k/model.onnx: error: node 0 'values' (TopK, opset 11): op TopK has no mapping to fusec ops yet"
check onnx-symbolic 1 "$FUSEC" run "$NODE/test_reshape_allowzero_reordered/model.onnx" &&
	contains onnx-symbolic-msg "$TMP/err" "input 'data' dim 0 ('?') is not static: fix the shape with --input-shape data=DxD..."
check onnx-input-shape 0 "$FUSEC" run "$M/bert/model.onnx" --input-shape input_ids=1x16
check onnx-input-shape-contradicts 1 "$FUSEC" run "$M/bert/model.onnx" --input-shape=input_ids=1x8 &&
	contains onnx-input-shape-contradicts-msg "$TMP/err" "--input-shape input_ids gives dim 1 = 8, the model fixes it to 16"
check onnx-input-shape-bad 2 "$FUSEC" run "$M/bert/model.onnx" --input-shape input_ids=1xx
check onnx-input-shape-missing 2 "$FUSEC" run "$M/bert/model.onnx" --input-shape
check onnx-input-shape-unknown 1 "$FUSEC" run "$M/bert/model.onnx" --input-shape nope=1x16 &&
	contains onnx-input-shape-unknown-msg "$TMP/err" "--input-shape: the model has no input 'nope'"
check onnx-input-shape-not-onnx 1 "$FUSEC" run "$TMP/g.json" --input-shape x=1

# names outside [A-Za-z0-9._-] become '_' in file names, for inputs and outputs
cat >"$TMP/names.json" <<'JSON'
{"format": "fusec-graph/1", "inputs": {"a/b:0": {"dtype": "f32", "shape": [1, 32]}},
 "ops": [{"op": "relu", "in": ["a/b:0"], "out": "y:1"}], "outputs": ["y:1"]}
JSON
mkdir -p "$TMP/named"
cp "$TMP/o1/pooled.npy" "$TMP/named/a_b_0.npy"
check onnx-sanitized-names 0 "$FUSEC" run "$TMP/names.json" --inputs "$TMP/named" --outputs "$TMP/named-out"
check onnx-sanitized-output 0 test -f "$TMP/named-out/y_1.npy"

# A plan with a constant: fusec-run uploads it from the weights file beside the
# plan (through the fake driver of tests/runtime) and takes --inputs for the rest.
RUN=$(dirname "$FUSEC")/fusec-run
FAKE=$(dirname "$FUSEC")/tests/fakecuda.so
mkdir -p "$TMP/wplan" "$TMP/win"
cp tests/runtime/axpb.ptx "$TMP/wplan/"
check onnx-rt-ref 0 env FUSEC_LIBCUDA="$FAKE" "$RUN" tests/runtime/axpb.plan.json \
	--save-inputs "$TMP/win" --outputs "$TMP/wo1"
# c becomes a constant at offset 256 (a zero gap first), its bytes from c.npy
{ head -c 256 /dev/zero; tail -c 148000 "$TMP/win/c.npy"; } >"$TMP/wplan/axpb.weights.bin"
# wplan WEIGHTS: the plan naming the weights file, with its hash
wplan() {
	sed -e "s|\"ptx\": \"axpb.ptx\",|\"ptx\": \"axpb.ptx\", \"weights\": \"axpb.weights.bin\", \"weights_sha256\": \"$(sha256sum "$1" | cut -d' ' -f1)\",|" \
	    -e 's|{"name": "c", "dtype": "f32", "shape": \[1000, 37\], "role": "input",|&  "constant": 256,|' \
	    tests/runtime/axpb.plan.json >"$TMP/wplan/axpb.plan.json"
}
wplan "$TMP/wplan/axpb.weights.bin"
rm "$TMP/win/c.npy"
check onnx-rt-constant 0 env FUSEC_LIBCUDA="$FAKE" "$RUN" "$TMP/wplan/axpb.plan.json" \
	--inputs "$TMP/win" --outputs "$TMP/wo2"
same_files onnx-rt-constant-same "$TMP/wo1/y.npy" "$TMP/wo2/y.npy"
head -c 1000 "$TMP/wplan/axpb.weights.bin" >"$TMP/short.bin" && mv "$TMP/short.bin" "$TMP/wplan/axpb.weights.bin"
wplan "$TMP/wplan/axpb.weights.bin"   # its hash recorded: the bounds are checked
check onnx-rt-short-weights 1 env FUSEC_LIBCUDA="$FAKE" "$RUN" "$TMP/wplan/axpb.plan.json" --inputs "$TMP/win" &&
	contains onnx-rt-short-weights-msg "$TMP/err" "constant 'c' (148000 bytes at 256) lies past the end of the file (1000 bytes)"

# the resource caps hold for ONNX models too (onnx/values.c, check_tensor)
check onnx-cap-ops 1 "$FUSEC" normalize --max-ops 3 "$M/resnet18/model.onnx" &&
	contains onnx-cap-ops-msg "$TMP/err" "(Conv, opset 17): more than 3 ops, the limit (--max-ops)"
check onnx-cap-tensors 1 "$FUSEC" normalize --max-tensors 5 "$M/resnet18/model.onnx" &&
	contains onnx-cap-tensors-msg "$TMP/err" "more than 5 tensors, the limit (--max-tensors)"
check onnx-cap-elements 1 "$FUSEC" normalize --max-elements 1000 "$M/resnet18/model.onnx" &&
	contains onnx-cap-elements-msg "$TMP/err" "input 'x': the graph's tensors hold more than 1000 elements in all, the limit (--max-elements)"
# A batched Linear ([B, S, K] x [K, N], then the bias) stays a flat [B*S, N] matrix
# through the elementwise ops after it (onnx/builders.c, Val.flat), so the bias and the
# erf GELU fuse into the matmul's epilogue; the residual, a whole [B, S, K] tensor,
# takes the reshape back and runs on its own. tests/onnx/extra/t43_Linear has the
# model and numpy's output (onnx_conformance checks the values).
check onnx-linear-compile 0 "$FUSEC" compile tests/onnx/extra/t43_Linear/model.onnx -o "$TMP/lin" --no-cache
check onnx-linear-epilogue 0 python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
k = {x["name"]: [n.split("::")[1] for n in x["op_names"]] for x in p["kernels"]}
got = [k[l["kernel"]] for s in p["steps"] for l in s["launches"]]
want = [["Matmul", "Add", "Gelu"], ["Matmul", "Add"], ["Add"]]
assert got == want, got
' "$TMP/lin/model.plan.json"
check onnx-linear-check 0 "$FUSEC" run tests/onnx/extra/t43_Linear/model.onnx --backend cpu --check
# GELU written out (Div by sqrt 2, Erf, Add 1, Mul by x, Mul by 0.5: torch's export of
# nn.GELU) is one gelu op (onnx/patterns.c), in t43 above; t44_GeluNot's look-alikes
# (a Div by 2; an Erf that a graph output also reads) stay node by node.
check onnx-gelu-not-compile 0 "$FUSEC" compile tests/onnx/extra/t44_GeluNot/model.onnx -o "$TMP/gn" --no-cache -q
check onnx-gelu-not 0 python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
ops = [n.split("::")[1] for x in p["kernels"] for n in x["op_names"]]
assert "Gelu" not in ops and ops.count("Erf") == 2, ops
' "$TMP/gn/model.plan.json"
# A Reshape of a matmul's result that keeps its last dim (GPT-2's view after addmm)
# keeps the value flat: the Tanh and Mul after it are the matmul's epilogue.
check onnx-view-flat-compile 0 "$FUSEC" compile tests/onnx/extra/t45_ViewAfterMatMul/model.onnx -o "$TMP/vf" --no-cache -q
check onnx-view-flat 0 python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
k = {x["name"]: [n.split("::")[1] for n in x["op_names"]] for x in p["kernels"]}
got = [k[l["kernel"]] for s in p["steps"] for l in s["launches"]]
assert got == [["Matmul", "Add", "Tanh", "MulScalar"]], got
' "$TMP/vf/model.plan.json"
# The tanh form (GPT-2's gelu_new written out in eight nodes) is one gelu op too; with
# 0.044 for 0.044715 it stays node by node (t46_GeluTanh).
check onnx-gelu-tanh-compile 0 "$FUSEC" compile tests/onnx/extra/t46_GeluTanh/model.onnx -o "$TMP/gt" --no-cache -q
check onnx-gelu-tanh 0 python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
ops = [n.split("::")[1] for x in p["kernels"] for n in x["op_names"]]
assert ops.count("Gelu") == 1 and ops.count("Tanh") == 1, ops
' "$TMP/gt/model.plan.json"

# Gather with constant indices i, i+1, ... (torch's q, k, v = qkv[0], qkv[1], qkv[2]
# in nn.MultiheadAttention) imports as a slice: a view the kernels reading it read
# through, where a gather was a kernel of its own. The model (encoded by hand):
# x [5,2,24] -> Reshape [5,2,3,8] -> Transpose (2,0,1,3) -> Gather 0, 1, -1 on axis 0
# -> y1 = q * k, y2 = Transpose(v, (1,0,2))
python3 - "$TMP/gq.onnx" tests/cli <<'PY'
import sys
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[2])
from onnx_wire import field, value, model, ints, node, attr_int, attr_ints
nodes = [node("Reshape", ["x", "shape"], ["r"]),
         node("Transpose", ["r"], ["t"], attr_ints("perm", [2, 0, 1, 3])),
         node("Gather", ["t", "i0"], ["q"], attr_int("axis", 0)),
         node("Gather", ["t", "i1"], ["k"], attr_int("axis", 0)),
         node("Gather", ["t", "i2"], ["v"], attr_int("axis", 0)),
         node("Mul", ["q", "k"], ["y1"]),
         node("Transpose", ["v"], ["y2"], attr_ints("perm", [1, 0, 2]))]
graph = (b"".join(field(1, n) for n in nodes) + field(2, "g") +
         field(5, ints("shape", [5, 2, 3, 8], [4])) + field(5, ints("i0", [0], [])) +
         field(5, ints("i1", [1], [])) + field(5, ints("i2", [-1], [])) +
         field(11, value("x", [5, 2, 24])) + field(12, value("y1", [5, 2, 8])) +
         field(12, value("y2", [2, 5, 8])))
open(sys.argv[1], "wb").write(model(graph))
PY
check gather-slice-run 0 "$FUSEC" run "$TMP/gq.onnx" --backend cpu --check --seed 3 &&
	contains gather-slice-y1 "$TMP/out" "check y1: max_abs=0 max_err/bound=0 ok"
contains gather-slice-y2 "$TMP/out" "check y2: max_abs=0 max_err/bound=0 ok"
check gather-slice-explain 0 "$FUSEC" explain "$TMP/gq.onnx"
cp "$TMP/out" "$TMP/gq.explain"
check gather-slice-no-gather 1 grep -q "Gather\] \|kernel gather" "$TMP/gq.explain"
contains gather-slice-read-through "$TMP/gq.explain" "BaseFloat::Slice"
contains gather-slice-sunk "$TMP/gq.explain" "view: no kernel; read through by kernel elemwise"
# and the transpose in front of the three slices launches nothing either: the copy
# kernel of y2's transpose reads through it as the product's kernel does
check gather-slice-compile 0 "$FUSEC" compile "$TMP/gq.onnx" -o "$TMP/gqc" --no-cache &&
	contains gather-slice-launches "$TMP/err" "10 ops → 2 launches"

# Tile: a repeated unit dim is imported as one expand (grouped-query attention's
# repeat of k and v), the other repeated dims as cats of copies; both at once
# here, against numpy's tile of the same input, on both backends
python3 - "$TMP/tile.onnx" tests/cli <<'PY'
import sys
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[2])
from onnx_wire import field, value, model, ints, node
graph = (field(1, node("Tile", ["x", "rep"], ["y"])) + field(2, "g") +
         field(5, ints("rep", [2, 1, 3, 4], [4])) +
         field(11, value("x", [2, 1, 3, 1])) + field(12, value("y", [4, 1, 9, 4])))
open(sys.argv[1], "wb").write(model(graph))
PY
"$(npy_python)" -c '
import numpy as np, sys
np.save(sys.argv[1], np.arange(6, dtype=np.float32).reshape(2, 1, 3, 1) - 2.5)
' "$TMP/tile_x.npy"
for b in interp cpu; do
	check tile-run-$b 0 "$FUSEC" run "$TMP/tile.onnx" --backend $b --inputs x="$TMP/tile_x.npy" --outputs "$TMP/tile_$b"
	check tile-values-$b 0 "$(npy_python)" -c '
import numpy as np, sys
x, y = np.load(sys.argv[1]), np.load(sys.argv[2])
assert y.shape == (4, 1, 9, 4) and np.array_equal(y, np.tile(x, (2, 1, 3, 4))), y
' "$TMP/tile_x.npy" "$TMP/tile_$b/y.npy"
done
check tile-explain 0 "$FUSEC" explain "$TMP/tile.onnx"
contains tile-expand "$TMP/out" "BaseFloat::Expand"
contains tile-cat "$TMP/out" "BaseFloat::Cat"
