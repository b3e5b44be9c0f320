# t_matmul.sh: matmuls under a wave of output tiles take split-K configurations
# (codegen/matmul_epilogue.c): blocks split K, write partial tiles to the launch's
# scratch, and the last block of a tile sums them in split order, then runs the
# epilogue. The cpu backend runs that algorithm (the scratch shared by the plan's
# launches, as on the GPU), checked here against the interpreter.

# the split configurations of the table (FUSEC_MATMUL_TILES names), and the one the
# rule gives the MLP down projection of the base models below
SPLIT_F32="fma64x64x16s3sk3 fma64x64x16s3sk4 fma128x128x16s3sk4"
SPLIT_BF16="tc64x64x32s3sk2 tc64x64x32s3sk4"
SPLIT_RULE_MLP=fma64x64x16s3sk4

# the check graphs of the GPU (K 777, 1024, 520, 40, 600; broadcast batches, a
# transposed operand, bias + gelu and bias + residual; five launches sharing the
# scratch) under the rule and under every split configuration forced
for t in f32 bf16; do
	g=tests/bench/gpu/mm_check_split_$t.json
	check "split-rule-$t" 0 "$FUSEC" run "$g" --backend cpu --check
done
for c in $SPLIT_F32; do
	check "split-$c" 0 env FUSEC_MATMUL_TILES=$c "$FUSEC" run tests/bench/gpu/mm_check_split_f32.json --backend cpu --check
done
for c in $SPLIT_BF16; do
	check "split-$c" 0 env FUSEC_MATMUL_TILES=$c "$FUSEC" run tests/bench/gpu/mm_check_split_bf16.json --backend cpu --check
done

# every SIMT configuration (f32: unswizzled tiles, rows along K padded, mm_swz) over
# odd and whole-chunk shapes, broadcast batches, A or B or both transposed and a
# permute in front (the gemv cases take their own configuration)
for c in fma128x128x16s3 fma64x64x16s3 $SPLIT_F32; do
	for g in mm_check_f32 mm_check_views_f32; do
		check "simt-$c-$g" 0 env FUSEC_MATMUL_TILES=$c "$FUSEC" run tests/bench/gpu/$g.json --backend cpu --check
	done
done

# the rule's choice at the base models' shapes (M = 128, width 768: 24 tiles of 64)
cat > "$TMP/mlp.json" <<'EOF'
{"format": "fusec-graph/1", "name": "mlp",
 "inputs": {"x": {"dtype": "f32", "shape": [1, 128, 3072]}, "w": {"dtype": "f32", "shape": [1, 3072, 768]},
            "b": {"dtype": "f32", "shape": [1, 1, 768]}, "r": {"dtype": "f32", "shape": [1, 128, 768]}},
 "ops": [{"op": "matmul", "in": ["x", "w"], "out": "mm"}, {"op": "add", "in": ["mm", "b"], "out": "h"},
         {"op": "add", "in": ["h", "r"], "out": "y"}],
 "outputs": ["y"]}
EOF
check split-compile 0 "$FUSEC" compile "$TMP/mlp.json" -o "$TMP/mlp"
contains split-compile-tiles "$TMP/mlp/mlp.plan.json" "\"tiles\":\"$SPLIT_RULE_MLP\""
contains split-compile-scratch "$TMP/mlp/mlp.plan.json" '{"scratch":'
check split-compile-again 0 "$FUSEC" compile "$TMP/mlp.json" -o "$TMP/mlp2" --no-cache
same_files split-compile-ptx "$TMP/mlp/mlp.ptx" "$TMP/mlp2/mlp.ptx"
same_files split-compile-plan "$TMP/mlp/mlp.plan.json" "$TMP/mlp2/mlp.plan.json"
# the rule at the measured shapes (tests/bench/gpu/mm_sweep.py; docs/benchmarks.md,
# "Matmul under a wave"): NAME, then the configuration the rule must give it
python3 tests/bench/gpu/mm_sweep.py make "$TMP/sw"
while read -r n cfg; do
	check "rule-$n" 0 "$FUSEC" compile "$TMP/sw/$n.json" -o "$TMP/swp/$n"
	contains "rule-$n-tiles" "$TMP/swp/$n/$n.plan.json" "\"tiles\":\"$cfg\""
done <<'EOF'
mm_128x768x768 fma64x64x16s3sk4
mm_128x2304x768_bias fma64x64x16s3sk3
mm_128x3072x768_bias_gelu fma64x64x16s3sk3
mm_128x768x3072_bias_res fma64x64x16s3sk4
mm_512x1024x1024_bias fma128x128x16s3sk4
mm_512x4096x1024_bias_gelu fma128x128x16s3
mm_512x1024x4096_bias_res fma128x128x16s3sk4
mm_128x768x768_bf16 wg128x64x64s6ws
mm_128x3072x768_bias_gelu_bf16 wg128x64x64s6ws
mm_128x768x3072_bias_res_bf16 wg128x64x64s6ws
mm_512x1024x4096_bias_res_bf16 tc64x64x32s3sk2
EOF
# the f32 rule by the fill of the last wave of 128x128 tiles (mm_sweep.py --waves;
# docs/benchmarks.md, "f32 SIMT tiles"): full waves keep them, a partial last wave
# splits long K 4 ways and takes 64x64 tiles for short K, and from 0.7 of a wave a
# short K keeps 128x128 tiles
python3 tests/bench/gpu/mm_sweep.py make "$TMP/wv" --waves
while read -r n cfg; do
	check "rule-$n" 0 "$FUSEC" compile "$TMP/wv/$n.json" -o "$TMP/wvp/$n"
	contains "rule-$n-tiles" "$TMP/wvp/$n/$n.plan.json" "\"tiles\":\"$cfg\""
