# t_siblings.sh: matmuls that share their first operand run in one launch (issue 22's
# horizontal fusion: passes/siblings.c brings them together, passes/fuser_matmul.c
# takes them, codegen/matmul_kernel.c runs each one's tiles). The graphs
# tests/bench/gpu/mm_siblings_{f32,bf16}.json (make_graphs.py): c0 three
# projections with biases and head splits in between, c1 a gate and an up
# projection whose product reads both (so each keeps its launch, the up's taking
# the product: the up is marked lone), c2 odd sizes with a raw output.
# Sourced by run.sh with lib.sh loaded; FUSEC and TMP set.
S=tests/bench/gpu/mm_siblings
check sib-compile 0 "$FUSEC" compile ${S}_bf16.json --no-cache -o "$TMP/sib"
contains sib-launches "$TMP/err" "compiled mm_siblings_bf16: 21 ops → 7 launches"
cat >"$TMP/sib_plan.py" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
ls = [l for s in p["steps"] for l in s["launches"]]
mm = [l for l in ls if l["kernel"].startswith("matmul_fused_")]
ops = sorted(len(l["ops"]) for l in mm)
assert ops == [2, 3, 4, 6], ops                   # c1 apart (3, 2); c2 2 matmuls + 2; c0 3 + 3
c0 = [l for l in mm if len(l["ops"]) == 6][0]
assert c0["writes"] == ["c0_aq", "c0_ak", "c0_av"], c0["writes"]
# c0: a [2, 77, 64] output of 64x64 tiles is 2 x 2 tiles, three times over
assert c0["grid"] == [12, 1, 1], c0["grid"]
c1 = [l for l in mm if l["ops"] == [15, 16]]
assert len(c1) == 1 and c1[0]["writes"] == ["c1_y"], ls   # the up and the product
ks = {k["name"]: k for k in p["kernels"]}
assert all(ks[l["kernel"]].get("tiles") == "tc64x64x32s3" for l in mm), [ks[l["kernel"]] for l in mm]
PY
check sib-plan 0 python3 "$TMP/sib_plan.py" "$TMP/sib/mm_siblings_bf16.plan.json"
# every output against the interpreter, by the rule and with configurations forced:
# the split and gemv ones run unsplit or plain in a kernel of siblings
for dt in f32 bf16; do
	check sib-cpu-$dt 0 "$FUSEC" run ${S}_$dt.json --backend cpu --check
	grep -c " ok$" "$TMP/out" >"$TMP/n"
	same sib-cpu-$dt-ok "$TMP/n" 7
done
for c in plain tc64x64x32s3sk4 wg128x128x64s4 gemv8x64k8; do
	check sib-cpu-$c 0 env FUSEC_MATMUL_TILES=$c "$FUSEC" run ${S}_bf16.json --backend cpu --check
	grep -c " ok$" "$TMP/out" >"$TMP/n"
	same sib-cpu-$c-ok "$TMP/n" 7
done
for c in fma128x128x16s3 fma64x64x16s3sk3; do
	check sib-cpu-$c 0 env FUSEC_MATMUL_TILES=$c "$FUSEC" run ${S}_f32.json --backend cpu --check
	grep -c " ok$" "$TMP/out" >"$TMP/n"
	same sib-cpu-$c-ok "$TMP/n" 7
