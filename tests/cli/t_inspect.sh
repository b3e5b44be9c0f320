# t_inspect.sh: what fusec tells a user about a compile (docs/inspect.md): explain's
# why line per un-fused op and its kernel names (those of the plan and the PTX),
# --log medium, the summary line after compile, the progress line, "did you mean"
# for commands and options, and the README example, man page and bash completion
# against the real command line.
R18=tests/onnx/models/resnet18/model.onnx
# the checks of its fusion and kernel counts keep it NCHW (f32 convs go channels
# last by default for 3xTF32: docs/design.md, "Channels last")
NCHW="--layout nchw"
RB=docs/examples/resnet_block.yaml
G=tests/golden

# ---- explain: a specific why for every un-fused op -----------------------------------
check why-r18 0 "$FUSEC" explain $R18
if grep -q "why: no fuser was ready with a score above 0" "$TMP/out"; then
	echo "FAIL why-r18-specific: the generic why line is back"; fail=$((fail + 1))
else
	pass=$((pass + 1))
fi
n=$(grep '^  why: ' "$TMP/out" | sort -u | wc -l)
[ "$n" -ge 3 ] && pass=$((pass + 1)) || { echo "FAIL why-r18-distinct: $n distinct why lines"; fail=$((fail + 1)); }
# a conv takes its epilogue (the Matmul fuser); one with none after it runs alone
contains why-r18-conv "$TMP/out" "  why: ElementWise: conv2d is not elementwise; Matmul: no epilogue after it to take; Reduce, ReduceBroadcasted: conv2d is neither elementwise nor a reduction"
contains why-r18-pool "$TMP/out" "  why: ElementWise: max_pool2d is not elementwise; Matmul: max_pool2d is not a matmul or a conv2d; Reduce, ReduceBroadcasted: max_pool2d is neither elementwise nor a reduction"
# every un-fused op of the text form has a why line, and only those
cp "$TMP/out" "$TMP/r18.explain"
# under --burn-exact a conv starts no kernel, so the ReLUs after them run alone
check why-r18-burn 0 "$FUSEC" explain $R18 --burn-exact $NCHW
contains why-r18-burn-conv "$TMP/out" "Matmul: a conv2d starts it only outside --burn-exact, without views in front"
contains why-r18-relu "$TMP/out" "ElementWise: alone it saves no memory traffic (score 0); it stopped at ops[5]: conv2d is not elementwise"
contains why-r18-before "$TMP/out" "Matmul: stopped before it, at ops[4]: relu is not a matmul or a conv2d"
check why-r18-every 0 python3 -c '
import re, sys
text = open(sys.argv[1]).read()
for block in re.split(r"\n(?=op \d+ )", text):
    if ": sync" in block.splitlines()[0]:
        continue
    unfused = ": un-fused" in block
    assert unfused == ("\n  why: " in block), block
' "$TMP/r18.explain"
# an alias and a view that launch nothing say so first
check why-alias 0 "$FUSEC" explain $G/views.yaml --op r
contains why-alias-text "$TMP/out" "  why: launches nothing (its result is an alias of its input's buffer), so it costs nothing un-fused; ElementWise: a reshape of a tensor the kernel does not read yet cannot start or join it"
contains why-alias-kernel "$TMP/out" "  kernel none, launches nothing (unit fusec_k0_0): un-fused"
check why-view 0 "$FUSEC" explain $G/views_burn.yaml --burn-exact --op yt
contains why-view-text "$TMP/out" "  why: launches nothing (the kernels reading it read through it), so it costs nothing un-fused; "
# the same in --json: why_not_fused is the line, why_fusers the verdicts
check why-json 0 "$FUSEC" explain $R18 --json
cp "$TMP/out" "$TMP/r18.json"
check why-json-keys 0 python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
unfused = [o for o in d["ops"] if o.get("kernel") is not None and not o["fused"]]
assert len(unfused) >= 4, len(unfused)
for o in unfused:
    assert "no fuser was ready" not in o["why_not_fused"], o
    v = {w["fuser"]: w for w in o["why_fusers"]}
    assert set(v) == {"ElementWise", "Matmul", "Reduce", "ReduceBroadcasted"}, o
    for w in o["why_fusers"]:
        assert w["verdict"] in ("refused", "stopped_before", "not_ready", "score_0", "outscored", "other"), w
        assert w["text"] and w["text"] in o["why_not_fused"], (w, o["why_not_fused"])
