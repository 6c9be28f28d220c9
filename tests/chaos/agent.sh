#!/bin/sh
# Chaos agent. CHAOS_MODE=atomic writes each artifact with rename; piecewise writes it line by
# line (a kill leaves a partial file). Every artifact ends with the line END-OF-ARTIFACT.
# Violations it can see itself go to $CHAOS_DIR/violations (one line each).
set -u
d=$AUTOMATON_TASK_DIR
mkdir -p "$d/.chaos-agents"
# Start time of a process (field 22 of /proc/<pid>/stat): a recycled pid is not the agent.
# A zombie (state Z) is not running: it gives no start time.
started() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '$1 != "Z" && $1 != "X" {print $20}'; }
for f in "$d"/.chaos-agents/*; do
  [ -f "$f" ] || continue
  p=${f##*/}
  if [ -n "$(started "$p")" ] && [ "$(started "$p")" = "$(cat "$f")" ]; then
    echo "two_agents $AUTOMATON_TASK $AUTOMATON_PHASE $p" >> "$CHAOS_DIR/violations"
  fi
  rm -f "$f"
done
started $$ > "$d/.chaos-agents/$$"
echo $$ >> "$CHAOS_DIR/agent-pids"
if [ -s "$AUTOMATON_ARTIFACT" ]; then
  echo "phase_rerun $AUTOMATON_TASK $AUTOMATON_PHASE" >> "$CHAOS_DIR/violations"
fi
echo "start $AUTOMATON_TASK $AUTOMATON_PHASE" >> "$CHAOS_DIR/agent.log"
cat > /dev/null
sleep "0.0$(( $$ % 8 + 2 ))"
case $AUTOMATON_PHASE in
  referee) body="Verdict: PASS" ;;
  research) body="# spec of $AUTOMATON_TASK" ;;
  decomposition) body="| Sub-task | Wave | Depends on | Estimated peak context | Files | Scope |
|---|---|---|---|---|---|
| a | 1 | - | 4k | a.txt | do a |
| b | 1 | - | 4k | b.txt | do b |
| c | 2 | a | 4k | c.txt | do c |
| d | 2 | b | 4k | d.txt | do d |" ;;
  *) body="$AUTOMATON_PHASE of $AUTOMATON_TASK" ;;
esac
# With isolation (the git-step campaign), every phase also leaves a line in the task's own
# code file in its working folder, so every phase has work to commit and merge.
[ -n "${CHAOS_GIT:-}" ] && echo "$AUTOMATON_PHASE" >> "${AUTOMATON_TASK##*/}.txt"
if [ "$CHAOS_MODE" = piecewise ]; then
  : > "$AUTOMATON_ARTIFACT"
  printf '%s\n' "$body" | while IFS= read -r line; do printf '%s\n' "$line" >> "$AUTOMATON_ARTIFACT"; sleep 0.01; done
  for i in 1 2 3; do echo "filler $i" >> "$AUTOMATON_ARTIFACT"; sleep 0.01; done
  echo END-OF-ARTIFACT >> "$AUTOMATON_ARTIFACT"
else
  printf '%s\nEND-OF-ARTIFACT\n' "$body" > "$AUTOMATON_ARTIFACT.t$$" && mv "$AUTOMATON_ARTIFACT.t$$" "$AUTOMATON_ARTIFACT"
fi
rm -f "$d/.chaos-agents/$$"
echo "end $AUTOMATON_TASK $AUTOMATON_PHASE" >> "$CHAOS_DIR/agent.log"
