"""check_fusec.py FUSEC TMP: the Python package (lib/python/fusec) on the cpu
backend, against `fusec run --backend interp` (tests/cli/t_python.sh). Each check
prints "ok NAME" or "FAIL NAME: why"; the cpu backend's outputs must lie within
the interpreter's error bounds (NAME.bound.npy, docs/tolerances.md), the
package's interpreter must equal fusec run's exactly."""
import os
import subprocess
import sys
import time

import numpy as np

import fusec

FUSEC, TMP = sys.argv[1], sys.argv[2]
failed = 0

AXPY = """format: fusec-graph/1
name: axpy
inputs:
  x: {dtype: f32, shape: [256]}
  y: {dtype: f32, shape: [256]}
ops:
  - {op: mul_scalar, in: [x], scalar: 2.0, out: ax}
  - {op: add, in: [ax, y], out: z}
outputs: [z]
"""

BAD = """format: fusec-graph/1
inputs:
  x: {dtype: f32, shape: [4, 4]}
ops:
  - {op: relu, inn: [x], out: y}
outputs: [y]
"""


def ok(name, cond, why=""):
    global failed
    print(f"ok {name}" if cond else f"FAIL {name}: {why}")
    failed += not cond


def reference(name, graph, plan, inputs):
    """fusec run --backend interp on the same inputs (.npy): values and bounds."""
    d = os.path.join(TMP, name)
    os.makedirs(d + "/in", exist_ok=True)
    for (n, _, _), a in zip(plan.inputs, inputs):
        np.save(f"{d}/in/{n}.npy", a)
    subprocess.run([FUSEC, "run", graph, "--backend", "interp", "--inputs", d + "/in",
                    "--outputs", d + "/out"], check=True, stdout=subprocess.DEVNULL)
    return [(np.load(f"{d}/out/{n}.npy"), np.load(f"{d}/out/{n}.bound.npy"))
            for n, _, _ in plan.outputs]


def compare(name, graph, plan, inputs):
    ref = reference(name, graph, plan, inputs)
    t = time.time()
    cpu = plan.run(*inputs)
    dt = time.time() - t
    cpu = cpu if isinstance(cpu, tuple) else (cpu,)
    interp = plan.run(*inputs, backend="interp")
    interp = interp if isinstance(interp, tuple) else (interp,)
    for (n, dtype, shape), c, i, (want, bound) in zip(plan.outputs, cpu, interp, ref):
        ok(f"{name}-{n}-kind", isinstance(c, np.ndarray) and c.dtype == want.dtype and
           c.shape == want.shape, f"{type(c)} {getattr(c, 'dtype', '')} {getattr(c, 'shape', '')}")
        err = np.abs(c.astype(np.float64) - want.astype(np.float64))
        ok(f"{name}-{n}-cpu-within-bound", bool(np.all(err <= bound)),
           f"max err {err.max():.3g}, worst err/bound {np.max(err / np.maximum(bound, 1e-300)):.3g}")
        ok(f"{name}-{n}-interp-exact", np.array_equal(i, want), f"max diff {np.abs(i - want).max()}")
    return cpu, dt


rng = np.random.default_rng(7)

# a YAML graph from a path, and graph text
graph = "docs/examples/reuse.yaml"
plan = fusec.compile(graph)
ins = [rng.uniform(-1, 1, s).astype(fusec.numpy_dtype(d)) for _, d, s in plan.inputs]
ok("yaml-inputs", plan.inputs == [(n, "f32", (64, 64)) for n in "abc"], str(plan.inputs))
y, _ = compare("yaml", graph, plan, ins)

p2 = fusec.compile(AXPY, os.path.join(TMP, "axpy"))
x, yy = rng.standard_normal(256, np.float32), rng.standard_normal(256, np.float32)
ok("text-files", os.path.exists(os.path.join(TMP, "axpy", "axpy.plan.json")) and
   os.path.exists(os.path.join(TMP, "axpy", "source", "graph.yaml")), str(os.listdir(TMP + "/axpy")))
ok("text-axpy", np.array_equal(p2.run(x, yy), 2 * x + yy), "z != 2x + y")

