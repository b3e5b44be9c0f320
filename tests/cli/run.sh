#!/bin/sh
# run.sh: runs every tests/cli/t_*.sh against $FUSEC and prints one summary line.
# Run from the project root: FUSEC=build/fusec sh tests/cli/run.sh
set -u
: "${FUSEC:?set FUSEC to the fusec binary}"
FUSEC=$(cd "$(dirname "$FUSEC")" && pwd)/$(basename "$FUSEC")
export FUSEC
total_pass=0
total_fail=0
# FUSEC_TEST_FILES: the test files to run (default all; tests/valgrind/run.sh)
for t in ${FUSEC_TEST_FILES:-tests/cli/t_*.sh}; do
	TMP=$(mktemp -d)
	# the kernel cache of every compile goes here, not into ~/.cache
	# (FUSEC_TEST_CACHE: one shared folder instead, tests/valgrind/run.sh)
	XDG_CACHE_HOME=${FUSEC_TEST_CACHE:-$TMP/xdg-cache}
	export TMP XDG_CACHE_HOME
	res=$(sh -c '. tests/cli/lib.sh; . "$1"; echo "RESULT $pass $fail"' sh "$t")
	echo "$res" | grep -v '^RESULT '
	set -- $(echo "$res" | grep '^RESULT ' | tail -1)
	p=${2:-0}; f=${3:-1}
	[ $# -lt 3 ] && echo "FAIL $t: did not finish"
	total_pass=$((total_pass + p)); total_fail=$((total_fail + f))
	rm -rf "$TMP"
done
echo "cli: $total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
