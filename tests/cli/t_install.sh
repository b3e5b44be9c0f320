# t_install.sh: `make install` into a temporary prefix (and under DESTDIR), then
# programs outside the tree link the installed runtime through pkg-config and
# <fusecrt.h> alone: tests/install/use_runtime.c (C11, shared and static) and
# use_runtime.cpp (C++17), each running a compiled plan against the fake driver
# (tests/runtime/fakecuda.c). The same for the compiler: use_compiler.c (C11) and
# use_compiler.cpp (C++17) include <fusec.h> and <fusecrt.h>, compile a YAML graph
# from a string and from a file (the files those of `fusec compile`), run the
# first on the host (fusec_run), get the structured error of a bad graph, and
# load the plan with fusecrt_. Each header compiles by itself, pedantic, as C11
# and as C++17, and each shared library exports its own API only (fusecrt_,
# fusec_).
B=${BUILD:-$(dirname "$FUSEC")}
P="$TMP/prefix"
if ! make -s install BUILD="$B" PREFIX="$P" >"$TMP/out" 2>"$TMP/err"; then
	echo "FAIL install: make install failed"; sed 's/^/    /' "$TMP/err" | tail -5
	fail=$((fail + 1)); return
fi
pass=$((pass + 1))
for f in bin/fusec bin/fusec-run share/fusec/python/fusec/__init__.py lib/libfusecrt.a lib/libfusecrt.so lib/pkgconfig/fusecrt.pc \
	include/fusecrt.h lib/libfusec.a lib/libfusec.so lib/pkgconfig/fusec.pc include/fusec.h \
	share/man/man1/fusec.1 share/man/man1/fusec-run.1 \
	share/bash-completion/completions/fusec; do
	[ -e "$P/$f" ] && pass=$((pass + 1)) || { echo "FAIL install: no $f"; fail=$((fail + 1)); }
done
check install-version 0 "$P/bin/fusec" --version
contains install-version-text "$TMP/out" "plan format fusec-plan/1"
make -s install BUILD="$B" PREFIX=/opt/fusec DESTDIR="$TMP/stage" >/dev/null 2>&1 &&
	[ -f "$TMP/stage/opt/fusec/lib/pkgconfig/fusecrt.pc" ] &&
	grep -q '^prefix=/opt/fusec$' "$TMP/stage/opt/fusec/lib/pkgconfig/fusecrt.pc" &&
	pass=$((pass + 1)) || { echo "FAIL install-destdir"; fail=$((fail + 1)); }

export PKG_CONFIG_PATH="$P/lib/pkgconfig"
san=""
case "$B" in *san*) san="-fsanitize=address,undefined" ;; esac
FAKE="$(cd "$B" && pwd)/tests/fakecuda.so"
check pc-cflags 0 pkg-config --cflags --libs fusecrt
contains pc-cflags-text "$TMP/out" "-I$P/include"
check link-shared 0 sh -c "cc -std=c11 $san -o '$TMP/use' tests/install/use_runtime.c \$(pkg-config --cflags --libs fusecrt)"
check run-shared 0 env LD_LIBRARY_PATH="$P/lib" FUSEC_LIBCUDA="$FAKE" "$TMP/use" tests/runtime/axpb.plan.json
contains run-shared-arch "$TMP/out" "arch sm_90"
contains run-shared-y "$TMP/out" "output y f32 sum="
contains run-shared-m "$TMP/out" "output m u8 sum="
cp "$TMP/out" "$TMP/shared.txt"
check link-static 0 sh -c "cc -std=c11 $san -o '$TMP/use-static' tests/install/use_runtime.c \$(pkg-config --cflags fusecrt) '$P/lib/libfusecrt.a' \$(pkg-config --static --libs-only-l fusecrt | sed 's/-lfusecrt//')"
check run-static 0 env FUSEC_LIBCUDA="$FAKE" "$TMP/use-static" tests/runtime/axpb.plan.json
same_files run-static-same "$TMP/out" "$TMP/shared.txt"
check run-no-driver 3 env LD_LIBRARY_PATH="$P/lib" FUSEC_LIBCUDA=/nonexistent "$TMP/use" tests/runtime/axpb.plan.json
# the header alone: C11 and C++17, pedantic, warnings as errors; nothing else of
# fusec's is installed beside it
check header-c11 0 sh -c "echo '#include <fusecrt.h>' | cc -std=c11 -pedantic -Wall -Wextra -Werror -fsyntax-only -I'$P/include' -x c -"
CXX_FOUND=
for c in "${CXX:-}" c++ g++ clang++ clang++-14; do
	[ -n "$c" ] && command -v "$c" >/dev/null 2>&1 && { CXX_FOUND=$c; break; }
