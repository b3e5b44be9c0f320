#!/bin/sh
# gpu_prepare.sh B [SIZE]: make a self-contained GPU bundle in folder B (here, with
# LLVM): the six models exported at SIZE (default gpu), compiled with build/fusec into
# B/plans/NAME, build/fusec-run, libcjson.so.1, export.py, gpu_bench.py and
# B/go.sh (a copy of gpu_bench.sh). There, from any folder: sh B/go.sh
# Needs `make` done and python3 with torch (CPU) and onnx for export.py.
set -eu
B=$1; SIZE=${2:-gpu}
here=$(dirname "$0")
PY=${PYTHON:-python3}
tmp=$(mktemp -d)
rm -rf "$B"; mkdir -p "$B/plans"
"$PY" "$here/export.py" "$tmp" --size "$SIZE" 2>/dev/null
for m in resnet18 mobilenetv3_small vit2 bert gpt2 llama; do
	build/fusec compile "$tmp/$m.onnx" -o "$B/plans/$m" > /dev/null
done
cp build/fusec-run /usr/lib/x86_64-linux-gnu/libcjson.so.1 "$here/export.py" \
	"$here/gpu_bench.py" "$B/"
cp "$here/gpu_bench.sh" "$B/go.sh"
echo "$SIZE" > "$B/size"
rm -rf "$tmp"
du -sh "$B"
