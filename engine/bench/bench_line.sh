# Sourced by the bench scripts: bench_line runs a command (rolis-bench and
# its flags) and prints the last line of its standard output (the JSON
# object); its standard error passes through. A run that fails makes the
# script say which command failed and how (a signal by name), instead of
# stopping without a word under `set -e`.
bench_line() {
  local out status=0
  out=$(mktemp)
  "$@" >"$out" || status=$?
  if [ "$status" -ne 0 ]; then
    local why="exited with status $status"
    if [ "$status" -gt 128 ]; then
      why="was killed by SIG$(kill -l $((status - 128)) 2>/dev/null || echo $((status - 128)))"
    fi
    echo "$(basename "$0"): '$*' $why; the end of its output:" >&2
    tail -n 5 "$out" >&2
    rm -f "$out"
    return "$status"
  fi
  tail -n 1 "$out"
  rm -f "$out"
}
