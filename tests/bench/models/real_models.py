#!/usr/bin/env python3
"""Real models from torchvision and transformers: fusec against torch.compile.

usage: real_models.py [--bundle T] [--models A,B] [--batches big,1] [--dtypes f32,bf16]
                      [--iters N] [--parallel K] [--deadline S] [--compile-budget S]
                      [--attn sdpa|eager] [--jobs N] [--work DIR] [--keep] [--dry-run]
       real_models.py --merge A.json B.json ...

Models (random weights, seeded, eval mode; nothing is downloaded):
  bert         transformers BertModel (BERT-base, no pooler): input_ids, attention_mask
  gpt2         transformers GPT2Model (GPT-2 small): input_ids
  llama        transformers LlamaModel from a LlamaConfig: hidden 768, 12 layers,
               12 heads, 4 key/value heads (GQA), MLP 2048, vocabulary 32000
  vit          torchvision vit_b_16, 224x224
  resnet50     torchvision resnet50, 224x224
  mobilenetv3  torchvision mobilenet_v3_large, 224x224
The text models return last_hidden_state only, at sequence 256 for a batch above 1 and
128 at batch 1. `big` in --batches is each model's large batch: 8 for the text models,
16 for ViT, 32 for the CNNs; a number is that batch for every model.

Each (model, batch, dtype) is one run, in a worker process of its own:
 1. build the model on the GPU (bf16: model.to(torch.bfloat16), float inputs bf16) and
    export it with torch.onnx.export (the TorchScript exporter, dynamo=False, opset 17,
    static shapes); the transformers models with attn_implementation=--attn (sdpa,
    which exports as MatMul/Softmax; eager where sdpa does not export);
 2. `fusec compile M.onnx -o PLAN -j JOBS --no-cache --time -q` (wall seconds; on a
    failure the first error line, and the run goes on without fusec);
 3. torch eager's outputs (bf16: also those of an f32 copy of the same bf16 weights);
 4. torch.compile (default mode) and torch.compile(mode="reduce-overhead") (CUDA
    graphs), each first call bounded by --compile-budget seconds (then a note);
 5. then, alone on the machine (every other worker stopped with SIGSTOP until it is
    done): `fusec-run PLAN --inputs --outputs --bench --iters N --warmup 5` ("total:
    median": back to back; "latency: median": one call at a time) and torch eager and
    both compiled modes timed the same two ways with CUDA events (gpu_bench.py's
    time_stream_ms and time_ms), fusec's outputs compared with eager's.
Steps 1-4 of up to --parallel runs overlap (dynamo, inductor's lowering and the
exporter are mostly one thread each); the timings never do. f32 runs with TF32 off
on both sides. ratio = fusec / the faster compile mode, back to back (at most 1.00:
the issue's bar). rel L2 = |fusec - eager| / |eager|; bf16 adds fusec's and eager's
against the f32 copy ("vs f32").

One markdown table at the end, also written to $OUT/real_models.md with every figure
in $OUT/real_models.json (rewritten after each run) when OUT is set; the workers' logs
go to $OUT/real_models_logs (else WORK/logs). --merge prints one table from the JSON
files of several calls. --deadline S (default 540) is the wall time of the whole call:
no run starts in its last 100 s, and what is still running at its end is stopped, so
one call fits a 10-minute command; the runs not reached say so.

--dry-run checks the logic on a machine without a GPU: tiny configs (2 layers, width
64, 32x32 images, batch 1), `$FUSEC compile` (FUSEC from the environment), fusec-run
--plan-only where a fusec-run lies beside FUSEC, the outputs from `$FUSEC run M.onnx
--backend cpu`, torch eager on the CPU; no torch.compile and no GPU figures. With
--full it does the same with the real configurations and batches (slow on the CPU).
"""
import argparse
import copy
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "onnx", "models"))

ORDER = ["bert", "gpt2", "llama", "vit", "resnet50", "mobilenetv3"]
LABEL = {"bert": "BERT-base", "gpt2": "GPT-2 small", "llama": "Llama 12L GQA",
         "vit": "ViT-B/16", "resnet50": "ResNet-50", "mobilenetv3": "MobileNetV3-L"}
BIG = {"bert": 8, "gpt2": 8, "llama": 8, "vit": 16, "resnet50": 32, "mobilenetv3": 32}
OPSET = 17
START_RESERVE_S = 100  # no run starts this close to the deadline
WINDOW_S = 240         # the most one run's timing may hold the machine

# ---- models -------------------------------------------------------------------------

def _no_packed_sequences():
    """transformers looks for packed sequences in position_ids with torch.diff, which the
    TorchScript exporter cannot export; inference inputs are never packed, so say so
    (for the export and for torch's own runs alike: the same graph on both sides)."""
    import transformers.masking_utils as mu
    mu.find_packed_sequence_indices = lambda position_ids: None