# 3xTF32: on by default (the plan's options say so), off with allow_3xtf32=False
for nm, kw, want in (("x3-default", {}, True), ("x3-on", {"allow_3xtf32": True}, True),
                     ("x3-off", {"allow_3xtf32": False}, False)):
    d = os.path.join(TMP, nm)
    fusec.compile(AXPY, d, **kw)
    with open(os.path.join(d, "axpy.plan.json")) as f:
        got = '"allow_3xtf32":true' in f.read()
    ok(nm, got == want, f"allow_3xtf32 in the plan: {got}, want {want}")
# the C struct takes -1, 0 or 1 only: 2 is refused, not read as "on"
import ctypes
from fusec import compiler as _fc
o, keep = _fc._options()
o.allow_3xtf32 = 2
e = _fc._Error()
h = _fc._compiler().fusec_compile_bytes(b"axpy.yaml", AXPY.encode(), len(AXPY), ctypes.byref(o),
                                        None, ctypes.byref(e))
try:
    e.raise_()
    ok("x3-range", False, f"compiled: {h}")
except fusec.Error as err:
    ok("x3-range", not h and err.code == 2 and "allow_3xtf32 -1, 0 or 1" in err.message,
       f"{h} {err.code} {err.message}")

# named dims bound through input_shapes (docs/graph-format.md, "Named dims")
NAMED = AXPY.replace("[256]", "[n]").replace("name: axpy", "name: axpy_n")
p3 = fusec.compile(NAMED, input_shapes={"x": [100]})
x3, y3 = rng.standard_normal(100, np.float32), rng.standard_normal(100, np.float32)
ok("named-dims", p3.inputs == [("x", "f32", (100,)), ("y", "f32", (100,))] and
   np.array_equal(p3.run(x3, y3), 2 * x3 + y3), str(p3.inputs))

# an ONNX model from its bytes: BERT (i64 ids and mask), and GPT-2 from its path
ids = np.array([[3, 14, 15, 92, 65, 35, 89, 79, 32, 38, 46, 26, 43, 38, 32, 79]], np.int64)
mask = np.ones((1, 16), np.int64)
t = time.time()
with open("tests/onnx/models/bert/model.onnx", "rb") as f:
    bert = fusec.compile(f.read(), name="bert")
ok("onnx-bert-inputs", [(n, d) for n, d, _ in bert.inputs] ==
   [("input_ids", "i64"), ("attention_mask", "i64")], str(bert.inputs))
out, dt = compare("bert", "tests/onnx/models/bert/model.onnx", bert, [ids, mask])
print(f"bert: compile {time.time() - t - dt:.2f} s, cpu run {dt * 1e3:.1f} ms")
gpt2 = fusec.compile("tests/onnx/models/gpt2/model.onnx")
gin = [rng.integers(0, 64, s).astype(fusec.numpy_dtype(d)) if d == "i64" else
       rng.uniform(0, 1, s).astype(fusec.numpy_dtype(d)) for _, d, s in gpt2.inputs]
compare("gpt2", "tests/onnx/models/gpt2/model.onnx", gpt2, gin)

# errors carry the diagnostic and its position
try:
    fusec.compile(BAD)
    ok("error-raised", False, "no exception")
except fusec.Error as e:
    ok("error-fields", (e.code, e.file, e.line, e.column) == (1, "graph.yaml", 5, 16) and
       "unknown key 'inn'" in e.message, f"{e.code} {e.file}:{e.line}:{e.column}: {e.message}")
    ok("error-str", str(e).startswith("graph.yaml:5:16: ops[0]: unknown key 'inn'"), str(e))
try:
    plan.run(ins[0], ins[1], ins[2].astype(np.float64))
    ok("error-dtype", False, "no exception")
except fusec.Error as e:
    ok("error-dtype", "dtype float64" in e.message, e.message)
try:
    plan.run(ins[0], ins[1])
    ok("error-count", False, "no exception")
except fusec.Error as e:
    ok("error-count", "3 inputs, 2 given" in e.message, e.message)

# save and load: the same files, the same outputs
saved = os.path.join(TMP, "saved")
bert.save(saved)
back = fusec.load(saved)
ok("load-name", back.name == "bert" and back.inputs == bert.inputs, f"{back.name} {back.inputs}")
again = back.run(ids, mask)
ok("load-same", all(np.array_equal(a, b) for a, b in zip(again, out)), "outputs differ")
ok("load-files", sorted(os.listdir(saved)) == sorted(bert.files + ["fusec-python.json", "source"]),
   str(os.listdir(saved)))

