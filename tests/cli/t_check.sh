# t_check.sh: `fusec run --check` on the cpu backend (docs/tolerances.md): half
# precision MLPs whose tiled matmul keeps its result in f32 for the epilogue while
# the reference rounds it pass; the ONNX transformer fixtures pass with every
# element bounded, in f32 and (GPT-2, Llama, BERT with a real attention mask) in
# bf16; an output with an element that has no bound is `not checked`, exit 4,
# never ok.

# the MLP of issue 27: matmul, bias, gelu, matmul, bias at 16x256x1024x256
mlp() {
	cat <<EOF
format: fusec-graph/1
inputs:
  x: {dtype: $1, shape: [16, 256]}
  w1: {dtype: $1, shape: [256, 1024]}
  b1: {dtype: $1, shape: [1, 1024]}
  w2: {dtype: $1, shape: [1024, 256]}
  b2: {dtype: $1, shape: [1, 256]}
ops:
  - {op: matmul, in: [x, w1], out: h}
  - {op: add, in: [h, b1], out: hb}
$2
  - {op: matmul, in: [$3, w2], out: o}
  - {op: add, in: [o, b2], out: y}
outputs: [y]
EOF
}
mlp bf16 "  - {op: gelu, in: [hb], out: a}" a >"$TMP/mlp_bf16.yaml"
mlp f16 "" hb >"$TMP/mm_f16.yaml"
for seed in 0 1 2 3; do
	check "check-mlp-bf16-$seed" 0 "$FUSEC" run "$TMP/mlp_bf16.yaml" --backend cpu --check \
		--seed $seed &&
		contains "check-mlp-bf16-$seed-ok" "$TMP/out" " ok"
done
check check-mm-f16 0 "$FUSEC" run "$TMP/mm_f16.yaml" --backend cpu --check &&
	contains check-mm-f16-ok "$TMP/out" " ok"

# sqrt(sum([1, 2^-30]) - 1): the reference stores the sum as 1, so sqrt sees 0
# with an error that reaches below 0, where sqrt has no value: not bounded
cat >"$TMP/nobound.yaml" <<'EOF'
format: fusec-graph/1
inputs:
  a: {dtype: f32, shape: [2]}
constants:
  x: {dtype: f32, shape: [2], data: [1, 9.313225746154785e-10]}
ops:
  - {op: sum, in: [x], axis: 0, out: s}
  - {op: sub_scalar, in: [s], scalar: 1, out: d}
  - {op: sqrt, in: [d], out: y}
  - {op: neg, in: [a], out: z}
outputs: [y, z]
EOF
for b in cpu interp; do
	check "check-not-checked-$b" 4 "$FUSEC" run "$TMP/nobound.yaml" --backend $b --check &&
		contains "check-not-checked-$b-line" "$TMP/out" "unbounded=1 not checked" &&
		contains "check-not-checked-$b-other" "$TMP/out" "check z: max_abs=0 max_err/bound=0 ok"
done
# a flat tolerance bounds every element
check check-not-checked-atol 0 "$FUSEC" run "$TMP/nobound.yaml" --backend cpu --check --atol 0
check check-usage-exit4 0 sh -c '"$1" run --help | grep -q "4 (--check) no failure but some output not checked"' sh "$FUSEC"

# the transformer fixtures, f32, random inputs
for m in bert gpt2 llama vit2; do
	check "check-$m" 0 "$FUSEC" run tests/onnx/models/$m/model.onnx --backend cpu --check &&
		contains "check-$m-ok" "$TMP/out" " ok" &&
		check "check-$m-bounded" 1 grep -q "unbounded\|not checked\|FAIL" "$TMP/out"
done

# bf16 twins of the fixtures: every f32 of the imported graph made bf16
i64s() {   # i64s N V...: a <i8 .npy of shape (1, N)
	n=$1; shift
	printf '\223NUMPY\001\000\166\000'
	printf "%-117s\n" "{'descr': '<i8', 'fortran_order': False, 'shape': (1, $n), }"
	for v in "$@"; do
		printf "\\$(printf %03o "$v")\\000\\000\\000\\000\\000\\000\\000"
	done
}
mkdir -p "$TMP/bert_in"
i64s 16 3 14 15 92 65 35 89 79 32 38 46 26 43 38 32 79 >"$TMP/bert_in/input_ids.npy"
i64s 16 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 >"$TMP/bert_in/attention_mask.npy"
for m in bert gpt2 llama; do
	check "check-$m-import" 0 "$FUSEC" import tests/onnx/models/$m/model.onnx -o "$TMP/$m.yaml" &&
		sed 's/"f32"/"bf16"/g' "$TMP/$m.yaml" >"$TMP/${m}_bf16.yaml"
