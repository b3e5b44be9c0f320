#!/usr/bin/env python3
"""Export transformers models with dynamic batch and sequence dims (issue 28).

usage: export_dynamic.py OUTDIR [--tiny | --micro] [--models bert,llama] [--attn sdpa]

Each model is built as tests/bench/models/real_models.py builds it (random weights,
seeded, eval mode) and exported by torch.onnx.export (TorchScript exporter, opset 17)
with dynamic_axes naming dim 0 `batch` and dim 1 `seq` of every input and of the
output. Writes OUTDIR/NAME.onnx and prints each model's node types. --micro: one
layer, hidden 16, 2 heads (Llama: 1 key/value head), vocabulary 64, 64 positions:
the models of tests/onnx/dynamic (bert_micro.onnx, llama_micro.onnx)."""
import argparse
import collections
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
import real_models as rm  # noqa: E402


def micro(name, attn):
    import transformers as tf
    torch.manual_seed(0)
    kw = dict(vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
              intermediate_size=32, max_position_embeddings=64, attn_implementation=attn)
    if name == "bert":
        m = rm.LastHidden(tf.BertModel(tf.BertConfig(**kw), add_pooling_layer=False), True)
    else:
        m = rm.LastHidden(tf.LlamaModel(tf.LlamaConfig(num_key_value_heads=1, use_cache=False,
                                                       **kw)), False)
    return m.eval()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--tiny", action="store_true")
    p.add_argument("--micro", action="store_true")
    p.add_argument("--models", default="bert,llama")
    p.add_argument("--attn", default="sdpa")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for name in a.models.split(","):
        m, ins_t, ins, outs = rm.build(name, 2, "f32", a.tiny, a.attn)[:4]
        if a.micro:   # 16 tokens of its 64-word vocabulary
            m = micro(name, a.attn)
            ins_t = [ins_t[0][:, :16] % 64] + [x[:, :16] for x in ins_t[1:]]
        axes = {n: {0: "batch", 1: "seq"} for n in ins + outs}
        path = os.path.join(a.out, name + ".onnx")
        try:
            torch.onnx.export(m, tuple(ins_t), path, input_names=ins, output_names=outs,
                              opset_version=rm.OPSET, do_constant_folding=True,
                              dynamo=False, dynamic_axes=axes)
        except Exception as e:  # noqa: BLE001
            print(f"{name}: {a.attn} did not export ({type(e).__name__}: {e}); eager")
            m = rm.build(name, 2, "f32", a.tiny, "eager")[0] if not a.micro else \
                micro(name, "eager")
            torch.onnx.export(m, tuple(ins_t), path, input_names=ins, output_names=outs,
                              opset_version=rm.OPSET, do_constant_folding=True,
                              dynamo=False, dynamic_axes=axes)
        import onnx
        g = onnx.load(path, load_external_data=False).graph
        print(name, os.path.getsize(path), "bytes",
              dict(collections.Counter(n.op_type for n in g.node)))


if __name__ == "__main__":
    main()
