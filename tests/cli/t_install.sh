# t_install.sh: `make install` into a temporary prefix (and under DESTDIR), then a
# program outside the tree (tests/install/use_runtime.c) links the installed runtime
# through pkg-config, shared and static, and runs a compiled plan against the fake
# driver (tests/runtime/fakecuda.c).
B=${BUILD:-$(dirname "$FUSEC")}
P="$TMP/prefix"
if ! make -s install BUILD="$B" PREFIX="$P" >"$TMP/out" 2>"$TMP/err"; then
	echo "FAIL install: make install failed"; sed 's/^/    /' "$TMP/err" | tail -5
	fail=$((fail + 1)); return
fi
pass=$((pass + 1))
for f in bin/fusec bin/fusec-run lib/libfusecrt.a lib/libfusecrt.so lib/pkgconfig/fusecrt.pc \
	include/fusec/runtime/fusecrt.h share/man/man1/fusec.1 share/man/man1/fusec-run.1 \
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
contains run-shared-y "$TMP/out" "output y sum="
contains run-shared-m "$TMP/out" "output m sum="
cp "$TMP/out" "$TMP/shared.txt"
check link-static 0 sh -c "cc -std=c11 $san -o '$TMP/use-static' tests/install/use_runtime.c \$(pkg-config --cflags fusecrt) '$P/lib/libfusecrt.a' \$(pkg-config --static --libs-only-l fusecrt | sed 's/-lfusecrt//')"
check run-static 0 env FUSEC_LIBCUDA="$FAKE" "$TMP/use-static" tests/runtime/axpb.plan.json
same_files run-static-same "$TMP/out" "$TMP/shared.txt"
check run-no-driver 3 env LD_LIBRARY_PATH="$P/lib" FUSEC_LIBCUDA=/nonexistent "$TMP/use" tests/runtime/axpb.plan.json
