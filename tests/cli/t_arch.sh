# t_arch.sh: several arches in one plan (issue 27). `compile --arch sm_80,sm_90a`
# searches once and writes one PTX per arch, each the one a compile for that arch
# alone writes; the plan's top level is the first arch and "variants" carries the
# others' kernels and launches; fusec-run runs the highest arch the device can
# (the stand-in driver's FAKECUDA_CC). Errors: duplicates, arches LLVM 19 does not
# know, malformed lists.
BIN=$(dirname "$FUSEC")
RUN=$BIN/fusec-run
FAKE=$BIN/tests/fakecuda.so
PTXAS=$(command -v ptxas || { [ -x /usr/local/cuda/bin/ptxas ] && echo /usr/local/cuda/bin/ptxas; })
G=tests/bench/gpu/mm_check_bf16.json   # bf16 matmuls: wgmma tiles on sm_90a only
N=mm_check_bf16

# ---- one compile, two arches ------------------------------------------------------
check two 0 "$FUSEC" compile $G --arch sm_80,sm_90a -o "$TMP/two" -M "$TMP/two.d" --no-cache &&
	same two-wrote "$TMP/out" "wrote $TMP/two/$N.plan.json $TMP/two/$N.sm_80.ptx $TMP/two/$N.sm_90a.ptx $TMP/two.d" &&
	contains two-summary "$TMP/err" "fusec: compiled $N for sm_80, sm_90a: 15 ops → 5 launches, 3 distinct kernels,"
