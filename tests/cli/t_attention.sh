# t_attention.sh: the attention op (ir/ops.def) and --attention fuse (passes/attention.c).
# Sourced by run.sh with lib.sh loaded; FUSEC and TMP set.

# ---- the op, written in a graph ----
cat >"$TMP/att.yaml" <<'G'
format: fusec-graph/1
name: att
inputs:
  q: {dtype: f32, shape: [2, 3, 37, 24]}
  kt: {dtype: f32, shape: [2, 3, 24, 45]}
  v: {dtype: f32, shape: [2, 1, 45, 40]}
  bias: {dtype: f32, shape: [2, 1, 1, 45]}
ops:
  - {op: attention, in: [q, kt, v, bias], out: y, scalar: 0.2}
outputs: [y]
G
cat >"$TMP/att3.yaml" <<'G'
format: fusec-graph/1
name: att3
inputs:
  q: {dtype: f32, shape: [19, 8]}
  kt: {dtype: f32, shape: [8, 70]}
  v: {dtype: f32, shape: [70, 5]}
ops:
  - {op: mul_scalar, in: [q], out: q2, scalar: 2}
  - {op: attention, in: [q2, kt, v], out: a, scalar: 0.5}
  - {op: add_scalar, in: [a], out: y, scalar: 1}
outputs: [y]
G
for p in f32 bf16 f16; do
	opt=; [ $p = f32 ] || opt="--precision $p"
	check att_cpu_$p 0 "$FUSEC" run "$TMP/att.yaml" --backend cpu --check $opt
	contains att_cpu_${p}_ok "$TMP/out" "check y: "
done
check att3_cpu 0 "$FUSEC" run "$TMP/att3.yaml" --backend cpu --check
contains att3_cpu_ok "$TMP/out" "check y: "
# it runs alone, and says why
check att_explain 0 "$FUSEC" explain "$TMP/att3.yaml" --op 1
contains att_explain_alone "$TMP/out" "ElementWise: attention is not elementwise"
# the interpreter against the op's definition, in numpy
mkdir -p "$TMP/att.in" "$TMP/att.want"
check att_numpy_in 0 "$(npy_python)" -c '
import sys, numpy as np
d, w = sys.argv[1], sys.argv[2]
r = np.random.default_rng(7)
q, kt = r.standard_normal((2, 3, 37, 24)), r.standard_normal((2, 3, 24, 45))
v, b = r.standard_normal((2, 1, 45, 40)), r.standard_normal((2, 1, 1, 45))
for n, x in (("q", q), ("kt", kt), ("v", v), ("bias", b)):
    np.save(f"{d}/{n}.npy", x.astype(np.float32))
q, kt, v, b = (np.load(f"{d}/{n}.npy").astype(np.float64) for n in ("q", "kt", "v", "bias"))
s = 0.2 * (q @ kt) + b
p = np.exp(s - s.max(-1, keepdims=True))
np.save(f"{w}/y.npy", (p / p.sum(-1, keepdims=True)) @ v)
' "$TMP/att.in" "$TMP/att.want"
check att_interp 0 "$FUSEC" run "$TMP/att.yaml" --inputs "$TMP/att.in" --outputs "$TMP/att.got"
same_npy att_interp_numpy "$TMP/att.want" "$TMP/att.got" 1e-6
# shape errors name the operands
sed 's/shape: \[2, 3, 24, 45\]/shape: [2, 3, 25, 45]/' "$TMP/att.yaml" >"$TMP/att_bad.yaml"
check att_bad_dims 1 "$FUSEC" compile "$TMP/att_bad.yaml" -o "$TMP/bad"
contains att_bad_dims_msg "$TMP/err" "attention dims differ: q [2,3,37,24], kt [2,3,25,45]"
sed 's/shape: \[2, 1, 1, 45\]/shape: [2, 1, 2, 45]/' "$TMP/att.yaml" >"$TMP/att_bad2.yaml"
check att_bad_bias 1 "$FUSEC" compile "$TMP/att_bad2.yaml" -o "$TMP/bad"
contains att_bad_bias_msg "$TMP/err" "attention bias [2,1,2,45] does not broadcast to the scores"

# ---- --attention fuse ----
check attf_bad_mode 2 "$FUSEC" compile "$TMP/att.yaml" --attention maybe -o "$TMP/bad"
contains attf_bad_mode_msg "$TMP/err" "--attention: unknown mode 'maybe' (fuse or keep)"
check attf_import 2 "$FUSEC" import tests/onnx/models/bert/model.onnx --attention fuse -o "$TMP/b.json"
B=tests/onnx/models/bert/model.onnx
# the default (no --attention): an f32 chain stays apart, saying why; converted to
# bf16 (which the flash kernel runs) it is fused
check attd_bert_explain 0 "$FUSEC" explain $B
contains attd_bert_apart "$TMP/out" "f32 attention has no fused kernel yet (f16 and bf16 do): it runs as matmul, softmax, matmul (--attention fuse fuses it anyway)"
grep -c "the matmul after a softmax stays apart" "$TMP/out" >"$TMP/n"
same attd_bert_apart_both "$TMP/n" "2"
grep -c "^op .* Float::Attention" "$TMP/out" >"$TMP/n" || true
same attd_bert_none_fused "$TMP/n" "0"
check attd_bert_bf16 0 "$FUSEC" explain $B --precision bf16
contains attd_bert_bf16_fused "$TMP/out" "attention: 2 fused (--attention keep leaves them apart)"
check attf_bert_explain 0 "$FUSEC" explain $B --attention fuse
contains attf_bert_fused "$TMP/out" "attention: 2 fused (--attention keep leaves them apart)"
grep -c "^op .* Float::Attention" "$TMP/out" >"$TMP/n"
same attf_bert_ops "$TMP/n" 2
# the JSON document says it too
check attf_bert_json 0 "$FUSEC" explain $B --attention fuse --json
python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["attention"])' "$TMP/out" >"$TMP/aj"
same attf_bert_json_att "$TMP/aj" "{'fused': 2, 'causal': 0, 'apart': []}"
check attf_bert_keep 0 "$FUSEC" explain $B --attention keep
grep -c "^op .* Float::Attention" "$TMP/out" >"$TMP/n"
same attf_bert_keep_ops "$TMP/n" 0
check attf_bert_cpu 0 "$FUSEC" run $B --attention fuse --backend cpu --check
contains attf_bert_cpu_ok "$TMP/out" "check hidden: "
# the rewrite keeps what the graph computes: the interpreter with and without it,
# and the cpu backend's kernels against the graph as written
check attf_bert_ref 0 "$FUSEC" run $B --backend interp --seed 2 --outputs "$TMP/bert.ref" --attention keep
check attf_bert_int 0 "$FUSEC" run $B --backend interp --seed 2 --outputs "$TMP/bert.int" --attention fuse
same_npy attf_bert_same_interp "$TMP/bert.ref" "$TMP/bert.int" 1e-9
check attf_bert_cpu2 0 "$FUSEC" run $B --backend cpu --seed 2 --outputs "$TMP/bert.cpu" --attention fuse --precision bf16
same_npy attf_bert_same_bf16 "$TMP/bert.ref" "$TMP/bert.cpu" 5e-2
# under --allow-tf32 the f32 chains of head dims up to 64 fuse by default, in tf32
check attf_bert_tf32 0 "$FUSEC" explain $B --allow-tf32
contains attf_bert_tf32_fused "$TMP/out" "attention: 2 fused"
check attf_bert_tf32_cpu 0 "$FUSEC" run $B --backend cpu --seed 2 --outputs "$TMP/bert.tf32" --allow-tf32
same_npy attf_bert_tf32_same "$TMP/bert.ref" "$TMP/bert.tf32" 5e-3
check attf_bert_tf32_check 0 "$FUSEC" run $B --backend cpu --seed 2 --allow-tf32 --check
V=tests/onnx/models/vit2/model.onnx
check attf_vit_ref 0 "$FUSEC" run $V --backend interp --seed 4 --outputs "$TMP/vit.ref" --attention keep
check attf_vit_cpu 0 "$FUSEC" run $V --backend cpu --seed 4 --outputs "$TMP/vit.cpu" --attention fuse
same_npy attf_vit_same "$TMP/vit.ref" "$TMP/vit.cpu" 1e-5
# a causal mask written with where (GPT-2, Llama): a bool mask and the fill as `min`
for m in gpt2 llama; do
	M=tests/onnx/models/$m/model.onnx
	check attf_${m}_explain 0 "$FUSEC" explain $M --attention fuse
	contains attf_${m}_fused "$TMP/out" "attention: 2 fused (--attention keep leaves them apart)"
	check attf_${m}_ref 0 "$FUSEC" run $M --backend interp --seed 2 --outputs "$TMP/$m.ref" --attention keep
	check attf_${m}_cpu 0 "$FUSEC" run $M --backend cpu --seed 2 --outputs "$TMP/$m.cpu" --attention fuse
	same_npy attf_${m}_same "$TMP/$m.ref" "$TMP/$m.cpu" 1e-5
	check attf_${m}_bf16 0 "$FUSEC" run $M --backend cpu --seed 2 --attention fuse --precision bf16 --check
	contains attf_${m}_bf16_ok "$TMP/out" "check logits: "