done <<'EOF'
w_4096x3072x768_bias fma128x128x16s3
w_3152x1024x1024_bias fma128x128x16s3
w_3152x768x3072_bias fma128x128x16s3sk4
w_3152x1024x4096_bias fma128x128x16s3sk4
w_2048x2304x768_bias fma64x64x16s3
w_3152x768x768_bias fma64x64x16s3
w_2048x768x768_bias fma128x128x16s3
w_1024x768x768_bias fma64x64x16s3
EOF
# outputs byte for byte the same from run to run
check split-run-1 0 "$FUSEC" run tests/bench/gpu/mm_check_split_f32.json --backend cpu --seed 3 --outputs "$TMP/o1"
check split-run-2 0 "$FUSEC" run tests/bench/gpu/mm_check_split_f32.json --backend cpu --seed 3 --outputs "$TMP/o2"
for f in "$TMP"/o1/*.npy; do
	same_files "split-run-same-$(basename "$f")" "$f" "$TMP/o2/$(basename "$f")"
done

# the scratch is shared by the plan's launches: the second split reduction's
# counters lie where the first one's partials were, so each kernel leaves its
# partials zero (this failed on the GPU before, and here once the host shared it)
cat > "$TMP/two_splits.json" <<'EOF'
{"format": "fusec-graph/1", "name": "two_splits",
 "inputs": {"a": {"dtype": "f32", "shape": [2, 1048576]}, "b": {"dtype": "f32", "shape": [64, 262144]}},
 "ops": [{"op": "sum", "in": ["a"], "out": "ya", "axis": 1}, {"op": "sync"},
         {"op": "sum", "in": ["b"], "out": "yb", "axis": 1}],
 "outputs": ["ya", "yb"]}
EOF
check shared-scratch-reductions 0 "$FUSEC" run "$TMP/two_splits.json" --backend cpu --check

# tiny f32 matmuls (K <= 64, at most 65,536 outputs) run plain, one thread per
# output: as fast as a tile on the H200 and up to 3.5x faster than gemv at short K,
# a tenth of the compile (docs/benchmarks.md, "Tiny matmuls"). The rule at the
# measured shapes (mm_sweep.py --small): NAME, then the configuration or "plain"
python3 tests/bench/gpu/mm_sweep.py make "$TMP/tiny" --small
while read -r n cfg; do
	check "tiny-$n" 0 "$FUSEC" compile "$TMP/tiny/$n.json" -o "$TMP/tinyp/$n"
	if [ "$cfg" = plain ]; then
		grep -q '"tiles"' "$TMP/tinyp/$n/$n.plan.json" &&
			{ echo "FAIL tiny-$n-plain: a tile configuration was chosen"; fail=$((fail + 1)); } ||
			pass=$((pass + 1))
	else
		contains "tiny-$n-tiles" "$TMP/tinyp/$n/$n.plan.json" "\"tiles\":\"$cfg\""
	fi
done <<'EOF2'
t_96x96x1 plain
t_256x256x1 plain
t_64x64x8 plain
t_128x256x64_bias_gelu plain
t_256x256x64 plain
t_128x128x128 fma64x64x16s3
t_64x64x1024 fma64x64x16s3sk4
t_512x512x16 fma64x64x16s3
b3_t_128x128x64 plain
b12_t_128x128x64 fma64x64x16s3
t_1x96x64 plain
t_16x4096x64 plain
t_16x3072x64_bias_gelu plain
t_1x768x768 gemv8x64k8sk4
t_128x128x64_bf16 tc64x64x32s3
EOF2
# every plan of the sweep through ptxas (when the CUDA toolkit is here)
PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
if [ -x "$PTXAS" ]; then
	for p in "$TMP"/tinyp/*/*.ptx; do
		check "tiny-ptxas-$(basename "$p" .ptx)" 0 "$PTXAS" -arch=sm_90a "$p" -o "$TMP/tiny.cubin"
	done
fi
# the plain kernel with its epilogue, and a batched one, on the cpu backend
check tiny-run-gelu 0 "$FUSEC" run "$TMP/tiny/t_16x3072x64_bias_gelu.json" --backend cpu --check
check tiny-run-batched 0 "$FUSEC" run "$TMP/tiny/b12_t_8x96x8.json" --backend cpu --check

# tiny M (gemv_rule, codegen/matmul_pick.c): K split 16 or 4 ways or not by the
# blocks it makes, 128-wide tiles from 9 rows, f16/bf16 from 9 rows on the tensor
# cores (and on gemv where the arch has no mma.sync); past 64 rows under half a
# wave of 128x128 tiles, K and N from 512, the 64-wide ws tile on sm_90a:
# DTYPE M N K [ARCH] CONFIG
while read -r dt m n k arch cfg; do
	[ -n "$cfg" ] || { cfg=$arch; arch=sm_90a; }
	n_=gemv_${dt}_${m}x${n}x${k}_$arch
	cat >"$TMP/$n_.json" <<EOF3
{"format": "fusec-graph/1", "name": "$n_",
 "inputs": {"a": {"dtype": "$dt", "shape": [$m, $k]}, "b": {"dtype": "$dt", "shape": [$k, $n]}},
 "ops": [{"op": "matmul", "in": ["a", "b"], "out": "y"}], "outputs": ["y"]}
EOF3
	check "rule-$n_" 0 "$FUSEC" compile "$TMP/$n_.json" --arch "$arch" -o "$TMP/gemvp/$n_"
	contains "rule-$n_-tiles" "$TMP/gemvp/$n_/$n_.plan.json" "\"tiles\":\"$cfg\""
done <<'EOF2'
f32 1 768 3072 gemv8x64k8sk16
f32 1 768 768 gemv8x64k8sk4
f32 4 11008 4096 gemv8x64k8
f32 16 768 768 gemv8x128k8sk4
bf16 8 768 768 gemv8x64k8sk4
bf16 16 768 768 tc64x64x32s3sk4
bf16 16 4096 4096 tc64x64x32s3sk4
bf16 12 11008 4096 wg128x128x64s4ws
bf16 16 768 768 sm_75 gemv8x128k8sk4
bf16 128 2304 768 wg128x64x64s6ws
bf16 128 768 3072 wg128x64x64s6ws
bf16 128 3072 768 wg128x64x64s6ws
bf16 256 768 768 wg128x64x64s6ws
bf16 197 3072 768 wg128x64x64s6ws
bf16 197 2304 768 wg128x64x64s6ws
bf16 128 2304 768 sm_90 tc64x64x32s3
bf16 128 256 768 tc64x64x32s3sk4
bf16 64 2304 768 tc64x64x32s3
EOF2
# past 64 rows under half a wave: the 64-wide ws tile on the cpu backend
check rule-ws64-run 0 "$FUSEC" run "$TMP/gemv_bf16_128x768x3072_sm_90a.json" --backend cpu --seed 1 --check &&
	check rule-ws64-ok 1 grep -q "FAIL\|unbounded\|not checked" "$TMP/out"
# split K on the ws tile (matmul_ws.c; forced only, measured slower at batch 1's
# sizes): the launch is at most a block an SM with
# the scratch (a counter a tile, then a partial of 128x64 f32 a unit) before the
# two tensor maps; ptxas takes the kernel
check ws-split-compile 0 env FUSEC_MATMUL_TILES=wg128x64x64s6wssk3 "$FUSEC" compile tests/bench/gpu/mm_check_bf16.json --no-cache -o "$TMP/wssk"
check ws-split-plan 0 python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
ks = {k["name"]: k for k in p["kernels"]}
n = 0
for l in [l for s in p["steps"] for l in s["launches"]]:
    k = ks[l["kernel"]]
    if k.get("tiles") != "wg128x64x64s6wssk3":
        continue
    n += 1
    assert k["params"][-3:] == ["ptr", "tmap", "tmap"], k["params"]
    assert l["block"] == [384, 1, 1] and 1 <= l["grid"][0] <= 132, l
    # scratch = counters of the tiles (16-byte rounded) + 3 partials a tile
    got = l["args"][-3]["scratch"]
    tiles = got // (3 * 128 * 64 * 4)
    assert tiles >= 1 and got == (4 * tiles + 15) // 16 * 16 + tiles * 3 * 128 * 64 * 4, got
    assert [a["tmap"]["tensor"] for a in l["args"][-2:]] == l["reads"][:2], l