done
if [ -z "$CXX_FOUND" ]; then
	echo "FAIL install-cxx: no C++ compiler (c++, g++, clang++, clang++-14)"; fail=$((fail + 1))
else
	check header-cxx17 0 sh -c "echo '#include <fusecrt.h>' | $CXX_FOUND -std=c++17 -pedantic -Wall -Wextra -Werror -fsyntax-only -I'$P/include' -x c++ -"
	check link-cxx 0 sh -c "$CXX_FOUND -std=c++17 $san -o '$TMP/use-cxx' tests/install/use_runtime.cpp \$(pkg-config --cflags --libs fusecrt)"
	check run-cxx 0 env LD_LIBRARY_PATH="$P/lib" FUSEC_LIBCUDA="$FAKE" "$TMP/use-cxx" tests/runtime/axpb.plan.json
	same_files run-cxx-same "$TMP/out" "$TMP/shared.txt"
fi
[ "$(ls "$P/include" | tr '\n' ' ')" = "fusec.h fusecrt.h " ] && pass=$((pass + 1)) ||
	{ echo "FAIL install-one-header: $(ls "$P/include")"; fail=$((fail + 1)); }
# a plan for every size through <fusecrt.h>: its dims and ranges, bound from an
# input's shape, its outputs' shapes at those sizes; a size outside a range, a shape
# that does not fit, and a tensor asked before any binding (-1 for its named dims)
cat >"$TMP/every.yaml" <<'Y'
format: fusec-graph/1
name: every
dims: {batch: 1..16, seq: 1..128}
inputs:
  x: {dtype: f32, shape: [batch, seq, 8]}
ops:
  - {op: exp, in: [x], out: e}
  - {op: sum, in: [e], axis: 1, out: y}
outputs: [y]
Y
check every-compile 0 "$P/bin/fusec" compile -q "$TMP/every.yaml" -o "$TMP/every" --no-cache
check link-dims 0 sh -c "cc -std=c11 $san -o '$TMP/use-dims' tests/install/use_runtime_dims.c \$(pkg-config --cflags --libs fusecrt)"
check run-dims 1 env LD_LIBRARY_PATH="$P/lib" "$TMP/use-dims" "$TMP/every" x=2x3x8 x=4x100x8 x=2x200x8 x=2x3x9
same run-dims-out "$TMP/out" "dim batch 1..16
dim seq 1..128
unbound: y f32 [-1,1,8] 0 bytes
bind x=2x3x8: y f32 [2,1,8] 64 bytes
bind x=4x100x8: y f32 [4,1,8] 128 bytes
bind x=2x200x8: error 1: 'seq' = 200 is outside the plan's range 1..128
bind x=2x3x9: error 1: input 'x' is [2,3,9], but at these sizes the plan needs [2,3,8]"
# errors come back structured: a missing plan is FUSECRT_INVALID, with the file
check run-bad-plan 1 env LD_LIBRARY_PATH="$P/lib" FUSEC_LIBCUDA="$FAKE" "$TMP/use" "$TMP/nonexistent.plan.json"
contains run-bad-plan-msg "$TMP/err" "nonexistent.plan.json"
n=$(nm -D --defined-only "$P/lib/libfusecrt.so" | awk '$2 == "T" && $3 !~ /^fusecrt_/' | wc -l)
[ "$n" -eq 0 ] && pass=$((pass + 1)) ||
	{ echo "FAIL install-exports: $n functions outside fusecrt_ exported"; fail=$((fail + 1)); }

