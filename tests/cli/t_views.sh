# t_views.sh: a lone swap_dims / permute / expand / slice the search leaves
# un-fused launches nothing when every reader can read through it (view sinking:
# passes/views.c, codegen/lower.c; docs/plan-format.md "Views that launch
# nothing"). The graph tests/bench/gpu/views_sink_f32.json (and its bf16 twin, for
# the tensor-core matmul) has views of intermediates read by an elementwise kernel,
# a reduce kernel (softmax), both matmul operands (transposed and not, a 4-D
# permute that also swaps batch dims), two kernels in two segments, a view of an
# input, of a constant and of an alias, a slice and a reshape sunk together, and
# a slice read by cat (the cat kernel evaluates its operands, so through views
# too), and a view that keeps its copy kernel: a swap_dims that is a graph output. Odd sizes throughout. The plan is read back, the kernels run on the
# cpu backend against the interpreter, explain names the readers, the PTX goes
# through ptxas, and plans are byte-identical across -j and the kernel cache.
G=tests/bench/gpu/views_sink_f32.json
check views_compile 0 "$FUSEC" compile $G -o "$TMP/a" -j 1 --no-cache
cat >"$TMP/views_plan.py" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
t = {x["name"]: x for x in p["tensors"]}
views = [(v["op"], v["tensor"], v["read_through"]) for s in p["steps"] for v in s.get("views", [])]
want = [(1, "tt", "t"), (4, "ut", "u"), (7, "vp", "v"), (14, "xs", "x"), (16, "ks", "k"),
        (20, "ws", "wr"), (21, "wsr", "wr"), (23, "xc", "x"), (28, "qp", "qs"), (31, "gp", "g")]
assert views == want, views
for _, n, _ in want:
    assert t[n]["buffer"] is False and "alias" not in t[n], n
assert t["wr"]["alias"] == "w", t["wr"]             # the reshape under the slice: an alias
launches = [l for s in p["steps"] for l in s["launches"]]
ops = sorted(o for l in launches for o in l["ops"])
for o, _, _ in want:
    assert o not in ops, o                          # no kernel for a sunk view
assert 26 in ops, ops                               # swap_dims -> output: a copy
assert len(launches) == 19, len(launches)
cat = [l for l in launches if l["ops"] == [24]]
assert len(cat) == 1 and cat[0]["kernel"].startswith("elemwise_"), cat   # the cat, reading through the slice
reads = {r for l in launches for r in l["reads"]}
for _, n, _ in want:
    assert n not in reads, n                        # nobody binds a sunk view
mm = {l["ops"][0]: l for l in launches if l["ops"] in ([2], [5], [29], [33])}
for o in (2, 5, 29, 33):
    assert mm[o]["kernel"].startswith("matmul_fused_"), mm[o]   # a lone matmul that gained a view
ks = {k["name"]: k for k in p["kernels"]}
for o in (2, 5, 33):
    # tiny f32 matmuls run plain by default; FUSEC_MATMUL_TILES forces the fma tile
    tiled = sys.argv[2] == "tiled"
    assert ks[mm[o]["kernel"]].get("tiles", "").startswith("fma") == tiled, ks[mm[o]["kernel"]]
PY
check views_plan 0 python3 "$TMP/views_plan.py" "$TMP/a/views_sink_f32.plan.json" plain
# the same views read through by the tiled fma kernel, forced (its own shapes are
# tiny): the plan as above, and the numbers on the cpu backend
check views_compile_tiled 0 env FUSEC_MATMUL_TILES=fma64x64x16s3 "$FUSEC" compile $G -o "$TMP/at" -j 1 --no-cache
check views_plan_tiled 0 python3 "$TMP/views_plan.py" "$TMP/at/views_sink_f32.plan.json" tiled
check views_cpu_check_tiled 0 env FUSEC_MATMUL_TILES=fma64x64x16s3 "$FUSEC" run $G --backend cpu --check
for dt in f32 bf16; do
	check views_cpu_check_$dt 0 "$FUSEC" run tests/bench/gpu/views_sink_$dt.json --backend cpu --check
	n=$(grep -c "^check .* ok$" "$TMP/out")
	if [ "$n" -ne 13 ]; then
		echo "FAIL views_cpu_values_$dt: $n of 13 outputs checked ok"; fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
done
# explain: a line per sunk view naming the kernels that read through it, by the
# names the plan and the PTX give them (those of the units fusec_k1_6, fusec_k4_0)
kname() { grep -o "\"kernel\":\"[a-z_0-9]*\",\"unit\":\"$1\"" "$TMP/a/views_sink_f32.plan.json" | head -1 | cut -d'"' -f4; }
check views_explain 0 "$FUSEC" explain $G --op vp
contains views_explain_line "$TMP/out" "  view: no kernel; read through by kernel $(kname fusec_k1_6), $(kname fusec_k4_0)"
check views_explain_copy 0 "$FUSEC" explain $G --op e6
if grep -q "view:" "$TMP/out"; then
	echo "FAIL views_explain_copy: a graph output view said it launches nothing"; fail=$((fail + 1))
else
	pass=$((pass + 1))
