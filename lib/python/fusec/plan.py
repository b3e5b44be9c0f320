"""plan.py: fusec's Python API: compile a graph, explain it, run it on numpy arrays
(the cpu backend) or torch CUDA tensors (the plan through fusecrt), save and load.

    plan = fusec.compile("model.onnx", input_shapes={"input_ids": [1, 128]})
    plan.explain()                      # the decisions, as data (fusec-explain/1)
    y = plan.run(x)                     # numpy in, numpy out (backend="cpu")
    plan.save("out"); plan = fusec.load("out")

A Plan keeps its compiled files (the plan, PTX, weights) in a folder: out_dir, or a
private temporary one removed with the Plan. It also keeps the graph's source, which
the cpu backend and explain() compile again from (the cpu backend runs kernels built
for the host, not the PTX). docs/python.md."""
import json
import os
import shutil
import tempfile

from .compiler import RUN_CPU, RUN_INTERP, Error, compile_bytes, compile_file, explain as _explain

META = "fusec-python.json"   # what load() reads back: the source and the options

# fusec dtypes as numpy's; bf16 is ml_dtypes.bfloat16 when ml_dtypes is installed,
# else its 16-bit patterns as uint16 (docs/python.md).
_NUMPY = {"f64": "float64", "f32": "float32", "f16": "float16", "i64": "int64",
          "i32": "int32", "i16": "int16", "i8": "int8", "u8": "uint8", "bool": "bool"}


def numpy_dtype(name):
    import numpy as np
    if name == "bf16":
        try:
            import ml_dtypes
            return np.dtype(ml_dtypes.bfloat16)
        except ImportError:
            return np.dtype("uint16")
    return np.dtype(_NUMPY[name])


def _torch_dtype(name):
    import torch
    return {"f64": torch.float64, "f32": torch.float32, "f16": torch.float16,
            "bf16": torch.bfloat16, "i64": torch.int64, "i32": torch.int32,
            "i16": torch.int16, "i8": torch.int8, "u8": torch.uint8, "bool": torch.bool}[name]


def _source(source, work, name, example_inputs, export_options):
    """Where source's graph is: (path, None) for a path, or (file name, bytes) for
    graph text, ONNX bytes and a torch.nn.Module (exported into work)."""
    if isinstance(source, os.PathLike):
        return os.fspath(source), None
    if isinstance(source, (bytes, bytearray, memoryview)):
        return (name or "model") + ".onnx", bytes(source)
    if isinstance(source, str):
        text = source.lstrip().startswith("{")
        if "\n" not in source and not text:
            if not os.path.exists(source):
                raise Error(1, source, 0, 0, "no such file (a source string without a "
                            "newline is taken for a path)")
            return source, None
        return (name or "graph") + (".json" if text else ".yaml"), source.encode()
    try:
        import torch
    except ImportError:
        raise TypeError("fusec.compile: source is a path, graph text (str), ONNX bytes or "
                        "a torch.nn.Module (torch is not installed)") from None
    if not isinstance(source, torch.nn.Module):
        raise TypeError(f"fusec.compile: cannot compile a {type(source).__name__}")
    if example_inputs is None:
        raise TypeError("fusec.compile: a torch.nn.Module needs example_inputs")
    if not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    path = os.path.join(work, (name or "model") + ".onnx")
    # what tests/bench/models/real_models.py exports with: the TorchScript exporter,
    # opset 17, constants folded, static shapes; not under no_grad (there
    # nn.MultiheadAttention takes a fast path the exporter cannot export)
    kw = {"opset_version": 17, "do_constant_folding": True}
    if "dynamo" in torch.onnx.export.__code__.co_varnames:
        kw["dynamo"] = False
    kw.update(export_options or {})
    torch.onnx.export(source, tuple(example_inputs), path, **kw)
    with open(path, "rb") as f:
        return os.path.basename(path), f.read()


def compile(source, out_dir=None, *, name=None, example_inputs=None, export_options=None,
            **options):
    """Compile source into a Plan. source: a path (JSON, YAML or ONNX), graph text
    (str with a newline, or JSON), ONNX bytes, or a torch.nn.Module with
    example_inputs (exported by torch.onnx.export, export_options passed on); name
    stands for text and bytes in messages ("graph.yaml", "model.onnx"). The files go
    into out_dir (created), else a temporary folder; graph text and bytes are kept
    there beside the plan. Options are those of fusec_options: arch="sm_90a",
    allow_tf32, burn_exact, max_blocks, input_shapes={"x": [1, 128]},
    precision="bf16", keep_f32, jobs, cache_dir, ..."""
    tmp = None
    if out_dir is None:
        tmp = out_dir = tempfile.mkdtemp(prefix="fusec-")
    else:
        os.makedirs(out_dir, exist_ok=True)
    try:
        path, data = _source(source, out_dir, name, example_inputs, export_options)
        if data is None:
            result = compile_file(path, out_dir=out_dir, **options)
            src = os.path.abspath(path)
        else:
            result = compile_bytes(data, path, out_dir=out_dir, **options)
            src = os.path.join("source", path)   # the same stem: the same graph name
            os.makedirs(os.path.join(out_dir, "source"), exist_ok=True)
            with open(os.path.join(out_dir, src), "wb") as f:
                f.write(data)
        with open(os.path.join(out_dir, META), "w") as f:
            json.dump({"source": src, "options": options}, f, indent=1)
    except BaseException:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    return Plan(out_dir, result, tmp)


def load(path):
    """The Plan that save() (or compile with out_dir) left in folder path."""
    return Plan(path, None, None)


