# t_driver.sh: the driver itself: help, version, unknown commands, exit codes.
check version 0 "$FUSEC" --version && contains version-text "$TMP/out" "fusec 0."
check help 0 "$FUSEC" --help && contains help-text "$TMP/out" "usage: fusec COMMAND"
check no-args 2 "$FUSEC"
check unknown-command 2 "$FUSEC" frobnicate && contains unknown-text "$TMP/err" "unknown command 'frobnicate'"
for sub in compile normalize explain run bench; do
	check "$sub-help" 0 "$FUSEC" $sub --help && contains "$sub-help-text" "$TMP/out" "usage: fusec $sub"
	check "$sub-bad-option" 2 "$FUSEC" $sub --no-such-option
	check "$sub-missing-file" 1 "$FUSEC" $sub /nonexistent/g.yaml
done
