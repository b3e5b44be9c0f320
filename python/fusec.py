"""fusec.py: fusec's compiler and runtime from Python, through ctypes over the
installed libfusec.so (<fusec.h>) and libfusecrt.so (<fusecrt.h>); no build step.

    import fusec
    r = fusec.compile_file("model.yaml", out_dir="out", arch="sm_90a")
    print(r.name, r.ops, r.launches, r.kernels, r.bytes_moved, r.files)
    plan = fusec.Plan("out")                   # fusecrt_plan_load
    s = plan.session(0)                        # a GPU (FUSEC_LIBCUDA: another driver)
    s.set_input("x", x_bytes); s.run(); y = s.get_output("y")

Errors raise fusec.Error with code, file, line, column and message, as
fusec_error and fusecrt_error hold them. The libraries are found by
FUSEC_LIBDIR, else beside this file's prefix (PREFIX/share/fusec/python ->
PREFIX/lib), else by the loader's search path. docs/library.md."""
import ctypes
import os

__all__ = ["Error", "Result", "Plan", "Session", "compile_file", "compile_bytes", "explain",
           "version"]


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
                ("precision", ctypes.c_char_p), ("keep_f32", ctypes.c_char_p)]


def _load(name):
    dirs = [os.environ.get("FUSEC_LIBDIR"),
            os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "lib")]
    for d in dirs:
        if d and os.path.exists(os.path.join(d, name)):
            return ctypes.CDLL(os.path.join(d, name))
    return ctypes.CDLL(name)


_fc = None
_rt = None
_P = ctypes.c_void_p


def _compiler():
    global _fc
    if _fc is None:
        _fc = _load("libfusec.so.0")
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
                ("fusec_free", None, [_P])]:
            f = getattr(_fc, fn)
            f.restype, f.argtypes = res, args
    return _fc


def version():
    return _compiler().fusec_version().decode()


def _options(arch=None, allow_tf32=False, burn_exact=False, max_blocks=None,
             max_explorations=None, max_bindings=None, jobs=0, cache_dir=None,
             pretty_plan=False, emit_ll=False, libdevice=None, input_shapes=None,
             max_errors=None, precision=None, keep_f32=None):
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

    def __del__(self):
        if getattr(self, "_h", None) and _fc is not None:
            _fc.fusec_result_free(self._h)
            self._h = None


def compile_file(path, out_dir=None, **options):
    """Compile the graph in `path` (JSON, YAML, ONNX); write its files into out_dir
    (all or none) unless it is None. Options: as fusec_options (arch="sm_80,sm_90a",
    allow_tf32, burn_exact, max_blocks, jobs, cache_dir, input_shapes={"x": [1, 3]},
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


# ---- the runtime ---------------------------------------------------------------

class _RtError(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int), ("file", ctypes.c_char * 256), ("line", ctypes.c_int),
                ("col", ctypes.c_int), ("message", ctypes.c_char * 1024)]

    def raise_(self):
        raise Error(self.status, self.file.decode(), self.line, self.col, self.message.decode())


def _runtime():
    global _rt
    if _rt is None:
        _rt = _load("libfusecrt.so.0")
        err = ctypes.POINTER(_RtError)
        for fn, res, args in [
                ("fusecrt_plan_load", _P, [ctypes.c_char_p, err]),
                ("fusecrt_plan_free", None, [_P]),
                ("fusecrt_plan_ninputs", ctypes.c_int, [_P]),
                ("fusecrt_plan_input", ctypes.c_char_p, [_P, ctypes.c_int]),
                ("fusecrt_plan_noutputs", ctypes.c_int, [_P]),
                ("fusecrt_plan_output", ctypes.c_char_p, [_P, ctypes.c_int]),
                ("fusecrt_plan_tensor", ctypes.c_int, [_P, ctypes.c_char_p,
                                                       ctypes.POINTER(ctypes.c_char_p),
                                                       ctypes.POINTER(ctypes.c_int),
                                                       ctypes.POINTER(ctypes.c_int64),
                                                       ctypes.POINTER(ctypes.c_size_t), err]),
                ("fusecrt_plan_arch", ctypes.c_char_p, [_P]),
                ("fusecrt_session_open", _P, [_P, ctypes.c_int, err]),
                ("fusecrt_session_close", None, [_P]),
                ("fusecrt_session_arch", ctypes.c_char_p, [_P]),
                ("fusecrt_session_set_input", ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_char_p,
                                                             ctypes.c_size_t, err]),
                ("fusecrt_session_run", ctypes.c_int, [_P, err]),
                ("fusecrt_session_get_output", ctypes.c_int, [_P, ctypes.c_char_p, _P,
                                                              ctypes.c_size_t, err])]:
            f = getattr(_rt, fn)
            f.restype, f.argtypes = res, args
    return _rt


class Plan:
    """A compiled plan (a folder or a NAME.plan.json): inputs, outputs, arch,
    tensor(name) -> (dtype, shape, bytes), session(device)."""

    def __init__(self, path):
        e = _RtError()
        rt = _runtime()
        self._h = rt.fusecrt_plan_load(os.fsencode(path), ctypes.byref(e))
        if not self._h:
            e.raise_()
        self.inputs = [rt.fusecrt_plan_input(self._h, i).decode()
                       for i in range(rt.fusecrt_plan_ninputs(self._h))]
        self.outputs = [rt.fusecrt_plan_output(self._h, i).decode()
                        for i in range(rt.fusecrt_plan_noutputs(self._h))]
        self.arch = rt.fusecrt_plan_arch(self._h).decode()

    def tensor(self, name):
        dt, rank, dims, n = ctypes.c_char_p(), ctypes.c_int(), (ctypes.c_int64 * 8)(), ctypes.c_size_t()
        e = _RtError()
        if _runtime().fusecrt_plan_tensor(self._h, name.encode(), ctypes.byref(dt),
                                          ctypes.byref(rank), dims, ctypes.byref(n),
                                          ctypes.byref(e)):
            e.raise_()
        return dt.value.decode(), list(dims[:rank.value]), n.value

    def session(self, device=0):
        return Session(self, device)

    def __del__(self):
        if getattr(self, "_h", None) and _rt is not None:
            _rt.fusecrt_plan_free(self._h)
            self._h = None


class Session:
    """A plan on a CUDA device: set_input(name, bytes), run(), get_output(name)."""

    def __init__(self, plan, device=0):
        e = _RtError()
        self.plan = plan
        self._h = _runtime().fusecrt_session_open(plan._h, device, ctypes.byref(e))
        if not self._h:
            e.raise_()
        self.arch = _rt.fusecrt_session_arch(self._h).decode()

    def set_input(self, name, data):
        e = _RtError()
        data = bytes(data)
        if _rt.fusecrt_session_set_input(self._h, name.encode(), data, len(data), ctypes.byref(e)):
            e.raise_()

    def run(self):
        e = _RtError()
        if _rt.fusecrt_session_run(self._h, ctypes.byref(e)):
            e.raise_()

    def get_output(self, name):
        n = self.plan.tensor(name)[2]
        buf = ctypes.create_string_buffer(n)
        e = _RtError()
        if _rt.fusecrt_session_get_output(self._h, name.encode(), buf, n, ctypes.byref(e)):
            e.raise_()
        return buf.raw

    def close(self):
        if getattr(self, "_h", None) and _rt is not None:
            _rt.fusecrt_session_close(self._h)
            self._h = None

    __del__ = close
