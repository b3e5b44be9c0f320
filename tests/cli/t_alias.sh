# t_alias.sh: a reshape the search leaves un-fused is an alias in the plan (no
# kernel; its output shares its input's buffer, docs/plan-format.md "Aliases"):
# intermediates, a chain of reshapes, outputs aliasing an input, an intermediate
# and another output, a reshape of a constant. Each graph's plan is read back
# (which tensors alias which, how many launches), and the kernels run on the cpu
# backend against the interpreter (--check). Last, --burn-exact in the plan and
# the result cache.
cat >"$TMP/alias.yaml" <<'G'
format: fusec-graph/1
name: alias
inputs:
  x: {dtype: f32, shape: [16, 32]}
  w: {dtype: f32, shape: [32, 8]}
constants:
  k: {dtype: f32, shape: [2, 4], data: [1, 2, 3, 4, 5, 6, 7, 8]}
ops:
  - {op: exp,        in: [x], out: t}
  - {op: reshape,    in: [t], shape: [4, 4, 32], out: r1}
  - {op: reshape,    in: [r1], shape: [16, 32], out: r2}
  - {op: matmul,     in: [r2, w], out: m}
  - {op: reshape,    in: [m], shape: [128], out: mo}
  - {op: reshape,    in: [x], shape: [512], out: xo}
  - {op: reshape,    in: [k], shape: [8], out: ko}
  - {op: sync}
outputs: [m, mo, xo, ko]
G
check alias_compile 0 "$FUSEC" compile "$TMP/alias.yaml" -o "$TMP/a" --plan-style pretty
cat >"$TMP/alias_plan.py" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
t = {x["name"]: x for x in p["tensors"]}
alias = {n: x.get("alias") for n, x in t.items() if "alias" in x}
want = {"r1": "t", "r2": "t", "mo": "m", "xo": "x", "ko": "k"}
assert alias == want, alias
for n in want:
    assert t[n]["buffer"] is False, n
launches = [l for s in p["steps"] for l in s["launches"]]
ops = sorted(o for l in launches for o in l["ops"])
assert ops == [0, 3], ops                       # exp, matmul: no reshape runs
views = [a for s in p["steps"] for a in s.get("aliases", [])]
assert [(a["op"], a["tensor"], a["of"]) for a in views] == \
    [(1, "r1", "t"), (2, "r2", "t"), (4, "mo", "m"), (5, "xo", "x"), (6, "ko", "k")], views
reads = [r for l in launches for r in l["reads"]]
assert "r2" in reads, reads                    # kernels bind the alias by its own name
PY
check alias_plan 0 python3 "$TMP/alias_plan.py" "$TMP/a/alias.plan.json"
check alias_cpu_check 0 "$FUSEC" run "$TMP/alias.yaml" --backend cpu --check
contains alias_cpu_mo "$TMP/out" "check mo: "
contains alias_cpu_xo "$TMP/out" "check xo: "
contains alias_cpu_ko "$TMP/out" "ko: f32[8] sum=36 "
if grep -q "FAIL\|over" "$TMP/out"; then
	echo "FAIL alias_cpu_values: a check failed"; fail=$((fail + 1))
else
	pass=$((pass + 1))
fi
# the runtime accepts the compiled plan (aliases resolved, outputs readable)
check alias_runtime_plan 0 "$(dirname "$FUSEC")/fusec-run" "$TMP/a" --plan-only
contains alias_runtime_dump "$TMP/out" "tensor mo f32[128] output alias of m"
# plans stay deterministic
check alias_compile_again 0 "$FUSEC" compile "$TMP/alias.yaml" -o "$TMP/b" --plan-style pretty --no-cache
same_files alias_deterministic "$TMP/a/alias.plan.json" "$TMP/b/alias.plan.json"

# --burn-exact is recorded in the plan (options.burn_exact), and the result cache
# keeps the two compiles apart: the same graph, same cache, with and without it.
G=tests/golden/lead_reduce.yaml
check burn_plan_default 0 "$FUSEC" compile $G -o "$TMP/d1" --time
check burn_plan_exact 0 "$FUSEC" compile $G -o "$TMP/e1" --burn-exact --time
contains burn_plan_field "$TMP/e1/lead_reduce.plan.json" '"max_bindings":32,"allow_3xtf32":true,"burn_exact":true}'
if grep -q burn_exact "$TMP/d1/lead_reduce.plan.json"; then
	echo "FAIL burn_plan_absent: a default plan says burn_exact"; fail=$((fail + 1))
else
	pass=$((pass + 1))
fi
check burn_plan_default_hit 0 "$FUSEC" compile $G -o "$TMP/d2" --time
contains burn_plan_default_hit_msg "$TMP/err" "result cache hit"
same_files burn_plan_default_same "$TMP/d1/lead_reduce.plan.json" "$TMP/d2/lead_reduce.plan.json"
check burn_plan_exact_hit 0 "$FUSEC" compile $G -o "$TMP/e2" --burn-exact --time
contains burn_plan_exact_hit_msg "$TMP/err" "result cache hit"
same_files burn_plan_exact_same "$TMP/e1/lead_reduce.plan.json" "$TMP/e2/lead_reduce.plan.json"

# burn's view rule (docs/burn-fidelity.md row 2; golden tests/golden/views.yaml):
# the first-use and rank-lowering reshapes run alone as aliases, the reshape of an
# input the kernel already reads fuses; the same with --burn-exact.
for flag in "" --burn-exact; do
	check "views_compile$flag" 0 "$FUSEC" compile tests/golden/views.yaml -o "$TMP/v$flag" $flag
	cat >"$TMP/views.py" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
launches = [l["ops"] for s in p["steps"] for l in s["launches"]]
assert launches == [[1, 2, 3, 4, 6]], launches
views = [(a["op"], a["tensor"], a["of"]) for s in p["steps"] for a in s.get("aliases", [])]
assert views == [(0, "r", "z"), (5, "f", "v")], views
PY
	check "views_plan$flag" 0 python3 "$TMP/views.py" "$TMP/v$flag/views.plan.json"
done
check views_cpu_check 0 "$FUSEC" run tests/golden/views.yaml --backend cpu --check
contains views_cpu_ok "$TMP/out" "max_err/bound="