done
# explain: the siblings in one kernel, and why c1's product stays apart
check sib-explain 0 "$FUSEC" explain ${S}_bf16.json
grep -A3 "^op 2 Float::Matmul" "$TMP/out" >"$TMP/ex2"
# 840: the epilogues' 640, and 200 for the two reads of x that the three
# matmuls share (100 a tensor access saved)
contains sib-explain-k "$TMP/ex2" "fused Matmul (score=840, 6 ops)"
contains sib-explain-line "$TMP/ex2" "siblings: one kernel runs the tiles of the matmuls ops[0], ops[2], ops[4], which read c0_x"
grep "^siblings:" "$TMP/out" >"$TMP/exs"
contains sib-explain-groups "$TMP/exs" "siblings: 2 groups of matmuls sharing their first operand (5 matmuls) brought together, each group for one launch"
contains sib-explain-lone-line "$TMP/exs" "siblings: 1 matmul left lone: an op reads two of a group"
grep -A2 "^op 15 Float::Matmul" "$TMP/out" >"$TMP/ex15"
contains sib-explain-lone "$TMP/ex15" "fused Matmul (score=100, 2 ops)"
check sib-relative 0 "$FUSEC" compile ${S}_bf16.json --no-cache --emit relative -o "$TMP/sibr"
contains sib-relative-lone "$TMP/sibr/mm_siblings_bf16.relative.txt" "ReadOnly, lone) ->"
# --burn-exact: as burn sees the graph, each matmul a launch of its own
check sib-burn 0 "$FUSEC" compile ${S}_bf16.json --burn-exact --no-cache -o "$TMP/sibb"
contains sib-burn-launches "$TMP/err" "compiled mm_siblings_bf16: 21 ops → 11 launches"
# tiny M (decode): passes/siblings.c leaves them where they are (c0, 9 rows: a launch
# each), but siblings the exporter wrote one after the other still share one (c1 on
# the tensor cores, c2 on gemv), split-K over every matmul's tiles included
python3 - ${S}_bf16.json "$TMP/sib_tiny.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
g["name"] = "sib_tiny"
g["inputs"]["c0_x"]["shape"] = [1, 9, 48]
g["inputs"]["c1_x"]["shape"] = [12, 40]
g["inputs"]["c2_x"]["shape"] = [3, 5, 20]
for o in g["ops"]:
    if o["op"] == "reshape":
        o["shape"] = [1, 9, 4, 16]
json.dump(g, open(sys.argv[2], "w"))
PY
check sib-tiny 0 "$FUSEC" compile "$TMP/sib_tiny.json" --no-cache -o "$TMP/sibt"
contains sib-tiny-launches "$TMP/err" "compiled sib_tiny: 21 ops → 9 launches"
contains sib-tiny-gemv "$TMP/sibt/sib_tiny.plan.json" '"tiles":"gemv8x64k8"'
for c in "" gemv8x64k8sk4 gemv8x64k8sk16; do
	check sib-tiny-cpu-$c 0 env FUSEC_MATMUL_TILES=$c "$FUSEC" run "$TMP/sib_tiny.json" --backend cpu --check
	grep -c " ok$" "$TMP/out" >"$TMP/n"
	same sib-tiny-cpu-$c-ok "$TMP/n" 7
done
check sib-compile-wg 0 env FUSEC_MATMUL_TILES=wg128x128x64s4 "$FUSEC" compile ${S}_bf16.json --no-cache -o "$TMP/sibw"
# the PTX goes through ptxas (when the CUDA toolkit is here)
PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
if [ -x "$PTXAS" ]; then
	check sib-ptxas 0 "$PTXAS" -arch=sm_90a "$TMP/sib/mm_siblings_bf16.ptx" -o /dev/null
	check sib-ptxas-wg 0 "$PTXAS" -arch=sm_90a "$TMP/sibw/mm_siblings_bf16.ptx" -o /dev/null
fi
# c0's three alike projections share one tile loop (two copies of 4 wgmma each);
# c1's and c2's, unlike, a loop each: 8 + 16 + 16
grep -c "wgmma.mma_async" "$TMP/sibw/mm_siblings_bf16.ptx" >"$TMP/n"
same sib-alike-one-loop "$TMP/n" 40
# an exported BERT (tests/onnx/dynamic/bert_micro.onnx, transformers): its query, key
# and value read one flattened operand (onnx/builders.c, ob_matmul) and share a launch
check sib-onnx 0 "$FUSEC" explain tests/onnx/dynamic/bert_micro.onnx --input-shape attention_mask=3x7 \
	--dims batch=1..8,seq=1..64
