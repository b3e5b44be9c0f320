"""fusec: fusec's compiler and runtime from Python, through ctypes over libfusec.so
(<fusec.h>) and libfusecrt.so (<fusecrt.h>); pure Python, numpy at run time.

    import fusec
    plan = fusec.compile("model.yaml")          # a path, graph text, ONNX bytes, a module
    y = plan.run(x)                             # numpy on the cpu backend
    print(plan.explain()["ops"][0])

Modules: plan (compile, load, Plan), compiler (libfusec: compile_file,
compile_bytes, explain, Result, Error), runtime (libfusecrt: RtPlan, Session),
_libs (where the libraries are found). docs/python.md."""
from .compiler import Error, Result, compile_bytes, compile_file, explain, version
from .plan import Plan, compile, load, numpy_dtype
from .runtime import RtPlan, Session

__all__ = ["Error", "Plan", "Result", "RtPlan", "Session", "compile", "compile_bytes",
           "compile_file", "explain", "load", "numpy_dtype", "version"]