conv = [o for o in unfused if o["op_type"] == "conv2d"][0]
assert conv["why_fusers"][1] == {"fuser": "Matmul", "verdict": "not_ready", "reason": None, "text": "no epilogue after it to take"}, conv
fused = [o for o in d["ops"] if o["fused"]]
assert fused and all(o["why_not_fused"] is None and "why_fusers" not in o for o in fused)
' "$TMP/r18.json"
check why-json-alias 0 "$FUSEC" explain $G/views.yaml --op r --json
cp "$TMP/out" "$TMP/alias.json"
check why-json-alias-keys 0 python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))["ops"][0]
assert o["kernel"] is None and o["unit"] == "fusec_k0_0" and o["launches_nothing"] == "alias", o
assert o["why_not_fused"].startswith("launches nothing (its result is an alias"), o
' "$TMP/alias.json"

# ---- one kernel name across explain, the plan and the PTX ------------------------------
cat >"$TMP/names.py" <<'PY'
import json, re, sys
ex = json.load(open(sys.argv[1])); plan = json.load(open(sys.argv[2]))
ptx = set(re.findall(r"\.entry\s+(\w+)", open(sys.argv[3]).read()))
where = {}
for st in plan["steps"]:
    for l in st["launches"]:
        for o in l["ops"]:
            where.setdefault(o, (l["kernel"], l["unit"]))
names = {k["name"] for k in plan["kernels"]}
n = 0
for o in ex["ops"]:
    if o.get("kernel") is None:
        continue
    n += 1
    assert where[o["op"]] == (o["kernel"], o["unit"]), (o, where.get(o["op"]))
    assert o["kernel"] in names and o["kernel"] in ptx, o
    assert not o["kernel"].startswith("fusec_k"), o
