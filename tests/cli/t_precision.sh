# t_precision.sh: `--precision bf16|f16` and `--keep-f32` (docs/precision.md): an
# f32 graph converted before the search. On the cpu backend `--check` holds every
# output element of the converted run to the original f32 graph's reference
# (docs/tolerances.md, "Reduced precision") and prints rel_l2; the weights file
# holds the converted bytes (half); inputs and outputs keep f32; --keep-f32 keeps
# a named op in f32; the plan, explain and the result cache know the conversion;
# bad values are errors. Faults under --precision: tests/unit/test_check.c.

# weights as .npy (<f4), and their bf16 / f16 bytes rounded to nearest even, made
# apart from fusec (Python's struct rounds 'e' to nearest even)
cat >"$TMP/npy.py" <<'EOF'
import random, struct, sys
def npy(path, shape, vals):
    hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (
        ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else ""))
    hdr += " " * (63 - (10 + len(hdr)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
        f.write(struct.pack("<%df" % len(vals), *vals))
def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]
def bf16(v):
    u = struct.unpack("<I", struct.pack("<f", v))[0]
    return struct.pack("<H", ((u + 0x7fff + ((u >> 16) & 1)) >> 16) & 0xffff)
def f16(v):
    return struct.pack("<e", v)
d, rng = sys.argv[1], random.Random(1)
shapes = {"w1": (256, 1024), "b1": (1, 1024), "w2": (1024, 256), "b2": (1, 256)}
out = {"bf16": open(d + "/w1.bf16", "wb"), "f16": open(d + "/w1.f16", "wb")}
for name, shape in shapes.items():
    n = shape[0] * shape[1]
    scale = 1 / (shape[0] ** 0.5) if name[0] == "w" else 0.1
    vals = [f32(rng.uniform(-scale, scale)) for _ in range(n)]
    npy("%s/%s.npy" % (d, name), shape, vals)
    if name == "w1":
        out["bf16"].write(b"".join(bf16(v) for v in vals))
        out["f16"].write(b"".join(f16(v) for v in vals))
EOF
mkdir -p "$TMP/m"
python3 "$TMP/npy.py" "$TMP/m"
# the MLP of issue 27 with constant weights: matmul, bias, gelu, matmul, bias
cat >"$TMP/m/mlp.yaml" <<'EOF'
format: fusec-graph/1
inputs:
  x: {dtype: f32, shape: [16, 256]}
constants:
  w1: {dtype: f32, shape: [256, 1024], npy: w1.npy}
  b1: {dtype: f32, shape: [1, 1024], npy: b1.npy}
  w2: {dtype: f32, shape: [1024, 256], npy: w2.npy}
  b2: {dtype: f32, shape: [1, 256], npy: b2.npy}
ops:
  - {op: matmul, in: [x, w1], out: h}
  - {op: add, in: [h, b1], out: hb}
  - {op: gelu, in: [hb], out: a}
  - {op: matmul, in: [a, w2], out: o, name: proj}
  - {op: add, in: [o, b2], out: y}
outputs: [y]
EOF
for p in bf16 f16; do
	for seed in 0 1; do
		check "prec-mlp-$p-$seed" 0 "$FUSEC" run "$TMP/m/mlp.yaml" --backend cpu --check \
			--precision $p --seed $seed &&
			contains "prec-mlp-$p-$seed-ok" "$TMP/out" " ok" &&
			contains "prec-mlp-$p-$seed-l2" "$TMP/out" " rel_l2=" &&
			check "prec-mlp-$p-$seed-bounded" 1 grep -q "unbounded\|not checked\|FAIL" "$TMP/out"
	done
	# the interpreter's values are the f32 graph's: the reference, with the bounds
	# of a converted run (what the GPU check reads)
	check "prec-mlp-$p-interp" 0 "$FUSEC" run "$TMP/m/mlp.yaml" --precision $p \
		--outputs "$TMP/ref_$p" &&
		check "prec-mlp-$p-interp-f32" 0 "$FUSEC" run "$TMP/m/mlp.yaml" --outputs "$TMP/ref32" &&
		same_files "prec-mlp-$p-interp-ref" "$TMP/ref32/y.npy" "$TMP/ref_$p/y.npy"
done
# without --precision nothing changes: no rel_l2
check prec-mlp-f32 0 "$FUSEC" run "$TMP/m/mlp.yaml" --backend cpu --check &&
	check prec-mlp-f32-no-l2 1 grep -q rel_l2 "$TMP/out"

# compile: the weights file holds the converted bytes, half the f32 file; the
# plan records the precision; inputs and outputs stay f32
check prec-compile-f32 0 "$FUSEC" compile "$TMP/m/mlp.yaml" -o "$TMP/c32" -q
for p in bf16 f16; do
	check "prec-compile-$p" 0 "$FUSEC" compile "$TMP/m/mlp.yaml" --precision $p -o "$TMP/c$p" -q &&
		contains "prec-plan-$p" "$TMP/c$p/mlp.plan.json" "\"precision\":\"$p\"" &&
		contains "prec-plan-$p-in" "$TMP/c$p/mlp.plan.json" \
			'{"name":"x","dtype":"f32","shape":[16,256],"role":"input"' &&
		contains "prec-plan-$p-out" "$TMP/c$p/mlp.plan.json" \
			'{"name":"y","dtype":"f32","shape":[16,256],"role":"output"' &&
		contains "prec-plan-$p-w1" "$TMP/c$p/mlp.plan.json" \
			"{\"name\":\"w1\",\"dtype\":\"$p\",\"shape\":[256,1024],\"role\":\"input\""
	s32=$(wc -c <"$TMP/c32/mlp.weights.bin")
	s16=$(wc -c <"$TMP/c$p/mlp.weights.bin")
	check "prec-weights-$p-half" 0 test "$s16" -eq $((s32 / 2))
	# w1 is the first constant: its bytes, rounded to nearest even
	head -c 524288 "$TMP/c$p/mlp.weights.bin" >"$TMP/w1.got"
	same_files "prec-weights-$p-bytes" "$TMP/m/w1.$p" "$TMP/w1.got"
done
check prec-plan-f32-none 1 grep -q '"precision"' "$TMP/c32/mlp.plan.json"

# --keep-f32 by op name: the second matmul and what follows stay f32; by op
# kind and by ops[N] the same; explain says which ops were kept
check prec-keep-name 0 "$FUSEC" compile "$TMP/m/mlp.yaml" --precision bf16 --keep-f32 proj \
	-o "$TMP/keep" -q &&
	contains prec-keep-name-o "$TMP/keep/mlp.plan.json" '{"name":"o","dtype":"f32"' &&
	contains prec-keep-name-a "$TMP/keep/mlp.plan.json" '{"name":"a:f32","dtype":"f32"' &&
	contains prec-keep-name-h "$TMP/keep/mlp.plan.json" '{"name":"h","dtype":"bf16"' &&
	contains prec-keep-name-list "$TMP/keep/mlp.plan.json" '"keep_f32":"proj"' &&
	contains prec-keep-name-w2 "$TMP/keep/mlp.plan.json" '{"name":"w2","dtype":"f32"' &&
	contains prec-keep-name-w1 "$TMP/keep/mlp.plan.json" '{"name":"w1","dtype":"bf16"'
check prec-keep-explain 0 "$FUSEC" explain "$TMP/m/mlp.yaml" --precision bf16 --keep-f32 proj &&
	contains prec-keep-explain-line "$TMP/out" "kept in f32: ops[5] 'proj' → o matmul" &&
	contains prec-keep-explain-head "$TMP/out" \
		"precision: bf16 (--precision): 3 ops compute in bf16, 1 kept in f32 (kept kinds sum,mean,prod,exp,log,log1p,pow,powf,pow_scalar; --keep-f32 proj), 1 in f32 after an f32 result; 2 casts inserted; 2 constants converted, 1052672 -> 526336 bytes"
check prec-keep-kind 0 "$FUSEC" run "$TMP/m/mlp.yaml" --backend cpu --check --precision bf16 \
	--keep-f32 gelu,ops[0] &&
	contains prec-keep-kind-ok "$TMP/out" " ok"
check prec-keep-explain-kind 0 "$FUSEC" explain "$TMP/m/mlp.yaml" --precision bf16 --keep-f32=gelu &&
	contains prec-keep-explain-kind-line "$TMP/out" "kept in f32: ops[4] → a gelu"
check prec-keep-glob 0 "$FUSEC" explain "$TMP/m/mlp.yaml" --precision f16 --keep-f32 'pr*' &&
	contains prec-keep-glob-line "$TMP/out" "kept in f32: ops[5] 'proj' → o matmul"

# layer norm, then a matmul and a softmax over its rows: means, the sum and exp stay
# f32 by default, what reads them follows; every element bounded
cat >"$TMP/ln.yaml" <<'EOF'
format: fusec-graph/1
inputs:
  x: {dtype: f32, shape: [64, 768]}
constants:
  g: {dtype: f32, shape: [1, 4], data: [1.5, 0.5, -1, 2]}
  b: {dtype: f32, shape: [1, 4], data: [0.1, 0.2, 0.3, 0.4]}
  eps: {dtype: f32, shape: [1, 1], data: [1e-12]}
ops:
  - {op: reshape, in: [x], shape: [64, 192, 4], out: x3}
  - {op: reshape, in: [x3], shape: [64, 768], out: xr}
  - {op: mean, in: [xr], axis: 1, out: mu}
  - {op: sub, in: [xr, mu], out: xc}
  - {op: mul, in: [xc, xc], out: sq}
  - {op: mean, in: [sq], axis: 1, out: var}
  - {op: add, in: [var, eps], out: ve}
  - {op: sqrt, in: [ve], out: sd}
  - {op: div, in: [xc, sd], out: xn}
  - {op: reshape, in: [xn], shape: [64, 192, 4], out: xn3}
  - {op: reshape, in: [g], shape: [1, 1, 4], out: g3}
  - {op: reshape, in: [b], shape: [1, 1, 4], out: b3}
  - {op: mul, in: [xn3, g3], out: xg}
  - {op: add, in: [xg, b3], out: ln3}
  - {op: reshape, in: [ln3], shape: [64, 768], out: ln}
  - {op: swap_dims, in: [ln], dims: [0, 1], out: lt}
  - {op: matmul, in: [ln, lt], out: s}
  - {op: mul_scalar, in: [s], scalar: 0.00360843918, out: ss}
  - {op: max_dim, in: [ss], axis: 1, out: m}
  - {op: sub, in: [ss, m], out: sm}
  - {op: exp, in: [sm], out: e}
  - {op: sum, in: [e], axis: 1, out: z}
  - {op: div, in: [e, z], out: p}
outputs: [p, ln]
EOF
for p in bf16 f16; do
	for seed in 0 1; do
		check "prec-ln-softmax-$p-$seed" 0 "$FUSEC" run "$TMP/ln.yaml" --backend cpu --check \
			--precision $p --seed $seed &&
			check "prec-ln-softmax-$p-$seed-bounded" 1 grep -q "unbounded\|not checked\|FAIL" \
				"$TMP/out"
	done
done
# (the swap_dims only the matmul reads computes in bf16: one cast, ln's, serves both)
check prec-ln-explain 0 "$FUSEC" explain "$TMP/ln.yaml" --precision bf16 &&
	contains prec-ln-explain-line "$TMP/out" "precision: bf16 (--precision): 7 ops compute in bf16, 4 kept in f32 (kept kinds sum,mean,prod,exp,log,log1p,pow,powf,pow_scalar), 12 in f32 after an f32 result; 4 casts inserted" &&
	contains prec-ln-explain-cast "$TMP/out" "op 17 BaseFloat::Cast [ops[17] '--precision' → ln:bf16]"

# the ONNX fixtures: BERT with a real attention mask, GPT-2, ViT; every element
# bounded (BERT's random mask leaves its hidden state unbounded, as in t_check.sh)
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
for p in bf16 f16; do
	check "prec-bert-$p" 0 "$FUSEC" run tests/onnx/models/bert/model.onnx --backend cpu --check \
		--precision $p --inputs "$TMP/bert_in" &&
		contains "prec-bert-$p-l2" "$TMP/out" "check pooled: " &&
		check "prec-bert-$p-bounded" 1 grep -q "unbounded\|not checked\|FAIL" "$TMP/out"
done
for m in gpt2 vit2; do
	check "prec-$m-bf16" 0 "$FUSEC" run tests/onnx/models/$m/model.onnx --backend cpu --check \
		--precision bf16 &&
		check "prec-$m-bf16-bounded" 1 grep -q "unbounded\|not checked\|FAIL" "$TMP/out"
done
# an ONNX model compiles converted: bf16 weights, f32 inputs
check prec-onnx-compile 0 "$FUSEC" compile tests/onnx/models/bert/model.onnx --precision bf16 \
	-o "$TMP/bert16" -q &&
	contains prec-onnx-compile-plan "$TMP/bert16/model.plan.json" '"precision":"bf16"' &&
	contains prec-onnx-compile-mask "$TMP/bert16/model.plan.json" \
		'{"name":"attention_mask","dtype":"i64"'

# the result cache keys the precision: the same graph and arguments otherwise
check prec-rc-1 0 "$FUSEC" compile "$TMP/m/mlp.yaml" -o "$TMP/rc1" -q --cache-dir "$TMP/rc"
check prec-rc-2 0 "$FUSEC" compile "$TMP/m/mlp.yaml" -o "$TMP/rc2" -q --cache-dir "$TMP/rc" \
	--precision bf16 &&
	contains prec-rc-2-plan "$TMP/rc2/mlp.plan.json" '"precision":"bf16"'
check prec-rc-3 0 "$FUSEC" compile "$TMP/m/mlp.yaml" -o "$TMP/rc3" -q --cache-dir "$TMP/rc" \
	--precision bf16 --keep-f32 proj &&
	contains prec-rc-3-plan "$TMP/rc3/mlp.plan.json" '"keep_f32":"proj"'

# errors
check prec-bad-value 2 "$FUSEC" compile "$TMP/m/mlp.yaml" --precision fp8 &&
	contains prec-bad-value-msg "$TMP/err" "--precision: unknown precision 'fp8' (bf16 or f16)"
check prec-no-value 2 "$FUSEC" run "$TMP/m/mlp.yaml" --precision &&
	contains prec-no-value-msg "$TMP/err" "option '--precision' needs a value"
check prec-keep-alone 2 "$FUSEC" run "$TMP/m/mlp.yaml" --keep-f32 gelu &&
	contains prec-keep-alone-msg "$TMP/err" "--keep-f32 applies with --precision bf16|f16"
check prec-keep-unknown 1 "$FUSEC" compile "$TMP/m/mlp.yaml" --precision bf16 --keep-f32 prj &&
	contains prec-keep-unknown-msg "$TMP/err" "--keep-f32: no op kind and no op named 'prj'; did you mean 'proj'?"
check prec-keep-unknown-kind 1 "$FUSEC" run "$TMP/m/mlp.yaml" --precision bf16 --keep-f32 gelu,sofmax &&
	contains prec-keep-unknown-kind-msg "$TMP/err" "no op kind and no op named 'sofmax'"
check prec-keep-bad-index 1 "$FUSEC" explain "$TMP/m/mlp.yaml" --precision bf16 --keep-f32 'ops[9]' &&
	contains prec-keep-bad-index-msg "$TMP/err" "--keep-f32: 'ops[9]' names no op"
check prec-keep-glob-none 1 "$FUSEC" explain "$TMP/m/mlp.yaml" --precision bf16 --keep-f32 '*Softmax*' &&
	contains prec-keep-glob-none-msg "$TMP/err" "no op kind and no op named '*Softmax*'"
check prec-ops 2 "$FUSEC" ops --precision bf16 &&
	contains prec-ops-msg "$TMP/err" "--precision applies to compile, explain, run, bench and normalize"
check prec-plan-dir 1 "$FUSEC" run "$TMP/cbf16" --backend cuda --precision bf16 &&
	contains prec-plan-dir-msg "$TMP/err" "a compiled plan was compiled with its own"
# a graph with nothing in f32: a warning, the graph as it is
sed 's/f32/f64/' "$TMP/ln.yaml" >"$TMP/ln64.yaml"
check prec-f64 0 "$FUSEC" compile "$TMP/ln64.yaml" --precision bf16 -o "$TMP/c64" -q &&
	contains prec-f64-warn "$TMP/err" "computes nothing in f32; nothing was converted"
# a cast's tensor is NAME:bf16, with more colons where the graph has such a name
cat >"$TMP/sep.yaml" <<'EOF2'
format: fusec-graph/1
inputs:
  x: {dtype: f32, shape: [4, 8]}
  w: {dtype: f32, shape: [8, 4]}
ops:
  - {op: relu, in: [x], out: "x:bf16"}
  - {op: matmul, in: ["x:bf16", w], out: y}
outputs: [y]
EOF2
check prec-sep 0 "$FUSEC" compile "$TMP/sep.yaml" --precision bf16 -o "$TMP/sep" -q &&
	contains prec-sep-own "$TMP/sep/sep.plan.json" '{"name":"x:bf16","dtype":"bf16"' &&
	contains prec-sep-cast "$TMP/sep/sep.plan.json" '{"name":"w::bf16","dtype":"bf16"'
# the plans of converted graphs validate against the plan schema
if python3 -c 'import jsonschema' 2>/dev/null; then
	check prec-schema 0 python3 tests/schema/validate.py docs/schema/fusec-plan-1.schema.json \
		"$TMP/cbf16/mlp.plan.json" "$TMP/cf16/mlp.plan.json" "$TMP/keep/mlp.plan.json" \
		"$TMP/bert16/model.plan.json"
fi
# a softmax of an input: the kernel rounds the row's maximum, the reference does
# not, and that one error moves every term of the sum one way (docs/tolerances.md,
# "Reduced precision", 5)
for p in bf16 f16; do
	for seed in 0 1; do
		check "prec-softmax-input-$p-$seed" 0 "$FUSEC" run tests/golden/fusers.yaml --backend cpu \
			--check --precision $p --seed $seed &&
			check "prec-softmax-input-$p-$seed-bounded" 1 grep -q "unbounded\|not checked\|FAIL" \
				"$TMP/out"
	done
done
# bench converts as it loads (the GPU part: tests/bench/models/real_models.sh)
check prec-bench-keep 1 "$FUSEC" bench "$TMP/m/mlp.yaml" --precision bf16 --keep-f32 prj &&
	contains prec-bench-keep-msg "$TMP/err" "did you mean 'proj'?"
check prec-bench-no-driver 3 env FUSEC_LIBCUDA=/nonexistent/libcuda.so.1 "$FUSEC" bench \
	"$TMP/m/mlp.yaml" --precision bf16
check prec-normalize 0 "$FUSEC" normalize "$TMP/m/mlp.yaml" --precision f16 &&
	contains prec-normalize-cast "$TMP/out" "BaseFloat::Cast(t0:f32[1,2] ReadOnly, dtype=f16) -> t1:f16[1,2]"
# with several arches: one conversion, every arch's kernels of the converted graph
check prec-arches 0 "$FUSEC" compile "$TMP/m/mlp.yaml" --arch sm_80,sm_90a --precision bf16 \
	-o "$TMP/arches" -q &&
	contains prec-arches-plan "$TMP/arches/mlp.plan.json" '"precision":"bf16"' &&
	contains prec-arches-variants "$TMP/arches/mlp.plan.json" '"variants":' &&
	same_files prec-arches-weights "$TMP/cbf16/mlp.weights.bin" "$TMP/arches/mlp.weights.bin"
# a norm of a bf16 tensor read in f32 (what --precision makes of every norm): the
# row cache keeps the f32 row, 32-byte vectors on 8 bf16 lanes, in its 16-byte
# aligned shared memory (a fault on about every second run before; four runs)
cat >"$TMP/mixln.yaml" <<'EOF2'
format: fusec-graph/1
inputs:
  x: {dtype: bf16, shape: [64, 768]}
ops:
  - {op: cast, in: [x], dtype: f32, out: xf}
  - {op: mean, in: [xf], axis: 1, out: mu}
  - {op: sub, in: [xf, mu], out: xc}
  - {op: mul, in: [xc, xc], out: sq}
  - {op: mean, in: [sq], axis: 1, out: var}
  - {op: add_scalar, in: [var], scalar: 1e-5, out: ve}
  - {op: sqrt, in: [ve], out: sd}
  - {op: div, in: [xc, sd], out: y}
outputs: [y]
EOF2
for i in 1 2 3 4; do
	check "prec-mixed-norm-$i" 0 "$FUSEC" run "$TMP/mixln.yaml" --backend cpu --check --seed $i
done
