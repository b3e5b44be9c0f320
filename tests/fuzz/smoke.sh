#!/bin/sh
# smoke.sh BUILD [RUNS] [ONNX_RUNS]: run every fuzz target for RUNS inputs (default
# 200000; the ONNX reader ONNX_RUNS, default 60000) from its seed corpus, with a
# fixed seed (make fuzz-smoke; part of CI). Inputs are at most 64 KiB, the ONNX
# reader's 1 MiB: its seeds are models of 130 to 720 KB, which a 64 KiB cap cut
# to bytes that do not parse (the six models reached 37 coverage edges cut, 1,092
# whole; issue 25). A whole model runs about 3.5 times slower, hence fewer runs:
# the ONNX part takes as long as 200,000 cut inputs did (about 20 s).
# A count, not a time, so a slow machine runs as many inputs as a fast one; the
# fixed seed keeps them close to the last green run's (not identical: some
# coverage depends on addresses). Finding new bugs is the job of the long runs
# (tests/fuzz/README.md), not of this gate. A slow machine stops at the time cap
# (MAX_SECONDS per target, default 300) after a prefix of the same inputs.
# Corpora and crash artifacts go to a temporary folder; a crash fails the run and
# leaves the artifact in fuzz-artifacts/.
set -eu
B=$1
R=${2:-200000}
RO=${3:-60000}
T=${MAX_SECONDS:-300}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/read" "$W/plan" "$W/onnx" "$W/art"
i=0
for f in docs/examples/* tests/errors/*.json tests/errors/*.yaml tests/golden/*.yaml \
	 tests/bench/dynamic/*.yaml tests/fuzz/regress/*.json tests/fuzz/regress/*.yaml; do
	[ -f "$f" ] || continue
	i=$((i + 1)); cp "$f" "$W/read/$i-$(basename "$f")"
done
# ONNX seeds: the model fixtures, the models with dim_params, and the inputs that
# once broke the reader.
for f in tests/onnx/models/*/model.onnx tests/onnx/dynamic/*.onnx tests/fuzz/regress/*.onnx; do
	if [ -f "$f" ]; then i=$((i + 1)); cp "$f" "$W/onnx/$i.onnx"; fi
done
# Plan seeds: the fixture with its PTX, and plans fusec compiles when it is built.
{ cat tests/runtime/axpb.plan.json; echo "//PTX"; cat tests/runtime/axpb.ptx; } >"$W/plan/axpb"
for f in tests/fuzz/regress/*.plan; do
	if [ -f "$f" ]; then cp "$f" "$W/plan/$(basename "$f")"; fi
done
if [ -x build/fusec ]; then
	for g in docs/examples/*.yaml; do
		n=$(basename "$g" .yaml)
		if build/fusec compile -q "$g" -o "$W/c/$n" 2>/dev/null; then
			{ cat "$W/c/$n"/*.plan.json; echo "//PTX"; cat "$W/c/$n"/*.ptx; } >"$W/plan/$n"
		fi
	done
fi
status=0
run() {   # run TARGET CORPUS RUNS MAX_LEN EXTRA...
	t=$1; c=$2; n=$3; len=$4; shift 4
	echo "fuzz-smoke: $t, $n inputs of at most $len bytes from seed 1"
	if ! "$B/$t" -seed=1 -runs="$n" -max_total_time="$T" -timeout=10 -rss_limit_mb=2048 -max_len="$len" \
		-artifact_prefix="$W/art/$t-" -print_final_stats=1 "$@" "$c" >"$W/$t.log" 2>&1; then
		echo "fuzz-smoke: $t FAILED"; tail -40 "$W/$t.log"
		mkdir -p fuzz-artifacts && cp "$W"/art/* fuzz-artifacts/ 2>/dev/null || true
		status=1
	fi
	grep -E '^stat::number_of_executed_units|^stat::new_units_added|^#[0-9]+[[:space:]]+(INITED|DONE)|^Done ' "$W/$t.log" | sed "s/^/fuzz-smoke: $t /"
}
run fuzz_read "$W/read" "$R" 65536 -dict=tests/fuzz/graph.dict
FUSEC_LIBCUDA=$B/tests/fakecuda.so run fuzz_plan "$W/plan" "$R" 65536 -dict=tests/fuzz/plan.dict
run fuzz_onnx "$W/onnx" "$RO" 1048576
exit $status