assert n > 0
PY
for g in $R18 $RB $G/views.yaml $G/chains.yaml tests/bench/gpu/views_sink_f32.json; do
	n=$(basename "$g" | sed 's/\..*//')
	check names-compile-$n 0 "$FUSEC" compile -q "$g" -o "$TMP/names_$n" --no-cache &&
	check names-explain-$n 0 "$FUSEC" explain "$g" --json && cp "$TMP/out" "$TMP/names.json" &&
	check names-match-$n 0 python3 "$TMP/names.py" "$TMP/names.json" "$TMP/names_$n"/*.plan.json "$TMP/names_$n"/*.ptx
done
# --arch changes a matmul's kernel, and explain follows it
check names-arch-compile 0 "$FUSEC" compile -q $G/fusers.yaml --arch sm_80 -o "$TMP/names_a" --no-cache
check names-arch-explain 0 "$FUSEC" explain $G/fusers.yaml --arch sm_80 --json
cp "$TMP/out" "$TMP/names.json"
check names-arch-match 0 python3 "$TMP/names.py" "$TMP/names.json" "$TMP/names_a/fusers.plan.json" "$TMP/names_a/fusers.ptx"
check names-text 0 "$FUSEC" explain $RB --op head.fc
k=$(grep -o '"kernel":"matmul_fused_[0-9a-f]*"' "$TMP/names_resnet_block/resnet_block.plan.json" | tail -1 | cut -d'"' -f4)
contains names-text-line "$TMP/out" "  kernel $k (unit fusec_k8_0): fused Matmul (score=100, 2 ops)"
check names-bad-arch 2 "$FUSEC" explain $RB --arch sm_1

# ---- --log medium: between basic and full --------------------------------------------
check log-basic 0 "$FUSEC" compile -q $RB -o "$TMP/lb" --log basic
cp "$TMP/err" "$TMP/basic.log"
check log-medium 0 "$FUSEC" compile -q $RB -o "$TMP/lm" --log medium
cp "$TMP/err" "$TMP/medium.log"
check log-full 0 "$FUSEC" compile -q $RB -o "$TMP/lf" --log full
cp "$TMP/err" "$TMP/full.log"
nb=$(wc -l <"$TMP/basic.log"); nm=$(wc -l <"$TMP/medium.log"); nf=$(wc -l <"$TMP/full.log")
[ "$nb" -lt "$nm" ] && [ "$nm" -lt "$nf" ] && [ "$nm" -ge $((3 * nb)) ] && pass=$((pass + 1)) ||
	{ echo "FAIL log-medium-between: basic $nb, medium $nm, full $nf lines"; fail=$((fail + 1)); }
contains log-medium-block "$TMP/medium.log" "[block] 5 ops, starting at Module::Conv2d [ops[0] 'stem.conv' → stem_c]: best Matmul (score=520, 4 ops)"
contains log-medium-exec "$TMP/medium.log" "[execute] step 0, segment 0 (explored, lazy, plan #0): 4 ops → 1 launch: fusec_k0_0 Matmul score=520 ops[0-3]"
contains log-medium-alone "$TMP/medium.log" "[execute] step 1, segment 0 (explored, lazy, plan #1): 1 op → 1 launch: fusec_k1_0 un-fused Module::MaxPool2d ops[4]"
contains log-medium-end "$TMP/medium.log" "[plan] exploration completed: lazy, 3/4 ops optimized"
[ "$(grep -c '^\[execute\]' "$TMP/medium.log")" = 9 ] && pass=$((pass + 1)) ||
	{ echo "FAIL log-medium-every-step: want 9 [execute] lines"; fail=$((fail + 1)); }
if grep -q '^\[score\]\|^\[stream\]\|fusion trace' "$TMP/medium.log"; then
	echo "FAIL log-medium-not-full: full's lines in the medium log"; fail=$((fail + 1))
else
	pass=$((pass + 1))
fi
if grep -q '^\[execute\]' "$TMP/full.log"; then
	echo "FAIL log-full-table: full has the trace table, not the execute line"; fail=$((fail + 1))
else
	pass=$((pass + 1))
fi
check log-medium-cache-hit 0 "$FUSEC" compile -q $G/reuse.yaml -o "$TMP/lr" --log medium
contains log-medium-hit "$TMP/err" "[plan] cache hit: execute plan #0 (sync, segment has 4 ops)"
contains log-medium-hit-exec "$TMP/err" "(cache hit, sync, plan #0): 4 ops → 1 launch: fusec_k0_0 ElementWise score=630"
check log-medium-json 0 "$FUSEC" compile -q $RB -o "$TMP/lj" --log medium --log-format json
cp "$TMP/err" "$TMP/medium.jsonl"
check log-medium-json-events 0 python3 -c '
import json, sys
ev = [json.loads(l)["event"] for l in open(sys.argv[1])]
assert ev.count("block") == 9 and ev.count("execute") == 9, ev
assert "block_fuser" not in ev and "register_new" not in ev, ev
' "$TMP/medium.jsonl"

# ---- the summary line after compile ----------------------------------------------------
check summary 0 "$FUSEC" compile $RB -o "$TMP/s1" --no-result-cache
cp "$TMP/err" "$TMP/summary"
contains summary-text "$TMP/summary" "fusec: compiled resnet_block: 23 ops → 8 launches, 8 distinct kernels, "
contains summary-wrote "$TMP/out" "wrote $TMP/s1/resnet_block.plan.json"
check summary-one-line 0 test "$(wc -l <"$TMP/summary")" -eq 1
# the bytes: every launch's tensors read and written, from the plan
check summary-bytes 0 python3 -c '
import json, re, sys
p = json.load(open(sys.argv[1]))
size = {"f64": 8, "f32": 4, "f16": 2, "bf16": 2, "i64": 8, "i32": 4, "i16": 2, "i8": 1, "u8": 1, "bool": 1}
b = {}
for t in p["tensors"]:
    n = size[t["dtype"]]
    for d in t["shape"]:
        n *= d
    b[t["name"]] = n
total = sum(b[x] for s in p["steps"] for l in s["launches"] for x in l["reads"] + l["writes"])
line = open(sys.argv[2]).read()
m = re.search(r"kernels, ([0-9.]+) (B|KB|MB|GB) moved, [0-9.]+ s\n$", line)
assert m, line
v = float(m.group(1)) * {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9}[m.group(2)]
assert abs(v - total) <= 0.05 * {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9}[m.group(2)], (v, total)
' "$TMP/s1/resnet_block.plan.json" "$TMP/summary"
check summary-onnx 0 "$FUSEC" compile $R18 -o "$TMP/s2" $NCHW
contains summary-onnx-text "$TMP/err" "fusec: compiled model: 49 ops → 22 launches, 20 distinct kernels,"
# a result cache hit says the same numbers
check summary-rc1 0 "$FUSEC" compile $RB -o "$TMP/s3"
sed 's/, [0-9.]* s$//' "$TMP/err" >"$TMP/first"
check summary-rc2 0 "$FUSEC" compile $RB -o "$TMP/s3"
contains summary-rc-hit "$TMP/err" "(result cache hit)"
sed 's/, [0-9.]* s (result cache hit)$//' "$TMP/err" >"$TMP/second"
same_files summary-rc-same "$TMP/first" "$TMP/second"
# -q hides it, and the wrote line
check summary-quiet 0 "$FUSEC" compile -q $RB -o "$TMP/s4"
same summary-quiet-err "$TMP/err" ""
same summary-quiet-out "$TMP/out" ""
check summary-json 0 "$FUSEC" compile $RB -o "$TMP/s5" --no-result-cache --log basic --log-format json
cp "$TMP/err" "$TMP/summary.jsonl"
check summary-json-line 0 python3 -c '
import json, sys
e = json.loads(open(sys.argv[1]).read().splitlines()[-1])
assert e["event"] == "compiled" and e["stream"] is None and e["graph"] == "resnet_block", e
assert e["ops"] == 23 and e["launches"] == 8 and e["kernels"] == 8 and e["bytes"] > 0, e
' "$TMP/summary.jsonl"
# a failed compile prints no summary
check summary-fail 1 "$FUSEC" compile tests/errors/typo_op.yaml -o "$TMP/s6"
if grep -q "fusec: compiled" "$TMP/err"; then
	echo "FAIL summary-fail-none: a summary after a failed compile"; fail=$((fail + 1))
else
	pass=$((pass + 1))
fi

# ---- progress: never on a pipe; FUSEC_PROGRESS=1 forces it --------------------------
check progress-pipe 0 "$FUSEC" compile $R18 -o "$TMP/p1" --no-cache $NCHW
if grep -q "kernels\$\|\[[0-9]*/[0-9?]*\]" "$TMP/err" || tr -d '\n' <"$TMP/err" | grep -q "$(printf '\r')"; then
	echo "FAIL progress-pipe-none: progress on a pipe"; fail=$((fail + 1))
