#!/usr/bin/env python3
"""One plan for every size against plans for one size, on real models (issue 28).

usage: dynamic_models.py T [--models bert,llama] [--shapes 1x16,8x256,32x512]
                         [--dims batch=1..32,seq=1..512] [--buckets 1,3] [--iters N]
                         [--tiny] [--work DIR]

T holds fusec (with LLVM linked in: `make static`), fusec-run and libcjson.so.1. For each
model (built as tests/bench/models/real_models.py builds it: random weights, seeded, f32,
TF32 off; BERT-base with an attention mask, the Llama-style decoder):
 1. export it once with dynamic batch and sequence dims (export_dynamic.py);
 2. `fusec compile M.onnx --dims D --shape-buckets N` for each N of --buckets: one plan
    for every size (wall seconds);
 3. for each shape B x S: the inputs (as real_models.py makes them), torch eager's output
    on the GPU, `fusec compile M.onnx --input-shape ...` (a plan for that size alone),
    then both plans run by `fusec-run --inputs --outputs --bench` one after the other
    ("graph total" median: the plan replayed as a CUDA graph, back to back), each output
    held to eager's (rel L2).
Prints a markdown table (and writes it to $OUT/dynamic_models.md when $OUT is set)."""
import argparse
import os
import re
import subprocess
import sys
import time

import numpy as np
import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "models"))
import real_models as rm  # noqa: E402


def rel_l2(a, b):
    a, b = a.astype(np.float64), b.astype(np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def run(cmd, env=None):
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    dt = time.time() - t0
    if r.returncode:
        print(" ".join(cmd), "\n", r.stdout[-2000:], r.stderr[-2000:], flush=True)
    return r, dt


def main():
    p = argparse.ArgumentParser()
    p.add_argument("bundle")
    p.add_argument("--models", default="bert,llama")
    p.add_argument("--shapes", default="1x16,8x256,32x512")
    p.add_argument("--dims", default="batch=1..32,seq=1..512")
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--buckets", default="1")
    p.add_argument("--tiny", action="store_true")
    p.add_argument("--work", default="/tmp/dynamic_models")
    a = p.parse_args()
    T = os.path.abspath(a.bundle)
    fusec, fusec_run = os.path.join(T, "fusec"), os.path.join(T, "fusec-run")
    env = dict(os.environ, LD_LIBRARY_PATH=T + ":" + os.environ.get("LD_LIBRARY_PATH", ""))
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    os.makedirs(a.work, exist_ok=True)
    shapes = [tuple(int(v) for v in s.split("x")) for s in a.shapes.split(",")]
    rows, compiles = [], []
    for name in a.models.split(","):
        m, ins_t, ins, outs = rm.build(name, 2, "f32", a.tiny, "sdpa")
        path = os.path.join(a.work, name + ".onnx")
        axes = {n: {0: "batch", 1: "seq"} for n in ins + outs}
        torch.onnx.export(m, tuple(ins_t), path, input_names=ins, output_names=outs,
                          opset_version=rm.OPSET, do_constant_folding=True, dynamo=False,
                          dynamic_axes=axes)
        buckets = [int(v) for v in a.buckets.split(",")]
        dyns, t_dyn = {}, {}
        for nb in buckets:
            dyns[nb] = os.path.join(a.work, f"dyn{nb}_{name}")
            r, t_dyn[nb] = run([fusec, "compile", path, "-o", dyns[nb], "--dims", a.dims,
                                "--shape-buckets", str(nb), "--no-cache", "-j", "16"], env)
            print(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "", flush=True)
            if r.returncode:
                dyns.pop(nb)
        m = m.cuda().eval()
        t_static = []
        for b, s in shapes:
            tag = f"{name}_{b}x{s}"
            g = torch.Generator(device="cpu").manual_seed(1)
            vocab = 1000 if a.tiny else (30522 if name == "bert" else 32000)
            ids = torch.randint(0, vocab, (b, s), generator=g)
            feed = [ids]
            if name == "bert":
                mask = torch.ones(b, s, dtype=torch.int64)
                for i in range(b):
                    mask[i, s - min(3 + 3 * i, s // 2):] = 0
                feed.append(mask)
            ind = os.path.join(a.work, "in_" + tag)
            os.makedirs(ind, exist_ok=True)
            for n, x in zip(ins, feed):
                np.save(os.path.join(ind, n + ".npy"), x.numpy())
            with torch.no_grad():
                ref = m(*[x.cuda() for x in feed]).float().cpu().numpy()
            st = os.path.join(a.work, "st_" + tag)
            shp = [f"--input-shape={n}={b}x{s}" for n in ins]
            r, t = run([fusec, "compile", path, "-o", st, "--no-cache", "-j", "16"] + shp, env)
            t_static.append(t)
            row = {"model": name, "shape": f"{b} × {s}", "static_compile": t}
            for kind, plan in [(f"dyn{nb}", d) for nb, d in dyns.items()] + [("st", st)]:
                o = os.path.join(a.work, f"out_{kind}_{tag}")
                r, _ = run([fusec_run, plan, "--inputs", ind, "--outputs", o, "--bench",
                            "--iters", str(a.iters), "--warmup", "5"], env)
                mt = re.search(r"^graph total: median ([0-9.]+) us", r.stdout, re.M) or \
                    re.search(r"^total: median ([0-9.]+) us", r.stdout, re.M)
                row[kind] = float(mt.group(1)) / 1e3 if mt else None
                try:
                    row[kind + "_rel"] = rel_l2(np.load(os.path.join(o, outs[0] + ".npy")), ref)
                except OSError:
                    row[kind + "_rel"] = None
            rows.append(row)
            print(row, flush=True)
        compiles.append((name, t_dyn, t_static))
    fmt = lambda v, f: "-" if v is None else f % v  # noqa: E731
    nbs = [int(v) for v in a.buckets.split(",")]
    head = "| model | batch × seq | " + " | ".join(
        f"every size ({nb} range{'s' if nb > 1 else ''}), ms | ratio" for nb in nbs) + \
        " | this size, ms | rel L2 (every) | rel L2 (this) |"
    lines = [head, "|---|---|" + "---:|---:|" * len(nbs) + "---:|---:|---:|"]
    for r in rows:
        cells = []
        for nb in nbs:
            v = r.get(f"dyn{nb}")
            cells += [fmt(v, "%.3f"), fmt(v / r["st"] if v and r["st"] else None, "%.2f")]
        rel = max((r.get(f"dyn{nb}_rel") or 0) for nb in nbs)
        lines.append(f"| {r['model']} | {r['shape']} | " + " | ".join(cells) +
                     f" | {fmt(r['st'], '%.3f')} | {fmt(rel, '%.1e')} | {fmt(r['st_rel'], '%.1e')} |")
    lines += ["", "| model | " + " | ".join(f"compile, {nb} range{'s' if nb > 1 else ''}, s"
                                             for nb in nbs) +
              " | compile for one size, s (each) |", "|---|" + "---:|" * len(nbs) + "---|"]
    for name, td, ts in compiles:
        lines.append(f"| {name} | " + " | ".join(fmt(td.get(nb), "%.2f") for nb in nbs) +
                     f" | {', '.join('%.2f' % t for t in ts)} |")
    text = "\n".join(lines)
    print(text)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "dynamic_models.md"), "w") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    main()
