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

# every conv of the check graphs but the depthwise ones runs on the tiles; each is one
# launch with its epilogue
check conv-compile 0 "$FUSEC" compile $CC"_bf16.json" -o "$TMP/cc"
check conv-compile-tiles 0 python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
ks = {k["name"]: k for k in p["kernels"]}
convs = [k for k in p["kernels"] if "Module::Conv2d" in k["op_names"]]
tiled = [k for k in convs if k.get("tiles") not in (None, "plain")]
assert len(convs) == 15 and len(tiled) == 8, convs
n = sum(len(s["launches"]) for s in p["steps"])
assert n == 15, n
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
# the default build of the cpu backend's kernels (LLVM's O3; the tests run
# FUSEC_CPU_QUICK=1, tests/cli/run.sh) gives the same bytes, split-K and the wgmma
# tile's scalar fragment included
check conv-det-o3 0 env FUSEC_CPU_QUICK=0 FUSEC_MATMUL_TILES=fma64x64x16s3sk4 "$FUSEC" run $CC"_f32.json" --backend cpu --seed 4 --outputs "$TMP/cd3"
for f in "$TMP"/cd1/*.npy; do
	same_files "conv-det-o3-$(basename "$f")" "$f" "$TMP/cd3/$(basename "$f")"
done
for q in 0 1; do
	check "conv-wg-o3-$q" 0 env FUSEC_CPU_QUICK=$q FUSEC_MATMUL_TILES=wg128x128x64s4 "$FUSEC" run $CC"_bf16.json" --backend cpu --seed 4 --outputs "$TMP/cw$q"
done
for f in "$TMP"/cw0/*.npy; do
	same_files "conv-wg-o3-same-$(basename "$f")" "$f" "$TMP/cw1/$(basename "$f")"
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

# ---- channels last (layout nhwc; passes/layout.c, matmul_conv.c setup_nhwc) ----
# the same convs and two pools written channels last, on the cpu backend against the
# interpreter: under the rule and under tile configurations of each kind (A's
# window gathered in whole chunks of channels where the group's channels allow,
# element by element where not: the stem's 3, the grouped dil's 16 in f32)
CN=tests/bench/gpu/conv_check_nhwc
for t in f32 bf16 f16; do
	check "nhwc-rule-$t" 0 "$FUSEC" run $CN"_$t.json" --backend cpu --check
done
check nhwc-rule-tf32 0 "$FUSEC" run $CN"_tf32.json" --backend cpu --check --allow-tf32
check nhwc-fma-sk3 0 env FUSEC_MATMUL_TILES=fma64x64x16s3sk3 "$FUSEC" run $CN"_f32.json" --backend cpu --check
check nhwc-tf32 0 env FUSEC_MATMUL_TILES=tf32x64x64x32s3 "$FUSEC" run $CN"_tf32.json" --backend cpu --check --allow-tf32
# tf32 wgmma (sm_90a): channels last only, both operands K-major; the host runs its
# tiling (panels, stages) with the scalar fragment, ptxas takes the kernels; on a
# matmul (B not stored transposed) the forced configuration does not apply
for c in wgtf32x128x128x32s4 wgtf32x128x256x32s4 wgtf32x128x64x32s4; do
	check "nhwc-$c" 0 env FUSEC_MATMUL_TILES=$c "$FUSEC" run $CN"_tf32.json" --backend cpu --check --allow-tf32
	check "nhwc-$c-compile" 0 env FUSEC_MATMUL_TILES=$c "$FUSEC" compile $CN"_tf32.json" --allow-tf32 --no-cache -o "$TMP/wt_$c"
	check "nhwc-$c-tiles" 0 python3 -c '
import json, sys
t = {k.get("tiles") for k in json.load(open(sys.argv[1]))["kernels"]}
assert sys.argv[2] in t, t
' "$TMP/wt_$c/conv_check_nhwc_tf32.plan.json" $c
	if [ -x "${PTXAS:-/usr/local/cuda/bin/ptxas}" ]; then
		check "nhwc-$c-ptxas" 0 "${PTXAS:-/usr/local/cuda/bin/ptxas}" -arch=sm_90a "$TMP/wt_$c/conv_check_nhwc_tf32.ptx" -o "$TMP/wt.cubin"
	fi
done
check wgtf32-not-matmul 0 env FUSEC_MATMUL_TILES=wgtf32x128x128x32s4 "$FUSEC" compile tests/bench/gpu/mm_check_tf32.json --allow-tf32 --no-cache -o "$TMP/wtm"
check wgtf32-not-matmul-tiles 0 python3 -c '
import json, sys
t = {k.get("tiles") for k in json.load(open(sys.argv[1]))["kernels"]}
assert not any(x and x.startswith("wg") for x in t), t
' "$TMP/wtm/mm_check_tf32.plan.json"
# the rule: ResNet-50's 7x7 1x1 to 2048 channels in tf32 channels last takes the
# 128x128 tf32 wgmma tile, its 56x56 expansion to 256 channels the 128x256 one,
# its 64-channel 3x3 the 64-wide one (a wave of 128x64 tiles, as bf16's)
sed 's/"bf16"/"f32"/g' "$TMP/rule.json" > "$TMP/rule32.json"
check conv-rule-tf32-compile 0 "$FUSEC" compile "$TMP/rule32.json" --allow-tf32 --layout nhwc -o "$TMP/rule32"
check conv-rule-tf32-tiles 0 python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
k = {k["name"]: k for k in p["kernels"]}
t = [k[l["kernel"]].get("tiles") for s in p["steps"] for l in s["launches"]]
t = [x for x in t if x]
assert t == ["wgtf32x128x128x32s4", "wgtf32x128x256x32s4", "wgtf32x128x64x32s4"], t
' "$TMP/rule32/rule.plan.json"
# 3xTF32, the f32 default on sm_90a, on convs channels last (both operands K-major):
# the x3 rule's tiles (128 columns for 2048 and 256 channels, 64 for 64); NCHW and
# --no-3xtf32 keep the SIMT tiles; the cpu backend runs each 3xTF32 tile on the
# channels-last check graph within the 3xTF32 bounds, and ptxas takes them
check conv-rule-x3-compile 0 "$FUSEC" compile "$TMP/rule32.json" --layout nhwc -o "$TMP/rx3"
check conv-rule-x3-off-compile 0 "$FUSEC" compile "$TMP/rule32.json" --layout nhwc --no-3xtf32 -o "$TMP/rx3o"
check conv-rule-nchw-compile 0 "$FUSEC" compile "$TMP/rule32.json" -o "$TMP/rx3n"
check conv-rule-x3-tiles 0 python3 -c '
import json, sys
def tiles(f):
    p = json.load(open(f))
    k = {k["name"]: k for k in p["kernels"]}
    return [x for x in (k[l["kernel"]].get("tiles") for s in p["steps"] for l in s["launches"]) if x]
t = tiles(sys.argv[1])
assert t == ["wgx3x128x128x32s3", "wgx3x128x128x32s3", "wgx3x128x64x32s4"], t
for f in sys.argv[2:]:
    t = tiles(f)
    assert len(t) == 3 and not any(x.startswith("wg") for x in t), (f, t)
' "$TMP/rx3/rule.plan.json" "$TMP/rx3o/rule.plan.json" "$TMP/rx3n/rule.plan.json"
for c in wgx3x128x128x32s3 wgx3x128x96x32s4 wgx3x128x64x32s4; do
	check "nhwc-$c" 0 env FUSEC_MATMUL_TILES=$c "$FUSEC" run $CN"_f32.json" --backend cpu --check
	check "nhwc-$c-compile" 0 env FUSEC_MATMUL_TILES=$c "$FUSEC" compile $CN"_f32.json" --no-cache -o "$TMP/wx_$c"
	contains "nhwc-$c-tiles" "$TMP/wx_$c/conv_check_nhwc_f32.plan.json" "\"tiles\":\"$c\""
	if [ -x "${PTXAS:-/usr/local/cuda/bin/ptxas}" ]; then
		check "nhwc-$c-ptxas" 0 "${PTXAS:-/usr/local/cuda/bin/ptxas}" -arch=sm_90a "$TMP/wx_$c/conv_check_nhwc_f32.ptx" -o "$TMP/wx.cubin"
	fi
done
for c in tc128x128x64s3 tc64x64x32s3sk2 wg128x256x64s4 tc128x32x32s3 wg128x64x64s4; do
	check "nhwc-$c" 0 env FUSEC_MATMUL_TILES=$c "$FUSEC" run $CN"_bf16.json" --backend cpu --check
done
# the depthwise kernel channels last (codegen/matmul_depthwise.c): 4, 2 or 1 output
# columns a thread forced on every depthwise conv (widths that are no multiple
# of them too), 16 bytes of channels or fewer, in each dtype (on the host the
# weights are read from global memory, the GPU's copy in shared memory aside)
for c in dwc4 dwc2 dwc1; do
	check "nhwc-$c-bf16" 0 env FUSEC_MATMUL_TILES=$c "$FUSEC" run $CN"_bf16.json" --backend cpu --check
	check "nhwc-$c-f32" 0 env FUSEC_MATMUL_TILES=$c "$FUSEC" run $CN"_f32.json" --backend cpu --check
done
# every conv but the depthwise ones on the tiles, the depthwise ones on their own
# kernel (the rule: one output column a thread, two for a 5x5), one launch each
# with its epilogue
check nhwc-compile 0 "$FUSEC" compile $CN"_bf16.json" -o "$TMP/cn"
check nhwc-compile-tiles 0 python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
convs = [k for k in p["kernels"] if "Module::Conv2d" in k["op_names"]]
tiled = [k for k in convs if k.get("tiles") not in (None, "plain") and not k["tiles"].startswith("dw")]
dw = [k["tiles"] for k in convs if k.get("tiles", "").startswith("dw")]
assert len(convs) == 15 and len(tiled) == 8, convs
assert dw == ["dwc1", "dwc2", "dwc1", "dwc1", "dwc1", "dwc2", "dwc1"], dw
n = sum(len(s["launches"]) for s in p["steps"])
assert n == 17, n
' "$TMP/cn/conv_check_nhwc_bf16.plan.json"
# the narrow tile by the rule for a wave of 128-row tiles of a 16-channel 1x1 conv
# channels last; the 64x64 tile below a wave
cat > "$TMP/thin.json" <<'EOF2'
{"format": "fusec-graph/1", "name": "thin",
 "inputs": {"x": {"dtype": "bf16", "shape": [2, 96, 96, 16]}, "w": {"dtype": "bf16", "shape": [16, 1, 1, 16]}},
 "ops": [{"op": "conv2d", "in": ["x", "w"], "out": "c", "layout": "nhwc"},
         {"op": "relu", "in": ["c"], "out": "y"}],
 "outputs": ["y"]}
EOF2
sed 's/\[2, 96, 96, 16\]/[1, 32, 32, 16]/' "$TMP/thin.json" > "$TMP/thin_small.json"
check narrow-wave 0 "$FUSEC" compile "$TMP/thin.json" --no-cache -o "$TMP/thin1"
check narrow-under-wave 0 "$FUSEC" compile "$TMP/thin_small.json" --no-cache -o "$TMP/thin0"
check narrow-tiles 0 python3 -c '
import json, sys
t = [[k.get("tiles") for k in json.load(open(f))["kernels"]] for f in sys.argv[1:]]
assert t == [["tc64x64x32s3"], ["tc128x32x32s3"]], t
' "$TMP/thin0/thin.plan.json" "$TMP/thin1/thin.plan.json"
# a conv channels last that reads its input in place (1x1, stride 1, one group) is a
# matmul of every pixel by the output channels: the ws tiles by TMA (matmul_ws.c; the
# host runs their tiles as the plain wgmma loop), every width forced; a gathered one
# of one group whose channels come in whole 16-byte chunks (s2: 3x3 stride 2, 24
# channels; down: 1x1 stride 2) takes them too, its copying warpgroup gathering the
# windows by cp.async, the weight by TMA; the others keep the rule's tiles
for c in wg128x64x64s6ws wg128x96x64s6ws wg128x128x64s4ws wg128x192x64s4ws wg128x256x64s4ws; do
	check "nhwc-$c" 0 env FUSEC_MATMUL_TILES=$c "$FUSEC" run $CN"_bf16.json" --backend cpu --check
done
check nhwc-ws-f16 0 env FUSEC_MATMUL_TILES=wg128x64x64s6ws "$FUSEC" run $CN"_f16.json" --backend cpu --check
check nhwc-ws-compile 0 env FUSEC_MATMUL_TILES=wg128x64x64s6ws "$FUSEC" compile $CN"_bf16.json" --no-cache -o "$TMP/nws"
check nhwc-ws-plan 0 python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
ks = {k["name"]: k for k in p["kernels"]}
ws = [(ks[l["kernel"]], l) for s in p["steps"] for l in s["launches"]
      if ks[l["kernel"]].get("tiles") == "wg128x64x64s6ws"]
assert [l["writes"] for k, l in ws] == [["p1x1_y"], ["p1x1v_y"], ["s2_y"], ["down_c"]], ws
for k, l in ws:
    assert l["block"] == [384, 1, 1] and 1 <= l["grid"][0] <= 132, l
    a, b = [x["tmap"] for x in l["args"] if "tmap" in x]
    # x [2,10,10,32] as [200][32]; w [48,1,1,32] as [48][32]; the box 64 x 128 rows
    # of pixels, 64 x 64 rows of channels
    if l["writes"] == ["p1x1_y"]:
        assert a == {"tensor": "p1x1_x", "dims": [32, 200], "strides": [64], "box": [64, 128]}, a
        assert b == {"tensor": "p1x1_w", "dims": [32, 48], "strides": [64], "box": [64, 64]}, b
    # the weight of s2, [32,3,3,24], as [32][216]: K = 3 * 3 * 24
    if l["writes"] == ["s2_y"]:
        assert b == {"tensor": "s2_w", "dims": [216, 32], "strides": [432], "box": [64, 64]}, b
' "$TMP/nws/conv_check_nhwc_bf16.plan.json"
# the in-place kernels copy both operands by TMA; the gathered ones the weight, their
# 128 copiers each arriving once its copies landed, the multipliers fencing the
# copies (generic proxy) before wgmma reads them (async proxy)
check nhwc-ws-ptx 0 python3 -c '
import re, sys
ptx = open(sys.argv[1]).read()
ks = re.split(r"\.visible \.entry ", ptx)[1:]
ws = [k for k in ks if "setmaxnreg" in k]
tma = [k for k in ws if "noinc" not in k]
gat = [k for k in ws if "noinc" in k]
assert len(tma) == 2 and len(gat) == 2, (len(tma), len(gat))
for k in tma:
    assert k.count("cp.async.bulk.tensor.2d") >= 2 and "setmaxnreg.dec.sync.aligned.u32 40;" in k
for k in gat:
    assert k.count("cp.async.bulk.tensor.2d") == 1, k.count("cp.async.bulk.tensor.2d")
    assert "cp.async.cg.shared.global" in k and "fence.proxy.async.shared::cta;" in k
    assert "setmaxnreg.dec.sync.aligned.u32 72;" in k and "setmaxnreg.inc.sync.aligned.u32 216;" in k
# the split stays within the pool of the block: 384 threads of 168 registers (65536 / 384
# rounded down to 8); setmaxnreg.inc would wait forever for more
for k in ws:
    dec = int(re.search(r"setmaxnreg\.dec\.sync\.aligned\.u32 (\d+);", k).group(1))
    inc = int(re.search(r"setmaxnreg\.inc\.sync\.aligned\.u32 (\d+);", k).group(1))
    assert 128 * (2 * inc + dec) <= 384 * 168, (inc, dec)
' "$TMP/nws/conv_check_nhwc_bf16.ptx"
# ResNet-50's first stage at batch 32 (100352 pixels): the rule takes the plain
# wgmma loop 64 columns wide for the 1x1s read in place of K 64 (c1: 64 output
# channels, c2: 256) and the 128-wide one for the gathered stride-2 1x1 (c3);
# forced, the 64-wide ws tile takes all three, one block an SM, and the runtime
# encodes the maps it is given
cat > "$TMP/rn.json" <<'EOF2'
{"format": "fusec-graph/1", "name": "rn",
 "inputs": {"x": {"dtype": "bf16", "shape": [32, 56, 56, 64]},
            "w64": {"dtype": "bf16", "shape": [64, 1, 1, 64]},
            "w256": {"dtype": "bf16", "shape": [256, 1, 1, 64]},
            "r": {"dtype": "bf16", "shape": [32, 56, 56, 256]},
            "w2": {"dtype": "bf16", "shape": [128, 1, 1, 64]}},
 "ops": [{"op": "conv2d", "in": ["x", "w64"], "out": "c1", "layout": "nhwc"},
         {"op": "relu", "in": ["c1"], "out": "y1"},
         {"op": "conv2d", "in": ["x", "w256"], "out": "c2", "layout": "nhwc"},
         {"op": "add", "in": ["c2", "r"], "out": "s2"},
         {"op": "relu", "in": ["s2"], "out": "y2"},
         {"op": "conv2d", "in": ["x", "w2"], "out": "c3", "stride": 2, "layout": "nhwc"},
         {"op": "relu", "in": ["c3"], "out": "y3"}],
 "outputs": ["y1", "y2", "y3"]}
EOF2
check nhwc-ws-rule 0 "$FUSEC" compile "$TMP/rn.json" --no-cache -o "$TMP/rn0"
check nhwc-ws-forced 0 env FUSEC_MATMUL_TILES=wg128x64x64s6ws "$FUSEC" compile "$TMP/rn.json" --no-cache -o "$TMP/rn"
check nhwc-ws-rule-tiles 0 python3 -c '
import json, sys
t = [[k.get("tiles") for k in json.load(open(f))["kernels"]] for f in sys.argv[1:]]
assert t[0] == ["wg128x64x64s4", "wg128x64x64s4", "wg128x128x64s4"], t
assert t[1] == ["wg128x64x64s6ws"] * 3, t
' "$TMP/rn0/rn.plan.json" "$TMP/rn/rn.plan.json"
# the rule past K 128 and under a wave (ResNet-50 at batch 32, docs/benchmarks.md,
# session 56): a 1x1 read in place of K 256 to 64 channels at 56x56 on the ws tile
# 64 wide, of K 1024 to 256 at 14x14 on the ws 128 one (ws_shortest), the 512-channel
# 3x3 at 7x7 (52 tiles of 128 columns: under half a wave) and a 3x3 of 64 channels
# on the plain loop 64 wide; on sm_90 (no wgmma) the mma.sync tiles
cat > "$TMP/rr.json" <<'EOF2'
{"format": "fusec-graph/1", "name": "rr",
 "inputs": {"a": {"dtype": "bf16", "shape": [32, 56, 56, 256]}, "wa": {"dtype": "bf16", "shape": [64, 1, 1, 256]},
            "b": {"dtype": "bf16", "shape": [32, 14, 14, 1024]}, "wb": {"dtype": "bf16", "shape": [256, 1, 1, 1024]},
            "c": {"dtype": "bf16", "shape": [32, 7, 7, 512]}, "wc": {"dtype": "bf16", "shape": [512, 3, 3, 512]},
            "d": {"dtype": "bf16", "shape": [32, 56, 56, 64]}, "wd": {"dtype": "bf16", "shape": [64, 3, 3, 64]}},
 "ops": [{"op": "conv2d", "in": ["a", "wa"], "out": "ya", "layout": "nhwc"}, {"op": "sync"},
         {"op": "conv2d", "in": ["b", "wb"], "out": "yb", "layout": "nhwc"}, {"op": "sync"},
         {"op": "conv2d", "in": ["c", "wc"], "out": "yc", "padding": 1, "layout": "nhwc"}, {"op": "sync"},
         {"op": "conv2d", "in": ["d", "wd"], "out": "yd", "padding": 1, "layout": "nhwc"}],
 "outputs": ["ya", "yb", "yc", "yd"]}
EOF2
check nhwc-rule-rr 0 "$FUSEC" compile "$TMP/rr.json" --no-cache -o "$TMP/rr"
check nhwc-rule-rr90 0 "$FUSEC" compile "$TMP/rr.json" --no-cache --arch sm_90 -o "$TMP/rr90"
check nhwc-rule-rr-tiles 0 python3 -c '
import json, sys
def tiles(f):
    p = json.load(open(f))
    k = {k["name"]: k for k in p["kernels"]}
    return [k[l["kernel"]].get("tiles") for s in p["steps"] for l in s["launches"]]
t = tiles(sys.argv[1])
assert t == ["wg128x64x64s6ws", "wg128x128x64s4ws", "wg128x64x64s4", "wg128x64x64s4"], t
t = tiles(sys.argv[2])
assert t == ["tc64x64x32s3", "tc64x64x32s3", "tc64x64x32s3sk2", "tc64x64x32s3"], t
' "$TMP/rr/rr.plan.json" "$TMP/rr90/rr.plan.json"
rm -f "$TMP/ws.trace"
check nhwc-ws-encode 3 env FUSEC_LIBCUDA="$(dirname "$FUSEC")/tests/fakecuda.so" FUSEC_NO_GRAPH=1 \
	FAKECUDA_TRACE="$TMP/ws.trace" "$(dirname "$FUSEC")/fusec-run" "$TMP/rn"
contains nhwc-ws-encode-maps "$TMP/ws.trace" "grid 132,1,1 block 384,1,1"
contains nhwc-ws-encode-maps2 "$TMP/ws.trace" "tmap(buf0+0;64/64x100352/128),tmap(buf1+0;64/64x64/64)"
# a plan for every size keeps the plain loop: the maps' row count, N*H*W, is no
# one named dim
sed -e 's/"inputs"/"dims": {"n": "1..32"}, "inputs"/' -e 's/\[32, 56, 56/["n", 56, 56/g' "$TMP/rn.json" > "$TMP/rnd.json"
check nhwc-ws-dyn 0 env FUSEC_MATMUL_TILES=wg128x64x64s6ws "$FUSEC" compile "$TMP/rnd.json" --no-cache -o "$TMP/rnd"
check nhwc-ws-dyn-tiles 0 python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
t = [k.get("tiles") for v in [p] + p.get("variants", []) for k in v["kernels"]]
assert t and not [x for x in t if x and x.endswith("ws")], t
' "$TMP/rnd/rn.plan.json"
# a conv launch rule whose block is neither 256 nor 384 threads is refused at load
cp -r "$TMP/rnd" "$TMP/rndbad"
sed 's/"rule": *"conv", *"block": *256/"rule": "conv", "block": 512/g' "$TMP/rnd/rn.plan.json" > "$TMP/rndbad/rn.plan.json"
check nhwc-conv-block-changed 0 grep -q '"rule": "conv", "block": 512' "$TMP/rndbad/rn.plan.json"
check nhwc-conv-block-bad 1 env FUSEC_LIBCUDA="$(dirname "$FUSEC")/tests/fakecuda.so" \
	"$(dirname "$FUSEC")/fusec-run" "$TMP/rndbad" --input-shape x=2x56x56x64
contains nhwc-conv-block-bad-msg "$TMP/err" "launch.arg: the values do not fit the conv rule"
if [ -x "$PTXAS" ]; then
	check nhwc-ws-ptxas 0 "$PTXAS" -arch=sm_90a "$TMP/nws/conv_check_nhwc_bf16.ptx" -o "$TMP/cp.cubin"
	check nhwc-ws-rule-ptxas 0 "$PTXAS" -arch=sm_90a "$TMP/rn/rn.ptx" -o "$TMP/cp.cubin"
fi
if [ -x "$PTXAS" ]; then
	for c in wg128x128x64s4 tc64x64x32s3 tc128x32x32s3 wg128x64x64s4; do
		check "nhwc-ptx-$c" 0 env FUSEC_MATMUL_TILES=$c "$FUSEC" compile $CN"_bf16.json" --no-cache -o "$TMP/np_$c"
		check "nhwc-ptxas-$c" 0 "$PTXAS" -arch=sm_90a "$TMP/np_$c/conv_check_nhwc_bf16.ptx" -o "$TMP/cp.cubin"
	done
	check nhwc-ptx-sm80 0 "$FUSEC" compile $CN"_f16.json" --arch sm_80 --no-cache -o "$TMP/np80"
	check nhwc-ptxas-sm80 0 "$PTXAS" -arch=sm_80 "$TMP/np80/conv_check_nhwc_f16.ptx" -o "$TMP/cp.cubin"
fi

# --layout nhwc keeps what the graph computes: the interpreter (f64) on the
# rewritten graph gives the original graph's outputs (to the summation order), and
# the cpu backend's tiles pass the check
check layout-interp-nchw 0 "$FUSEC" run $CC"_f32.json" --backend interp --seed 3 --outputs "$TMP/li0"
check layout-interp-nhwc 0 "$FUSEC" run $CC"_f32.json" --backend interp --seed 3 --layout nhwc --outputs "$TMP/li1"
cat > "$TMP/same.py" <<'EOF2'
import array, ast, os, sys
def load(p):  # a little-endian f32 .npy file: its shape and values
    b = open(p, "rb").read()
    n = int.from_bytes(b[8:10], "little") if b[6] == 1 else int.from_bytes(b[8:12], "little")
    o = 10 if b[6] == 1 else 12
    h = ast.literal_eval(b[o:o + n].decode())
    assert h["descr"] == "<f4" and not h["fortran_order"], h
    return h["shape"], array.array("f", b[o + n:])
a, b = sys.argv[1], sys.argv[2]
names = sorted(n for n in os.listdir(a) if not n.endswith(".bound.npy"))
assert len(names) == int(sys.argv[3]), names
for n in names:
    (sx, x), (sy, y) = load(os.path.join(a, n)), load(os.path.join(b, n))
    assert sx == sy and len(x) == len(y), (n, sx, sy)
    top = max(1.0, max(abs(v) for v in x))
    worst = max(abs(u - v) for u, v in zip(x, y))
    assert worst <= 1e-6 * top, (n, worst)
EOF2
check layout-interp-same 0 python3 "$TMP/same.py" "$TMP/li0" "$TMP/li1" 15
check layout-check-f32 0 "$FUSEC" run $CC"_f32.json" --backend cpu --check --layout nhwc
check layout-check-bf16 0 env FUSEC_MATMUL_TILES=wg128x128x64s4 "$FUSEC" run $CC"_bf16.json" --backend cpu --check --layout nhwc
# what it did, in explain's first line; a CNN with constant weights pays one permute
# (its input), the convs keep their epilogues, the 1x1 weights need no permute
check layout-explain 0 "$FUSEC" explain $CC"_f32.json" --layout nhwc
grep -q '^layout: nhwc (--layout nhwc): 15 convs and pools channels last; ' "$TMP/out" && pass=$((pass + 1)) ||
	{ echo "FAIL layout-explain-line"; head -1 "$TMP/out"; fail=$((fail + 1)); }
python3 - "$TMP/cnn.json" <<'EOF2'
import json, sys
def const(shape, k):  # a constant of small deterministic values
    n = 1
    for d in shape:
        n *= d
    return {"dtype": "f32", "shape": shape, "data": [((i * k) % 17 - 8) / 64 for i in range(n)]}
json.dump({"format": "fusec-graph/1", "name": "cnn",
 "inputs": {"x": {"dtype": "f32", "shape": [2, 8, 10, 10]}},
 "constants": {"w1": const([32, 8, 3, 3], 5), "s1": const([1, 32, 1, 1], 3),
               "w2": const([32, 32, 1, 1], 7)},
 "ops": [{"op": "conv2d", "in": ["x", "w1"], "out": "c1", "padding": 1},
         {"op": "mul", "in": ["c1", "s1"], "out": "m1"},
         {"op": "relu", "in": ["m1"], "out": "r1"},
         {"op": "max_pool2d", "in": ["r1"], "out": "p1", "kernel": 2},
         {"op": "conv2d", "in": ["p1", "w2"], "out": "c2"},
         {"op": "add", "in": ["c2", "p1"], "out": "y"},
         {"op": "mean", "in": ["y"], "out": "g", "axis": 3}],
 "outputs": ["y", "g"]}, open(sys.argv[1], "w"))
EOF2
check layout-cnn-run 0 "$FUSEC" run "$TMP/cnn.json" --backend cpu --check --layout nhwc
check layout-cnn-interp0 0 "$FUSEC" run "$TMP/cnn.json" --backend interp --seed 2 --outputs "$TMP/lc0"
check layout-cnn-interp1 0 "$FUSEC" run "$TMP/cnn.json" --backend interp --seed 2 --layout nhwc --outputs "$TMP/lc1"
check layout-cnn-same 0 python3 "$TMP/same.py" "$TMP/lc0" "$TMP/lc1" 2
check layout-cnn-compile 0 "$FUSEC" compile "$TMP/cnn.json" --layout nhwc -o "$TMP/cnn"
check layout-cnn-plan 0 python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
k = {k["name"]: k for k in p["kernels"]}
t = [k[l["kernel"]]["op_names"] for s in p["steps"] for l in s["launches"]]
# the input permuted once; each conv with its epilogue; the outputs written back
# (y permuted, the mean reduces the stored axis and its result is read back)
assert t[0] == ["BaseFloat::Permute"], t
assert ["Module::Conv2d", "NumericFloat::Mul", "Activation::Relu"] in t, t
assert ["Module::Conv2d", "NumericFloat::Add"] in t, t
assert sum(n == ["BaseFloat::Permute"] for n in t) <= 3, t
' "$TMP/cnn/cnn.plan.json"
check layout-bad 2 "$FUSEC" compile $CC"_f32.json" --layout nchwc -o "$TMP/lb"
check layout-import 2 "$FUSEC" import $CC"_f32.json" --layout nhwc -o "$TMP/li.json"
