#!/bin/sh
# run.sh: the cmocka suites, one process per test, FUSEC_UNIT_JOBS at a time (default
# the CPUs), so that the slow tests of one suite do not wait on another's.
# usage, from tests/ (the fixtures' paths are relative to it): sh unit/run.sh ../build/unit
# Each test's report is printed whole, in run order, once all have finished, then the
# five slowest tests; the last line is "unit: P passed, F failed". Exit status 1 when one failed or crashed.
# A glob in FUSEC_TEST still picks the tests, as for the binary itself.
set -u
UNIT=${1:?usage: run.sh UNIT}
jobs=${FUSEC_UNIT_JOBS:-$(nproc 2>/dev/null || echo 1)}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
FUSEC_TEST_LIST=1 "$UNIT" >"$OUT/all" || { echo "unit: cannot list the tests of $UNIT"; exit 1; }
pattern=${FUSEC_TEST:-*}
: >"$OUT/list"
while read -r t; do
	case $t in $pattern) echo "$t" >>"$OUT/list" ;; esac
done <"$OUT/all"
unset FUSEC_TEST
export UNIT OUT
xargs -P "$jobs" -I{} sh -c \
	's=$(date +%s); FUSEC_TEST={} "$UNIT" >"$OUT/{}.out" 2>&1; echo $? >"$OUT/{}.rc"
	 echo "$(($(date +%s) - s)) s {}" >"$OUT/{}.time"' <"$OUT/list"
pass=0
fail=0
while read -r t; do
	# the group's frame lines ([====...], [  PASSED  ]) once per process: left out
	grep -v '^\[=\{10\}\]\|^\[  PASSED  \]' "$OUT/$t.out"
	if [ "$(cat "$OUT/$t.rc" 2>/dev/null)" = 0 ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "unit: $t failed (status $(cat "$OUT/$t.rc" 2>/dev/null || echo none))"
	fi
done <"$OUT/list"
# the slowest five, for whoever wants the run shorter
echo "unit: slowest: $(cat "$OUT"/*.time | sort -rn | head -5 | tr '\n' ',' | sed 's/,$//;s/,/, /g')"
echo "unit: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
