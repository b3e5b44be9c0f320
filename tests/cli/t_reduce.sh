# t_reduce.sh: the cooperative reduce kernels (codegen/kernel_reduce.c) on the cpu
# backend against the interpreter: the row cache with the tensors a kernel makes
# (softmax's exp, a norm's centred row, G4's gelu), rows that fill a thread's K
# groups and rows that leave some threads fewer (the unrolled trips, then one at a
# time), rows too long for the cache, a division by a row's reduction (one
# reciprocal a row), and exp of a half-precision result (one ex2.approx on the GPU).
for g in reduce_cache reduce_odd; do
	for seed in 0 3; do
		check "reduce-$g-$seed" 0 "$FUSEC" run tests/bench/gpu/$g.json --backend cpu \
			--check --seed $seed &&
			check "reduce-$g-$seed-all-ok" 1 grep -q "FAIL\|unbounded\|not checked" "$TMP/out"
	done
done

# softmax of scaled scores plus a broadcast mask, rows of 200: 25 groups of 8 over
# 16 threads, so threads 0-8 take the unrolled pair and 9-15 one
cat >"$TMP/attn.yaml" <<'Y'
format: fusec-graph/1
name: attn_softmax
inputs:
  s: {dtype: bf16, shape: [3, 2, 37, 200]}
  mask: {dtype: bf16, shape: [3, 1, 1, 200]}
ops:
  - {op: mul_scalar, in: [s], out: ss, scalar: 3.5}
  - {op: add, in: [ss, mask], out: a}
  - {op: max_dim, in: [a], out: m, axis: 3}
  - {op: sub, in: [a, m], out: d}
  - {op: exp, in: [d], out: e}
  - {op: sum, in: [e], out: z, axis: 3}
  - {op: div, in: [e, z], out: y}
outputs: [y]
Y
# bias, tanh gelu and layer norm (the gelu kept in the cache), and a residual layer
# norm in f16
cat >"$TMP/norms.yaml" <<'Y'
format: fusec-graph/1
name: norms
inputs:
  x: {dtype: f32, shape: [5, 1000]}
  bias: {dtype: f32, shape: [1, 1000]}
  h16: {dtype: f16, shape: [67, 264]}
  r16: {dtype: f16, shape: [67, 264]}
  g16: {dtype: f16, shape: [1, 264]}
ops:
  - {op: add, in: [x, bias], out: h}
  - {op: gelu, in: [h], out: g, approximate: tanh}
  - {op: mean, in: [g], out: mu, axis: 1}
  - {op: sub, in: [g, mu], out: d}
  - {op: mul, in: [d, d], out: d2}
  - {op: mean, in: [d2], out: var, axis: 1}
  - {op: add_scalar, in: [var], out: ve, scalar: 1e-05}
  - {op: sqrt, in: [ve], out: sd}
  - {op: div, in: [d, sd], out: y}
  - {op: add, in: [h16, r16], out: k}
  - {op: mean, in: [k], out: kmu, axis: 1}
  - {op: sub, in: [k, kmu], out: kd}
  - {op: mul, in: [kd, kd], out: kd2}
  - {op: mean, in: [kd2], out: kvar, axis: 1}
  - {op: add_scalar, in: [kvar], out: kve, scalar: 1e-05}
  - {op: sqrt, in: [kve], out: ksd}
  - {op: div, in: [kd, ksd], out: kn}
  - {op: mul, in: [kn, g16], out: ky}
outputs: [y, ky]
Y
# exp of bf16 and f16 over [-95, 95]: results that overflow, that are subnormal,
# and that round to zero, each within the bound
cat >"$TMP/exps.yaml" <<'Y'
format: fusec-graph/1
name: exps
inputs:
  a: {dtype: bf16, shape: [4099]}
  b: {dtype: f16, shape: [4099]}
ops:
  - {op: mul_scalar, in: [a], out: as, scalar: 95.0}
  - {op: exp, in: [as], out: ea}
  - {op: mul_scalar, in: [b], out: bs, scalar: 11.0}
  - {op: exp, in: [bs], out: eb}
outputs: [ea, eb]
Y
for f in attn norms exps; do
	for seed in 0 1; do
		check "reduce-$f-$seed" 0 "$FUSEC" run "$TMP/$f.yaml" --backend cpu --check --seed $seed &&
			check "reduce-$f-$seed-all-ok" 1 grep -q "FAIL\|unbounded\|not checked" "$TMP/out"
	done
done

