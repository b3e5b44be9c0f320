"""runtime.py: the runtime, libfusecrt.so (<fusecrt.h>), through ctypes: a compiled
plan's folder loaded (RtPlan) and run on a CUDA GPU (Session), from host bytes or
on device memory the caller binds. Errors raise compiler.Error."""
import ctypes
import os

from ._libs import load as _load
from .compiler import Error, _P

_rt = None


class _RtError(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int), ("file", ctypes.c_char * 256), ("line", ctypes.c_int),
                ("col", ctypes.c_int), ("message", ctypes.c_char * 1024)]

    def raise_(self):
        raise Error(self.status, self.file.decode(), self.line, self.col, self.message.decode())


def _runtime():
    global _rt
    if _rt is None:
        try:
            lib = _load("libfusecrt")
        except OSError as e:
            raise Error(3, "", 0, 0, f"the runtime, libfusecrt.so, cannot be loaded ({e}); "
                        "set FUSEC_LIBDIR to its folder (docs/python.md)") from None
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
                ("fusecrt_plan_ndims", ctypes.c_int, [_P]),
                ("fusecrt_plan_dim", ctypes.c_char_p, [_P, ctypes.c_int,
                                                       ctypes.POINTER(ctypes.c_int64),
                                                       ctypes.POINTER(ctypes.c_int64)]),
                ("fusecrt_plan_bind", ctypes.c_int, [_P, ctypes.c_int,
                                                     ctypes.POINTER(ctypes.c_char_p),
                                                     ctypes.POINTER(ctypes.c_int),
                                                     ctypes.POINTER(ctypes.c_int64), err]),
                ("fusecrt_session_open", _P, [_P, ctypes.c_int, err]),
                ("fusecrt_session_close", None, [_P]),
                ("fusecrt_session_arch", ctypes.c_char_p, [_P]),
                ("fusecrt_session_set_input", ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_char_p,
                                                             ctypes.c_size_t, err]),
                ("fusecrt_session_run", ctypes.c_int, [_P, err]),
                ("fusecrt_session_get_output", ctypes.c_int, [_P, ctypes.c_char_p, _P,
                                                              ctypes.c_size_t, err]),
                ("fusecrt_session_run_async", ctypes.c_int, [_P, ctypes.c_uint64, err]),
                ("fusecrt_session_bind", ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_uint64,
                                                        err]),
                ("fusecrt_session_set_graph", None, [_P, ctypes.c_int]),
                ("fusecrt_session_graph", ctypes.c_int, [_P, ctypes.POINTER(ctypes.c_char_p)])]:
            f = getattr(lib, fn)
            f.restype, f.argtypes = res, args
        _rt = lib
    return _rt


class RtPlan:
    """A compiled plan (a folder or a NAME.plan.json): inputs, outputs, arch,
    tensor(name) -> (dtype, shape, bytes), session(device); dims, [(name, min, max)]
    of a plan for every size, which bind({input: shape}) binds (a shape's -1 dims
    in tensor() until then)."""

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
        self.dims = []
        for i in range(rt.fusecrt_plan_ndims(self._h)):
            lo, hi = ctypes.c_int64(), ctypes.c_int64()
            name = rt.fusecrt_plan_dim(self._h, i, ctypes.byref(lo), ctypes.byref(hi))
            self.dims.append((name.decode(), lo.value, hi.value))

    def bind(self, shapes):
        """Bind a plan for every size to the shapes of its inputs ({name: shape})."""
        n = len(shapes)
        names = (ctypes.c_char_p * max(n, 1))(*[k.encode() for k in shapes])
        ranks = (ctypes.c_int * max(n, 1))(*[len(s) for s in shapes.values()])
        dims = (ctypes.c_int64 * (8 * max(n, 1)))()
        for k, s in enumerate(shapes.values()):
            for j, v in enumerate(s):
                dims[8 * k + j] = v
        e = _RtError()
        if _runtime().fusecrt_plan_bind(self._h, n, names, ranks, dims, ctypes.byref(e)):
            e.raise_()

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
    """A plan on a CUDA device: set_input(name, bytes), run(), get_output(name);
    bind(name, devptr) and run_async(stream) for memory and streams the caller owns;
    graph() and set_graph(on) for the CUDA graph its runs replay."""

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

    def run_async(self, stream=0):
        """Queue one run on CUstream `stream` (an int; 0 the legacy default stream)
        without waiting (fusecrt_session_run_async)."""
        e = _RtError()
        if _rt.fusecrt_session_run_async(self._h, int(stream), ctypes.byref(e)):
            e.raise_()

    def bind(self, name, devptr):
        """Tensor `name` read or written at device address devptr from the next run
        on (0: the session's own buffer again)."""
        e = _RtError()
        if _rt.fusecrt_session_bind(self._h, name.encode(), int(devptr), ctypes.byref(e)):
            e.raise_()

    def graph(self):
        """(True, "") when the next run replays a CUDA graph, else (False, why)."""
        why = ctypes.c_char_p()
        on = _rt.fusecrt_session_graph(self._h, ctypes.byref(why))
        return bool(on), (why.value or b"").decode()

    def set_graph(self, on):
        """CUDA graphs on (the default) or off for this session's next runs."""
        _rt.fusecrt_session_set_graph(self._h, int(bool(on)))

    def close(self):
        if getattr(self, "_h", None) and _rt is not None:
            _rt.fusecrt_session_close(self._h)
            self._h = None

    __del__ = close
