# t_schema.sh: the JSON Schemas of docs/schema/ (Debian's python3-jsonschema).
# Every example graph validates against fusec-graph/1, the plan of every one of them
# against fusec-plan/1; broken graphs and plans do not; the graph schema is the one
# tests/schema/make_graph_schema.py generates from `fusec ops --json` (ir/ops.def).
S=docs/schema
if ! python3 -c 'import jsonschema, yaml' 2>/dev/null; then
	echo "FAIL schema: python3-jsonschema and python3-yaml are needed (make deps)"
	fail=$((fail + 1)); return
fi
graphs=$(ls docs/examples/*.yaml docs/examples/*.json tests/golden/*.yaml tests/bench/gpu/*.json)
if python3 tests/schema/validate.py $S/fusec-graph-1.schema.json $graphs; then
	pass=$((pass + 1)); else echo "FAIL schema-graphs"; fail=$((fail + 1)); fi
mkdir -p "$TMP/plans"
ok=1
for g in $graphs; do
	args=$(sed -n 's/^# args: //p' "$g")
	"$FUSEC" compile "$g" $args -q -o "$TMP/plans" 2>"$TMP/err" || { ok=0; echo "FAIL schema-compile $g"; }
done
[ $ok = 1 ] && pass=$((pass + 1)) || fail=$((fail + 1))
if python3 tests/schema/validate.py $S/fusec-plan-1.schema.json "$TMP"/plans/*.plan.json \
	tests/runtime/axpb.plan.json; then
	pass=$((pass + 1)); else echo "FAIL schema-plans"; fail=$((fail + 1)); fi
[ "$(ls "$TMP"/plans/*.plan.json | wc -l)" -ge 30 ] && pass=$((pass + 1)) ||
	{ echo "FAIL schema-plans: too few plans"; fail=$((fail + 1)); }

# the schemas can fail: an unknown op, an attribute the op does not take, a missing
# key, a plan launch argument of an unknown kind
bad() {
	printf '%s\n' "$2" > "$TMP/$1"
	if python3 tests/schema/validate.py "$3" "$TMP/$1" > "$TMP/out"; then
		echo "FAIL schema-rejects-$1: validated"; fail=$((fail + 1))
	else pass=$((pass + 1)); fi
}
G=$S/fusec-graph-1.schema.json
bad relue.json '{"format":"fusec-graph/1","inputs":{"x":{"dtype":"f32","shape":[2]}},"ops":[{"op":"relue","in":["x"],"out":"y"}],"outputs":["y"]}' $G
bad axes.json '{"format":"fusec-graph/1","inputs":{"x":{"dtype":"f32","shape":[2]}},"ops":[{"op":"sum","in":["x"],"axes":[0],"out":"y"}],"outputs":["y"]}' $G
bad noaxis.json '{"format":"fusec-graph/1","inputs":{"x":{"dtype":"f32","shape":[2]}},"ops":[{"op":"sum","in":["x"],"out":"y"}],"outputs":["y"]}' $G
bad float32.json '{"format":"fusec-graph/1","inputs":{"x":{"dtype":"float32","shape":[2]}},"ops":[],"outputs":["x"]}' $G
bad arity.json '{"format":"fusec-graph/1","inputs":{"x":{"dtype":"f32","shape":[2]}},"ops":[{"op":"add","in":["x"],"out":"y"}],"outputs":["y"]}' $G
bad zero_nan.json '{"format":"fusec-graph/1","inputs":{"q":{"dtype":"f32","shape":[2,2]},"kt":{"dtype":"f32","shape":[2,2]},"v":{"dtype":"f32","shape":[2,2]}},"ops":[{"op":"attention","in":["q","kt","v"],"out":"y","scalar":1,"zero_nan":1}],"outputs":["y"]}' $G
sed 's/"i64":/"u64":/' "$TMP/plans/reuse.plan.json" > "$TMP/badplan.json"
if python3 tests/schema/validate.py $S/fusec-plan-1.schema.json "$TMP/badplan.json" >/dev/null; then
	echo "FAIL schema-rejects-plan"; fail=$((fail + 1)); else pass=$((pass + 1)); fi
# an alias (docs/plan-format.md) has no buffer of its own
grep -q '"alias":"t","buffer":false' "$TMP/plans/view_break.plan.json" && pass=$((pass + 1)) ||
	{ echo "FAIL schema-alias: view_break's reshape is no alias"; fail=$((fail + 1)); }
sed 's/"alias":"t","buffer":false/"alias":"t","buffer":true/' "$TMP/plans/view_break.plan.json" > "$TMP/badalias.json"
if python3 tests/schema/validate.py $S/fusec-plan-1.schema.json "$TMP/badalias.json" >/dev/null; then
	echo "FAIL schema-rejects-alias-buffer"; fail=$((fail + 1)); else pass=$((pass + 1)); fi

# plans for every size (fusec-plan/2): the dynamic graphs and the ONNX models with
# dim_params, with ranges of sizes and several arches; a plan/1 and a plan/2 with a
# grid in place of its sizes do not validate
mkdir -p "$TMP/plans2"
ok=1
for g in tests/bench/dynamic/*.yaml tests/onnx/dynamic/heads.onnx tests/onnx/dynamic/cls.onnx \
	 tests/onnx/dynamic/bert_micro.onnx tests/onnx/dynamic/llama_micro.onnx; do
	n=$(basename "$g"); n=${n%.*}
	"$FUSEC" compile "$g" -q -o "$TMP/plans2/$n" --dims batch=1..8,seq=1..64 --shape-buckets 2 \
		--arch sm_80,sm_90a 2>"$TMP/err" || { ok=0; echo "FAIL schema-compile2 $g"; cat "$TMP/err"; }
done
[ $ok = 1 ] && pass=$((pass + 1)) || fail=$((fail + 1))
if python3 tests/schema/validate.py $S/fusec-plan-2.schema.json "$TMP"/plans2/*/*.plan.json; then
	pass=$((pass + 1)); else echo "FAIL schema-plans2"; fail=$((fail + 1)); fi
grep -q '"dims":\[{"name":"batch","min":1,"max":4}' "$TMP/plans2/heads/heads.plan.json" &&
	pass=$((pass + 1)) || { echo "FAIL schema-plans2-ranges: no variant for a range"; fail=$((fail + 1)); }
if python3 tests/schema/validate.py $S/fusec-plan-2.schema.json "$TMP/plans/reuse.plan.json" >/dev/null; then
	echo "FAIL schema-rejects-plan1-as-2"; fail=$((fail + 1)); else pass=$((pass + 1)); fi
sed 's/"dims":\["batch\*seq"/"grid":[1,1,1],"dimz":["batch*seq"/' "$TMP/plans2/heads/heads.plan.json" > "$TMP/badplan2.json"
if python3 tests/schema/validate.py $S/fusec-plan-2.schema.json "$TMP/badplan2.json" >/dev/null; then
	echo "FAIL schema-rejects-plan2-grid"; fail=$((fail + 1)); else pass=$((pass + 1)); fi

# the graph schema follows ops.def
python3 tests/schema/make_graph_schema.py "$FUSEC" > "$TMP/gen.json"
same_files schema-generated "$TMP/gen.json" $G
