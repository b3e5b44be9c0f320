#!/bin/sh
# run_gpu.sh: what the GPU machine runs. G is a folder prepared on the build
# machine (see docs/benchmarks.md): fusec-run and libcjson.so.1, plans/NAME/ from
# `fusec compile`, expect/NAME/ from `fusec run --backend interp --seed 1 --outputs`.
#   sh tests/bench/gpu/run_gpu.sh G check          # numeric check of every plan with expectations
#                                                   (CHECK_FROM=NAME: from NAME on, in name order;
#                                                    PLAN_TIMEOUT=S: S seconds a plan at most)
#   sh tests/bench/gpu/run_gpu.sh G bench ARGS...  # bench.py over the given graphs
set -u
G=$1; what=$2; shift 2
export LD_LIBRARY_PATH="$G${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
here=$(dirname "$0")
case $what in
check)
	nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
	fails=0 unchecked=0
	for e in "$G"/expect/*/; do
		n=$(basename "$e")
		# CHECK_FROM=NAME: start at NAME (in name order), to finish a cut-short run
		[ -z "${CHECK_FROM:-}" ] || [ "$(printf '%s\n%s\n' "$CHECK_FROM" "$n" | LC_ALL=C sort | head -1)" = "$CHECK_FROM" ] || continue
		echo "== $n"
		mkdir -p /tmp/got
		# PLAN_TIMEOUT=S: a plan that hangs fails after S seconds
		${PLAN_TIMEOUT:+timeout "$PLAN_TIMEOUT"} "$G/fusec-run" "$G/plans/$n" --seed 1 --outputs "/tmp/got/$n" > "/tmp/run_$n.txt" 2>&1 ||
			{ echo "fusec-run failed:"; cat "/tmp/run_$n.txt"; fails=$((fails + 1)); continue; }
		python3 "$here/check_outputs.py" "$e" "/tmp/got/$n" > "/tmp/chk_$n.txt"
		case $? in
		0) tail -1 "/tmp/chk_$n.txt" ;;
		4) grep -v " ok$" "/tmp/chk_$n.txt"; unchecked=$((unchecked + 1)) ;;
		*) grep -v " ok$" "/tmp/chk_$n.txt"; fails=$((fails + 1)) ;;
		esac
	done
	echo "numeric check: $fails plan(s) failed, $unchecked not checked (outputs with unbounded elements)"
	;;
bench)
	python3 "$here/bench.py" --fusec-run "$G/fusec-run" --compiled "$G/plans" "$@"
	;;
esac