# the GPU's exp: one ex2.approx (subnormals kept) for a bf16 result, the reduced
# argument and the scaled result for f32
check reduce-attn-compile 0 "$FUSEC" compile "$TMP/attn.yaml" -o "$TMP/attn" --no-cache &&
	contains reduce-attn-ex2 "$TMP/attn/attn_softmax.ptx" "ex2.approx.f32" &&
	check reduce-attn-no-ftz 1 grep -q "ex2.approx.ftz" "$TMP/attn/attn_softmax.ptx"
sed 's/bf16/f32/g' "$TMP/attn.yaml" >"$TMP/attn32.yaml"
check reduce-attn32-compile 0 "$FUSEC" compile "$TMP/attn32.yaml" -o "$TMP/attn32" --no-cache &&
	contains reduce-attn32-ex2 "$TMP/attn32/attn_softmax.ptx" "ex2.approx.ftz.f32" &&
	contains reduce-attn32-round "$TMP/attn32/attn_softmax.ptx" "0f4B400000" &&
	check reduce-attn32-no-cvt 1 grep -q "cvt.rni" "$TMP/attn32/attn_softmax.ptx"
# (exp rounds x log2 e by adding 1.5 * 2^23, codegen/math.c rint_small, not with
# cvt.rni and a conversion.) A softmax divides once a row: the reciprocal of its
# sum, scaled into the normal range, and no division per element (cg_div_uniform)
contains reduce-attn-rcp "$TMP/attn/attn_softmax.ptx" "rcp.rn.f32" &&
	check reduce-attn32-no-div 1 grep -q "div.rn.f32" "$TMP/attn32/attn_softmax.ptx"

# pow_scalar(x, 2) is written mul(x, x) before the search (passes/simplify.c): the
# RMSNorm's kernel is the one of the graph written with mul, without the general
# pow behind a branch; --burn-exact keeps the pow; both agree with the interpreter,
# and so does an exponent of 3 (left as written)
cat >"$TMP/rms.yaml" <<'Y'
format: fusec-graph/1
name: rms
inputs:
  x: {dtype: bf16, shape: [6, 520]}
  w: {dtype: bf16, shape: [1, 520]}
ops:
  - {op: cast, in: [x], out: xf, dtype: f32}
  - {op: pow_scalar, in: [xf], out: x2, scalar: 2}
  - {op: mean, in: [x2], out: ms, axis: 1}
  - {op: add_scalar, in: [ms], out: me, scalar: 1e-6}
  - {op: sqrt, in: [me], out: rms}
  - {op: recip, in: [rms], out: r}
  - {op: mul, in: [xf, r], out: n}
  - {op: cast, in: [n], out: nb, dtype: bf16}
  - {op: mul, in: [nb, w], out: y}
outputs: [y]
Y
sed 's/{op: pow_scalar, in: \[xf\], out: x2, scalar: 2}/{op: mul, in: [xf, xf], out: x2}/' \
	"$TMP/rms.yaml" >"$TMP/rms_mul.yaml"
sed 's/scalar: 2}/scalar: 3}/' "$TMP/rms.yaml" >"$TMP/rms3.yaml"
check square-compile 0 "$FUSEC" compile "$TMP/rms.yaml" -o "$TMP/sq" --no-cache &&
	check square-compile-mul 0 "$FUSEC" compile "$TMP/rms_mul.yaml" -o "$TMP/sqm" --no-cache &&
	check square-same-ptx 0 cmp "$TMP/sq/rms.ptx" "$TMP/sqm/rms.ptx"
check square-burn-exact 0 "$FUSEC" compile "$TMP/rms.yaml" -o "$TMP/sqb" --no-cache --burn-exact &&
	check square-burn-exact-pow 1 cmp -s "$TMP/sqb/rms.ptx" "$TMP/sqm/rms.ptx"
for f in rms rms3; do
	for b in "" --burn-exact; do
		check "square-$f$b-run" 0 "$FUSEC" run "$TMP/$f.yaml" --backend cpu --check --seed 2 $b &&
			check "square-$f$b-ok" 1 grep -q "FAIL\|unbounded\|not checked" "$TMP/out"
	done
done

# a row divided by its own sum where 1/sum is not a normal f32 (codegen/values.c,
# cg_div_uniform: the divisor scaled by a power of two, branch-free): a subnormal sum,
# one above 2^126, and a subnormal scalar, on the cpu backend against the interpreter
cat >"$TMP/divrow.yaml" <<'Y'
format: fusec-graph/1
name: divrow
inputs:
  x: {dtype: f32, shape: [3, 256]}
