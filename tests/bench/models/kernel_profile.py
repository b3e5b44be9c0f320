#!/usr/bin/env python3
"""Where a model's time goes, kernel by kernel: fusec's launches beside torch.compile's.

usage: kernel_profile.py T [--model bert] [--batch 8] [--dtype bf16] [--iters 20]
                         [--top 15] [--work DIR]

T is the bundle of real_models.sh (fusec, fusec-run and their libraries). The model is
built as real_models.py builds it (random weights, seeded; sdpa attention, exported
with eager attention where sdpa does not export), exported by torch.onnx.export,
compiled by `fusec compile`, and run by `fusec-run --bench --no-graph` (each launch
timed on its own, back to back). torch.compile (default mode) runs the same module
under torch.profiler. Prints, per side, the time of one run by kind of kernel (fusec:
the kernel's kind and its tile configuration; torch: matmul, attention, Triton or
other, by the kernel's name) and the top kernels, so that the two can be compared
kind by kind. Times are sums of per-launch medians (fusec) and of the profiler's
kernel times over the runs divided by their number (torch): without launch gaps,
so they add up to less than a run's wall time on either side."""
import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np
import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import real_models as rm  # noqa: E402
from gpu_bench import safe  # noqa: E402  (on the path real_models sets)


def torch_kind(name):
    n = name.lower()
    if "flash" in n or "fmha" in n or "attention" in n:
        return "attention"
    if any(w in n for w in ("gemm", "xmma", "cutlass", "cublas", "nvjet", "matmul")):
        return "matmul"
    if n.startswith("triton"):
        return "triton (fused)"
    return "other"


def fusec_side(a, path, ins, inputs):
    env = dict(os.environ, LD_LIBRARY_PATH=a.bundle + ":" + os.environ.get("LD_LIBRARY_PATH", ""))
    # a folder of this model's own: a run of another model left its plan in "plan"
    plan = os.path.join(a.work, "plan_" + os.path.splitext(os.path.basename(path))[0])
    r = subprocess.run([os.path.join(a.bundle, "fusec"), "compile", path, "-o", plan, "-q",
                        "--no-cache", "-j", "16"], env=env, capture_output=True, text=True)
    if r.returncode:
        sys.exit("fusec compile failed:\n" + r.stderr)
    ind = os.path.join(a.work, "in")
    os.makedirs(ind, exist_ok=True)
    for n, x in zip(ins, inputs):
        np.save(os.path.join(ind, safe(n) + ".npy"),
                x.detach().cpu().float().numpy() if x.is_floating_point() else x.cpu().numpy())
    r = subprocess.run([os.path.join(a.bundle, "fusec-run"), plan, "--inputs", ind, "--bench",
                        "--no-graph", "--iters", str(a.iters), "--warmup", "3"],
                       env=env, capture_output=True, text=True)
    if r.returncode:
        sys.exit("fusec-run failed:\n" + r.stderr)
    pj = json.load(open([os.path.join(plan, f) for f in os.listdir(plan)
                         if f.endswith(".plan.json")][0]))
    tiles = {k["name"]: k.get("tiles", "") for k in pj["kernels"]}
    kinds, launches = {}, []
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) >= 7 and f[0].isdigit() and f[1].isdigit():
            us = float(f[-3])
            kind = re.sub(r"_[0-9a-f]{16}$", "", f[2])
            if tiles.get(f[2]):
                kind += " " + tiles[f[2]]
            kinds.setdefault(kind, [0, 0.0])
            kinds[kind][0] += 1
            kinds[kind][1] += us
            launches.append((us, f[2], tiles.get(f[2], "")))
    tot = re.search(r"^total: median ([0-9.]+) us", r.stdout, re.M)
    return kinds, launches, float(tot.group(1)) if tot else None


def torch_side(a, m, inputs):
    c = torch.compile(m)
    with torch.no_grad():
        for _ in range(3):
            c(*inputs)
        torch.cuda.synchronize()
        acts = [torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=acts) as prof:
            for _ in range(a.iters):
                c(*inputs)
            torch.cuda.synchronize()
    kinds, kernels = {}, []
    for e in prof.key_averages():
        t = getattr(e, "device_time_total", None)
        if t is None:
            t = e.cuda_time_total
        if t <= 0:
            continue
        us = t / a.iters
        k = torch_kind(e.key)
        kinds.setdefault(k, [0, 0.0])
        kinds[k][0] += e.count // a.iters
        kinds[k][1] += us
        kernels.append((us, e.key[:90], e.count // a.iters))
    return kinds, kernels


def table(title, kinds, total=None):
    print(f"\n{title}\n\n| kind | launches a run | us a run |\n|---|---:|---:|")
    for k, (n, us) in sorted(kinds.items(), key=lambda kv: -kv[1][1]):
        print(f"| {k} | {n} | {us:.1f} |")
    s = sum(us for _, us in kinds.values())
    print(f"| all | {sum(n for n, _ in kinds.values())} | {s:.1f} |")
    if total:
        print(f"\n(fusec-run's total, launch by launch with events: {total:.1f} us)")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("bundle")
    p.add_argument("--model", default="bert")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--top", type=int, default=15)
    p.add_argument("--work", default="/tmp/kernel_profile")
    a = p.parse_args()
    a.bundle = os.path.abspath(a.bundle)
    os.makedirs(a.work, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    m, inputs, ins, outs = rm.build(a.model, a.batch, a.dtype, False, "sdpa")
    m = m.cuda().eval()
    inputs = [x.cuda() for x in inputs]
    path = os.path.join(a.work, a.model + ".onnx")
    try:
        rm.export(m, inputs, ins, outs, path)
    except Exception:  # sdpa in bf16 does not export (real_models.py)
        m.m.set_attn_implementation("eager")
        rm.export(m, inputs, ins, outs, path)
        m.m.set_attn_implementation("sdpa")
    print(f"{a.model}, batch {a.batch}, {a.dtype}: {torch.cuda.get_device_name()}, "
          f"torch {torch.__version__}")
    fk, fl, ftot = fusec_side(a, path, ins, inputs)
    tk, tl = torch_side(a, m, inputs)
    table("fusec, by kind of kernel", fk, ftot)
    table("torch.compile (default mode), by kind of kernel", tk)
    print(f"\nfusec's top {a.top} launches\n\n| us | kernel | tiles |\n|---:|---|---|")
    for us, n, t in sorted(fl, reverse=True)[:a.top]:
        print(f"| {us:.1f} | {n} | {t} |")
    print(f"\ntorch's top {a.top} kernels (a run)\n\n| us | launches | kernel |\n|---:|---:|---|")
    for us, n, c in sorted(tl, reverse=True)[:a.top]:
        print(f"| {us:.1f} | {c} | {n} |")


if __name__ == "__main__":
    main()
