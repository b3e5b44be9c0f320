#!/bin/sh
# prepare.sh: builds, on the build machine, the folder the GPU machine needs:
#   G/fusec-run, G/libcjson.so.1        the launcher and its one library
#   G/plans/NAME/                        `fusec compile` of every benchmark and check graph
#                                        (NAME *tf32*: with --allow-tf32)
#   G/plans/NAME__CONFIG/                the matmul check graphs with a configuration forced,
#                                        and NAME__sm_90 compiled for sm_90 (mma.sync)
#   G/expect/NAME/                       `fusec run --backend interp --seed 1` outputs
#                                        (expect.sh; NO_EXPECT=1 leaves them out)
# Usage: sh tests/bench/gpu/prepare.sh G   (after `make`; then carry G to the GPU
# machine and run tests/bench/gpu/run_gpu.sh there)
set -eu
G=$1
FUSEC=${FUSEC:-build/fusec}
rm -rf "$G/plans" "$G/expect"
mkdir -p "$G/plans" "$G/expect"
cp "$(dirname "$FUSEC")/fusec-run" "$G/"
cp "$(ldconfig -p | awk '/libcjson\.so\.1 /{print $NF; exit}')" "$G/"
# plan folders are named after the graph's `name` (G6's is transformer_12)
for g in tests/bench/gpu/*.json tests/golden/*.yaml; do
	n=$(sed -n 's/.*"name": *"\([^"]*\)".*/\1/p; s/^name: *\([^ ]*\).*/\1/p' "$g" | head -1)
	[ -n "$n" ] || n=$(basename "${g%.*}")
	# graphs named *tf32* are compiled with --allow-tf32 (and their expected
	# bounds below count tf32 operands)
	case $n in *tf32*) tf32=--allow-tf32 ;; *) tf32= ;; esac
	# the downsampling-block graphs are compiled channels last (their add joins
	# the shortcut conv's epilogue there: docs/burn-fidelity.md row 20)
	case $n in conv_join_*) tf32="$tf32 --layout nhwc" ;; esac
	"$FUSEC" compile "$g" $tf32 -o "$G/plans/$n" > /dev/null
done
# every configuration of the wgmma path forced on the matmul check graphs
# (NAME__CONFIG), so that the check covers each whatever the rule picks
for g in tests/bench/gpu/mm_check_bf16.json tests/bench/gpu/mm_check_f16.json tests/bench/gpu/mm_check_views_bf16.json tests/bench/gpu/mm_check_views_f16.json tests/bench/gpu/mm_check_long_bf16.json tests/bench/gpu/mm_check_long_f16.json; do
	for c in ${WG_FORCED:-wg128x128x64s4 wg128x256x64s4 wg128x128x64s4ws wg128x256x64s4ws wg128x64x64s6ws}; do
		n=$(basename "${g%.*}")__$c
		FUSEC_MATMUL_TILES=$c "$FUSEC" compile "$g" --no-cache -o "$G/plans/$n" > /dev/null
	done
done
# siblings (matmuls sharing an operand, one launch: codegen/matmul_kernel.c) under
# the split-K and wgmma configurations
for c in ${SIB_FORCED:-tc64x64x32s3sk4 wg128x128x64s4 wg128x256x64s4 wg128x128x64s4ws}; do
	FUSEC_MATMUL_TILES=$c "$FUSEC" compile tests/bench/gpu/mm_siblings_bf16.json --no-cache -o "$G/plans/mm_siblings_bf16__$c" > /dev/null
done
FUSEC_MATMUL_TILES=fma64x64x16s3sk3 "$FUSEC" compile tests/bench/gpu/mm_siblings_f32.json --no-cache -o "$G/plans/mm_siblings_f32__fma64x64x16s3sk3" > /dev/null
# 3xTF32 (f32 on wgmma, matmul_wgmma.c): every tile forced on its check graph,
# whose matmuls are under the rule's sizes
for c in ${X3_FORCED:-wgx3x128x128x32s3 wgx3x128x96x32s4 wgx3x128x64x32s4 wgx3x128x64x32s4sk2 wgx3x128x64x32s4sk3 wgx3x128x64x32s4sk4 wgx3x128x64x32s4sk8}; do
	FUSEC_MATMUL_TILES=$c "$FUSEC" compile tests/bench/gpu/mm_check_x3_f32.json --no-cache -o "$G/plans/mm_check_x3_f32__$c" > /dev/null
done
# tiny M: each gemv configuration forced on the gemv check graphs (the rule
# splits K 4 or 16 ways or not, by the shape: matmul_gemv.c)
for t in f32 bf16 f16; do
	for c in gemv8x64k8 gemv8x64k8sk4 gemv8x64k8sk16 gemv8x128k8 gemv8x128k8sk4 gemv8x128k8sk16; do
		FUSEC_MATMUL_TILES=$c "$FUSEC" compile tests/bench/gpu/mm_check_gemv_$t.json --no-cache -o "$G/plans/mm_check_gemv_${t}__$c" > /dev/null
	done
