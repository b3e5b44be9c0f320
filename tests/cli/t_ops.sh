# t_ops.sh: `fusec ops` lists every op of ir/ops.def with arity, attributes, dtypes
# and the fusers that take it (asked of the fusers themselves).
check ops 0 "$FUSEC" ops
n=$(grep -c '^X(' ir/ops.def)
[ "$(($(wc -l < "$TMP/out") - 1))" = "$n" ] && pass=$((pass + 1)) ||
	{ echo "FAIL ops-count: want $n rows"; fail=$((fail + 1)); }
# spot checks against the fusers' own rules
grep -E '^matmul +Matmul +2 +- +- +numeric \(not bool\) +Matmul$' "$TMP/out" >/dev/null &&
	pass=$((pass + 1)) || { echo "FAIL ops-matmul"; grep '^matmul' "$TMP/out"; fail=$((fail + 1)); }
grep -E '^relu .*ElementWise, Matmul \(after matmul\), Reduce, ReduceBroadcasted$' "$TMP/out" >/dev/null &&
	pass=$((pass + 1)) || { echo "FAIL ops-relu"; grep '^relu' "$TMP/out"; fail=$((fail + 1)); }
grep -E '^reshape .* ElementWise$' "$TMP/out" >/dev/null && pass=$((pass + 1)) ||
	{ echo "FAIL ops-reshape"; grep '^reshape' "$TMP/out"; fail=$((fail + 1)); }
grep -E '^sum .*axis .* Reduce, ReduceBroadcasted$' "$TMP/out" >/dev/null && pass=$((pass + 1)) ||
	{ echo "FAIL ops-sum"; grep '^sum' "$TMP/out"; fail=$((fail + 1)); }
# by default no fuser takes a pool; under --burn-exact burn's NHWCRelayout takes one
# to end a trace, and takes what ElementWise takes (docs/burn-fidelity.md row 11)
grep -E '^max_pool2d +MaxPool2d .* none \(runs alone\)$' "$TMP/out" >/dev/null &&
	pass=$((pass + 1)) || { echo "FAIL ops-max_pool2d"; grep '^max_pool2d' "$TMP/out"; fail=$((fail + 1)); }
cp "$TMP/out" "$TMP/ops_default"
check ops-burn 0 "$FUSEC" ops --burn-exact
grep -E '^max_pool2d +MaxPool2d .* NHWCRelayout \(ends a trace\)$' "$TMP/out" >/dev/null &&
	pass=$((pass + 1)) || { echo "FAIL ops-burn-max_pool2d"; grep '^max_pool2d' "$TMP/out"; fail=$((fail + 1)); }
grep -E '^relu .*ElementWise, Matmul \(after matmul\), Reduce, ReduceBroadcasted, NHWCRelayout$' "$TMP/out" >/dev/null &&
	pass=$((pass + 1)) || { echo "FAIL ops-burn-relu"; grep '^relu' "$TMP/out"; fail=$((fail + 1)); }
# a conv starts a Matmul kernel (its implicit GEMM, codegen/matmul_conv.c), not
# under --burn-exact
grep -E '^conv2d +Conv2d +2-3 +- +stride,padding,dilation,groups,layout +float +none \(runs alone\)$' "$TMP/out" >/dev/null &&
	pass=$((pass + 1)) || { echo "FAIL ops-burn-conv2d"; grep '^conv2d' "$TMP/out"; fail=$((fail + 1)); }
cp "$TMP/ops_default" "$TMP/out"
grep -E '^conv2d +Conv2d +2-3 +- +stride,padding,dilation,groups,layout +float +Matmul$' "$TMP/out" >/dev/null &&
	pass=$((pass + 1)) || { echo "FAIL ops-conv2d"; grep '^conv2d' "$TMP/out"; fail=$((fail + 1)); }
check ops-json 0 "$FUSEC" ops --json
python3 -c 'import json,sys
d=json.load(open(sys.argv[1])); ops={o["op"]:o for o in d["ops"]}
assert ops["gelu"]["optional"]==["approximate"], ops["gelu"]
assert ops["cat"]["inputs_max"] is None
assert ops["matmul"]["fusers"]==["Matmul"]
assert "Matmul" in ops["add"]["fusers_after_matmul"]
assert ops["avg_pool2d"]["fusers"]==[] and ops["avg_pool2d"]["fusers_ending"]==[]
' "$TMP/out" && pass=$((pass + 1)) || { echo "FAIL ops-json"; fail=$((fail + 1)); }
check ops-json-burn 0 "$FUSEC" ops --json --burn-exact
python3 -c 'import json,sys
d=json.load(open(sys.argv[1])); ops={o["op"]:o for o in d["ops"]}
assert ops["avg_pool2d"]["fusers"]==[] and ops["avg_pool2d"]["fusers_ending"]==["NHWCRelayout"]
assert ops["add"]["fusers_ending"]==[] and "NHWCRelayout" in ops["add"]["fusers"]
' "$TMP/out" && pass=$((pass + 1)) || { echo "FAIL ops-json-burn"; fail=$((fail + 1)); }
check ops-extra 2 "$FUSEC" ops extra
