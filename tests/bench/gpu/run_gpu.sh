#!/bin/sh
# run_gpu.sh: what the GPU machine runs. G is a folder prepared on the build
# machine (see docs/benchmarks.md): fusec-run and libcjson.so.1, plans/NAME/ from
# `fusec compile`, expect/NAME/ from `fusec run --backend interp --seed 1 --outputs`.
#   sh tests/bench/gpu/run_gpu.sh G check          # numeric check of every plan with expectations
#                                                   (CHECK_FROM=NAME: from NAME on, in name order;
#                                                    PLAN_TIMEOUT=S: S seconds a plan at most;
#                                                    JOBS=N: N plans at once, default 1)
#   sh tests/bench/gpu/run_gpu.sh G bench ARGS...  # bench.py over the given graphs
set -u
G=$1; what=$2; shift 2
export LD_LIBRARY_PATH="$G${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
here=$(dirname "$0")
case $what in
check)
	nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
	st=/tmp/gpu_check
	rm -rf "$st"
	mkdir -p "$st" /tmp/got
	for e in "$G"/expect/*/; do
		n=$(basename "$e")
		# CHECK_FROM=NAME: start at NAME (in name order), to finish a cut-short run
		[ -z "${CHECK_FROM:-}" ] || [ "$(printf '%s\n%s\n' "$CHECK_FROM" "$n" | LC_ALL=C sort | head -1)" = "$CHECK_FROM" ] || continue
		echo "$n"
	done | JOBS=${JOBS:-1} xargs -P "${JOBS:-1}" -n 1 sh "$0" "$G" one
	fails=$(cat "$st"/*.fail 2>/dev/null | wc -l)
	unchecked=$(cat "$st"/*.unchecked 2>/dev/null | wc -l)
	checked=$(ls "$st" | grep -c '\.res$')
	echo "numeric check: $fails plan(s) failed, $unchecked not checked (outputs with unbounded elements), of $checked"
	;;
one)
	# one plan (run by check, JOBS at a time: the driver's PTX compile is most of
	# a plan's time, and it is the CPU's): its lines printed whole as it ends
	n=$1 st=/tmp/gpu_check
	{
		echo "== $n"
		# PLAN_TIMEOUT=S: a plan that hangs fails after S seconds
		if ${PLAN_TIMEOUT:+timeout "$PLAN_TIMEOUT"} "$G/fusec-run" "$G/plans/$n" --seed 1 --outputs "/tmp/got/$n" > "/tmp/run_$n.txt" 2>&1; then
			python3 "$here/check_outputs.py" "$G/expect/$n" "/tmp/got/$n" > "/tmp/chk_$n.txt"
			case $? in
			0) tail -1 "/tmp/chk_$n.txt" ;;
			4) grep -v " ok$" "/tmp/chk_$n.txt"; echo "$n" > "$st/$n.unchecked" ;;
			*) grep -v " ok$" "/tmp/chk_$n.txt"; echo "$n" > "$st/$n.fail" ;;
			esac
		else
			echo "fusec-run failed:"; cat "/tmp/run_$n.txt"; echo "$n" > "$st/$n.fail"
		fi
		rm -rf "/tmp/got/$n"
	} > "$st/$n.res" 2>&1
	cat "$st/$n.res"
	;;
bench)
	python3 "$here/bench.py" --fusec-run "$G/fusec-run" --compiled "$G/plans" "$@"
	;;
esac
