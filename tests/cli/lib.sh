# lib.sh: helpers for the CLI tests. Each t_*.sh file sources this and calls check.
# FUSEC is the binary under test; TMP a scratch folder emptied per file.

pass=0
fail=0

# check NAME EXPECTED_STATUS CMD...: run CMD, keep stdout in $TMP/out, stderr in $TMP/err.
check() {
	name=$1; want=$2; shift 2
	"$@" >"$TMP/out" 2>"$TMP/err" </dev/null
	got=$?
	if [ "$got" -ne "$want" ]; then
		echo "FAIL $name: exit status $got, want $want"; sed 's/^/    /' "$TMP/err" | head -5
		fail=$((fail + 1)); return 1
	fi
	pass=$((pass + 1)); return 0
}

# same NAME FILE EXPECTED_TEXT: FILE must hold exactly the text.
same() {
	if [ "$(cat "$2")" != "$3" ]; then
		echo "FAIL $1: got"; sed 's/^/    /' "$2" | head -20; echo "  want"; echo "$3" | sed 's/^/    /'
		fail=$((fail + 1)); return 1
	fi
	pass=$((pass + 1)); return 0
}

# contains NAME FILE TEXT: FILE must contain TEXT (fixed string).
contains() {
	if ! grep -qF -- "$3" "$2"; then
		echo "FAIL $1: '$3' not found in"; sed 's/^/    /' "$2" | head -20
		fail=$((fail + 1)); return 1
	fi
	pass=$((pass + 1)); return 0
}

# same_files NAME A B: byte-identical files.
same_files() {
	if ! cmp -s "$2" "$3"; then
		echo "FAIL $1: $2 and $3 differ"; diff "$2" "$3" | head -20
		fail=$((fail + 1)); return 1
	fi
	pass=$((pass + 1)); return 0
}
