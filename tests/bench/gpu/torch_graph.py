"""torch_graph.py: runs a fusec-graph/1 (JSON) graph with PyTorch, op by op.

build(graph) returns f(inputs: dict) -> dict of outputs, for eager use or for
torch.compile. Semantics follow SPEC §1.1 (reductions keep the reduced dim).
"""
import torch

DT = {"f64": torch.float64, "f32": torch.float32, "f16": torch.float16,
      "bf16": torch.bfloat16, "i64": torch.int64, "i32": torch.int32,
      "i16": torch.int16, "i8": torch.int8, "u8": torch.uint8, "bool": torch.bool}

F = torch.nn.functional


def pair(v):
    return tuple(v) if isinstance(v, list) else (v, v)


def _slice(x, ranges):
    idx = tuple(slice(s, e) for s, e in ranges)
    return x[idx]


def apply(o, a):
    k = o["op"]
    s = o.get("scalar")
    binary = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
              "rem": torch.remainder, "pow": torch.pow, "powf": torch.pow,
              "max": torch.maximum, "min": torch.minimum, "eq": torch.eq, "ne": torch.ne,
              "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge,
              "and": torch.logical_and, "or": torch.logical_or, "xor": torch.logical_xor}
    if k in binary:
        return binary[k](a[0], a[1])
    scalar = {"add_scalar": torch.add, "sub_scalar": torch.sub, "mul_scalar": torch.mul,
              "div_scalar": torch.div, "rem_scalar": torch.remainder, "pow_scalar": torch.pow,
              "eq_scalar": torch.eq, "ne_scalar": torch.ne, "lt_scalar": torch.lt,
              "le_scalar": torch.le, "gt_scalar": torch.gt, "ge_scalar": torch.ge}
    if k in scalar:
        return scalar[k](a[0], s)
    unary = {"neg": torch.neg, "abs": torch.abs, "sign": torch.sign, "exp": torch.exp,
             "log": torch.log, "log1p": torch.log1p, "sqrt": torch.sqrt,
             "recip": torch.reciprocal, "sin": torch.sin, "cos": torch.cos,
             "tanh": torch.tanh, "erf": torch.erf, "floor": torch.floor, "ceil": torch.ceil,
             "round": torch.round, "trunc": torch.trunc, "is_nan": torch.isnan,
             "is_inf": torch.isinf, "relu": torch.relu, "sigmoid": torch.sigmoid,
             "silu": F.silu, "not": torch.logical_not}
    if k in unary:
        return unary[k](a[0])
    if k == "gelu":
        return F.gelu(a[0], approximate=o.get("approximate", "none"))
    if k == "clamp":
        return torch.clamp(a[0], o["min"], o["max"])
    if k == "clamp_min":
        return torch.clamp(a[0], min=o["min"])
    if k == "clamp_max":
        return torch.clamp(a[0], max=o["max"])
    if k == "where":
        return torch.where(a[0], a[1], a[2])
    if k == "mask_fill":
        return a[0].masked_fill(a[1], s)
    if k == "cast":
        return a[0].to(DT[o["dtype"]])
    if k == "reshape":
        return a[0].reshape(o["shape"])
    if k == "permute":
        return a[0].permute(o["axes"])
    if k == "swap_dims":
        return a[0].transpose(*o["dims"])
    if k == "expand":
        return a[0].expand(o["shape"])
    if k == "slice":
        return _slice(a[0], o["ranges"])
    ax = o.get("axis")
    if k == "sum":
        return a[0].sum(ax, keepdim=True)
    if k == "mean":
        return a[0].mean(ax, keepdim=True)
    if k == "prod":
        return a[0].prod(ax, keepdim=True)
    if k == "max_dim":
        return a[0].amax(ax, keepdim=True)
    if k == "min_dim":
        return a[0].amin(ax, keepdim=True)
    if k == "argmax":
        return a[0].argmax(ax, keepdim=True)
    if k == "argmin":
        return a[0].argmin(ax, keepdim=True)
    if k == "matmul":
        return torch.matmul(a[0], a[1])
    if k == "attention":
        # softmax(scalar * q kt + bias) v (ir/ops.def): a bool mask sets its scores to
        # `min`; `causal` c hides keys j > i + c. c = 0 on a square with nothing else:
        # SDPA's is_causal (torch's flash kernel); the rest written out in f32
        q, kt, v = a[0], a[1], a[2]
        m, n = q.shape[-2], kt.shape[-1]
        c = o.get("causal")
        if len(a) == 3 and c == 0 and m == n:
            # k contiguous: the flash kernel wants the last dim dense, and kt seen
            # transposed sent SDPA to its math path (session 48); the copy is in
            # torch's time
            return F.scaled_dot_product_attention(q, kt.transpose(-1, -2).contiguous(), v,
                                                  is_causal=True, scale=s)
        sc = (q.float() @ kt.float()) * s
        if len(a) > 3:
            sc = torch.where(a[3], o.get("min", 0.0), sc) if a[3].dtype == torch.bool \
                else sc + a[3].float()
        if c is not None:
            i = torch.arange(m, device=q.device)[:, None]
            j = torch.arange(n, device=q.device)[None, :]
            sc = sc.masked_fill(j > i + c, float("-inf"))
        return (torch.softmax(sc, -1) @ v.float()).to(q.dtype)
    if k == "cat":
        return torch.cat(a, ax)
    if k == "gather":
        return torch.gather(a[0], ax, a[1].long())
    if k == "conv2d":
        return F.conv2d(a[0], a[1], a[2] if len(a) > 2 else None, pair(o.get("stride", 1)),
                        pair(o.get("padding", 0)), pair(o.get("dilation", 1)), o.get("groups", 1))
    if k == "max_pool2d":
        kk = pair(o["kernel"])
        return F.max_pool2d(a[0], kk, pair(o.get("stride", o["kernel"])), pair(o.get("padding", 0)))
    if k == "avg_pool2d":
        kk = pair(o["kernel"])
        return F.avg_pool2d(a[0], kk, pair(o.get("stride", o["kernel"])), pair(o.get("padding", 0)),
                            count_include_pad=True)
    raise ValueError("op %s not handled by torch_graph" % k)


def build(graph):
    ops = [o for o in graph["ops"] if o["op"] != "sync"]
    outputs = list(graph["outputs"])

    def f(inputs):
        env = dict(inputs)
        for o in ops:
            env[o["out"]] = apply(o, [env[n] for n in o["in"]])
        return {n: env[n] for n in outputs}
    return f


def count_kernels(graph):
    return sum(1 for o in graph["ops"] if o["op"] not in ("sync", "reshape", "permute",
                                                          "swap_dims", "expand", "slice"))
