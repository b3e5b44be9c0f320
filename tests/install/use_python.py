"""use_python.py GRAPH OUT: the installed fusec package (lib/python; ctypes over
libfusec.so and libfusecrt.so) compiles a YAML graph from a string and from GRAPH,
gets the structured error of a bad graph, runs the first on the host (fusec_run),
explains an op and loads the plan (a session on the stand-in driver in
tests/cli/t_install.sh). Prints what use_compiler.c prints for the same steps;
exits 1 on a surprise."""
import ctypes
import sys

import fusec

GRAPH = """format: fusec-graph/1
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


def show(r):
    print(f"compiled {r.name}: {r.ops} ops, {r.launches} launches, {r.kernels} kernels, "
          f"{r.bytes_moved:.0f} bytes moved")
    for f in r.files:
        print(f"  file {f}")


graph, out = sys.argv[1], sys.argv[2]
print(fusec.version())
r = fusec.compile_bytes(GRAPH, "axpy.yaml", out_dir=out + "/str")
show(r)
plan = r.data(0)
print("plan in memory:", "yes" if plan and plan.endswith(b"\n") else "no")
# the graph on the host (fusec_run), with ctypes buffers: the package's Plan.run
# needs numpy, this test does not
x = (ctypes.c_float * 256)(*range(256))
y = (ctypes.c_float * 256)(*([1.0] * 256))
zc, zi = (ctypes.c_float * 256)(), (ctypes.c_float * 256)()
addr = ctypes.addressof
r.run([addr(x), addr(y)], [addr(zc)], fusec.compiler.RUN_CPU)
r.run([addr(x), addr(y)], [addr(zi)], fusec.compiler.RUN_INTERP)
zn, dt, shape, nbytes = r.outputs[0]
print(f"host run: {len(r.inputs)} inputs, output {zn} {dt}[{shape[0]}] of {nbytes} bytes, "
      f"{zn}[5] = {zc[5]:g}, cpu = interp: {'yes' if bytes(zc) == bytes(zi) else 'no'}")
show(fusec.compile_file(graph, out_dir=out + "/file"))
try:
    fusec.compile_bytes(BAD, "typo.yaml")
    sys.exit(1)
except fusec.Error as e:
    print(f"bad graph: refused, code {e.code}, {e.file}:{e.line}:{e.column}: {e.message}")
r = fusec.compile_bytes(GRAPH, "axpy.yaml", precision="bf16")
says = "yes" if b'"precision":"bf16"' in r.data(0) else "no"
print(f"bf16: {r.ops} ops, plan says bf16: {says}")
try:
    fusec.compile_bytes(GRAPH, "axpy.yaml", arch="sm_100")
    sys.exit(1)
except fusec.Error as e:
    print(f"bad arch: code {e.code}: {e.message[:40]}")
print("explain:", fusec.explain(graph, op=0).split("\n")[0])
p = fusec.RtPlan(out + "/file")
s = p.session(0)
print(f"plan loaded: arch {s.arch}, {len(p.inputs)} inputs, {len(p.outputs)} outputs")
s.close()