fi
check views_explain_json 0 "$FUSEC" explain $G --op ws --json
cp "$TMP/out" "$TMP/explain.json"
check views_explain_json_key 0 python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))["ops"][0]
assert o["read_through_by"] == [sys.argv[2]] and o["alias"] is False, o
assert o["kernel"] is None and o["launches_nothing"] == "view", o' "$TMP/explain.json" "$(kname fusec_k2_5)"
# the runtime accepts the plan (no buffer for a sunk view, nothing binds it)
check views_runtime_plan 0 "$(dirname "$FUSEC")/fusec-run" "$TMP/a" --plan-only
# ptxas takes every kernel, the tensor-core ones with sunk operand views included
PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
if [ -x "$PTXAS" ]; then
	check views_ptxas 0 "$PTXAS" -arch=sm_90a "$TMP/a/views_sink_f32.ptx" -o "$TMP/f32.cubin"
	check views_ptxas_tiled 0 "$PTXAS" -arch=sm_90a "$TMP/at/views_sink_f32.ptx" -o "$TMP/f32t.cubin"
	check views_compile_bf16 0 "$FUSEC" compile tests/bench/gpu/views_sink_bf16.json -o "$TMP/h"
	check views_ptxas_bf16 0 "$PTXAS" -arch=sm_90a "$TMP/h/views_sink_bf16.ptx" -o "$TMP/bf16.cubin"
fi
# deterministic: -j 1 without the kernel cache, -j 2 filling it, -j 2 from it
export XDG_CACHE_HOME="$TMP/cache"
check views_compile_j2 0 "$FUSEC" compile $G -o "$TMP/b" -j 2
check views_compile_j2_cached 0 "$FUSEC" compile $G -o "$TMP/c" -j 2 --no-result-cache
for f in views_sink_f32.plan.json views_sink_f32.ptx; do
	same_files views_same_j2_$f "$TMP/a/$f" "$TMP/b/$f"
	same_files views_same_cached_$f "$TMP/a/$f" "$TMP/c/$f"
done
# Copy kernels of views and broadcasts take 4 consecutive elements a thread, stepping
# their per-dim positions by a carry (codegen/frame.c, chunk_loops): odd shapes whose
# chunks cross two dims at once, and element counts that are not a multiple of 4,
# against the interpreter on the cpu backend; the grid is a thread per 4 elements.
cat >"$TMP/chunk.yaml" <<'YAML'
format: fusec-graph/1
name: chunk
inputs:
  a: {dtype: f32, shape: [5, 3, 2]}
  b: {dtype: f32, shape: [7, 9, 5]}
  c: {dtype: f32, shape: [1, 9, 1]}
  d: {dtype: bf16, shape: [3, 1, 7]}
  e: {dtype: f32, shape: [2, 1000, 3]}
ops:
  - {op: permute, in: [a], axes: [2, 0, 1], out: pa}
  - {op: slice, in: [b], ranges: [[1, 6], [2, 5]], out: sb}
  - {op: add, in: [b, c], out: bc}
  - {op: exp, in: [d], out: de}
  - {op: expand, in: [de], shape: [3, 5, 7], out: ex}
  - {op: permute, in: [e], axes: [1, 2, 0], out: pe}
  - {op: sync}
outputs: [pa, sb, bc, ex, pe]
YAML
check chunk_cpu_check 0 "$FUSEC" run "$TMP/chunk.yaml" --backend cpu --check --seed 3
n=$(grep -c "^check .* ok$" "$TMP/out")
if [ "$n" -ne 5 ]; then
	echo "FAIL chunk_cpu_values: $n of 5 outputs checked ok"; fail=$((fail + 1))
else
	pass=$((pass + 1))
fi
check chunk_compile 0 "$FUSEC" compile "$TMP/chunk.yaml" -o "$TMP/ch" --no-cache
check chunk_grid 0 python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
g = {l["ops"][0]: l["grid"][0] for s in p["steps"] for l in s["launches"]}
assert g[5] == 6, g    # 6000 elements: 1500 threads of 4, 6 blocks of 256
' "$TMP/ch/chunk.plan.json"

# a gather reads its index through views too (its kernel evaluates it): the
# importer's Gather expands an embedding's ids to the table's width, and that
# expand sinks into the gather's launch instead of writing an i64 copy of the ids
# per element of the result (BERT's and GPT-2's tok embeddings)
E=tests/onnx/models/bert/model.onnx
check gather_view_compile 0 "$FUSEC" compile $E -o "$TMP/gv" --no-cache
check gather_view_plan 0 python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
ops = {o for s in p["steps"] for l in s["launches"] for o in l["ops"]}
k = {x["name"]: x for x in p["kernels"]}
views = [v for s in p["steps"] for v in s.get("views", [])]
gv = [v for v in views if v["tensor"].startswith("/tok/Gather_output_0")]
assert gv and all(v["op"] not in ops for v in gv), views
g = [l for s in p["steps"] for l in s["launches"] if "BaseFloat::Gather" in k[l["kernel"]]["op_names"]]
assert len(g) == 1 and not any("BaseInt::Expand" in k[l["kernel"]]["op_names"] for s in p["steps"] for l in s["launches"]), g
assert any(r == gv[0]["read_through"] for r in g[0]["reads"]), (g, gv)
' "$TMP/gv/model.plan.json"
check gather_view_cpu 0 "$FUSEC" run $E --backend cpu --check --seed 4
check gather_view_ok 1 grep -q FAIL "$TMP/out"
