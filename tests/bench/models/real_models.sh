#!/bin/sh
# real_models.sh T [--models A,B] [--batches big,1] [--dtypes f32,bf16] [--iters N] [...]:
# BERT-base, GPT-2 small, a 12-layer GQA Llama (transformers), ViT-B/16, ResNet-50 and
# MobileNetV3-Large (torchvision), random weights, exported with torch.onnx.export,
# compiled with T/fusec and run with T/fusec-run beside torch eager, torch.compile and
# torch.compile(mode="reduce-overhead") on the GPU machine; one markdown table, also in
# $OUT/real_models.md (tests/bench/models/README.md). T holds fusec (the stripped
# build/fusec-static of `make static`), fusec-run and the shared libraries they need
# beyond that machine's (libcjson.so.1, libyaml-0.so.2, libprotobuf-c.so.1; T/extra
# with libcrypto.so.3 where that machine has none), as for gpu_base.sh.
#   FUSEC=build/fusec sh tests/bench/models/real_models.sh --dry-run   # here, no GPU
# Other options go to real_models.py (--help); PYTHON picks the interpreter.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
case "${1:-}" in
"" | -*)
	exec "$PY" "$here/real_models.py" "$@" ;;
esac
T=$(cd "$1" && pwd); shift
# the bundled libraries, for fusec and fusec-run only: real_models.py sets them in
# LD_LIBRARY_PATH of those two commands alone, never for python and torch
FUSEC_LIB=$T
ldconfig -p 2>/dev/null | grep -q 'libcrypto.so.3 ' || FUSEC_LIB=$T:$T/extra
export FUSEC_LIB
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader \
	2>/dev/null || echo "(no nvidia-smi)"
exec "$PY" "$here/real_models.py" --bundle "$T" "$@"