class LastHidden(nn.Module):
    """A transformers model returning only last_hidden_state, for a static export."""

    def __init__(self, m, mask):
        super().__init__()
        self.m, self.mask = m, mask

    def forward(self, input_ids, attention_mask=None):
        if self.mask:
            return self.m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return self.m(input_ids=input_ids, use_cache=False).last_hidden_state


def text_model(name, tiny, attn):
    import transformers as tf
    _no_packed_sequences()
    if name == "bert":
        kw = dict(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                  intermediate_size=128) if tiny else {}
        return LastHidden(tf.BertModel(tf.BertConfig(attn_implementation=attn, **kw),
                                       add_pooling_layer=False), True), 30522 if not tiny else 1000
    if name == "gpt2":
        kw = dict(vocab_size=1000, n_embd=64, n_layer=2, n_head=4, n_positions=256) if tiny else {}
        return LastHidden(tf.GPT2Model(tf.GPT2Config(attn_implementation=attn, use_cache=False,
                                                     **kw)), False), kw.get("vocab_size", 50257)
    kw = dict(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, intermediate_size=176) if tiny else \
        dict(vocab_size=32000, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
             num_key_value_heads=4, intermediate_size=2048, max_position_embeddings=2048)
    return LastHidden(tf.LlamaModel(tf.LlamaConfig(attn_implementation=attn, use_cache=False,
                                                   **kw)), False), kw["vocab_size"]


def vision_model(name, tiny):
    import torchvision.models as tv
    if name == "vit":
        if tiny:
            from torchvision.models.vision_transformer import VisionTransformer
            m = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4,
                                  hidden_dim=64, mlp_dim=128, num_classes=10)
        else:
            m = tv.vit_b_16(weights=None)
        # torchvision zeroes the head: every output would be 0 and rel L2 meaningless
        nn.init.normal_(m.heads.head.weight, std=0.02)
        nn.init.normal_(m.heads.head.bias, std=0.02)
        return m
    if name == "resnet50":
        if tiny:
            from torchvision.models.resnet import Bottleneck, ResNet
            return ResNet(Bottleneck, [1, 1, 1, 1], num_classes=10, width_per_group=16)
        return tv.resnet50(weights=None)
    if tiny:
        return tv.mobilenet_v3_large(weights=None, width_mult=0.25, num_classes=10)
    return tv.mobilenet_v3_large(weights=None)


