# compile_sweep.sh: `fusec compile` end to end, cold and warm, behind `make bench`
# (docs/benchmarks.md). Not a test: it prints figures and never fails on them.
#
#   sh tests/bench/compile_sweep.sh BUILD
#
# For the 3,000-layer transformer2d (114,000 ops, one segment), the 20,000-op
# random DAG (seed 1) and a chain of 40,000 unary ops on 8x8 tensors (issue 15): a
# cold compile (empty cache), a warm recompile (same cache: the result cache
# answers), a warm one with --no-result-cache (the kernel cache alone skips LLVM),
# and a cold one on one LLVM thread (-j 1). Prints wall seconds, CPU
# seconds (user + system, all threads), ops per wall and per CPU second, and peak
# RSS, as /usr/bin/time reports them. JOBS sets -j of the cold and warm runs
# (default: fusec's own default).
set -eu
BUILD=$1
DIR=$BUILD/bench
mkdir -p "$DIR"
J=${JOBS:+-j $JOBS}
TIME=/usr/bin/time
[ -x "$TIME" ] || { echo "compile_sweep: needs /usr/bin/time"; exit 0; }
"$BUILD/gen_graph" transformer2d 3000 >"$DIR/transformer2d_3000.json"
"$BUILD/gen_graph" random 20000 --seed 1 >"$DIR/random_20000.json"
"$BUILD/gen_graph" chain 40000 >"$DIR/chain_40000.json"
echo "fusec compile end to end (wall and CPU seconds; CPU counts every thread)"
printf '%-20s %-10s %8s %8s %8s %10s %10s %8s\n' graph run ops wall_s cpu_s "ops/s wall" \
	"ops/s cpu" "RSS MB"
run() {
	label=$1 ops=$2 what=$3 graph=$4
	shift 4
	"$TIME" -f '%e %U %S %M' -o "$DIR/time.txt" "$BUILD/fusec" compile "$graph" \
		-o "$DIR/out" -q "$@" 2>/dev/null
	awk -v l="$label" -v w="$what" -v n="$ops" '{
		cpu = $2 + $3
		printf "%-20s %-10s %8d %8.2f %8.2f %10.0f %10.0f %8.1f\n", l, w, n, $1, cpu,
		       n / $1, n / cpu, $4 / 1024 }' "$DIR/time.txt"
}
for g in transformer2d_3000:114000 random_20000:20000 chain_40000:40000; do
	name=${g%%:*} ops=${g##*:}
	rm -rf "$DIR/cache"
	run "$name" "$ops" cold "$DIR/$name.json" --cache-dir "$DIR/cache" $J
	run "$name" "$ops" warm "$DIR/$name.json" --cache-dir "$DIR/cache" $J
	run "$name" "$ops" "warm kc" "$DIR/$name.json" --cache-dir "$DIR/cache" $J --no-result-cache
	run "$name" "$ops" "cold -j1" "$DIR/$name.json" --no-cache -j 1
done
rm -rf "$DIR/cache" "$DIR/out" "$DIR/time.txt"
