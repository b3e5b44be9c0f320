#!/usr/bin/env python3
"""check_outputs.py: compares two folders of .npy outputs (expected from
`fusec run --backend interp`, got from fusec-run on the GPU), one line per output
with the max abs and rel error, NaN positions required to agree. Tolerances per
dtype follow docs/tolerances.md loosely (math and reductions need the wider ones).

    python3 check_outputs.py EXPECTED_DIR GOT_DIR [--rtol R]
Exit status 1 when an output is missing or over tolerance.
"""
import os
import sys

import numpy as np

TOL = {np.dtype(np.float64): 1e-9, np.dtype(np.float32): 2e-4, np.dtype(np.float16): 2e-2}


def main():
    exp_dir, got_dir = sys.argv[1], sys.argv[2]
    scale = float(sys.argv[sys.argv.index("--rtol") + 1]) if "--rtol" in sys.argv else 1.0
    bad = 0
    names = sorted(f for f in os.listdir(exp_dir) if f.endswith(".npy"))
    for f in names:
        want = np.load(os.path.join(exp_dir, f))
        path = os.path.join(got_dir, f)
        if not os.path.exists(path):
            print("%-16s MISSING" % f[:-4])
            bad += 1
            continue
        got = np.load(path)
        if got.shape != want.shape or got.dtype != want.dtype:
            print("%-16s shape/dtype %s %s vs %s %s" % (f[:-4], got.shape, got.dtype, want.shape, want.dtype))
            bad += 1
            continue
        if want.dtype.kind in "biu":
            diff = int(np.count_nonzero(got != want))
            ok = diff == 0
            print("%-16s %-8s %8d mismatches %s" % (f[:-4], want.dtype, diff, "ok" if ok else "FAIL"))
        else:
            w, g = want.astype(np.float64), got.astype(np.float64)
            nan_ok = np.array_equal(np.isnan(w), np.isnan(g))
            fin = np.isfinite(w) & np.isfinite(g)
            inf_ok = np.array_equal(w[~np.isfinite(w) & ~np.isnan(w)], g[~np.isfinite(w) & ~np.isnan(w)])
            abs_err = np.abs(w[fin] - g[fin])
            rel = abs_err / np.maximum(np.abs(w[fin]), 1.0)
            mrel = float(rel.max()) if rel.size else 0.0
            mabs = float(abs_err.max()) if abs_err.size else 0.0
            tol = TOL.get(want.dtype, 2e-4) * scale
            if want.dtype == np.float32 and want.size and \
                    not np.any(want.view(np.uint32) & 0xFFFF):
                tol = 1.6e-2 * scale   # bf16 values, written as f32 (host/npy.c)
            ok = nan_ok and inf_ok and mrel <= tol
            print("%-16s %-8s max_abs=%.2e max_rel=%.2e tol=%.0e nan/inf %s %s" %
                  (f[:-4], want.dtype, mabs, mrel, tol, "agree" if nan_ok and inf_ok else "DIFFER",
                   "ok" if ok else "FAIL"))
        bad += not ok
    print("%d outputs, %d failed" % (len(names), bad))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
