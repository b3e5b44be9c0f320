#!/usr/bin/env python3
"""bench.py: runs each benchmark graph three ways on the same inputs (fusec,
PyTorch eager, torch.compile), checks fusec's outputs against torch, and prints
one table. Meant for the GPU machine (python3 + torch + numpy, no LLVM there).

    python3 bench.py --fusec-run build/fusec-run --compiled DIR G1.json G2.json ...

DIR/NAME/ holds what `fusec compile NAME.json -o DIR/NAME` wrote on the build
machine (NAME.plan.json and NAME.ptx). Inputs are drawn with numpy from a fixed
seed, written as .npy and given to fusec-run with --inputs, so all three ways
see the same numbers. Timing: CUDA events, warm-up first, median of --iters;
when one input set fits in L2, every way rotates through several sets.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_graph  # noqa: E402

NP = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "i64": np.int64,
      "i32": np.int32, "i16": np.int16, "i8": np.int8, "u8": np.uint8, "bool": np.bool_}
L2_BYTES = 60 * 1024 * 1024


def make_inputs(graph, seed):
    rng = np.random.default_rng(seed)
    arrays = {}
    for name, t in graph["inputs"].items():
        dt, shape = t["dtype"], t["shape"]
        if dt in ("f64", "f32", "f16", "bf16"):
            a = rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)
            if len(shape) == 2 and name.split(".")[-1].startswith("w"):
                # weight matrices (G6: wq, wk, ..., w2) scaled by 1/sqrt(fan-in), as
                # a trained model's are: unscaled, 12 layers blow activations up
                # until softmax turns argmax-like and any rounding flips it
                a = (a / np.sqrt(shape[0])).astype(np.float32)
            if dt != "bf16":
                a = a.astype(NP[dt])
        elif dt == "bool":
            a = rng.integers(0, 2, size=shape).astype(np.bool_)
        else:
            a = rng.integers(0, 8, size=shape).astype(NP[dt])
        arrays[name] = a
    return arrays


def to_torch(graph, arrays):
    out = {}
    for name, a in arrays.items():
        t = torch.from_numpy(a).cuda()
        if graph["inputs"][name]["dtype"] == "bf16":
            t = t.to(torch.bfloat16)
        out[name] = t
    return out


def time_cuda(fn, sets, iters, warmup, batches=5):
    """Median over `batches` of the mean time per call, calls issued back to back
    between two CUDA events (the host runs ahead, so launch overhead is hidden when
    the GPU is the bottleneck, as in fusec-run's timing)."""
    for i in range(warmup):
        fn(sets[i % len(sets)])
    torch.cuda.synchronize()
    per = max(iters // batches, 1)
    times = []
    k = 0
    for _ in range(batches):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(per):
            fn(sets[k % len(sets)])
            k += 1
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / per)
    times.sort()
    return times[len(times) // 2]


def count_kernels(fn, x):
    from torch.profiler import ProfilerActivity, profile
    fn(x)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn(x)
        torch.cuda.synchronize()
    return sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
               and "memcpy" not in e.name.lower() and "memset" not in e.name.lower())


def copy_bandwidth():
    n = 1 << 28  # 1 GiB of f32
    x = torch.empty(n, dtype=torch.float32, device="cuda").uniform_()
    y = torch.empty_like(x)
    ms = time_cuda(lambda _: y.copy_(x), [None], 50, 5)
    return 2 * n * 4 / (ms * 1e-3) / 1e9


def run(cmd):
    # BENCH_TIMEOUT (seconds): a launch that hangs (a kernel waiting forever) fails
    # its row instead of the whole call
    t = float(os.environ["BENCH_TIMEOUT"]) if os.environ.get("BENCH_TIMEOUT") else None
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=t)
    except subprocess.TimeoutExpired:
        raise RuntimeError("%s timed out after %s s" % (" ".join(cmd), t))
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d):\n%s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p.stdout


def fusec_bench(args, plan_dir, in_dir):
    out = run([args.fusec_run, plan_dir, "--inputs", in_dir, "--bench",
               "--iters", str(args.iters), "--warmup", str(args.warmup)])
    m = re.search(r"total: median ([0-9.]+) us", out)
    if not m:
        raise RuntimeError("no total in fusec-run output:\n" + out)
    return float(m.group(1)) / 1e3, out


