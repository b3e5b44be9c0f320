# t_nhwc.sh: burn's NHWCRelayout fuser (docs/burn-fidelity.md row 11), which
# competes only under --burn-exact (slower on the H200 by default: docs/benchmarks.md,
# "NHWCRelayout"). An elementwise trace that ends at a pool whose input is at its
# last use runs as two launches: the trace writes the pool's input channel-last (tensors[].layout
# "nhwc", its shape in memory order), the pool reads it with threads fastest over C.
# tests/bench/gpu/nhwc_check_{f32,bf16}.json (tests/bench/gpu/make_nhwc.py: odd
# C/H/W, padding, strides, avg and max, a trace with a second output, a pool input
# still read after the pool, a pool input the trace does not make, size-1 growth)
# run on the cpu backend against the interpreter; the plan says which tensors are
# channel-last; explain and the dot picture agree; ptxas takes the kernels; plans are
# byte-identical across -j and the kernel cache. Without the flag nothing is
# channel-last and no log names the fuser.
G=tests/bench/gpu/nhwc_check_f32.json
B=--burn-exact
check nhwc_default 0 "$FUSEC" compile $G -o "$TMP/dflt" --log full
if grep -q NHWCRelayout "$TMP/err" || grep -q '"layout"' "$TMP/dflt/nhwc_check_f32.plan.json"; then
	echo "FAIL nhwc_default_off: NHWCRelayout competes without --burn-exact"; fail=$((fail + 1))
else
	pass=$((pass + 1))
fi
check nhwc_compile 0 "$FUSEC" compile $G $B -o "$TMP/a" -j 1 --no-cache
cat >"$TMP/nhwc_plan.py" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
t = {x["name"]: x for x in p["tensors"]}
lay = sorted((x["name"], x["shape"]) for x in p["tensors"] if x.get("layout") == "nhwc")
# a, b, d, e: the trace's result pooled at its last use, in memory order N, H, W, C;
# c: still read after the pool (not taken); f: not the trace's result (NCHW)
assert lay == [("a_r", [2, 9, 7, 5]), ("b_r", [1, 10, 9, 7]), ("d_m", [2, 11, 13, 3]),
               ("e_r", [3, 7, 5, 33])], lay
for n in ("c_r", "f_z", "b_nb", "a_y"):
    assert "layout" not in t[n], n
assert t["b_nb"]["buffer"] is True          # the trace's second output, NCHW
ks = [l["kernel"] for s in p["steps"] for l in s["launches"]]
nh = [k for k in ks if "_nhwc_" in k]
assert [k.split("_nhwc_")[0] for k in nh] == ["elemwise", "max_pool2d", "elemwise", "avg_pool2d",
                                              "elemwise", "avg_pool2d", "elemwise", "max_pool2d"], nh
assert any(k.startswith("max_pool2d_") and "_nhwc_" not in k for k in ks)   # c's pool, alone
assert any(k.startswith("avg_pool2d_") and "_nhwc_" not in k for k in ks)   # f's pool, NCHW
fus = {k["name"]: k["fuser"] for k in p["kernels"]}
assert all(fus[k] == "NHWCRelayout" for k in nh), fus
PY
check nhwc_plan 0 python3 "$TMP/nhwc_plan.py" "$TMP/a/nhwc_check_f32.plan.json"
for dt in f32 bf16; do
	check nhwc_cpu_check_$dt 0 "$FUSEC" run tests/bench/gpu/nhwc_check_$dt.json --backend cpu --check $B
	n=$(grep -c "^check .* ok$" "$TMP/out")
	if [ "$n" -ne 9 ]; then
		echo "FAIL nhwc_cpu_values_$dt: $n of 9 outputs checked ok"; fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
	check nhwc_cpu_check_default_$dt 0 "$FUSEC" run tests/bench/gpu/nhwc_check_$dt.json --backend cpu \
		--check
