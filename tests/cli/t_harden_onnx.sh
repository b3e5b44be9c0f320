# t_harden_onnx.sh: ONNX models as untrusted input (issue 25): external data that is
# a symbolic link, passes through one, or is a FIFO; a model that is a FIFO; messages
# nested past protobuf-c's stack; float-only ops on bool inputs; ConvTranspose
# attributes shorter than its spatial dims; --input-shape names that fix nothing.
# The models are written here by mk.py, protobuf by hand (no onnx module needed).

cat >"$TMP/mk.py" <<'PY'
# mk.py KIND OUT [ARG]: a small ONNX model, its protobuf written by hand.
import struct, sys

def varint(v):
    out = b""
    while True:
        b, v = v & 0x7f, v >> 7
        if not v:
            return out + bytes([b])
        out += bytes([b | 0x80])

def key(f, wt): return varint(f << 3 | wt)
def vi(f, v): return key(f, 0) + varint(v & ((1 << 64) - 1))
def ld(f, b): return key(f, 2) + varint(len(b)) + (b.encode() if isinstance(b, str) else b)

FLOAT, BOOL = 1, 9

def value_info(name, elem, dims):     # ValueInfoProto: a tensor type; str dims symbolic
    shape = b"".join(ld(1, vi(1, d) if isinstance(d, int) else ld(2, d)) for d in dims)
    return ld(1, name) + ld(2, ld(1, vi(1, elem) + ld(2, shape)))

def tensor(name, elem, dims, raw=None, external=None):    # TensorProto
    t = b"".join(vi(1, d) for d in dims) + vi(2, elem) + ld(8, name)
    if raw is not None:
        t += ld(9, raw)
    if external is not None:
        t += b"".join(ld(13, ld(1, k) + ld(2, v)) for k, v in external) + vi(14, 1)
    return t

def node(op, ins, outs, attrs=b""):   # NodeProto
    return b"".join(ld(1, i) for i in ins) + b"".join(ld(2, o) for o in outs) + \
        ld(3, outs[0]) + ld(4, op) + attrs

def graph(nodes, inits, ins, outs):   # GraphProto
    return b"".join(ld(1, n) for n in nodes) + ld(2, "g") + \
        b"".join(ld(5, t) for t in inits) + b"".join(ld(11, v) for v in ins) + \
        b"".join(ld(12, v) for v in outs)

kind, out = sys.argv[1], sys.argv[2]
arg = sys.argv[3] if len(sys.argv) > 3 else ""
if kind == "external":      # y = x + w, w f32[3] in the file ARG
    g = graph([node("Add", ["x", "w"], ["y"])],
              [tensor("w", FLOAT, [3], external=[("location", arg), ("offset", "0"),
                                                  ("length", "12")])],
              [value_info("x", FLOAT, [3])], [value_info("y", FLOAT, [])])
elif kind == "nested":      # ARG graph attributes, each in a node of the graph above
    g = graph([node("Relu", ["x"], ["y"])], [], [value_info("x", FLOAT, [3])],
              [value_info("y", FLOAT, [])])
    for _ in range(int(arg)):
        at = ld(1, "body") + vi(20, 5) + ld(6, g)
        g = graph([node("Relu", ["x"], ["y"], ld(5, at))], [],
                  [value_info("x", FLOAT, [3])], [value_info("y", FLOAT, [])])
elif kind == "bool":        # op ARG of bool inputs (InstanceNormalization: x, scale, B)
    ins = ["x", "s", "b"] if arg == "InstanceNormalization" else ["x"]
    g = graph([node(arg, ins, ["y"])], [],
              [value_info("x", BOOL, [1, 2, 3, 1])] +
              [value_info(n, BOOL, [2]) for n in ins[1:]], [value_info("y", BOOL, [])])
elif kind == "convt":       # a 2-D ConvTranspose with the ints attribute ARG (NAME=V,V..)
    name, vals = arg.split("=")
    at = ld(1, name) + vi(20, 7) + b"".join(vi(8, int(v)) for v in vals.split(","))
    g = graph([node("ConvTranspose", ["x", "w"], ["y"], ld(5, at))],
              [tensor("w", FLOAT, [1, 1, 2, 2], raw=struct.pack("<4f", 1, 2, 3, 4))],
              [value_info("x", FLOAT, [1, 1, 3, 3])], [value_info("y", FLOAT, [])])