contains sib-onnx-line "$TMP/out" "siblings: one kernel runs the tiles of the matmuls ops[26], ops[28], ops[30]"
# under --precision bf16 the flattening reshape in front of the projections computes
# in bf16 (passes/precision.c, low_views): the cast runs in the norm's kernel, not
# between the reshape and the first projection, and all three stay siblings
check sib-onnx-bf16 0 "$FUSEC" explain tests/onnx/dynamic/bert_micro.onnx --input-shape attention_mask=3x7 \
	--precision bf16
contains sib-onnx-bf16-line "$TMP/out" "siblings: one kernel runs the tiles of the matmuls ops[28], ops[30], ops[32]"

# a packed projection cut by slices of its last dim (the fixtures' qkv Linear and
# Split, as GPT-2's c_attn and timm's blocks write it) becomes a matmul per slice
# over the weight's columns (passes/siblings.c, unsplit): siblings, one launch
# writing q, k and v apart, no slice copies; the same values, bit for bit, as the
# graph as written (--burn-exact leaves it)
G2=tests/onnx/models/gpt2/model.onnx
check unsplit-explain 0 "$FUSEC" explain $G2
contains unsplit-line "$TMP/out" "siblings: 2 packed projections read only through slices of the last dim cut into 6 matmuls over the weight's columns (no copies)"
check unsplit-compile 0 "$FUSEC" compile $G2 --precision bf16 --no-cache -o "$TMP/us"
# (18: the tok embedding's index expand launches nothing, t_views.sh)
contains unsplit-launches "$TMP/err" "→ 18 launches"
check unsplit-compile-burn 0 "$FUSEC" compile $G2 --precision bf16 --burn-exact --no-cache -o "$TMP/usb"
check unsplit-burn-slices 0 grep -q '"BaseFloat::Slice"' "$TMP/usb/model.plan.json"
check unsplit-plan 0 "$(npy_python)" -c '
import json, sys
p = json.load(open(sys.argv[1]))
k = {x["name"]: [n.split("::")[1] for n in x["op_names"]] for x in p["kernels"]}
got = [k[l["kernel"]] for s in p["steps"] for l in s["launches"]]
assert not any("Slice" in ops for ops in got), got
qkv = [i for i, ops in enumerate(got) if ops == ["Matmul", "Add"] * 3]
att = [i for i, ops in enumerate(got) if ops[0] == "Attention"]
assert len(qkv) == 2 and [i + 1 for i in qkv] == att, got
' "$TMP/us/model.plan.json"
check unsplit-ref 0 "$FUSEC" run $G2 --backend interp --seed 3 --outputs "$TMP/us.ref" --burn-exact
check unsplit-interp 0 "$FUSEC" run $G2 --backend interp --seed 3 --outputs "$TMP/us.int"
check unsplit-same 0 cmp "$TMP/us.ref/logits.npy" "$TMP/us.int/logits.npy"
check unsplit-cpu 0 "$FUSEC" run $G2 --backend cpu --seed 3 --check --precision bf16
contains unsplit-cpu-ok "$TMP/out" "check logits: "
check unsplit-cpu-fail 1 grep -q "FAIL" "$TMP/out"
# GPT-2's Conv1D as exported: a 2-D Gemm with its bias, the rows reshaped back to
# [B, S, 3E], then a Split: each part is a matmul, its bias add and a reshape
python3 - "$TMP/gemm_split.onnx" tests/cli <<'PY'
import sys
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[2])
from onnx_wire import field, value, model, ints, floats, node, attr_int
w = [((i * 7 + 3) % 11 - 5) / 8 for i in range(8 * 24)]
b = [((i * 5 + 1) % 7 - 3) / 4 for i in range(24)]
nodes = [node("Reshape", ["x", "s2"], ["x2"]),
         node("Gemm", ["x2", "w", "b"], ["y2"]),
         node("Reshape", ["y2", "s3"], ["y3"]),
         node("Split", ["y3"], ["q", "k", "v"], attr_int("axis", 2)),
         node("Mul", ["q", "k"], ["qk"]),
         node("Add", ["qk", "v"], ["y"])]
graph = (b"".join(field(1, n) for n in nodes) + field(2, "g") +
         field(5, ints("s2", [8, 8], [2])) + field(5, ints("s3", [2, 4, 24], [3])) +
         field(5, floats("w", w, [8, 24])) + field(5, floats("b", b, [24])) +
         field(11, value("x", [2, 4, 8])) + field(12, value("y", [2, 4, 8])))