def build(name, batch, dtype, tiny, attn):
    """(module, inputs, input names, output names), seeded and in eval mode; dtype is
    applied to the module and the float inputs. The module is made on the current
    default device; the inputs on the CPU, from a generator of their own."""
    torch.manual_seed(0)
    if name in ("bert", "gpt2", "llama"):
        m, vocab = text_model(name, tiny, attn)
        seq = 16 if tiny else 128 if batch == 1 else 256
        g = torch.Generator(device="cpu").manual_seed(1)
        ids = torch.randint(0, vocab, (batch, seq), generator=g, device="cpu")
        if name == "bert":  # row i pads its last 3 + 3 i tokens (at most half)
            mask = torch.ones(batch, seq, dtype=torch.int64, device="cpu")
            for i in range(batch):
                mask[i, seq - min(3 + 3 * i, seq // 2):] = 0
            inputs, ins = [ids, mask], ["input_ids", "attention_mask"]
        else:
            inputs, ins = [ids], ["input_ids"]
        outs = ["last_hidden_state"]
    else:
        m = vision_model(name, tiny)
        img = 32 if tiny else 224
        for p in m.modules():  # non-trivial batch norm statistics, as export.py
            if isinstance(p, nn.BatchNorm2d):
                p.running_mean.uniform_(-0.1, 0.1)
                p.running_var.uniform_(0.5, 1.5)
        g = torch.Generator(device="cpu").manual_seed(1)
        inputs = [torch.randn(batch, 3, img, img, generator=g, device="cpu")]
        ins, outs = ["x"], ["logits"]
    m.eval()
    if dtype == "bf16":
        m = m.to(torch.bfloat16)
        inputs = [x.to(torch.bfloat16) if x.is_floating_point() else x for x in inputs]
    return m, inputs, ins, outs


# ---- helpers ----------------------------------------------------------------------

class OverBudget(BaseException):
    """Raised by the alarm; a BaseException, so that torch's `except Exception`
    wrappers let it through."""


class budget:
    """Raise OverBudget in the main thread after `seconds` of wall time."""

    def __init__(self, seconds):
        self.s = seconds

    def __enter__(self):
        def ring(signum, frame):
            raise OverBudget()
        self.old = signal.signal(signal.SIGALRM, ring)
        signal.setitimer(signal.ITIMER_REAL, max(self.s, 0.01))

    def __exit__(self, *exc):
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.old)
        return False


def first_error(text):
    """The first line of a tool's output that says what went wrong (not a --time line)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if re.search(r"error|fail|unsupported|not supported|timed out", ln, re.I):
            return ln[:200]
    rest = [ln for ln in lines if not ln.startswith("time:")]
    return (rest or lines or ["(no message)"])[0][:200]


def run(cmd, timeout, env=None):
    try:
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        return subprocess.CompletedProcess(cmd, 124, out, f"timed out after {timeout:.0f} s\n")


def write_json(path, obj):
    with open(path + ".tmp", "w") as fh:
        json.dump(obj, fh, indent=1)
    os.replace(path + ".tmp", path)


def fmt(v, f="{:.3f}"):
    return "-" if v is None else f.format(v)


def log(*a):
    print(*a, flush=True)


# ---- one run: the worker ------------------------------------------------------------

def new_row(name, batch, dtype):
    return {"model": name, "batch": batch, "dtype": dtype, "notes": [], "stage": "start",
            "params_m": None, "export_s": None, "fusec_compile_s": None, "fusec_error": None,
            "fusec": None, "fusec_lat": None, "eager": None, "eager_lat": None,
            "compile": None, "compile_lat": None, "compile_first_s": None,
            "reduce_overhead": None, "reduce_overhead_lat": None,
            "reduce_overhead_first_s": None, "best": None, "rel": None, "rel_f32": None,
            "eager_rel_f32": None, "env": None, "wall_s": None}


def tag_of(name, batch, dtype):
    return f"{name}_b{batch}_{dtype}"


def worker(args):
    """Steps 1-4 of one run, then wait for the go-ahead and time (the module docstring)."""
    import numpy as np
    from gpu_bench import rel_l2, safe, time_ms, time_stream_ms

    name, batch, dtype = args.worker.split(":")
    batch = int(batch)
    tag = tag_of(name, batch, dtype)
    work, cuda = args.work, not args.dry_run
    dev = "cuda" if cuda else "cpu"
    end_at = args.end_at
    row = new_row(name, batch, dtype)
    rowf = os.path.join(work, tag + ".row.json")
    t_start = time.time()

    def save(stage):
        row["stage"] = stage
        row["wall_s"] = time.time() - t_start
        write_json(rowf, row)

    # strict f32, as fusec computes; tf32: TF32 on both sides (fusec --allow-tf32)
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    torch.backends.cudnn.allow_tf32 = dtype == "tf32"
    import torchvision
    try:
        import transformers
        tver = transformers.__version__
    except ImportError:
        tver = "none"
    row["env"] = ((torch.cuda.get_device_name() if cuda else "CPU") +
                  f", torch {torch.__version__}, torchvision {torchvision.__version__}, "
                  f"transformers {tver}")
    fusec, fusec_run = os.environ["FUSEC"], os.environ.get("FUSEC_RUN") or None
    fusec_env, run_env = dict(os.environ), dict(os.environ)
    for e, lib in ((fusec_env, os.environ.get("FUSEC_LIB")),
                   (run_env, os.environ.get("FUSEC_RUN_LIB"))):
        if lib:  # the bundled libraries for fusec and fusec-run only, never for torch
            e["LD_LIBRARY_PATH"] = lib + (":" + e["LD_LIBRARY_PATH"]
                                          if e.get("LD_LIBRARY_PATH") else "")

    # 1. build and export
    t0 = time.time()
    attn = args.attn
    with torch.device(dev):  # random init on the GPU: seconds less per model
        m, inputs, ins, outs = build(name, batch, dtype, args.dry_run and not args.full, attn)
    inputs = [x.to(dev) for x in inputs]
    onnx_path = os.path.join(work, tag + ".onnx")
    try:
        export(m, inputs, ins, outs, onnx_path)
    except Exception as e:
        if name not in ("bert", "gpt2", "llama") or attn == "eager":
            raise
        # (bf16 with sdpa: "ScalarType ComplexDouble is an unexpected tensor scalar
        # type" from the exporter) the same weights exported with eager attention;
        # torch keeps its sdpa kernels for the reference and the timings
        log(f"{attn} attention did not export: {type(e).__name__}: "
            + "\n".join(str(e).strip().splitlines()[:3]))
        row["notes"].append(f"exported with eager attention ({attn}: {type(e).__name__}); "
                            f"torch runs {attn}")
        m.m.set_attn_implementation("eager")
        export(m, inputs, ins, outs, onnx_path)
        m.m.set_attn_implementation(attn)
    row["params_m"] = sum(p.numel() for p in m.parameters()) / 1e6
    row["export_s"] = time.time() - t0
    log(f"exported in {row['export_s']:.1f} s ({row['params_m']:.1f} M parameters, "
        f"{os.path.getsize(onnx_path) / 1e6:.0f} MB)")
    save("exported")

    # 2. fusec compile
    plan = os.path.join(work, "plans", tag)
    cmd = [fusec, "compile", onnx_path, "-o", plan, "-j", str(args.jobs), "--no-cache",
           "--time", "-q"]
    if dtype == "tf32":
        cmd += ["--allow-tf32"]
    if args.fusec_precision and dtype == "f32":  # docs/precision.md: rel L2 vs f32 eager
        cmd += ["--precision", args.fusec_precision]
        row["notes"].append(f"fusec --precision {args.fusec_precision} (torch f32)")
    if args.fusec_3xtf32 and dtype == "f32":  # docs/tolerances.md, "--allow-3xtf32"
        cmd += ["--allow-3xtf32"]
        row["notes"].append("fusec --allow-3xtf32 (torch f32 without TF32)")
    if args.fusec_layout:  # docs/design.md, "Channels last"
        cmd += ["--layout", args.fusec_layout]
        row["notes"].append(f"fusec --layout {args.fusec_layout}")
    if args.fusec_attention:  # docs/graph-format.md, the attention op
        cmd += ["--attention", args.fusec_attention]
        row["notes"].append(f"fusec --attention {args.fusec_attention}")
    t0 = time.time()
    r = run(cmd, max(end_at - time.time() - 60, 30), fusec_env)
    secs = time.time() - t0
    log(" ".join(cmd) + "\n" + r.stdout + r.stderr)
    compiled = r.returncode == 0
    if compiled:
        row["fusec_compile_s"] = secs
    else:
        row["fusec_error"] = first_error(r.stderr + r.stdout)
        row["notes"].append(f"fusec compile exit {r.returncode}: {row['fusec_error']}")
    if cuda and not args.keep:  # (the dry run runs it on the CPU backend later)
        os.remove(onnx_path)
    ind, outd = os.path.join(work, tag, "in"), os.path.join(work, tag, "out")
    os.makedirs(ind, exist_ok=True)
    os.makedirs(outd, exist_ok=True)
    for n, x in zip(ins, inputs):  # bf16 as <f4 (exact): fusec-run widens it
        np.save(os.path.join(ind, safe(n) + ".npy"),
                x.detach().cpu().float().numpy() if x.is_floating_point() else x.cpu().numpy())
    save("fusec compiled" if compiled else "fusec failed")

    # 3. eager's outputs
    def to_np(t):
        return t.detach().float().cpu().numpy()
    with torch.no_grad():
        ref = to_np(m(*inputs))
        ref32 = None
        if dtype == "bf16":  # the same bf16 weights and inputs, computed in f32
            m32 = copy.deepcopy(m).float()
            ref32 = to_np(m32(*[x.float() if x.is_floating_point() else x for x in inputs]))
            del m32

    # 4. torch.compile, both modes; the first calls bounded
    fns = {}
    if cuda:
        for mode, key in ((None, "compile"), ("reduce-overhead", "reduce_overhead")):
            b = min(args.compile_budget, end_at - time.time() - 60)
            if b < 15:
                row["notes"].append(f"{key} skipped (deadline)")
                continue
            c = torch.compile(m, mode=mode) if mode else torch.compile(m)
            if mode == "reduce-overhead":
                def fn(*a, c=c):  # each call a new CUDA graph step, as an inference loop
                    torch.compiler.cudagraph_mark_step_begin()
                    return c(*a)
            else:
                fn = c
            t0 = time.time()
            try:
                with torch.no_grad(), budget(b):
                    for _ in range(3):  # reduce-overhead records its graph on a later call
                        fn(*inputs)
                    torch.cuda.synchronize()
                row[key + "_first_s"] = time.time() - t0
                fns[key] = fn
                log(f"torch.compile {mode or 'default'}: first calls {time.time() - t0:.1f} s")
            except OverBudget:
                row["notes"].append(f"{key} over its {b:.0f} s budget")
                log(f"torch.compile {mode or 'default'}: over its {b:.0f} s budget")
            except Exception as e:  # one mode failing is a note, not the end of the run
                msg = (str(e).strip().splitlines() or [""])[0][:150]
                row["notes"].append(f"{key}: {type(e).__name__}: {msg}")
                log(f"torch.compile {mode or 'default'} failed: {type(e).__name__}: {e}")
            save(f"{key} compiled")

    # 5. wait for the machine, then time
    save("ready")
    open(os.path.join(work, tag + ".ready"), "w").close()
    go = os.path.join(work, tag + ".go")
    while not os.path.exists(go):
        if time.time() > end_at:
            row["notes"].append("not timed (deadline)")
            save("not timed")
            return
        time.sleep(0.02)
    if compiled:
        if cuda:
            cmd = [fusec_run, plan, "--inputs", ind, "--outputs", outd, "--bench",
                   "--iters", str(args.iters), "--warmup", "5"]
        else:
            cmd = [fusec_run, plan, "--plan-only"] if fusec_run else None
        if cmd:
            r = run(cmd, 180, run_env)
            log(" ".join(cmd) + "\n" + r.stdout + r.stderr)
            if r.returncode != 0:
                row["notes"].append(f"fusec-run exit {r.returncode}: "
                                    f"{first_error(r.stderr + r.stdout)}")
            elif cuda:
                # fusec-run --bench: direct launches first ("total:", "latency:"), then
                # the plan replayed as a CUDA graph ("graph total:", "graph latency:"),
                # the runtime's default; "fusec ms" is the graph's when there is one
                def med(pat):
                    t = re.search(r"^" + pat + r": median ([0-9.]+) us", r.stdout, re.M)
                    return float(t.group(1)) / 1e3 if t else None
                row["fusec_direct"], row["fusec_direct_lat"] = med("total"), med("latency")
                g, gl = med("graph total"), med("graph latency")
                row["fusec"] = g if g is not None else row["fusec_direct"]
                row["fusec_lat"] = gl if gl is not None else row["fusec_direct_lat"]
                if row["fusec"] is None:
                    row["notes"].append("no 'total: median' from fusec-run")
                elif g is None:
                    row["notes"].append("direct launches (no CUDA graph figure)")
        if not cuda:  # dry run: the outputs from the CPU backend on the ONNX file
            cmd = [fusec, "run", onnx_path, "--backend", "cpu", "--inputs", ind,
                   "--outputs", outd]
            if args.fusec_precision and dtype == "f32":
                cmd += ["--precision", args.fusec_precision]
            if args.fusec_3xtf32 and dtype == "f32":
                cmd += ["--allow-3xtf32"]
            if args.fusec_layout:
                cmd += ["--layout", args.fusec_layout]
            if args.fusec_attention:
                cmd += ["--attention", args.fusec_attention]
            r = run(cmd, 300, fusec_env)
            if r.returncode != 0:
                row["notes"].append(f"fusec run --backend cpu exit {r.returncode}: "
                                    f"{first_error(r.stderr + r.stdout)}")
        p = os.path.join(outd, safe(outs[0]) + ".npy")
        got = np.load(p) if os.path.exists(p) else None
        if got is not None and got.shape != ref.shape:
            row["notes"].append(f"output shape {got.shape}, eager's {ref.shape}")
        elif got is not None:
            row["rel"] = rel_l2(got, ref)
            if ref32 is not None:
                row["rel_f32"], row["eager_rel_f32"] = rel_l2(got, ref32), rel_l2(ref, ref32)
        else:
            row["notes"].append("no fusec output to compare")
    save("fusec timed")
    with torch.no_grad():
        for key, fn in [("eager", m)] + list(fns.items()):
            try:
                row[key] = time_stream_ms(fn, inputs, args.iters, cuda)
                row[key + "_lat"] = time_ms(fn, inputs, args.iters, cuda)
            except Exception as e:
                msg = (str(e).strip().splitlines() or [""])[0][:150]
                row["notes"].append(f"{key} timing: {type(e).__name__}: {msg}")
    cs = [row[k] for k in ("compile", "reduce_overhead") if row[k] is not None]
    row["best"] = min(cs) if cs else None
    save("done")
    if not args.keep:
        shutil.rmtree(plan, ignore_errors=True)
        shutil.rmtree(os.path.join(work, tag), ignore_errors=True)
        if os.path.exists(onnx_path):
            os.remove(onnx_path)


def export(m, inputs, ins, outs, path):
    # not under no_grad: there nn.MultiheadAttention (torchvision's ViT) takes its fast
    # path, aten::_native_multi_head_attention, which the exporter cannot export
    torch.onnx.export(m, tuple(inputs), path, input_names=ins, output_names=outs,
                      opset_version=OPSET, do_constant_folding=True, dynamo=False)


# ---- the coordinator -----------------------------------------------------------------

def family(pid):
    """pid and its descendants (from /proc)."""
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
                kids.setdefault(ppid, []).append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += kids.get(p, [])
    return out


def signal_all(pids, sig):
    for p in pids:
        try:
            os.kill(p, sig)
        except ProcessLookupError:
            pass


def coordinate(args, configs, start, env, outdir):
    """Run every config in a worker, at most args.parallel at a time; give the machine
    to one ready worker at a time, the others stopped. Returns the rows."""
    work, logdir = args.work, args.logdir
    end_at = start + args.deadline
    rows = {tag_of(*c): new_row(*c) for c in configs}
    pending, running, stopped = list(configs), {}, []
    window = None  # (tag, since)

    def finish(tag, p, note=None):
        f = os.path.join(work, tag + ".row.json")
        if os.path.exists(f):
            with open(f) as fh:
                rows[tag] = json.load(fh)
        r = rows[tag]
        if note:
            r["notes"].append(note)
        elif p.returncode != 0:
            r["notes"].append(f"worker exit {p.returncode} at '{r['stage']}' "
                              f"(log {os.path.join(logdir, tag + '.log')})")
            try:  # the worker's last words
                with open(os.path.join(logdir, tag + ".log")) as fh:
                    tail = [ln for ln in fh.read().splitlines() if ln.strip()][-3:]
                r["notes"].append(" / ".join(tail)[-250:])
            except OSError:
                pass
        log(f"== {LABEL[r['model']]}, batch {r['batch']}, {r['dtype']}: "
            f"fusec compile {fmt(r['fusec_compile_s'], '{:.1f}')} s, "
            f"fusec {fmt(r['fusec'])} ms, eager {fmt(r['eager'])}, "
            f"compile {fmt(r['compile'])}, reduce-overhead {fmt(r['reduce_overhead'])}, "
            f"rel L2 {fmt(r['rel'], '{:.1e}')}" + (f"; {'; '.join(r['notes'])}" if r["notes"]
                                                   else "") +
            f" ({time.time() - start:.0f} s)")
        if outdir:
            write_out(outdir, [rows[tag_of(*c)] for c in configs], args, False,
                      time.time() - start)

    try:
        while pending or running:
            while pending and len(running) < args.parallel:
                if end_at - time.time() < START_RESERVE_S:
                    for c in pending:
                        rows[tag_of(*c)]["notes"].append("not run (deadline)")
                    pending = []
                    break
                c = pending.pop(0)
                tag = tag_of(*c)
                for ext in (".ready", ".go", ".row.json"):
                    if os.path.exists(os.path.join(work, tag + ext)):
                        os.remove(os.path.join(work, tag + ext))
                cmd = [sys.executable, os.path.abspath(__file__), "--worker", ":".join(map(str, c)),
                       "--work", work, "--end-at", str(end_at), "--iters", str(args.iters),
                       "--compile-budget", str(args.compile_budget), "--attn", args.attn,
                       "--jobs", str(args.jobs)] + (["--dry-run"] if args.dry_run else []) + \
                    (["--fusec-precision", args.fusec_precision] if args.fusec_precision
                     else []) + \
                    (["--fusec-layout", args.fusec_layout] if args.fusec_layout else []) + \
                    (["--fusec-3xtf32"] if args.fusec_3xtf32 else []) + \
                    (["--fusec-attention", args.fusec_attention] if args.fusec_attention
                     else []) + \
                    (["--full"] if args.full else []) + (["--keep"] if args.keep else [])
                fh = open(os.path.join(logdir, tag + ".log"), "w")
                running[tag] = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT,
                                                env=env, start_new_session=True)
                fh.close()
                log(f"   start {tag} ({time.time() - start:.0f} s)")
            for tag, p in list(running.items()):
                if p.poll() is not None:
                    del running[tag]
                    if window and window[0] == tag:
                        window = None
                        signal_all(stopped, signal.SIGCONT)
                        stopped = []
                    finish(tag, p)
            now = time.time()
            if window is None:
                ready = [t for t in running if os.path.exists(os.path.join(work, t + ".ready"))]
                if ready:
                    tag = min(ready, key=lambda t: os.path.getmtime(os.path.join(work, t + ".ready")))
                    stopped = [q for t, p in running.items() if t != tag for q in family(p.pid)]
                    signal_all(stopped, signal.SIGSTOP)
                    time.sleep(0.3)  # what the stopped ones had queued on the GPU drains
                    open(os.path.join(work, tag + ".go"), "w").close()
                    window = (tag, time.time())
            elif now - window[1] > WINDOW_S or now > end_at:
                tag = window[0]
                os.killpg(running[tag].pid, signal.SIGKILL)
                running[tag].wait()
                del running[tag]
                window = None
                signal_all(stopped, signal.SIGCONT)
                stopped = []
                finish(tag, None, f"killed: timing took over {WINDOW_S} s or passed the deadline")
            if now > end_at + 5:  # the workers stop by themselves at end_at; past that, end them
                for tag, p in list(running.items()):
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
                    del running[tag]
                    finish(tag, p, "killed at the deadline")
            time.sleep(0.05)
    finally:
        signal_all(stopped, signal.SIGCONT)
        for p in running.values():
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return [rows[tag_of(*c)] for c in configs]


# ---- the table ------------------------------------------------------------------------

COLS = ["model", "batch", "dtype", "fusec compile s", "fusec ms", "fusec latency ms",
        "fusec direct ms", "eager ms", "compile ms", "reduce-overhead ms", "fusec / best compile",
        "rel L2 vs eager", "note"]


def render(rows, iters, done, wall, dry):
    envs = sorted({r["env"] for r in rows if r.get("env")})
    lines = [f"fusec on real models ({'; '.join(envs) or 'no run finished'}): f32 without "
             f"TF32, median of {iters} calls (fusec-run and torch alike); ratio = fusec / the "
             f"faster of torch.compile default and reduce-overhead, back to back"
             + ("; DRY RUN: on the CPU, no GPU figures" if dry else ""), "",
             "| " + " | ".join(COLS) + " |",
             "|" + "|".join("---" if i < 3 or i == len(COLS) - 1 else "---:"
                            for i in range(len(COLS))) + "|"]
    for r in rows:
        rel = fmt(r["rel"], "{:.1e}")
        if r.get("rel_f32") is not None:
            rel += f" (vs f32: {fmt(r['rel_f32'], '{:.1e}')}; eager {fmt(r['eager_rel_f32'], '{:.1e}')})"
        b = r.get("best")
        ratio = None if r["fusec"] is None or not b else r["fusec"] / b
        cells = [LABEL[r["model"]], str(r["batch"]), r["dtype"],
                 fmt(r["fusec_compile_s"], "{:.1f}"), fmt(r["fusec"]), fmt(r["fusec_lat"]),
                 fmt(r.get("fusec_direct")), fmt(r["eager"]), fmt(r["compile"]), fmt(r["reduce_overhead"]),
                 "-" if ratio is None else (f"**{ratio:.2f}**" if ratio <= 1.0 else f"{ratio:.2f}"),
                 rel, "; ".join(r["notes"]).replace("|", "/")]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "ms per call, back to back (calls issued without waiting; fusec-run's "
              "`graph total`: the plan replayed as a CUDA graph, the runtime's default), "
              "except \"fusec latency\": one call at a time, the host waiting for each "
              "(`graph latency`), and \"fusec direct\": back to back with a launch per kernel "
              "(`total`; torch's one-at-a-time figures are in real_models.json). "
              + ("" if wall is None else f"Wall {wall:.0f} s.") + ("" if done else " INCOMPLETE.")]
    return "\n".join(lines)


def write_out(outdir, rows, args, done, wall):
    with open(os.path.join(outdir, "real_models.md"), "w") as fh:
        fh.write(render(rows, args.iters, done, wall, args.dry_run) + "\n")
    write_json(os.path.join(outdir, "real_models.json"),
               {"iters": args.iters, "dry_run": args.dry_run, "done": done, "wall_s": wall,
                "rows": rows})


def merge(files):
    rows, iters, dry = {}, set(), False
    for f in files:
        with open(f) as fh:
            d = json.load(fh)
        iters.add(d["iters"])
        dry = dry or d["dry_run"]
        for r in d["rows"]:  # a later file's run replaces an earlier one that did not run
            k = (r["model"], r["batch"], r["dtype"])
            if k not in rows or r.get("stage", "start") != "start":
                rows[k] = r
    key = {n: i for i, n in enumerate(ORDER)}
    out = sorted(rows.values(), key=lambda r: (key[r["model"]], r["dtype"] != "f32", -r["batch"]))
    return render(out, "/".join(map(str, sorted(iters))), True, None, dry)


# ---- main -------------------------------------------------------------------------------

def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bundle", help="folder holding fusec, fusec-run and their libraries")
    p.add_argument("--models", default=",".join(ORDER))
    p.add_argument("--batches", default="big,1")
    p.add_argument("--dtypes", default="f32,bf16")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--parallel", type=int, default=6,
                   help="runs whose export and compiles overlap (the timings never do)")
    p.add_argument("--deadline", type=float, default=540)
    p.add_argument("--compile-budget", type=float, default=240,
                   help="seconds for each torch.compile's first calls")
    p.add_argument("--attn", choices=["sdpa", "eager"], default="sdpa",
                   help="transformers attention (eager where sdpa does not export)")
    p.add_argument("--jobs", type=int, default=16, help="fusec compile -j")
    p.add_argument("--fusec-precision", choices=["bf16", "f16"],
                   help="f32 runs: fusec compiles the f32 export with --precision P, so "
                        "its rel L2 is against f32 eager (docs/precision.md)")
    p.add_argument("--fusec-3xtf32", action="store_true",
                   help="f32 runs: fusec compiles with --allow-3xtf32 (torch stays f32 "
                        "without TF32; docs/tolerances.md, \"--allow-3xtf32\")")
    p.add_argument("--fusec-layout", choices=["nchw", "nhwc"],
                   help="fusec compile --layout (convolutions channels last)")
    p.add_argument("--fusec-attention", choices=["fuse", "keep"],
                   help="fusec compile --attention (each attention as one op)")
    p.add_argument("--work", help="where the ONNX files and plans go (default: a temp dir)")
    p.add_argument("--keep", action="store_true", help="keep the ONNX files and plans")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--full", action="store_true",
                   help="with --dry-run: the real configurations and batches, on the CPU")
    p.add_argument("--merge", nargs="+", metavar="JSON")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--end-at", type=float, help=argparse.SUPPRESS)
    a = p.parse_args()
    a.models = a.models.split(",")
    bad = [m for m in a.models if m not in ORDER]
    if bad:
        p.error(f"unknown model(s) {','.join(bad)}; known: {','.join(ORDER)}")
    a.dtypes = a.dtypes.split(",")
    if any(d not in ("f32", "tf32", "bf16") for d in a.dtypes):
        p.error("--dtypes takes f32, tf32 (f32 with TF32 on both sides) and bf16")
    a.batches = a.batches.split(",")
    if any(b != "big" and not b.isdigit() for b in a.batches):
        p.error("--batches takes 'big' and numbers")
    return a


def main():
    start = time.time()
    args = parse()
    if args.merge:
        table = merge(args.merge)
        print(table)
        if os.environ.get("OUT"):
            with open(os.path.join(os.environ["OUT"], "real_models.md"), "w") as fh:
                fh.write(table + "\n")
        return
    if args.worker:
        return worker(args)
    if not args.dry_run and not torch.cuda.is_available():
        sys.exit("real_models.py: no CUDA device (--dry-run checks the logic without one)")
    bundle = os.path.abspath(args.bundle) if args.bundle else None
    fusec = os.environ.get("FUSEC") or (bundle and os.path.join(bundle, "fusec"))
    if not fusec or not os.path.exists(fusec):
        sys.exit("real_models.py: no fusec: give --bundle T (T/fusec) or FUSEC=PATH")
    fusec = os.path.abspath(fusec)
    fusec_run = os.environ.get("FUSEC_RUN") or os.path.join(bundle or os.path.dirname(fusec),
                                                             "fusec-run")
    if not os.path.exists(fusec_run):
        if not args.dry_run:
            sys.exit(f"real_models.py: no {fusec_run}")
        fusec_run = ""
    env = dict(os.environ, FUSEC=fusec, FUSEC_RUN=os.path.abspath(fusec_run) if fusec_run else "",
               FUSEC_LIB=os.environ.get("FUSEC_LIB") or bundle or "",
               # fusec-run wants libcjson (and libcrypto) too: T, and T/extra where set
               FUSEC_RUN_LIB=os.environ.get("FUSEC_LIB") or bundle or
               os.path.dirname(fusec_run or fusec),
               PYTHONUNBUFFERED="1")
    ncpu = len(os.sched_getaffinity(0))
    if args.dry_run:
        args.jobs = min(args.jobs, ncpu)
        args.parallel = min(args.parallel, 2)
    # inductor's compile pool in each worker: the cores shared among them, not each all
    env.setdefault("TORCHINDUCTOR_COMPILE_THREADS", str(max(4, ncpu // 2)))
    outdir = os.environ.get("OUT")
    temp = not args.work
    args.work = os.path.abspath(args.work) if args.work else tempfile.mkdtemp(prefix="real_models_")
    os.makedirs(os.path.join(args.work, "plans"), exist_ok=True)
    args.logdir = os.path.join(outdir, "real_models_logs") if outdir else \
        os.path.join(args.work, "logs")
    os.makedirs(args.logdir, exist_ok=True)
    configs = []
    for name in [n for n in ORDER if n in args.models]:
        for dtype in args.dtypes:
            for b in args.batches:
                batch = 1 if args.dry_run and not args.full else BIG[name] if b == "big" \
                    else int(b)
                if (name, batch, dtype) not in configs:
                    configs.append((name, batch, dtype))
    log(f"real_models: {len(configs)} runs, {args.parallel} at a time, deadline "
        f"{args.deadline:.0f} s; fusec {fusec}; work {args.work}; logs {args.logdir}")
    rows = coordinate(args, configs, start, env, outdir)
    table = render(rows, args.iters, True, time.time() - start, args.dry_run)
    print("\n" + table, flush=True)
    if outdir:
        write_out(outdir, rows, args, True, time.time() - start)
    if temp and not args.keep:  # the ONNX files and plans went after each run
        shutil.rmtree(os.path.join(args.work, "plans"), ignore_errors=True)


if __name__ == "__main__":
    main()
