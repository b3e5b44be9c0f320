# t_conv.sh: convolutions as implicit GEMMs on the matmul tiles (codegen/matmul_conv.c).
# The cpu backend runs the tiles' algorithm (the same stages, gather, fragments
# replaced by their scalar definition, epilogue), checked against the interpreter
# on the conv check graphs (tests/bench/gpu/conv_check_*.json: odd channels,
# strides, padding, dilation, groups, a non-square window, 1x1 convs read in place
# and gathered, the 7x7 stem; bias, folded batch norm + relu, residual) under the
# rule and under every tile configuration forced.
CC=tests/bench/gpu/conv_check

for t in f32 bf16 f16; do
	check "conv-rule-$t" 0 "$FUSEC" run $CC"_$t.json" --backend cpu --check
done
check conv-rule-tf32 0 "$FUSEC" run $CC"_tf32.json" --backend cpu --check --allow-tf32
for c in fma128x128x16s3 fma64x64x16s3 fma64x64x16s3sk3 fma64x64x16s3sk4 fma128x128x16s3sk4; do
	check "conv-$c" 0 env FUSEC_MATMUL_TILES=$c "$FUSEC" run $CC"_f32.json" --backend cpu --check
done
for c in tf32x128x128x16s3 tf32x64x64x32s3; do
	check "conv-$c" 0 env FUSEC_MATMUL_TILES=$c "$FUSEC" run $CC"_tf32.json" --backend cpu --check --allow-tf32
done
for c in tc128x128x64s3 tc64x64x32s3 tc128x256x32s4 tc64x64x32s3sk2 tc64x64x32s3sk4 wg128x128x64s4 wg128x256x64s4; do
	check "conv-$c" 0 env FUSEC_MATMUL_TILES=$c "$FUSEC" run $CC"_bf16.json" --backend cpu --check
done
check conv-f16-wg 0 env FUSEC_MATMUL_TILES=wg128x128x64s4 "$FUSEC" run $CC"_f16.json" --backend cpu --check

# every conv of the check graphs but the two depthwise runs on the tiles; each is one
# launch with its epilogue
check conv-compile 0 "$FUSEC" compile $CC"_bf16.json" -o "$TMP/cc"
check conv-compile-tiles 0 python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
ks = {k["name"]: k for k in p["kernels"]}
convs = [k for k in p["kernels"] if "Module::Conv2d" in k["op_names"]]
tiled = [k for k in convs if k.get("tiles") not in (None, "plain")]
assert len(convs) == 10 and len(tiled) == 8, convs
n = sum(len(s["launches"]) for s in p["steps"])
assert n == 10, n
' "$TMP/cc/conv_check_bf16.plan.json"
# ptxas takes every configuration's conv kernels (when the CUDA toolkit is here)
PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
if [ -x "$PTXAS" ]; then
	for c in tc128x128x64s3 wg128x256x64s4 fma64x64x16s3sk3; do
		t=bf16; case $c in fma*) t=f32 ;; esac
		check "conv-ptx-$c" 0 env FUSEC_MATMUL_TILES=$c "$FUSEC" compile $CC"_$t.json" --no-cache -o "$TMP/cp_$c"
		check "conv-ptxas-$c" 0 "$PTXAS" -arch=sm_90a "$TMP/cp_$c/conv_check_$t.ptx" -o "$TMP/cp.cubin"
	done
	check conv-ptx-sm80 0 "$FUSEC" compile $CC"_bf16.json" --arch sm_80 --no-cache -o "$TMP/cp80"
	check conv-ptxas-sm80 0 "$PTXAS" -arch=sm_80 "$TMP/cp80/conv_check_bf16.ptx" -o "$TMP/cp.cubin"
fi

# outputs byte for byte the same from run to run (split-K sums in split order)
for i in 1 2; do
	check "conv-det-$i" 0 env FUSEC_MATMUL_TILES=fma64x64x16s3sk4 "$FUSEC" run $CC"_f32.json" --backend cpu --seed 4 --outputs "$TMP/cd$i"