ops:
  - {op: sum, in: [x], out: s, axis: 1}
  - {op: div, in: [x, s], out: y}
  - {op: div_scalar, in: [x], out: z, scalar: 1.0e-40}
outputs: [y, z]
Y
"$(npy_python)" -c 'import numpy as np, sys
x = np.empty((3, 256), np.float32)
x[0] = 1e-41                        # sum 2.6e-39: subnormal, 1/sum overflows
x[1] = np.linspace(1e36, 2e36, 256) # sum 3.8e38 > 2^126: 1/sum is subnormal
x[2] = np.linspace(-1e-30, 3e-30, 256)
np.save(sys.argv[1], x)' "$TMP/divrow_x.npy"
check div-uniform-range 0 "$FUSEC" run "$TMP/divrow.yaml" --backend cpu --check \
	--inputs x="$TMP/divrow_x.npy" &&
	check div-uniform-range-ok 1 grep -q "FAIL\|unbounded\|not checked" "$TMP/out"

# long f32 rows (CgKernelSpec.red_long, chosen in codegen/lower.c from the concrete
# row length): a cached f32 row of 4096 or more without long math loads four
# V-groups a trip under .maxnreg 64; rows of 1000, bf16 rows and G4's gelu keep
# two trips (one for the gelu) and 48
cat >"$TMP/rl.yaml" <<'Y'
format: fusec-graph/1
name: rl
inputs:
  x: {dtype: f32, shape: [4, 8192]}
ops:
  - {op: max_dim, in: [x], out: m, axis: 1}
  - {op: sub, in: [x, m], out: d}
  - {op: exp, in: [d], out: e}
  - {op: sum, in: [e], out: z, axis: 1}
  - {op: div, in: [e, z], out: y}
outputs: [y]
Y
# (rows enough for a wave of blocks: a kernel of fewer rows gets 96, red-few-* below)
sed 's/\[4, 8192\]/[4096, 1000]/' "$TMP/rl.yaml" >"$TMP/rl_short.yaml"
sed 's/f32/bf16/; s/\[4, 8192\]/[4096, 8192]/' "$TMP/rl.yaml" >"$TMP/rl_bf16.yaml"
cat >"$TMP/rl_gelu.yaml" <<'Y'
format: fusec-graph/1
name: rl
inputs:
  x: {dtype: f32, shape: [4096, 4096]}
  bias: {dtype: f32, shape: [1, 4096]}
ops:
  - {op: add, in: [x, bias], out: h}
  - {op: gelu, in: [h], out: g}
  - {op: mean, in: [g], out: mu, axis: 1}
  - {op: sub, in: [g, mu], out: d}
  - {op: mul, in: [d, d], out: d2}
  - {op: mean, in: [d2], out: var, axis: 1}
  - {op: add_scalar, in: [var], out: ve, scalar: 1e-05}
  - {op: sqrt, in: [ve], out: sd}
  - {op: div, in: [d, sd], out: y}
outputs: [y]
Y
for f in rl rl_short rl_bf16 rl_gelu; do
	n=64
	[ $f = rl ] || n=48
	check "red-long-$f-compile" 0 "$FUSEC" compile "$TMP/$f.yaml" -o "$TMP/$f" --no-cache &&
		contains "red-long-$f-maxnreg" "$TMP/$f/rl.ptx" ".maxnreg $n" &&
		check "red-long-$f-one-kernel" 0 test "$(grep -c '\.maxnreg' "$TMP/$f/rl.ptx")" = 1
done
contains red-long-plan "$TMP/rl/rl.plan.json" "(long f32 rows)"
check red-long-short-plan 1 grep -q "long f32 rows" "$TMP/rl_short/rl.plan.json"

# few rows (under a wave of blocks by the launch rule: a transformer's norms at
# batch 1) build the kernel with 96 registers, not 48: a bf16 layer norm of rows of
# 768 (a block of 8 rows on the static geometry) to 1048 rows (131 blocks), 48 from
# 1049; both sizes in one graph are two kernels; the cpu backend runs the few-rows one
for r in 128 1048 1049; do
	sed "s/2048/$r/; s/g15_layernorm_bf16/ln/" tests/bench/gpu/g15_layernorm_bf16.json >"$TMP/ln$r.json"
	n=96
	[ $r = 1049 ] && n=48
	check "red-few-$r" 0 "$FUSEC" compile "$TMP/ln$r.json" -o "$TMP/ln$r" --no-cache &&
		contains "red-few-$r-maxnreg" "$TMP/ln$r/ln.ptx" ".maxnreg $n"
