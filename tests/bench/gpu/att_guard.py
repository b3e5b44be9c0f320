#!/usr/bin/env python3
"""att_guard.py: an attention chain with transformers' NaN guard after the softmax,
for the numeric check of the attention op's zero_nan (docs/design.md, "The NaN
guard"): KEYS keys and queries (200), head dim DIM (64), a mask that hides every
key past i + 5 and every key of rows 3 and 2 KEYS / 3 with -inf (their weights are
NaN, the guard makes them 0).

usage: att_guard.py OUT.yaml f32|bf16|f16 [KEYS [DIM]]
then:  sh tests/bench/gpu/check_direct.sh T/fusec OUT.yaml (tests/cli/t_attention.sh
runs a small one on the cpu backend)"""
import sys

if len(sys.argv) not in (3, 4, 5) or sys.argv[2] not in ("f32", "bf16", "f16"):
    sys.exit(__doc__)
dt = sys.argv[2]
S = int(sys.argv[3]) if len(sys.argv) > 3 else 200
D = int(sys.argv[4]) if len(sys.argv) > 4 else 64
mask = ", ".join("true" if j > i + 5 or i in (3, 2 * S // 3) else "false"
                 for i in range(S) for j in range(S))
open(sys.argv[1], "w").write(f"""format: fusec-graph/1
name: guard
inputs:
  q: {{dtype: {dt}, shape: [2, 3, {S}, {D}]}}
  kt: {{dtype: {dt}, shape: [2, 3, {D}, {S}]}}
  v: {{dtype: {dt}, shape: [2, 3, {S}, {D}]}}
constants:
  c: {{dtype: bool, shape: [1, 1, {S}, {S}], data: [{mask}]}}
  f: {{dtype: {dt}, shape: [1, 1, 1, 1], data: [-.inf]}}
  z: {{dtype: {dt}, shape: [1, 1, 1, 1], data: [0]}}
ops:
  - {{op: matmul, in: [q, kt], out: s}}
  - {{op: mul_scalar, in: [s], out: s1, scalar: {D ** -0.5}}}
  - {{op: where, in: [c, f, s1], out: x}}
  - {{op: max_dim, in: [x], out: m, axis: 3}}
  - {{op: sub, in: [x, m], out: d}}
  - {{op: exp, in: [d], out: e}}
  - {{op: sum, in: [e], out: l, axis: 3}}
  - {{op: div, in: [e, l], out: p}}
  - {{op: is_nan, in: [p], out: n}}
  - {{op: where, in: [n, z, p], out: p2}}
  - {{op: matmul, in: [p2, v], out: y}}
outputs: [y]
""")