done
# a mask whose fill is not one constant stays apart, and explain says why
cat >"$TMP/where.yaml" <<'G'
format: fusec-graph/1
name: where
inputs:
  q: {dtype: f32, shape: [2, 5, 8]}
  kt: {dtype: f32, shape: [2, 8, 7]}
  v: {dtype: f32, shape: [2, 7, 3]}
  c: {dtype: bool, shape: [1, 5, 7]}
  f: {dtype: f32, shape: [1, 1, 1]}
ops:
  - {op: matmul, in: [q, kt], out: s}
  - {op: where, in: [c, f, s], out: x}
  - {op: max_dim, in: [x], out: m, axis: 2}
  - {op: sub, in: [x, m], out: d}
  - {op: exp, in: [d], out: e}
  - {op: sum, in: [e], out: l, axis: 2}
  - {op: div, in: [e, l], out: p}
  - {op: matmul, in: [p, v], out: y}
outputs: [y]
G
check attf_where_input 0 "$FUSEC" explain "$TMP/where.yaml" --attention fuse
contains attf_where_input_why "$TMP/out" "the mask's fill is not one constant value"
check attf_where_json 0 "$FUSEC" explain "$TMP/where.yaml" --attention fuse --json
python3 -c 'import json, sys; a = json.load(open(sys.argv[1]))["attention"]; print(a["fused"], len(a["apart"]), "not one constant value" in a["apart"][0])' "$TMP/out" >"$TMP/aj"
same attf_where_json_att "$TMP/aj" "0 1 True"
# with the fill a constant it fuses, and computes what the graph as written does
sed 's/^  f: {dtype: f32, shape: \[1, 1, 1\]}$/XX/' "$TMP/where.yaml" | grep -v '^XX$' |
	sed 's/^ops:$/constants:\n  f: {dtype: f32, shape: [1, 1, 1], data: [-1e4]}\nops:/' >"$TMP/wherec.yaml"
check attf_wherec 0 "$FUSEC" explain "$TMP/wherec.yaml" --attention fuse
contains attf_wherec_fused "$TMP/out" "attention: 1 fused"
check attf_wherec_ref 0 "$FUSEC" run "$TMP/wherec.yaml" --seed 4 --outputs "$TMP/wc.ref" --attention keep
check attf_wherec_cpu 0 "$FUSEC" run "$TMP/wherec.yaml" --backend cpu --seed 4 --outputs "$TMP/wc.cpu" --attention fuse
same_npy attf_wherec_same "$TMP/wc.ref" "$TMP/wc.cpu" 1e-6
# the guard transformers' Llama export puts after the softmax, where(is_nan(p), 0, p),
# joins the chain: the op carries zero_nan, and a row whose weights are NaN (here
# rows 3 and 8, every key masked with -inf) gives 0 in every kernel, as the guard does
for dt in f32 bf16; do
	python3 tests/bench/gpu/att_guard.py "$TMP/guard_$dt.yaml" $dt 12 16
	check attf_guard_$dt 0 "$FUSEC" explain "$TMP/guard_$dt.yaml" --attention fuse
	contains attf_guard_${dt}_fused "$TMP/out" "attention: 1 fused"
	check attf_guard_${dt}_ref 0 "$FUSEC" run "$TMP/guard_$dt.yaml" --seed 4 --outputs "$TMP/g$dt.ref" --attention keep
	check attf_guard_${dt}_int 0 "$FUSEC" run "$TMP/guard_$dt.yaml" --seed 4 --outputs "$TMP/g$dt.int" --attention fuse
	check attf_guard_${dt}_cpu 0 "$FUSEC" run "$TMP/guard_$dt.yaml" --backend cpu --seed 4 --outputs "$TMP/g$dt.cpu" --attention fuse
