#!/usr/bin/env python3
"""math_sweep.py: max ulp error of fusec's f32 math on the GPU against float64
numpy, over 2^24 points spread over [-90, 90] (log over (0, 90] for log).

    python3 math_sweep.py FUSEC_RUN PLAN_DIR
"""
import math
import os
import subprocess
import sys
import tempfile

import numpy as np


def main():
    run, plan = sys.argv[1], sys.argv[2]
    n = 1 << 24
    x = np.linspace(-90.0, 90.0, n).astype(np.float32)
    tmp = tempfile.mkdtemp()
    os.makedirs(tmp + "/in")
    np.save(tmp + "/in/x.npy", x)
    subprocess.run([run, plan, "--inputs", tmp + "/in", "--outputs", tmp + "/out"], check=True,
                   capture_output=True)
    xd = x.astype(np.float64)
    sig = 1.0 / (1.0 + np.exp(-xd))
    erf = np.vectorize(math.erf)(xd[::64])
    ref = {"exp": np.exp(xd), "tanh": np.tanh(xd), "sigmoid": sig, "silu": xd * sig,
           # 0.5x(1 + tanh u) = x sigmoid(2u): the f64 reference must not cancel either
           "gelu_tanh": xd / (1.0 + np.exp(-2 * 0.7978845608028654 * (xd + 0.044715 * xd ** 3))),
           "sin": np.sin(xd), "log": np.log(np.abs(xd)), "erf": erf}
    print("| function | max ulp (f32, GPU) | where | domain |")
    print("|---|---|---|---|")
    for name, want in ref.items():
        got = np.load(tmp + "/out/%s.npy" % name).astype(np.float64)
        xs = xd
        if name == "erf":
            got, xs = got[::64], xd[::64]
        dom = np.isfinite(want) & (np.abs(want) < 3.4e38) & (np.abs(want) > 1.2e-38)
        if name == "log":
            dom &= xs > 0
            got = got
        ulp = np.spacing(np.abs(want[dom]).astype(np.float32)).astype(np.float64)
        err = np.abs(got[dom] - want[dom]) / ulp
        i = int(np.argmax(err))
        print("| %s | %.2f | x=%.6g | %s |" % (name, err[i], xs[dom][i],
                                           "(0, 90]" if name == "log" else "[-90, 90]"))


if __name__ == "__main__":
    main()
