# t_search.sh: the fusion search against golden outputs (tests/golden/).
# For every tests/golden/NAME.yaml: `compile --log full` (plus the options on its
# `# args:` line) must print exactly NAME.log on stderr and write a plan that is
# byte-identical across runs; NAME.explain, when present, is `explain`'s output.
# -q leaves out the summary line after the compile (it holds the time).
# UPDATE_GOLDEN=1 rewrites the expected files: review every change by eye.
G=tests/golden
for y in $G/*.yaml; do
	n=$(basename "$y" .yaml)
	args=$(sed -n 's/^# args: //p' "$y")
	check "search-$n" 0 "$FUSEC" compile -q "$y" $args -o "$TMP/a" --log full --verify || continue
	if [ -n "${UPDATE_GOLDEN:-}" ]; then
		cp "$TMP/err" "$G/$n.log"
	fi
	same_files "search-$n-log" "$TMP/err" "$G/$n.log"
	check "search-$n-again" 0 "$FUSEC" compile "$y" $args -o "$TMP/b" --verify &&
		same_files "search-$n-deterministic" "$TMP/a/$n.plan.json" "$TMP/b/$n.plan.json"
	if [ -f "$G/$n.explain" ] || { [ -n "${UPDATE_GOLDEN:-}" ] && grep -q '^# explain' "$y"; }; then
		check "explain-$n" 0 "$FUSEC" explain "$y" $args || continue
		[ -n "${UPDATE_GOLDEN:-}" ] && cp "$TMP/out" "$G/$n.explain"
		same_files "explain-$n-out" "$TMP/out" "$G/$n.explain"
	fi
	# NAME.explain.json: `explain --json`; NAME.log.jsonl: `--log-format json`
	if [ -f "$G/$n.explain.json" ] || { [ -n "${UPDATE_GOLDEN:-}" ] && grep -q '^# explain' "$y"; }; then
		check "explain-json-$n" 0 "$FUSEC" explain "$y" $args --json || continue
		[ -n "${UPDATE_GOLDEN:-}" ] && cp "$TMP/out" "$G/$n.explain.json"
		same_files "explain-json-$n-out" "$TMP/out" "$G/$n.explain.json"
	fi
	if [ -f "$G/$n.log.jsonl" ] || { [ -n "${UPDATE_GOLDEN:-}" ] && grep -q '^# explain' "$y"; }; then
		check "log-json-$n" 0 "$FUSEC" compile -q "$y" $args -o "$TMP/j" --log-format json || continue
		[ -n "${UPDATE_GOLDEN:-}" ] && cp "$TMP/err" "$G/$n.log.jsonl"
		same_files "log-json-$n-out" "$TMP/err" "$G/$n.log.jsonl"
	fi
done

# The stories the goldens tell, checked on their own so a regenerated golden
# cannot silently lose them.
check reuse 0 "$FUSEC" compile $G/reuse.yaml -o "$TMP/r" --log full
[ "$(grep -c 'exploration completed' "$TMP/err")" = 2 ] && pass=$((pass + 1)) ||
	{ echo "FAIL reuse: want 2 explorations"; fail=$((fail + 1)); }
[ "$(grep -c 'cache hit: execute plan #0 (sync, segment has 4 ops)' "$TMP/err")" = 3 ] &&
	pass=$((pass + 1)) || { echo "FAIL reuse: want 3 cache hits of #0"; fail=$((fail + 1)); }
contains reuse-score "$TMP/err" "▸ fused ElementWise (score=630, 4 ops)"
contains reuse-kernel "$TMP/r/reuse.plan.json" '"fusec_k1_0"'
check chains 0 "$FUSEC" compile $G/chains.yaml -o "$TMP/c" --log full
contains chains-5-blocks "$TMP/err" "[stream] op 32 NumericFloat::MulScalar [ops[32] → c4_1] → new block (total: 5)"
contains chains-score "$TMP/err" "▸ fused ElementWise (score=7390, 40 ops)"
contains chains-reads "$TMP/c/chains.plan.json" '"reads":["x0","x1","x2","x3","x4"]'
contains chains-writes "$TMP/c/chains.plan.json" '"writes":["y0","y1","y2","y3","y4"]'
check lone 0 "$FUSEC" compile $G/lone.yaml -o "$TMP/l" --log full
contains lone-unfused "$TMP/err" "▸ un-fused (1 op)"
contains lone-unit "$TMP/l/lone.plan.json" '"unit":"fusec_k0_0"'
contains lone-kernel "$TMP/l/lone.plan.json" '"kind":"single"'
check maxblocks 0 "$FUSEC" compile $G/maxblocks.yaml --max-blocks 2 -o "$TMP/m" --log medium
contains maxblocks-stop "$TMP/err" "[stream] stopped (max_blocks=2 reached) at op 32 (NumericFloat::Add [ops[32] → c4_1])"
check fusers 0 "$FUSEC" compile $G/fusers.yaml -o "$TMP/f" --log full
contains fusers-softmax "$TMP/err" "▸ fused ReduceBroadcasted (score=520, 5 ops)"
contains fusers-matmul "$TMP/err" "▸ fused Matmul (score=310, 3 ops)"
contains fusers-reduce "$TMP/err" "▸ fused Reduce (score=420, 4 ops)"
check cycle 0 "$FUSEC" compile $G/cycle.yaml --max-blocks 8 -o "$TMP/y" --log medium
contains cycle-refused "$TMP/err" "[merge] refused: blocks starting at op 1 and op 10 (would create a cycle)"
contains cycle-halving "$TMP/err" "[merge] 6 blocks merged into 3 (before settling)"
check cycle-full 0 "$FUSEC" compile $G/cycle.yaml --max-blocks 8 -o "$TMP/y2" --log full
contains cycle-burn-merge "$TMP/err" "[block] 5 ops, starting at NumericFloat::Add [ops[9] → c]: best ElementWise (score=640, 5 ops)"
check holes 0 "$FUSEC" compile $G/holes.yaml -o "$TMP/h" --log medium
contains holes-filled "$TMP/err" "[holes] 1 unclaimed op(s) between claimed ones: searching them again"
check holes-full 0 "$FUSEC" compile $G/holes.yaml -o "$TMP/h2" --log full
contains holes-score "$TMP/err" "best Reduce (score=210, 3 ops)"
check lazy 0 "$FUSEC" compile $G/lazy_triggers.yaml -o "$TMP/z" --log full
contains lazy-onops "$TMP/err" "[plan] cache hit: execute plan #0 (lazy, segment has 3 ops)"
contains lazy-always "$TMP/err" "[plan] cache hit: execute plan #1 (lazy, segment has 2 ops)"
contains lazy-triggers "$TMP/z/lazy_triggers.plan.json" '"kind":"Always"'
check cap 0 "$FUSEC" compile $G/cap.yaml -o "$TMP/k" --log full
contains cap-elemwise "$TMP/err" "[fuser] closed on Float::Exp [ops[66] → a65] (ElementWise, max-ops); had 66 ops"
contains cap-matmul "$TMP/err" "[fuser] closed on Float::Exp [ops[133] → m66] (Matmul, max-ops); had 66 ops"
check rb-ready 0 "$FUSEC" compile $G/rb_ready.yaml -o "$TMP/rb" --log full
contains rb-ready-fused "$TMP/err" "▸ fused ReduceBroadcasted (score=310, 5 ops)"
check size1 0 "$FUSEC" compile $G/size1.yaml -o "$TMP/s1" --log full
contains size1-fused "$TMP/err" "▸ fused ElementWise (score=530, 4 ops)"
check size1-run 0 "$FUSEC" run $G/size1.yaml --backend cpu --check
check sync-whole 0 "$FUSEC" compile $G/sync_whole.yaml --burn-exact -o "$TMP/sw" --log full
contains sync-whole-fused "$TMP/err" "[plan] exploration completed: sync, 3/3 ops optimized"
! grep -q "cache hit" "$TMP/err" && pass=$((pass + 1)) || { echo "FAIL sync-whole: a cache hit at the sync"; fail=$((fail + 1)); }
# without --burn-exact fusec keeps its deliberate deviations (rows 5, 7, 12)
check sync-whole-fusec 0 "$FUSEC" compile $G/sync_whole.yaml -o "$TMP/sw2" --log full
contains sync-whole-fusec-hit "$TMP/err" "[plan] cache hit: execute plan #0 (sync, segment has 3 ops)"
check lead-reduce 0 "$FUSEC" compile $G/lead_reduce.yaml --burn-exact -o "$TMP/lr" --log full
contains lead-reduce-alone "$TMP/err" "[fuser] closed on NumericFloat::MaxDim [ops[0] → m] (Reduce, shape-mismatch); had 0 ops"
contains lead-reduce-rest "$TMP/err" "▸ fused ReduceBroadcasted (score=520, 4 ops)"
check lead-reduce-fusec 0 "$FUSEC" compile $G/lead_reduce.yaml -o "$TMP/lr2" --log full
contains lead-reduce-fusec-one "$TMP/err" "▸ fused ReduceBroadcasted (score=520, 5 ops)"
check no-winner 0 "$FUSEC" compile $G/no_winner.yaml --burn-exact -o "$TMP/nw" --log full
contains no-winner-all "$TMP/err" "▸ un-fused (4 ops)"
check no-winner-fusec 0 "$FUSEC" compile $G/no_winner.yaml -o "$TMP/nw2" --log full
contains no-winner-fusec-rest "$TMP/err" "▸ fused ElementWise (score=210, 2 ops)"
check tail-sync 0 "$FUSEC" compile $G/tail_sync.yaml --burn-exact -o "$TMP/ts" --log full
contains tail-sync-one-plan "$TMP/err" "[plan] exploration completed: sync, 5/5 ops optimized"
contains tail-sync-unfused "$TMP/err" "▸ un-fused (2 ops)                      Float::Matmul"
check tail-sync-fusec 0 "$FUSEC" compile $G/tail_sync.yaml -o "$TMP/ts2" --log full
contains tail-sync-fusec-again "$TMP/err" "[plan] exploration completed: sync, 3/5 ops optimized"
contains tail-sync-fusec-matmul "$TMP/err" "▸ fused Matmul (score=100, 2 ops)"
check views-burn 0 "$FUSEC" compile $G/views_burn.yaml --burn-exact -o "$TMP/vb" --log full
contains views-burn-swap-first-use "$TMP/err" "[fuser] closed on BaseFloat::SwapDims [ops[3] → yt] (ElementWise, view-first-use); had 0 ops"
contains views-burn-permute "$TMP/err" "[fuser] closed on BaseFloat::Permute [ops[5] → zp] (ElementWise, view-unsupported); had 0 ops"
contains views-burn-rest "$TMP/err" "▸ fused ElementWise (score=940, 5 ops)"
check views-burn-fusec 0 "$FUSEC" compile $G/views_burn.yaml -o "$TMP/vb2" --log full
contains views-burn-fusec-one "$TMP/err" "▸ fused ElementWise (score=1260, 7 ops)"
check views-burn-run 0 "$FUSEC" run $G/views_burn.yaml --burn-exact --backend cpu --check
check explain-burn-exact 0 "$FUSEC" explain $G/no_winner.yaml --burn-exact

# options
check log-env 0 env FUSEC_LOG=basic "$FUSEC" compile -q $G/lone.yaml -o "$TMP/e"
same log-env-text "$TMP/err" "selected single strategy"
check bad-log 2 "$FUSEC" compile $G/lone.yaml --log loud -o "$TMP/e"
check bad-arch 2 "$FUSEC" compile $G/lone.yaml --arch 90 -o "$TMP/e"
check bad-blocks 2 "$FUSEC" compile $G/lone.yaml --max-blocks 0 -o "$TMP/e"
check bad-emit 2 "$FUSEC" compile $G/lone.yaml --emit pdf -o "$TMP/e"
check emit 0 "$FUSEC" compile $G/reuse.yaml --emit relative,dot -o "$TMP/x"
contains emit-relative "$TMP/x/reuse.relative.txt" "plan #0 (4 ops): OnSync"
contains emit-dot "$TMP/x/reuse.dot" "digraph \"reuse\""
check limit 0 "$FUSEC" compile $G/reuse.yaml --max-explorations 0 -o "$TMP/u" --log medium
contains limit-text "$TMP/err" "[explorer] max_explorations reached: running 1 operations unfused"
check explain-op 0 "$FUSEC" explain $G/reuse.yaml --op 7
contains explain-op-text "$TMP/out" "decided when plan #0 was explored (step 0, op 2)"
check explain-bad-op 2 "$FUSEC" explain $G/reuse.yaml --op 999
# the user's names: a tensor an op writes, an op's own name, not a graph input
check explain-op-tensor 0 "$FUSEC" explain $G/reuse.yaml --op y1
contains explain-op-tensor-text "$TMP/out" "op 8 Float::Exp [ops[8] → y1]"
check explain-op-node 0 "$FUSEC" explain $G/view_break.yaml --op Exp_1
contains explain-op-node-text "$TMP/out" "op 2 Float::Exp [ops[2] 'Exp_1' → e]"
check explain-op-input 2 "$FUSEC" explain $G/reuse.yaml --op a0
contains explain-op-input-text "$TMP/err" "a graph input; no op writes it"
check explain-op-none 2 "$FUSEC" explain $G/reuse.yaml --op nosuch
# every line of a JSON log and every explain --json document parses
check log-json 0 env FUSEC_LOG_FORMAT=json "$FUSEC" compile $G/fusers.yaml -o "$TMP/lj"
if python3 -c 'import json,sys
n=0
for l in open(sys.argv[1]):
    e=json.loads(l); n+=1
    assert "event" in e and "stream" in e, l
kinds={json.loads(l)["event"] for l in open(sys.argv[1])}
assert {"block","block_fuser","execute","completed"} <= kinds, kinds
' "$TMP/err"; then pass=$((pass + 1)); else echo "FAIL log-json-parse"; fail=$((fail + 1)); fi
check bad-log-format 2 "$FUSEC" compile $G/lone.yaml --log-format xml -o "$TMP/e"
check explain-json 0 "$FUSEC" explain $G/fusers.yaml --json
if python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
assert d["format"]=="fusec-explain/1"
fused=[o for o in d["ops"] if o.get("fused")]
assert fused and all(o["fuser"] and o["score"] is not None for o in fused)
assert all(o["why_not_fused"] for o in d["ops"] if not o.get("fused"))
' "$TMP/out"; then pass=$((pass + 1)); else echo "FAIL explain-json-parse"; fail=$((fail + 1)); fi

# the picture: DOT text golden (clusters per kernel, inputs, outputs, shapes, legend)
check dot 0 "$FUSEC" compile $G/fusers.yaml --emit dot -o "$TMP/dot"
same_files dot-golden "$TMP/dot/fusers.dot" $G/fusers.dot
contains dot-cluster "$TMP/dot/fusers.dot" 'label="#1 fusec_k1_0 · Matmul · score 310 · 3 ops"'
contains dot-legend "$TMP/dot/fusers.dot" 'subgraph cluster_legend'
contains dot-edge-shape "$TMP/dot/fusers.dot" 'op6 -> op7 [label="mm f32[64,16]"]'
check dot-names 0 "$FUSEC" compile docs/examples/resnet_block.yaml --emit dot -o "$TMP/dotr"
contains dot-node-name "$TMP/dotr/resnet_block.dot" 'label="0 Module::Conv2d\nstem.conv"'
# 6: each of the five convs with its epilogue (the Matmul fuser), and the head's
# matmul with its bias add (the flatten reshape runs alone as an alias,
# docs/burn-fidelity.md row 2)
[ "$(grep -c 'subgraph cluster_[0-9]' "$TMP/dotr/resnet_block.dot")" = 6 ] && pass=$((pass + 1)) ||
	{ echo "FAIL dot-clusters: want 6 fused kernels in resnet_block"; fail=$((fail + 1)); }
# --burn-exact, 7: both pools end an NHWCRelayout trace (row 11), each two
# launches: the trace and the pool
check dot-burn 0 "$FUSEC" compile docs/examples/resnet_block.yaml --emit dot --burn-exact -o "$TMP/dotb"
[ "$(grep -c 'subgraph cluster_[0-9]' "$TMP/dotb/resnet_block.dot")" = 7 ] && pass=$((pass + 1)) ||
	{ echo "FAIL dot-clusters-burn: want 7 fused kernels in resnet_block"; fail=$((fail + 1)); }
mv "$TMP/dotb/resnet_block.dot" "$TMP/dotr/resnet_block.dot"
contains dot-nhwc-write "$TMP/dotr/resnet_block.dot" 'NHWCRelayout · score 520 · 3 ops · writes stem_r NHWC"'
contains dot-nhwc-read "$TMP/dotr/resnet_block.dot" 'NHWCRelayout · score 520 · 1 op · reads stem_r NHWC"'
# svg when Graphviz is installed; a clear usage error when it is not
if command -v dot >/dev/null 2>&1; then
	check svg 0 "$FUSEC" compile $G/fusers.yaml --emit svg -o "$TMP/svg"
	contains svg-text "$TMP/svg/fusers.svg" '<svg'
fi
check svg-no-dot 2 env PATH=/nonexistent "$FUSEC" compile $G/fusers.yaml --emit svg -o "$TMP/nosvg"
contains svg-no-dot-msg "$TMP/err" "--emit svg needs Graphviz's \`dot\` on PATH"
[ ! -e "$TMP/nosvg" ] && pass=$((pass + 1)) || { echo "FAIL svg-no-dot wrote files"; fail=$((fail + 1)); }
# an op whose blocks cannot merge joins the latest of them that no other depends on
# (explorer.c join_latest; docs/burn-fidelity.md row 20): a downsampling block's
# residual add reads its last conv and the shortcut conv, two Matmul blocks that
# cannot merge; the shortcut's epilogue takes the add and the ReLU. --burn-exact:
# burn's dependent block, the add and the ReLU an ElementWise kernel of their own
cat >"$TMP/join.json" <<'EOF2'
{"format": "fusec-graph/1", "name": "join",
 "inputs": {"x": {"dtype": "f32", "shape": [2, 16, 9, 9]},
            "w1": {"dtype": "f32", "shape": [16, 16, 1, 1]}, "w2": {"dtype": "f32", "shape": [16, 16, 3, 3]},
            "w3": {"dtype": "f32", "shape": [32, 16, 1, 1]}, "wd": {"dtype": "f32", "shape": [32, 16, 1, 1]}},
 "ops": [{"op": "conv2d", "in": ["x", "w1"], "out": "c1"}, {"op": "relu", "in": ["c1"], "out": "r1"},
         {"op": "conv2d", "in": ["r1", "w2"], "out": "c2", "padding": 1}, {"op": "relu", "in": ["c2"], "out": "r2"},
         {"op": "conv2d", "in": ["r2", "w3"], "out": "c3"}, {"op": "conv2d", "in": ["x", "wd"], "out": "cd"},
         {"op": "add", "in": ["c3", "cd"], "out": "s"}, {"op": "relu", "in": ["s"], "out": "y"}],
 "outputs": ["y"]}
EOF2
cat >"$TMP/join.py" <<'EOF2'
import json, sys
p = json.load(open(sys.argv[1]))
ks = {k["name"]: k for k in p["kernels"]}
got = [ks[l["kernel"]]["op_names"] for s in p["steps"] for l in s["launches"]]
got = [n for n in got if "Module::Conv2d" in n or "NumericFloat::Add" in n]
want = {"join": [["Module::Conv2d", "Activation::Relu"]] * 2 + [["Module::Conv2d"]] +
                [["Module::Conv2d", "NumericFloat::Add", "Activation::Relu"]],
        "burn": [["Module::Conv2d"]] * 4 + [["NumericFloat::Add", "Activation::Relu"]]}[sys.argv[2]]
sys.exit(0 if got == want else "launches %s, want %s" % (got, want))
EOF2
check join-compile 0 "$FUSEC" compile "$TMP/join.json" --layout nhwc -o "$TMP/join" --no-cache &&
	check join-launches 0 python3 "$TMP/join.py" "$TMP/join/join.plan.json" join
check join-burn 0 "$FUSEC" compile "$TMP/join.json" --layout nhwc --burn-exact -o "$TMP/joinb" --no-cache &&
	check join-burn-launches 0 python3 "$TMP/join.py" "$TMP/joinb/join.plan.json" burn
check join-run 0 "$FUSEC" run "$TMP/join.json" --layout nhwc --backend cpu --seed 1 --check &&
	check join-run-ok 1 grep -q "FAIL\|unbounded\|not checked" "$TMP/out"