open(sys.argv[1], "wb").write(model(graph))
PY
check unsplit-gemm-explain 0 "$FUSEC" explain "$TMP/gemm_split.onnx"
contains unsplit-gemm-line "$TMP/out" "siblings: 1 packed projection read only through slices of the last dim cut into 3 matmuls"
check unsplit-gemm-ref 0 "$FUSEC" run "$TMP/gemm_split.onnx" --backend interp --seed 5 --outputs "$TMP/gs.ref" --burn-exact
check unsplit-gemm-int 0 "$FUSEC" run "$TMP/gemm_split.onnx" --backend interp --seed 5 --outputs "$TMP/gs.int"
check unsplit-gemm-same 0 cmp "$TMP/gs.ref/y.npy" "$TMP/gs.int/y.npy"
check unsplit-gemm-cpu 0 "$FUSEC" run "$TMP/gemm_split.onnx" --backend cpu --seed 5 --check
contains unsplit-gemm-ok "$TMP/out" "check y: "
check unsplit-gemm-compile 0 "$FUSEC" compile "$TMP/gemm_split.onnx" --no-cache -o "$TMP/gsp"
check unsplit-gemm-noslice 1 grep -q '"BaseFloat::Slice"' "$TMP/gsp/gemm_split.plan.json"

# nn.MultiheadAttention's packed in-projection as torch.onnx.export writes it
# (torchvision's ViT): the rows transposed to [seq, batch, dim], one MatMul and Add,
# reshaped to [seq, batch, 3, dim], unsqueezed, transposed and squeezed to
# [3, seq, batch, dim], q, k and v gathered from dim 0, each reshaped to
# [seq, batch * heads, head], transposed and reshaped to [batch, heads, seq, head].
# No slice of the last dim is in sight, but each of q, k and v reads columns of it
# (passes/view_map.c): each becomes a matmul over its columns, read by the
# attention as one reshape and one permute, and no copy of q, k or v is made
python3 - "$TMP/mha.onnx" tests/cli <<'PY'
import sys
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[2])
from onnx_wire import field, value, model, ints, floats, node, attr_int, attr_ints
B, S, D, H = 2, 12, 8, 2
w = [((i * 7 + 3) % 11 - 5) / 8 for i in range(D * 3 * D)]
b = [((i * 5 + 1) % 7 - 3) / 4 for i in range(3 * D)]
nodes = [node("Transpose", ["x"], ["xt"], attr_ints("perm", [1, 0, 2])),
         node("MatMul", ["xt", "w"], ["p"]),
         node("Add", ["b", "p"], ["pb"]),
         node("Reshape", ["pb", "s4"], ["p4"]),
         node("Unsqueeze", ["p4", "ax0"], ["p5"]),
         node("Transpose", ["p5"], ["p5t"], attr_ints("perm", [3, 1, 2, 0, 4])),
         node("Squeeze", ["p5t", "ax3"], ["p3"])]
for n, i in (("q", 0), ("k", 1), ("v", 2)):
    nodes += [node("Gather", ["p3", "i%d" % i], [n + "g"], attr_int("axis", 0)),
              node("Reshape", [n + "g", "sh"], [n + "h"]),
              node("Transpose", [n + "h"], [n + "T"], attr_ints("perm", [1, 0, 2])),
              node("Reshape", [n + "T", "s4h"], [n])]
nodes += [node("Transpose", ["k"], ["kt"], attr_ints("perm", [0, 1, 3, 2])),
          node("MatMul", ["q", "kt"], ["s"]),
          node("Softmax", ["s"], ["a"], attr_int("axis", -1)),
          node("MatMul", ["a", "v"], ["o"]),
          # the heads merged in [seq, batch] order, the out-projection, and back
          node("Transpose", ["o"], ["om"], attr_ints("perm", [2, 0, 1, 3])),
          node("Reshape", ["om", "s2"], ["o2"]),
          node("MatMul", ["o2", "w2"], ["u"]),
          node("Add", ["u", "b2"], ["ub"]),
          node("Reshape", ["ub", "s3"], ["u3"]),
          node("Transpose", ["u3"], ["ut"], attr_ints("perm", [1, 0, 2])),
          node("Add", ["ut", "x"], ["y"])]
