#!/usr/bin/env python3
"""mm_sweep.py: the matmul shapes of the full-size transformers (BERT-base, GPT-2
small, a 12-layer Llama: batch 1, sequence 128, width 768) and of G6 (sequence 512,
width 1024), each with its epilogue, timed under every tile configuration of a
list against torch on the same inputs. docs/benchmarks.md, "Matmul under a wave".

On the build machine (no torch needed), the graphs:
    python3 tests/bench/gpu/mm_sweep.py make DIR [--small | --big | --waves | --gemv | --kt | --kt32 | --b1]
then one plan folder per graph and configuration, compiled with
FUSEC_MATMUL_TILES=CONFIG into P/CONFIG/NAME (and the rule's own into P/rule/NAME).

On the GPU machine:
    python3 tests/bench/gpu/mm_sweep.py run --fusec-run G/fusec-run --graphs DIR \\
        --plans P [--iters N] [--small | --big | --waves | --gemv | --kt | --kt32 | --b1]
prints, per graph, fusec-run's total median for every configuration folder that
holds the graph, torch.matmul alone and torch eager (matmul + epilogue), both f32
without TF32, and the largest relative error of fusec's output against torch.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

# (name, dtype, M, N, K, epilogue): none, bias, bias_gelu (tanh), bias_residual
SHAPES = [
    ("mm_128x768x768", "f32", 128, 768, 768, "none"),
    ("mm_128x2304x768_bias", "f32", 128, 2304, 768, "bias"),
    ("mm_128x3072x768_bias_gelu", "f32", 128, 3072, 768, "bias_gelu"),
    ("mm_128x768x3072_bias_res", "f32", 128, 768, 3072, "bias_residual"),
    ("mm_512x1024x1024_bias", "f32", 512, 1024, 1024, "bias"),
    ("mm_512x4096x1024_bias_gelu", "f32", 512, 4096, 1024, "bias_gelu"),
    ("mm_512x1024x4096_bias_res", "f32", 512, 1024, 4096, "bias_residual"),
    ("mm_128x768x768_bf16", "bf16", 128, 768, 768, "none"),
    ("mm_128x3072x768_bias_gelu_bf16", "bf16", 128, 3072, 768, "bias_gelu"),
    ("mm_128x768x3072_bias_res_bf16", "bf16", 128, 768, 3072, "bias_residual"),
    ("mm_512x1024x4096_bias_res_bf16", "bf16", 512, 1024, 4096, "bias_residual"),
]

# --small: tiny matmuls (a few million FMAs and less: random graphs, small attention
# heads, outer products), where the tiled kernels' machinery is all overhead and the
# plain kernel (one thread per output) competes; "Tiny matmuls" in
# docs/benchmarks.md. A leading batch dim where the name starts with bB_.
SMALL = [
    ("t_96x96x1", "f32", 96, 96, 1, "none"),
    ("t_256x256x1", "f32", 256, 256, 1, "none"),
    ("t_64x64x8", "f32", 64, 64, 8, "none"),
    ("t_96x64x64", "f32", 96, 64, 64, "none"),
    ("t_128x128x16", "f32", 128, 128, 16, "none"),
    ("t_128x128x64", "f32", 128, 128, 64, "none"),
    ("t_128x256x64_bias_gelu", "f32", 128, 256, 64, "bias_gelu"),
    ("t_256x256x16", "f32", 256, 256, 16, "none"),
    ("t_128x128x128", "f32", 128, 128, 128, "none"),
    ("t_256x256x64", "f32", 256, 256, 64, "none"),
    ("t_64x64x1024", "f32", 64, 64, 1024, "none"),
    ("t_512x512x16", "f32", 512, 512, 16, "none"),
    ("t_256x256x256", "f32", 256, 256, 256, "none"),
    ("b3_t_128x128x64", "f32", 128, 128, 64, "none"),
    ("b3_t_128x64x128", "f32", 128, 64, 128, "none"),
    ("b12_t_128x128x64", "f32", 128, 128, 64, "none"),
    # M <= 16: the gemv configuration's ground
    ("t_1x64x1", "f32", 1, 64, 1, "none"),
    ("t_1x96x64", "f32", 1, 96, 64, "none"),
    ("t_8x8x16", "f32", 8, 8, 16, "none"),
    ("b12_t_8x96x8", "f32", 8, 96, 8, "none"),
    ("t_4x4096x32", "f32", 4, 4096, 32, "none"),
    ("t_16x1024x64", "f32", 16, 1024, 64, "none"),
    ("t_16x4096x64", "f32", 16, 4096, 64, "none"),
    ("t_16x3072x64_bias_gelu", "f32", 16, 3072, 64, "bias_gelu"),
    ("t_1x768x768", "f32", 1, 768, 768, "none"),
    ("t_128x128x64_bf16", "bf16", 128, 128, 64, "none"),
    ("t_256x256x64_bf16", "bf16", 256, 256, 64, "none"),
    ("t_256x256x256_bf16", "bf16", 256, 256, 256, "none"),
    ("b3_t_128x128x64_bf16", "bf16", 128, 128, 64, "none"),
]

# --big: the shapes of issue 22's targets, where a wave of tiles is full: G5's
# 8192^3, 4096^3, ViT-B/16's MLP at batch 16 (3152 tokens), BERT-base at batch 8,
# sequence 256 (2048 tokens: the QKV, the MLP up and down)
BIG = [
    ("g_8192x8192x8192_bias_bf16", "bf16", 8192, 8192, 8192, "bias"),
    ("g_4096x4096x4096_bf16", "bf16", 4096, 4096, 4096, "none"),
    ("g_3152x3072x768_bias_gelu_bf16", "bf16", 3152, 3072, 768, "bias_gelu"),
    ("g_3152x768x3072_bias_res_bf16", "bf16", 3152, 768, 3072, "bias_residual"),
    ("g_2048x2304x768_bias_bf16", "bf16", 2048, 2304, 768, "bias"),
    ("g_2048x768x768_bias_bf16", "bf16", 2048, 768, 768, "bias"),
    ("g_2048x3072x768_bias_gelu_bf16", "bf16", 2048, 3072, 768, "bias_gelu"),
    ("g_2048x768x3072_bias_res_bf16", "bf16", 2048, 768, 3072, "bias_residual"),
    ("g_4096x4096x4096", "f32", 4096, 4096, 4096, "none"),
    ("g_3152x3072x768_bias_gelu", "f32", 3152, 3072, 768, "bias_gelu"),
    ("g_3152x768x3072_bias_res", "f32", 3152, 768, 3072, "bias_residual"),
    ("g_2048x2304x768_bias", "f32", 2048, 2304, 768, "bias"),
    ("g_2048x768x768_bias", "f32", 2048, 768, 768, "bias"),
    ("g_2048x3072x768_bias_gelu", "f32", 2048, 3072, 768, "bias_gelu"),
    ("g_2048x768x3072_bias_res", "f32", 2048, 768, 3072, "bias_residual"),
]

# --waves: f32 shapes of transformer widths at 1k-4k tokens, whose 128x128 tiles fill
# from under one wave to several, a partial last wave among them: the ground of the
# f32 rule between fma128, fma64 and split-K (matmul_pick.c, under_wave)
WAVES = [("w_%dx%dx%d_bias" % (m, n, k), "f32", m, n, k, "bias")
         for m in (1024, 2048, 3152, 4096)
         for n, k in ((768, 768), (2304, 768), (3072, 768), (768, 3072), (1024, 1024),
                      (4096, 1024), (1024, 4096))]

# --gemv: tiny M (decode, batch-1 inference of short sequences), where one row of
# tiles leaves most SMs idle and the loads' latency is the time: transformer widths
# at 1, 4 and 16 tokens, f32 and bf16 (matmul_gemv.c, gemv_rule in matmul_pick.c)
GEMV = [("v_%dx%dx%d_bias%s" % (m, n, k, "" if dt == "f32" else "_" + dt), dt, m, n, k, "bias")
        for dt in ("f32", "bf16")
        for m in (1, 4, 16)
        for n, k in ((768, 768), (2304, 768), (3072, 768), (768, 3072), (4096, 4096),
                     (11008, 4096), (4096, 11008))]


# --kt: the model shapes of issue 22 at 2048 and 3152 tokens (bf16) whose B is
# K-major, as the constant weights of a model are after passes/kmajor.c (the
# graph reads w^T through a swap_dims view): the ground of the 96-wide tile
# (wg128x96x64s4ws) against 128 and 256 (matmul_pick.c)
KT = [("k_%dx%dx%d%s_bf16_kt" % (m, n, k, "" if e == "none" else "_" + e), "bf16", m, n, k, e)
      for m, n, k, e in ((2048, 768, 768, "none"), (2048, 768, 2048, "none"),
                         (2048, 768, 768, "bias_residual"), (2048, 768, 3072, "bias_residual"),
                         (2048, 1536, 768, "none"), (2048, 2304, 768, "bias"),
                         (2048, 2048, 768, "none"), (2048, 3072, 768, "bias_gelu"),
                         (3152, 768, 768, "bias_residual"), (3152, 768, 3072, "bias_residual"),
                         (3152, 2304, 768, "bias"))]

# --kt32: f32 shapes of issue 22's targets with B K-major (a graph reading w^T
# through a swap_dims view, as a Gemm's transB or passes/kmajor.c's weights): the
# ground of the 3xTF32 tiles (wgx3..., matmul_wgmma.c) against the SIMT ones. Each
# row also prints the relative L2 error of torch.matmul and of fusec against a
# float64 product (the epilogue's bias added in float64 too).
KT32 = [("k_%dx%dx%d%s_kt" % (m, n, k, "" if e == "none" else "_" + e), "f32", m, n, k, e)
        for m, n, k, e in ((4096, 4096, 4096, "none"), (3152, 3072, 768, "bias"),
                           (3152, 768, 3072, "bias"), (2048, 2304, 768, "bias"),
                           (2048, 768, 768, "bias"), (2048, 3072, 768, "bias"),
                           (2048, 768, 3072, "bias"), (1024, 768, 768, "bias"))]

# --b1: the transformers' projections at batch 1 (128 rows: BERT, GPT-2, Llama at
# sequence 128; 197: ViT-B/16), weights K-major as the models store them, f32 and bf16
B1 = [("k1_%dx%dx%d_%s_%s_kt" % (m, n, k, e, dt), dt, m, n, k, e)
      for dt in ("f32", "bf16") for m in (128, 197)
      for n, k, e in ((2304, 768, "bias"), (768, 768, "bias_residual"),
                      (3072, 768, "bias_gelu"), (768, 3072, "bias_residual"))]


def shapes_of(args):
    if getattr(args, "b1", False):
        return B1
    if getattr(args, "kt32", False):
        return KT32
    if getattr(args, "kt", False):
        return KT
    if args.gemv:
        return GEMV
    if args.waves:
        return WAVES
    return SMALL if args.small else BIG if args.big else SHAPES


def batch_of(name):
    return int(name[1:name.index("_")]) if re.match(r"b[0-9]+_", name) else 0


def make(out, shapes):
    os.makedirs(out, exist_ok=True)
    for name, dt, m, n, k, epi in shapes:
        b = [batch_of(name)] if batch_of(name) else []
        ins = {"a": {"dtype": dt, "shape": b + [m, k]}, "w": {"dtype": dt, "shape": b + [k, n]}}
        ops = [{"op": "matmul", "in": ["a", "w"], "out": "mm"}]
        if name.endswith("_kt"):
            del ins["w"]
            ins["wt"] = {"dtype": dt, "shape": b + [n, k]}
            r = len(b) + 2
            ops.insert(0, {"op": "swap_dims", "in": ["wt"], "out": "w", "dims": [r - 2, r - 1]})
        y = "mm"
        if epi.startswith("bias"):
            ins["bias"] = {"dtype": dt, "shape": [1, n]}
            ops.append({"op": "add", "in": ["mm", "bias"], "out": "h"})
            y = "h"
        if epi == "bias_gelu":
            ops.append({"op": "gelu", "in": ["h"], "out": "y", "approximate": "tanh"})
            y = "y"
        if epi == "bias_residual":
            ins["res"] = {"dtype": dt, "shape": [m, n]}
            ops.append({"op": "add", "in": ["h", "res"], "out": "y"})
            y = "y"
        doc = {"format": "fusec-graph/1", "name": name, "inputs": ins, "ops": ops,
               "outputs": [y]}
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")


def run_sweep(args):
    import numpy as np
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench
    import torch_graph
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print("device: %s, torch %s, CUDA %s, allow_tf32 %s" % (
        torch.cuda.get_device_name(), torch.__version__, torch.version.cuda,
        torch.backends.cuda.matmul.allow_tf32))
    configs = sorted(os.listdir(args.plans))
    rows = []
    for name, dt, m, n, k, epi in shapes_of(args):
        path = os.path.join(args.graphs, name + ".json")
        if not os.path.exists(path):
            continue
        graph = json.load(open(path))
        arrays = bench.make_inputs(graph, 1)
        tmp = tempfile.mkdtemp()
        in_dir = os.path.join(tmp, "in")
        os.makedirs(in_dir)
        for key, a in arrays.items():
            np.save(os.path.join(in_dir, key + ".npy"), a)
        x = bench.to_torch(graph, arrays)
        f = torch_graph.build(graph)
        a = x["a"]
        w = x["wt"].transpose(-2, -1) if "wt" in x else x["w"]
        with torch.no_grad():
            ref = f(x)
            t_mm = bench.time_cuda(lambda _: torch.matmul(a, w), [None], args.iters, 5)
            t_eager = bench.time_cuda(f, [x], args.iters, 5)
        flop = 2.0 * m * n * k * max(1, batch_of(name))
        ref64 = None
        if getattr(args, "kt32", False) and epi in ("none", "bias"):
            with torch.no_grad():
                ref64 = torch.matmul(a.double(), w.double())
                if epi == "bias":
                    ref64 = ref64 + x["bias"].double()
                y32 = torch.matmul(a, w) + (x["bias"] if epi == "bias" else 0)
                e_torch = float((y32.double() - ref64).norm() / ref64.norm())
        res = {}
        for c in configs:
            plan = os.path.join(args.plans, c, name)
            if not os.path.isdir(plan):
                continue
            out_dir = os.path.join(tmp, "out_" + c)
            try:
                txt = bench.run([args.fusec_run, plan, "--inputs", in_dir, "--outputs", out_dir,
                                 "--bench", "--iters", str(args.iters), "--warmup", "5"])
            except RuntimeError as e:
                print("%s %s: %s" % (name, c, e))
                res[c] = (float("nan"), "", float("nan"))
                continue
            ms = float(re.search(r"total: median ([0-9.]+) us", txt).group(1)) / 1e3
            tiles = ""
            pj = json.load(open(os.path.join(plan, name + ".plan.json")))
            for kk in pj["kernels"]:
                tiles = kk.get("tiles", tiles)
            err = bench.compare(graph, ref, out_dir, name)
            if ref64 is not None:
                out = graph["outputs"][0]
                y = torch.from_numpy(np.load(os.path.join(out_dir, out + ".npy"))).to(ref64.device)
                e64 = float((y.double() - ref64).norm() / ref64.norm())
                tiles += " f64-rel-L2 %.2e (torch %.2e)" % (e64, e_torch)
            res[c] = (ms, tiles, err)
        rows.append((name, m, n, k, flop, t_mm, t_eager, res))
        print("%s: torch.matmul %.4f ms (%.1f TFLOP/s), eager %.4f ms" %
              (name, t_mm, flop / t_mm / 1e9, t_eager))
        for c, (ms, tiles, err) in sorted(res.items()):
            print("  %-22s %-22s %.4f ms %6.1f TFLOP/s  x%.2f of torch.matmul  err %.1e" %
                  (c, tiles, ms, flop / ms / 1e9, ms / t_mm, err))
        sys.stdout.flush()
    # one table: rows graphs, columns configurations (ms), best marked
    print()
    print("| graph | torch.matmul ms | eager ms | " + " | ".join(configs) + " | best |")
    print("|---|---|---|" + "---|" * len(configs) + "---|")
    for name, m, n, k, flop, t_mm, t_eager, res in rows:
        cells = []
        best = None
        for c in configs:
            if c in res and res[c][0] == res[c][0]:
                cells.append("%.4f" % res[c][0])
                if best is None or res[c][0] < res[best][0]:
                    best = c
            else:
                cells.append("-")
        print("| %s | %.4f | %.4f | %s | %s |" % (name, t_mm, t_eager, " | ".join(cells), best))
    worst = max((r[2] for row in rows for r in row[7].values() if r[2] == r[2]), default=0.0)
    print("largest relative error against torch: %.1e" % worst)


def main():
    import argparse
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="what", required=True)
    mk = sub.add_parser("make")
    mk.add_argument("dir")
    mk.add_argument("--small", action="store_true")
    mk.add_argument("--big", action="store_true")
    mk.add_argument("--waves", action="store_true")
    mk.add_argument("--gemv", action="store_true")
    mk.add_argument("--kt", action="store_true")
    mk.add_argument("--kt32", action="store_true")
    mk.add_argument("--b1", action="store_true")
    rn = sub.add_parser("run")
    rn.add_argument("--small", action="store_true")
    rn.add_argument("--big", action="store_true")
    rn.add_argument("--waves", action="store_true")
    rn.add_argument("--gemv", action="store_true")
    rn.add_argument("--kt", action="store_true")
    rn.add_argument("--kt32", action="store_true")
    rn.add_argument("--b1", action="store_true")
    rn.add_argument("--fusec-run", required=True)
    rn.add_argument("--graphs", required=True)
    rn.add_argument("--plans", required=True)
    rn.add_argument("--iters", type=int, default=50)
    args = ap.parse_args()
    if args.what == "make":
        make(args.dir, shapes_of(args))
    else:
        run_sweep(args)


if __name__ == "__main__":
    main()