# the compiler as a library: <fusec.h> alone, C11 and C++17, pedantic
check fusec-header-c11 0 sh -c "echo '#include <fusec.h>' | cc -std=c11 -pedantic -Wall -Wextra -Werror -fsyntax-only -I'$P/include' -x c -"
check pc-fusec 0 pkg-config --cflags --libs fusec
contains pc-fusec-text "$TMP/out" "-lfusec"
check link-compiler 0 sh -c "cc -std=c11 -pedantic -Wall -Wextra -Werror $san -o '$TMP/usec' tests/install/use_compiler.c \$(pkg-config --cflags --libs fusec fusecrt)"
check run-compiler 0 env LD_LIBRARY_PATH="$P/lib" FUSEC_LIBCUDA="$FAKE" "$TMP/usec" docs/examples/reuse.yaml "$TMP/lc"
contains run-compiler-str "$TMP/out" "compiled axpy: 2 ops, 1 launches, 1 kernels, 3072 bytes moved"
contains run-compiler-str-file "$TMP/out" "file $TMP/lc/str/axpy.plan.json"
contains run-compiler-memory "$TMP/out" "plan in memory: yes"
contains run-compiler-host "$TMP/out" "host run: 2 inputs, output z f32[256] of 1024 bytes, z[5] = 11, cpu = interp: yes"
contains run-compiler-file "$TMP/out" "compiled reuse: 4 ops, 1 launches, 1 kernels, 65536 bytes moved"
contains run-compiler-error "$TMP/out" "bad graph: refused, code 1, typo.yaml:5:16: ops[0]: unknown key 'inn'; did you mean 'in'?"
contains run-compiler-bf16 "$TMP/out" "bf16: 5 ops, plan says bf16: yes"
contains run-compiler-arch "$TMP/out" "bad arch: code 1: --arch sm_100: LLVM 19 does not know"
contains run-compiler-explain "$TMP/out" "explain: op 0 NumericFloat::Mul"
contains run-compiler-plan "$TMP/out" "plan loaded: arch sm_90a, 3 inputs, 1 outputs"
cp "$TMP/out" "$TMP/compiler.txt"
check link-compiler-static 0 sh -c "cc -std=c11 $san -o '$TMP/usec-static' tests/install/use_compiler.c \$(pkg-config --cflags fusec fusecrt) '$P/lib/libfusec.a' '$P/lib/libfusecrt.a' \$(pkg-config --static --libs-only-L --libs-only-l fusec fusecrt | sed 's/-lfusecrt//; s/-lfusec//')"
check run-compiler-static 0 env FUSEC_LIBCUDA="$FAKE" "$TMP/usec-static" docs/examples/reuse.yaml "$TMP/lc"
same_files run-compiler-static-same "$TMP/out" "$TMP/compiler.txt"
# the library writes what `fusec compile` writes
check run-compiler-cli 0 "$P/bin/fusec" compile docs/examples/reuse.yaml -o "$TMP/lcli" --no-cache -q
same_files run-compiler-cli-plan "$TMP/lc/file/reuse.plan.json" "$TMP/lcli/reuse.plan.json"
same_files run-compiler-cli-ptx "$TMP/lc/file/reuse.ptx" "$TMP/lcli/reuse.ptx"
if [ -n "$CXX_FOUND" ]; then
	check fusec-header-cxx17 0 sh -c "echo '#include <fusec.h>' | $CXX_FOUND -std=c++17 -pedantic -Wall -Wextra -Werror -fsyntax-only -I'$P/include' -x c++ -"
	check link-compiler-cxx 0 sh -c "$CXX_FOUND -std=c++17 -pedantic -Wall -Wextra -Werror $san -o '$TMP/usec-cxx' tests/install/use_compiler.cpp \$(pkg-config --cflags --libs fusec fusecrt)"
	check run-compiler-cxx 0 env LD_LIBRARY_PATH="$P/lib" FUSEC_LIBCUDA="$FAKE" "$TMP/usec-cxx" docs/examples/reuse.yaml "$TMP/lc"
	same_files run-compiler-cxx-same "$TMP/out" "$TMP/compiler.txt"
fi
# Python: the installed package (lib/python/fusec) over both shared libraries, the same steps
if command -v python3 >/dev/null 2>&1 && [ -z "$san" ]; then
	check run-compiler-python 0 env PYTHONPATH="$P/share/fusec/python" FUSEC_LIBCUDA="$FAKE" python3 tests/install/use_python.py docs/examples/reuse.yaml "$TMP/lc"
	same_files run-compiler-python-same "$TMP/out" "$TMP/compiler.txt"
fi
n=$(nm -D --defined-only "$P/lib/libfusec.so" | awk '$2 == "T" && $3 !~ /^fusec_/' | wc -l)
[ "$n" -eq 0 ] && pass=$((pass + 1)) ||
	{ echo "FAIL install-fusec-exports: $n functions outside fusec_ exported"; fail=$((fail + 1)); }