elif kind == "symbolic":    # y = relu(x + w), x f32[batch, 3]; w an initializer and input
    g = graph([node("Add", ["x", "w"], ["s"]), node("Relu", ["s"], ["y"])],
              [tensor("w", FLOAT, [3], raw=struct.pack("<3f", 1, 2, 3))],
              [value_info("x", FLOAT, ["batch", 3]), value_info("w", FLOAT, [3])],
              [value_info("y", FLOAT, [])])
with open(out, "wb") as f:
    f.write(vi(1, 8) + ld(8, ld(1, "") + vi(2, 17)) + ld(7, g))   # ModelProto
PY
mk() { python3 "$TMP/mk.py" "$@"; }

# ---- external data: a regular file beside the model, or beneath it ---------------
X=$TMP/ext
mkdir -p "$X/sub" "$TMP/outside"
python3 -c 'import struct, sys; open(sys.argv[1], "wb").write(struct.pack("<3f", 1, 2, 3))' "$X/w.bin"
cp "$X/w.bin" "$X/sub/w.bin"
printf 'secret, not the model'"'"'s\n' >"$TMP/outside/secret.bin"
mk external "$X/plain.onnx" w.bin
check harden-onnx-ext-plain 0 "$FUSEC" normalize "$X/plain.onnx"
mk external "$X/beneath.onnx" sub/w.bin
check harden-onnx-ext-beneath 0 "$FUSEC" normalize "$X/beneath.onnx"
# the model's own folder may be reached through a link: the user named it
ln -s "$X" "$TMP/ext-link"
check harden-onnx-ext-model-folder-link 0 "$FUSEC" normalize "$TMP/ext-link/plain.onnx"

# a link to a file outside the folder would copy it into NAME.weights.bin
ln -s "$TMP/outside/secret.bin" "$X/link.bin"
mk external "$X/link.onnx" link.bin
check harden-onnx-ext-symlink 1 "$FUSEC" compile "$X/link.onnx" -o "$TMP/c-link" &&
	same harden-onnx-ext-symlink-msg "$TMP/err" "$X/link.onnx: error: initializer 'w': external data location 'link.bin' is a symbolic link or passes through one (refused: it could name any file)"
check harden-onnx-ext-symlink-nothing-written 1 test -e "$TMP/c-link/link.weights.bin"
# ... or to a folder that the location passes through
ln -s "$TMP/outside" "$X/out"
mk external "$X/through.onnx" out/secret.bin
check harden-onnx-ext-through-link 1 "$FUSEC" normalize "$X/through.onnx" &&
	contains harden-onnx-ext-through-link-msg "$TMP/err" "external data location 'out/secret.bin' is a symbolic link or passes through one"
ln -s sub "$X/sub-link"
mk external "$X/through-inside.onnx" sub-link/w.bin
check harden-onnx-ext-through-inner-link 1 "$FUSEC" import "$X/through-inside.onnx" -o "$TMP/i.yaml" &&
	contains harden-onnx-ext-through-inner-link-msg "$TMP/err" "is a symbolic link or passes through one"
# absolute paths and '..' were refused already
mk external "$X/abs.onnx" "$TMP/outside/secret.bin"
check harden-onnx-ext-absolute 1 "$FUSEC" normalize "$X/abs.onnx" &&
	contains harden-onnx-ext-absolute-msg "$TMP/err" "leaves the model's folder"
mk external "$X/up.onnx" sub/../../outside/secret.bin
check harden-onnx-ext-dotdot 1 "$FUSEC" normalize "$X/up.onnx" &&
	contains harden-onnx-ext-dotdot-msg "$TMP/err" "leaves the model's folder"
# a folder, and a FIFO, which blocked the open for ever
mk external "$X/folder.onnx" sub
check harden-onnx-ext-folder 1 "$FUSEC" normalize "$X/folder.onnx" &&
	contains harden-onnx-ext-folder-msg "$TMP/err" "external data location 'sub' is a folder, not a regular file"
mkfifo "$X/fifo.bin"
mk external "$X/fifo.onnx" fifo.bin
check harden-onnx-ext-fifo 1 timeout 10 "$FUSEC" compile "$X/fifo.onnx" -o "$TMP/c-fifo" &&
	contains harden-onnx-ext-fifo-msg "$TMP/err" "initializer 'w': external data location 'fifo.bin' is a pipe (FIFO), not a regular file"
# the model itself a FIFO
mkfifo "$TMP/model-fifo.onnx"
check harden-onnx-model-fifo 1 timeout 10 "$FUSEC" normalize "$TMP/model-fifo.onnx" &&
	contains harden-onnx-model-fifo-msg "$TMP/err" "not a regular file (a pipe)"

