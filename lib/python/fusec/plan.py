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
    kw.update(_io_names(torch, source, example_inputs))
    kw.update(export_options or {})
    modes = [(m, m.training) for m in source.modules()]
    try:
        torch.onnx.export(_positional(torch, source), tuple(example_inputs), path, **kw)
    finally:   # the exporter sets train(False) and back, recursively: each as it was
        for m, training in modes:
            m.training = training
    with open(path, "rb") as f:
        return os.path.basename(path), f.read()


def _positional(torch, module):
    """module behind a forward(*args): the exporter appends the default of every
    parameter of forward past the example inputs (_decide_input_format), which
    transformers' models refuse ("got multiple values for argument 'use_cache'").
    A dict the module returns (a ModelOutput) comes out as a tuple of its values."""
    class Positional(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, *args):
            y = self.m(*args)
            return tuple(y.values()) if hasattr(y, "keys") else y
    p = Positional(module)
    p.training = module.training
    return p


def _io_names(torch, module, example_inputs):
    """input_names and output_names for the export, so that the plan's tensors are
    named as in Python rather than "onnx::Gemm_0" and "7": the inputs after
    forward's parameters, the outputs after the keys of a dict the module returns
    (a transformers ModelOutput), else output, or output0, output1, ... (counted by
    one call in eval mode, without gradients). None of either where unclear."""
    import inspect
    out = {}
    try:
        params = [p for p in inspect.signature(module.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if len(params) >= len(example_inputs):
            out["input_names"] = [p.name for p in params[:len(example_inputs)]]
    except (TypeError, ValueError):
        pass
    training = module.training
    try:
        module.eval()
        with torch.no_grad():
            y = module(*example_inputs)
    except Exception:
        return out
    finally:
        module.train(training)
    if isinstance(y, torch.Tensor):
        names = ["output"]
    elif hasattr(y, "keys") and all(isinstance(v, torch.Tensor) for v in y.values()):
        names = [str(k) for k in y.keys()]
    elif isinstance(y, (tuple, list)) and all(isinstance(v, torch.Tensor) for v in y):
        names = [f"output{i}" for i in range(len(y))]
    else:
        return out
    if not set(names) & set(out.get("input_names", [])):
        out["output_names"] = names
    return out


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
    """The Plan in folder path: one that save() or compile(out_dir=...) left there
    (with its graph), or one `fusec compile -o path` wrote (the plan alone). Only
    the runtime, libfusecrt.so, is opened: its inputs and outputs come from the
    plan file, so that a GPU machine without the compiler can run it on torch CUDA
    tensors. The compiler is opened later, by the first run on numpy or explain()."""
    return Plan(path, None, None)


def _check(what, t, name, dt, shape, want, device=None):
    """Error unless tensor or array t has the graph's dtype `want` (numpy's or
    torch's), shape (None: any size there, a plan for every size), and (torch)
    device."""
    if device is not None and (not t.is_cuda or t.device != device):
        raise Error(1, "", 0, 0, f"{what} {name}: on {t.device}, not {device}")
    ok = t.dtype == want or (device is None and dt == "bf16" and t.dtype.itemsize == 2
                             and t.dtype.kind in "uV")
    fits = len(t.shape) == len(shape) and all(w is None or int(g) == w
                                              for g, w in zip(t.shape, shape))
    if not ok or not fits:
        raise Error(1, "", 0, 0, f"{what} {name}: dtype {t.dtype}, shape {tuple(t.shape)}; "
                    f"the graph's: {dt} ({want}), {tuple(shape)}")


class Plan:
    """A compiled graph: name, dir, files, inputs and outputs ((name, dtype, shape)
    each), explain(), run(), save(); session, the runtime's Session of the CUDA runs
    (None before the first)."""

    def __init__(self, path, result, tmp):
        self.dir = path
        self._tmp = tmp
        meta = {}
        if os.path.exists(os.path.join(path, META)):
            with open(os.path.join(path, META)) as f:
                meta = json.load(f)
        self._source = meta.get("source")   # None: a plan fusec compile wrote
        self._options = meta.get("options", {})
        self._result = result
        self.session = None
        self._rt = None
        self._device = None
        self._bound = {}        # tensor name -> the device address bound to it
        self._static = None     # (inputs, outputs): the torch tensors staged runs bind
        if result is not None:
            self.name = result.name
            self.files = [os.path.basename(f) for f in result.files]
            self.inputs = [(n, d, s) for n, d, s, _ in result.inputs]
            self.outputs = [(n, d, s) for n, d, s, _ in result.outputs]
            return
        from .runtime import RtPlan
        self._rt = RtPlan(path)
        plans = [f for f in os.listdir(path) if f.endswith(".plan.json")]
        self.name = plans[0][:-len(".plan.json")] if len(plans) == 1 else \
            os.path.basename(os.path.normpath(path))
        self.files = sorted(f for f in os.listdir(path) if f != META
                            and os.path.isfile(os.path.join(path, f)))
        def info(n):   # a plan for every size: None for the dims its names size
            dt, shape, _ = self._rt.tensor(n)
            return n, dt, tuple(None if v < 0 else v for v in shape)
        self.inputs = [info(n) for n in self._rt.inputs]
        self.outputs = [info(n) for n in self._rt.outputs]
        self.dims = self._rt.dims          # [(name, min, max)]; [] for fixed sizes
        self._sizes = None                 # the input shapes the session is bound to

    @property
    def source(self):
        """The graph's file: in the plan's folder, or where the caller's path was;
        None for a plan that fusec compile wrote."""
        if self._source is None:
            return None
        return os.path.join(self.dir, self._source) if not os.path.isabs(self._source) \
            else self._source

    def _compiled(self):
        """The compiler's Result of the graph (compiled again, in memory, on first use)."""
        if self._result is None:
            if self._source is None:
                raise Error(2, self.dir, 0, 0, "a plan without its graph (written by fusec "
                            "compile, not fusec.compile): runs on numpy and explain() need "
                            "the graph; fusec.compile it")
            self._result = compile_file(self.source, out_dir=None, **self._options)
        return self._result

    def explain(self, op=None):
        """Why each op was or was not fused: `fusec explain --json`'s document
        (fusec-explain/1, docs/inspect.md) parsed; op: one op (index or name)."""
        if self._source is None:
            self._compiled()   # the error above
        return json.loads(_explain(self.source, op=op, json=True, **self._explain_options()))

    def _explain_options(self):
        return {k: v for k, v in self._options.items() if k not in ("pretty_plan", "emit_ll")}

    def run(self, *arrays, backend=None, out=None, zero_copy=False):
        """Run the graph once. numpy arrays (in the graph's input order, of its
        dtypes and shapes) run on the host: backend "cpu" (the default; the plan's
        kernels JIT-compiled for this CPU) or "interp" (the reference interpreter).
        torch CUDA tensors run the plan on their GPU (backend "cuda"), queued on
        torch's current stream. Returns the outputs of the same kind: one array, or
        a tuple of them when the graph has several outputs; out (an array or a
        tuple, the outputs' dtypes and shapes) receives them instead.

        On CUDA the inputs are copied into tensors the Plan keeps bound to its
        session, and the outputs copied out of others, so that one CUDA graph
        serves every call; zero_copy=True binds the caller's tensors instead (and
        out, else new outputs): no copies, but a new graph is captured whenever
        the set of addresses differs from the last call's (docs/python.md)."""
        if len(arrays) != len(self.inputs):
            raise Error(2, "", 0, 0, f"{self.name}: {len(self.inputs)} inputs, "
                        f"{len(arrays)} given")
        if out is not None:
            out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
            if len(out) != len(self.outputs):
                raise Error(2, "", 0, 0, f"{self.name}: {len(self.outputs)} outputs, "
                            f"{len(out)} given in out")
        is_torch = type(arrays[0]).__module__.startswith("torch") if arrays else False
        if backend is None:
            backend = "cuda" if is_torch and arrays[0].is_cuda else "cpu"
        if backend == "cuda":
            outs = self._run_cuda(arrays, out, zero_copy)
        elif backend in ("cpu", "interp"):
            outs = self._run_host(arrays, out, RUN_CPU if backend == "cpu" else RUN_INTERP)
        else:
            raise Error(2, "", 0, 0, f"unknown backend '{backend}' (cpu, interp or cuda)")
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _run_host(self, arrays, out, how):
        import numpy as np
        result = self._compiled()
        ins = []
        for a, (n, dt, shape) in zip(arrays, self.inputs):
            a = np.asarray(a)
            _check("input", a, n, dt, shape, numpy_dtype(dt))
            ins.append(np.ascontiguousarray(a))
        if out is None:
            outs = [np.empty(shape, dtype=numpy_dtype(dt)) for _, dt, shape in self.outputs]
        else:
            for o, (n, dt, shape) in zip(out, self.outputs):
                if not isinstance(o, np.ndarray) or not o.flags.c_contiguous:
                    raise Error(1, "", 0, 0, f"out {n}: not a C-contiguous numpy array")
                _check("out", o, n, dt, shape, numpy_dtype(dt))
            outs = list(out)
        result.run([a.ctypes.data for a in ins], [o.ctypes.data for o in outs], how)
        return outs

    def _bind(self, name, t):
        if self._bound.get(name) != t.data_ptr():
            self.session.bind(name, t.data_ptr())
            self._bound[name] = t.data_ptr()

    def _run_cuda(self, tensors, out, zero_copy):
        """The plan through fusecrt on the tensors' GPU, queued on torch's current
        stream (fusecrt_session_run_async), nothing waited for. The session is
        opened on the first call, on that call's device."""
        import torch
        from .runtime import RtPlan
        dev = tensors[0].device
        for t, (n, dt, shape) in zip(tensors, self.inputs):
            _check("input", t, n, dt, shape, _torch_dtype(dt), dev)
        for t, (n, dt, shape) in zip(out or (), self.outputs):
            _check("out", t, n, dt, shape, _torch_dtype(dt), dev)
            if not t.is_contiguous():
                raise Error(1, "", 0, 0, f"out {n}: not contiguous")
        if self._rt is not None and self._rt.dims:
            # a plan for every size: bound to these shapes; other shapes than the
            # session's need a session of their own (buffers are allocated per size)
            sizes = {n: tuple(int(v) for v in t.shape) for t, (n, _, _) in zip(tensors, self.inputs)}
            if sizes != self._sizes:
                if self.session is not None:
                    self.session.close()
                    self.session, self._static, self._bound = None, None, {}
                self._rt.bind(sizes)
                self._sizes = sizes
        outputs = self._bound_outputs()
        inputs = [(n, dt, self._sizes[n]) for n, dt, _ in self.inputs] if self._sizes \
            else self.inputs
        if self.session is None:
            if self._rt is None:
                self._rt = RtPlan(self.dir)
            self.session = self._rt.session(dev.index or 0)
            self._device = dev
        elif dev != self._device:
            raise Error(1, "", 0, 0, f"{self.name}: the plan's session is on {self._device}, "
                        f"the inputs on {dev}")
        stream = torch.cuda.current_stream(dev)
        if zero_copy:
            ins = [t.contiguous() for t in tensors]
            outs = list(out) if out is not None else \
                [torch.empty(shape, dtype=_torch_dtype(dt), device=dev)
                 for _, dt, shape in outputs]
            for t, (n, _, _) in zip(ins + outs, self.inputs + outputs):
                self._bind(n, t)
            self.session.run_async(stream.cuda_stream)
            return outs
        if self._static is None:
            self._static = tuple([torch.empty(shape, dtype=_torch_dtype(dt), device=dev)
                                  for _, dt, shape in ts] for ts in (inputs, outputs))
        ins, outs = self._static
        for t, (n, _, _) in zip(ins + outs, self.inputs + outputs):
            self._bind(n, t)
        for s, t in zip(ins, tensors):
            s.copy_(t)
        self.session.run_async(stream.cuda_stream)
        if out is None:
            return [o.clone() for o in outs]
        for o, s in zip(out, outs):
            o.copy_(s)
        return list(out)

    def _bound_outputs(self):
        """The outputs with their shapes at the bound sizes (those of a plan of
        fixed sizes as they are)."""
        if self._rt is None or not self._rt.dims:
            return self.outputs
        return [(n, dt, tuple(self._rt.tensor(n)[1])) for n, dt, _ in self.outputs]

    def save(self, path):
        """Copy the plan's folder (plan, PTX, weights, source/ when the graph was
        not a path) into path; fusec.load(path) reads it back."""
        if os.path.abspath(path) == os.path.abspath(self.dir):
            return
        os.makedirs(path, exist_ok=True)
        names = self.files + ([self._source] if self._source and
                              not os.path.isabs(self._source) else [])
        for f in names:
            os.makedirs(os.path.dirname(os.path.join(path, f)), exist_ok=True)
            shutil.copy2(os.path.join(self.dir, f), os.path.join(path, f))
        with open(os.path.join(path, META), "w") as f:
            json.dump({"source": self._source, "options": self._options}, f, indent=1)

    def close(self):
        self._static = None
        self._bound = {}
        if self.session is not None:
            self.session.close()
            self.session = None
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