done
for f in "$TMP"/cd1/*.npy; do
	same_files "conv-det-same-$(basename "$f")" "$f" "$TMP/cd2/$(basename "$f")"
done

# depthwise (one channel per group) and few channels per group keep the
# one-thread-per-output kernel; under --burn-exact no conv starts a kernel
cat > "$TMP/dw.json" <<'EOF'
{"format": "fusec-graph/1", "name": "dw",
 "inputs": {"x": {"dtype": "f32", "shape": [2, 32, 12, 12]}, "w": {"dtype": "f32", "shape": [32, 1, 3, 3]},
            "w2": {"dtype": "f32", "shape": [64, 32, 3, 3]}},
 "ops": [{"op": "conv2d", "in": ["x", "w"], "out": "d", "padding": 1, "groups": 32},
         {"op": "relu", "in": ["d"], "out": "r"},
         {"op": "conv2d", "in": ["r", "w2"], "out": "y"}],
 "outputs": ["y"]}
EOF
check conv-dw-run 0 "$FUSEC" run "$TMP/dw.json" --backend cpu --check
check conv-dw-compile 0 "$FUSEC" compile "$TMP/dw.json" -o "$TMP/dw"
check conv-dw-kernels 0 python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
k = {k["name"]: k for k in p["kernels"]}
t = [(k[l["kernel"]]["op_names"], k[l["kernel"]].get("tiles")) for s in p["steps"] for l in s["launches"]]
# the depthwise conv takes the relu as its epilogue in a kernel of one thread per
# output; the 3x3 conv after it runs on the tiles
assert t[0] == (["Module::Conv2d", "Activation::Relu"], None), t
assert t[-1][0] == ["Module::Conv2d"] and t[-1][1] not in (None, "plain"), t
' "$TMP/dw/dw.plan.json"
check conv-burn-compile 0 "$FUSEC" compile $CC"_f32.json" --burn-exact -o "$TMP/ccb"
check conv-burn-alone 0 python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
convs = [k for k in p["kernels"] if "Module::Conv2d" in k["op_names"]]
assert convs and all(k["op_names"] == ["Module::Conv2d"] and k["fuser"] == "none" for k in convs), convs
' "$TMP/ccb/conv_check_f32.plan.json"

# the conv tile rule (matmul_pick.c): a 128-wide tile only where it wastes at most a
# quarter; ResNet-50's 7x7 planes and 64-channel layers take the 64x64 tiles, its
# 56x56 expansion to 256 channels the 128x256 wgmma tile
cat > "$TMP/rule.json" <<'EOF2'
{"format": "fusec-graph/1", "name": "rule",
 "inputs": {"a": {"dtype": "bf16", "shape": [32, 512, 7, 7]}, "wa": {"dtype": "bf16", "shape": [2048, 512, 1, 1]},
            "b": {"dtype": "bf16", "shape": [32, 64, 56, 56]}, "wb": {"dtype": "bf16", "shape": [256, 64, 1, 1]},
            "wc": {"dtype": "bf16", "shape": [64, 64, 3, 3]}},
 "ops": [{"op": "conv2d", "in": ["a", "wa"], "out": "ya"}, {"op": "sync"},
         {"op": "conv2d", "in": ["b", "wb"], "out": "yb"}, {"op": "sync"},
         {"op": "conv2d", "in": ["b", "wc"], "out": "yc", "padding": 1}],
 "outputs": ["ya", "yb", "yc"]}
EOF2
check conv-rule-compile 0 "$FUSEC" compile "$TMP/rule.json" -o "$TMP/rule"
check conv-rule-tiles 0 python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
k = {k["name"]: k for k in p["kernels"]}
t = [k[l["kernel"]].get("tiles") for s in p["steps"] for l in s["launches"]]
assert t == ["tc64x64x32s3", "wg128x256x64s4", "tc64x64x32s3"], t
' "$TMP/rule/rule.plan.json"
