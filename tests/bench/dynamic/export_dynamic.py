#!/usr/bin/env python3
"""Export transformers models with dynamic batch and sequence dims (issue 28).

usage: export_dynamic.py OUTDIR [--tiny] [--models bert,llama] [--attn sdpa]

Each model is built as tests/bench/models/real_models.py builds it (random weights,
seeded, eval mode) and exported by torch.onnx.export (TorchScript exporter, opset 17)
with dynamic_axes naming dim 0 `batch` and dim 1 `seq` of every input and of the
output. Writes OUTDIR/NAME.onnx and prints each model's node types."""
import argparse
import collections
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
import real_models as rm  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--tiny", action="store_true")
    p.add_argument("--models", default="bert,llama")
    p.add_argument("--attn", default="sdpa")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for name in a.models.split(","):
        m, ins_t, ins, outs = rm.build(name, 2, "f32", a.tiny, a.attn)[:4]
        axes = {n: {0: "batch", 1: "seq"} for n in ins + outs}
        path = os.path.join(a.out, name + ".onnx")
        try:
            torch.onnx.export(m, tuple(ins_t), path, input_names=ins, output_names=outs,
                              opset_version=rm.OPSET, do_constant_folding=True,
                              dynamo=False, dynamic_axes=axes)
        except Exception as e:  # noqa: BLE001
            print(f"{name}: {a.attn} did not export ({type(e).__name__}: {e}); eager")
            m, ins_t, ins, outs = rm.build(name, 2, "f32", a.tiny, "eager")[:4]
            torch.onnx.export(m, tuple(ins_t), path, input_names=ins, output_names=outs,
                              opset_version=rm.OPSET, do_constant_folding=True,
                              dynamo=False, dynamic_axes=axes)
        import onnx
        g = onnx.load(path, load_external_data=False).graph
        print(name, os.path.getsize(path), "bytes",
              dict(collections.Counter(n.op_type for n in g.node)))


if __name__ == "__main__":
    main()
