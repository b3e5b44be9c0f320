#!/bin/sh
# gen_ptx.sh: regenerate axpb.ptx from axpb.cu (needs nvcc; run from this folder).
# nvcc writes the PTX ISA version of its own toolkit; the kernels use nothing
# newer than PTX 7.8 (what LLVM 19 emits for sm_90), so the version line is
# lowered to 7.8 and older drivers can JIT the fixture too.
set -eu
nvcc -ptx -arch=sm_90 -O3 -o axpb.ptx axpb.cu
sed -i 's/^\.version .*/.version 7.8/' axpb.ptx
ptxas -arch=sm_90 -o /dev/null axpb.ptx
# The plan records the PTX's hash (docs/reliability.md).
sed -i "s/\"ptx_sha256\": \"[0-9a-f]*\"/\"ptx_sha256\": \"$(sha256sum axpb.ptx | cut -d' ' -f1)\"/" axpb.plan.json
