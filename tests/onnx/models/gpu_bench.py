#!/usr/bin/env python3
"""fusec-run beside torch eager and torch.compile on the six reference models.

usage: gpu_bench.py BUNDLE [--size gpu] [--iters N] [--out FILE] [--models A,B,...]
                     [--dry-run FUSEC ONNXDIR]

BUNDLE holds fusec-run, libcjson.so.1 and plans/NAME/ (`fusec compile` of the
files `export.py OUT --size SIZE` writes). For each model: the inputs export.py
traced with are written as .npy, `fusec-run plans/NAME --inputs --outputs --bench`
runs them, the same module (seeded_models, so the same weights) runs in torch eager
and torch.compile (mode default) on the GPU, strict f32 (no TF32). Each is timed two
ways, with CUDA events after warm-up: back to back (calls issued without waiting,
the mean per call, median of 5 batches; fusec-run's "total: median") and one call
at a time (the host waits for each; median of N; fusec-run's "latency: median").
fusec's outputs are compared with eager's (relative L2 = |fusec - eager| / |eager|).
Prints one table and writes it to FILE (default $OUT/onnx_gpu.txt when OUT is set).
Needs torch with CUDA and numpy; no onnx or onnxruntime.

--models runs only the named models (default all six).

--dry-run FUSEC ONNXDIR checks the logic on a machine without a GPU: fusec-run only
validates each plan (--plan-only), the outputs come from `FUSEC run ONNXDIR/NAME.onnx
--backend cpu`, torch runs eager on the CPU, and torch.compile is skipped.
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export import seeded_models  # noqa: E402

ORDER = ["resnet18", "mobilenetv3_small", "vit2", "bert", "gpt2", "llama"]
COMPILE_BUDGET_S = 330  # stop compiling with torch.compile after this much wall time


def time_ms(fn, args, iters, cuda):
    for _ in range(5):
        fn(*args)
    if not cuda:
        ts = []
        for _ in range(iters):
            t = time.perf_counter()
            fn(*args)
            ts.append((time.perf_counter() - t) * 1e3)
        return statistics.median(ts)
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


def time_stream_ms(fn, args, iters, cuda, batches=5):
    """Calls issued back to back between two CUDA events, the host running ahead
    (as fusec-run's `total`): median over `batches` of the mean time per call."""
    if not cuda:
        return time_ms(fn, args, iters, cuda)
    for _ in range(5):
        fn(*args)
    torch.cuda.synchronize()
    per = max(iters // batches, 1)
    ts = []
    for _ in range(batches):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(per):
            fn(*args)
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) / per)
    return statistics.median(ts)


