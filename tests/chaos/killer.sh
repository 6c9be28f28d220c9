#!/bin/sh
# The git-step campaign's crash point. Installed as `git` first on PATH (and called as the
# verify command with the word `verify`), it does what it is asked, then counts the calls that
# match the shell pattern CHAOS_KILL_POINT; at call number CHAOS_KILL_AT it kills automaton
# (the highest `automaton` among its ancestors) with SIGKILL, as a power cut right after that
# command would. The count lives in $CHAOS_DIR/kill-count.
set -u
if [ "${1:-}" = verify ]; then
  rc=0
else
  "$CHAOS_REAL_GIT" "$@"; rc=$?
fi
case "$*" in
  $CHAOS_KILL_POINT)
    n=$(( $(cat "$CHAOS_DIR/kill-count" 2>/dev/null || echo 0) + 1 ))
    echo "$n" > "$CHAOS_DIR/kill-count"
    if [ "$n" = "$CHAOS_KILL_AT" ]; then
      target="" p=$PPID
      while [ "$p" -gt 1 ] 2>/dev/null; do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = automaton ] && target=$p
        p=$(awk '{print $4}' "/proc/$p/stat" 2>/dev/null || echo 0)
      done
      [ -n "$target" ] && echo "killed at $* ($n)" >> "$CHAOS_DIR/kills" && kill -9 "$target"
    fi ;;
esac
exit $rc