done
# the resnet example (two pools, conv in between) and the golden, on the cpu backend
check nhwc_cpu_resnet 0 "$FUSEC" run docs/examples/resnet_block.yaml --backend cpu --check $B
contains nhwc_cpu_resnet_ok "$TMP/out" "check logits:"
check nhwc_cpu_golden 0 "$FUSEC" run tests/golden/nhwc.yaml --backend cpu --check $B
check nhwc_log_burn 0 "$FUSEC" compile $G -o "$TMP/l2" --log full $B
contains nhwc_log_taken "$TMP/err" "(NHWCRelayout, pool-taken); had 4 ops"
contains nhwc_log_readonly "$TMP/err" "[fuser] closed on Module::MaxPool2d [ops[12] → c_y] (NHWCRelayout, not-elementwise); had 2 ops"
# explain names the channel-last tensor and the other kernel of the pair, by the
# names the plan and the PTX give them (the kernels of units fusec_k0_1, fusec_k0_0)
kname() { grep -o "\"kernel\":\"[a-z_0-9]*\",\"unit\":\"$1\"" "$TMP/l2/nhwc_check_f32.plan.json" | head -1 | cut -d'"' -f4; }
check nhwc_explain 0 "$FUSEC" explain $G $B --op a_r
contains nhwc_explain_writes "$TMP/out" "layout: writes a_r channel-last (NHWC), for the pool's kernel $(kname fusec_k0_1)"
check nhwc_explain_pool 0 "$FUSEC" explain $G $B --op a_y
contains nhwc_explain_reads "$TMP/out" "layout: reads a_r channel-last (NHWC), written so by kernel $(kname fusec_k0_0)"
check nhwc_explain_json 0 "$FUSEC" explain $G $B --op a_y --json
cp "$TMP/out" "$TMP/explain.json"
check nhwc_explain_json_key 0 python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))["ops"][0]
assert o["channel_last"] == {"tensor": "a_r", "written_by": sys.argv[2]}, o' "$TMP/explain.json" "$(kname fusec_k0_0)"
check nhwc_explain_c 0 "$FUSEC" explain $G $B --op c_y
if grep -q "^  layout:" "$TMP/out"; then
	echo "FAIL nhwc_explain_c: a pool input read after the pool is not channel-last"; fail=$((fail + 1))
else
	pass=$((pass + 1))
fi
check nhwc_dot 0 "$FUSEC" compile $G $B --emit dot -o "$TMP/d"
contains nhwc_dot_label "$TMP/d/nhwc_check_f32.dot" "NHWCRelayout · score 520 · 1 op · reads a_r NHWC"
# the runtime accepts the plan; ptxas takes every kernel
check nhwc_runtime_plan 0 "$(dirname "$FUSEC")/fusec-run" "$TMP/a" --plan-only
PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
if [ -x "$PTXAS" ]; then
	check nhwc_ptxas 0 "$PTXAS" -arch=sm_90a "$TMP/a/nhwc_check_f32.ptx" -o "$TMP/f32.cubin"
	check nhwc_compile_bf16 0 "$FUSEC" compile tests/bench/gpu/nhwc_check_bf16.json $B -o "$TMP/h"
	check nhwc_ptxas_bf16 0 "$PTXAS" -arch=sm_90a "$TMP/h/nhwc_check_bf16.ptx" -o "$TMP/bf16.cubin"
fi
# deterministic: -j 1 without the kernel cache, -j 2 filling it, -j 2 from it
export XDG_CACHE_HOME="$TMP/cache"
check nhwc_compile_j2 0 "$FUSEC" compile $G $B -o "$TMP/b" -j 2
check nhwc_compile_j2_cached 0 "$FUSEC" compile $G $B -o "$TMP/c" -j 2 --no-result-cache
for f in nhwc_check_f32.plan.json nhwc_check_f32.ptx; do
	same_files nhwc_same_j2_$f "$TMP/a/$f" "$TMP/b/$f"
	same_files nhwc_same_cached_$f "$TMP/a/$f" "$TMP/c/$f"
