#!/bin/sh
# expect.sh: the expected outputs of the numeric check, G/expect/NAME/ from `fusec run
# --backend interp --seed 1` (the reference and its bounds), for every check graph,
# JOBS at a time. A plan folder named NAME__CONFIG (a configuration forced with
# FUSEC_MATMUL_TILES, prepare.sh's WG_FORCED) shares NAME's expectations.
# Runs on the build machine (prepare.sh) or on the GPU machine with a static fusec:
#   FUSEC=G/fusec-static JOBS=16 sh tests/bench/gpu/expect.sh G
set -eu
G=$1
FUSEC=${FUSEC:-build/fusec}
JOBS=${JOBS:-2}
rm -rf "$G/expect"
mkdir -p "$G/expect"
for g in tests/bench/gpu/allops_*.json tests/bench/gpu/mm_check_*.json tests/bench/gpu/mm_siblings_*.json tests/bench/gpu/conv_check_*.json tests/bench/gpu/att_*.json tests/bench/gpu/reduce_odd.json tests/bench/gpu/reduce_cache.json tests/bench/gpu/reduce_fixed.json tests/golden/*.yaml; do
	echo "$g"
done | FUSEC=$FUSEC G=$G xargs -P "$JOBS" -I{} sh -c '
	g={}; n=$(basename "${g%.*}")
	case $n in *tf32*) tf32=--allow-tf32 ;; *) tf32= ;; esac
	"$FUSEC" run "$g" --backend interp --seed 1 $tf32 --outputs "$G/expect/$n" > /dev/null'
for p in "$G"/plans/*__*/; do
	[ -d "$p" ] || continue
	n=$(basename "$p")
	[ ! -d "$G/expect/${n%%__*}" ] || cp -r "$G/expect/${n%%__*}" "$G/expect/$n"
done
