#!/usr/bin/env bash
# The chaos harness of issue 11. `tests/chaos/run.sh` (full) or `--small` (CI).
# Needs Linux, bash, python3 is not needed. Prints the figures; exits 1 on any violation.
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
SMALL=0; [ "${1:-}" = --small ] && SMALL=1
KILLS=${CHAOS_KILLS:-$([ $SMALL = 1 ] && echo 100 || echo 300)}
FUZZ=${AUTOMATON_FUZZ_CASES:-$([ $SMALL = 1 ] && echo 5000 || echo 1000000)}
PROFILE=$([ $SMALL = 1 ] && echo "" || echo --release)
BIN=${AUTOMATON_BIN:-$ROOT/target/release/automaton}
if [ -z "${AUTOMATON_BIN:-}" ]; then cargo build --release --quiet || exit 1; fi
WORK=$(mktemp -d /tmp/automaton-chaos.XXXXXX)
trap 'chattr -R -i "$WORK" 2>/dev/null; rm -rf "$WORK"' EXIT
declare -A V=([two_agents]=0 [phase_rerun]=0 [partial_accepted]=0 [stale_state]=0 [unsupervised]=0 [different_result]=0 [hang]=0)
kills=0; projects=0; runs=0
new_project() {  # $1 dir $2 mode
  mkdir -p "$1/.automaton"
  printf '# Config\n\n## Phases\n- **Design**: No\n- **Test design**: No\n- **Decomposition**: Yes\n' > "$1/.automaton/config.md"
  printf 'CHAOS_MODE=%s\n' "$2" > "$1/mode"
}
orch() {  # $1 dir $2 jobs, rest args; execs the binary (so `orch ... &` gives its pid)
  local dir=$1 jobs=$2; shift 2
  CHAOS_DIR=$dir CHAOS_MODE=$(sed -n 's/CHAOS_MODE=//p' "$dir/mode") HOME=$dir AUTOMATON_HOME=$dir/.home \
  AUTOMATON_KILL_GRACE=300ms AUTOMATON_AGENT="sh $ROOT/tests/chaos/agent.sh" \
    exec "$BIN" --project "$dir" orchestrate --quiet --jobs "$jobs" "$@"
}
check_after_kill() {  # $1 dir
  local dir=$1
  sleep 0.8   # the watchdog's grace (300ms) and its KILL
  if [ -f "$dir/agent-pids" ]; then
    while read -r p; do
      if kill -0 "$p" 2>/dev/null && ! grep -q '^Z' <(awk '{print $3}' "/proc/$p/stat" 2>/dev/null); then
        V[unsupervised]=$((V[unsupervised]+1))
        echo "unsupervised: $p $(tr '\0' ' ' < /proc/$p/cmdline 2>/dev/null) ppid $(awk '{print $4}' /proc/$p/stat 2>/dev/null)" >&2
        kill -9 "$p" 2>/dev/null
      fi
    done < "$dir/agent-pids"
    : > "$dir/agent-pids"
  fi
  # A partial artifact may exist only while `.incomplete` names it.
  while IFS= read -r -d '' f; do
    local t; t=$(dirname "$f"); local n; n=$(basename "$f")
    [ "$(cat "$t/.incomplete" 2>/dev/null)" = "$n" ] && continue
    tail -n1 "$f" | grep -q END-OF-ARTIFACT || V[partial_accepted]=$((V[partial_accepted]+1))
  done < <(find "$dir/tasks" -path '*/logs' -prune -o -name '*.md' ! -name TASK.md ! -name PARENT_SPEC.md ! -name VRAM_CONFIG.md -print0 2>/dev/null)
}
final_check() {  # $1 dir
  local dir=$1
  local sig; sig=$(HOME=$dir AUTOMATON_HOME=$dir/.home "$BIN" --project "$dir" status --json | \
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(" ".join(sorted(t["path"].split("/",1)[1]+"="+t["state"] for t in d["tasks"])))' 2>/dev/null || echo none)
  [ "$sig" = "$BASELINE" ] || { V[different_result]=$((V[different_result]+1)); echo "different: $sig" >&2; }
  while IFS= read -r -d '' s; do
    local t; t=$(dirname "$s")
    local want; want=$(echo "$sig" | tr ' ' '\n' | sed -n "s|^${t#$dir/tasks/}=||p")
    [ -n "$want" ] && [ "$(cat "$s")" != "$want" ] && { V[stale_state]=$((V[stale_state]+1)); echo "stale: $s $(cat "$s") vs $want" >&2; }
  done < <(find "$dir/tasks" -name .state -print0)
  if [ -f "$dir/violations" ]; then
    for k in two_agents phase_rerun; do V[$k]=$((V[$k]+$(grep -c "^$k" "$dir/violations"))); done
    grep . "$dir/violations" >&2
  fi
  runs=$((runs+$(grep -c '^start' "$dir/agent.log" 2>/dev/null || echo 0)))
}
# The uninterrupted result.
B=$WORK/baseline; new_project "$B" atomic
(orch "$B" 4 "chaos project" >/dev/null 2>&1)
BASELINE=$(HOME=$B "$BIN" --project "$B" status --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(" ".join(sorted(t["path"].split("/",1)[1]+"="+t["state"] for t in d["tasks"])))')
echo "baseline: $BASELINE"
i=0
while [ $kills -lt "$KILLS" ]; do
  i=$((i+1)); projects=$((projects+1))
  mode=$([ $((i % 2)) = 0 ] && echo piecewise || echo atomic)
  jobs=$([ $((i % 4)) -lt 2 ] && echo 1 || echo 4)
  P=$WORK/p$i; new_project "$P" "$mode"
  tries=0
  while :; do
    tries=$((tries+1))
    # Until the task folder exists (a kill in the first milliseconds leaves none, never half
    # of one), the rerun repeats the request; then it names the task.
    if [ ! -d "$P/tasks/chaos-project" ]; then orch "$P" "$jobs" "chaos project" >/dev/null 2>&1 & else orch "$P" "$jobs" --task tasks/chaos-project >/dev/null 2>&1 & fi
    pid=$!
    delay=$(( (RANDOM % 600) + 20 ))
    sleep "$(printf '0.%03d' "$delay")"
    if kill -0 $pid 2>/dev/null && [ $tries -lt 60 ] && [ $kills -lt "$KILLS" ]; then
      kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null; kills=$((kills+1)); check_after_kill "$P"
    else
      if ! timeout 120 tail --pid=$pid -f /dev/null; then V[hang]=$((V[hang]+1)); kill -9 $pid; fi
      wait $pid; rc=$?
      [ $rc = 0 ] && break
      [ $tries -ge 80 ] && { V[hang]=$((V[hang]+1)); break; }
    fi
  done
  check_after_kill "$P"; final_check "$P"
done
echo "[$SECONDS s] == kill -9 campaign: $projects projects, $kills kills, $runs agent runs (jobs 1 and 4, atomic and piecewise agents)"

# The git-step campaign: projects with worktree isolation and a verify command (so an
# integration gate after each wave), killed right after a chosen git command or verify run by
# tests/chaos/killer.sh, then rerun to the end; each must end as an uninterrupted run.
REAL_GIT=$(command -v git)
GIT_TRIALS=${CHAOS_GIT_TRIALS:-20}
KILLER=$WORK/killer; mkdir -p "$KILLER"; ln -s "$ROOT/tests/chaos/killer.sh" "$KILLER/git"
: > "$WORK/empty-gitconfig"
declare -A GV=([lost_commit]=0 [not_merged]=0 [gate_not_run]=0 [merge_state]=0 [dirty]=0 [worktrees]=0 [clean_left]=0)
git_kills=0; git_trials=0
git_project() {  # $1 dir
  new_project "$1" atomic
  printf '\n## Agent\n- **Isolation**: worktree\n- **Verify command**: sh %s verify\n' \
    "$ROOT/tests/chaos/killer.sh" >> "$1/.automaton/config.md"
  "$REAL_GIT" init -q -b main "$1" && echo demo > "$1/README.md"
  printf 'mode\nagent.log\nagent-pids\nviolations\nkill-count\nkills\n.home/\n' > "$1/.gitignore"
  "$REAL_GIT" -C "$1" add README.md .gitignore
  "$REAL_GIT" -C "$1" -c user.email=c@example.invalid -c user.name=c commit -qm init
}
gcmd() {  # $1 dir $2 point $3 at, rest: the automaton command line; execs it
  local dir=$1 point=$2 at=$3; shift 3
  CHAOS_DIR=$dir CHAOS_MODE=atomic CHAOS_GIT=1 CHAOS_REAL_GIT=$REAL_GIT CHAOS_KILL_POINT=$point \
  CHAOS_KILL_AT=$at PATH="$KILLER:$PATH" GIT_CONFIG_GLOBAL=$WORK/empty-gitconfig GIT_CONFIG_NOSYSTEM=1 \
  HOME=$dir AUTOMATON_HOME=$dir/.home AUTOMATON_KILL_GRACE=300ms \
  AUTOMATON_AGENT="sh $ROOT/tests/chaos/agent.sh" exec "$BIN" --project "$dir" "$@"
}
gorch() {  # $1 dir $2 point $3 at: orchestrate until it exits 0 (at most 10 tries)
  local t
  for t in 1 2 3 4 5 6 7 8 9 10; do
    if [ -d "$1/tasks/chaos-project" ]; then
      (gcmd "$1" "$2" "$3" orchestrate --quiet --jobs 2 --task tasks/chaos-project >/dev/null 2>&1) && return 0
    else
      (gcmd "$1" "$2" "$3" orchestrate --quiet --jobs 2 "chaos project" >/dev/null 2>&1) && return 0
    fi
  done
  V[hang]=$((V[hang]+1)); echo "never finished: $1" >&2; return 1
}
git_check() {  # $1 dir: the properties of an uninterrupted isolated run
  local dir=$1 g="$REAL_GIT -C $1" x
  for x in a b c d; do
    local b=automaton/chaos-project--$x
    [ "$($g show "$b:$x.txt" 2>/dev/null | tail -n1)" = referee ] || { GV[lost_commit]=$((GV[lost_commit]+1)); echo "lost commit: $dir $b" >&2; }
    if ! $g merge-base --is-ancestor "$b" automaton/chaos-project 2>/dev/null ||
       [ "$($g show "$b:$x.txt" 2>/dev/null)" != "$($g show "automaton/chaos-project:$x.txt" 2>/dev/null)" ]; then
      GV[not_merged]=$((GV[not_merged]+1)); echo "not merged: $dir $b" >&2
    fi
  done
  $g show automaton/chaos-project:chaos-project.txt 2>/dev/null | grep -qx decomposition ||
    { GV[lost_commit]=$((GV[lost_commit]+1)); echo "lost commit: $dir the parent's" >&2; }
  for w in 1 2; do
    [ -f "$dir/tasks/chaos-project/logs/integration-$w.passed" ] || { GV[gate_not_run]=$((GV[gate_not_run]+1)); echo "gate $w not run: $dir" >&2; }
  done
  local trees; trees=$($g worktree list --porcelain | sed -n 's/^worktree //p')
  [ "$(echo "$trees" | grep -c .)" = 6 ] || { GV[worktrees]=$((GV[worktrees]+1)); echo "worktrees: $dir $trees" >&2; }
  local tree
  for tree in $trees; do
    [ "$tree" = "$dir" ] && continue
    "$REAL_GIT" -C "$tree" rev-parse -q --verify MERGE_HEAD >/dev/null && { GV[merge_state]=$((GV[merge_state]+1)); echo "merge state: $tree" >&2; }
    [ -z "$("$REAL_GIT" -C "$tree" status --porcelain)" ] || { GV[dirty]=$((GV[dirty]+1)); echo "dirty: $tree" >&2; }
  done
}
clean_check() {  # $1 dir: after `merge` and `clean`, nothing of automaton's is left
  local g="$REAL_GIT -C $1"
  [ "$($g worktree list --porcelain | grep -c '^worktree ')" = 1 ] &&
    [ -z "$($g branch --list 'automaton/*')" ] || { GV[clean_left]=$((GV[clean_left]+1)); echo "clean left: $1 $($g branch --list 'automaton/*' | tr -d '\n')" >&2; }
}
# Each crash point: a shell pattern over git's arguments (`-C <dir> <command>`), or `verify`.
POINTS=("add:* add -A" "commit:* commit *" "merge-wave-1:*merge*automaton/chaos-project--[ab]*"
  "merge-wave-2:*merge*automaton/chaos-project--[cd]*" "verify:verify"
  "clean-worktree:*worktree remove*" "clean-branch:*branch --quiet -d*")
for entry in "${POINTS[@]}"; do
  name=${entry%%:*} point=${entry#*:}
  clean=0; case $name in clean-*) clean=1 ;; esac
  # How often the point comes in an uninterrupted run: the trials spread their kill over it.
  G=$WORK/git-count-$name; git_project "$G"
  gorch "$G" "$point" 0
  if [ $clean = 1 ]; then
    : > "$G/kill-count"
    (gcmd "$G" "$point" 0 merge tasks/chaos-project >/dev/null 2>&1)
    (gcmd "$G" "$point" 0 clean >/dev/null 2>&1)
  fi
  calls=$(cat "$G/kill-count" 2>/dev/null || echo 0)
  [ "$calls" -gt 0 ] || { echo "crash point $name never reached" >&2; V[different_result]=$((V[different_result]+1)); continue; }
  before=$git_kills
  for ((t = 0; t < GIT_TRIALS; t++)); do
    git_trials=$((git_trials+1)); projects=$((projects+1))
    at=$(( 1 + t * calls / GIT_TRIALS ))
    P=$WORK/git-$name-$t; git_project "$P"
    if [ $clean = 1 ]; then
      gorch "$P" none 0
      (gcmd "$P" none 0 merge tasks/chaos-project >/dev/null 2>&1)
      { (gcmd "$P" "$point" "$at" clean >/dev/null 2>&1); } 2>/dev/null
      [ -s "$P/kills" ] && git_kills=$((git_kills+1))
      for _ in 1 2 3; do (gcmd "$P" none 0 clean >/dev/null 2>&1) && break; done
      clean_check "$P"
    else
      { (gcmd "$P" "$point" "$at" orchestrate --quiet --jobs 2 "chaos project" >/dev/null 2>&1); } 2>/dev/null
      [ -s "$P/kills" ] && git_kills=$((git_kills+1))
      check_after_kill "$P"
      gorch "$P" none 0
      final_check "$P"; git_check "$P"
    fi
  done
  echo "[$SECONDS s] == git step $name: $GIT_TRIALS trials over its $calls calls, $((git_kills-before)) killed"
done
echo "[$SECONDS s] == git-step campaign: $git_trials trials, $git_kills kills"

# Each signal: the agent is stopped within seconds.
for sig in INT TERM HUP QUIT; do
  S=$WORK/sig-$sig; new_project "$S" atomic
  CHAOS_DIR=$S HOME=$S AUTOMATON_KILL_GRACE=300ms AUTOMATON_AGENT="echo \$\$ > $S/apid; exec sleep 300" \
    "$BIN" --project "$S" orchestrate --quiet "signal $sig" >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 100); do [ -s "$S/apid" ] && break; sleep 0.05; done
  kill -$sig $pid; wait $pid 2>/dev/null
  a=$(cat "$S/apid" 2>/dev/null); sleep 2
  if [ -n "$a" ] && kill -0 "$a" 2>/dev/null; then V[unsupervised]=$((V[unsupervised]+1)); kill -9 "$a"; echo "SIG$sig left agent $a" >&2; fi
  echo "[$SECONDS s] == SIG$sig: agent stopped"
done

# Concurrent starts: exactly one drives.
C=$WORK/concurrent; new_project "$C" atomic
mkdir -p "$C/tasks/c"; printf '# Task\n\nc\n' > "$C/tasks/c/TASK.md"; echo new > "$C/tasks/c/.state"
codes=""
for _ in 1 2 3 4 5 6; do orch "$C" 1 --task tasks/c >/dev/null 2>&1 & done
for j in $(jobs -p); do wait "$j"; codes="$codes $?"; done
zeros=$(echo "$codes" | tr ' ' '\n' | grep -c '^0$')
[ "$zeros" -ge 1 ] || V[different_result]=$((V[different_result]+1))
[ -f "$C/violations" ] && V[two_agents]=$((V[two_agents]+$(grep -c two_agents "$C/violations")))
echo "[$SECONDS s] == concurrent starts: exit codes$codes"

# A read-only sub-task folder: the run ends, naming the path, without spinning.
R=$WORK/ro; new_project "$R" atomic
mkdir -p "$R/tasks/ro/subtasks/a" "$R/tasks/ro/subtasks/b"
printf '# Task\n\nro\n' > "$R/tasks/ro/TASK.md"; printf 'spec\nEND-OF-ARTIFACT\n' > "$R/tasks/ro/SPEC.md"
printf '| Sub-task | Wave | Depends on | Estimated peak context | Files | Scope |\n|---|---|---|---|---|---|\n| a | 1 | - | 4k | a.txt | a |\n| b | 1 | - | 4k | b.txt | b |\nEND-OF-ARTIFACT\n' > "$R/tasks/ro/DECOMPOSITION.md"
echo new > "$R/tasks/ro/subtasks/a/.state"; echo new > "$R/tasks/ro/subtasks/b/.state"
sub=$R/tasks/ro/subtasks/a
if [ -n "$sub" ] && chattr +i "$sub" 2>/dev/null; then
  if timeout 60 bash -c "$(declare -f orch); ROOT=$ROOT BIN=$BIN orch $R 4 --task tasks/ro" >"$WORK/ro.out" 2>&1; then :; fi
  [ $? = 124 ] && V[hang]=$((V[hang]+1))
  chattr -i "$sub"
  grep -q "$sub" "$WORK/ro.out" && echo "== read-only sub-task: stopped, path named" || echo "== read-only sub-task: message without the path" >&2
else
  echo "[$SECONDS s] == read-only tree: SKIP (chattr +i not permitted here)"
fi

# A full disk: the project on a small tmpfs.
F=$WORK/full; mkdir -p "$F"
if mount -t tmpfs -o size=256k tmpfs "$F" 2>/dev/null; then
  new_project "$F" atomic
  dd if=/dev/zero of="$F/filler" bs=1k count=240 2>/dev/null
  timeout 60 bash -c "$(declare -f orch); ROOT=$ROOT BIN=$BIN orch $F 4 'full disk'" >"$WORK/full.out" 2>&1
  rc=$?; [ $rc = 124 ] && V[hang]=$((V[hang]+1))
  echo "[$SECONDS s] == full disk: exit $rc ($(tail -n1 "$WORK/full.out"))"
  # Space again (the filler gone and the disk grown, as a person freeing space would): the rerun
  # completes every task, so nothing the full disk cut short was taken as done.
  rm -f "$F/filler"; mount -o remount,size=64m "$F"
  if [ -d "$F/tasks/full-disk" ]; then rerun=(--task tasks/full-disk); else rerun=('full disk'); fi
  timeout 120 bash -c "$(declare -f orch); ROOT=$ROOT BIN=$BIN orch $F 4 $(printf '%q ' "${rerun[@]}")" >"$WORK/full2.out" 2>&1
  rc=$?; [ $rc = 124 ] && V[hang]=$((V[hang]+1))
  left=$(HOME=$F AUTOMATON_HOME=$F/.home "$BIN" --project "$F" status --json |
    python3 -c 'import json,sys; print(" ".join(t["path"]+"="+t["state"] for t in json.load(sys.stdin)["tasks"] if t["state"] != "complete"))' 2>&1)
  if [ $rc = 0 ] && [ -z "$left" ]; then
    echo "[$SECONDS s] == full disk, then space: the rerun completes"
  else
    V[different_result]=$((V[different_result]+1))
    echo "full disk, then space: rerun exit $rc, not complete: $left ($(tail -n1 "$WORK/full2.out"))" >&2
  fi
  umount "$F"
else
  echo "[$SECONDS s] == full disk: SKIP (mounting a tmpfs is not permitted here)"
fi

# Fuzzing: every parser and reader.
FUZZ_LOG=$(mktemp)
AUTOMATON_FUZZ_CASES=$FUZZ cargo test $PROFILE --quiet --test it -- reliability::fuzz_every_parser reliability::parsers_are_linear >"$FUZZ_LOG" 2>&1 \
  && echo "== fuzz: $FUZZ cases, no panic, errors name their file; parsers linear" \
  || { tail -40 "$FUZZ_LOG" >&2; echo "== fuzz: FAILED" >&2; V[different_result]=$((V[different_result]+1)); }
rm -f "$FUZZ_LOG"

echo "[$SECONDS s] == figures: kills=$kills agent_runs=$runs projects=$projects"
bad=0
for k in two_agents phase_rerun partial_accepted stale_state unsupervised different_result hang; do
  echo "violations.$k=${V[$k]}"; bad=$((bad+V[$k]))
done
for k in lost_commit not_merged gate_not_run merge_state dirty worktrees clean_left; do
  echo "violations.$k=${GV[$k]}"; bad=$((bad+GV[$k]))
done
[ $bad = 0 ]