done
# a stem of 3 channels (fewer than a 16-byte run: gathered element by element),
# bf16 and f32 under --allow-tf32, a grouped conv and a weight given as an input.
# --check holds the kernels to the rewritten graph; the rewrite itself is held to
# the graph as written: the NCHW interpreter's outputs (the same seed)
python3 - "$TMP" <<'PY'
import json, random, sys
random.seed(7)
def graph(name, dt, c, groups, const):
    oc = 8 if groups == 1 else 6
    w = {"dtype": dt, "shape": [oc, c // groups, 3, 3]}
    if const:
        w["data"] = [round(random.uniform(-1, 1), 3) for _ in range(oc * (c // groups) * 9)]
    g = {"format": "fusec-graph/1", "name": name,
         "inputs": {"image": {"dtype": dt, "shape": [2, c, 13, 11]}},
         "ops": [{"op": "conv2d", "in": ["image", "w"], "stride": [2, 2], "padding": [1, 1],
                  "groups": groups, "out": "c"},
                 {"op": "relu", "in": ["c"], "out": "y"}],
         "outputs": ["y"]}
    if const:
        g["constants"] = {"w": w}
    else:
        g["inputs"]["w"] = w
    json.dump(g, open(f"{sys.argv[1]}/{name}.json", "w"))
def se(name, n):
    # a squeeze-and-excitation block: two 1x1 convs on the pooled 1x1 plane
    r = lambda *d: [round(random.uniform(-1, 1), 3) for _ in range(__import__("math").prod(d))]
    k = lambda *d: {"dtype": "bf16", "shape": list(d), "data": r(*d)}
    g = {"format": "fusec-graph/1", "name": name,
         "inputs": {"x": {"dtype": "bf16", "shape": [n, 16, 9, 7]}},
         "constants": {"w0": k(16, 16, 3, 3), "w1": k(8, 16, 1, 1), "b1": k(8),
                       "w2": k(16, 8, 1, 1), "b2": k(16)},
         "ops": [{"op": "conv2d", "in": ["x", "w0"], "padding": [1, 1], "out": "c"},
                 {"op": "avg_pool2d", "in": ["c"], "kernel": [9, 7], "out": "p"},
                 {"op": "conv2d", "in": ["p", "w1", "b1"], "out": "f1"},
                 {"op": "relu", "in": ["f1"], "out": "r1"},
                 {"op": "conv2d", "in": ["r1", "w2", "b2"], "out": "f2"},
                 {"op": "sigmoid", "in": ["f2"], "out": "s"},
                 {"op": "mul", "in": ["c", "s"], "out": "y"}],
         "outputs": ["y", "f1"]}
    json.dump(g, open(f"{sys.argv[1]}/{name}.json", "w"))
se("se_b1", 1)
se("se_b3", 3)
graph("stem_bf16", "bf16", 3, 1, True)
graph("stem_f32", "f32", 3, 1, True)
graph("stem_grouped", "bf16", 3, 3, True)
graph("stem_input_w", "bf16", 3, 1, False)
PY
same_as_nchw() {   # NAME GRAPH TOLERANCE [OPTIONS...]
	n=$1 g=$2 tol=$3; shift 3
	check "${n}_ref" 0 "$FUSEC" run "$g" --backend interp --seed 3 --outputs "$TMP/$n.ref" "$@" --layout nchw &&
	check "${n}_got" 0 "$FUSEC" run "$g" --backend cpu --seed 3 --outputs "$TMP/$n.got" "$@" &&
	same_npy "${n}_same" "$TMP/$n.ref" "$TMP/$n.got" "$tol"
}
check nhwc_stem_explain 0 "$FUSEC" explain "$TMP/stem_bf16.json"
contains nhwc_stem_auto "$TMP/out" "layout: nhwc (every conv on tensor cores"
check nhwc_stem_cpu 0 "$FUSEC" run "$TMP/stem_bf16.json" --backend cpu --check
contains nhwc_stem_cpu_ok "$TMP/out" "check y: "
same_as_nchw nhwc_stem_vs_nchw "$TMP/stem_bf16.json" 1e-2
same_as_nchw nhwc_stem_tf32_vs_nchw "$TMP/stem_f32.json" 2e-3 --allow-tf32
# f32 convs with constant weights go channels last by default (for 3xTF32 on
# sm_90a: ResNet-50 at batch 32 13.0 -> 6.4 ms on the H100, docs/benchmarks.md,
# session 64), not under --no-3xtf32 nor for sm_80 alone; the same in the library
check nhwc_stem_f32_explain 0 "$FUSEC" explain "$TMP/stem_f32.json"
contains nhwc_stem_f32_auto "$TMP/out" "layout: nhwc (every conv on tensor cores"
check nhwc_stem_f32_off 0 "$FUSEC" explain "$TMP/stem_f32.json" --no-3xtf32
check nhwc_stem_f32_off_none 1 grep -q "^layout:" "$TMP/out"
check nhwc_stem_f32_sm80 0 "$FUSEC" explain "$TMP/stem_f32.json" --arch sm_80
check nhwc_stem_f32_sm80_none 1 grep -q "^layout:" "$TMP/out"
# the library decides alike (fusec_explain through the Python package, where a
# python3 with numpy is there and the build is not instrumented)
B=${BUILD:-$(dirname "$FUSEC")}
case "$B" in *san*) ;; *)
	if python3 -c 'import numpy' >/dev/null 2>&1; then
		for x3 in None False; do
			check "nhwc_stem_f32_lib_$x3" 0 env PYTHONPATH=lib/python FUSEC_LIBDIR="$B" python3 -c '
import sys, fusec
t = fusec.explain(sys.argv[1], allow_3xtf32=eval(sys.argv[2]))
on = "layout: nhwc (every conv on tensor cores" in t
sys.exit(0 if on == (sys.argv[2] == "None") else 1)' "$TMP/stem_f32.json" $x3
		done
	fi ;;
esac
same_as_nchw nhwc_stem_f32_vs_nchw "$TMP/stem_f32.json" 1e-5
same_as_nchw nhwc_grouped_vs_nchw "$TMP/stem_grouped.json" 1e-2 --layout nhwc
same_as_nchw nhwc_input_w_vs_nchw "$TMP/stem_input_w.json" 1e-2 --layout nhwc
same_as_nchw nhwc_check_vs_nchw tests/bench/gpu/nhwc_check_bf16.json 2e-2 --layout nhwc
# a squeeze-and-excitation block (its 1x1 convs on the pooled plane, one image and
# three) and a small MobileNetV3 in bf16, channels last against the NCHW interpreter
for g in se_b1 se_b3; do
	check nhwc_${g}_cpu 0 "$FUSEC" run "$TMP/$g.json" --backend cpu --check
	same_as_nchw nhwc_${g}_vs_nchw "$TMP/$g.json" 2e-2
done
same_as_nchw nhwc_mobilenet_vs_nchw tests/onnx/models/mobilenetv3_small/model.onnx 3e-2 --precision bf16
