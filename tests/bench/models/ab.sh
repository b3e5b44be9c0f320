#!/bin/sh
# ab.sh A B W [ROUNDS]: two builds of fusec on the same exports, on the GPU machine.
# A and B are bundle folders as real_models.sh takes them (fusec, fusec-run, their
# libraries, extra/ with libcrypto.so.3); W holds ONNX files (real_models.sh --keep
# --work W leaves them there). Each W/NAME.onnx is compiled by A/fusec into
# W/A_NAME and by B/fusec into W/B_NAME (--no-cache), then each plan is timed by its
# own fusec-run (--bench --iters ITERS, default 30), A and B alternating, ROUNDS
# times (default 2). Prints one markdown table of the CUDA-graph totals (µs, every
# round) with B / A (of the medians' means), then each plan's tile configurations.
#   sh tests/bench/models/ab.sh .gpu/O .gpu/N /tmp/rm
set -u
[ $# -ge 3 ] || { echo "usage: ab.sh A B W [ROUNDS]" >&2; exit 2; }
A=$(cd "$1" && pwd) B=$(cd "$2" && pwd) W=$3 ROUNDS=${4:-2}
ITERS=${ITERS:-30}
lib() {  # the bundle's libraries, for its fusec and fusec-run only
	if ldconfig -p 2>/dev/null | grep -q 'libcrypto.so.3 '; then echo "$1"; else echo "$1:$1/extra"; fi
}
set -- "$W"/*.onnx
[ -e "$1" ] || { echo "ab.sh: no ONNX file in $W" >&2; exit 1; }
for f in "$@"; do
	n=$(basename "${f%.onnx}")
	for v in A B; do
		eval "d=\$$v"
		LD_LIBRARY_PATH=$(lib "$d") "$d/fusec" compile "$f" -o "$W/${v}_$n" -j 8 --no-cache -q ||
			echo "ab.sh: $v could not compile $n" >&2 &
	done
	wait
done
# graph total of one plan: fusec-run prints "total: median" (direct launches),
# then "graph total: median" (replayed as a CUDA graph)
total() {
	LD_LIBRARY_PATH=$(lib "$1") timeout 120 "$1/fusec-run" "$2" --bench --iters "$ITERS" 2>&1 |
		sed -n 's/^graph total: median \([0-9.]*\) us.*/\1/p'
}
echo "| export | A (µs) | B (µs) | B / A |"
echo "|---|---:|---:|---:|"
for f in "$@"; do
	n=$(basename "${f%.onnx}")
	ta= tb=
	r=0
	while [ $r -lt "$ROUNDS" ]; do
		ta="$ta $(total "$A" "$W/A_$n")"
		tb="$tb $(total "$B" "$W/B_$n")"
		r=$((r + 1))
	done
	echo "$n|$ta|$tb" | awk -F'|' '{
		na = split($2, a, " "); nb = split($3, b, " "); sa = sb = 0
		for (i = 1; i <= na; i++) sa += a[i]
		for (i = 1; i <= nb; i++) sb += b[i]
		r = (na && nb && sa > 0) ? sprintf("%.2f", (sb / nb) / (sa / na)) : "n/a"
		gsub(/^ +| +$/, "", $2); gsub(/^ +| +$/, "", $3); gsub(/ +/, " / ", $2); gsub(/ +/, " / ", $3)
		printf "| %s | %s | %s | %s |\n", $1, $2, $3, r }'
done
for f in "$@"; do
	n=$(basename "${f%.onnx}")
	for v in A B; do
		printf '%s %s:' "$n" "$v"
		grep -o '"tiles":"[a-z0-9]*"' "$W/${v}_$n"/*.plan.json 2>/dev/null | sed 's/"tiles":"\(.*\)"/\1/' |
			sort | uniq -c | awk '{printf " %s x%s", $2, $1}'
		echo
	done
done