class Plan:
    """A compiled graph: name, dir, files, inputs and outputs ((name, dtype, shape)
    each), explain(), run(), save()."""

    def __init__(self, path, result, tmp):
        self.dir = path
        self._tmp = tmp
        with open(os.path.join(path, META)) as f:
            meta = json.load(f)
        self._source = meta["source"]
        self._options = meta["options"]
        self._result = result
        self._session = None
        self._rt = None
        if result is None:
            self._result = compile_file(self.source, out_dir=None, **self._options)
        r = self._result
        self.name = r.name
        self.files = [os.path.basename(f) for f in r.files]
        self.inputs = [(n, d, s) for n, d, s, _ in r.inputs]
        self.outputs = [(n, d, s) for n, d, s, _ in r.outputs]

    @property
    def source(self):
        """The graph's file: in the plan's folder, or where the caller's path was."""
        return os.path.join(self.dir, self._source) if not os.path.isabs(self._source) \
            else self._source

    def explain(self, op=None):
        """Why each op was or was not fused: `fusec explain --json`'s document
        (fusec-explain/1, docs/inspect.md) parsed; op: one op (index or name)."""
        return json.loads(_explain(self.source, op=op, json=True, **self._explain_options()))

    def _explain_options(self):
        return {k: v for k, v in self._options.items() if k not in ("pretty_plan", "emit_ll")}

    def run(self, *arrays, backend=None):
        """Run the graph once. numpy arrays (in the graph's input order, of its
        dtypes and shapes) run on the host: backend "cpu" (the default; the plan's
        kernels JIT-compiled for this CPU) or "interp" (the reference interpreter).
        torch CUDA tensors run the plan on their GPU (backend "cuda"). Returns the
        outputs of the same kind: one array, or a tuple of them when the graph has
        several outputs."""
        if len(arrays) != len(self.inputs):
            raise Error(2, "", 0, 0, f"{self.name}: {len(self.inputs)} inputs, "
                        f"{len(arrays)} given")
        is_torch = type(arrays[0]).__module__.startswith("torch") if arrays else False
        if backend is None:
            backend = "cuda" if is_torch and arrays[0].is_cuda else "cpu"
        if backend == "cuda":
            outs = self._run_cuda(arrays)
        elif backend in ("cpu", "interp"):
            outs = self._run_host(arrays, RUN_CPU if backend == "cpu" else RUN_INTERP)
        else:
            raise Error(2, "", 0, 0, f"unknown backend '{backend}' (cpu, interp or cuda)")
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _run_host(self, arrays, how):
        import numpy as np
        ins = []
        for a, (n, dt, shape) in zip(arrays, self.inputs):
            want = numpy_dtype(dt)
            a = np.asarray(a)
            if a.dtype != want and not (dt == "bf16" and a.dtype.itemsize == 2
                                        and a.dtype.kind in "uV"):
                raise Error(1, "", 0, 0, f"input {n}: dtype {a.dtype}, the graph's is {dt} "
                            f"(numpy {want})")
            if tuple(a.shape) != tuple(shape):
                raise Error(1, "", 0, 0, f"input {n}: shape {tuple(a.shape)}, the graph's is "
                            f"{tuple(shape)}")
            ins.append(np.ascontiguousarray(a))
        outs = [np.empty(shape, dtype=numpy_dtype(dt)) for _, dt, shape in self.outputs]
        self._result.run([a.ctypes.data for a in ins], [o.ctypes.data for o in outs], how)
        return outs

    def _run_cuda(self, tensors):
        """The plan through fusecrt on the tensors' GPU: inputs and outputs bound
        zero-copy (fusecrt_session_bind), the run queued on torch's current stream
        (fusecrt_session_run_async), nothing waited for. Unmeasured and untested on
        a GPU (docs/python.md)."""
        import torch
        from .runtime import RtPlan
        dev = tensors[0].device
        if self._session is None:
            self._rt = RtPlan(self.dir)
            self._session = self._rt.session(dev.index or 0)
        for t, (n, dt, shape) in zip(tensors, self.inputs):
            if not t.is_cuda or t.device != dev:
                raise Error(1, "", 0, 0, f"input {n}: not a CUDA tensor on {dev}")
            if t.dtype != _torch_dtype(dt) or tuple(t.shape) != tuple(shape):
                raise Error(1, "", 0, 0, f"input {n}: {t.dtype}{tuple(t.shape)}, the graph's "
                            f"is {dt}{tuple(shape)}")
        ins = [t.contiguous() for t in tensors]
        outs = [torch.empty(shape, dtype=_torch_dtype(dt), device=dev)
                for _, dt, shape in self.outputs]
        for t, (n, _, _) in zip(ins, self.inputs):
            self._session.bind(n, t.data_ptr())
        for t, (n, _, _) in zip(outs, self.outputs):
            self._session.bind(n, t.data_ptr())
        self._session.run_async(torch.cuda.current_stream(dev).cuda_stream)
        return outs

    def save(self, path):
        """Copy the plan's folder (plan, PTX, weights, source/ when the graph was
        not a path) into path; fusec.load(path) reads it back."""
        if os.path.abspath(path) == os.path.abspath(self.dir):
            return
        os.makedirs(path, exist_ok=True)
        names = self.files + [META] + ([self._source] if not os.path.isabs(self._source)
                                       else [])
        for f in names:
            os.makedirs(os.path.dirname(os.path.join(path, f)), exist_ok=True)
            shutil.copy2(os.path.join(self.dir, f), os.path.join(path, f))

    def close(self):
        if self._session is not None:
            self._session.close()
            self._session = None
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        return f"<fusec.Plan {self.name} in {self.dir}: {len(self.inputs)} inputs, " \
               f"{len(self.outputs)} outputs>"
