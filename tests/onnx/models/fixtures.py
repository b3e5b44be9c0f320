#!/usr/bin/env python3
"""Turn exported models into test fixtures in the layout of ONNX's backend tests.

usage: fixtures.py MODELDIR OUTDIR

For each MODELDIR/NAME.onnx: OUTDIR/NAME/model.onnx and test_data_set_0/ with
input_K.pb (the seeded inputs of compare.py) and output_K.pb (onnxruntime's
outputs), so `onnx_conformance OUTDIR` checks fusec against onnxruntime without
onnxruntime installed. Test-only: numpy, onnx and onnxruntime from PyPI.
"""
import os
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import inputs_for  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, out = sys.argv[1], sys.argv[2]
    for f in sorted(os.listdir(src)):
        if not f.endswith(".onnx"):
            continue
        name = f[:-5]
        d = os.path.join(out, name)
        data = os.path.join(d, "test_data_set_0")
        os.makedirs(data, exist_ok=True)
        shutil.copy(os.path.join(src, f), os.path.join(d, "model.onnx"))
        sess = ort.InferenceSession(os.path.join(d, "model.onnx"),
                                    providers=["CPUExecutionProvider"])
        feeds = inputs_for(sess, np.random.default_rng(0))
        for k, i in enumerate(sess.get_inputs()):
            t = numpy_helper.from_array(feeds[i.name], i.name)
            with open(os.path.join(data, f"input_{k}.pb"), "wb") as fh:
                fh.write(t.SerializeToString())
        for k, (o, v) in enumerate(zip(sess.get_outputs(), sess.run(None, feeds))):
            t = numpy_helper.from_array(np.asarray(v), o.name)
            with open(os.path.join(data, f"output_{k}.pb"), "wb") as fh:
                fh.write(t.SerializeToString())
        print(d)


if __name__ == "__main__":
    main()