done
check check-bert-bf16 0 "$FUSEC" run "$TMP/bert_bf16.yaml" --backend cpu --check \
	--inputs "$TMP/bert_in" &&
	check check-bert-bf16-bounded 1 grep -q "unbounded\|not checked\|FAIL" "$TMP/out"
for m in gpt2 llama; do
	check "check-$m-bf16" 0 "$FUSEC" run "$TMP/${m}_bf16.yaml" --backend cpu --check &&
		check "check-$m-bf16-bounded" 1 grep -q "unbounded\|not checked\|FAIL" "$TMP/out"
done
# BERT's random attention mask (integers in [-5, 5]) adds -10000·(1 - mask) to the
# scores: in bf16 whole rows of the softmax written out lose every bit, and the check
# says so; the attention op keeps its scores in f32, and its result is bounded
check check-bert-bf16-random-mask 4 "$FUSEC" run "$TMP/bert_bf16.yaml" --backend cpu --check \
	--attention keep &&
	contains check-bert-bf16-random-mask-line "$TMP/out" "unbounded=512 not checked"
check check-bert-bf16-random-mask-att 0 "$FUSEC" run "$TMP/bert_bf16.yaml" --backend cpu --check &&
	check check-bert-bf16-random-mask-att-ok 1 grep -q "unbounded\|not checked\|FAIL" "$TMP/out"

# the check's memory: an f32 graph's values carry one f64 bound each (64 Mi
# elements: a, y 256 MiB + 512 MiB each, then the copies of y and its bound); a
# bf16 graph's results also the bound's tight part (y: 512 MiB more, a none)
cat >"$TMP/big16.yaml" <<'EOF'
format: fusec-graph/1
inputs:
  a: {dtype: bf16, shape: [4096, 16384]}
ops:
  - {op: exp, in: [a], out: y}
outputs: [y]
EOF
sed 's/bf16/f32/' "$TMP/big16.yaml" >"$TMP/big32.yaml"
if sh -c "ulimit -v 1000000; exec '$FUSEC' --version" >/dev/null 2>&1; then
	check check-mem-f32 1 sh -c "ulimit -v 1000000; exec '$FUSEC' run '$TMP/big32.yaml' --backend cpu --check" &&
		contains check-mem-f32-msg "$TMP/err" "with --check's reference 2.5 GiB)"
	check check-mem-bf16 1 sh -c "ulimit -v 1000000; exec '$FUSEC' run '$TMP/big16.yaml' --backend cpu --check" &&
		contains check-mem-bf16-msg "$TMP/err" "with --check's reference 3.0 GiB)"
fi

# gelu of an f16 or bf16 result takes the short form (cg_math_gelu_half), and so do
# sigmoid, silu and gelu's tanh form (cg_math_act_half): every bf16 value (infinities
# and NaNs among them) and every f16 value but ±65504 (whose gelu bound overflows:
# `not checked`, as with the f32 form) through each, within its bound of the
# interpreter's
python3 - "$TMP/gh" <<'PY'
import os, struct, sys
d = sys.argv[1]
def npy(path, descr, data, n):
    hdr = "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }" % (descr, n)
    hdr += " " * ((64 - (11 + len(hdr)) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode() + data)
for t, descr, bits, pack in (("bf16", "<f4", range(65536), lambda i: struct.pack("<I", i << 16)),
                             ("f16", "<f2", [i for i in range(65536) if i & 0x7fff < 0x7bff],
                              lambda i: struct.pack("<H", i))):
    os.makedirs("%s/%s" % (d, t), exist_ok=True)
    npy("%s/%s/x.npy" % (d, t), descr, b"".join(pack(i) for i in bits), len(bits))
    with open("%s/%s.yaml" % (d, t), "w") as f:
        f.write("format: fusec-graph/1\ninputs:\n  x: {dtype: %s, shape: [%d]}\n"
                "ops:\n  - {op: gelu, in: [x], out: y}\n  - {op: sigmoid, in: [x], out: s}\n"
                "  - {op: silu, in: [x], out: l}\n"
                "  - {op: gelu, in: [x], out: g, approximate: tanh}\noutputs: [y, s, l, g]\n"
                % (t, len(bits)))
PY
for t in bf16 f16; do
	check "gelu-half-$t" 0 "$FUSEC" run "$TMP/gh/$t.yaml" --backend cpu --inputs "$TMP/gh/$t" --check
	grep -c " ok$" "$TMP/out" >"$TMP/n"
	same "gelu-half-$t-ok" "$TMP/n" 4
done
