#!/usr/bin/env python3
"""Time the reference architectures in torch eager and torch.compile on a GPU.

usage: bench_torch.py [--size tiny|small|gpu|base] [--iters N] [MODEL...]

The modules and inputs are exactly those export.py exports (same code, same
seeds), so the figures sit beside `fusec-run DIR --bench` on the plans compiled
from those .onnx files (docs/onnx.md, docs/benchmarks.md). Prints one line per
model: eager and torch.compile milliseconds per forward (median of N, CUDA
events, after warm-up; f32 without TF32). Needs torch with CUDA (no onnx);
not part of any test. gpu_bench.py runs fusec-run beside it and checks outputs.
"""
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export import seeded_models  # noqa: E402


def time_ms(fn, args, iters):
    for _ in range(5):
        fn(*args)
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn(*args)
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts)


def main():
    args = sys.argv[1:]
    size, iters = "small", 50
    if "--size" in args:
        k = args.index("--size")
        size = args[k + 1]
        del args[k:k + 2]
    if "--iters" in args:
        k = args.index("--iters")
        iters = int(args[k + 1])
        del args[k:k + 2]
    torch.backends.cuda.matmul.allow_tf32 = False  # strict f32, as fusec computes
    torch.backends.cudnn.allow_tf32 = False
    for name, (m, inputs, _, _) in seeded_models(size).items():
        if args and name not in args:
            continue
        m = m.cuda()
        inputs = tuple(x.cuda() for x in inputs)
        with torch.no_grad():
            eager = time_ms(m, inputs, iters)
            compiled = time_ms(torch.compile(m), inputs, iters)
        print(f"{name} ({size}): eager {eager:.3f} ms, torch.compile {compiled:.3f} ms")


if __name__ == "__main__":
    main()
