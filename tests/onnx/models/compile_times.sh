#!/bin/sh
# compile_times.sh FUSEC MODEL.onnx...: the time of `fusec compile MODEL -o DIR` per
# model, into a fresh DIR (cold: the weights file is written and synced) and again
# into the same DIR (a recompile: the unchanged weights file is compared, not
# rewritten). Prints wall, user and sys seconds and peak memory (GNU time). The
# kernel cache is whatever FUSEC's default is; run once before to warm it, or pass
# FLAGS=--no-cache to time LLVM too. docs/onnx.md records the figures.
set -eu
F=$1; shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%-22s %-9s %7s %7s %7s %8s\n' model run wall user sys peak_MB
for m in "$@"; do
	n=$(basename "$m" .onnx)
	for run in cold again; do
		[ "$run" = cold ] && rm -rf "$tmp/$n"
		/usr/bin/time -f '%e %U %S %M' -o "$tmp/t" "$F" compile "$m" -o "$tmp/$n" \
			${FLAGS:-} > /dev/null
		read -r e u s k < "$tmp/t"
		printf '%-22s %-9s %7s %7s %7s %8d\n' "$n" "$run" "$e" "$u" "$s" $((k / 1024))
	done
done
