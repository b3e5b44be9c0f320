# search_identity.sh: writes every plan and full log of a fixed corpus into OUTDIR,
# so that a change meant to keep every decision can be checked with `diff -r`
# against the outputs of the commit before it (docs/benchmarks.md):
#
#   sh tests/bench/search_identity.sh BUILD OUTDIR [MAX_LAYERS]
#
# The corpus: the goldens (tests/golden, with their `# args:`), docs/examples,
# transformers of both shapes (`transformer`, `transformer2d`) with and without a
# sync per layer from 1 layer up to MAX_LAYERS (default 3000), and random DAGs of
# several sizes and seeds. Goldens and examples go through `fusec compile --log
# full` (plan and stderr); generated graphs through `bench_search --record --dump`
# (plan and full log, no LLVM). PRETTY=1 asks for `--plan-style pretty` plans, the
# layout of plans before they were compact by default. Not a test: it never fails
# on differences.
set -eu
STYLE="" BSTYLE=""
if [ -n "${PRETTY:-}" ]; then
	STYLE="--plan-style pretty" BSTYLE="--pretty"
fi
BUILD=$1
OUT=$2
MAX=${3:-3000}
mkdir -p "$OUT/tmp"
for y in tests/golden/*.yaml docs/examples/*.yaml docs/examples/*.json; do
	n=$(basename "$y")
	args=$(sed -n 's/^# args: //p' "$y")
	"$BUILD/fusec" compile "$y" $args -o "$OUT/tmp" $STYLE --log full 2>"$OUT/$n.log" || true
	cat "$OUT"/tmp/*.plan.json >"$OUT/$n.plan.json" 2>/dev/null || true
	rm -f "$OUT"/tmp/*
done
rmdir "$OUT/tmp"
gen() {
	name=$1
	shift
	"$BUILD/gen_graph" "$@" >"$OUT/$name.graph.json"
	"$BUILD/bench_search" "$OUT/$name.graph.json" --record $BSTYLE --dump "$OUT/$name" >/dev/null
	rm -f "$OUT/$name.graph.json"
}
for l in 1 2 3 5 10 30 100 300 1000 3000; do
	[ "$l" -le "$MAX" ] || continue
	for shape in transformer transformer2d; do
		gen "${shape}_$l" $shape $l
		gen "${shape}_${l}_sync" $shape $l --sync-per-layer
	done
done
for n in 50 200 1000 4000; do
	for seed in 1 2 3 4 5 6 7 8; do
		gen "random_${n}_$seed" random $n --seed $seed
	done
done
gen random_20000_1 random 20000 --seed 1