assert n == 2, n
' "$TMP/wssk/mm_check_bf16.plan.json"
if [ -x "$PTXAS" ]; then
	check ws-split-ptxas 0 "$PTXAS" -arch=sm_90a "$TMP/wssk/mm_check_bf16.ptx" -o "$TMP/wssk.cubin"
fi
for c in wg128x64x64s6wssk3:mm_siblings_bf16 wg128x64x64s6wssk8:mm_check_views_f16; do
	check "ws-split-${c%%:*}-${c#*:}" 0 env FUSEC_MATMUL_TILES=${c%%:*} "$FUSEC" run tests/bench/gpu/${c#*:}.json --backend cpu --check
done

# wgmma twins: G6 in bf16 at 2048 tokens has tiled wgmma kernels that are twins
# (the same code, other specs: emit_par.c copies the earlier one's PTX). The wgmma
# inline asm once held a line '}' of its own, which find_function took for the end
# of the function: the copy was cut there and ptxas rejected the module. (The
# plain wgmma loop forced: the rule's warp-specialized kernels differ by their
# tensor maps, so they are no twins.)
sed 's/"f32"/"bf16"/g; s/\[512, 1024\]/[2048, 1024]/g; s/\[512, 16, 64\]/[2048, 16, 64]/g' \
	tests/bench/gpu/g6_transformer_12.json > "$TMP/g6_bf16.json"
check wg-twins-compile 0 env FUSEC_MATMUL_TILES=wg128x128x64s4 "$FUSEC" compile "$TMP/g6_bf16.json" -o "$TMP/wgt" --no-cache --time &&
	contains wg-twins-seen "$TMP/err" "compiled once for another"
contains wg-twins-wgmma "$TMP/wgt/transformer_12.plan.json" '"tiles":"wg128x128x64s4"'
check wg-twins-none 0 env FUSEC_MATMUL_TILES=wg128x128x64s4 FUSEC_NO_TWINS=1 "$FUSEC" compile "$TMP/g6_bf16.json" -o "$TMP/wgn" --no-cache
same_files wg-twins-same-ptx "$TMP/wgn/transformer_12.ptx" "$TMP/wgt/transformer_12.ptx"
if [ -x "$PTXAS" ]; then
	check wg-twins-ptxas 0 "$PTXAS" -arch=sm_90a "$TMP/wgt/transformer_12.ptx" -o "$TMP/wgt.cubin"
fi

# warp-specialized wgmma (codegen/matmul_ws.c): the host runs their tiles as the
# plain wgmma loop, checked against the interpreter (odd edges, transposed operands,
# batches, alike siblings); the GPU plan has 384 threads a block (the third
# warpgroup copies, by TMA) and at most a block per SM, its kernels take a tensor
# map per operand (the first, then each sibling's second) that the launch
# describes over the operand's buffer, and its module holds the mbarrier ring; a
# kernel of siblings that are not alike, or an operand whose rows are not a
# multiple of 16 bytes (the odd shapes), keeps the rule's loop
for cg in wg128x256x64s4ws:mm_check_bf16 wg128x256x64s4ws:mm_siblings_bf16 wg128x128x64s4ws:mm_check_views_f16 wg128x128x64s4pp:mm_siblings_bf16; do
	check "ws-$cg" 0 env FUSEC_MATMUL_TILES=${cg%%:*} "$FUSEC" run tests/bench/gpu/${cg#*:}.json --backend cpu --check
done
for c in wg128x128x64s4ws wg128x256x64s4ws wg128x128x64s4pp; do
	check "ws-$c-compile" 0 env FUSEC_MATMUL_TILES=$c "$FUSEC" compile tests/bench/gpu/mm_check_bf16.json --no-cache -o "$TMP/ws-$c"
	python3 - "$TMP/ws-$c/mm_check_bf16.plan.json" "$c" > "$TMP/ws.out" 2>&1 <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
ks = {k["name"]: k for k in p["kernels"]}
ts = {t["name"]: t for t in p["tensors"]}
n = 0
for s in p["steps"]:
    for l in s["launches"]:
        k = ks[l["kernel"]]
        maps = [a["tmap"] for a in l["args"] if "tmap" in a]
        if k.get("tiles") != sys.argv[2]:
            assert not maps and "tmap" not in k["params"], k["name"]
            continue
        n += 1
        assert l["block"] == [384, 1, 1], l["block"]
        assert 1 <= l["grid"][0] <= 132, l["grid"]
        assert k["params"][-2:] == ["tmap", "tmap"], k["params"]
        # the maps of a and b, each over the tensor the launch reads, inside it
        names = [a["tensor"] for a in l["args"] if "tensor" in a]
        assert [m["tensor"] for m in maps] == names[:2], (maps, names)
        for m in maps:
            t = ts[m["tensor"]]
            assert m["box"][0] == 64 and all(st % 16 == 0 for st in m["strides"]), m
            reach = m["dims"][0] * 2 + sum((d - 1) * st for d, st in zip(m["dims"][1:], m["strides"]))
            size = 2
            for d in t["shape"]:
                size *= d
            assert reach <= size, (m, t)
        # a's map: K innermost, then the rows; b's: the columns, then K
        a, b = maps
        assert a["dims"][0] == b["dims"][1] and a["box"][1] == 128, maps
assert n == 2, "launches of %s: %d" % (sys.argv[2], n)
print("ok", n)
PY
	contains "ws-$c-launch" "$TMP/ws.out" "ok"
	# the runtime encodes the maps over the launch's buffers (fakecuda records
	# them: the buffer, then dims/box per dim), and refuses plans whose maps
	# would reach past a buffer or break the kernels' layout
	rm -f "$TMP/ws.trace"
	check "ws-$c-encode" 3 env FUSEC_LIBCUDA="$(dirname "$FUSEC")/tests/fakecuda.so" FUSEC_NO_GRAPH=1 \
		FAKECUDA_TRACE="$TMP/ws.trace" "$(dirname "$FUSEC")/fusec-run" "$TMP/ws-$c"
	contains "ws-$c-encode-maps" "$TMP/ws.trace" "tmap(buf0+0;72/64x129/128x6/1),tmap(buf1+0;136/64x72/"
	contains "ws-$c-mbarrier" "$TMP/ws-$c/mm_check_bf16.ptx" "mbarrier.try_wait.parity"
	contains "ws-$c-maxntid" "$TMP/ws-$c/mm_check_bf16.ptx" ".maxntid 384"
	# ping-pong: each multiplying warpgroup issues its products in turn (named
	# barriers 4 and 5), two wgmma of 64 rows a K step over its whole tile
	case $c in *pp)
		contains "ws-$c-turns" "$TMP/ws-$c/mm_check_bf16.ptx" "bar.arrive"
		check "ws-$c-halves" 0 grep -q "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*, %f[0-9]*}" "$TMP/ws-$c/mm_check_bf16.ptx" ;;
	esac
	if [ -x "$PTXAS" ]; then
		check "ws-$c-ptxas" 0 "$PTXAS" -arch=sm_90a "$TMP/ws-$c/mm_check_bf16.ptx" -o "$TMP/ws.cubin"
	fi
done
ws_bad() {   # NAME SED MESSAGE: the ws plan edited by SED is refused with MESSAGE
	mkdir -p "$TMP/wsbad" && cp "$TMP/ws-wg128x128x64s4ws/mm_check_bf16.ptx" "$TMP/wsbad/" &&
		sed "$2" "$TMP/ws-wg128x128x64s4ws/mm_check_bf16.plan.json" >"$TMP/wsbad/mm_check_bf16.plan.json"
	check "ws-bad-$1" 1 env FUSEC_LIBCUDA="$(dirname "$FUSEC")/tests/fakecuda.so" \
		"$(dirname "$FUSEC")/fusec-run" "$TMP/wsbad" &&
		contains "ws-bad-$1-msg" "$TMP/err" "$3"
}
ws_bad stride 's/"strides":\[144,/"strides":[136,/' "stride 136 is not a multiple of 16 bytes"
ws_bad reach 's/"dims":\[72,129,6\]/"dims":[72,129,7]/' "the map reaches 130032 bytes into tensor 'big_fast_a', which has 111456"
ws_bad box 's/"box":\[64,128,1\]/"box":[32,128,1]/' "it must be 128 bytes (64 elements)"
ws_bad nobuf 's/"tensor":"big_fast_a","dims"/"tensor":"big_fast_mm","dims"/' "tensor 'big_fast_mm' has no buffer"
ws_bad ptx 's/"tmap","tmap"\]/"i64","tmap"]/; s/{"tmap":{"tensor":"big_fast_a","dims":\[72,129,6\],"strides":\[144,18576\],"box":\[64,128,1\]}}/{"i64":0}/' \
	"parameter 8 is '.align 64 .b8"
# clusters of two blocks (wg...wsc2, forced only: codegen/matmul_ws.c): the host
# runs their tiles as wg's; the plan's kernel says "cluster": 2, its grids are
# even, a K-major A's map box is half the tile's rows (each block of a pair loads
# half, multicast to both); the runtime launches it in clusters
# (cuLaunchKernelEx, which fakecuda traces) and refuses a grid that is not a
# multiple of the kernel's cluster
for cg in wg128x128x64s4wsc2:mm_siblings_bf16 wg128x96x64s4wsc2:mm_check_views_bf16; do
	check "ws-c2-${cg#*:}" 0 env FUSEC_MATMUL_TILES=${cg%%:*} "$FUSEC" run tests/bench/gpu/${cg#*:}.json --backend cpu --check
done
check ws-c2-compile 0 env FUSEC_MATMUL_TILES=wg128x128x64s4wsc2 "$FUSEC" compile tests/bench/gpu/mm_check_bf16.json --no-cache -o "$TMP/wsc2"
check ws-c2-plan 0 python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
ks = {k["name"]: k for k in p["kernels"]}
n = 0
for l in [l for s in p["steps"] for l in s["launches"]]:
    k = ks[l["kernel"]]
    if k.get("tiles") != "wg128x128x64s4wsc2":
        assert "cluster" not in k, k["name"]
        continue
    n += 1
    assert k["cluster"] == 2, k
    assert l["grid"][0] % 2 == 0 and l["grid"][0] <= 132, l["grid"]
    a = [x["tmap"] for x in l["args"] if "tmap" in x][0]
    assert a["box"][:2] == [64, 64], a
assert n == 2, n
' "$TMP/wsc2/mm_check_bf16.plan.json"
contains ws-c2-multicast "$TMP/wsc2/mm_check_bf16.ptx" ".multicast::cluster"
contains ws-c2-sync "$TMP/wsc2/mm_check_bf16.ptx" "barrier.cluster.wait"
contains ws-c2-release "$TMP/wsc2/mm_check_bf16.ptx" "mbarrier.arrive.shared::cluster.b64"
if [ -x "$PTXAS" ]; then
	check ws-c2-ptxas 0 "$PTXAS" -arch=sm_90a "$TMP/wsc2/mm_check_bf16.ptx" -o "$TMP/ws.cubin"
fi
rm -f "$TMP/wsc2.trace"
check ws-c2-launch 3 env FUSEC_LIBCUDA="$(dirname "$FUSEC")/tests/fakecuda.so" FUSEC_NO_GRAPH=1 \
	FAKECUDA_TRACE="$TMP/wsc2.trace" "$(dirname "$FUSEC")/fusec-run" "$TMP/wsc2"
contains ws-c2-launch-cluster "$TMP/wsc2.trace" "cluster 2"
mkdir -p "$TMP/wsc2bad" && cp "$TMP/wsc2/mm_check_bf16.ptx" "$TMP/wsc2bad/"
python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
ks = {k["name"]: k for k in p["kernels"]}
l = [l for s in p["steps"] for l in s["launches"] if "cluster" in ks[l["kernel"]]][0]
l["grid"][0] -= 1
json.dump(p, open(sys.argv[2], "w"))
' "$TMP/wsc2/mm_check_bf16.plan.json" "$TMP/wsc2bad/mm_check_bf16.plan.json"
check ws-c2-odd 1 env FUSEC_LIBCUDA="$(dirname "$FUSEC")/tests/fakecuda.so" "$(dirname "$FUSEC")/fusec-run" "$TMP/wsc2bad"
contains ws-c2-odd-msg "$TMP/err" "not a multiple of kernel"
# a driver without cuLaunchKernelEx (before CUDA 12) cannot launch in clusters:
# the plan is refused before anything runs, the kernel named
check ws-c2-no-ex 3 env FUSEC_LIBCUDA="$(dirname "$FUSEC")/tests/fakecuda_noex.so" "$(dirname "$FUSEC")/fusec-run" "$TMP/wsc2"
contains ws-c2-no-ex-msg "$TMP/err" "has no cuLaunchKernelEx, which kernel 'matmul_"
contains ws-c2-no-ex-cluster "$TMP/err" "(launched in clusters of 2 blocks; CUDA 12 or later)"
# a plan for every size takes the ws tiles where their maps hold at every size
# (strides of multiples of 16 bytes whatever the named dims are): its maps name the
# launch's sizes, and the runtime sets them when the sizes are bound
cat >"$TMP/dws.yaml" <<'G'
format: fusec-graph/1
name: dws
dims: {batch: 1..32, seq: 1..512}
inputs:
  x: {dtype: bf16, shape: [batch, seq, 768]}
  w: {dtype: bf16, shape: [1, 768, 3072]}
  b: {dtype: bf16, shape: [1, 1, 3072]}
ops:
  - {op: matmul, in: [x, w], out: h}
  - {op: add, in: [h, b], out: y}
outputs: [y]
G
check ws-dyn-compile 0 "$FUSEC" compile "$TMP/dws.yaml" --arch sm_90a --no-cache -o "$TMP/dws"
check ws-dyn-maps 0 python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
ks = {k["name"]: k for v in [p] + p.get("variants", []) for k in v["kernels"]}
n = 0
for ls in [l for s in p["steps"] for l in s["launches"]], *[v["launches"] for v in p["variants"]]:
        for l in ls:
            assert ks[l["kernel"]]["tiles"].endswith("ws"), ks[l["kernel"]]["tiles"]
            a, b = [x["tmap"] for x in l["args"] if "tmap" in x]
            # x [batch, seq, 768]: 768 innermost, then seq, then batch, strides 768
            # and seq*768 elements; w: 3072, then 768
            assert a["dims"] == [{"dim": 3}, {"dim": 2}, {"dim": 1}], a
            assert a["strides"] == [{"dims": [3], "bytes": 2}, {"dims": [2, 3], "bytes": 2}], a
            assert b["dims"] == [{"dim": 4}, {"dim": 3}] and l["dims"][2:] == [768, 3072], (b, l)
            n += 1
assert n == 3, n
' "$TMP/dws/dws.plan.json"
for sz in 2x100 5x37; do
	rm -f "$TMP/ws.trace"
	check ws-dyn-encode-$sz 3 env FUSEC_LIBCUDA="$(dirname "$FUSEC")/tests/fakecuda.so" FUSEC_NO_GRAPH=1 \
		FAKECUDA_TRACE="$TMP/ws.trace" "$(dirname "$FUSEC")/fusec-run" "$TMP/dws" --input-shape x=${sz}x768
	b=${sz%x*}; s=${sz#*x}
	contains ws-dyn-encode-$sz-maps "$TMP/ws.trace" "tmap(buf0+0;768/64x$s/128x$b/1),tmap(buf1+0;3072/64x768/64)"
done
if [ -x "$PTXAS" ]; then
	check ws-dyn-ptxas 0 "$PTXAS" -arch=sm_90a "$TMP/dws/dws.ptx" -o "$TMP/ws.cubin"
fi
# refused: a map that would break at some size (at bind, naming the launch), one that
# would reach past its tensor, a size the launch does not have, a size in a plan
# of fixed sizes
dws_bad() {   # NAME SED MESSAGE: the plan edited by SED, bound at 2x100, is refused
	rm -rf "$TMP/dwsbad" && cp -r "$TMP/dws" "$TMP/dwsbad" &&
		sed "$2" "$TMP/dws/dws.plan.json" >"$TMP/dwsbad/dws.plan.json"
	check "ws-dyn-bad-$1" 1 env FUSEC_LIBCUDA="$(dirname "$FUSEC")/tests/fakecuda.so" \
		"$(dirname "$FUSEC")/fusec-run" "$TMP/dwsbad" --input-shape x=2x100x768 &&
		contains "ws-dyn-bad-$1-msg" "$TMP/err" "$3"
}
dws_bad stride 's/"strides":\[{"dims":\[3\],"bytes":2}/"strides":[{"dims":[2],"bytes":2}/g' \
	"stride 200 is not a multiple of 16 bytes"
dws_bad reach 's/"dims":\[{"dim":3},{"dim":2},{"dim":1}\]/"dims":[{"dim":3},{"dim":2},{"dim":4}]/g' \
	"the map reaches 471859200 bytes into tensor 'x', which has 307200"
dws_bad id 's/"dims":\[{"dim":4},{"dim":3}\]/"dims":[{"dim":4},{"dim":5}]/g' \
	"tmap.dims[1].dim: 5 is out of range [0, 4]"
ws_bad static 's/"dims":\[72,129,6\]/"dims":[{"dim":1},129,6]/' \
	"expected a number: only a plan for every size names sizes"
# K a named dim: the rows' stride is 2*hidden bytes, not a multiple of 16 at every
# size, so no ws tile (the plain wgmma loop)
sed 's/dims: {batch: 1..32, seq: 1..512}/dims: {batch: 1..32, seq: 1..512, hidden: 1..1024}/; s/768/hidden/g' \
	"$TMP/dws.yaml" >"$TMP/dwsk.yaml"
check ws-dyn-k-compile 0 "$FUSEC" compile "$TMP/dwsk.yaml" --arch sm_90a --no-cache -o "$TMP/dwsk"
check ws-dyn-k-plain 1 grep -q "s4ws" "$TMP/dwsk/dws.plan.json"
contains ws-dyn-k-wg "$TMP/dwsk/dws.plan.json" '"tiles":"wg128x'

# ---- constant weights K-major and the 96- and 192-wide tiles (passes/kmajor.c,
# wg128x96x64s6ws and wg128x192x64s4ws in codegen/matmul_pick.c) ----
# make_kmajor.py's graph: y1 and z read w1, y3 reads wr (which an add also reads),
# q and k are siblings, s has K = 20, t 8 rows. The pass is off by default (its
# views perturb the explorer's blocks: docs/design.md) and on with FUSEC_KMAJOR=1
python3 tests/bench/gpu/make_kmajor.py "$TMP/kmaj.json"
check km-explain-off 0 "$FUSEC" explain "$TMP/kmaj.json"
check km-explain-off-none 1 grep -q "^weights:" "$TMP/out"
export FUSEC_KMAJOR=1
check km-explain 0 "$FUSEC" explain "$TMP/kmaj.json"
contains km-explain-line "$TMP/out" "weights: 3 matmuls read their constant weight K-major (stored transposed, read through a swap_dims view)"
check km-explain-burn 0 "$FUSEC" explain "$TMP/kmaj.json" --burn-exact
check km-explain-burn-none 1 grep -q "^weights:" "$TMP/out"
check km-compile 0 "$FUSEC" compile "$TMP/kmaj.json" --no-cache -o "$TMP/kmp"
contains km-launches "$TMP/err" "compiled mm_kmajor_bf16: 13 ops → 7 launches"
python3 - "$TMP/kmp/mm_kmajor_bf16.plan.json" > "$TMP/km.out" 2>&1 <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
ts = [t["name"] for t in p["tensors"]]
# one transpose of w1 read through two views, one of wr; wr itself stays (the add)
for n in ("w1:t", "wr:t", "wr"):
    assert n in ts, (n, ts)
for n in ("w1", "wq:t", "wk:t", "wo:t", "w4:t"):
    assert n not in ts, (n, ts)
# each view in its matmul's launch: no launch of a view alone
ls = [l for s in p["steps"] for l in s["launches"]]
assert not [l for l in ls if l["kernel"].startswith("swap_dims")], ls
PY
check km-plan 0 cat "$TMP/km.out"
# the values are the graph's: the interpreter's bytes as --burn-exact's (no pass),
# the cpu backend by the rule and with the wgmma tiles forced
check km-interp 0 "$FUSEC" run "$TMP/kmaj.json" --backend interp --seed 1 --outputs "$TMP/kmi"
check km-interp-burn 0 "$FUSEC" run "$TMP/kmaj.json" --backend interp --seed 1 --burn-exact --outputs "$TMP/kmb"
for o in y1 q k z y3 e s t; do
	same_files "km-interp-$o" "$TMP/kmi/$o.npy" "$TMP/kmb/$o.npy"
done
for c in rule wg128x96x64s4ws wg128x128x64s4ws; do
	if [ $c = rule ]; then set --; else set -- env FUSEC_MATMUL_TILES=$c; fi
	check "km-cpu-$c" 0 "$@" "$FUSEC" run "$TMP/kmaj.json" --backend cpu --seed 1 --check
	grep -c " ok$" "$TMP/out" >"$TMP/n"
	same "km-cpu-$c-ok" "$TMP/n" 8
done
unset FUSEC_KMAJOR
# the rule: 96 columns (six stages) or 192 where their waves are shorter (96 only
# with B K-major), else 128; an MN-major B never takes 96 (its panels are 64
# columns), even forced
while read -r m n k bt cfg; do
	nm=km_${m}x${n}x${k}_$bt
	if [ "$bt" = kt ]; then
		w="wt: {dtype: bf16, shape: [$n, $k]}" v="- {op: swap_dims, in: [wt], out: w, dims: [0, 1]}"
	else
		w="w: {dtype: bf16, shape: [$k, $n]}" v=
	fi
	cat >"$TMP/$nm.yaml" <<YAML
format: fusec-graph/1
name: $nm
inputs:
  x: {dtype: bf16, shape: [$m, $k]}
  $w
ops:
  $v
  - {op: matmul, in: [x, w], out: y}
outputs: [y]
YAML
	check "km-rule-$nm" 0 "$FUSEC" compile "$TMP/$nm.yaml" --no-cache -o "$TMP/kmr"
	contains "km-rule-$nm-tiles" "$TMP/kmr/$nm.plan.json" "\"tiles\":\"$cfg\""
	check "km-forced-$nm" 0 env FUSEC_MATMUL_TILES=wg128x96x64s4ws "$FUSEC" compile "$TMP/$nm.yaml" --no-cache -o "$TMP/kmf"
	if [ "$bt" = kt ]; then
		contains "km-forced-$nm-tiles" "$TMP/kmf/$nm.plan.json" '"tiles":"wg128x96x64s4ws"'
	else
		check "km-forced-$nm-not" 1 grep -q wg128x96 "$TMP/kmf/$nm.plan.json"
	fi
done <<'EOF2'
2048 768 768 kt wg128x96x64s6ws
2048 2304 768 kt wg128x96x64s6ws
2048 2048 768 kt wg128x128x64s4ws
3152 2304 768 kt wg128x128x64s4ws
2048 768 768 mn wg128x128x64s4ws
2048 1536 768 kt wg128x192x64s4ws
3152 768 3072 mn wg128x192x64s4ws
3152 3072 768 mn wg128x128x64s4ws
EOF2
if [ -x "$PTXAS" ]; then
	check km-ptxas 0 "$PTXAS" -arch=sm_90a "$TMP/kmf/km_3152x2304x768_kt.ptx" -o "$TMP/km.cubin"
fi

# ---- 3xTF32: f32 matmuls on wgmma as three tf32 products a step, the stages'
# sums added in f32 (the default; --no-3xtf32 turns it off, --allow-3xtf32 says
# the default; codegen/matmul_wgmma.c, x3_rule in codegen/matmul_pick.c, f32
# weights K-major by passes/kmajor.c) ----
# the cpu backend runs each tile's scalar definition (operands split into a tf32
# part and a tf32 rest, rest x part, part x rest, part x part, the stage's sum added
# to the accumulator) within f32's bounds: without the rests' products the outputs
# are off by 72-216 times the bounds
X3=tests/bench/gpu/mm_check_x3_f32.json
# its matmuls are too small for the rule (under half a wave of tiles): forced
check x3-rule-compile 0 "$FUSEC" compile $X3 --allow-3xtf32 --no-cache -o "$TMP/x3r"
contains x3-rule-plan-key "$TMP/x3r/mm_check_x3_f32.plan.json" '"allow_3xtf32":true'
check x3-default-compile 0 "$FUSEC" compile $X3 --no-cache -o "$TMP/x3d"
same_files x3-default-plan "$TMP/x3r/mm_check_x3_f32.plan.json" "$TMP/x3d/mm_check_x3_f32.plan.json"
check x3-rule-small 1 grep -q '"tiles":"wgx3' "$TMP/x3r/mm_check_x3_f32.plan.json"
for c in wgx3x128x128x32s3 wgx3x128x96x32s4 wgx3x128x64x32s4 wgx3x128x64x32s4sk2 wgx3x128x64x32s4sk3 \
	 wgx3x128x64x32s4sk4 wgx3x128x64x32s4sk8; do
	check "x3-$c-cpu" 0 env FUSEC_MATMUL_TILES=$c "$FUSEC" run $X3 --backend cpu --check
	check "x3-$c-compile" 0 env FUSEC_MATMUL_TILES=$c "$FUSEC" compile $X3 --no-cache -o "$TMP/x3_$c"
	contains "x3-$c-tiles" "$TMP/x3_$c/mm_check_x3_f32.plan.json" "\"tiles\":\"$c\""
	if [ -x "$PTXAS" ]; then
		check "x3-$c-ptxas" 0 "$PTXAS" -arch=sm_90a "$TMP/x3_$c/mm_check_x3_f32.ptx" -o "$TMP/x3.cubin"
	fi
done
# not under --no-3xtf32, not under --allow-tf32 (tf32 is faster and asked for),
# not for sm_90 (no wgmma), and never for a B read MN-major (tf32 wgmma reads
# K-major operands only), even forced
check x3-off-compile 0 "$FUSEC" compile $X3 --no-3xtf32 --no-cache -o "$TMP/x3o"
check x3-off 1 grep -q '"tiles":"wgx3' "$TMP/x3o/mm_check_x3_f32.plan.json"
check x3-off-key 1 grep -q 'allow_3xtf32' "$TMP/x3o/mm_check_x3_f32.plan.json"
check x3-tf32-compile 0 "$FUSEC" compile $X3 --allow-3xtf32 --allow-tf32 --no-cache -o "$TMP/x3t"
check x3-tf32 1 grep -q '"tiles":"wgx3' "$TMP/x3t/mm_check_x3_f32.plan.json"
check x3-sm90-compile 0 "$FUSEC" compile $X3 --allow-3xtf32 --arch sm_90 --no-cache -o "$TMP/x3a"
check x3-sm90 1 grep -q '"tiles":"wgx3' "$TMP/x3a/mm_check_x3_f32.plan.json"
# a forced 3xTF32 tile obeys the options as the rule does: --no-3xtf32 and
# --allow-tf32 promise other numbers, and forcing a tile changes only speed
XF=wgx3x128x64x32s4
check x3-force-off-compile 0 env FUSEC_MATMUL_TILES=$XF "$FUSEC" compile $X3 --no-3xtf32 --no-cache -o "$TMP/x3fo"
check x3-force-off 1 grep -q '"tiles":"wgx3' "$TMP/x3fo/mm_check_x3_f32.plan.json"
check x3-force-tf32-compile 0 env FUSEC_MATMUL_TILES=$XF "$FUSEC" compile $X3 --allow-tf32 --no-cache -o "$TMP/x3ft"
check x3-force-tf32 1 grep -q '"tiles":"wgx3' "$TMP/x3ft/mm_check_x3_f32.plan.json"
# run --no-3xtf32 (cpu): the forced tile's outputs differ from the 3xTF32 run's, and
# are the f32 rule's, byte for byte
check x3-run-on 0 env FUSEC_MATMUL_TILES=$XF "$FUSEC" run $X3 --backend cpu --outputs "$TMP/x3ron"
check x3-run-off 0 env FUSEC_MATMUL_TILES=$XF "$FUSEC" run $X3 --backend cpu --no-3xtf32 --outputs "$TMP/x3roff"
check x3-run-plain 0 "$FUSEC" run $X3 --backend cpu --no-3xtf32 --outputs "$TMP/x3rpl"
for y in long_y odd_y batch_mm wide_y; do
	check "x3-run-off-$y-differs" 1 cmp -s "$TMP/x3ron/$y.npy" "$TMP/x3roff/$y.npy"
	same_files "x3-run-off-$y" "$TMP/x3rpl/$y.npy" "$TMP/x3roff/$y.npy"
done
# bench --no-3xtf32 (on the stand-in driver, which traces the launches): the
# forced 3xTF32 kernel by default, a SIMT one (no shared memory reserved) with it
FAKE=$(dirname "$FUSEC")/tests/fakecuda.so
for o in on off; do
	flag=; [ $o = off ] && flag=--no-3xtf32
	rm -f "$TMP/x3b_$o.trace"
	# the stand-in driver runs only the fixture's kernels: the launch fails (3)
	check "x3-bench-$o" 3 env FUSEC_MATMUL_TILES=$XF FUSEC_LIBCUDA="$FAKE" FAKECUDA_CC=90 \
		FAKECUDA_TRACE="$TMP/x3b_$o.trace" "$FUSEC" bench $X3 --iters 1 --warmup 0 $flag
done
check x3-bench-on-smem 0 grep -q "block 256,1,1 shared 197632 " "$TMP/x3b_on.trace"
check x3-bench-off-smem 1 grep -q "shared 197632 " "$TMP/x3b_off.trace"
check x3-bench-off-kernel 0 grep -q "^kernel matmul_fused_" "$TMP/x3b_off.trace"
check x3-mn-compile 0 env FUSEC_MATMUL_TILES=wgx3x128x96x32s4 "$FUSEC" compile tests/bench/gpu/mm_check_f32.json --allow-3xtf32 --no-cache -o "$TMP/x3m"
check x3-mn 1 grep -q '"tiles":"wgx3' "$TMP/x3m/mm_check_f32.plan.json"
# the rule: the width whose waves hold the fewest columns a block, from half a wave
# of its tiles; under that the 64-wide tile split 3 or 2 ways where the blocks fill
# half a wave and stay within one (256x768: 24 tiles, 72 blocks), else the SIMT
# rule's (128x768: 12 tiles; 4096 rows of K 64: splits too short)
while read -r m n k cfg; do
	nm=x3_${m}x${n}x${k}
	cat >"$TMP/$nm.yaml" <<YAML
format: fusec-graph/1
name: $nm
inputs:
  x: {dtype: f32, shape: [$m, $k]}
  wt: {dtype: f32, shape: [$n, $k]}
ops:
  - {op: swap_dims, in: [wt], out: w, dims: [0, 1]}
  - {op: matmul, in: [x, w], out: y}
outputs: [y]
YAML
	check "x3-rule-$nm" 0 "$FUSEC" compile "$TMP/$nm.yaml" --allow-3xtf32 --no-cache -o "$TMP/x3w"
	if [ "$cfg" = simt ]; then
		check "x3-rule-$nm-simt" 1 grep -q '"tiles":"wgx3' "$TMP/x3w/$nm.plan.json"
	else
		contains "x3-rule-$nm-tiles" "$TMP/x3w/$nm.plan.json" "\"tiles\":\"$cfg\""
	fi
done <<'EOF2'
2048 768 768 wgx3x128x96x32s4
1024 768 768 wgx3x128x64x32s4
4096 4096 4096 wgx3x128x128x32s3
256 768 768 wgx3x128x64x32s4sk3
128 3072 768 wgx3x128x64x32s4sk2
128 768 768 simt
128 2304 64 simt
EOF2
# the f32 rule at a transformer layer's four projections at batch 1 (mm_sweep.py
# --b1, weights K-major; docs/benchmarks.md, sessions 62 and 63): the best of the
# forced tiles at each; 3xTF32 from half a wave of its tiles (ViT's 197 rows),
# split under that (session 64), the SIMT tiles at 12 tiles of 64 columns
python3 tests/bench/gpu/mm_sweep.py make "$TMP/b1" --b1
while read -r n cfg; do
	check "b1-rule-$n" 0 "$FUSEC" compile "$TMP/b1/k1_${n}_f32_kt.json" --no-cache -o "$TMP/b1p"
	contains "b1-rule-$n-tiles" "$TMP/b1p/k1_${n}_f32_kt.plan.json" "\"tiles\":\"$cfg\""
done <<'EOF2'
128x2304x768_bias wgx3x128x64x32s4sk3
128x3072x768_bias_gelu wgx3x128x64x32s4sk2
128x768x3072_bias_residual fma64x64x16s3sk4
197x2304x768_bias wgx3x128x64x32s4
197x3072x768_bias_gelu wgx3x128x64x32s4
197x768x3072_bias_residual wgx3x128x64x32s4sk3
197x768x768_bias_residual wgx3x128x64x32s4sk3
EOF2
# a model's f32 weights: K-major by default (not under --no-3xtf32, nor with
# --allow-tf32) from 192 rows: y1's and the siblings q and k's (2100 rows), y3's
# (1400; wr itself stays for the add), not z's (64); the one whose tiles fill half
# a wave (y1: 68 of 128 x 64) takes the 3xTF32 tiles
python3 tests/bench/gpu/make_kmajor.py "$TMP/kmaj700.json" 700
sed 's/bf16/f32/g' "$TMP/kmaj700.json" >"$TMP/kmaj32.json"
check x3-km-explain 0 "$FUSEC" explain "$TMP/kmaj32.json" --allow-3xtf32
contains x3-km-explain-line "$TMP/out" "weights: 4 matmuls read their constant weight K-major"
check x3-km-explain-default 0 "$FUSEC" explain "$TMP/kmaj32.json"
contains x3-km-explain-default-line "$TMP/out" "weights: 4 matmuls read their constant weight K-major"
# the threshold: 3 x 64 rows are 192 (ViT-B/16's 197 at batch 1 take it), 3 x 63 not
for r in 63 64; do
	python3 tests/bench/gpu/make_kmajor.py "$TMP/km$r.json" $r
	sed 's/bf16/f32/g' "$TMP/km$r.json" >"$TMP/km32_$r.json"
	check "x3-km-rows-$r" 0 "$FUSEC" explain "$TMP/km32_$r.json"
	check "x3-km-rows-$r-line" $((64 - r)) grep -q "^weights:" "$TMP/out"
done
# under 192 rows where the split tiles take the product: 128 x 1408 (22 tiles of
# 64 columns, split 3 ways: 66 blocks), not 128 x 768 (12 tiles), nor siblings
"$(npy_python)" - "$TMP/km128" <<'PY'
import json, os, sys
import numpy as np
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
rng = np.random.default_rng(7)
ws = {"w1": (384, 1408), "w2": (384, 768), "wq": (384, 1408), "wk": (384, 1408)}
for n, sh in ws.items():
    np.save(os.path.join(d, n + ".npy"), (rng.standard_normal(sh) * 0.05).astype(np.float32))
x = {"dtype": "f32", "shape": [128, 384]}
g = {"format": "fusec-graph/1", "name": "km128",
     "inputs": {"x": x, "x2": x, "xs": x},
     "constants": {n: {"dtype": "f32", "shape": list(sh), "npy": n + ".npy"} for n, sh in ws.items()},
     "ops": [{"op": "matmul", "in": ["x", "w1"], "out": "m1"}, {"op": "relu", "in": ["m1"], "out": "y1"},
             {"op": "matmul", "in": ["x2", "w2"], "out": "m2"}, {"op": "relu", "in": ["m2"], "out": "y2"},
             {"op": "matmul", "in": ["xs", "wq"], "out": "q"}, {"op": "matmul", "in": ["xs", "wk"], "out": "k"}],
     "outputs": ["y1", "y2", "q", "k"]}
json.dump(g, open(os.path.join(d, "km128.json"), "w"))
PY
check x3-km128-explain 0 "$FUSEC" explain "$TMP/km128/km128.json"
contains x3-km128-line "$TMP/out" "weights: 1 matmul read its constant weight K-major"
check x3-km128-compile 0 "$FUSEC" compile "$TMP/km128/km128.json" --no-cache -o "$TMP/x3k128"
contains x3-km128-tiles "$TMP/x3k128/km128.plan.json" '"tiles":"wgx3x128x64x32s4sk3"'
check x3-km128-cpu 0 "$FUSEC" run "$TMP/km128/km128.json" --backend cpu --seed 1 --check
grep -c " ok$" "$TMP/out" >"$TMP/n"
same x3-km128-cpu-ok "$TMP/n" 4
check x3-km128-off 0 "$FUSEC" explain "$TMP/km128/km128.json" --no-3xtf32
check x3-km128-off-none 1 grep -q "^weights:" "$TMP/out"
# not for a conv (channels last, on the 3xTF32 tiles whole from half a wave):
# ResNet-50's 3x3 of 64 channels at 56x56, batch 1, keeps the SIMT split (its
# 25 tiles of 128x64 would split 3 ways for a matmul)
python3 - "$TMP/cv1.json" <<'PY'
import json, random, sys
rng = random.Random(5)
w = [round(rng.uniform(-0.05, 0.05), 4) for _ in range(64 * 64 * 9)]
g = {"format": "fusec-graph/1", "name": "cv1",
     "inputs": {"x": {"dtype": "f32", "shape": [1, 64, 56, 56]}},
     "constants": {"w": {"dtype": "f32", "shape": [64, 64, 3, 3], "data": w}},
     "ops": [{"op": "conv2d", "in": ["x", "w"], "out": "y0", "padding": [1, 1]},
             {"op": "relu", "in": ["y0"], "out": "y"}],
     "outputs": ["y"]}
json.dump(g, open(sys.argv[1], "w"))
PY
check x3-conv-b1-compile 0 "$FUSEC" compile "$TMP/cv1.json" --no-cache -o "$TMP/cv1"
check x3-conv-b1-nosplit 1 grep -q '"tiles":"wgx3x128x64x32s4sk' "$TMP/cv1/cv1.plan.json"
check x3-conv-b1-nhwc 0 grep -q 'layout=nhwc' "$TMP/cv1/cv1.plan.json"
check x3-km-explain-off 0 "$FUSEC" explain "$TMP/kmaj32.json" --no-3xtf32
check x3-km-explain-off-none 1 grep -q "^weights:" "$TMP/out"
check x3-km-explain-tf32 0 "$FUSEC" explain "$TMP/kmaj32.json" --allow-3xtf32 --allow-tf32
check x3-km-explain-tf32-none 1 grep -q "^weights:" "$TMP/out"
check x3-km-cpu 0 "$FUSEC" run "$TMP/kmaj32.json" --backend cpu --seed 1 --check --allow-3xtf32
grep -c " ok$" "$TMP/out" >"$TMP/n"
same x3-km-cpu-ok "$TMP/n" 8
check x3-km-compile 0 "$FUSEC" compile "$TMP/kmaj32.json" --allow-3xtf32 --no-cache -o "$TMP/x3k"
contains x3-km-tiles "$TMP/x3k/mm_kmajor_f32.plan.json" '"tiles":"wgx3'
