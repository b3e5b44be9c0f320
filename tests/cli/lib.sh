# lib.sh: helpers for the CLI tests. Each t_*.sh file sources this and calls check.
# FUSEC is the binary under test; TMP a scratch folder emptied per file.

pass=0
fail=0

# check NAME EXPECTED_STATUS CMD...: run CMD, keep stdout in $TMP/out, stderr in $TMP/err.
# CMD may read the last check's $TMP/out or $TMP/err (check x 1 grep -q FAIL "$TMP/out"):
# they are replaced only once it has run.
check() {
	name=$1; want=$2; shift 2
	"$@" >"$TMP/out.next" 2>"$TMP/err.next" </dev/null
	got=$?
	mv -f "$TMP/out.next" "$TMP/out"
	mv -f "$TMP/err.next" "$TMP/err"
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

# same_npy NAME REF GOT TOL: the folders REF and GOT hold the same .npy outputs (not
# the .bound.npy files), each within TOL of REF's largest magnitude. npy_python: a
# python3 that has numpy (Debian's python3-numpy): PYTHON, python3 or /usr/bin/python3.
npy_python() {
	for p in "${PYTHON:-}" python3 /usr/bin/python3; do
		[ -n "$p" ] && "$p" -c 'import numpy' >/dev/null 2>&1 && { echo "$p"; return; }
	done
	echo /usr/bin/python3
}
same_npy() {
	check "$1" 0 "$(npy_python)" -c '
import os, sys, numpy as np
ref, got, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
names = sorted(f for f in os.listdir(ref) if f.endswith(".npy") and not f.endswith(".bound.npy"))
gnames = sorted(f for f in os.listdir(got) if f.endswith(".npy") and not f.endswith(".bound.npy"))
assert names and names == gnames, (names, gnames)
for f in names:
    a, b = np.load(os.path.join(ref, f)).astype(np.float64), np.load(os.path.join(got, f)).astype(np.float64)
    err = np.abs(a - b).max() / max(np.abs(a).max(), 1e-30)
    assert a.shape == b.shape and err <= tol, (f, a.shape, b.shape, err)
' "$2" "$3" "$4"
}