else
	pass=$((pass + 1))
fi
check progress-forced 0 env FUSEC_PROGRESS=1 "$FUSEC" compile $R18 -o "$TMP/p2" --no-cache $NCHW
tr '\r' '\n' <"$TMP/err" >"$TMP/progress"
contains progress-forced-start "$TMP/progress" "[0/?] kernels: building"
contains progress-forced-done "$TMP/progress" "[20/20] kernels"
contains progress-forced-plan "$TMP/progress" "[20/20] kernels: writing the plan"
contains progress-forced-clear "$TMP/err" "$(printf '\r\033[K')fusec: compiled model"
check progress-off 0 env FUSEC_PROGRESS=0 "$FUSEC" compile $R18 -o "$TMP/p3" --no-cache $NCHW
if grep -q "kernels:" "$TMP/err"; then
	echo "FAIL progress-off: FUSEC_PROGRESS=0 showed progress"; fail=$((fail + 1))
else
	pass=$((pass + 1))
fi
same_files progress-same-ptx "$TMP/p1/model.ptx" "$TMP/p2/model.ptx"
same_files progress-same-plan "$TMP/p1/model.plan.json" "$TMP/p2/model.plan.json"
# on a terminal, through script(1) when it is there: a short compile (the smallest
# example: under the sanitizers the resnet block took over a second) shows nothing;
# one held 1.5 s before its search (FUSEC_TEST_PROGRESS_DELAY_MS) shows the phase it
# is in, from the ticker, then the kernels, and clears the line; with a log, nothing
if command -v script >/dev/null 2>&1; then
	script -qec "$FUSEC compile -q docs/examples/reuse.yaml -o $TMP/p4 --no-cache" /dev/null >"$TMP/tty" 2>&1
	if grep -q "kernels" "$TMP/tty"; then
		echo "FAIL progress-tty-short: progress for a compile under a second"; fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
	script -qec "env FUSEC_TEST_PROGRESS_DELAY_MS=1500 $FUSEC compile -q $R18 -o $TMP/p5 --no-cache $NCHW" \
		/dev/null >"$TMP/tty" 2>&1
	tr '\r' '\n' <"$TMP/tty" >"$TMP/tty_lines"
	contains progress-tty-search "$TMP/tty_lines" "fusec: searching fusions"
	contains progress-tty-kernels "$TMP/tty_lines" "[20/20] kernels"
	contains progress-tty-clear "$TMP/tty" "$(printf 'plan\033[K\r\033[K')"
	script -qec "env FUSEC_TEST_PROGRESS_DELAY_MS=1500 $FUSEC compile -q $R18 -o $TMP/p6 --no-cache --log basic" \
		/dev/null >"$TMP/tty" 2>&1
	if grep -q "kernels\|searching" "$TMP/tty"; then
		echo "FAIL progress-tty-log: progress mixed into a log"; fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