# ---- nesting: protobuf-c recurses per level; 5,000 graphs in graphs overflowed ------
mk nested "$TMP/deep.onnx" 5000
for c in normalize "compile -o $TMP/c-deep" "import -o $TMP/deep.yaml"; do
	n=harden-onnx-nested-$(echo "$c" | cut -d' ' -f1)
	check "$n" 1 $FUSEC $c "$TMP/deep.onnx" &&
		same "$n-msg" "$TMP/err" "$TMP/deep.onnx: error: not supported: messages nested more than 100 deep (graphs in the attributes of graphs, or types in types)"
done
# 31 levels of graphs nest 98 messages deep (the dims of an input's type the deepest)
mk nested "$TMP/nested-ok.onnx" 31
check harden-onnx-nested-ok 0 "$FUSEC" normalize "$TMP/nested-ok.onnx"
mk nested "$TMP/nested-over.onnx" 32
check harden-onnx-nested-over 1 "$FUSEC" normalize "$TMP/nested-over.onnx"

# ---- float-only ops on bool inputs: a NULL dereference in reduce_axes -------------
for op in InstanceNormalization MeanVarianceNormalization; do
	mk bool "$TMP/b.onnx" $op
	check harden-onnx-bool-$op 1 "$FUSEC" normalize "$TMP/b.onnx" &&
		same harden-onnx-bool-$op-msg "$TMP/err" "$TMP/b.onnx: error: node 0 'y' ($op, opset 17): needs a float input, got bool"
done

# ---- ConvTranspose: a list attribute shorter than the spatial dims was read at v[-1]
mk convt "$TMP/ct.onnx" output_shape=5
check harden-onnx-convt-output-shape 1 "$FUSEC" normalize "$TMP/ct.onnx" &&
	same harden-onnx-convt-output-shape-msg "$TMP/err" "$TMP/ct.onnx: error: node 0 'y' (ConvTranspose, opset 17): output_shape has 1 values for 2 spatial dims (give 2, or 4 with N and C)"
for a in strides=2 dilations=1 output_padding=0; do
	mk convt "$TMP/ct.onnx" $a
	check harden-onnx-convt-${a%=*} 1 "$FUSEC" normalize "$TMP/ct.onnx" &&
		contains harden-onnx-convt-${a%=*}-msg "$TMP/err" "${a%=*} has 1 values for 2 spatial dims"
done
for a in output_shape=5,5 output_shape=1,1,5,5 strides=2,2; do
	mk convt "$TMP/ct.onnx" $a
	check harden-onnx-convt-ok-$a 0 "$FUSEC" normalize "$TMP/ct.onnx"
done

# ---- --input-shape that fixes nothing -------------------------------------------
mk symbolic "$TMP/sym.onnx"
check harden-onnx-input-shape 0 "$FUSEC" normalize "$TMP/sym.onnx" --input-shape x=2x3
# an initializer listed as an input was silently left as it is
check harden-onnx-input-shape-initializer 1 "$FUSEC" normalize "$TMP/sym.onnx" --input-shape x=2x3 --input-shape w=7 &&
	same harden-onnx-input-shape-initializer-msg "$TMP/err" "$TMP/sym.onnx: error: --input-shape: input 'w' is an initializer (a constant): its shape is its data's"
# a misspelt name is the error, not the symbolic dim it did not fix; the inputs listed
check harden-onnx-input-shape-typo 1 "$FUSEC" run "$TMP/sym.onnx" --input-shape X=2x3 &&
	same harden-onnx-input-shape-typo-msg "$TMP/err" "$TMP/sym.onnx: error: --input-shape: the model has no input 'X' (its inputs: 'x')"
# a compiled plan of fixed shapes has no inputs to shape; nor has `fusec ops`
check harden-onnx-input-shape-compile 0 "$FUSEC" compile -q "$TMP/sym.onnx" --input-shape x=2x3 -o "$TMP/plan"
check harden-onnx-input-shape-plan 1 "$FUSEC" run "$TMP/plan" --backend cuda --input-shape x=4x3 &&
	same harden-onnx-input-shape-plan-msg "$TMP/err" "$TMP/plan/sym.plan.json: error: --input-shape applies to a graph, a model or a plan for every size; this plan has its shapes"
check harden-onnx-input-shape-bench-plan 1 "$FUSEC" bench "$TMP/plan" --input-shape x=4x3 &&
	same harden-onnx-input-shape-bench-plan-msg "$TMP/err" "$TMP/plan/sym.plan.json: error: --input-shape applies to a graph, a model or a plan for every size; this plan has its shapes"
check harden-onnx-input-shape-ops 2 "$FUSEC" ops --input-shape x=4x3