graph = (b"".join(field(1, n) for n in nodes) + field(2, "g") +
         field(5, floats("w", w, [D, 3 * D])) + field(5, floats("b", b, [3 * D])) +
         field(5, floats("w2", w[:D * D], [D, D])) + field(5, floats("b2", b[:D], [D])) +
         field(5, ints("s2", [S * B, D], [2])) + field(5, ints("s3", [S, B, D], [3])) +
         field(5, ints("s4", [S, B, 3, D], [4])) + field(5, ints("ax0", [0], [1])) +
         field(5, ints("ax3", [3], [1])) + field(5, ints("sh", [S, B * H, D // H], [3])) +
         field(5, ints("s4h", [B, H, S, D // H], [4])) +
         b"".join(field(5, ints("i%d" % i, [i], [])) for i in range(3)) +
         field(11, value("x", [B, S, D])) + field(12, value("y", [B, S, D])))
open(sys.argv[1], "wb").write(model(graph))
PY
check mha-explain 0 "$FUSEC" explain "$TMP/mha.onnx"
contains mha-line "$TMP/out" "siblings: 1 packed projection read only through slices of the last dim cut into 3 matmuls"
# the out-projection's rows transposed after it: it computes them in that order
# (passes/row_order.c), its operand one permute of the attention's result
contains mha-rows "$TMP/out" "rows: 1 matmul each computing its rows in the order the views after it wanted"
check mha-ref 0 "$FUSEC" run "$TMP/mha.onnx" --backend interp --seed 7 --outputs "$TMP/mha.ref" --burn-exact
check mha-int 0 "$FUSEC" run "$TMP/mha.onnx" --backend interp --seed 7 --outputs "$TMP/mha.int"
check mha-same 0 cmp "$TMP/mha.ref/y.npy" "$TMP/mha.int/y.npy"
check mha-cpu 0 "$FUSEC" run "$TMP/mha.onnx" --backend cpu --seed 7 --check --precision bf16
contains mha-cpu-ok "$TMP/out" "check y: "
check mha-cpu-fail 1 grep -q "FAIL" "$TMP/out"
check mha-compile 0 "$FUSEC" compile "$TMP/mha.onnx" --attention fuse --no-cache -o "$TMP/mha"
check mha-plan 0 "$(npy_python)" -c '
import json, sys
p = json.load(open(sys.argv[1]))
k = {x["name"]: [n.split("::")[1] for n in x["op_names"]] for x in p["kernels"]}
got = [k[l["kernel"]] for s in p["steps"] for l in s["launches"]]
# q, k and v in one launch from the rows in their own order, the attention
# reading them in place and writing its heads merged in [batch, seq] order, the
# out-projection with the residual add: no slice, no copy
assert got[0] == ["Matmul", "Add"] * 3, got
assert got[1] == ["Attention", "Permute"], got
assert got[2] == ["Matmul", "Add", "Add"] and len(got) == 3, got
' "$TMP/mha/mha.plan.json"

# rotate_half of q and k (Llama's rotary embeddings: two slices, a neg and a cat of
# the head dim) computed as a matmul by the projection's weight with its columns
# rotated within each head (passes/rotary.c): the same values, bit for bit here (an
# exact zero could change sign), and no slice, neg or cat left
L=tests/onnx/models/llama/model.onnx
check rot-explain 0 "$FUSEC" explain $L
contains rot-line "$TMP/out" "rotary: 4 rotate_halfs of a projection computed as a matmul by the weight's columns rotated (no slices, neg or cat)"
check rot-ref 0 "$FUSEC" run $L --backend interp --seed 3 --outputs "$TMP/rot.ref" --burn-exact
check rot-int 0 "$FUSEC" run $L --backend interp --seed 3 --outputs "$TMP/rot.int" --attention keep
check rot-same 0 cmp "$TMP/rot.ref/logits.npy" "$TMP/rot.int/logits.npy"
check rot-cpu 0 "$FUSEC" run $L --backend cpu --seed 3 --check --precision bf16
contains rot-cpu-ok "$TMP/out" "check logits: "
check rot-cpu-fail 1 grep -q "FAIL" "$TMP/out"
check rot-compile 0 "$FUSEC" compile $L --precision bf16 --no-cache -o "$TMP/rot"
# no cat is left: the fixture's other cats were its Tile of k and v (grouped-query
# attention's repeat of a unit dim), now an expand the attention reads in place
check rot-nocat 1 grep -q '"BaseFloat::Cat"' "$TMP/rot/model.plan.json"
check rot-noexpand 1 grep -q '"BaseFloat::Expand"' "$TMP/rot/model.plan.json"
# each rotated product runs in its projection's launch (a pair with no epilogue
# once scored 0, and q and its rotation ran as two un-fused launches)
check rot-one-launch 0 "$(npy_python)" -c '
import json, sys
p = json.load(open(sys.argv[1]))
rot = [l["writes"] for s in p["steps"] for l in s["launches"]
       if any(w.endswith(":rotated") for w in l["writes"])]
assert len(rot) == 4, rot
assert all(any(not w.endswith(":rotated") for w in ws) for ws in rot), rot
' "$TMP/rot/model.plan.json"
# q * cos + rotated q * sin read both products in one launch: k's in both blocks,
# q's at least in the first (the rotated product's reshape sits beside the
# projection's, so the search does not see it first in the middle of the multiply)
check rot-rope-launch 0 "$(npy_python)" -c '
import json, sys
p = json.load(open(sys.argv[1]))
kind = {k["name"]: k["kind"] for k in p["kernels"]}
both = [l["reads"] for s in p["steps"] for l in s["launches"]
        if kind[l["kernel"]] == "elemwise" and
        any(r + ":rotated" in l["reads"] for r in l["reads"])]
assert len(both) >= 3, both
' "$TMP/rot/model.plan.json"

# two row-reordered matmuls in a row: the second's operand is the first's result,
# which the first's move makes anew, so only the first moves; the same bytes as
# the graph as written (the second moving too read a tensor nothing wrote)
python3 - "$TMP/rowchain.yaml" <<'PY'
import sys
B, S, D = 2, 5, 4
w1 = [((i * 7 + 3) % 11 - 5) / 8 for i in range(D * D)]
w2 = [((i * 5 + 1) % 7 - 3) / 4 for i in range(D * D)]
open(sys.argv[1], "w").write(f"""format: fusec-graph/1
name: rowchain
inputs:
  t: {{dtype: f32, shape: [{B}, {S}, {D}]}}
constants:
  w1: {{dtype: f32, shape: [1, {D}, {D}], data: {w1}}}
  w2: {{dtype: f32, shape: [1, {D}, {D}], data: {w2}}}
ops:
  - {{op: permute, in: [t], out: a1, axes: [1, 0, 2]}}
  - {{op: matmul, in: [a1, w1], out: x1}}
  - {{op: permute, in: [x1], out: z1, axes: [1, 0, 2]}}
  - {{op: matmul, in: [z1, w2], out: x2}}
  - {{op: permute, in: [x2], out: z2, axes: [1, 0, 2]}}
  - {{op: relu, in: [z2], out: y}}
outputs: [y]
""")
PY
check rowchain-explain 0 "$FUSEC" explain "$TMP/rowchain.yaml"
contains rowchain-line "$TMP/out" "rows: 1 matmul each computing its rows"
check rowchain-ref 0 "$FUSEC" run "$TMP/rowchain.yaml" --backend interp --seed 2 --outputs "$TMP/rc.ref" --burn-exact
check rowchain-int 0 "$FUSEC" run "$TMP/rowchain.yaml" --backend interp --seed 2 --outputs "$TMP/rc.int"
check rowchain-same 0 cmp "$TMP/rc.ref/y.npy" "$TMP/rc.int/y.npy"
