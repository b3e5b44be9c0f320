#!/usr/bin/env python3
"""conv_layers.py PLAN.json BENCH.txt: the convolutions of a plan, one line per launch,
with `fusec-run PLAN --bench`'s per-launch median: the conv's shape, its tile
configuration, its time and TFLOP/s (2 * outputs * Cg * kh * kw flops), then the
sum per shape. BENCH.txt is fusec-run's output for that plan (docs/benchmarks.md,
"Convolutions as implicit GEMMs")."""
import json
import re
import sys


def main():
    plan = json.load(open(sys.argv[1]))
    runs = []   # (kernel, median us) in launch order
    for line in open(sys.argv[2]):
        m = re.match(r"^(\d+)\s+(\d+)\s+(\S+)\s+\S+\s+\S+\s+([0-9.]+)\s+", line)
        if m:
            runs.append((m.group(3), float(m.group(4))))
    tens = {t["name"]: t for t in plan["tensors"]}
    kern = {k["name"]: k for k in plan["kernels"]}
    launches = [la for st in plan["steps"] for la in st["launches"] if la["kernel"]]
    if len(launches) != len(runs) or any(la["kernel"] != r[0] for la, r in zip(launches, runs)):
        sys.exit("conv_layers.py: the bench output is not this plan's")
    rows = []
    for i, (la, (_, us)) in enumerate(zip(launches, runs)):
        k = kern[la["kernel"]]
        if "Module::Conv2d" not in (k.get("op_names") or []) and not la["kernel"].startswith("conv2d"):
            continue
        out = tens[la["writes"][0]]["shape"]
        x = tens[la["reads"][0]]["shape"]
        # channels last (--layout nhwc): x [N,H,W,C], weight [OC,KH,KW,C/g], out
        # [N,OH,OW,OC]; seen as NCHW below
        ws = [tens[r]["shape"] for r in la["reads"][1:] if len(tens[r]["shape"]) == 4]
        if any(w[0] == out[3] != out[1] for w in ws):
            x, out = [x[0], x[3], x[1], x[2]], [out[0], out[3], out[1], out[2]]
            ws = [[w[0], w[3], w[1], w[2]] for w in ws]
        w = [w for w in ws if w[0] == out[1]]
        if not w:
            continue
        oc, cg, kh, kw = w[0]
        flops = 2.0 * out[0] * out[1] * out[2] * out[3] * cg * kh * kw
        shape = f"{x[1]}x{x[2]}x{x[3]} -> {oc}x{out[2]}x{out[3]} k{kh}x{kw} g{x[1] // cg}"
        rows.append((i, shape, k.get("tiles") or "plain", us, flops))
    print(f"{'launch':>6} {'conv (C x H x W -> OC x OH x OW)':<36} {'tiles':<18} {'us':>9} {'TFLOP/s':>8}")
    for i, shape, tiles, us, fl in rows:
        print(f"{i:>6} {shape:<36} {tiles:<18} {us:>9.1f} {fl / us / 1e6:>8.1f}")
    tot_us = sum(r[3] for r in rows)
    tot_fl = sum(r[4] for r in rows)
    if rows:
        print(f"all {len(rows)} conv launches: {tot_us / 1e3:.3f} ms, "
              f"{tot_fl / tot_us / 1e6:.1f} TFLOP/s")


if __name__ == "__main__":
    main()