def compare(graph, ref, out_dir, name):
    worst = 0.0
    for oname in graph["outputs"]:
        got = np.load(os.path.join(out_dir, oname + ".npy")).astype(np.float64)
        want = ref[oname].float().cpu().numpy().astype(np.float64)
        if got.shape != want.shape:
            raise RuntimeError("%s: output %s has shape %s, torch %s" % (name, oname, got.shape, want.shape))
        err = np.max(np.abs(got - want) / (1.0 + np.abs(want))) if got.size else 0.0
        if graph["inputs"] and next(iter(graph["inputs"].values()))["dtype"] in ("bf16", "f16"):
            err /= 8.0   # half-precision outputs: 8x the f32 tolerance
        worst = max(worst, float(err))
    return worst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fusec-run", required=True)
    ap.add_argument("--compiled", required=True, help="folder of NAME/ plan folders")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tol", type=float, default=2e-3)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("graphs", nargs="+")
    args = ap.parse_args()

    print("device: %s, torch %s, driver %s" % (torch.cuda.get_device_name(),
                                              torch.__version__, torch.version.cuda))
    bw = copy_bandwidth()
    print("device-to-device copy bandwidth: %.0f GB/s" % bw)
    rows = []
    for path in args.graphs:
        graph = json.load(open(path))
        name = graph.get("name") or os.path.splitext(os.path.basename(path))[0]
        plan_dir = os.path.join(args.compiled, name)
        plan = json.load(open(os.path.join(plan_dir, name + ".plan.json")))
        arrays = make_inputs(graph, args.seed)
        tmp = tempfile.mkdtemp()
        in_dir, out_dir = os.path.join(tmp, "in"), os.path.join(tmp, "out")
        os.makedirs(in_dir)
        for k, a in arrays.items():
            np.save(os.path.join(in_dir, k + ".npy"), a)
        x = to_torch(graph, arrays)
        nbytes = sum(t.numel() * t.element_size() for t in x.values())
        sets = [x] + [{k: v.clone() for k, v in x.items()}
                      for _ in range(min(16, (2 * L2_BYTES) // max(nbytes, 1)))]
        f = torch_graph.build(graph)
        with torch.no_grad():
            ref = f(x)
            run([args.fusec_run, plan_dir, "--inputs", in_dir, "--outputs", out_dir])
            err = compare(graph, ref, out_dir, name)
            fusec_ms, report = fusec_bench(args, plan_dir, in_dir)
            eager_ms = time_cuda(f, sets, args.iters, args.warmup)
            eager_k = count_kernels(f, x)
            comp_ms, comp_k = float("nan"), 0
            if not args.no_compile:
                fc = torch.compile(f)
                comp_ms = time_cuda(fc, sets, args.iters, args.warmup)
                comp_k = count_kernels(fc, x)
        moved = nbytes + sum(v.numel() * v.element_size() for v in ref.values())
        fusec_k = sum(len(s["launches"]) for s in plan["steps"])
        rows.append((name, fusec_ms, eager_ms, comp_ms, moved / (fusec_ms * 1e-3) / 1e9 / bw * 100,
                     fusec_k, eager_k, comp_k, err))
        print(report)
        sys.stdout.flush()

    print("| graph | fusec ms | eager ms | torch.compile ms | fusec / compile | fusec % of copy BW "
          "| kernels fusec / eager / compile | max rel err vs torch |")
    print("|---|---|---|---|---|---|---|---|")
    bad = False
    for r in rows:
        print("| %s | %.3f | %.3f | %.3f | %.2f | %.0f %% | %d / %d / %d | %.1e |" %
              (r[0], r[1], r[2], r[3], r[1] / r[3] if r[3] == r[3] else float("nan"), r[4],
               r[5], r[6], r[7], r[8]))
        bad |= r[8] > args.tol
    if bad:
        print("some outputs differ from torch beyond %g" % args.tol)
        sys.exit(1)


if __name__ == "__main__":
    main()