done
same_npy attf_guard_f32_int_same "$TMP/gf32.ref" "$TMP/gf32.int" 1e-6
same_npy attf_guard_f32_cpu_same "$TMP/gf32.ref" "$TMP/gf32.cpu" 1e-6
same_npy attf_guard_bf16_int_same "$TMP/gbf16.ref" "$TMP/gbf16.int" 3e-2
same_npy attf_guard_bf16_cpu_same "$TMP/gbf16.ref" "$TMP/gbf16.cpu" 3e-2
# --check bounds the guarded rows too: 0, exactly (host/bounds.c)
check attf_guard_bf16_check 0 "$FUSEC" run "$TMP/guard_bf16.yaml" --backend cpu --seed 4 --check --attention fuse
contains attf_guard_bf16_check_ok "$TMP/out" "ok"
check attf_guard_bf16_check_all 1 grep -q "not checked" "$TMP/out"
check attf_guard_ptx 0 "$FUSEC" compile "$TMP/guard_bf16.yaml" --no-cache -o "$TMP/gptx"
contains attf_guard_ptx_flash "$TMP/gptx/guard.plan.json" '"Float::Attention"'
contains attf_guard_ptx_attr "$TMP/gptx/guard.plan.json" 'zero_nan'
# the attribute in a graph file: true or false
sed -e 's/^  - {op: matmul, in: \[q, kt\], out: s}$/  - {op: attention, in: [q, kt, v, c], out: y, scalar: 0.25, min: -1e9, zero_nan: true}/' \
	-e '/out: s1\|out: x}\|out: m,\|out: d}\|out: e}\|out: l,\|out: p}\|out: n}\|out: p2}\|in: \[p2, v\]/d' \
	"$TMP/guard_f32.yaml" >"$TMP/zn.yaml"
check attf_zero_nan_attr 0 "$FUSEC" run "$TMP/zn.yaml" --seed 4 --backend interp
sed 's/zero_nan: true/zero_nan: 1/' "$TMP/zn.yaml" >"$TMP/zn1.yaml"
check attf_zero_nan_bad 1 "$FUSEC" run "$TMP/zn1.yaml" --seed 4 --backend interp
contains attf_zero_nan_bad_msg "$TMP/err" "expected true or false"
# grouped-query attention as exporters write it (transformers' repeat_kv): k and v
# of 2 heads given a unit dim, expanded to 3 and merged into q's 6 heads. The
# attention reads them before the expand (a grouped operand: q's head h reads k's
# head h / 3, ir/infer.c), so no copy of k or v is made
for dt in f32 bf16; do
	cat >"$TMP/gqa_$dt.yaml" <<G
format: fusec-graph/1
name: gqa
inputs:
  q: {dtype: $dt, shape: [2, 6, 20, 16]}
  k: {dtype: $dt, shape: [2, 2, 20, 16]}
  v: {dtype: $dt, shape: [2, 2, 20, 8]}
ops:
  - {op: reshape, in: [k], out: k5, shape: [2, 2, 1, 20, 16]}
  - {op: expand, in: [k5], out: ke, shape: [2, 2, 3, 20, 16]}
  - {op: reshape, in: [ke], out: kx, shape: [2, 6, 20, 16]}
  - {op: permute, in: [kx], out: kt, axes: [0, 1, 3, 2]}
  - {op: reshape, in: [v], out: v5, shape: [2, 2, 1, 20, 8]}
  - {op: expand, in: [v5], out: ve, shape: [2, 2, 3, 20, 8]}
  - {op: reshape, in: [ve], out: vx, shape: [2, 6, 20, 8]}
  - {op: matmul, in: [q, kt], out: s}
  - {op: mul_scalar, in: [s], out: s1, scalar: 0.25}
  - {op: max_dim, in: [s1], out: m, axis: 3}
  - {op: sub, in: [s1, m], out: d}
  - {op: exp, in: [d], out: e}
  - {op: sum, in: [e], out: l, axis: 3}
  - {op: div, in: [e, l], out: p}
  - {op: matmul, in: [p, vx], out: y}
outputs: [y]
G
	check gqa_$dt 0 "$FUSEC" compile "$TMP/gqa_$dt.yaml" --attention fuse --no-cache -o "$TMP/gqa_$dt"
	contains gqa_${dt}_one "$TMP/err" "→ 1 launch"
	check gqa_${dt}_ref 0 "$FUSEC" run "$TMP/gqa_$dt.yaml" --seed 6 --outputs "$TMP/gq$dt.ref" --attention keep
	check gqa_${dt}_cpu 0 "$FUSEC" run "$TMP/gqa_$dt.yaml" --backend cpu --seed 6 --outputs "$TMP/gq$dt.cpu" --attention fuse
	check gqa_${dt}_check 0 "$FUSEC" run "$TMP/gqa_$dt.yaml" --backend cpu --seed 6 --check --attention fuse
	contains gqa_${dt}_check_ok "$TMP/out" "ok"
done
same_npy gqa_f32_same "$TMP/gqf32.ref" "$TMP/gqf32.cpu" 1e-5
# an expanded v that is an output too stays expanded: the attention reads it as it is
sed 's/^outputs: \[y\]$/outputs: [y, vx]/' "$TMP/gqa_f32.yaml" >"$TMP/gqa_vx.yaml"
check gqa_vx 0 "$FUSEC" run "$TMP/gqa_vx.yaml" --backend cpu --seed 6 --check --attention fuse
contains gqa_vx_ok "$TMP/out" "check vx: "
check gqa_vx_fail 1 grep -q "FAIL" "$TMP/out"
same_npy gqa_bf16_same "$TMP/gqbf16.ref" "$TMP/gqbf16.cpu" 3e-2
PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
if [ -x "$PTXAS" ]; then
	check gqa_ptxas 0 "$PTXAS" -arch=sm_90a "$TMP/gqa_bf16/gqa.ptx" -o "$TMP/gqa.cubin"
fi
# the op written with grouped operands in a graph file; a dim that does not divide
# q's is refused
sed -n '1,6p' "$TMP/gqa_f32.yaml" >"$TMP/gqa_op.yaml"
printf '  kt: {dtype: f32, shape: [2, 2, 16, 20]}\nops:\n  - {op: attention, in: [q, kt, v], out: y, scalar: 0.25}\noutputs: [y]\n' >>"$TMP/gqa_op.yaml"
sed -i '/^  k: /d' "$TMP/gqa_op.yaml"
check gqa_op 0 "$FUSEC" run "$TMP/gqa_op.yaml" --backend cpu --seed 6 --check
contains gqa_op_ok "$TMP/out" "ok"
sed 's/shape: \[2, 2, 16, 20\]/shape: [2, 4, 16, 20]/' "$TMP/gqa_op.yaml" >"$TMP/gqa_bad.yaml"
check gqa_bad 1 "$FUSEC" run "$TMP/gqa_bad.yaml" --backend cpu --seed 6
contains gqa_bad_msg "$TMP/err" "attention batch dims neither broadcast nor group"
# a softmax whose weights are an output stays apart
cat >"$TMP/soft_out.yaml" <<'G'
format: fusec-graph/1
name: soft_out
inputs:
  q: {dtype: f32, shape: [4, 8]}
  kt: {dtype: f32, shape: [8, 6]}
  v: {dtype: f32, shape: [6, 3]}
