#!/usr/bin/env python3
"""check_outputs.py: compares two folders of .npy outputs, element by element, with
the bound of `fusec run --check` (docs/tolerances.md).

EXPECTED_DIR is what `fusec run GRAPH --backend interp --outputs DIR` wrote: NAME.npy
(the reference) and NAME.bound.npy (<f8, the error bound of every element). GOT_DIR
holds NAME.npy from fusec-run on the GPU. An element passes when

    |got - want| <= bound

(the same formula as host/check.c); NaN matches NaN and an infinity the same
infinity; a finite pair whose bound is +inf is not checked (counted "unbounded").
Integer and bool outputs are compared the same way (their bounds are 0 unless a
comparison may flip). --atol A / --rtol R replace the bound by A + R*|want| (either
alone: the other is 0), as `fusec run --check --atol/--rtol` does.

    python3 check_outputs.py EXPECTED_DIR GOT_DIR [--atol A] [--rtol R] [--rel-l2]

--rel-l2 adds rel_l2=|got - want| / |want| (L2 over the elements finite in both) to
each line: with expectations written under `--precision bf16` (docs/precision.md),
the converted plan's distance from the f32 graph.

Prints one line per output with the max abs error and the max err/bound, and the
worst elements (index, got, want, bound) of a failing one; its status is ok, FAIL,
or "not checked" when some elements have no bound and none is over. Exit status 1
when an output is missing, has another shape or dtype, or is over its bound; else 4
when an output was not checked; else 0.
"""
import os
import sys

import numpy as np

WORST = 5


def option(name):
    if name not in sys.argv:
        return None
    return float(sys.argv[sys.argv.index(name) + 1])


def compare(want, got, bound):
    """Returns (ok, max_abs, max_ratio, nbad, nunbounded, worst[(index, ratio)])."""
    w = want.astype(np.float64).ravel()
    g = got.astype(np.float64).ravel()
    b = np.broadcast_to(bound, want.shape).astype(np.float64).ravel()
    special = ~np.isfinite(w) | ~np.isfinite(g)
    with np.errstate(invalid="ignore"):
        err = np.where(special,
                       np.where((np.isnan(w) & np.isnan(g)) | (w == g), 0.0, np.inf),
                       np.abs(g - w))
    finite = ~special
    max_abs = float(err[finite].max()) if finite.any() else 0.0
    unbounded = finite & np.isinf(b)
    checked = ~unbounded & (err > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(special | ~(b > 0), np.inf, err / np.where(b > 0, b, 1.0))
    ratio = np.where(checked, ratio, 0.0)
    nbad = int(np.count_nonzero(ratio > 1))
    max_ratio = float(ratio.max()) if ratio.size else 0.0
    order = np.lexsort((np.arange(ratio.size), -ratio))[:WORST]
    worst = [(int(i), float(ratio[i]), float(g[i]), float(w[i]), float(b[i]))
             for i in order if checked[i]]
    return nbad == 0, max_abs, max_ratio, nbad, int(np.count_nonzero(unbounded)), worst


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    exp_dir, got_dir = sys.argv[1], sys.argv[2]
    atol, rtol = option("--atol"), option("--rtol")
    flat = atol is not None or rtol is not None
    atol, rtol = atol or 0.0, rtol or 0.0
    bad = unchecked = 0
    names = sorted(f[:-4] for f in os.listdir(exp_dir)
                   if f.endswith(".npy") and not f.endswith(".bound.npy"))
    for n in names:
        want = np.load(os.path.join(exp_dir, n + ".npy"))
        path = os.path.join(got_dir, n + ".npy")
        if not os.path.exists(path):
            print("%-16s MISSING" % n)
            bad += 1
            continue
        got = np.load(path)
        if got.shape != want.shape or got.dtype != want.dtype:
            print("%-16s shape/dtype %s %s vs %s %s" % (n, got.shape, got.dtype, want.shape, want.dtype))
            bad += 1
            continue
        if flat:
            bound = atol + rtol * np.where(np.isfinite(want), np.abs(want.astype(np.float64)), 0.0)
        else:
            bpath = os.path.join(exp_dir, n + ".bound.npy")
            if not os.path.exists(bpath):
                print("%-16s no %s.bound.npy: write the expectations with `fusec run "
                      "--backend interp --outputs`, or give --atol/--rtol" % (n, n))
                bad += 1
                continue
            bound = np.load(bpath)
        ok, max_abs, max_ratio, nbad, nunb, worst = compare(want, got, bound)
        # as `fusec run --check`: an output with unbounded elements and none over
        # its bound was not checked, not ok
        status = "FAIL" if not ok else "not checked" if nunb else "ok"
        l2 = ""
        if "--rel-l2" in sys.argv:
            w, g = want.astype(np.float64).ravel(), got.astype(np.float64).ravel()
            fin = np.isfinite(w) & np.isfinite(g)
            den = float(np.sqrt(np.sum(w[fin] ** 2)))
            num = float(np.sqrt(np.sum((g[fin] - w[fin]) ** 2)))
            l2 = " rel_l2=%.3g" % (num / den if den > 0 else num)
        print("%-16s %-8s max_abs=%.3g max_err/bound=%.3g%s%s%s %s" %
              (n, want.dtype, max_abs, max_ratio, l2, " bad=%d" % nbad if nbad else "",
               " unbounded=%d" % nunb if nunb else "", status))
        unchecked += ok and nunb > 0
        for i, r, g, w, b in (worst if not ok else worst[:1]):
            idx = np.unravel_index(i, want.shape) if want.ndim else ()
            print("  worst %s: got %.9g want %.9g err %.3g bound %.3g err/bound %.3g" %
                  (list(map(int, idx)), g, w, abs(g - w), b, r))
        bad += not ok
    print("%d outputs, %d failed%s" % (len(names), bad,
                                       ", %d not checked" % unchecked if unchecked else ""))
    sys.exit(1 if bad else 4 if unchecked else 0)


if __name__ == "__main__":
    main()
