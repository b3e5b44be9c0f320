"""compiler.py: the compiler, libfusec.so (<fusec.h>), through ctypes: compile a
graph file or bytes into a Result, explain it, run a Result on the host
(fusec_run: the cpu backend's JIT kernels, or the reference interpreter).

Errors raise Error with code, file, line, column and message, as fusec_error
holds them. docs/library.md, docs/python.md."""
import ctypes
import os

from ._libs import load as _load

class Error(Exception):
    def __init__(self, code, file, line, column, message):
        self.code, self.file, self.line, self.column, self.message = code, file, line, column, message
        where = file + (f":{line}" if line else "") + (f":{column}" if column else "")
        super().__init__(f"{where}: {message}" if where else message)


class _Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("file", ctypes.c_char * 256), ("line", ctypes.c_int),
                ("column", ctypes.c_int), ("message", ctypes.c_char * 1024)]

    def raise_(self):
        raise Error(self.code, self.file.decode(), self.line, self.column, self.message.decode())


class _Options(ctypes.Structure):   # fusec_options, in the header's order
    _fields_ = [("arch", ctypes.c_char_p), ("allow_tf32", ctypes.c_int),
                ("burn_exact", ctypes.c_int), ("max_blocks", ctypes.c_int),
                ("max_explorations", ctypes.c_int), ("max_bindings", ctypes.c_int),
                ("jobs", ctypes.c_int), ("cache_dir", ctypes.c_char_p),
                ("pretty_plan", ctypes.c_int), ("emit_ll", ctypes.c_int),
                ("libdevice", ctypes.c_char_p),
                ("input_shapes", ctypes.POINTER(ctypes.c_char_p)),
                ("ninput_shapes", ctypes.c_int), ("max_errors", ctypes.c_int),
                ("precision", ctypes.c_char_p), ("keep_f32", ctypes.c_char_p),
                ("layout", ctypes.c_char_p),
                ("attention", ctypes.c_char_p), ("allow_3xtf32", ctypes.c_int)]


_fc = None

_P = ctypes.c_void_p
_TENSOR_ARGS = [_P, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_int),
                ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_size_t)]
RUN_CPU, RUN_INTERP = 0, 1   # fusec_run's `how`


def _compiler():
    global _fc
    if _fc is None:
        try:
            lib = _load("libfusec")
        except OSError as e:
            raise Error(3, "", 0, 0, f"the compiler, libfusec.so, cannot be loaded ({e}); "
                        "compiling, explain, version() and runs on numpy need it, while "
                        "fusec.load and Plan.run on torch CUDA tensors need only the "
                        "runtime, libfusecrt.so (docs/python.md)") from None
        err = ctypes.POINTER(_Error)
        for fn, res, args in [
                ("fusec_version", ctypes.c_char_p, []),
                ("fusec_options_init", None, [ctypes.POINTER(_Options)]),
                ("fusec_compile_file", _P, [ctypes.c_char_p, ctypes.POINTER(_Options),
                                            ctypes.c_char_p, err]),
                ("fusec_compile_bytes", _P, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t,
                                             ctypes.POINTER(_Options), ctypes.c_char_p, err]),
                ("fusec_result_free", None, [_P]),
                ("fusec_result_name", ctypes.c_char_p, [_P]),
                ("fusec_result_ops", ctypes.c_long, [_P]),
                ("fusec_result_launches", ctypes.c_long, [_P]),
                ("fusec_result_kernels", ctypes.c_long, [_P]),
                ("fusec_result_bytes_moved", ctypes.c_double, [_P]),
                ("fusec_result_nfiles", ctypes.c_int, [_P]),
                ("fusec_result_file", ctypes.c_char_p, [_P, ctypes.c_int]),
                ("fusec_result_file_data", _P, [_P, ctypes.c_int,
                                                ctypes.POINTER(ctypes.c_size_t)]),
                ("fusec_explain", _P, [ctypes.c_char_p, ctypes.POINTER(_Options),
                                       ctypes.c_char_p, ctypes.c_int, err]),
                ("fusec_free", None, [_P]),
                ("fusec_result_ninputs", ctypes.c_int, [_P]),
                ("fusec_result_noutputs", ctypes.c_int, [_P]),
                ("fusec_result_input", ctypes.c_char_p, _TENSOR_ARGS),
                ("fusec_result_output", ctypes.c_char_p, _TENSOR_ARGS),
                ("fusec_run", ctypes.c_int, [_P, ctypes.c_int, ctypes.POINTER(_P),
                                             ctypes.POINTER(_P), err])]:
            f = getattr(lib, fn)
            f.restype, f.argtypes = res, args
        _fc = lib
    return _fc


def version():
    return _compiler().fusec_version().decode()


