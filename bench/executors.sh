#!/usr/bin/env bash
# Overhead per phase of the `tmux` and `slurm` executors against `local`, on the same small
# decomposition: a parent (research writes a plan of <subtasks> sub-tasks in one wave, design
# and test design off), each sub-task through its phases, an agent that only writes its
# artifact. Runs interleaved, medians; per phase = wall time / phases run. The Slurm floor is
# `sbatch --wait --wrap true` (one job submitted and waited for, nothing in it).
# Usage: bench/executors.sh [subtasks=2] [runs=3]   Slurm: needs a cluster (SLURM_CONF, e.g.
# .ci/slurm-one-node.sh start); without one its columns say "skipped".
set -euo pipefail

subtasks="${1:-2}"
runs="${2:-3}"
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
agent="$work/agent.sh"
plan="$work/plan.md"
{
    printf '# Decomposition\n\n| Sub-task | Wave | Depends on | Estimated peak context | Files | Scope |\n|---|---|---|---|---|---|\n'
    for ((i = 1; i <= subtasks; i++)); do printf '| s%02d | 1 | - | 4k | - | part %d |\n' "$i" "$i"; done
} > "$plan"
cat > "$agent" <<EOF2
cat >/dev/null
case \$AUTOMATON_TASK:\$AUTOMATON_PHASE in
  tasks/t:research) cp "$plan" "\$AUTOMATON_TASK_DIR/DECOMPOSITION.md" ;;
esac
case \$AUTOMATON_PHASE in referee) echo 'Verdict: PASS' ;; *) echo done ;; esac > "\$AUTOMATON_ARTIFACT"
EOF2
export AUTOMATON_TMUX_SOCKET="automaton-bench-$$"
slurm_up() { command -v sinfo >/dev/null && sinfo -h -o %T 2>/dev/null | grep -q .; }
run_on() {
    rm -rf "$project" && mkdir -p "$project/tasks/t" "$project/.automaton"
    printf '# Config\n\n## Phases\n- **Design**: No\n- **Test design**: No\n' > "$project/.automaton/config.md"
    "$bin" --project "$project" orchestrate --quiet --isolation none --jobs "$subtasks" \
        --executor "$1" --agent "sh $agent" --task tasks/t
}
phases_run() { find "$project/tasks" -name '*-[0-9]*.log' -path '*/logs/*' | wc -l; }
executors=(local tmux)
slurm_up && executors+=(slurm)
declare -A times per
for e in "${executors[@]}"; do
    run_on "$e" >/dev/null 2>&1 || true
    [ "$(cat "$project/tasks/t/.state" 2>/dev/null)" = complete ] || { echo "$e: the decomposition did not complete" >&2; exit 1; }
    per[$e]=$(phases_run)
done
floor=()
for ((r = 0; r < runs; r++)); do
    for e in "${executors[@]}"; do times[$e]+="$(ms run_on "$e") "; done
    if slurm_up; then floor+=("$(ms sbatch --quiet --wait --output=/dev/null --wrap true)"); fi
done
tmux -L "$AUTOMATON_TMUX_SOCKET" kill-server 2>/dev/null || true
printf 'decomposition: 1 parent + %d sub-tasks (one wave, --jobs %d), %d runs each, interleaved, medians\n' "$subtasks" "$subtasks" "$runs"
printf '%-8s %8s %12s %16s %18s\n' executor phases "run (ms)" "per phase (ms)" "vs local (ms/phase)"
# shellcheck disable=SC2086
lm=$(median ${times[local]})
lp=$(awk -v t="$lm" -v n="${per[local]}" 'BEGIN { printf "%.1f", t / n }')
for e in local tmux slurm; do
    if [ -z "${times[$e]:-}" ]; then printf '%-8s %8s %12s %16s %18s\n' "$e" - skipped - -; continue; fi
    # shellcheck disable=SC2086
    m=$(median ${times[$e]})
    awk -v e="$e" -v t="$m" -v n="${per[$e]}" -v lp="$lp" \
        'BEGIN { p = t / n; printf "%-8s %8d %12.1f %16.1f %+18.1f\n", e, n, t, p, p - lp }'
done
if [ ${#floor[@]} -gt 0 ]; then
    printf 'slurm floor: sbatch --wait --wrap true, median %s ms per job\n' "$(median "${floor[@]}")"
else
    echo "slurm floor: skipped (no cluster answers)"
fi