check two-no-plain-ptx 1 test -e "$TMP/two/$N.ptx"
contains two-target-80 "$TMP/two/$N.sm_80.ptx" ".target sm_80"
contains two-target-90a "$TMP/two/$N.sm_90a.ptx" ".target sm_90a"
contains two-wgmma-90a "$TMP/two/$N.sm_90a.ptx" "wgmma.mma_async"
check two-no-wgmma-80 1 grep -q wgmma "$TMP/two/$N.sm_80.ptx"
# programmatic dependent launch from sm_90 on: every sm_90a kernel starts by
# waiting for the grids before it and says "pdl" in the plan; sm_80's do neither
check two-pdl 0 python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
assert p["arch"] == "sm_80" and not any("pdl" in k for k in p["kernels"]), p["kernels"]
v = p["variants"][0]
assert v["arch"] == "sm_90a" and all(k.get("pdl") is True for k in v["kernels"]), v["kernels"]
' "$TMP/two/$N.plan.json"
check two-pdl-90a 0 python3 -c '
import re, sys
t = open(sys.argv[1]).read()
ks = re.findall(r"\.entry (\w+)", t)
waits = re.findall(r"griddepcontrol\.wait;\s*griddepcontrol\.launch_dependents;", t)
assert ks and len(waits) == len(ks), (len(ks), len(waits))
' "$TMP/two/$N.sm_90a.ptx"
# a warp-specialized kernel waits after its set-up (barriers, tensor-map prefetch,
# its first tile's weights into L2); on every path of every kernel nothing reads
# or writes global memory before the wait (an L2 prefetch is a hint, not an
# access): tests/cli/pdl_paths.py follows the branches; the ws tiles forced too
check two-pdl-late 0 env WANT_LATE=1 python3 tests/cli/pdl_paths.py "$TMP/two/$N.sm_90a.ptx"
for cfg in wg128x128x64s4pp wg128x128x64s4wsc2 wg128x64x64s6wssk3 wg128x64x64s6ws; do
	check "pdl-paths-$cfg" 0 env FUSEC_MATMUL_TILES=$cfg "$FUSEC" compile -q tests/bench/gpu/mm_siblings_bf16.json \
		-o "$TMP/pdl-$cfg" --no-cache &&
		check "pdl-paths-$cfg-ok" 0 python3 tests/cli/pdl_paths.py "$TMP/pdl-$cfg"/*.ptx
done
check pdl-paths-conv 0 env FUSEC_MATMUL_TILES=wg128x64x64s6ws "$FUSEC" compile -q \
	tests/bench/gpu/conv_join_bf16.json --layout nhwc -o "$TMP/pdl-conv" --no-cache &&
	check pdl-paths-conv-ok 0 python3 tests/cli/pdl_paths.py "$TMP/pdl-conv"/*.ptx
check two-pdl-80 1 grep -q griddepcontrol "$TMP/two/$N.sm_80.ptx"
same two-depfile "$TMP/two.d" "$TMP/two/$N.plan.json $TMP/two/$N.sm_80.ptx $TMP/two/$N.sm_90a.ptx: $G

$G:"
# each arch alone, for comparison
check one-80 0 "$FUSEC" compile -q $G --arch sm_80 -o "$TMP/o80" --no-cache
check one-90a 0 "$FUSEC" compile -q $G -o "$TMP/o90a" --no-cache
same_files two-ptx-80-alone "$TMP/two/$N.sm_80.ptx" "$TMP/o80/$N.ptx"
same_files two-ptx-90a-alone "$TMP/two/$N.sm_90a.ptx" "$TMP/o90a/$N.ptx"
cat >"$TMP/plan.py" <<'EOF'
# plan.py TWO ONE_FIRST ONE_OTHER PTX_DIR: the plan of two arches is the first arch's
# plan (its PTX renamed) plus a variant with the second's PTX hash, kernels and
# launches; the tensors and steps are written once.
import hashlib, json, sys
two, first, other = (json.load(open(f)) for f in sys.argv[1:4])
d = sys.argv[4]
v = two.pop("variants")
assert len(v) == 1, v
v = v[0]
assert two["arch"] == "sm_80" and two["ptx"] == "mm_check_bf16.sm_80.ptx", two["ptx"]
assert v["arch"] == "sm_90a" and v["ptx"] == "mm_check_bf16.sm_90a.ptx", v["ptx"]
for p in (two, v):
    assert hashlib.sha256(open(d + "/" + p["ptx"], "rb").read()).hexdigest() == p["ptx_sha256"]
assert set(v) == {"arch", "ptx", "ptx_sha256", "kernels", "launches"}, sorted(v)
two["ptx"] = first["ptx"]
two["ptx_sha256"] = first["ptx_sha256"]
assert two == first, "the top level is not the sm_80 plan"
assert v["kernels"] == other["kernels"]
launches = [l for s in other["steps"] for l in s["launches"]]
assert len(v["launches"]) == len(launches)
keys = ("kernel", "grid", "block", "shared_bytes", "args")
for a, b in zip(v["launches"], launches):
    assert list(a) == list(keys) and a == {k: b[k] for k in keys}, (a, b)
tiles = lambda p: [k.get("tiles") for k in p["kernels"]]
assert tiles(two) != tiles(v), "the arches should tile differently"
assert any(t and t.startswith("wg") for t in tiles(v)) and not any(t and t.startswith("wg") for t in tiles(two))
print("ok")
EOF
check two-plan 0 python3 "$TMP/plan.py" "$TMP/two/$N.plan.json" "$TMP/o80/$N.plan.json" \
	"$TMP/o90a/$N.plan.json" "$TMP/two"
check two-schema 0 python3 tests/schema/validate.py docs/schema/fusec-plan-1.schema.json "$TMP/two/$N.plan.json"
# fusec-run validates it without a GPU: the first arch's launches, the variant named
if check two-plan-only 0 "$RUN" "$TMP/two" --plan-only; then
	contains two-plan-only-top "$TMP/out" "plan $TMP/two/$N.plan.json: arch sm_80, ptx $TMP/two/$N.sm_80.ptx"
	contains two-plan-only-variant "$TMP/out" "variant: arch sm_90a, ptx $TMP/two/$N.sm_90a.ptx, 4 kernels"
fi
# every PTX passes ptxas for its arch
if [ -n "$PTXAS" ]; then
	for a in sm_80 sm_90a; do
		check "two-ptxas-$a" 0 "$PTXAS" -arch=$a "$TMP/two/$N.$a.ptx" -o "$TMP/$a.cubin"
	done
	# (ptxas of CUDA 13 knows sm_75 on)
	check three 0 "$FUSEC" compile -q tests/golden/fusers.yaml --arch sm_75,sm_86,sm_90 -o "$TMP/three"
	for a in sm_75 sm_86 sm_90; do
		check "three-ptxas-$a" 0 "$PTXAS" -arch=$a "$TMP/three/fusers.$a.ptx" -o "$TMP/$a.cubin"
	done
fi

# ---- --emit, the caches, explain --------------------------------------------------
check emit 0 "$FUSEC" compile $G --arch sm_90a,sm_80 -o "$TMP/emit" --emit ll,relative,dot --no-cache &&
	same emit-wrote "$TMP/out" "wrote $TMP/emit/$N.plan.json $TMP/emit/$N.sm_90a.ptx $TMP/emit/$N.sm_80.ptx $TMP/emit/$N.sm_90a.ll $TMP/emit/$N.sm_80.ll $TMP/emit/$N.relative.txt $TMP/emit/$N.dot"
contains emit-ll-90a "$TMP/emit/$N.sm_90a.ll" "wgmma"
check emit-ll-80 1 grep -q wgmma "$TMP/emit/$N.sm_80.ll"
contains emit-order "$TMP/emit/$N.plan.json" '"arch":"sm_90a","ptx":"mm_check_bf16.sm_90a.ptx"'
# the result cache: a second compile copies the outputs, the same bytes
C=$TMP/cache
check rc-first 0 "$FUSEC" compile $G --arch sm_80,sm_90a -o "$TMP/rc1" --cache-dir "$C"
check rc-hit 0 "$FUSEC" compile $G --arch sm_80,sm_90a -o "$TMP/rc2" --cache-dir "$C" &&
	contains rc-hit-msg "$TMP/err" "for sm_80, sm_90a: 15 ops → 5 launches, 3 distinct kernels" &&
	contains rc-hit-cached "$TMP/err" "(result cache hit)"
for f in $N.plan.json $N.sm_80.ptx $N.sm_90a.ptx; do
	same_files "rc-same-$f" "$TMP/rc1/$f" "$TMP/rc2/$f"
done
# another list is another entry
check rc-other 0 "$FUSEC" compile $G --arch sm_80 -o "$TMP/rc3" --cache-dir "$C"
check rc-other-miss 1 grep -q "result cache hit" "$TMP/err"
# the kernel cache keys each arch's kernels apart: all hit the second time (the
# chunks of both arches counted)
check kc 0 "$FUSEC" compile $G --arch sm_80,sm_90a -o "$TMP/kc" --cache-dir "$C" --no-result-cache --time &&
	contains kc-hits "$TMP/err" "for 7 distinct kernels (" &&
	contains kc-hits "$TMP/err" "kernel cache: 7 of 7 chunks hit (LLVM skipped)"
same_files kc-same "$TMP/kc/$N.plan.json" "$TMP/rc1/$N.plan.json"
# the JSON line of the summary names the arches
check json-summary 0 "$FUSEC" compile $G --arch sm_80,sm_90a -o "$TMP/js" --log-format json --log off --no-cache
contains json-summary-arches "$TMP/err" '"graph":"mm_check_bf16","arches":["sm_80","sm_90a"],'
# explain names the kernels of the first arch, as the plan's top level does
check explain-list 0 "$FUSEC" explain $G --arch sm_80,sm_90a --json && cp "$TMP/out" "$TMP/ex2"
check explain-80 0 "$FUSEC" explain $G --arch sm_80 --json && same_files explain-first "$TMP/ex2" "$TMP/out"

# ---- what is refused ------------------------------------------------------------
known="sm_70, sm_72, sm_75, sm_80, sm_86, sm_87, sm_89, sm_90 and sm_90a"
for a in sm_100 sm_120 sm_91 sm_80a; do
	check "refuse-$a" 1 "$FUSEC" compile $G --arch sm_80,$a -o "$TMP/bad-$a" &&
		same "refuse-$a-msg" "$TMP/err" "fusec: error: --arch $a: LLVM 19 does not know this arch; the ones it knows that fusec's kernels run on are $known"
	check "refuse-$a-nothing" 1 test -e "$TMP/bad-$a"
done
check refuse-dup 1 "$FUSEC" compile $G --arch sm_80,sm_90a,sm_80 -o "$TMP/dup" &&
	same refuse-dup-msg "$TMP/err" "fusec: error: --arch sm_80,sm_90a,sm_80: sm_80 is listed twice"
check refuse-dup-nothing 1 test -e "$TMP/dup"
check refuse-old 1 "$FUSEC" compile $G --arch sm_90,sm_61 -o "$TMP/old" &&
	contains refuse-old-msg "$TMP/err" "--arch sm_61 is older than the kernels need"
check refuse-empty 2 "$FUSEC" compile $G --arch sm_80, -o "$TMP/e" &&
	contains refuse-empty-msg "$TMP/err" "--arch 'sm_80,' has an empty item"
check refuse-shape 2 "$FUSEC" compile $G --arch sm_80,hopper -o "$TMP/e" &&
	contains refuse-shape-msg "$TMP/err" "unknown --arch 'hopper' (sm_XX, or a list such as sm_80,sm_90a, of $known)"
check refuse-explain 1 "$FUSEC" explain $G --arch sm_90,sm_100

# ---- the runtime picks the variant for the device --------------------------------
# tests/runtime/axpb for sm_80 and sm_90a: the variant's launches use other blocks
# (128 and 256 threads for the top level's 256 and 128), so the trace shows which ran
mkdir -p "$TMP/fx"
python3 - "$TMP/fx" <<'EOF'
import copy, hashlib, json, sys
d = sys.argv[1]
p = json.load(open("tests/runtime/axpb.plan.json"))
ptx = open("tests/runtime/axpb.ptx", "rb").read()
for a in ("sm_80", "sm_90a"):
    open(f"{d}/axpb.{a}.ptx", "wb").write(ptx.replace(b".target sm_90", b".target " + a.encode()))
sha = lambda a: hashlib.sha256(open(f"{d}/axpb.{a}.ptx", "rb").read()).hexdigest()
p.update(arch="sm_80", ptx="axpb.sm_80.ptx", ptx_sha256=sha("sm_80"))
ks = copy.deepcopy(p["kernels"])
blocks = {"k_fma": 128, "k_affine": 256}
for k in ks:
    k["block"] = [blocks[k["name"]], 1, 1]
    k["name"] += "_h"
ls = []
for s in p["steps"]:
    for l in s["launches"]:
        b = blocks[l["kernel"]]
        ls.append({"kernel": l["kernel"] + "_h", "grid": [(37000 + b - 1) // b, 1, 1],
                   "block": [b, 1, 1], "shared_bytes": 0, "args": l["args"]})
p["variants"] = [{"arch": "sm_90a", "ptx": "axpb.sm_90a.ptx", "ptx_sha256": sha("sm_90a"),
                  "kernels": ks, "launches": ls}]
json.dump(p, open(f"{d}/axpb.plan.json", "w"), indent=1)
EOF
pick() {   # pick NAME CC ARCH BLOCK: on a device of compute capability CC
	check "pick-$1" 0 env FUSEC_LIBCUDA="$FAKE" FAKECUDA_CC=$2 FAKECUDA_TRACE="$TMP/trace-$1" "$RUN" "$TMP/fx" &&
		contains "pick-$1-line" "$TMP/out" "arch: $3 (of the plan's sm_80, sm_90a)" &&
		contains "pick-$1-trace" "$TMP/trace-$1" "kernel fix_fma grid $((  (37000 + $4 - 1) / $4 )),1,1 block $4,1,1" &&
		grep '^output' "$TMP/out" >"$TMP/outputs-$1"
}
pick h200 90 sm_90a 128
pick ada 89 sm_80 256
pick blackwell 100 sm_80 256
pick a100 80 sm_80 256
# the same outputs whichever ran (the two variants compute the same)
same_files pick-same-outputs "$TMP/outputs-h200" "$TMP/outputs-ada"
check pick-none 3 env FUSEC_LIBCUDA="$FAKE" FAKECUDA_CC=75 "$RUN" "$TMP/fx" &&
	same pick-none-msg "$TMP/err" "fusec-run: error: the plan targets sm_80, sm_90a, none of which device 0 (Fake CUDA Device), sm_75, can run; compile it with --arch sm_75 among them"
# only sm_90a: refused on 8.0, with the old message
mkdir -p "$TMP/only90a"
sed 's/"arch": "sm_90"/"arch": "sm_90a"/' tests/runtime/axpb.plan.json >"$TMP/only90a/axpb.plan.json"
cp tests/runtime/axpb.ptx "$TMP/only90a/"
check only90a-80 3 env FUSEC_LIBCUDA="$FAKE" FAKECUDA_CC=80 "$RUN" "$TMP/only90a" &&
	same only90a-80-msg "$TMP/err" "fusec-run: error: the plan targets sm_90a but device 0 (Fake CUDA Device) is sm_80; compile it with --arch sm_80"
check only90a-90 0 env FUSEC_LIBCUDA="$FAKE" FAKECUDA_CC=90 "$RUN" "$TMP/only90a" &&
	check only90a-no-arch-line 1 grep -q "^arch:" "$TMP/out"
# the bench report names the arch too
check pick-bench 0 env FUSEC_LIBCUDA="$FAKE" FAKECUDA_CC=89 "$RUN" "$TMP/fx" --bench --iters 3 --warmup 1 &&
	check pick-bench-lines 0 test "$(grep -c '^arch: sm_80 (of the plan' "$TMP/out")" -eq 2
check pick-fusec-bench 0 env FUSEC_LIBCUDA="$FAKE" FAKECUDA_CC=90 "$FUSEC" bench "$TMP/fx" --iters 3 --warmup 1 &&
	contains pick-fusec-bench-line "$TMP/out" "arch: sm_90a (of the plan's sm_80, sm_90a)"
# the picked variant's PTX is checked as a plan of one arch's is: its hash, then
# its entries
cp -r "$TMP/fx" "$TMP/fx2"
echo "// changed" >>"$TMP/fx2/axpb.sm_90a.ptx"
check pick-hash 1 env FUSEC_LIBCUDA="$FAKE" FAKECUDA_CC=90 "$RUN" "$TMP/fx2" &&
	contains pick-hash-msg "$TMP/err" "axpb.sm_90a.ptx: error: the PTX is not the one $TMP/fx2/axpb.plan.json was compiled with"
check pick-hash-other 0 env FUSEC_LIBCUDA="$FAKE" FAKECUDA_CC=89 "$RUN" "$TMP/fx2"
