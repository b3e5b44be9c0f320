#!/bin/sh
# compile_ab.sh: cold compile wall time of two fusec binaries, alternating.
# usage: sh tests/bench/compile_ab.sh OLD NEW [CORES] [JOBS] GRAPH...
#   CORES: a taskset CPU list ("2,3"), or "-" for no pinning; JOBS: fusec's -j.
# Prints one line per run (wall, user, system seconds, peak KB, fusec's --time
# lines) and the median wall of each binary per graph (three runs each).
set -u
OLD=$1 NEW=$2 CORES=${3:--} JOBS=${4:-2}
shift 4
W=$(mktemp -d)
pin=""
[ "$CORES" != - ] && pin="taskset -c $CORES"
for g in "$@"; do
	: >"$W/old" ; : >"$W/new"
	for r in 1 2 3; do
		for v in old new; do
			b=$OLD; [ $v = new ] && b=$NEW
			rm -rf "$W/o"
			/usr/bin/time -o "$W/t" -f "%e %U %S %M" $pin "$b" compile "$g" -o "$W/o" \
				-j "$JOBS" --no-cache -q --time 2>"$W/err" >/dev/null
			set -- $(cat "$W/t")
			echo "$1" >>"$W/$v"
			echo "$(basename "$g") -j $JOBS $v run $r: $1 s wall, $2 user, $3 sys, $4 KB; $(grep LLVM "$W/err")"
		done
	done
	echo "$(basename "$g") median wall: old $(sort -n "$W/old" | sed -n 2p) s, new $(sort -n "$W/new" | sed -n 2p) s"
done
rm -rf "$W"
