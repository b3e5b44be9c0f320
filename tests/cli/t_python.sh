# t_python.sh: the Python package in place (PYTHONPATH=lib/python over the build's
# libfusec.so; docs/python.md) on the cpu backend: a YAML graph (a path and graph
# text), BERT from its ONNX bytes and GPT-2 from its path compiled and run from
# numpy arrays, each output within the error bound of `fusec run --backend
# interp` and the package's own interpreter equal to it; the exception of a bad
# graph with its position; save and load; explain as data
# (tests/python/check_fusec.py); and fusecrt_session_run_async on the stand-in
# driver (tests/runtime/fakecuda.c) equal to a plain run. Needs a python3 with
# numpy (PYTHON, python3 or /usr/bin/python3; Debian's python3-numpy): skipped,
# visibly, without one, and under the sanitizers (the instrumented library in an
# uninstrumented python).
B=${BUILD:-$(dirname "$FUSEC")}
PY=
for p in "${PYTHON:-}" python3 /usr/bin/python3; do
	[ -n "$p" ] && "$p" -c 'import numpy' >/dev/null 2>&1 && { PY=$p; break; }
done
case "$B" in *san*) echo "SKIP t_python: a sanitizer build ($B)"; return ;; esac
if [ -z "$PY" ]; then
	echo "SKIP t_python: no python3 with numpy (apt-get install python3-numpy)"; return
fi
check python-cpu 0 env PYTHONPATH=lib/python FUSEC_LIBDIR="$B" FUSEC_LIBCUDA="$(cd "$B" && pwd)/tests/fakecuda.so" "$PY" tests/python/check_fusec.py "$FUSEC" "$TMP"
sed -n 's/^FAIL /FAIL python-/p' "$TMP/out"
contains python-all "$TMP/out" "python: 0 failed"
for c in yaml-y-cpu-within-bound text-axpy named-dims bert-hidden-cpu-within-bound bert-pooled-interp-exact \
	gpt2-logits-cpu-within-bound error-fields load-same explain-format runtime-run-async \
	every-load every-bind every-range x3-default x3-on x3-off; do
	contains "python-$c" "$TMP/out" "ok $c"
done
# without FUSEC_LIBDIR the package finds the build's libraries by its place in the tree
check python-in-place 0 env PYTHONPATH=lib/python "$PY" -c 'import fusec; print(fusec.version())'
contains python-in-place-version "$TMP/out" "fusec "
