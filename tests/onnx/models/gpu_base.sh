#!/bin/sh
# gpu_base.sh T [SIZE] [ITERS]: the full-size models on the GPU machine, which has
# torch and onnx but no LLVM (docs/benchmarks.md, "Full-size models"). T holds
# `fusec` (build/fusec-static of `make static`, stripped), `fusec-run` and the
# shared libraries they need beyond that machine's (libcjson.so.1, libyaml-0.so.2,
# libprotobuf-c.so.1). There: export the models at SIZE (default base) with
# export.py, compile each cold (-j 16 --no-cache --time, the times in
# T/compile.txt), then gpu_bench.py T --size SIZE --iters ITERS (default 20):
# fusec-run beside torch eager and torch.compile, one table.
set -eu
T=$(cd "$1" && pwd); SIZE=${2:-base}; ITERS=${3:-20}
here=$(cd "$(dirname "$0")" && pwd)
export PYTHONUNBUFFERED=1
# the bundled libraries for fusec only (gpu_bench.py sets its own for fusec-run);
# T/extra (libcrypto.so.3) only where that machine has none
lib=$T
ldconfig -p 2>/dev/null | grep -q 'libcrypto.so.3 ' || lib=$T:$T/extra
rm -rf "$T/onnx" "$T/plans"; mkdir -p "$T/onnx" "$T/plans"
python3 "$here/export.py" "$T/onnx" --size "$SIZE" >/dev/null
: >"$T/compile.txt"
for f in "$T"/onnx/*.onnx; do
	m=$(basename "$f" .onnx)
	echo "== $m" >>"$T/compile.txt"
	LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$T/fusec" compile "$f" -o "$T/plans/$m" -j 16 --no-cache --time -q 2>>"$T/compile.txt"
done
cat "$T/compile.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader || true
python3 "$here/gpu_bench.py" "$T" --size "$SIZE" --iters "$ITERS"