fi

# ---- did you mean: commands and options ------------------------------------------------
check dym-command 2 "$FUSEC" compil $RB
same dym-command-text "$TMP/err" "fusec: unknown command 'compil'; did you mean 'compile'?
Try 'fusec --help'."
check dym-command-far 2 "$FUSEC" frobnicate
same dym-command-far-text "$TMP/err" "fusec: unknown command 'frobnicate' (commands: compile, normalize, explain, run, bench, ops, import)
Try 'fusec --help'."
check dym-output 2 "$FUSEC" compile --ouput "$TMP/d" $RB
same dym-output-text "$TMP/err" "fusec compile: unknown option '--ouput'; did you mean '--output'?
Try 'fusec compile --help'."
check dym-output-eq 2 "$FUSEC" compile --ouput="$TMP/d" $RB
contains dym-output-eq-text "$TMP/err" "unknown option '--ouput'; did you mean '--output'?"
check dym-explain 2 "$FUSEC" explain --jsn $RB
contains dym-explain-text "$TMP/err" "fusec explain: unknown option '--jsn'; did you mean '--json'?"
check dym-driver-opt 2 "$FUSEC" compile --input-shap x=1 $RB
contains dym-driver-opt-text "$TMP/err" "did you mean '--input-shape'?"
check dym-import 2 "$FUSEC" import --outptu x.json $RB
contains dym-import-text "$TMP/err" "fusec import: unknown option '--outptu'; did you mean '--output'?"
check dym-ops 2 "$FUSEC" ops --jsno
contains dym-ops-text "$TMP/err" "fusec ops: unknown option '--jsno'; did you mean '--json'?"
check dym-far 2 "$FUSEC" compile --frobnicate $RB
same dym-far-text "$TMP/err" "fusec compile: unknown option '--frobnicate'
Try 'fusec compile --help'."
check dym-missing 2 "$FUSEC" compile $RB --log
same dym-missing-text "$TMP/err" "fusec compile: option '--log' needs a value
Try 'fusec compile --help'."
check dym-short 2 "$FUSEC" compile -Z $RB
contains dym-short-text "$TMP/err" "fusec compile: unknown option '-Z'"
check dym-short-missing 2 "$FUSEC" compile $RB -o
contains dym-short-missing-text "$TMP/err" "fusec compile: option '-o' needs a value"
check dym-no-value 2 "$FUSEC" explain $RB --json=yes
same dym-no-value-text "$TMP/err" "fusec explain: option '--json' takes no value
Try 'fusec explain --help'."
check dym-json 2 "$FUSEC" --diagnostics json compil
same dym-json-text "$TMP/err" '{"severity":"error","file":null,"line":0,"col":0,"code":"usage","message":"unknown command '"'compil'; did you mean 'compile'?"'"}'
# --output is -o
check output-long 0 "$FUSEC" compile -q $RB --output "$TMP/o1"
check output-long-plan 0 test -f "$TMP/o1/resnet_block.plan.json"

