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
    times = {}
    for line in open(sys.argv[2]):
        m = re.match(r"^(\d+)\s+(\d+)\s+(\S+)\s+\S+\s+\S+\s+([0-9.]+)\s+", line)
        if m:
            times[int(m.group(1))] = float(m.group(4))
    tens = {t["name"]: t for t in plan["tensors"]}
    kern = {k["name"]: k for k in plan["kernels"]}
    rows, i = [], 0
    for st in plan["steps"]:
        for la in st["launches"]:
            k = kern.get(la["kernel"], {})
            names = k.get("op_names") or []
            if la["kernel"] is not None and ("Module::Conv2d" in names or la["kernel"].startswith("conv2d")):
                out = tens[la["writes"][0]]["shape"]
                w = [tens[r] for r in la["reads"] if tens[r]["role"] != "input" and
                     len(tens[r]["shape"]) == 4 and tens[r]["shape"][0] == out[1]]
                if w and i in times:
                    oc, cg, kh, kw = w[0]["shape"]
                    x = tens[la["reads"][0]]["shape"]
                    flops = 2.0 * out[0] * out[1] * out[2] * out[3] * cg * kh * kw
                    shape = f"{x[1]}x{x[2]}x{x[3]} -> {oc}x{out[2]}x{out[3]} k{kh}x{kw} g{x[1] // cg}"
                    rows.append((i, shape, k.get("tiles") or "plain", times[i], flops))
            i += 1
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
