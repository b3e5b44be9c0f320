"""_libs.py: finds and opens fusec's two shared libraries for ctypes.

libfusec.so (<fusec.h>, the compiler) and libfusecrt.so (<fusecrt.h>, the runtime)
are looked for, in order: in FUSEC_LIBDIR; in the build folder of a source tree
this package sits in (lib/python/fusec -> build/, after `make`); in the prefix it
was installed under by `make install` (PREFIX/share/fusec/python/fusec ->
PREFIX/lib); then by the dynamic loader's own search path (a `pip install`ed
package next to libraries in /usr/local/lib).

The two are opened separately and only when first used: the runtime alone (a GPU
machine without LLVM, where libfusec.so cannot load) is enough to load a compiled
plan and run it on torch CUDA tensors. A library that is found but does not load
(a missing dependency) is skipped for the next candidate; when none loads, the
OSError names every file tried and the first reason."""
import ctypes
import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def candidates(name):
    """The paths tried for library `name` ("libfusec"), in order."""
    out = []
    env = os.environ.get("FUSEC_LIBDIR")
    if env:
        out += [os.path.join(env, name + ".so.0"), os.path.join(env, name + ".so")]
    tree = os.path.normpath(os.path.join(_HERE, "..", "..", "..", "build"))
    out.append(os.path.join(tree, name + ".so"))
    prefix = os.path.normpath(os.path.join(_HERE, "..", "..", "..", "..", "lib"))
    out.append(os.path.join(prefix, name + ".so.0"))
    return out


def load(name):
    """ctypes.CDLL of library `name`; OSError when no candidate loads."""
    tried, why = [], []
    for p in candidates(name) + [name + ".so.0"]:
        if os.sep in p and not os.path.exists(p):
            continue
        try:
            return ctypes.CDLL(p)
        except OSError as e:
            tried.append(p)
            why.append(str(e))
    raise OSError(f"{name}.so: " + (f"{why[0]}" + (f" (also tried {', '.join(tried[1:])})"
                                                    if len(tried) > 1 else "")
                                    if why else "not found"))
