#!/bin/sh
# prepare_mm_sweep.sh: builds, on the build machine, the folder of the matmul
# under-a-wave measurement (docs/benchmarks.md, "Matmul under a wave"):
#   D/G/fusec-run, D/G/libcjson.so.1   the launcher and its library
#   D/G/plans/mm_check_split_T__C/     mm_check_split_T.json compiled with
#   D/G/expect/mm_check_split_T__C/    FUSEC_MATMUL_TILES=C, and its interpreter
#                                      expectations (run_gpu.sh D/G check)
#   D/S/graphs/NAME.json               mm_sweep.py's shapes
#   D/S/plans/C/NAME/                  each compiled with FUSEC_MATMUL_TILES=C (f32
#                                      configurations for f32 graphs, tc for bf16)
#   D/mm_sweep.py                      the sweep (the GPU machine runs main's tree)
# Usage: sh tests/bench/gpu/prepare_mm_sweep.sh D "F32 CONFIGS" "BF16 CONFIGS"
set -eu
D=$1
F32=$2
BF16=$3
FUSEC=${FUSEC:-build/fusec}
here=$(dirname "$0")
rm -rf "$D/G" "$D/S"
mkdir -p "$D/G/plans" "$D/G/expect" "$D/S/plans"
cp "$(dirname "$FUSEC")/fusec-run" "$D/G/"
cp "$(ldconfig -p | awk '/libcjson\.so\.1 /{print $NF; exit}')" "$D/G/"
cp "$here/mm_sweep.py" "$D/"
for t in f32 bf16; do
	g=$here/mm_check_split_$t.json
	"$FUSEC" run "$g" --backend interp --seed 1 --outputs "$D/G/expect/mm_check_split_$t" > /dev/null
	if [ $t = f32 ]; then cfgs=$F32; else cfgs=$BF16; fi
	for c in $cfgs; do
		n=mm_check_split_${t}__$c
		FUSEC_MATMUL_TILES=$c "$FUSEC" compile "$g" --no-cache -o "$D/G/plans/$n" > /dev/null
		grep -q "\"tiles\": *\"$c\"" "$D/G/plans/$n"/*.plan.json ||
			{ echo "$n: $c not taken" >&2; exit 1; }
		cp -r "$D/G/expect/mm_check_split_$t" "$D/G/expect/$n"
	done
	rm -rf "$D/G/expect/mm_check_split_$t"
done
python3 "$here/mm_sweep.py" make "$D/S/graphs"
for g in "$D"/S/graphs/*.json; do
	n=$(basename "${g%.json}")
	case $n in *bf16*) cfgs=$BF16 ;; *) cfgs=$F32 ;; esac
	for c in $cfgs; do
		FUSEC_MATMUL_TILES=$c "$FUSEC" compile "$g" --no-cache -o "$D/S/plans/$c/$n" > /dev/null
	done
	"$FUSEC" compile "$g" --no-cache -o "$D/S/plans/rule/$n" > /dev/null
done
du -sh "$D"