ops:
  - {op: matmul, in: [q, kt], out: s}
  - {op: div_scalar, in: [s], out: s1, scalar: 2}
  - {op: max_dim, in: [s1], out: m, axis: -1}
  - {op: sub, in: [s1, m], out: d}
  - {op: exp, in: [d], out: e}
  - {op: sum, in: [e], out: l, axis: -1}
  - {op: div, in: [e, l], out: p}
  - {op: matmul, in: [p, v], out: y}
outputs: [y, p]
G
check attf_soft_out 0 "$FUSEC" explain "$TMP/soft_out.yaml" --attention fuse
contains attf_soft_out_why "$TMP/out" "a tensor of the softmax is read outside it or is an output"
sed -e 's/outputs: \[y, p\]/outputs: [y]/' -e 's/name: soft_out/name: soft/' "$TMP/soft_out.yaml" >"$TMP/soft.yaml"
check attf_soft 0 "$FUSEC" explain "$TMP/soft.yaml" --attention fuse
contains attf_soft_fused "$TMP/out" "attention: 1 fused"
check attf_soft_ref 0 "$FUSEC" run "$TMP/soft.yaml" --seed 1 --outputs "$TMP/soft.ref" --attention keep
check attf_soft_cpu 0 "$FUSEC" run "$TMP/soft.yaml" --backend cpu --seed 1 --outputs "$TMP/soft.cpu" --attention fuse
same_npy attf_soft_same "$TMP/soft.ref" "$TMP/soft.cpu" 1e-6
# the result cache tells the two apart
check attf_compile_keep 0 "$FUSEC" compile "$TMP/soft.yaml" -o "$TMP/ck" --attention keep
check attf_compile_fuse 0 "$FUSEC" compile "$TMP/soft.yaml" -o "$TMP/cf" --attention fuse
check attf_plans_differ 1 cmp -s "$TMP/ck/soft.plan.json" "$TMP/cf/soft.plan.json"

# q and kt scaled apart before the matmul (the exporters' SDPA: q * sqrt(c) and
# kt * sqrt(c)): the factors join the attention's scale and the kernel reads the
# unscaled operands, kt through its permute, in one launch
cat >"$TMP/sdpa.yaml" <<'G'
format: fusec-graph/1
name: sdpa_scaled
inputs:
  q: {dtype: f32, shape: [2, 3, 20, 16]}
  k: {dtype: f32, shape: [2, 3, 20, 16]}
  v: {dtype: f32, shape: [2, 3, 20, 16]}
ops:
  - {op: permute, in: [k], out: kt, axes: [0, 1, 3, 2]}
  - {op: mul_scalar, in: [q], out: qs, scalar: 0.5}
  - {op: div_scalar, in: [kt], out: ks, scalar: 4}
  - {op: matmul, in: [qs, ks], out: s}
  - {op: max_dim, in: [s], out: m, axis: -1}
  - {op: sub, in: [s, m], out: d}
  - {op: exp, in: [d], out: e}
  - {op: sum, in: [e], out: l, axis: -1}
  - {op: div, in: [e, l], out: p}
  - {op: matmul, in: [p, v], out: y}
outputs: [y]
G
check attf_sdpa 0 "$FUSEC" explain "$TMP/sdpa.yaml" --attention fuse
contains attf_sdpa_fused "$TMP/out" "attention: 1 fused"
check attf_sdpa_ref 0 "$FUSEC" run "$TMP/sdpa.yaml" --seed 2 --outputs "$TMP/sd.ref" --attention keep
check attf_sdpa_cpu 0 "$FUSEC" run "$TMP/sdpa.yaml" --backend cpu --seed 2 --outputs "$TMP/sd.cpu" --attention fuse
same_npy attf_sdpa_same "$TMP/sd.ref" "$TMP/sd.cpu" 1e-5
sed -e 's/f32/bf16/g' -e 's/name: sdpa_scaled/name: sdpa_bf16/' "$TMP/sdpa.yaml" >"$TMP/sdpa_bf16.yaml"
check attf_sdpa_bf16 0 "$FUSEC" run "$TMP/sdpa_bf16.yaml" --backend cpu --seed 2 --check
contains attf_sdpa_bf16_ok "$TMP/out" "check y: "
check attf_sdpa_bf16_ok2 1 grep -q "FAIL\|not ok" "$TMP/out"
check attf_sdpa_compile 0 "$FUSEC" compile "$TMP/sdpa_bf16.yaml" --no-cache -o "$TMP/sdb"
contains attf_sdpa_one_launch "$TMP/err" "compiled sdpa_bf16: 2 ops → 1 launch"
# the same factor on the scores stays where it was: both are taken, one scale
sed -e 's/  - {op: matmul, in: \[qs, ks\], out: s}/  - {op: matmul, in: [qs, ks], out: s0}\n  - {op: mul_scalar, in: [s0], out: s, scalar: 2}/' \
	"$TMP/sdpa.yaml" >"$TMP/sdpa3.yaml"
check attf_sdpa3_ref 0 "$FUSEC" run "$TMP/sdpa3.yaml" --seed 2 --outputs "$TMP/sd3.ref" --attention keep
check attf_sdpa3_cpu 0 "$FUSEC" run "$TMP/sdpa3.yaml" --backend cpu --seed 2 --outputs "$TMP/sd3.cpu" --attention fuse
same_npy attf_sdpa3_same "$TMP/sd3.ref" "$TMP/sd3.cpu" 1e-5
check attf_sdpa3_compile 0 "$FUSEC" compile "$TMP/sdpa3.yaml" --attention fuse --no-cache -o "$TMP/sd3"
contains attf_sdpa3_one_launch "$TMP/err" "compiled sdpa_scaled: 2 ops → 1 launch"

# ---- the flash kernel (codegen/matmul_attention.c) ----
# the check graphs: head dims 24/40, 100/128, 64/64 and 128/72, keys 45 to 333 (one
# to six steps, edges), rows 37 to 300, batch broadcast, with and without a bias, a
# bool mask, causal (c5: c = 0, three row tiles walking 2, 4 and 5 of 5 key tiles;
# c6: c = 100 with a bias, the rows' last keys inside tiles);
# on sm_90a (the default) the rule picks attwg128x64d64 or attwg128x128d128pp per
# op (wgmma, 64 or 128 keys a step, P in registers on the GPU; pp: the warpgroups
# out of step, three K/V buffers, which the cpu backend runs too), on sm_80 and sm_90
# att128x64d64 or d128 (mma.sync, 64 keys a step); att128x64d128 forced takes them
# all, and so do attwg128x64d128 (wgmma, 64 keys a step, two buffers) and
# attwg128x64d128pp
AC=tests/bench/gpu/att_check
for t in bf16 f16; do
	check att-k-$t 0 "$FUSEC" run $AC"_$t.json" --backend cpu --check
	grep -c " ok$" "$TMP/out" >"$TMP/n"
	same att-k-$t-ok "$TMP/n" 7
	check att-k-$t-d128 0 env FUSEC_MATMUL_TILES=att128x64d128 "$FUSEC" run $AC"_$t.json" --backend cpu --check
	grep -c " ok$" "$TMP/out" >"$TMP/n"
	same att-k-$t-d128-ok "$TMP/n" 7
