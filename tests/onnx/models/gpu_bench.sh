#!/bin/sh
# gpu_bench.sh (copied as B/go.sh by gpu_prepare.sh): on the GPU machine, time the
# six compiled plans with fusec-run beside torch eager and torch.compile and check
# fusec's outputs against eager. Table on stdout and in $OUT/onnx_gpu.txt.
#   sh B/go.sh [--iters N] [--dry-run FUSEC ONNXDIR]
B=$(cd "$(dirname "$0")" && pwd)
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader \
	2>/dev/null || echo "(no nvidia-smi)"
exec timeout 450 python3 "$B/gpu_bench.py" "$B" --size "$(cat "$B/size")" "$@"
