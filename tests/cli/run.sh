#!/bin/sh
# run.sh: runs every tests/cli/t_*.sh against $FUSEC and prints one summary line.
# Run from the project root: FUSEC=build/fusec sh tests/cli/run.sh
# FUSEC_TEST_FILES: the test files to run (default all; tests/valgrind/run.sh).
# FUSEC_TEST_JOBS: how many files run at once (default the CPUs). Each file has its
# own scratch folder and kernel cache; its report is printed whole, in file order,
# once every file has finished, and a line on stderr marks each file as it ends.
set -u
: "${FUSEC:?set FUSEC to the fusec binary}"
FUSEC=$(cd "$(dirname "$FUSEC")" && pwd)/$(basename "$FUSEC")
export FUSEC
# the cpu backend's kernels built for compile speed (README.md): the same
# values, four times less LLVM time on the tiled kernels; a test that wants the
# default build says FUSEC_CPU_QUICK=0
FUSEC_CPU_QUICK=${FUSEC_CPU_QUICK:-1}
export FUSEC_CPU_QUICK
if [ "${1:-}" = --one ]; then
	# one file: its report into $2/<name>.out, its last line "RESULT pass fail"
	t=$3
	TMP=$(mktemp -d)
	# the kernel cache of every compile goes here, not into ~/.cache
	# (FUSEC_TEST_CACHE: one shared folder instead, tests/valgrind/run.sh)
	XDG_CACHE_HOME=${FUSEC_TEST_CACHE:-$TMP/xdg-cache}
	export TMP XDG_CACHE_HOME
	start=$(date +%s)
	sh -c '. tests/cli/lib.sh; . "$1"; echo "RESULT $pass $fail"' sh "$t" >"$2/$(basename "$t").out" 2>&1
	echo "  $(basename "$t"): $(($(date +%s) - start)) s" >&2
	rm -rf "$TMP"
	exit 0
fi
jobs=${FUSEC_TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
files=${FUSEC_TEST_FILES:-$(ls tests/cli/t_*.sh)}
REPORTS=$(mktemp -d)
trap 'rm -rf "$REPORTS"' EXIT
for t in $files; do echo "$t"; done | xargs -P "$jobs" -n 1 sh "$0" --one "$REPORTS"
total_pass=0
total_fail=0
for t in $files; do
	out=$REPORTS/$(basename "$t").out
	[ -f "$out" ] && grep -v '^RESULT ' "$out"
	set -- $( (grep '^RESULT ' "$out" 2>/dev/null || true) | tail -1)
	p=${2:-0}; f=${3:-1}
	[ $# -lt 3 ] && echo "FAIL $t: did not finish"
	total_pass=$((total_pass + p)); total_fail=$((total_fail + f))
done
echo "cli: $total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
