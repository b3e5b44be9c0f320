#!/bin/sh
# check_direct.sh: the numeric check without precomputed expectations, on the GPU
# machine: each graph compiled, run on the GPU and checked against the interpreter
# there by the static fusec (`fusec run --backend cuda --seed 1 --check`), one line
# of result per graph as it finishes (so a call cut short still shows what it did).
#   sh tests/bench/gpu/check_direct.sh T/fusec GRAPH [GRAPH ...]
# A GRAPH may carry options after a colon, and a configuration to force before an
# at sign: tests/bench/gpu/att_check_f16.json@att128x64d128,
# tests/bench/gpu/att_check_tf32.json:--allow-tf32. TIMEOUT (seconds, default 70)
# bounds each. Exit status: the number of graphs that failed (at most 100).
F=$1
shift
fails=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for spec in "$@"; do
	g=${spec%%:*} opts=
	[ "$g" = "$spec" ] || opts=$(printf '%s' "${spec#*:}" | tr ',' ' ')
	cfg=
	case $g in *@*) cfg=${g#*@} g=${g%@*} ;; esac
	t0=$(date +%s)
	if [ -n "$cfg" ]; then export FUSEC_MATMUL_TILES="$cfg"; else unset FUSEC_MATMUL_TILES; fi
	# shellcheck disable=SC2086
	timeout "${TIMEOUT:-70}" "$F" run "$g" --backend cuda --seed 1 --check $opts \
		> "$out" 2>&1
	rc=$?
	oks=$(grep -c " ok$" "$out")
	echo "== $spec: exit $rc, $oks ok, $(( $(date +%s) - t0 )) s"
	[ "$rc" = 0 ] || { grep -v " ok$" "$out" | tail -8; fails=$((fails + 1)); }
done
echo "check_direct: $fails of $# failed"
[ "$fails" -le 100 ] || fails=100
exit "$fails"
