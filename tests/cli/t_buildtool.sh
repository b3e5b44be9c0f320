# t_buildtool.sh: fusec in build pipelines: --version, the line naming what compile
# wrote (and -q), output names from the graph's name, -M/--depfile, and
# --diagnostics json.
G=tests/golden
check version 0 "$FUSEC" --version
contains version-fusec "$TMP/out" "fusec "
grep -Eq '^LLVM 19\.[0-9]+\.[0-9]+' "$TMP/out" && pass=$((pass + 1)) ||
	{ echo "FAIL version-llvm"; cat "$TMP/out"; fail=$((fail + 1)); }
contains version-arch "$TMP/out" "default arch sm_90a"
fmt=$(sed -n 's/^plan format //p' "$TMP/out")

# names follow the graph's `name`: a file lone.yaml naming itself "lone", and a
# graph read from tf1.json whose name is transformer_1
sed 's/^name: .*/name: transformer_1/' $G/lone.yaml > "$TMP/tf1.yaml"
check names 0 "$FUSEC" compile "$TMP/tf1.yaml" -o "$TMP/n"
same names-line "$TMP/out" "wrote $TMP/n/transformer_1.plan.json $TMP/n/transformer_1.ptx"
[ -f "$TMP/n/transformer_1.ptx" ] && [ ! -e "$TMP/n/tf1.ptx" ] && pass=$((pass + 1)) ||
	{ echo "FAIL names-files: $(ls "$TMP/n")"; fail=$((fail + 1)); }
contains version-plan-format "$TMP/n/transformer_1.plan.json" "\"format\":\"$fmt\""
check quiet 0 "$FUSEC" compile $G/lone.yaml -q -o "$TMP/q"
same quiet-silent "$TMP/out" ""
check emit-line 0 "$FUSEC" compile $G/lone.yaml --emit dot -o "$TMP/e"
same emit-line-text "$TMP/out" "wrote $TMP/e/lone.plan.json $TMP/e/lone.ptx $TMP/e/lone.dot"

# -M: a make rule naming the outputs and the graph; make then rebuilds only when
# the graph is newer
cp $G/lone.yaml "$TMP/g.yaml"
check depfile 0 "$FUSEC" compile "$TMP/g.yaml" -o "$TMP/d" -M "$TMP/d.mk" -q
same depfile-text "$TMP/d.mk" "$TMP/d/lone.plan.json $TMP/d/lone.ptx: $TMP/g.yaml

$TMP/g.yaml:"
printf 'all: %s\n%s:\n\t@echo rebuild\ninclude %s\n' "$TMP/d/lone.plan.json" \
	"$TMP/d/lone.plan.json" "$TMP/d.mk" > "$TMP/Makefile"
check depfile-make 0 env MAKEFLAGS= MAKELEVEL= make -s --no-print-directory -f "$TMP/Makefile"
same depfile-uptodate "$TMP/out" ""
touch -d '+2 seconds' "$TMP/g.yaml"
check depfile-make-again 0 env MAKEFLAGS= MAKELEVEL= make -s --no-print-directory -f "$TMP/Makefile"
same depfile-stale "$TMP/out" "rebuild"
check depfile-long 0 "$FUSEC" compile "$TMP/g.yaml" -o "$TMP/d2" --depfile "$TMP/d2.mk" -q
[ -f "$TMP/d2.mk" ] && pass=$((pass + 1)) || { echo "FAIL depfile-long"; fail=$((fail + 1)); }
rm -rf "$TMP/bad"
check depfile-bad 1 "$FUSEC" compile tests/errors/typo_op.yaml -o "$TMP/bad" -M "$TMP/bad.mk"
[ ! -e "$TMP/bad.mk" ] && pass=$((pass + 1)) || { echo "FAIL depfile-bad: written"; fail=$((fail + 1)); }

