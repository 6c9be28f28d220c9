#!/usr/bin/env bash
# Benchmark the orchestrator's own cost per phase: <tasks> tasks driven through all 8 phases
# by an agent that only writes its artifact, against a shell loop that runs the same agent the
# same number of times (tasks x 8) the way the orchestrator does (`sh -c CMD`, the phase's env
# vars set, a prompt on stdin).
# Usage: bench/orchestrate_overhead.sh [tasks]   (default 100). Prints total times, the
# per-phase overhead ((automaton - shell) / runs) in ms and the ratio automaton/shell.
#
# The tasks are created first (`automaton task create tNNN`, untimed), then driven one after
# the other with `automaton orchestrate --task tasks/tNNN` (one orchestrator process per task,
# 8 phases each), so process start, settings, the lock and the VRAM cache read are counted
# once per task.
set -euo pipefail

tasks="${1:-100}"
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
shellrun="$work/shell"
mkdir -p "$shellrun"

agent="$work/agent.sh"
cat > "$agent" <<'EOF'
cat >/dev/null
case $AUTOMATON_PHASE in referee) echo 'Verdict: PASS' ;; *) echo done ;; esac > "$AUTOMATON_ARTIFACT"
EOF
agent_cmd="sh $agent"

phases=(research design test_design implement bug_find adversarial_bug_find doc_review referee)
artifacts=(SPEC.md DESIGN.md TEST_PLAN.md IMPLEMENTATION.md BUG_REPORT.md
    ADVERSARIAL_BUG_REPORT.md DOC_REVIEW.md VERDICT.md)
runs=$((tasks * ${#phases[@]}))

for ((i = 1; i <= tasks; i++)); do
    printf -v name 't%03d' "$i"
    "$bin" --project "$project" task create "$name" >/dev/null
    mkdir -p "$shellrun/$name"
done

# A prompt of about the size the orchestrator sends (~4 KiB), read away by the agent.
prompt="$work/prompt.md"
printf '%0.s# Benchmark prompt line with some words in it to be read away by the agent\n' {1..60} > "$prompt"

# The orchestrator: one `orchestrate --task` per task, sequentially.
a_start=$(date +%s%N)
for ((i = 1; i <= tasks; i++)); do
    printf -v name 't%03d' "$i"
    "$bin" --project "$project" orchestrate --quiet --agent "$agent_cmd" --task "tasks/$name" >/dev/null
done
a_end=$(date +%s%N)

# The floor: the same agent, the same number of runs, from a shell loop.
s_start=$(date +%s%N)
for ((i = 1; i <= tasks; i++)); do
    printf -v name 't%03d' "$i"
    for ((k = 0; k < ${#phases[@]}; k++)); do
        AUTOMATON_PHASE=${phases[k]} AUTOMATON_ARTIFACT="$shellrun/$name/${artifacts[k]}" \
            AUTOMATON_TASK_DIR="$shellrun/$name" sh -c "$agent_cmd" < "$prompt"
    done
done
s_end=$(date +%s%N)

# Every task completed: 8 artifacts each and a PASS verdict.
done_tasks=$(grep -l '^Verdict: PASS' "$project"/tasks/t*/VERDICT.md | wc -l)
if ((done_tasks != tasks)); then
    echo "error: only $done_tasks of $tasks tasks have a PASS verdict" >&2
    "$bin" --project "$project" status >&2 || true
    exit 1
fi

a_ms=$(awk -v n=$((a_end - a_start)) 'BEGIN { printf "%.0f", n / 1e6 }')
s_ms=$(awk -v n=$((s_end - s_start)) 'BEGIN { printf "%.0f", n / 1e6 }')
printf '%-58s %10s\n' "$tasks tasks x 8 phases = $runs agent runs" "total ms"
printf '%-58s %10s\n' "shell loop (sh -c agent, env set, prompt on stdin)" "$s_ms"
printf '%-58s %10s\n' "automaton orchestrate --task (one process per task)" "$a_ms"
awk -v a="$a_ms" -v s="$s_ms" -v r="$runs" 'BEGIN {
    printf "per-phase: shell %.2f ms, automaton %.2f ms, overhead %.2f ms/phase\n", s / r, a / r, (a - s) / r
    printf "ratio automaton/shell: %.2fx\n", a / s }'
