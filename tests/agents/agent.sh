#!/bin/sh
# Scripted agent for the integration tests. It writes the phase's artifact, unless
# AGENT_BEHAVIOR names another behaviour for this phase: a space-separated list of
# phase=behaviour (or *=behaviour for every phase), or <task-name>:<phase>=behaviour (and
# <task-name>:*=behaviour) for one task only, where <task-name> is the last path component
# of AUTOMATON_TASK (so `a:referee=fail` fails sub-task .../subtasks/a). Later items win.
# Behaviours:
#   ok (default), fail (FAIL verdict), fail_once (FAIL unless the prompt is a rework
#   round's), fail_new (FAIL with a finding of its own each attempt), ask (write QUESTIONS.md
#   instead of the artifact until the prompt has the answers), needs_review, empty (empty artifact), malformed
#   (two verdict words), exit3 (exit 3 without the artifact), none (exit 0 without the
#   artifact), contract_only (print CONTRACT_MET, write nothing), met_exit3 (write the artifact,
#   print CONTRACT_MET, exit 3), hang (start a grandchild,
#   record both pids, sleep), stall (print a line, then sleep silently), slow (sleep
#   AGENT_SLEEP seconds, then ok), gate (record its pid in child.pid, print a line, wait until
#   the file $AUTOMATON_TASK_DIR/gate exists, print another, then ok), decompose (research also writes DECOMPOSITION.md from
#   AGENT_DECOMPOSITION, or AGENT_DECOMPOSITION_DEEP in a sub-task when set; the decomposition
#   phase writes AGENT_DECOMPOSITION_AGAIN, else AGENT_DECOMPOSITION, as its artifact).
# Every run appends "<task> <phase> <start> <end>" to $AGENT_LOG (times in ns).
# AGENT_IMPLEMENT: shell code run (in the agent's working directory) at the implement phase,
# e.g. to edit code files in a worktree. AGENT_EVERY_PHASE: the same at every phase.
set -u
# AGENT_IGNORE_TERM=1: ignore SIGTERM (so only SIGKILL ends the agent and its children).
[ -n "${AGENT_IGNORE_TERM:-}" ] && trap '' TERM
phase=$AUTOMATON_PHASE
task=${AUTOMATON_TASK:-?}
name=${task##*/}
start=$(date +%s%N)
behavior=ok
for item in ${AGENT_BEHAVIOR:-}; do
  case $item in
    "$phase"=*|"*"=*|"$name:$phase"=*|"$name:*"=*) behavior=${item#*=} ;;
  esac
done
# Read the prompt like a real agent would (and prove it arrives on stdin).
prompt=$(cat)
[ -n "${AGENT_PROMPT_COPY:-}" ] && printf '%s' "$prompt" > "$AGENT_PROMPT_COPY"

record() { [ -n "${AGENT_LOG:-}" ] && echo "$task $phase $start $(date +%s%N)" >> "$AGENT_LOG"; return 0; }

write() {
  tmp="$AUTOMATON_ARTIFACT.tmp.$$"
  printf '%s\n' "$1" > "$tmp" && mv "$tmp" "$AUTOMATON_ARTIFACT"
}

# A pid file appears whole (temp + rename): tests read it as soon as it exists.
put_pid() { printf '%s\n' "$1" > "$AUTOMATON_TASK_DIR/$2.part" && mv "$AUTOMATON_TASK_DIR/$2.part" "$AUTOMATON_TASK_DIR/$2"; }

content() {
  case $phase in
    referee) echo "# Verdict for $task

Verdict: PASS

## Findings
- None" ;;
    *) echo "# $phase for $task

Written by the scripted test agent." ;;
  esac
}

echo "working on $phase for $task"
if [ "$phase" = implement ] && [ -n "${AGENT_IMPLEMENT:-}" ]; then
  eval "$AGENT_IMPLEMENT" || exit 4
fi
if [ -n "${AGENT_EVERY_PHASE:-}" ]; then
  eval "$AGENT_EVERY_PHASE" || exit 4
fi
case $behavior in
  ok) ;;
  slow) sleep "${AGENT_SLEEP:-0.2}" ;;
  gate)
    put_pid $$ child.pid
    echo "waiting for the gate"
    while [ ! -e "$AUTOMATON_TASK_DIR/gate" ]; do sleep 0.1; done
    echo "through the gate" ;;
  fail) [ "$phase" = referee ] && { write "Verdict: FAIL

## Findings
- broken-thing: it does not work"; record; echo CONTRACT_MET; exit 0; } ;;
  fail_once) [ "$phase" = referee ] && case $prompt in
    *"## Rework round"*) ;;
    *) write "Verdict: FAIL

## Findings
- broken-thing: it does not work"; record; echo CONTRACT_MET; exit 0 ;;
  esac ;;
  fail_new) [ "$phase" = referee ] && { write "Verdict: FAIL

## Findings
- bug-${AUTOMATON_ATTEMPT:-1}: a new way it does not work"; record; echo CONTRACT_MET; exit 0; } ;;
  ask) case $prompt in
    *"## Decisions people made"*) ;;
    *) printf '%s\n' "## 1. Which store should the cache use?" "It decides the deployment." \
         "- Redis (recommended)" "- SQLite" "" "## 2. What should the endpoint be called?" \
         > "$AUTOMATON_TASK_DIR/QUESTIONS.md"; record; echo CONTRACT_MET; exit 0 ;;
  esac ;;
  needs_review) [ "$phase" = referee ] && { write "Verdict: NEEDS_REVIEW

## Remaining Issues
- unclear-api: two readings"; record; exit 0; } ;;
  empty) : > "$AUTOMATON_ARTIFACT"; record; exit 0 ;;
  malformed) write "Verdict: PASS
Verdict: FAIL"; record; exit 0 ;;
  exit3) echo "something broke (attempt ${AUTOMATON_ATTEMPT:-1})" >&2; record; exit 3 ;;
  none) record; exit 0 ;;
  contract_only) record; echo CONTRACT_MET; exit 0 ;;
  met_exit3) write "$(content)"; record; echo CONTRACT_MET; exit 3 ;;
  hang)
    sleep 1000 &
    put_pid $! grandchild.pid
    put_pid $$ child.pid
    record
    sleep 1000
    exit 0 ;;
  stall) record; echo "thinking..."; sleep 1000; exit 0 ;;
  decompose)
    # The decomposition phase (a plan sent back) writes AGENT_DECOMPOSITION_AGAIN as its plan.
    if [ "$phase" = decomposition ]; then
      write "${AGENT_DECOMPOSITION_AGAIN:-${AGENT_DECOMPOSITION:-}}"
      record
      echo CONTRACT_MET
      exit 0
    fi
    if [ "$phase" = research ]; then
      plan=${AGENT_DECOMPOSITION:-}
      # Sub-tasks use AGENT_DECOMPOSITION_DEEP when it is set.
      case $task in */subtasks/*) plan=${AGENT_DECOMPOSITION_DEEP:-$plan} ;; esac
      printf '%s\n' "$plan" > "$AUTOMATON_TASK_DIR/DECOMPOSITION.md"
    fi ;;
esac
write "$(content)"
record
echo "wrote $(basename "$AUTOMATON_ARTIFACT")"
echo CONTRACT_MET