# --diagnostics json: one JSON line per error with file, line, col, code, message
check diag-json 1 "$FUSEC" compile tests/errors/typo_op.yaml --diagnostics json -o "$TMP/bad"
same diag-json-text "$TMP/err" '{"severity":"error","file":"tests/errors/typo_op.yaml","line":5,"col":10,"code":"invalid-input","message":"ops[0].op: unknown op '"'relue'; did you mean 'relu'?"'"}'
check diag-json-env 2 env FUSEC_DIAGNOSTICS=json "$FUSEC" compile
same diag-json-usage "$TMP/err" '{"severity":"error","file":null,"line":0,"col":0,"code":"usage","message":"expected one GRAPH argument"}'
check diag-bad 2 "$FUSEC" --diagnostics xml compile $G/lone.yaml
# Several errors in one file: every one, in order, one JSON line each; --max-errors
# stops early and says so.
check diag-json-multi 1 "$FUSEC" --diagnostics json normalize tests/errors/multi_errors.yaml
same diag-json-multi-text "$TMP/err" '{"severity":"error","file":"tests/errors/multi_errors.yaml","line":3,"col":14,"code":"invalid-input","message":"inputs.x.dtype: unknown dtype '"'float32'; did you mean 'f32'?"'"}
{"severity":"error","file":"tests/errors/multi_errors.yaml","line":7,"col":10,"code":"invalid-input","message":"ops[0].op: unknown op '"'relue'; did you mean 'relu'?"'"}
{"severity":"error","file":"tests/errors/multi_errors.yaml","line":9,"col":5,"code":"invalid-input","message":"op '"'add' (ops[2]): ranks 2 and 1 differ ([8,64] and [8]); operands broadcast only at the same rank: reshape the [8] operand to [8,1] first"'"}
{"severity":"error","file":"tests/errors/multi_errors.yaml","line":10,"col":24,"code":"invalid-input","message":"ops[3]: unknown attribute '"'axes' for op 'sum'; did you mean 'axis'? ('sum' takes: axis)"'"}
{"severity":"error","file":"tests/errors/multi_errors.yaml","line":12,"col":20,"code":"invalid-input","message":"ops[5].in[0]: tensor '"'q' is not defined above"'"}
{"severity":"error","file":"tests/errors/multi_errors.yaml","line":13,"col":24,"code":"invalid-input","message":"ops[6]: unknown key '"'otu'; did you mean 'out'?"'"}'
check max-errors-2 1 "$FUSEC" normalize tests/errors/multi_errors.json --max-errors 2
same max-errors-2-text "$TMP/err" "tests/errors/multi_errors.json:2:68: error: inputs.m.dtype: unknown dtype 'boolean'; did you mean 'bool'?
tests/errors/multi_errors.json:3:60: error: constants.w.data: has 3 values, the shape needs 8
tests/errors/multi_errors.json: error: stopped after 2 errors (--max-errors N reports more)"
check max-errors-1 1 "$FUSEC" --max-errors=1 compile tests/errors/multi_errors.json -o "$TMP/bad"
same max-errors-1-text "$TMP/err" "tests/errors/multi_errors.json:2:68: error: inputs.m.dtype: unknown dtype 'boolean'; did you mean 'bool'?"
check max-errors-bad 2 "$FUSEC" normalize tests/errors/multi_errors.json --max-errors 0

# the depfile lists the .npy files constants come from
python3 - "$TMP/w.npy" <<'PY'
import struct, sys
hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }"
hdr += " " * (64 - 10 - len(hdr) - 1) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
    f.write(struct.pack("<4f", 1, 2, 3, 4))
PY
cat > "$TMP/c.yaml" <<'YAML'
format: fusec-graph/1
name: consts
inputs:
  x: {dtype: f32, shape: [4]}
constants:
  w: {dtype: f32, shape: [4], npy: w.npy}
ops:
  - {op: mul, in: [x, w], out: y}
outputs: [y]
YAML
check depfile-npy 0 "$FUSEC" compile "$TMP/c.yaml" -o "$TMP/c" -M "$TMP/c.mk" -q
contains depfile-npy-rule "$TMP/c.mk" "$TMP/c/consts.plan.json $TMP/c/consts.ptx $TMP/c/consts.weights.bin: $TMP/c.yaml $TMP/w.npy"

# ... and an ONNX model's external data files (two initializers, one in a subfolder),
# each with a phony rule. The model is written byte by byte (protobuf wire format).
mkdir -p "$TMP/ext/data"
python3 - "$TMP/ext" <<'PY'
import struct, sys
def varint(n):
    out = b""
    while True:
        b = n & 0x7f; n >>= 7
        out += bytes([b | (0x80 if n else 0)])
        if not n: return out
def fv(f, n): return varint(f << 3) + varint(n)
def fb(f, b): b = b.encode() if isinstance(b, str) else b; return varint(f << 3 | 2) + varint(len(b)) + b
def tensor(name, loc):   # a [3] f32 initializer whose bytes lie in the file loc
    return fv(1, 3) + fv(2, 1) + fb(8, name) + fb(13, fb(1, "location") + fb(2, loc)) + fv(14, 1)
vi = lambda n: fb(1, n) + fb(2, fb(1, fv(1, 1) + fb(2, fb(1, fv(1, 3)))))
node = lambda a, b, o: fb(1, a) + fb(1, b) + fb(2, o) + fb(4, "Add")
graph = (fb(1, node("x", "w", "t")) + fb(1, node("t", "v", "y")) + fb(2, "g") +
         fb(5, tensor("w", "w.bin")) + fb(5, tensor("v", "data/v.bin")) + fb(11, vi("x")) + fb(12, vi("y")))
d = sys.argv[1]
open(d + "/ext.onnx", "wb").write(fv(1, 8) + fb(7, graph) + fb(8, fb(1, "") + fv(2, 15)))
open(d + "/w.bin", "wb").write(struct.pack("<3f", 1, 2, 3))
open(d + "/data/v.bin", "wb").write(struct.pack("<3f", 4, 5, 6))
PY
check depfile-onnx-external 0 "$FUSEC" compile "$TMP/ext/ext.onnx" -o "$TMP/ext/out" -M "$TMP/ext.mk" -q
same depfile-onnx-external-rules "$TMP/ext.mk" "$TMP/ext/out/ext.plan.json $TMP/ext/out/ext.ptx $TMP/ext/out/ext.weights.bin: $TMP/ext/ext.onnx $TMP/ext/w.bin $TMP/ext/data/v.bin

$TMP/ext/ext.onnx:

$TMP/ext/w.bin:

$TMP/ext/data/v.bin:"
