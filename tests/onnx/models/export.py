#!/usr/bin/env python3
"""Export the six reference architectures to ONNX with random weights.

usage: export.py OUTDIR [--size tiny|small|gpu|base]

ResNet-18, MobileNetV3-small, a 2-layer ViT, BERT, GPT-2 and a Llama-style decoder,
written here in plain torch (no torchvision or transformers), exported with
torch.onnx.export (TorchScript exporter, opset 17). `tiny` dims keep the models
small enough to commit as test fixtures; `small` is closer to the real shapes
(fewer layers) for timing imports and compiles; `gpu` is `small` with narrower
ResNet-18 (width 32), d=192 transformers, vocab 1024 and 100 classes, so that all
six compiled plans fit one 40 MiB GPU bundle (tests/onnx/models/gpu_bench.py);
`base` exports BERT-base, GPT-2 small and a 12-layer Llama-style decoder at width 768. Deterministic: seeded weights.
Test-only: needs torch (PyPI, CPU wheel).
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- ResNet-18 ------------------------------------------------------------------

class Basic(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return F.relu(y + (self.down(x) if self.down is not None else x))


class ResNet18(nn.Module):
    def __init__(self, width=64, classes=1000):
        super().__init__()
        w = width
        self.stem = nn.Sequential(nn.Conv2d(3, w, 7, 2, 3, bias=False), nn.BatchNorm2d(w),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        layers, cin = [], w
        for i, cout in enumerate([w, 2 * w, 4 * w, 8 * w]):
            layers += [Basic(cin, cout, 1 if i == 0 else 2), Basic(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


# ---- MobileNetV3-small -----------------------------------------------------------

def _div(v, d=8):
    return max(d, int(v + d / 2) // d * d)


class SE(nn.Module):
    def __init__(self, c):
        super().__init__()
        s = _div(c // 4)
        self.fc1 = nn.Conv2d(c, s, 1)
        self.fc2 = nn.Conv2d(s, c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        s = F.hardsigmoid(self.fc2(F.relu(self.fc1(s))))
        return x * s


class InvRes(nn.Module):
    def __init__(self, cin, k, exp, cout, se, hs, stride):
        super().__init__()
        act = nn.Hardswish if hs else nn.ReLU
        layers = []
        if exp != cin:
            layers += [nn.Conv2d(cin, exp, 1, bias=False), nn.BatchNorm2d(exp), act()]
        layers += [nn.Conv2d(exp, exp, k, stride, k // 2, groups=exp, bias=False),
                   nn.BatchNorm2d(exp), act()]
        if se:
            layers.append(SE(exp))
        layers += [nn.Conv2d(exp, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.block = nn.Sequential(*layers)
        self.res = stride == 1 and cin == cout

    def forward(self, x):
        y = self.block(x)
        return x + y if self.res else y


class MobileNetV3Small(nn.Module):
    # (kernel, expansion, out, SE, hardswish, stride), as in the paper
    CFG = [(3, 16, 16, True, False, 2), (3, 72, 24, False, False, 2),
           (3, 88, 24, False, False, 1), (5, 96, 40, True, True, 2),
           (5, 240, 40, True, True, 1), (5, 240, 40, True, True, 1),
           (5, 120, 48, True, True, 1), (5, 144, 48, True, True, 1),
           (5, 288, 96, True, True, 2), (5, 576, 96, True, True, 1),
           (5, 576, 96, True, True, 1)]

    def __init__(self, mult=1.0, classes=1000):
        super().__init__()
        c = _div(16 * mult)
        layers = [nn.Conv2d(3, c, 3, 2, 1, bias=False), nn.BatchNorm2d(c), nn.Hardswish()]
        for k, e, o, se, hs, s in self.CFG:
            e, o = _div(e * mult), _div(o * mult)
            layers.append(InvRes(c, k, e, o, se, hs, s))
            c = o
        last = _div(576 * mult)
        layers += [nn.Conv2d(c, last, 1, bias=False), nn.BatchNorm2d(last), nn.Hardswish()]
        self.features = nn.Sequential(*layers)
        head = _div(1024 * mult)
        self.head = nn.Sequential(nn.Linear(last, head), nn.Hardswish(), nn.Linear(head, classes))

    def forward(self, x):
        x = F.adaptive_avg_pool2d(self.features(x), 1).flatten(1)
        return self.head(x)


# ---- transformers -----------------------------------------------------------------

class Attention(nn.Module):
    def __init__(self, d, heads, causal):
        super().__init__()
        self.h, self.causal = heads, causal
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x, mask=None):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (z.reshape(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v))
        a = q @ k.transpose(-2, -1) / math.sqrt(d // self.h)
        if self.causal:
            keep = torch.tril(torch.ones(t, t, dtype=torch.bool, device=x.device))
            a = a.masked_fill(~keep, float("-inf"))
        if mask is not None:  # [b, t] of 1 (attend) / 0 (padding)
            a = a + (1.0 - mask[:, None, None, :].to(a.dtype)) * -10000.0
        y = a.softmax(-1) @ v
        return self.proj(y.transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, d, heads, causal, pre_norm, gelu_tanh):
        super().__init__()
        self.attn = Attention(d, heads, causal)
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.pre, self.approx = pre_norm, "tanh" if gelu_tanh else "none"

    def mlp(self, x):
        return self.fc2(F.gelu(self.fc1(x), approximate=self.approx))

    def forward(self, x, mask=None):
        if self.pre:
            x = x + self.attn(self.n1(x), mask)
            return x + self.mlp(self.n2(x))
        x = self.n1(x + self.attn(x, mask))
        return self.n2(x + self.mlp(x))


class ViT(nn.Module):
    def __init__(self, img=32, patch=8, d=64, heads=4, layers=2, classes=10):
        super().__init__()
        self.embed = nn.Conv2d(3, d, patch, patch)
        n = (img // patch) ** 2
        self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, n + 1, d) * 0.02)
        self.blocks = nn.ModuleList(Block(d, heads, False, True, False) for _ in range(layers))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        x = self.embed(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        for b in self.blocks:
            x = b(x)
        return self.head(self.norm(x)[:, 0])


class Bert(nn.Module):
    def __init__(self, vocab=1000, d=64, heads=4, layers=2, seq=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq, d)
        self.typ = nn.Embedding(2, d)
        self.norm = nn.LayerNorm(d)
        self.blocks = nn.ModuleList(Block(d, heads, False, False, False) for _ in range(layers))
        self.pool = nn.Linear(d, d)

    def forward(self, ids, mask):
        t = ids.shape[1]
        pos = torch.arange(t, device=ids.device).unsqueeze(0)
        x = self.norm(self.tok(ids) + self.pos(pos) + self.typ(torch.zeros_like(ids)))
        for b in self.blocks:
            x = b(x, mask)
        return x, torch.tanh(self.pool(x[:, 0]))


class GPT2(nn.Module):
    def __init__(self, vocab=1000, d=64, heads=4, layers=2, seq=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads, True, True, True) for _ in range(layers))
        self.norm = nn.LayerNorm(d)

    def forward(self, ids):
        t = ids.shape[1]
        x = self.tok(ids) + self.pos(torch.arange(t, device=ids.device).unsqueeze(0))
        for b in self.blocks:
            x = b(x)
        return self.norm(x) @ self.tok.weight.t()


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.w = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.w


def rope(x, cos, sin):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin


class LlamaBlock(nn.Module):
    def __init__(self, d, heads, kv_heads, hidden):
        super().__init__()
        self.h, self.kv, self.hd = heads, kv_heads, d // heads
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.v = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.gate = nn.Linear(d, hidden, bias=False)
        self.up = nn.Linear(d, hidden, bias=False)
        self.down = nn.Linear(hidden, d, bias=False)
        self.n1, self.n2 = RMSNorm(d), RMSNorm(d)

    def forward(self, x, cos, sin):
        b, t, d = x.shape
        h = self.n1(x)
        q = self.q(h).reshape(b, t, self.h, self.hd).transpose(1, 2)
        k = self.k(h).reshape(b, t, self.kv, self.hd).transpose(1, 2)
        v = self.v(h).reshape(b, t, self.kv, self.hd).transpose(1, 2)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        rep = self.h // self.kv
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        a = q @ k.transpose(-2, -1) / math.sqrt(self.hd)
        keep = torch.tril(torch.ones(t, t, dtype=torch.bool, device=x.device))
        a = a.masked_fill(~keep, float("-inf")).softmax(-1)
        x = x + self.o((a @ v).transpose(1, 2).reshape(b, t, d))
        h = self.n2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Llama(nn.Module):
    def __init__(self, vocab=1000, d=64, heads=4, kv_heads=2, layers=2, hidden=176, seq=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(LlamaBlock(d, heads, kv_heads, hidden) for _ in range(layers))
        self.norm = RMSNorm(d)
        self.lm = nn.Linear(d, vocab, bias=False)
        hd = d // heads
        inv = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
        ang = torch.outer(torch.arange(seq).float(), inv)
        ang = torch.cat([ang, ang], dim=-1)
        self.register_buffer("cos", ang.cos()[None, None])
        self.register_buffer("sin", ang.sin()[None, None])

    def forward(self, ids):
        t = ids.shape[1]
        x = self.tok(ids)
        cos, sin = self.cos[:, :, :t], self.sin[:, :, :t]
        for b in self.blocks:
            x = b(x, cos, sin)
        return self.lm(self.norm(x))


# ---- export -------------------------------------------------------------------------

def models(size):
    tiny, base = size == "tiny", size == "base"
    seq = 16 if tiny else 128
    d = 32 if tiny else 768 if base else 256
    vocab = 100 if tiny else 8192
    img = 32 if tiny else 224
    layers = 12 if base else 2
    heads = 12 if base else 4
    if base:  # BERT-base, GPT-2 small and a 12-layer Llama of the same width
        return {
            "bert_base": (Bert(vocab=30522, d=d, heads=heads, layers=layers, seq=seq),
                          (torch.randint(0, 30522, (1, seq)),
                           torch.cat([torch.ones(1, seq - 3, dtype=torch.int64),
                                      torch.zeros(1, 3, dtype=torch.int64)], 1)),
                          ["input_ids", "attention_mask"], ["hidden", "pooled"]),
            "gpt2_small": (GPT2(vocab=50257, d=d, heads=heads, layers=layers, seq=seq),
                           (torch.randint(0, 50257, (1, seq)),), ["input_ids"], ["logits"]),
            "llama_12l": (Llama(vocab=32000, d=d, heads=heads, kv_heads=4, layers=layers,
                                hidden=2048, seq=seq),
                          (torch.randint(0, 32000, (1, seq)),), ["input_ids"], ["logits"]),
        }
    if size == "gpu":  # `small` cut to fit a 40 MiB GPU bundle (docs/onnx.md)
        d, vocab, cls = 192, 1024, 100
        return {
            "resnet18": (ResNet18(width=32, classes=cls),
                         (torch.randn(1, 3, img, img),), ["x"], ["logits"]),
            "mobilenetv3_small": (MobileNetV3Small(mult=1.0, classes=cls),
                                  (torch.randn(1, 3, img, img),), ["x"], ["logits"]),
            "vit2": (ViT(img=img, patch=16, d=d, heads=3, layers=2, classes=cls),
                     (torch.randn(1, 3, img, img),), ["x"], ["logits"]),
            "bert": (Bert(vocab=vocab, d=d, heads=3, layers=2, seq=seq),
                     (torch.randint(0, vocab, (1, seq)),
                      torch.cat([torch.ones(1, seq - 3, dtype=torch.int64),
                                 torch.zeros(1, 3, dtype=torch.int64)], 1)),
                     ["input_ids", "attention_mask"], ["hidden", "pooled"]),
            "gpt2": (GPT2(vocab=vocab, d=d, heads=3, layers=2, seq=seq),
                     (torch.randint(0, vocab, (1, seq)),), ["input_ids"], ["logits"]),
            "llama": (Llama(vocab=vocab, d=d, heads=3, kv_heads=1, layers=2, hidden=512,
                            seq=seq),
                      (torch.randint(0, vocab, (1, seq)),), ["input_ids"], ["logits"]),
        }
    return {
        "resnet18": (ResNet18(width=8 if tiny else 64, classes=10 if tiny else 1000),
                     (torch.randn(1, 3, img, img),), ["x"], ["logits"]),
        "mobilenetv3_small": (MobileNetV3Small(mult=0.25 if tiny else 1.0,
                                               classes=10 if tiny else 1000),
                              (torch.randn(1, 3, img, img),), ["x"], ["logits"]),
        "vit2": (ViT(img=32 if tiny else 224, patch=8 if tiny else 16, d=d,
                     heads=4, layers=2, classes=10 if tiny else 1000),
                 (torch.randn(1, 3, img, img),), ["x"], ["logits"]),
        "bert": (Bert(vocab=vocab, d=d, heads=4, layers=2, seq=seq),
                 (torch.randint(0, vocab, (1, seq)),
                  torch.cat([torch.ones(1, seq - 3, dtype=torch.int64),
                             torch.zeros(1, 3, dtype=torch.int64)], 1)),
                 ["input_ids", "attention_mask"], ["hidden", "pooled"]),
        "gpt2": (GPT2(vocab=vocab, d=d, heads=4, layers=2, seq=seq),
                 (torch.randint(0, vocab, (1, seq)),), ["input_ids"], ["logits"]),
        "llama": (Llama(vocab=vocab, d=d, heads=4, kv_heads=2, layers=2,
                        hidden=88 if tiny else 704, seq=seq),
                  (torch.randint(0, vocab, (1, seq)),), ["input_ids"], ["logits"]),
    }


def seeded_models(size):
    """models(size) with the seeds and batch norm statistics every exported file has:
    what bench_torch.py and gpu_bench.py run, so their modules are the exported ones."""
    torch.manual_seed(0)
    ms = models(size)
    for m, _, _, _ in ms.values():
        torch.manual_seed(1)
        m.eval()
        for p in m.modules():  # non-trivial batch norm statistics
            if isinstance(p, nn.BatchNorm2d):
                p.running_mean.uniform_(-0.1, 0.1)
                p.running_var.uniform_(0.5, 1.5)
    return ms


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    size = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--size" else "tiny"
    os.makedirs(out, exist_ok=True)
    for name, (m, args, ins, outs) in seeded_models(size).items():
        path = os.path.join(out, name + ".onnx")
        kw = {"dynamo": False} if "dynamo" in torch.onnx.export.__code__.co_varnames else {}
        torch.onnx.export(m, args, path, input_names=ins, output_names=outs,
                          opset_version=17, do_constant_folding=True, **kw)
        print(f"{path}: {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