done
check red-few-run 0 "$FUSEC" run "$TMP/ln128.json" --backend cpu --check
# a kernel that cannot split its rows divides nothing before its first load: its
# blocks walk the rows by first row and take the whole axis (the PTX had four
# integer divisions here, and 32 bytes of spills at 48 registers at 2048 rows)
check red-prologue-ln 0 "$FUSEC" compile tests/bench/gpu/g15_layernorm_bf16.json -o "$TMP/ln2048" --no-cache
for f in "$TMP/ln128/ln.ptx" "$TMP/ln2048/g15_layernorm_bf16.ptx"; do
	check "red-prologue-nodiv-$(basename "$f")" 1 grep -qE "div\.[us](32|64)" "$f"
done
PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
if [ -x "$PTXAS" ]; then
	check red-prologue-ptxas 0 "$PTXAS" -arch=sm_90a -v "$TMP/ln2048/g15_layernorm_bf16.ptx" -o "$TMP/ln.cubin"
	contains red-prologue-nospill "$TMP/err" "0 bytes spill stores"
fi

# a reduce kernel in rows mode (not split, no dynamic row cache) in a plan of
# concrete sizes is built for its row length and block (CgKernelSpec.red_row,
# red_g, red_r) where its rows are few or a thread holds at most two V-groups of a
# row: the length and the block are constants (the row's loops and the group's tree
# fold; 1508 -> 995 PTX instructions here), and a guard traps at another length or
# block. Rows of 768 and of 1024 in one graph are two kernels (one before), in the
# kernel cache too; the layer norm of 2048 rows (three V-groups a thread) has no
# guard; a softmax of 1536 rows of 256 (a warp a row, eight rows a block, one
# V-group a thread) has; a plan for every size reads all at launch; the cpu backend
# runs the fixed kernels, odd lengths and f16, f32
contains red-row-guard "$TMP/ln128/ln.ptx" "trap;"
check red-row-guard-len 0 grep -qE "setp\.(eq|ne)\.s64.*, 768;" "$TMP/ln128/ln.ptx"
check red-row-no-guard 1 grep -q "trap;" "$TMP/ln2048/g15_layernorm_bf16.ptx"
python3 - "$TMP/ln128.json" "$TMP" <<'P'
import json, sys
g = json.load(open(sys.argv[1]))
def widen(n, name, dtype):
    h = json.loads(json.dumps(g).replace("768", str(n)))
    h["name"] = name
    h = json.loads(json.dumps(h).replace("bf16", dtype))
    return h
for n, dt in ((777, "bf16"), (1000, "f16"), (900, "f32"), (1024, "bf16")):
    json.dump(widen(n, "ln", dt), open(f"{sys.argv[2]}/ln_{n}.json", "w"))
two = json.loads(json.dumps(g))
w = widen(1024, "ln_rows", "bf16")
for k, v in w["inputs"].items():
    two["inputs"][k + "_w"] = v
for op in w["ops"]:
    o = dict(op)
    o["in"] = [x + "_w" for x in op["in"]]
    o["out"] = op["out"] + "_w"
    two["ops"].append(o)
two["outputs"] = g["outputs"] + [x + "_w" for x in g["outputs"]]
two["name"] = "ln_rows"
json.dump(two, open(f"{sys.argv[2]}/ln_rows.json", "w"))
P
for n in 777 1000 900; do
	check "red-row-run-$n" 0 "$FUSEC" run "$TMP/ln_$n.json" --backend cpu --check --seed 4
	check "red-row-guard-$n" 0 "$FUSEC" compile "$TMP/ln_$n.json" -o "$TMP/lnr$n" --no-cache &&
		contains "red-row-guard-$n-trap" "$TMP/lnr$n/ln.ptx" "trap;"
done
for i in 1 2; do
	check "red-row-two-$i" 0 "$FUSEC" compile "$TMP/ln_rows.json" -o "$TMP/lnrw$i" \
		--cache-dir "$TMP/lnrc" --no-result-cache --time &&
		contains "red-row-two-$i-kernels" "$TMP/err" "2 distinct kernels" &&
		check "red-row-two-$i-entries" 0 test "$(grep -c '^\.visible \.entry' "$TMP/lnrw$i/ln_rows.ptx")" = 2