def _options(arch=None, allow_tf32=False, burn_exact=False, max_blocks=None,
             max_explorations=None, max_bindings=None, jobs=0, cache_dir=None,
             pretty_plan=False, emit_ll=False, libdevice=None, input_shapes=None,
             max_errors=None, precision=None, keep_f32=None, layout=None,
             attention=None, allow_3xtf32=None):
    o = _Options()
    _compiler().fusec_options_init(ctypes.byref(o))
    keep = []   # the bytes the struct points to, alive for the call
    def s(v):
        keep.append(v.encode())
        return keep[-1]
    if arch:
        o.arch = s(arch)
    o.allow_tf32, o.burn_exact, o.pretty_plan, o.emit_ll = (int(bool(allow_tf32)),
        int(bool(burn_exact)), int(bool(pretty_plan)), int(bool(emit_ll)))
    # None: the default (on); False: never, as compile's --no-3xtf32
    o.allow_3xtf32 = 0 if allow_3xtf32 is None else 1 if allow_3xtf32 else -1
    for k, v in (("max_blocks", max_blocks), ("max_explorations", max_explorations),
                 ("max_bindings", max_bindings), ("max_errors", max_errors)):
        if v is not None:
            setattr(o, k, v)
    o.jobs = jobs
    if cache_dir:
        o.cache_dir = s(cache_dir)
    if libdevice:
        o.libdevice = s(libdevice)
    if precision:
        o.precision = s(precision)
    if keep_f32:
        o.keep_f32 = s(keep_f32)
    if layout:
        o.layout = s(layout)
    if attention:
        o.attention = s(attention)
    if input_shapes:
        shapes = [f"{k}={'x'.join(map(str, v))}" if not isinstance(v, str) else f"{k}={v}"
                  for k, v in dict(input_shapes).items()]
        arr = (ctypes.c_char_p * len(shapes))(*[s(x) for x in shapes])
        keep.append(arr)
        o.input_shapes, o.ninput_shapes = arr, len(shapes)
    return o, keep


class Result:
    """What a compile made: name, ops, launches, kernels, bytes_moved, and files
    (paths written, or file names when nothing was written); data(i) gives a file's
    bytes."""

    def __init__(self, handle):
        fc = _compiler()
        self._h = handle
        self.name = fc.fusec_result_name(handle).decode()
        self.ops = fc.fusec_result_ops(handle)
        self.launches = fc.fusec_result_launches(handle)
        self.kernels = fc.fusec_result_kernels(handle)
        self.bytes_moved = fc.fusec_result_bytes_moved(handle)
        self.files = [fc.fusec_result_file(handle, i).decode()
                      for i in range(fc.fusec_result_nfiles(handle))]

    def data(self, i):
        n = ctypes.c_size_t()
        p = _compiler().fusec_result_file_data(self._h, i, ctypes.byref(n))
        return ctypes.string_at(p, n.value) if p else None

    def _tensors(self, count, get):
        out = []
        for i in range(count(self._h)):
            dt, rank, dims, n = (ctypes.c_char_p(), ctypes.c_int(), (ctypes.c_int64 * 8)(),
                                 ctypes.c_size_t())
            name = get(self._h, i, ctypes.byref(dt), ctypes.byref(rank), dims, ctypes.byref(n))
            out.append((name.decode(), dt.value.decode(), tuple(dims[:rank.value]), n.value))
        return out

    @property
    def inputs(self):
        """The graph's inputs: (name, dtype, shape, bytes) each, in its order."""
        fc = _compiler()
        return self._tensors(fc.fusec_result_ninputs, fc.fusec_result_input)

    @property
    def outputs(self):
        fc = _compiler()
        return self._tensors(fc.fusec_result_noutputs, fc.fusec_result_output)

    def run(self, inputs, outputs, how=RUN_CPU):
        """fusec_run: inputs and outputs are addresses (ints) of dense buffers of
        the sizes `inputs`/`outputs` give, in the graph's order."""
        e = _Error()
        ins = (_P * max(1, len(inputs)))(*inputs)
        outs = (_P * max(1, len(outputs)))(*outputs)
        if _compiler().fusec_run(self._h, how, ins, outs, ctypes.byref(e)):
            e.raise_()

    def __del__(self):
        if getattr(self, "_h", None) and _fc is not None:
            _fc.fusec_result_free(self._h)
            self._h = None


def compile_file(path, out_dir=None, **options):
    """Compile the graph in `path` (JSON, YAML, ONNX); write its files into out_dir
    (all or none) unless it is None. Options: as fusec_options (arch="sm_80,sm_90a",
    allow_tf32, allow_3xtf32, burn_exact, max_blocks, jobs, cache_dir, input_shapes={"x": [1, 3]},
    precision="bf16", keep_f32="softmax", ...)."""
    o, keep = _options(**options)
    e = _Error()
    h = _compiler().fusec_compile_file(os.fsencode(path), ctypes.byref(o),
                                       os.fsencode(out_dir) if out_dir else None,
                                       ctypes.byref(e))
    if not h:
        e.raise_()
    return Result(h)


def compile_bytes(data, name="graph.yaml", out_dir=None, **options):
    """The same for graph text (str or bytes) or an ONNX model's bytes; `name`
    stands for the file in messages and names the graph without a `name` key."""
    if isinstance(data, str):
        data = data.encode()
    o, keep = _options(**options)
    e = _Error()
    h = _compiler().fusec_compile_bytes(name.encode(), data, len(data), ctypes.byref(o),
                                        os.fsencode(out_dir) if out_dir else None,
                                        ctypes.byref(e))
    if not h:
        e.raise_()
    return Result(h)


def explain(path, op=None, json=False, **options):
    """What `fusec explain` prints, as text (or the JSON document's text)."""
    o, keep = _options(**options)
    e = _Error()
    fc = _compiler()
    p = fc.fusec_explain(os.fsencode(path), ctypes.byref(o), str(op).encode() if op is not None
                         else None, int(bool(json)), ctypes.byref(e))
    if not p:
        e.raise_()
    text = ctypes.string_at(p).decode()
    fc.fusec_free(p)
    return text