# ---- the README's example, the man page and the completion ----------------------------
# every line of the README's explain example (but "...") is what explain prints
sed -n '/^    \$ build\/fusec explain docs\/examples\/resnet_block.yaml --op /,/^$/p' README.md |
	sed '1d;/^$/d;/^        \.\.\.$/d;s/^    //' >"$TMP/readme_lines"
check readme-example-lines 0 test "$(wc -l <"$TMP/readme_lines")" -ge 5
op=$(sed -n 's/^    \$ build\/fusec explain docs\/examples\/resnet_block.yaml --op \(.*\)$/\1/p' README.md)
check readme-example 0 "$FUSEC" explain $RB --op "$op"
bad=0
while IFS= read -r line; do
	grep -qxF -- "$line" "$TMP/out" || { echo "    not in explain's output: $line"; bad=1; }
done <"$TMP/readme_lines"
[ $bad = 0 ] && pass=$((pass + 1)) || { echo "FAIL readme-example-current"; fail=$((fail + 1)); }
contains readme-example-alone "$TMP/out" "un-fused"
# every option of every command's --help: in the man page and in the completion
for c in compile explain run bench import ops; do
	"$FUSEC" $c --help | grep -o -- '--[a-z0-9][a-z0-9-]*' | sort -u >"$TMP/opts_$c"
	for o in $(cat "$TMP/opts_$c") --input-shape --max-ops --max-errors --diagnostics; do
		[ $c = ops ] && [ $o != --json ] && [ $o != --burn-exact ] && continue
		m=$(printf '%s' "$o" | sed 's/-/\\\\-/g')
		grep -q -- "$m" docs/man/fusec.1 || { echo "FAIL man-$c$o: not in docs/man/fusec.1"; fail=$((fail + 1)); continue; }
		got=$(bash -c '. docs/completion/fusec; COMP_WORDS=(fusec "$1" "$2"); COMP_CWORD=2; _fusec; echo " ${COMPREPLY[*]} "' sh "$c" "$o")
		case $got in
		*" $o "*) pass=$((pass + 1)) ;;
		*) echo "FAIL completion-$c$o: got '$got'"; fail=$((fail + 1)) ;;
		esac
	done
done
got=$(bash -c '. docs/completion/fusec; COMP_WORDS=(fusec im); COMP_CWORD=1; _fusec; echo "${COMPREPLY[*]}"')
same completion-import-cmd /dev/stdin "import" <<EOF
$got
EOF
for w in import ONNX input-shape cache-dir no-result-cache trust-cache-dir; do
	m=$(printf '%s' "$w" | sed 's/-/\\\\-/g')
	grep -q -- "$m" docs/man/fusec.1 && pass=$((pass + 1)) || { echo "FAIL man-knows-$w"; fail=$((fail + 1)); }
done