done
same_files red-row-two-same-ptx "$TMP/lnrw1/ln_rows.ptx" "$TMP/lnrw2/ln_rows.ptx"
check red-row-two-run 0 "$FUSEC" run "$TMP/ln_rows.json" --backend cpu --check --seed 6
# rows of 1024 after a compile of rows of 768 do not hit its entry
check red-row-cache-768 0 "$FUSEC" compile "$TMP/ln128.json" -o "$TMP/lnk1" \
	--cache-dir "$TMP/lnk" --no-result-cache --time &&
	check red-row-cache-1024 0 "$FUSEC" compile "$TMP/ln_1024.json" -o "$TMP/lnk2" \
		--cache-dir "$TMP/lnk" --no-result-cache --time &&
	contains red-row-cache-miss "$TMP/err" "kernel cache: 0 of 1 chunk hit"
# every size: the rows' length a dim (seq) and the rows (batch) a named dim
python3 - "$TMP/ln128.json" "$TMP/ln_every.json" <<'P'
import json, sys
g = json.load(open(sys.argv[1]))
for t in g["inputs"].values():
    if t["shape"][0] == 128:
        t["shape"][0] = "rows"
g["dims"] = {"rows": "1..128"}
json.dump(g, open(sys.argv[2], "w"))
P
check red-row-every 0 "$FUSEC" compile "$TMP/ln_every.json" -o "$TMP/lne" --no-cache &&
	contains red-row-every-sizes "$TMP/err" "for every rows in 1..128" &&
	check red-row-every-no-guard 1 grep -q "trap;" "$TMP"/lne/*.ptx
python3 - tests/bench/gpu/g14_attn_softmax_bf16.json "$TMP/sm1536.json" <<'P'
import json, sys
g = json.load(open(sys.argv[1]))
g["inputs"]["s"]["shape"] = [1, 12, 128, 256]
g["inputs"]["mask"]["shape"] = [1, 1, 1, 256]
g["name"] = "sm1536"
json.dump(g, open(sys.argv[2], "w"))
P
check red-row-sm 0 "$FUSEC" compile "$TMP/sm1536.json" -o "$TMP/sm1536" --no-cache &&
	contains red-row-sm-guard "$TMP/sm1536/sm1536.ptx" "trap;" &&
	contains red-row-sm-block "$TMP/sm1536/sm1536.plan.json" '"block":[32,8,1]'
check red-row-sm-run 0 "$FUSEC" run "$TMP/sm1536.json" --backend cpu --check --seed 2
if [ -x "$PTXAS" ]; then
	check red-row-ptxas-sm 0 "$PTXAS" -arch=sm_90a "$TMP/sm1536/sm1536.ptx" -o "$TMP/lnr.cubin"
	check red-row-ptxas 0 "$PTXAS" -arch=sm_90a "$TMP/lnrw1/ln_rows.ptx" -o "$TMP/lnr.cubin"
fi
python3 - "$TMP/ln128.json" "$TMP/ln_two.json" <<'P'
import json, sys
g = json.load(open(sys.argv[1]))
ops = list(g["ops"])
for name in list(g["inputs"]):
    t = dict(g["inputs"][name])
    if t["shape"][0] == 128:
        t["shape"] = [2048] + t["shape"][1:]
    g["inputs"][name + "_b"] = t
ren = lambda v: v + "_b"
for op in ops:
    o = dict(op)
    o["in"] = [ren(v) for v in op["in"]]
    o["out"] = ren(op["out"])
    g["ops"].append(o)
g["outputs"] = g["outputs"] + [ren(v) for v in g["outputs"]]
g["name"] = "ln_two"
json.dump(g, open(sys.argv[2], "w"))
P
check red-few-two 0 "$FUSEC" compile "$TMP/ln_two.json" -o "$TMP/ln_two" --no-cache &&
	contains red-few-two-96 "$TMP/ln_two/ln_two.ptx" ".maxnreg 96" &&
	contains red-few-two-48 "$TMP/ln_two/ln_two.ptx" ".maxnreg 48"

# the relative form has no row length, so the choice is part of a kernel's identity:
# one graph with the softmax at rows of 1000 and of 8192 gets two kernels, and so
# does a second compile from the kernel cache; rows of 8192 after a compile of rows
# of 1000 do not hit its entry
cat >"$TMP/rl2.yaml" <<'Y'
format: fusec-graph/1
name: rl2
inputs:
  a: {dtype: f32, shape: [4096, 1000]}
  b: {dtype: f32, shape: [4, 8192]}
ops:
  - {op: max_dim, in: [a], out: am, axis: 1}
  - {op: sub, in: [a, am], out: ad}
  - {op: exp, in: [ad], out: ae}
  - {op: sum, in: [ae], out: az, axis: 1}
  - {op: div, in: [ae, az], out: ya}
  - {op: max_dim, in: [b], out: bm, axis: 1}
  - {op: sub, in: [b, bm], out: bd}
  - {op: exp, in: [bd], out: be}
  - {op: sum, in: [be], out: bz, axis: 1}
  - {op: div, in: [be, bz], out: yb}
outputs: [ya, yb]
Y
for i in 1 2; do
	check "red-long-two-$i" 0 "$FUSEC" compile "$TMP/rl2.yaml" -o "$TMP/rl2_$i" \
		--cache-dir "$TMP/rlc" --no-result-cache --time &&
		contains "red-long-two-$i-kernels" "$TMP/err" "2 distinct kernels" &&
		contains "red-long-two-$i-cache" "$TMP/err" "$([ $i = 1 ] && echo "0 of 2 chunks hit" ||
			echo "2 of 2 chunks hit (LLVM skipped)")" &&
		check "red-long-two-$i-entries" 0 test "$(grep -c '^\.visible \.entry' "$TMP/rl2_$i/rl2.ptx")" = 2 &&
		contains "red-long-two-$i-maxnreg48" "$TMP/rl2_$i/rl2.ptx" ".maxnreg 48" &&
		contains "red-long-two-$i-maxnreg64" "$TMP/rl2_$i/rl2.ptx" ".maxnreg 64"
done
same_files red-long-two-same-ptx "$TMP/rl2_1/rl2.ptx" "$TMP/rl2_2/rl2.ptx"
check red-long-cache-short 0 "$FUSEC" compile "$TMP/rl_short.yaml" -o "$TMP/rlk1" \
	--cache-dir "$TMP/rlk" --no-result-cache --time &&
	check red-long-cache-long 0 "$FUSEC" compile "$TMP/rl.yaml" -o "$TMP/rlk2" \
		--cache-dir "$TMP/rlk" --no-result-cache --time &&
	contains red-long-cache-miss "$TMP/err" "kernel cache: 0 of 1 chunk hit" &&
	same_files red-long-cache-ptx "$TMP/rl/rl.ptx" "$TMP/rlk2/rl.ptx"

# the cpu backend runs the same kernels (four trips, then the rest one at a time)
# against the interpreter: softmax rows of 4100 and 8188 (cached, not a multiple of
# 16 elements) and 8192, a layer norm without gelu at rows of 4100 and 8191 (not a
# multiple of 4: the scalar path)
cat >"$TMP/rln.yaml" <<'Y'
format: fusec-graph/1
name: rln
inputs:
  x: {dtype: f32, shape: [3, 4100]}
  w: {dtype: f32, shape: [1, 4100]}
ops:
  - {op: mean, in: [x], out: mu, axis: 1}
  - {op: sub, in: [x, mu], out: d}
  - {op: mul, in: [d, d], out: d2}
  - {op: mean, in: [d2], out: var, axis: 1}
  - {op: add_scalar, in: [var], out: ve, scalar: 1e-05}
  - {op: sqrt, in: [ve], out: sd}
  - {op: div, in: [d, sd], out: n}
  - {op: mul, in: [n, w], out: y}
outputs: [y]
Y
sed 's/4100/8191/g' "$TMP/rln.yaml" >"$TMP/rln_8191.yaml"
sed 's/\[4, 8192\]/[3, 4100]/' "$TMP/rl.yaml" >"$TMP/rl_4100.yaml"
sed 's/\[4, 8192\]/[5, 8188]/' "$TMP/rl.yaml" >"$TMP/rl_8188.yaml"
for f in rl rl_4100 rl_8188 rln rln_8191; do
	check "red-long-$f-long" 0 "$FUSEC" compile "$TMP/$f.yaml" -o "$TMP/rlp_$f" --no-cache &&
		contains "red-long-$f-plan" "$TMP/rlp_$f/$(sed -n 's/^name: //p' "$TMP/$f.yaml").plan.json" \
			"(long f32 rows)"
	check "red-long-$f-run" 0 "$FUSEC" run "$TMP/$f.yaml" --backend cpu --check --seed 1 &&
		check "red-long-$f-ok" 1 grep -q "FAIL\|unbounded\|not checked" "$TMP/out"
done

# rows past 8192 f32: the long-row kernel keeps its row cache in the launch's dynamic
# shared memory, up to 1024 threads a row (launch_rule.c, cg_reduce_dyn_cache_threads):
# softmax at rows of 16384 (512 threads, 64 KiB) and 20000 (1024, 128 KiB), a layer
# norm at 32768 (1024, 128 KiB), a softmax at 40000 (past it: the passes over memory)
cat >"$TMP/rd.yaml" <<'Y'
format: fusec-graph/1
name: rd
inputs:
  x: {dtype: f32, shape: [5, 16384]}
  v: {dtype: f32, shape: [2, 20000]}
  w: {dtype: f32, shape: [3, 32768]}
  u: {dtype: f32, shape: [2, 40000]}
ops:
  - {op: max_dim, in: [x], out: m, axis: 1}
  - {op: sub, in: [x, m], out: d}
  - {op: exp, in: [d], out: e}
  - {op: sum, in: [e], out: z, axis: 1}
  - {op: div, in: [e, z], out: y}
  - {op: max_dim, in: [v], out: vm, axis: 1}
  - {op: sub, in: [v, vm], out: vd}
  - {op: exp, in: [vd], out: ve}
  - {op: sum, in: [ve], out: vz, axis: 1}
  - {op: div, in: [ve, vz], out: vy}
  - {op: mean, in: [w], out: wm, axis: 1}
  - {op: sub, in: [w, wm], out: wd}
  - {op: mul, in: [wd, wd], out: w2}
  - {op: mean, in: [w2], out: wv, axis: 1}
  - {op: add_scalar, in: [wv], out: wve, scalar: 1e-05}
  - {op: sqrt, in: [wve], out: wsd}
  - {op: div, in: [wd, wsd], out: wy}
  - {op: max_dim, in: [u], out: um, axis: 1}
  - {op: sub, in: [u, um], out: ud}
  - {op: exp, in: [ud], out: ue}
  - {op: sum, in: [ue], out: uz, axis: 1}
  - {op: div, in: [ue, uz], out: uy}
outputs: [y, vy, wy, uy]
Y
check red-dyn-compile 0 "$FUSEC" compile "$TMP/rd.yaml" -o "$TMP/rd" --no-cache &&
	check red-dyn-launches 0 python3 - "$TMP/rd/rd.plan.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
got = [(l["block"][0], l.get("shared_bytes", 0)) for s in p["steps"] for l in s.get("launches", [])]
want = [(512, 65536), (1024, 131072), (1024, 131072), (512, 0)]
sys.exit(0 if got == want else "launches %s, want %s" % (got, want))
PY
contains red-dyn-ptx "$TMP/rd/rd.ptx" ".extern .shared .align 16 .b8 fusec_dynamic_shared[];"
contains red-dyn-maxntid "$TMP/rd/rd.ptx" ".maxntid 1024, 1, 1"
# the kernel checks the launch gave it the bytes (else it runs over memory)
contains red-dyn-guard "$TMP/rd/rd.ptx" "%dynamic_smem_size"
# only sm_90a plans take it (an sm_80 or sm_90 plan may run where a block has 99 KiB
# or less): there the long f32 rows keep the static cache and 512 threads
check red-dyn-sm80 0 "$FUSEC" compile "$TMP/rd.yaml" -o "$TMP/rd80" --no-cache --arch sm_80 &&
	check red-dyn-sm80-none 1 grep -q "fusec_dynamic_shared" "$TMP/rd80/rd.ptx" &&
	contains red-dyn-sm80-maxntid "$TMP/rd80/rd.ptx" ".maxntid 512, 1, 1" &&
	contains red-dyn-sm80-long "$TMP/rd80/rd.ptx" ".maxnreg 64"
PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
if [ -x "$PTXAS" ]; then
	check red-dyn-ptxas 0 "$PTXAS" -arch=sm_90a "$TMP/rd/rd.ptx" -o "$TMP/rd.cubin"
fi
check red-dyn-run 0 "$FUSEC" run "$TMP/rd.yaml" --backend cpu --check --seed 1 &&
	check red-dyn-ok 1 grep -q "FAIL\|unbounded\|not checked" "$TMP/out"
# other rows past the static cache (8192): bf16 rows of 65536 (1024 threads, 64
# elements a thread, softmax keeping its input: 128 KiB), f16 rows of 20000 and a
# gelu + layer norm (long math) at 16384 f32 (512 threads, 64 KiB)
cat >"$TMP/rh.yaml" <<'Y'
format: fusec-graph/1
name: rh
inputs:
  x: {dtype: bf16, shape: [2, 65536]}
  v: {dtype: f16, shape: [3, 20000]}
  g: {dtype: f32, shape: [3, 16384]}
ops:
  - {op: max_dim, in: [x], out: m, axis: 1}
  - {op: sub, in: [x, m], out: d}
  - {op: exp, in: [d], out: e}
  - {op: sum, in: [e], out: z, axis: 1}
  - {op: div, in: [e, z], out: y}
  - {op: max_dim, in: [v], out: vm, axis: 1}
  - {op: sub, in: [v, vm], out: vd}
  - {op: exp, in: [vd], out: ve}
  - {op: sum, in: [ve], out: vz, axis: 1}
  - {op: div, in: [ve, vz], out: vy}
  - {op: gelu, in: [g], out: gg}
  - {op: mean, in: [gg], out: gm, axis: 1}
  - {op: sub, in: [gg, gm], out: gd}
  - {op: mul, in: [gd, gd], out: g2}
  - {op: mean, in: [g2], out: gv, axis: 1}
  - {op: add_scalar, in: [gv], out: gve, scalar: 1e-05}
  - {op: sqrt, in: [gve], out: gsd}
  - {op: div, in: [gd, gsd], out: gy}
outputs: [y, vy, gy]
Y
check red-dyn-half-compile 0 "$FUSEC" compile "$TMP/rh.yaml" -o "$TMP/rh" --no-cache &&
	check red-dyn-half-launches 0 python3 - "$TMP/rh/rh.plan.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
got = [(l["block"][0], l.get("shared_bytes", 0)) for s in p["steps"] for l in s.get("launches", [])]
want = [(1024, 131072), (512, 65536), (512, 65536)]
shapes = [k["shape"] for k in p["kernels"]]
ok = got == want and all(s.endswith("(long rows)") for s in shapes) and ".maxnreg 48" in open(sys.argv[1][:-10] + ".ptx").read()
sys.exit(0 if ok else "launches %s, want %s; shapes %s" % (got, want, shapes))
PY
if [ -x "$PTXAS" ]; then
	check red-dyn-half-ptxas 0 "$PTXAS" -arch=sm_90a "$TMP/rh/rh.ptx" -o "$TMP/rh.cubin"
fi
check red-dyn-half-run 0 "$FUSEC" run "$TMP/rh.yaml" --backend cpu --check --seed 1 &&
	check red-dyn-half-ok 1 grep -q "FAIL\|unbounded\|not checked" "$TMP/out"
# few rows (a grid under a wave of blocks: GPT-2's layer norms at batch 1, 128
# rows of 768 bf16 with the residual sum kept): a block a row, 128 threads, while
# 2048 rows keep a warp a row, 8 rows a block; the cpu backend runs both
cat >"$TMP/rf.yaml" <<'Y'
format: fusec-graph/1
name: rf
inputs:
  a: {dtype: bf16, shape: [128, 768]}
  b: {dtype: bf16, shape: [128, 768]}
  g: {dtype: bf16, shape: [1, 768]}
  a2: {dtype: bf16, shape: [2048, 768]}
  s3: {dtype: f32, shape: [96, 40]}
ops:
  - {op: add, in: [a, b], out: h}
  - {op: mean, in: [h], out: mu, axis: 1}
  - {op: sub, in: [h, mu], out: d}
  - {op: mul, in: [d, d], out: d2}
  - {op: mean, in: [d2], out: var, axis: 1}
  - {op: add_scalar, in: [var], out: ve, scalar: 1.0e-5}
  - {op: sqrt, in: [ve], out: sd}
  - {op: div, in: [d, sd], out: n}
  - {op: mul, in: [n, g], out: y}
  - {op: max_dim, in: [a2], out: m2, axis: 1}
  - {op: sub, in: [a2, m2], out: d3}
  - {op: exp, in: [d3], out: e3}
  - {op: sum, in: [e3], out: z3, axis: 1}
  - {op: div, in: [e3, z3], out: y2}
  - {op: sum, in: [s3], out: y3, axis: 1}
outputs: [h, y, y2, y3]
Y
check red-few-compile 0 "$FUSEC" compile "$TMP/rf.yaml" -o "$TMP/rf" --no-cache &&
	check red-few-launches 0 python3 - "$TMP/rf/rf.plan.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
got = sorted((l["grid"][0], l["block"][:2]) for s in p["steps"] for l in s.get("launches", []))
want = [(96, [32, 1]), (128, [128, 1]), (256, [32, 8])]
sys.exit(0 if got == want else "launches %s, want %s" % (got, want))
PY
check red-few-run 0 "$FUSEC" run "$TMP/rf.yaml" --backend cpu --check --seed 1 &&
	check red-few-ok 1 grep -q "FAIL\|unbounded\|not checked" "$TMP/out"
