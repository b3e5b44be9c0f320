#!/usr/bin/env python3
"""The Python package's CUDA path on a GPU: a plan run on torch CUDA tensors through
libfusecrt.so alone, checked against torch eager and timed beside fusec-run.

usage: python_cuda.py --bundle T [--onnx M.onnx] [--plan-dir P] [--iters N]
                      [--work DIR] [--jobs N] [--attn sdpa|eager] [--tiny]

T is real_models.sh's bundle (README.md: fusec, the static build, fusec-run and the
libraries they need) with libfusecrt.so and the package (T/python/fusec) added; the
machine needs no LLVM, for only the runtime is opened from Python. The steps, each
printing one line (a failure prints why and the script goes on):
 1. BERT-base (real_models.py's: transformers BertModel from its config, random
    weights, no pooler), batch 1, sequence 128, f32, built on the GPU and exported
    with real_models.export (the TorchScript exporter, opset 17), unless --onnx
    names that export already made;
 2. `T/fusec compile M.onnx -o PLAN -j JOBS --no-cache -q` (the static binary; the
    Python compile API needs libfusec.so, which needs LLVM), unless --plan-dir
    names the plan;
 3. fusec.load(PLAN) and Plan.run(ids, mask) on CUDA tensors, on torch's current
    stream: rel L2 = |fusec - eager| / |eager|, for the default run (inputs copied
    into the Plan's bound tensors, outputs copied out) and zero_copy=True;
 4. timings with CUDA events after 10 warm-up calls, N calls: "latency" = median of
    one call at a time (the host waits for each), "back to back" = the mean per
    call of N calls issued without waiting; for Plan.run, Plan.run(out=...),
    Plan.run(zero_copy=True, out=...) and torch eager;
 5. `T/fusec-run PLAN --bench --iters N --warmup 5`: its "graph total" and "graph
    latency" medians (the plan replayed as a CUDA graph), and Plan.run over them;
 6. fusec.compile(module, example_inputs) when libfusec.so loads (not on a machine
    without LLVM: then a line says it was skipped).
f32 with TF32 off on both sides. --tiny: real_models.py's tiny BERT (2 layers,
width 64, sequence 16), to check the script quickly; without a GPU it does steps
1, 2 and 6 and says why the others did not run.

    PYTHONPATH=T/python python3 tests/bench/models/python_cuda.py --bundle T --iters 50
"""
import argparse
import ctypes
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))


def log(*a):
    print(*a, flush=True)


def fail(step, e):
    log(f"FAIL {step}: {type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}")
    traceback.print_exc(limit=3, file=sys.stdout)


def parse():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bundle", help="fusec, fusec-run, libfusecrt.so, python/fusec "
                   "(default: this tree's build/ and lib/python)")
    p.add_argument("--onnx", help="BERT already exported (the same seed: the same weights)")
    p.add_argument("--plan-dir", help="the plan already compiled from it")
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--work", help="ONNX file and plan (default a temporary folder)")
    p.add_argument("--jobs", type=int, default=16)
    p.add_argument("--attn", default="sdpa", choices=["sdpa", "eager"])
    p.add_argument("--tiny", action="store_true", help="real_models.py's tiny BERT")
    return p.parse_args()


def setup(bundle):
    """The package and its runtime from the bundle: T/python on sys.path,
    FUSEC_LIBDIR=T, and the libraries libfusecrt.so needs beyond that machine's
    (libcjson.so.1; libcrypto.so.3 in T/extra) opened first, globally, since the
    dynamic loader reads LD_LIBRARY_PATH only when python starts. Returns the
    environment for fusec and fusec-run (LD_LIBRARY_PATH with T)."""
    libdirs = [bundle, os.path.join(bundle, "extra")]
    pkg = os.path.join(bundle, "python")
    sys.path.insert(0, pkg if os.path.isdir(os.path.join(pkg, "fusec"))
                    else os.path.join(ROOT, "lib", "python"))
    if os.path.exists(os.path.join(bundle, "libfusecrt.so")):
        os.environ["FUSEC_LIBDIR"] = bundle
    for so in ("libcjson.so.1", "libcrypto.so.3"):
        try:
            ctypes.CDLL(so, mode=ctypes.RTLD_GLOBAL)
        except OSError:
            for d in libdirs:
                if os.path.exists(os.path.join(d, so)):
                    ctypes.CDLL(os.path.join(d, so), mode=ctypes.RTLD_GLOBAL)
                    break
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = ":".join([d for d in libdirs if os.path.isdir(d)] +
                                      ([env["LD_LIBRARY_PATH"]] if env.get("LD_LIBRARY_PATH")
                                       else []))
    return env