done
# the conv check graphs (implicit GEMMs, codegen/matmul_conv.c) under every tile
# configuration of their dtype (NAME__CONFIG)
# (and the channels-last ones, conv_check_nhwc_*)
for l in "" nhwc_; do
	for c in ${CONV_FORCED_TC:-tc128x128x64s3 tc64x64x32s3 tc128x256x32s4 tc64x64x32s3sk2 tc64x64x32s3sk4 wg128x128x64s4 wg128x256x64s4 tc128x32x32s3}; do
		FUSEC_MATMUL_TILES=$c "$FUSEC" compile tests/bench/gpu/conv_check_${l}bf16.json --no-cache -o "$G/plans/conv_check_${l}bf16__$c" > /dev/null
	done
	FUSEC_MATMUL_TILES=wg128x256x64s4 "$FUSEC" compile tests/bench/gpu/conv_check_${l}f16.json --no-cache -o "$G/plans/conv_check_${l}f16__wg128x256x64s4" > /dev/null
	for c in ${CONV_FORCED_F32:-fma128x128x16s3 fma64x64x16s3 fma64x64x16s3sk3 fma64x64x16s3sk4 fma128x128x16s3sk4}; do
		FUSEC_MATMUL_TILES=$c "$FUSEC" compile tests/bench/gpu/conv_check_${l}f32.json --no-cache -o "$G/plans/conv_check_${l}f32__$c" > /dev/null
	done
	for c in tf32x128x128x16s3 tf32x64x64x32s3; do
		FUSEC_MATMUL_TILES=$c "$FUSEC" compile tests/bench/gpu/conv_check_${l}tf32.json --allow-tf32 --no-cache -o "$G/plans/conv_check_${l}tf32__$c" > /dev/null
	done
done
# the depthwise kernel channels last (codegen/matmul_depthwise.c): each output
# columns a thread forced on every depthwise conv, 16-bit and f32 lanes
for c in wgtf32x128x128x32s4 wgtf32x128x256x32s4; do
	FUSEC_MATMUL_TILES=$c "$FUSEC" compile tests/bench/gpu/conv_check_nhwc_tf32.json --allow-tf32 --no-cache -o "$G/plans/conv_check_nhwc_tf32__$c" > /dev/null
done
for c in dwc4 dwc2 dwc1; do
	for t in bf16 f32; do
		FUSEC_MATMUL_TILES=$c "$FUSEC" compile tests/bench/gpu/conv_check_nhwc_$t.json --no-cache -o "$G/plans/conv_check_nhwc_${t}__$c" > /dev/null
	done
done
# the NCHW conv check graphs rewritten channels last (--layout nhwc, passes/layout.c):
# their inputs and outputs are the graph's, so NAME's expectations hold
for t in f32 bf16 f16 tf32; do
	case $t in tf32) tf32=--allow-tf32 ;; *) tf32= ;; esac
	"$FUSEC" compile tests/bench/gpu/conv_check_$t.json --layout nhwc $tf32 --no-cache -o "$G/plans/conv_check_${t}__nhwc" > /dev/null
done
# the attention kernel (codegen/matmul_attention.c): its wide configuration forced
# on the check graphs' small head dims, and the written-out chain through --attention
# fuse (its expectations are the graph's, unfused)
for t in bf16 f16; do
	for a in att_check att_views; do
		FUSEC_MATMUL_TILES=att128x64d128 "$FUSEC" compile tests/bench/gpu/${a}_$t.json --no-cache -o "$G/plans/${a}_${t}__att128x64d128" > /dev/null
	done
done
"$FUSEC" compile tests/bench/gpu/att_pattern_bf16.json --attention fuse --no-cache -o "$G/plans/att_pattern_bf16__fused" > /dev/null
# the mma.sync path: every matmul check graph for --arch sm_90 too (NAME__sm_90)
for g in tests/bench/gpu/mm_check_*.json tests/bench/gpu/conv_check_*.json; do
	n=$(basename "${g%.*}")
	case $n in *tf32*) tf32=--allow-tf32 ;; *) tf32= ;; esac
	"$FUSEC" compile "$g" --arch sm_90 $tf32 --no-cache -o "$G/plans/${n}__sm_90" > /dev/null
done
# NO_EXPECT=1: leave the expectations to the GPU machine (expect.sh with a static
# fusec): they are hundreds of MB, the plans a few
[ -n "${NO_EXPECT:-}" ] || FUSEC=$FUSEC sh tests/bench/gpu/expect.sh "$G"
du -sh "$G"