# a plan that fusec compile wrote: loaded by the runtime alone (its inputs and
# outputs from the plan file); numpy runs need the graph, which it lacks
cli = os.path.join(TMP, "cli")
subprocess.run([FUSEC, "compile", "tests/onnx/models/bert/model.onnx", "-o", cli, "-q"],
               check=True, stdout=subprocess.DEVNULL)
lp = fusec.load(cli)
ok("load-cli-plan", (lp.name, lp.inputs, lp.outputs, lp.source) ==
   ("model", bert.inputs, bert.outputs, None), f"{lp.name} {lp.inputs} {lp.outputs} {lp.source}")
try:
    lp.run(ids, mask)
    ok("load-cli-no-graph", False, "no exception")
except fusec.Error as e:
    ok("load-cli-no-graph", "without its graph" in e.message, e.message)

# a plan for every size (an ONNX model with dim_params): its dims, None where the
# inputs' and outputs' shapes follow them, bound to sizes by the runtime, refused
# outside their ranges
every = os.path.join(TMP, "every")
subprocess.run([FUSEC, "compile", "tests/onnx/dynamic/heads.onnx", "-o", every, "-q",
                "--dims", "batch=1..8,seq=1..64"], check=True, stdout=subprocess.DEVNULL)
ep = fusec.load(every)
ok("every-load", (ep.dims, ep.inputs, ep.outputs) ==
   ([("batch", 1, 8), ("seq", 1, 64)], [("x", "f32", (None, None, 16))],
    [("y", "f32", (None, None, 16))]), f"{ep.dims} {ep.inputs} {ep.outputs}")
er = fusec.RtPlan(every)
er.bind({"x": (3, 5, 16)})
ok("every-bind", er.tensor("y") == ("f32", [3, 5, 16], 960), str(er.tensor("y")))
try:
    er.bind({"x": (3, 65, 16)})
    ok("every-range", False, "no exception")
except fusec.Error as e:
    ok("every-range", "'seq' = 65 is outside the plan's range 1..64" in e.message, e.message)

# a torch.nn.Module through torch.onnx.export, where torch is installed (not in CI)
try:
    import torch
except ImportError:
    torch = None
    print("skip torch-module: no torch")
if torch is not None:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8),
                              torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(8 * 8 * 8, 10))
    net.eval()
    xt = torch.randn(2, 3, 8, 8)
    tp = fusec.compile(net, example_inputs=(xt,))
    with torch.no_grad():
        want = net(xt).numpy()
    got = tp.run(xt.numpy())
    err = float(np.linalg.norm(got - want) / np.linalg.norm(want))
    ok("torch-module", tp.inputs == [("input", "f32", (2, 3, 8, 8))] and
       tp.outputs == [("output", "f32", (2, 10))] and err < 1e-5 and not net.training,
       f"{tp.inputs} {tp.outputs} rel L2 {err:.2e} training {net.training}")

# explain: the decisions as data
ex = plan.explain()
ok("explain-format", ex.get("format") == "fusec-explain/1", str(ex.get("format")))
ok("explain-ops", isinstance(ex.get("ops"), list) and len(ex["ops"]) > 0, str(ex)[:200])
ex0 = back.explain(op=0)
ok("explain-op", len(ex0["ops"]) == 1, str(ex0)[:200])

# the runtime on the stand-in driver (FUSEC_LIBCUDA, tests/runtime/fakecuda.c):
# a run queued on a stream the caller names computes what a plain run does
if os.environ.get("FUSEC_LIBCUDA"):
    rp = fusec.RtPlan("tests/runtime/axpb.plan.json")
    s = rp.session(0)
    vals = {n: rng.uniform(0, 1, (1000, 37)).astype(np.float32) for n in rp.inputs}
    for n, v in vals.items():
        s.set_input(n, v.tobytes())
    s.run()
    want = [s.get_output(n) for n in rp.outputs]
    y = np.frombuffer(want[0], np.float32)
    ok("runtime-run", y.size == 37000 and np.isfinite(y).all(), "bad y")
    for n in rp.outputs:   # overwrite the outputs, then run on the legacy stream
        s.set_input(n, b"\0" * rp.tensor(n)[2])
    s.run_async(0)
    ok("runtime-run-async", [s.get_output(n) for n in rp.outputs] == want, "outputs differ")
    s.close()

print(f"python: {failed} failed")
sys.exit(1 if failed else 0)
