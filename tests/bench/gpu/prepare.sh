#!/bin/sh
# prepare.sh: builds, on the build machine, the folder the GPU machine needs:
#   G/fusec-run, G/libcjson.so.1        the launcher and its one library
#   G/plans/NAME/                        `fusec compile` of every benchmark and check graph
#                                        (NAME *tf32*: with --allow-tf32)
#   G/expect/NAME/                       `fusec run --backend interp --seed 1` outputs
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
	"$FUSEC" compile "$g" $tf32 -o "$G/plans/$n" > /dev/null
done
for g in tests/bench/gpu/allops_*.json tests/bench/gpu/mm_check_*.json tests/bench/gpu/reduce_odd.json tests/bench/gpu/reduce_cache.json tests/golden/*.yaml; do
	n=$(basename "${g%.*}")
	case $n in *tf32*) tf32=--allow-tf32 ;; *) tf32= ;; esac
	"$FUSEC" run "$g" --backend interp --seed 1 $tf32 --outputs "$G/expect/$n" > /dev/null
done
du -sh "$G"