def rel_l2(a, b):
    import numpy as np
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def latency_ms(torch, fn, iters):
    """Median of one call at a time between CUDA events, the host waiting for each."""
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts)


def back_to_back_ms(torch, fn, iters, batches=5):
    """Calls issued without waiting between two CUDA events: the median over
    `batches` of the mean per call (fusec-run's "total")."""
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    per, ts = max(iters // batches, 1), []
    for _ in range(batches):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(per):
            fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) / per)
    return statistics.median(ts)


def main():
    args = parse()
    bundle = os.path.abspath(args.bundle) if args.bundle else os.path.join(ROOT, "build")
    env = setup(bundle)
    fusec_bin = os.path.join(bundle, "fusec")
    fusec_run = os.path.join(bundle, "fusec-run")
    import numpy as np
    import torch
    sys.path.insert(0, HERE)
    import real_models as rm
    import fusec
    log(f"fusec package {os.path.dirname(fusec.__file__)}; FUSEC_LIBDIR "
        f"{os.environ.get('FUSEC_LIBDIR', '(unset)')}")
    cuda = torch.cuda.is_available()
    dev = "cuda" if cuda else "cpu"
    log(f"torch {torch.__version__}, " + (torch.cuda.get_device_name() if cuda else "no CUDA device"))
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    work = os.path.abspath(args.work) if args.work else tempfile.mkdtemp(prefix="python_cuda_")
    os.makedirs(work, exist_ok=True)
    res = {}

    # 1. the model and its export
    t0 = time.time()
    with torch.device(dev):
        m, inputs, ins, outs = rm.build("bert", 1, "f32", args.tiny, args.attn)
    inputs = [x.to(dev) for x in inputs]
    with torch.no_grad():
        ref = m(*inputs)
    log(f"model: BERT{' (tiny)' if args.tiny else '-base'}, {args.attn} attention, inputs "
        + ", ".join(f"{n} {tuple(x.shape)} {x.dtype}" for n, x in zip(ins, inputs))
        + f"; built in {time.time() - t0:.1f} s")
    onnx_path = args.onnx or os.path.join(work, "bert.onnx")
    if not args.onnx and not args.plan_dir:
        t0 = time.time()
        try:
            rm.export(m, inputs, ins, outs, onnx_path)
            log(f"export: {onnx_path}, {os.path.getsize(onnx_path) / 1e6:.0f} MB, "
                f"{time.time() - t0:.1f} s")
        except Exception as e:
            fail("export", e)

    # 2. fusec compile through the bundle's binary
    plan_dir = args.plan_dir or os.path.join(work, "plan")
    if not args.plan_dir:
        cmd = [fusec_bin, "compile", onnx_path, "-o", plan_dir, "-j", str(args.jobs),
               "--no-cache", "-q"]
        t0 = time.time()
        try:
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
            log(f"compile: exit {r.returncode}, {time.time() - t0:.1f} s: {' '.join(cmd)}")
            if r.returncode != 0:
                log((r.stdout + r.stderr).strip()[-2000:])
        except Exception as e:
            fail("compile", e)

    # 3. load with the runtime alone, run on CUDA tensors, compare
    plan = None
    try:
        t0 = time.time()
        plan = fusec.load(plan_dir)
        log(f"load: {plan!r}, {time.time() - t0:.2f} s; inputs {plan.inputs}; outputs "
            f"{plan.outputs}")
    except Exception as e:
        fail("load", e)
    want = ref.float().cpu().numpy()
    out = None
    if plan is not None and cuda:
        for label, kw in (("run", {}), ("run zero_copy", {"zero_copy": True})):
            try:
                got = plan.run(*inputs, **kw)
                torch.cuda.synchronize()
                res[label] = rel_l2(got.float().cpu().numpy(), want)
                log(f"{label}: rel L2 vs eager {res[label]:.2e}, output {tuple(got.shape)} "
                    f"{got.dtype} on {got.device}")
            except Exception as e:
                fail(label, e)
        try:
            on, why = plan.session.graph()
            log(f"session: arch {plan.session.arch}, CUDA graph {'on' if on else 'off: ' + why}")
        except Exception as e:
            fail("session", e)
    elif plan is not None:
        log("run: skipped (no CUDA device)")

    # 4. timings
    if plan is not None and cuda:
        out = torch.empty_like(ref)
        fns = [("Plan.run", lambda: plan.run(*inputs)),
               ("Plan.run(out=)", lambda: plan.run(*inputs, out=out)),
               ("Plan.run(zero_copy, out=)", lambda: plan.run(*inputs, zero_copy=True, out=out))]
        with torch.no_grad():
            fns.append(("torch eager", lambda: m(*inputs)))
            for label, fn in fns:
                try:
                    lat = latency_ms(torch, fn, args.iters)
                    b2b = back_to_back_ms(torch, fn, args.iters)
                    res[label] = (lat, b2b)
                    log(f"time {label}: latency {lat:.3f} ms, back to back {b2b:.3f} ms "
                        f"(median of {args.iters})")
                except Exception as e:
                    fail(f"time {label}", e)
        if "run zero_copy" in res:   # the outputs of the timed runs, still right?
            try:
                res["after"] = rel_l2(out.float().cpu().numpy(), want)
                log(f"after timing: rel L2 of Plan.run(zero_copy, out=) {res['after']:.2e}")
            except Exception as e:
                fail("after timing", e)

    # 5. fusec-run --bench on the same plan
    if cuda and os.path.exists(plan_dir):
        cmd = [fusec_run, plan_dir, "--bench", "--iters", str(args.iters), "--warmup", "5"]
        try:
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
            if r.returncode != 0:
                log(f"fusec-run: exit {r.returncode}: {(r.stdout + r.stderr).strip()[-1500:]}")

            def med(pat):
                t = re.search(r"^" + pat + r": median ([0-9.]+) us", r.stdout, re.M)
                return float(t.group(1)) / 1e3 if t else None
            fr = {k: med(k) for k in ("total", "latency", "graph total", "graph latency")}
            log("fusec-run --bench: " + ", ".join(
                f"{k} {v:.3f} ms" if v is not None else f"{k} -" for k, v in fr.items()))
            if fr["graph total"] is None and fr["total"] is None:
                log(r.stdout[-1500:])
            g_lat = fr["graph latency"] or fr["latency"]
            g_b2b = fr["graph total"] or fr["total"]
            for label in ("Plan.run", "Plan.run(out=)", "Plan.run(zero_copy, out=)",
                          "torch eager"):
                if label in res and g_lat and g_b2b:
                    lat, b2b = res[label]
                    log(f"ratio {label} / fusec-run (graph): latency {lat / g_lat:.2f}x, "
                        f"back to back {b2b / g_b2b:.2f}x")
        except Exception as e:
            fail("fusec-run", e)
    elif not cuda:
        log("fusec-run --bench: skipped (no CUDA device)")

    # 6. fusec.compile on the module: only where libfusec.so loads
    try:
        fusec.version()
        have_compiler = True
    except fusec.Error as e:
        have_compiler = False
        log(f"fusec.compile(module): skipped: {e.message.split(';')[0]}")
    if have_compiler:
        try:
            t0 = time.time()
            cm = m.to("cpu") if not cuda else m
            p2 = fusec.compile(cm, example_inputs=tuple(inputs), out_dir=os.path.join(work, "py"),
                               jobs=args.jobs)
            log(f"fusec.compile(module): {p2!r}, {time.time() - t0:.1f} s; inputs {p2.inputs}")
            if cuda:
                got = p2.run(*inputs)
                torch.cuda.synchronize()
            else:
                got = torch.from_numpy(p2.run(*[x.numpy() for x in inputs]))
            log(f"fusec.compile(module).run: rel L2 vs eager "
                f"{rel_l2(got.float().cpu().numpy(), want):.2e}")
        except Exception as e:
            fail("fusec.compile(module)", e)
    log(f"work folder {work}")


if __name__ == "__main__":
    main()
