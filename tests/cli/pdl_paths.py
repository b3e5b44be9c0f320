# pdl_paths.py PTX...: every kernel of each PTX file waits for the grids before it
# (griddepcontrol.wait) on every path from its entry before any global or generic
# memory access and before a TMA copy (programmatic dependent launch,
# docs/design.md). Before the wait a kernel may read its parameters, use
# shared memory and mbarriers, and prefetch (tensor maps; tensor tiles into L2).
# Prints one line per kernel; exit status 1 when one breaks the rule, or when no
# kernel has a ws prologue (mbarrier init, tensor-map and L2 prefetch) before its
# wait and WANT_LATE=1.
import os, re, sys

ALLOWED = re.compile(r"\.(param|shared|local|const)\b")
MEM = re.compile(r"^\s*(?:@!?%p\d+\s+)?(ld|st|atom|red|cp\.async|cp\.reduce)\b")
PREFETCH = re.compile(r"cp\.async\.bulk\.prefetch\.tensor\.\dd\.L2\.")
LABEL = re.compile(r"^\s*(\$[\w$]+):")
BRA = re.compile(r"^\s*(@!?%p\d+\s+)?bra(\.uni)?\s+(\$[\w$]+);")


def kernels(text):
    for m in re.finditer(r"\.entry\s+(\w+)\s*\((.*?)\)\s*(?:\.\w+[^{]*)?\{", text, re.S):
        depth, i = 1, m.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        yield m.group(1), text[m.end():i - 1]


def check(name, body):
    lines = [l for l in body.split("\n") if l.strip() and not l.strip().startswith("//")]
    at = {}
    for i, l in enumerate(lines):
        g = LABEL.match(l)
        if g:
            at[g.group(1)] = i
    seen, stack, bad, before = set(), [0], [], set()
    while stack:
        i = stack.pop()
        while i < len(lines) and i not in seen:
            seen.add(i)
            l = lines[i]
            if "griddepcontrol.wait" in l:
                break
            before.add(i)
            m = MEM.match(l)
            if m and (not PREFETCH.search(l) if m.group(1) == "cp.async"
                      else not ALLOWED.search(l)):
                bad.append(l.strip())
            if re.match(r"^\s*(ret|exit);", l):
                break
            b = BRA.match(l)
            if b:
                stack.append(at[b.group(3)])
                if not b.group(1):
                    break
            i += 1
    head = "\n".join(lines[i] for i in sorted(before))
    late = all(s in head for s in ("mbarrier.init", "prefetch.tensormap",
                                   "cp.async.bulk.prefetch.tensor"))
    return bad, late


fails, late = 0, 0
for f in sys.argv[1:]:
    for name, body in kernels(open(f).read()):
        bad, l = check(name, body)
        late += l
        print(f"{name}: {'ok' if not bad else 'FAIL'}{' (ws prologue before its wait)' if l else ''}")
        for b in bad[:5]:
            print("   ", b)
        fails += bool(bad)
if os.environ.get("WANT_LATE") == "1" and not late:
    print("no kernel has the ws prologue before its wait")
    fails += 1
sys.exit(1 if fails else 0)
