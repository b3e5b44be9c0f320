"""_libs.py: finds and opens fusec's two shared libraries for ctypes.

libfusec.so (<fusec.h>, the compiler) and libfusecrt.so (<fusecrt.h>, the runtime)
are looked for, in order: in FUSEC_LIBDIR; in the build folder of a source tree
this package sits in (lib/python/fusec -> build/, after `make`); in the prefix it
was installed under by `make install` (PREFIX/share/fusec/python/fusec ->
PREFIX/lib); then by the dynamic loader's own search path (a `pip install`ed
package next to libraries in /usr/local/lib)."""
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
    for p in candidates(name):
        if os.path.exists(p):
            return ctypes.CDLL(p)
    return ctypes.CDLL(name + ".so.0")