done
check att-k-wg64 0 env FUSEC_MATMUL_TILES=attwg128x64d128 "$FUSEC" run $AC"_bf16.json" --backend cpu --check
grep -c " ok$" "$TMP/out" >"$TMP/n"
same att-k-wg64-ok "$TMP/n" 7
check att-k-pp64 0 env FUSEC_MATMUL_TILES=attwg128x64d128pp "$FUSEC" run $AC"_f16.json" --backend cpu --check
grep -c " ok$" "$TMP/out" >"$TMP/n"
same att-k-pp64-ok "$TMP/n" 7
# the out-of-step kernel on the GPU: mbarriers a buffer, cp.async arriving on
# them, the turns on named barriers 2 and 3, no register-numbered barrier
check att-k-compile-pp 0 env FUSEC_MATMUL_TILES=attwg128x64d128pp "$FUSEC" compile $AC"_bf16.json" --no-cache -o "$TMP/akp"
cat "$TMP"/akp/*.ptx >"$TMP/akp.ptx"
contains att-k-pp-arrive "$TMP/akp.ptx" "cp.async.mbarrier.arrive.noinc.shared::cta.b64"
contains att-k-pp-turn2 "$TMP/akp.ptx" "bar.sync 2, 256;"
contains att-k-pp-turn3 "$TMP/akp.ptx" "bar.arrive 3, 256;"
contains att-k-pp-wait "$TMP/akp.ptx" "mbarrier.try_wait.parity.shared::cta.b64"
# ppt (the pp kernels with K and V by TMA, forced): one thread copies each key
# tile's panels by cp.async.bulk.tensor onto full[], which counts its one arrival
# and the bytes (mbarrier.arrive.expect_tx); the cpu backend runs them as pp.
# att_tma has what the maps describe: grouped heads (c0, c2: the maps hold K and V's
# own heads, the copies divide the head), a dense kt (c0), heads as views of
# [B, N, H, D] (c1, causal), a head dim of 72 (c2: a second panel past the dim)
AT=tests/bench/gpu/att_tma_bf16.json
for c in attwg128x128d128ppt attwg128x64d64ppt; do
	check att-$c 0 env FUSEC_MATMUL_TILES=$c "$FUSEC" run $AT --backend cpu --check
	grep -c " ok$" "$TMP/out" >"$TMP/n"
	same att-$c-ok "$TMP/n" 3
done
for c in attwg128x128d128ppt attwg128x64d128ppt attwg128x128d64ppt attwg128x64d64ppt; do
	check att-$c-compile 0 env FUSEC_MATMUL_TILES=$c "$FUSEC" compile $AT --no-cache -o "$TMP/tm_$c"
	contains att-$c-bulk "$TMP/tm_$c/att_tma_bf16.ptx" "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
	contains att-$c-expect "$TMP/tm_$c/att_tma_bf16.ptx" "mbarrier.arrive.expect_tx.shared::cta.b64"
	if [ -x "$PTXAS" ]; then
		check att-$c-ptxas 0 "$PTXAS" -arch=sm_90a "$TMP/tm_$c/att_tma_bf16.ptx" -o "$TMP/ap.cubin"
	fi
done
# the maps: K's and V's own (c0's kt dense, 2 heads of 4), 128-byte panels of the
# tile's keys (or head dims, kt dense) as the box; the d64 configurations take the
# attentions of head dim 64 alone (c1 and c2 then the rule's, d128ppt); where a map cannot
# describe an operand (att_check: rows of 45 to 333 keys, not whole 16 bytes) the
# forced ppt runs pp
check att-ppt-maps 0 "$(npy_python)" -c '
import json, sys
def plan(c):
    return json.load(open(sys.argv[1] + "/tm_" + c + "/att_tma_bf16.plan.json"))
p = plan("attwg128x128d128ppt")
t = [k["tiles"] for k in p["kernels"] if "tiles" in k]
assert t == ["attwg128x128d128ppt"] * 3, t
s = json.dumps(p)
assert "{\"tmap\": {\"tensor\": \"c0_kt\", \"dims\": [136, 64, 2, 2], \"strides\": [272, 17408, 34816], \"box\": [64, 128, 1, 1]}}" in s, s[:2000]
assert "{\"tmap\": {\"tensor\": \"c1_k\", \"dims\": [128, 200, 3], \"strides\": [768, 256], \"box\": [64, 128, 1]}}" in s
assert "{\"tmap\": {\"tensor\": \"c2_v\", \"dims\": [72, 264, 3], \"strides\": [144, 38016], \"box\": [64, 128, 1]}}" in s
t = [k["tiles"] for k in plan("attwg128x64d64ppt")["kernels"] if "tiles" in k]
assert t == ["attwg128x64d64ppt", "attwg128x128d128ppt", "attwg128x128d128ppt"], t
' "$TMP"
check att-ppt-refused 0 env FUSEC_MATMUL_TILES=attwg128x128d128ppt "$FUSEC" compile $AC"_f16.json" --no-cache -o "$TMP/tmr"
check att-ppt-refused-tiles 0 "$(npy_python)" -c '
import json, sys
t = [k["tiles"] for k in json.load(open(sys.argv[1]))["kernels"] if "tiles" in k]
assert "attwg128x128d128ppt" not in t and "attwg128x128d128pp" in t, t
' "$TMP/tmr/att_check_f16.plan.json"
# the rule takes ppt for head dims past 64 where the maps describe K and V (c1,
# c2), the in-step attwg128x64d64 up to 64 (c0); att_check keeps pp (above)
check att-ppt-rule 0 "$FUSEC" compile $AT --no-cache -o "$TMP/tmrule"
check att-ppt-rule-tiles 0 "$(npy_python)" -c '
import json, sys
t = sorted(k["tiles"] for k in json.load(open(sys.argv[1]))["kernels"] if "tiles" in k)
assert t == ["attwg128x128d128ppt"] * 2 + ["attwg128x64d64"], t
' "$TMP/tmrule/att_tma_bf16.plan.json"
# the runtime encodes the two maps a launch over its K and V buffers (fakecuda
# records them; its launch then fails, exit 3)
rm -f "$TMP/tm.trace"
check att-ppt-encode 3 env FUSEC_LIBCUDA="$(dirname "$FUSEC")/tests/fakecuda.so" FUSEC_NO_GRAPH=1 \
	FAKECUDA_TRACE="$TMP/tm.trace" "$(dirname "$FUSEC")/fusec-run" "$TMP/tm_attwg128x128d128ppt"
contains att-ppt-encode-maps "$TMP/tm.trace" "tmap(buf1+0;136/64x64/128x2/1x2/1),tmap(buf2+0;64/64x136/128x2/1x2/1)"
check att-k-compile 0 "$FUSEC" compile $AC"_bf16.json" --no-cache -o "$TMP/ak"
check att-k-compile-90 0 "$FUSEC" compile $AC"_bf16.json" --arch sm_90 --no-cache -o "$TMP/ak90"
check att-k-compile-wg64 0 env FUSEC_MATMUL_TILES=attwg128x64d128 "$FUSEC" compile $AC"_bf16.json" --no-cache -o "$TMP/akw"
check att-k-variants 0 "$(npy_python)" -c '
import json, sys
def tiles(f):
    return sorted(k["tiles"] for k in json.load(open(f))["kernels"])
v = tiles(sys.argv[1])
assert v == ["attwg128x128d128pp"] * 3 + ["attwg128x64d64"] * 4, v
v = tiles(sys.argv[2])
assert v == ["att128x64d128"] * 3 + ["att128x64d64"] * 4, v
v = tiles(sys.argv[3])
assert v == ["attwg128x64d128"] * 7, v
' "$TMP/ak/att_check_bf16.plan.json" "$TMP/ak90/att_check_bf16.plan.json" "$TMP/akw/att_check_bf16.plan.json"
# q, kt and v through the exporters' head-split views: the attention kernel reads
# all three in place (passes/views.c sinks a third view in front of an attention
# op), so each attention is one launch and no permute runs beside it
# c0's heads merged back by a permute the attention kernel writes through
# (passes/fuser_matmul.c, codegen/matmul_epilogue.c); c2's output is a graph output
# too, so its permute saves nothing fused and runs apart
for t in bf16 f16; do
	check att-views-$t 0 "$FUSEC" run tests/bench/gpu/att_views_$t.json --backend cpu --check
	grep -c " ok$" "$TMP/out" >"$TMP/n"
	same att-views-$t-ok "$TMP/n" 4
done
check att-views-compile 0 "$FUSEC" compile tests/bench/gpu/att_views_bf16.json --no-cache -o "$TMP/av"
contains att-views-one-launch "$TMP/err" "compiled att_views_bf16: 14 ops → 4 launches"
# every attention on the flash kernel, c0's with its permute too (not the evaluator)
grep -o '"tiles":"attwg128x64d64"' "$TMP/av/att_views_bf16.plan.json" | wc -l | tr -d ' ' >"$TMP/n"
same att-merge-tiles "$TMP/n" 3
check att-merge-explain 0 "$FUSEC" explain tests/bench/gpu/att_views_bf16.json
grep -A3 "^op 3 " "$TMP/out" >"$TMP/ex3"
contains att-merge-fused "$TMP/ex3" "fused Matmul (score=100, 2 ops)"
grep -A3 "^op 4 " "$TMP/out" >"$TMP/ex4"
contains att-merge-permute "$TMP/ex4" "fused Matmul"
# under --burn-exact the attention takes nothing after it
check att-merge-burn 0 "$FUSEC" compile tests/bench/gpu/att_views_bf16.json --burn-exact --no-cache -o "$TMP/avb"
contains att-merge-burn-launches "$TMP/err" "compiled att_views_bf16: 14 ops → 5 launches"
# f32 and head dims past 128 run on the plain evaluator
sed 's/"bf16"/"f32"/g' $AC"_bf16.json" >"$TMP/ac32.json"
# (the plain evaluator's loops run long: the default build, not the tests' quick one)
check att-k-f32 0 env FUSEC_CPU_QUICK=0 "$FUSEC" run "$TMP/ac32.json" --backend cpu --check
contains att-k-f32-ok "$TMP/out" "check c1_y: "
# f32 under --allow-tf32: the flash kernel on tf32 mma.sync (P rounded to tf32),
# head dims past 64 only on sm_90 (their stages need its shared memory)
check att-k-tf32 0 "$FUSEC" run "$TMP/ac32.json" --backend cpu --check --allow-tf32
grep -c " ok$" "$TMP/out" >"$TMP/n"
same att-k-tf32-ok "$TMP/n" 7
for a in sm_90a sm_80; do
	check att-k-tf32-$a 0 "$FUSEC" compile "$TMP/ac32.json" --allow-tf32 --arch $a --no-cache -o "$TMP/at_$a"
	grep -o '"tiles":"att[a-z0-9]*"' "$TMP/at_$a/att_check_bf16.plan.json" | sort | uniq -c | tr -s ' ' >"$TMP/n"
done
same att-k-tf32-tiles-sm_80 "$TMP/n" " 4 \"tiles\":\"att128x64d64t\""
grep -o '"tiles":"att[a-z0-9]*"' "$TMP/at_sm_90a/att_check_bf16.plan.json" | sort | uniq -c | tr -s ' ' >"$TMP/n"
same att-k-tf32-tiles-sm_90a-all "$TMP/n" " 3 \"tiles\":\"att128x64d128t\"
 4 \"tiles\":\"att128x64d64t\""
# head dims up to 256 (16-bit): att128x64d256 on sm_90 (208 KB of stages), the plain
# evaluator elsewhere; a second op causal (tests/bench/gpu/att_wide_bf16.json)
check att-wide-cpu 0 "$FUSEC" run tests/bench/gpu/att_wide_bf16.json --backend cpu --check
grep -c " ok$" "$TMP/out" >"$TMP/n"
same att-wide-cpu-ok "$TMP/n" 2
check att-wide-90 0 "$FUSEC" compile tests/bench/gpu/att_wide_bf16.json --arch sm_90a --no-cache -o "$TMP/aw90"
grep -o '"tiles":"att128x64d256"' "$TMP/aw90/att_wide_bf16.plan.json" | wc -l | tr -d ' ' >"$TMP/n"
same att-wide-90-tiles "$TMP/n" 2
check att-wide-80 0 "$FUSEC" compile tests/bench/gpu/att_wide_bf16.json --arch sm_80 --no-cache -o "$TMP/aw80"
check att-wide-80-plain 1 grep -q '"tiles":"att' "$TMP/aw80/att_wide_bf16.plan.json"
# the chain written out, fused, against the interpreter of the graph as written
check att-k-pattern 0 "$FUSEC" run tests/bench/gpu/att_pattern_bf16.json --backend cpu --seed 3 --attention fuse --outputs "$TMP/ap.got"
check att-k-pattern-ref 0 "$FUSEC" run tests/bench/gpu/att_pattern_bf16.json --backend interp --seed 3 --outputs "$TMP/ap.ref" --attention keep
same_npy att-k-pattern-same "$TMP/ap.ref" "$TMP/ap.got" 2e-2
# ptxas takes both configurations (when the CUDA toolkit is here)
PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
if [ -x "$PTXAS" ]; then
	for a in sm_90a sm_80; do
		check att-ptx-$a 0 "$FUSEC" compile $AC"_f16.json" --arch $a --no-cache -o "$TMP/ap_$a"
		check att-ptxas-$a 0 "$PTXAS" -arch=$a "$TMP/ap_$a/att_check_f16.ptx" -o "$TMP/ap.cubin"
		check att-ptxas-tf32-$a 0 "$PTXAS" -arch=$a "$TMP/at_$a/att_check_bf16.ptx" -o "$TMP/ap.cubin"
	done
	check att-ptxas-wide 0 "$PTXAS" -arch=sm_90a "$TMP/aw90/att_wide_bf16.ptx" -o "$TMP/ap.cubin"
	# the mma.sync kernels sm_90 runs, and wgmma with 64 keys a step
	check att-ptxas-sm_90 0 "$PTXAS" -arch=sm_90 "$TMP/ak90/att_check_bf16.ptx" -o "$TMP/ap.cubin"
	check att-ptxas-wg64 0 "$PTXAS" -arch=sm_90a "$TMP/akw/att_check_bf16.ptx" -o "$TMP/ap.cubin"
	check att-ptxas-pp64 0 "$PTXAS" -arch=sm_90a "$TMP/akp/att_check_bf16.ptx" -o "$TMP/ap.cubin"
	# the rule's kernels (out of step) use named barriers 0, 2 and 3 only
	check att-ptxas-pp-v 0 "$PTXAS" -v -arch=sm_90a "$TMP/ak/att_check_bf16.ptx" -o "$TMP/ap.cubin"
	contains att-ptxas-pp-bars "$TMP/err" "used 4 barriers"
	# the K and V copies' addresses are not held through the key loop
	# (Mm.opaque_copy): no kernel of the check graph spills more than 256 bytes
	# (up to 1120 when they were)
	cp "$TMP/err" "$TMP/spills"
	check att-spills 0 awk '/spill stores/ { n++; if ($5 > 256) bad = 1 } END { exit bad || n < 7 }' "$TMP/spills"
	# the rule's wgmma kernels: their products on wgmma, P from registers
	grep -c "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {[^}]*}, {" "$TMP/ap_sm_90a/att_check_f16.ptx" >"$TMP/n"
	check att-wg-regs-a 1 grep -qx 0 "$TMP/n"
fi
# the softmax's weights cast to f32 and back (Llama's export in bf16) are taken in
cat >"$TMP/castp.yaml" <<'G'
format: fusec-graph/1
name: castp
inputs:
  q: {dtype: bf16, shape: [2, 37, 16]}
  kt: {dtype: bf16, shape: [2, 16, 70]}
  v: {dtype: bf16, shape: [2, 70, 24]}
ops:
  - {op: matmul, in: [q, kt], out: s}
  - {op: mul_scalar, in: [s], out: s1, scalar: 0.25}
  - {op: max_dim, in: [s1], out: m, axis: 2}
  - {op: sub, in: [s1, m], out: d}
  - {op: exp, in: [d], out: e}
  - {op: sum, in: [e], out: l, axis: 2}
  - {op: div, in: [e, l], out: p}
  - {op: cast, in: [p], out: p32, dtype: f32}
  - {op: cast, in: [p32], out: p16, dtype: bf16}
  - {op: matmul, in: [p16, v], out: y}
outputs: [y]
G
check attf_cast 0 "$FUSEC" explain "$TMP/castp.yaml" --attention fuse
contains attf_cast_fused "$TMP/out" "attention: 1 fused"
check attf_cast_ref 0 "$FUSEC" run "$TMP/castp.yaml" --seed 6 --outputs "$TMP/cp.ref" --attention keep
check attf_cast_cpu 0 "$FUSEC" run "$TMP/castp.yaml" --backend cpu --seed 6 --outputs "$TMP/cp.cpu" --attention fuse
same_npy attf_cast_same "$TMP/cp.ref" "$TMP/cp.cpu" 2e-2
# a cast through a narrower dtype is not the identity: the chain stays apart
sed 's/out: p32, dtype: f32/out: p32, dtype: f16/; s/p32: /p32x: /' "$TMP/castp.yaml" >"$TMP/castn.yaml"
check attf_castn 0 "$FUSEC" explain "$TMP/castn.yaml" --attention fuse
contains attf_castn_apart "$TMP/out" "attention: the matmul after a softmax stays apart"
# --burn-exact searches as burn does: no attention op unless --attention fuse says
check attf_burn 0 "$FUSEC" explain tests/onnx/models/bert/model.onnx --burn-exact
grep -c "^op .* Float::Attention" "$TMP/out" >"$TMP/n"
same attf_burn_ops "$TMP/n" 0
check attf_burn_fuse 0 "$FUSEC" explain tests/onnx/models/bert/model.onnx --burn-exact --attention fuse
contains attf_burn_fuse_on "$TMP/out" "attention: 2 fused"
# import writes the model's ops as they are, attention included
check attf_import_keeps 0 "$FUSEC" import tests/onnx/models/bert/model.onnx -o "$TMP/bi.json"
check attf_import_no_op 1 grep -q '"attention"' "$TMP/bi.json"

# ---- causal: the attribute, and a constant mask that becomes it ----
# the attribute in a graph file: read, shown by normalize, written back by import
sed 's/scalar: 0.2}/scalar: 0.2, causal: 3}/' "$TMP/att.yaml" >"$TMP/attc.yaml"
check causal-normalize 0 "$FUSEC" normalize "$TMP/attc.yaml"
contains causal-normalize-shown "$TMP/out" ", causal=3)"
check causal-import 0 "$FUSEC" import "$TMP/attc.yaml" -o "$TMP/attc.json"
contains causal-import-kept "$TMP/attc.json" '"causal": 3'
check causal-import-none 0 "$FUSEC" import "$TMP/att.yaml" -o "$TMP/attn.json"
check causal-import-none-absent 1 grep -q causal "$TMP/attn.json"
sed 's/scalar: 0.2}/scalar: 0.2, causal: -1}/' "$TMP/att.yaml" >"$TMP/attc_bad.yaml"
check causal-negative 1 "$FUSEC" compile "$TMP/attc_bad.yaml" -o "$TMP/bad"
contains causal-negative-msg "$TMP/err" "causal: expected a non-negative integer, got -1"
# its meaning: keys j > i + 3 of row i are -inf (the interpreter against numpy)
mkdir -p "$TMP/attc.want"
check causal-numpy-want 0 "$(npy_python)" -c '
import sys, numpy as np
d, w = sys.argv[1], sys.argv[2]
q, kt, v, b = (np.load(f"{d}/{n}.npy").astype(np.float64) for n in ("q", "kt", "v", "bias"))
s = 0.2 * (q @ kt) + b
i, j = np.indices(s.shape[-2:])
s = np.where(j > i + 3, -np.inf, s)
p = np.exp(s - s.max(-1, keepdims=True))
np.save(f"{w}/y.npy", (p / p.sum(-1, keepdims=True)) @ v)
' "$TMP/att.in" "$TMP/attc.want"
check causal-interp 0 "$FUSEC" run "$TMP/attc.yaml" --inputs "$TMP/att.in" --outputs "$TMP/attc.got"
same_npy causal-interp-numpy "$TMP/attc.want" "$TMP/attc.got" 1e-6
# f32: the plain evaluator; bf16 and f16: the flash kernel (more cases in the check
# graphs above: c5 and c6)
for p in f32 bf16 f16; do
	opt=; [ $p = f32 ] || opt="--precision $p"
	check causal-cpu-$p 0 "$FUSEC" run "$TMP/attc.yaml" --backend cpu --check $opt
	contains causal-cpu-$p-ok "$TMP/out" "check y: "
done
# the chain as exporters write it, with a constant mask: causal masks (with an
# offset, as after a cache) become the attribute, also with a finite hiding value
# at most -1e30 (-3e38: finite in bf16); other masks stay masks
check causal-gen 0 "$(npy_python)" -c '
import json, os, sys, numpy as np
d = sys.argv[1]
os.makedirs(f"{d}/cz.data", exist_ok=True)
i, j = np.indices((200, 260))
def graph(name, hide, kind, fill="-inf"):
    np.save(f"{d}/cz.data/{name}.npy", hide.reshape(1, 1, 200, 260))
    ins = {"q": {"dtype": "bf16", "shape": [2, 2, 200, 40]},
           "kt": {"dtype": "bf16", "shape": [2, 2, 40, 260]},
           "v": {"dtype": "bf16", "shape": [2, 2, 260, 48]}}
    cs = {"m": {"dtype": "bool" if kind == "mask" else "bf16", "shape": [1, 1, 200, 260],
                "npy": f"cz.data/{name}.npy"},
          "f": {"dtype": "bf16", "shape": [1, 1, 1, 1], "data": [fill]}}
    ops = [{"op": "matmul", "in": ["q", "kt"], "out": "s0"},
           {"op": "mul_scalar", "in": ["s0"], "out": "s1", "scalar": 0.15},
           {"op": "where", "in": ["m", "f", "s1"], "out": "x"} if kind == "mask" else
           {"op": "add", "in": ["s1", "m"], "out": "x"},
           {"op": "max_dim", "in": ["x"], "out": "mx", "axis": 3},
           {"op": "sub", "in": ["x", "mx"], "out": "dx"},
           {"op": "exp", "in": ["dx"], "out": "e"},
           {"op": "sum", "in": ["e"], "out": "l", "axis": 3},
           {"op": "div", "in": ["e", "l"], "out": "p"},
           {"op": "matmul", "in": ["p", "v"], "out": "y"}]
    if kind != "mask":
        del cs["f"]
    json.dump({"format": "fusec-graph/1", "name": name, "inputs": ins, "constants": cs,
               "ops": ops, "outputs": ["y"]}, open(f"{d}/{name}.json", "w"))
causal = j > i + 60
graph("cz_mask", causal, "mask")
graph("cz_bias", np.where(causal, -np.inf, 0).astype(np.float32), "bias")
graph("cz_minbias", np.where(causal, -3e38, 0).astype(np.float32), "bias")
graph("cz_minfill", causal, "mask", fill=-3e38)
other = causal.copy(); other[5, 3] = True
graph("cz_other", other, "mask")
graph("cz_fill", causal, "mask", fill=-1e4)
graph("cz_row0", j > i - 1, "mask")
' "$TMP"
for g in cz_mask cz_bias cz_minbias cz_minfill; do
	check causal-$g-explain 0 "$FUSEC" explain "$TMP/$g.json"
	contains causal-$g-taken "$TMP/out" "attention: 1 of them causal"
	check causal-$g-norm 0 "$FUSEC" normalize "$TMP/$g.json"
	contains causal-$g-attr "$TMP/out" ", causal=60)"
	check causal-$g-ref 0 "$FUSEC" run "$TMP/$g.json" --backend interp --seed 5 --outputs "$TMP/$g.ref" --attention keep
	check causal-$g-cpu 0 "$FUSEC" run "$TMP/$g.json" --backend cpu --seed 5 --outputs "$TMP/$g.cpu"
	same_npy causal-$g-same "$TMP/$g.ref" "$TMP/$g.cpu" 2e-2
done
# fused, the mask kept: a mask that is not a diagonal, a fill above -1e30, a row
# with no key
for g in cz_other cz_fill cz_row0; do
	check causal-$g-explain 0 "$FUSEC" explain "$TMP/$g.json"
	contains causal-$g-fused "$TMP/out" "attention: 1 fused"
	check causal-$g-kept 1 grep -q "of them causal" "$TMP/out"
done
check causal-other-ref 0 "$FUSEC" run "$TMP/cz_other.json" --backend interp --seed 5 --outputs "$TMP/co.ref" --attention keep
check causal-other-cpu 0 "$FUSEC" run "$TMP/cz_other.json" --backend cpu --seed 5 --outputs "$TMP/co.cpu"
same_npy causal-other-same "$TMP/co.ref" "$TMP/co.cpu" 2e-2
# an f32 chain of head dim 80 stays apart under --allow-tf32, and says why
sed 's/"bf16"/"f32"/g; s/\[2, 2, 200, 40\]/[2, 2, 200, 80]/; s/\[2, 2, 40, 260\]/[2, 2, 80, 260]/' \
	"$TMP/cz_other.json" >"$TMP/cz_wide.json"
check causal-wide-tf32 0 "$FUSEC" explain "$TMP/cz_wide.json" --allow-tf32
contains causal-wide-tf32-why "$TMP/out" "its head dims pass 64, past the tf32 kernel's on every arch"
# explain --json counts them
check causal-json 0 "$FUSEC" explain "$TMP/cz_mask.json" --json
cp "$TMP/out" "$TMP/cz.explain.json"
check causal-json-count 0 python3 -c 'import json, sys; a = json.load(open(sys.argv[1]))["attention"]; assert (a["fused"], a["causal"]) == (1, 1), a' "$TMP/cz.explain.json"
# the exporters' causal masks in the fixtures (GPT-2, Llama: 16 positions)
for m in gpt2 llama; do
	check causal-$m 0 "$FUSEC" explain tests/onnx/models/$m/model.onnx --precision bf16
	contains causal-$m-taken "$TMP/out" "attention: 2 of them causal"
done
