#!/bin/sh
# run.sh: `make test` under valgrind memcheck (make valgrind; docs/reliability.md).
# usage: sh tests/valgrind/run.sh BUILD OUT [PART...]
# PARTs: unit (the cmocka suites), conformance (the two onnx_conformance runs of
# `make test`), cli (tests/cli/run.sh with fusec and fusec-run under memcheck);
# all three when none is given. The binaries are copied into OUT/bin first (a rebuild
# meanwhile does not change what runs); each process writes OUT/logs/NAME.PID.log.
# VG_JOBS=N: the unit part as one memcheck process per test, N at a time
# (FUSEC_TEST_FROM=NAME starts at that test in run order).
# VG_CLI_FILES: the CLI test files to run (default all, tests/cli/t_*.sh).
# VG_CLI_WARM=1: run the CLI suite natively once first with one shared kernel cache
# and give the memcheck run the same cache, so that its compiles find their kernels
# (LLVM's codegen then runs under memcheck in the unit tests only; the few CLI tests
# that expect a cold default cache fail in that mode, and say so).
# Exit status: 0 when every part passed and no process reported a memcheck error.
set -u
B=${1:?usage: run.sh BUILD OUT [PART...]}
OUT=${2:?usage: run.sh BUILD OUT [PART...]}
shift 2
[ $# -eq 0 ] && set -- unit conformance cli
ROOT=$(pwd)
ONNX_TESTDATA=${ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}
mkdir -p "$OUT/bin/tests" "$OUT/logs"
OUT=$(cd "$OUT" && pwd)
for f in fusec fusec-run unit onnx_conformance tests/fakecuda.so; do
	cp "$B/$f" "$OUT/bin/$f.real" || exit 2
done
mv "$OUT/bin/tests/fakecuda.so.real" "$OUT/bin/tests/fakecuda.so"
SUPP=$ROOT/tests/valgrind/fusec.supp
VG="valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite --suppressions=$SUPP"
# fusec and fusec-run under memcheck, as the CLI suite finds them (dirname of $FUSEC)
for f in fusec fusec-run; do
	printf '#!/bin/sh\nexec %s --log-file=%s/logs/%s.%%p.log %s/bin/%s.real "$@"\n' \
		"$VG" "$OUT" "$f" "$OUT" "$f" >"$OUT/bin/$f"
	chmod +x "$OUT/bin/$f"
done
rc=0
for part in "$@"; do
	start=$(date +%s)
	case $part in
	unit)
		if [ "${VG_JOBS:-1}" -le 1 ]; then
			(cd tests && $VG --log-file="$OUT/logs/unit.%p.log" "$OUT/bin/unit.real") \
				>"$OUT/unit.out" 2>&1 || rc=1
		else
			# one memcheck process per test, VG_JOBS at a time, from FUSEC_TEST_FROM
			# on in run order; each test's output in OUT/unit/NAME.out, its status
			# in OUT/unit/NAME.rc
			mkdir -p "$OUT/unit"
			(cd tests && FUSEC_TEST_LIST=1 "$OUT/bin/unit.real") |
				awk -v from="${FUSEC_TEST_FROM:-}" 'from == "" || $0 == from { on = 1 } on' \
				>"$OUT/unit/list"
			export VG OUT
			(cd tests && xargs -P "$VG_JOBS" -I{} sh -c \
				'FUSEC_TEST={} $VG --log-file="$OUT/logs/unit-{}.%p.log" "$OUT/bin/unit.real" \
					>"$OUT/unit/{}.out" 2>&1; echo $? >"$OUT/unit/{}.rc"' <"$OUT/unit/list")
			for t in $(cat "$OUT/unit/list"); do
				[ "$(cat "$OUT/unit/$t.rc" 2>/dev/null)" = 0 ] || { echo "unit: $t failed" >>"$OUT/unit.out"; rc=1; }
			done
		fi ;;
	conformance)
		# the harness gives each test child 60 s; memcheck needs many times that
		FUSEC_TEST_ALARM=3600 $VG --log-file="$OUT/logs/conformance.%p.log" \
			"$OUT/bin/onnx_conformance.real" -q -v --strict --list tests/onnx/fast.list \
			"$ONNX_TESTDATA/node" >"$OUT/conformance.out" 2>&1 || rc=1
		FUSEC_TEST_ALARM=3600 $VG --log-file="$OUT/logs/conformance.%p.log" \
			"$OUT/bin/onnx_conformance.real" -q --strict tests/onnx/models tests/onnx/pool tests/onnx/extra \
			>>"$OUT/conformance.out" 2>&1 || rc=1 ;;
	cli)
		if [ "${VG_CLI_WARM:-0}" = 1 ]; then
			# native binaries, laid out as the suite looks for them
			mkdir -p "$OUT/warm-cache" "$OUT/native/tests"
			ln -sf "$OUT/bin/fusec.real" "$OUT/native/fusec"
			ln -sf "$OUT/bin/fusec-run.real" "$OUT/native/fusec-run"
			ln -sf "$OUT/bin/tests/fakecuda.so" "$OUT/native/tests/fakecuda.so"
			FUSEC_TEST_CACHE="$OUT/warm-cache" FUSEC="$OUT/native/fusec" BUILD="$B" \
				FUSEC_TEST_FILES="${VG_CLI_FILES:-}" sh tests/cli/run.sh \
				>"$OUT/cli-warmup.out" 2>&1
			export FUSEC_TEST_CACHE="$OUT/warm-cache"
		fi
		# fusec.real beside the wrappers would be found by tests that look for
		# fusec-run and fakecuda.so beside $FUSEC: they find the wrappers instead
		FUSEC="$OUT/bin/fusec" BUILD="$B" FUSEC_TEST_FILES="${VG_CLI_FILES:-}" \
			sh tests/cli/run.sh >>"$OUT/cli.out" 2>&1 || rc=1 ;;
	*)
		echo "run.sh: unknown part '$part'" >&2
		exit 2 ;;
	esac
	echo "$part: $(( $(date +%s) - start )) s" >>"$OUT/times"
done
nlogs=$(ls "$OUT/logs" | wc -l)
bad=$(find "$OUT/logs" -type f -name "*.log" -size +0 | wc -l)
echo "valgrind: $nlogs processes, $bad with memcheck reports (logs in $OUT/logs)"
cat "$OUT/times"
[ "$bad" -eq 0 ] && [ "$rc" -eq 0 ]
