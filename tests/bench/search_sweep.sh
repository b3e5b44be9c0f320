# search_sweep.sh: the search-and-plan throughput sweep behind `make bench`
# (docs/benchmarks.md). Not a test: it prints figures and never fails on them.
#
#   sh tests/bench/search_sweep.sh BUILD "LAYERS..." RANDOM_OPS ["LAYERS2D..."]
#
# Writes transformer graphs of each size in LAYERS (one sync per layer), transformer2d
# graphs (the issue's 2-D stack, one segment, no sync) of each size in LAYERS2D, and a random
# DAG of RANDOM_OPS ops (seed 1) into BUILD/bench/, runs bench_search on each RUNS
# times (default 3) pinned to CPU BENCH_CPU (default 1) with taskset when there is
# one, and prints the run with the median search+plan throughput of each point:
# CPU seconds of each phase, throughputs, peak RSS and its growth over the start
# (the libraries), explorations and cache hits.
set -eu
BUILD=$1
LAYERS=$2
RANDOM_OPS=$3
LAYERS2D=${4:-}
RUNS=${RUNS:-3}
CPU=${BENCH_CPU:-1}
DIR=$BUILD/bench
mkdir -p "$DIR"
PIN=""
if command -v taskset >/dev/null 2>&1 && taskset -c "$CPU" true 2>/dev/null; then
	PIN="taskset -c $CPU"
fi

# median ROWS: the row whose 7th column (ops/s search+plan) is the median
median() {
	sort -n -k7,7 | awk '{ row[NR] = $0 } END { print row[int((NR + 1) / 2)] }'
}

point() {
	label=$1 graph=$2
	rows=""
	i=0
	while [ "$i" -lt "$RUNS" ]; do
		rows="$rows$($PIN "$BUILD/bench_search" "$graph")
"
		i=$((i + 1))
	done
	printf '%s' "$rows" | median | awk -v label="$label" '{
		printf "%-17s %7d %7.3f %8.3f %7.3f %10.0f %10.0f %10.0f %7.1f %7.1f %6d %6d\n",
		       label, $2, $4, $5, $6, $2 / $5, $7, $8, $11, $11 - $24, $14, $15 }'
}

echo "search and plan throughput: CPU seconds, median of $RUNS runs${PIN:+, $PIN}"
printf '%-17s %7s %7s %8s %7s %10s %10s %10s %7s %7s %6s %6s\n' graph ops read_s search_s \
	plan_s "ops/s srch" "ops/s s+p" "ops/s e2e" "RSS MB" "+MB" explor hits
for l in $LAYERS; do
	g=$DIR/transformer_$l.json
	"$BUILD/gen_graph" transformer "$l" --sync-per-layer >"$g"
	point "transformer $l" "$g"
done
for l in $LAYERS2D; do
	g=$DIR/transformer2d_$l.json
	"$BUILD/gen_graph" transformer2d "$l" >"$g"
	point "transformer2d $l" "$g"
done
for n in $RANDOM_OPS; do
	g=$DIR/random_$n.json
	"$BUILD/gen_graph" random "$n" --seed 1 >"$g"
	point "random $n" "$g"
done
