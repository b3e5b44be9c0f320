"""onnx_wire.py: ONNX models encoded by hand, for CLI tests that need a model the
onnx package is not there to write (protobuf's wire format: varints and
length-delimited fields, field numbers from onnx.proto)."""

import struct


def varint(v):
    out = b""
    v &= (1 << 64) - 1
    while True:
        b, v = v & 0x7f, v >> 7
        out += bytes([b | (0x80 if v else 0)])
        if not v:
            return out


def field(n, v):
    """A varint field (an int) or a length-delimited one (str or bytes)."""
    if isinstance(v, int):
        return varint(n << 3) + varint(v)
    v = v.encode() if isinstance(v, str) else v
    return varint(n << 3 | 2) + varint(len(v)) + v


def value(name, dims):
    """ValueInfoProto of a float tensor: dims are sizes or dim_param names."""
    shape = b"".join(field(1, field(2, d) if isinstance(d, str) else field(1, d)) for d in dims)
    return field(1, name) + field(2, field(1, field(1, 1) + field(2, shape)))


def model(graph, opset=17):
    """ModelProto (IR version 8) around an encoded GraphProto."""
    return field(1, 8) + field(8, field(1, "") + field(2, opset)) + field(7, graph)


def ints(name, vals, dims):
    """TensorProto of an int64 initializer."""
    return (b"".join(field(1, d) for d in dims) + field(2, 7) +
            b"".join(field(7, v) for v in vals) + field(8, name))


def floats(name, vals, dims):
    """TensorProto of a float initializer (raw little-endian data)."""
    return (b"".join(field(1, d) for d in dims) + field(2, 1) + field(8, name) +
            field(9, struct.pack("<%df" % len(vals), *vals)))


def node(op, ins, outs, *attrs):
    """NodeProto named after its first output."""
    return (b"".join(field(1, i) for i in ins) + b"".join(field(2, o) for o in outs) +
            field(3, outs[0]) + field(4, op) + b"".join(field(5, a) for a in attrs))


def attr_int(name, v):
    """AttributeProto of one int."""
    return field(1, name) + field(20, 2) + field(3, v)


def attr_ints(name, vals):
    """AttributeProto of a list of ints."""
    return field(1, name) + field(20, 7) + b"".join(field(8, v) for v in vals)