def safe(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def rel_l2(got, ref):
    got, ref = got.astype(np.float64).ravel(), ref.astype(np.float64).ravel()
    n = np.linalg.norm(ref)
    return float(np.linalg.norm(got - ref) / (n if n > 0 else 1.0))


def f(v, fmt):
    return "-" if v is None else fmt.format(v)


def render(rows, size, iters, cuda, start, done):
    lines = [f"fusec ONNX models, size {size}: fusec-run --bench vs torch "
             f"{torch.__version__} eager / torch.compile (mode default), f32 without TF32, "
             f"batch 1, median of {iters}"
             + ("" if cuda else " [DRY RUN: CPU, no GPU figures]"),
             f"{'':<18} {'':>8} {'back to back (ms per call)':^43} "
             f"{'one call at a time (ms)':^43}",
             f"{'model':<18} {'params':>8} {'fusec':>7} {'eager':>7} {'compile':>7} "
             f"{'eag/fus':>8} {'comp/fus':>8}  {'fusec':>7} {'eager':>7} {'compile':>7} "
             f"{'eag/fus':>8} {'comp/fus':>8} {'rel L2':>8} {'build s':>7}  note"]

    def ratio(a, b):
        return a / b if a and b else None
    for r in rows:
        cells = []
        for k in ("", "_lat"):
            fu, ea, co = r["fusec" + k], r["eager" + k], r["compiled" + k]
            cells.append(f"{f(fu, '{:.3f}'):>7} {f(ea, '{:.3f}'):>7} {f(co, '{:.3f}'):>7} "
                         f"{f(ratio(ea, fu), '{:.2f}x'):>8} {f(ratio(co, fu), '{:.2f}x'):>8}")
        lines.append(f"{r['name']:<18} {r['params'] / 1e6:>7.2f}M {cells[0]}  {cells[1]} "
                     f"{f(r['rel'], '{:.1e}'):>8} {f(r['ctime'], '{:.0f}'):>7}  {r['note']}")
    lines.append("back to back: calls issued without waiting (fusec-run's `total`; the "
                 "host's launch cost hidden when the GPU is busy); one call at a time: the "
                 "host waits for each call (fusec-run's `latency`; launch and framework "
                 "overhead included). ratio = torch time / fusec time (above 1: fusec "
                 "faster); rel L2 = |fusec - eager| / |eager|, worst output; build s = "
                 "torch.compile's first call")
    lines.append(f"wall {time.time() - start:.0f} s" + ("" if done else " (INCOMPLETE)"))
    return "\n".join(lines)


def main():
    argv = sys.argv[1:]
    if not argv or argv[0].startswith("-"):
        sys.exit(__doc__)
    bundle, argv = argv[0], argv[1:]
    size, iters, out, dry, only = "gpu", 50, None, None, None
    while argv:
        a = argv.pop(0)
        if a == "--size":
            size = argv.pop(0)
        elif a == "--iters":
            iters = int(argv.pop(0))
        elif a == "--out":
            out = argv.pop(0)
        elif a == "--models":
            only = argv.pop(0).split(",")
        elif a == "--dry-run":
            dry = (argv.pop(0), argv.pop(0))
        else:
            sys.exit(f"gpu_bench.py: unknown argument {a}")
    if out is None and os.environ.get("OUT"):
        out = os.path.join(os.environ["OUT"], "onnx_gpu.txt")
    logdir = os.path.dirname(out) if out else tempfile.mkdtemp()
    cuda = dry is None
    if cuda and not torch.cuda.is_available():
        sys.exit("gpu_bench.py: no CUDA device (use --dry-run FUSEC ONNXDIR without one)")
    dev = "cuda" if cuda else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = False  # strict f32, as fusec computes
    torch.backends.cudnn.allow_tf32 = False
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = bundle + (":" + env["LD_LIBRARY_PATH"]
                                       if env.get("LD_LIBRARY_PATH") else "")
    fusec_run = os.path.join(bundle, "fusec-run")
    if cuda:
        print(torch.cuda.get_device_name(), "torch", torch.__version__, flush=True)
    work = tempfile.mkdtemp(prefix="gpu_bench_")
    start = time.time()
    rows = []
    models = seeded_models(size)
    names = [n for n in ORDER if n in models] + [n for n in models if n not in ORDER]
    unknown = [n for n in only or [] if n not in models]
    if unknown:
        sys.exit(f"gpu_bench.py: unknown model(s) {', '.join(unknown)}; known: {', '.join(names)}")
    for name in [n for n in names if only is None or n in only]:
        m, inputs, in_names, out_names = models[name]
        params = sum(p.numel() for p in m.parameters())
        row = {"name": name, "params": params, "fusec": None, "eager": None,
               "compiled": None, "fusec_lat": None, "eager_lat": None, "compiled_lat": None,
               "ctime": None, "rel": None, "note": ""}
        rows.append(row)
        print(f"== {name}: {params / 1e6:.2f} M parameters", flush=True)
        ind, outd = os.path.join(work, name, "in"), os.path.join(work, name, "out")
        os.makedirs(ind)
        os.makedirs(outd)
        for n, x in zip(in_names, inputs):
            np.save(os.path.join(ind, safe(n) + ".npy"), x.numpy())
        plan = os.path.join(bundle, "plans", name)
        # fusec
        if cuda:
            cmd = [fusec_run, plan, "--inputs", ind, "--outputs", outd, "--bench",
                   "--iters", str(iters)]
        else:
            cmd = [fusec_run, plan, "--plan-only"]
        try:
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired as e:
            r = subprocess.CompletedProcess(cmd, 124, str(e.stdout or ""), "timed out\n")
        log = os.path.join(logdir, f"fusec_{name}.txt")
        with open(log, "w") as fh:
            fh.write(" ".join(cmd) + "\n" + r.stdout + r.stderr)
        if r.returncode != 0:
            row["note"] += f"fusec-run exit {r.returncode} ({log}); "
            print(r.stdout[-2000:] + r.stderr[-2000:], flush=True)
        elif cuda:
            t = re.search(r"total: median ([0-9.]+) us", r.stdout)
            row["fusec"] = float(t.group(1)) / 1e3 if t else None
            if not t:
                row["note"] += "no 'total: median' in fusec-run output; "
            t = re.search(r"latency: median ([0-9.]+) us", r.stdout)
            row["fusec_lat"] = float(t.group(1)) / 1e3 if t else None
        if not cuda:  # dry run: outputs from the CPU backend on the ONNX file
            cmd = [dry[0], "run", os.path.join(dry[1], name + ".onnx"), "--backend", "cpu",
                   "--inputs", ind, "--outputs", outd]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                row["note"] += f"fusec run exit {r.returncode}; "
                print(r.stdout[-2000:] + r.stderr[-2000:], flush=True)
        # torch
        m = m.to(dev)
        args = tuple(x.to(dev) for x in inputs)
        try:
            with torch.no_grad():
                ref = m(*args)
                ref = ref if isinstance(ref, tuple) else (ref,)
                worst = None
                for n, y in zip(out_names, ref):
                    p = os.path.join(outd, safe(n) + ".npy")
                    if not os.path.exists(p):
                        continue
                    got = np.load(p)
                    want = y.float().cpu().numpy()
                    if got.shape != want.shape:
                        row["note"] += f"{n}: shape {got.shape} vs {want.shape}; "
                        continue
                    e = rel_l2(got, want)
                    print(f"   {n}: relative L2 {e:.2e}", flush=True)
                    worst = e if worst is None else max(worst, e)
                row["rel"] = worst
                if worst is None:
                    row["note"] += "no fusec outputs to compare; "
                row["eager"] = time_stream_ms(m, args, iters, cuda)
                row["eager_lat"] = time_ms(m, args, iters, cuda)
                print(f"   eager {row['eager']:.3f} ms, one at a time {row['eager_lat']:.3f} ms",
                      flush=True)
                if cuda and time.time() - start < COMPILE_BUDGET_S:
                    c = torch.compile(m)
                    t0 = time.time()
                    c(*args)
                    torch.cuda.synchronize()
                    row["ctime"] = time.time() - t0
                    row["compiled"] = time_stream_ms(c, args, iters, cuda)
                    row["compiled_lat"] = time_ms(c, args, iters, cuda)
                    print(f"   torch.compile {row['compiled']:.3f} ms, one at a time "
                          f"{row['compiled_lat']:.3f} ms (compiled in {row['ctime']:.0f} s)",
                          flush=True)
                elif cuda:
                    row["note"] += "torch.compile skipped (time budget); "
        except Exception as e:  # keep going: one model's failure is one row
            row["note"] += f"torch: {type(e).__name__}: {str(e)[:200]}; "
            print(f"   torch failed: {e}", flush=True)
        if row["fusec"] is not None:
            print(f"   fusec {row['fusec']:.3f} ms, one at a time "
                  f"{f(row['fusec_lat'], '{:.3f}')} ms", flush=True)
        m.cpu()
        if cuda:
            torch.cuda.empty_cache()
        if out:  # after every model, so that a timeout still leaves a table
            with open(out, "w") as fh:
                fh.write(render(rows, size, iters, cuda, start, False) + "\n")
    table = render(rows, size, iters, cuda, start, True)
    print(table, flush=True)
    if out:
        with open(out, "w") as fh:
            fh.write(table + "\n")

if __name__ == "__main__":
    main()
