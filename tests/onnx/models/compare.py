#!/usr/bin/env python3
"""Run ONNX models on fusec (--backend cpu) and onnxruntime; compare the outputs.

usage: compare.py FUSEC MODEL.onnx... [--max-rel-l2 1e-3] [--backend cpu|interp]

Per model: seeded random inputs (floats in [-1, 1); int64 ids in [0, 10);
an input named *mask* is ones with the last three positions 0), written as
DIR/NAME.npy with NAME sanitized as fusec does ([A-Za-z0-9._-], others '_');
`fusec run MODEL --backend B --inputs DIR --outputs OUT`; onnxruntime on the
same inputs; the relative L2 error ||fusec - ort|| / ||ort|| of every output.
Also times `fusec compile MODEL` (import, search, kernels, PTX). Prints one line
per output and exits 1 when any error is over the bound. Test-only: numpy and
onnxruntime from PyPI.
"""
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort


def sanitize(name):
    s = re.sub(r"[^A-Za-z0-9._-]", "_", name)
    return "_" + s[1:] if s.startswith(".") else s


NP = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(int32)": np.int32,
      "tensor(double)": np.float64, "tensor(bool)": np.bool_}


def inputs_for(sess, rng):
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        t = NP[i.type]
        if "mask" in i.name:
            v = np.ones(shape, t)
            v[..., -3:] = 0
        elif np.issubdtype(t, np.integer):
            v = rng.integers(0, 10, size=shape).astype(t)
        else:
            v = rng.uniform(-1, 1, size=shape).astype(t)
        feeds[i.name] = v
    return feeds


def main():
    args = sys.argv[1:]
    bound, backend = 1e-3, "cpu"
    if "--max-rel-l2" in args:
        k = args.index("--max-rel-l2")
        bound = float(args[k + 1])
        del args[k:k + 2]
    if "--backend" in args:
        k = args.index("--backend")
        backend = args[k + 1]
        del args[k:k + 2]
    if len(args) < 2:
        sys.exit(__doc__)
    fusec, models = args[0], args[1:]
    bad = 0
    for model in models:
        name = os.path.basename(model)
        with tempfile.TemporaryDirectory() as tmp:
            ind, outd, plan = (os.path.join(tmp, x) for x in ("in", "out", "plan"))
            os.makedirs(ind)
            sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
            feeds = inputs_for(sess, np.random.default_rng(0))
            for k, v in feeds.items():
                np.save(os.path.join(ind, sanitize(k) + ".npy"), v)
            want = sess.run(None, feeds)
            t0 = time.monotonic()
            c = subprocess.run([fusec, "compile", model, "-o", plan], capture_output=True,
                               text=True)
            t_compile = time.monotonic() - t0
            if c.returncode:
                print(f"{name}: compile failed: {c.stderr.strip()}")
                bad += 1
                continue
            t0 = time.monotonic()
            r = subprocess.run([fusec, "run", model, "--backend", backend, "--inputs", ind,
                                "--outputs", outd], capture_output=True, text=True)
            t_run = time.monotonic() - t0
            if r.returncode:
                print(f"{name}: run failed: {r.stderr.strip()}")
                bad += 1
                continue
            for o, w in zip(sess.get_outputs(), want):
                got = np.load(os.path.join(outd, sanitize(o.name) + ".npy"))
                w = np.asarray(w, dtype=np.float64)
                err = np.linalg.norm(got.astype(np.float64) - w) / max(np.linalg.norm(w), 1e-30)
                ok = got.shape == w.shape and err <= bound
                bad += not ok
                print(f"{name} {o.name} {list(got.shape)}: rel_l2 {err:.2e} "
                      f"{'ok' if ok else 'FAIL'}; compile {t_compile:.2f} s, "
                      f"run --backend {backend} {t_run:.2f} s")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
