# t_errors.sh: every malformed graph in tests/errors/ fails with exit status 1 and
# exactly the message in the .err file beside it (position included), and compile
# writes nothing for it. Run from tests/errors so messages carry the bare file name.
cd tests/errors || { fail=$((fail + 1)); return; }
n=0
for g in *.json *.yaml; do
	[ -f "$g" ] || continue
	n=$((n + 1))
	if [ ! -f "$g.err" ]; then
		echo "FAIL errors/$g: no $g.err beside it"; fail=$((fail + 1)); continue
	fi
	check "errors/$g" 1 "$FUSEC" normalize "$g" &&
		same "errors/$g-message" "$TMP/err" "$(cat "$g.err")"
	rm -rf "$TMP/o"
	check "errors/$g-compile" 1 "$FUSEC" compile "$g" -o "$TMP/o"
	if [ -e "$TMP/o" ] && [ -n "$(ls -A "$TMP/o")" ]; then
		echo "FAIL errors/$g-compile: wrote $(ls -A "$TMP/o" | head -3 | tr '\n' ' ')"
		fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
done
# the corpus itself must not shrink unnoticed
if [ "$n" -lt 24 ]; then
	echo "FAIL errors: only $n files in tests/errors"; fail=$((fail + 1))
fi
# the same file through stdin: "<stdin>" in the message, format sniffed
check "errors/stdin" 1 sh -c '"$FUSEC" normalize - < undefined_tensor.json'
same "errors/stdin-message" "$TMP/err" \
	"<stdin>:4:31: error: ops[1].in[0]: tensor 'q' is not defined above"
cd ../..
