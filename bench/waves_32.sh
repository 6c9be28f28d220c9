#!/usr/bin/env bash
# Benchmark the wave scheduler: one parent task (SPEC.md + a DECOMPOSITION.md of <subtasks>
# sub-tasks, all in wave 1), an agent that sleeps <sleep> s per phase and then writes its
# artifact, `automaton orchestrate --task tasks/parent --jobs <jobs>`.
# Usage: bench/waves_32.sh [subtasks] [jobs] [sleep]   (defaults 32, 8, 0.2).
# Ideal for the sub-tasks: ceil(subtasks / jobs) x 8 phases x sleep (32/8 x 8 x 0.2 = 6.4 s).
# Once every sub-task passes, the parent itself runs its remaining phases (design .. referee,
# one after the other); the script reports them apart, from the agent's own log, and also the
# whole command against the ideal that includes them. Aim: sub-task span within 1.2x of ideal.
set -euo pipefail

subtasks="${1:-32}"
jobs="${2:-8}"
sleep_s="${3:-0.2}"
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
mkdir -p "$project/tasks/parent"

log="$work/agent.log"
agent="$work/agent.sh"
cat > "$agent" <<EOF
cat >/dev/null
s=\$(date +%s%N)
sleep $sleep_s
case \$AUTOMATON_PHASE in referee) echo 'Verdict: PASS' ;; *) echo done ;; esac > "\$AUTOMATON_ARTIFACT"
echo "\$AUTOMATON_TASK_DIR \$AUTOMATON_PHASE \$s \$(date +%s%N)" >> "$log"
EOF

printf '# Parent\n\nA parent task for the wave benchmark.\n' > "$project/tasks/parent/TASK.md"
printf '# Spec\n\nSplit into %d independent sub-tasks.\n' "$subtasks" > "$project/tasks/parent/SPEC.md"
{
    printf '| Sub-task | Wave | Depends on | Estimated peak context |\n|---|---|---|---|\n'
    for ((i = 1; i <= subtasks; i++)); do printf '| s%02d | 1 | - | 4k |\n' "$i"; done
} > "$project/tasks/parent/DECOMPOSITION.md"

start=$(date +%s%N)
rc=0
"$bin" --project "$project" orchestrate --quiet --agent "sh $agent" --jobs "$jobs" \
    --task tasks/parent > "$work/out.txt" 2>&1 || rc=$?
end=$(date +%s%N)
if ((rc != 0)); then
    echo "error: orchestrate exited $rc" >&2
    cat "$work/out.txt" >&2
    exit 1
fi

# Split the agent log: sub-task phases vs the parent's own phases.
sub_runs=$(grep -c '/subtasks/' "$log" || true)
parent_runs=$(grep -vc '/subtasks/' "$log" || true)
if ((sub_runs != subtasks * 8)); then
    echo "error: $sub_runs sub-task phases ran, expected $((subtasks * 8))" >&2
    exit 1
fi
read -r first_sub last_sub < <(awk '/\/subtasks\// { if (!f || $3 < f) f = $3; if ($4 > l) l = $4 }
    END { print f, l }' "$log")
read -r parent_busy < <(awk '!/\/subtasks\// { b += $4 - $3 } END { print b + 0 }' "$log")

waves=$(((subtasks + jobs - 1) / jobs))
awk -v start="$start" -v end="$end" -v fs="$first_sub" -v ls="$last_sub" -v pb="$parent_busy" \
    -v waves="$waves" -v sl="$sleep_s" -v pr="$parent_runs" -v n="$subtasks" -v j="$jobs" 'BEGIN {
    ideal = waves * 8 * sl
    wall = (end - start) / 1e9
    span = (ls - fs) / 1e9
    pideal = pr * sl
    printf "%d sub-tasks x 8 phases, --jobs %d, agent sleeps %ss per phase\n", n, j, sl
    printf "%-50s %9s %9s %7s\n", "", "measured", "ideal", "ratio"
    printf "%-50s %8.2fs %8.2fs %6.2fx\n", "sub-tasks (first agent start .. last agent end)", span, ideal, span / ideal
    printf "%-50s %8.2fs %8.2fs %6.2fx\n", "sub-tasks, from the command start", (ls - start) / 1e9, ideal, (ls - start) / 1e9 / ideal
    printf "%-50s %8.2fs %8.2fs %6.2fx\n", sprintf("parent phases after the waves (%d, agent busy)", pr), pb / 1e9, pideal, (pideal > 0 ? pb / 1e9 / pideal : 0)
    printf "%-50s %8.2fs %8.2fs %6.2fx\n", "whole orchestrate command", wall, ideal + pideal, wall / (ideal + pideal)
    printf "ratio vs the 6.4 s-style ideal (whole command / sub-task ideal): %.2fx (aim: <= 1.2x)\n", wall / ideal
}'
