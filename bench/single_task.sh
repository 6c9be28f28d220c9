#!/usr/bin/env bash
# One task through its 8 phases (`orchestrate --jobs 1`, an agent that only writes its
# artifact) against a shell loop running the same agent 8 times, interleaved, medians.
# Usage: bench/single_task.sh [runs=9]   Aim: <= 1.3x.
set -euo pipefail

runs="${1:-9}"
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
agent="$work/agent.sh"
cat > "$agent" <<'EOF2'
cat >/dev/null
case $AUTOMATON_PHASE in referee) echo 'Verdict: PASS' ;; *) echo done ;; esac > "$AUTOMATON_ARTIFACT"
EOF2
phases=(research design test_design implement bug_find adversarial_bug_find doc_review referee)
# Each run starts from a fresh folder, set up (and the previous one removed) outside the timing.
prepare_automaton() {
    rm -rf "$project"
    mkdir -p "$project/tasks/t"
    settle
}
run_automaton() {
    "$bin" --project "$project" orchestrate --quiet --jobs 1 --agent "sh $agent" --task tasks/t
}
prepare_shell() {
    rm -rf "$work/s"
    mkdir -p "$work/s"
    settle
}
run_shell() {
    for p in "${phases[@]}"; do
        AUTOMATON_PHASE=$p AUTOMATON_ARTIFACT="$work/s/$p" sh -c "sh $agent" < "$agent"
    done
}
prepare_automaton
run_automaton >/dev/null
completed tasks/t
a=() s=()
for ((r = 0; r < runs; r++)); do
    # Each prepare is a statement of its own, so `set -e` stops the script when it fails.
    prepare_automaton
    a+=("$(ms run_automaton)")
    completed tasks/t
    prepare_shell
    s+=("$(ms run_shell)")
done
am=$(median "${a[@]}") sm=$(median "${s[@]}")
printf 'one task, 8 phases, %d runs each, interleaved, medians\n' "$runs"
scratch_fs
printf '%-28s %10s ms\n' "automaton orchestrate" "$am" "shell loop" "$sm"
awk -v a="$am" -v s="$sm" 'BEGIN { printf "ratio automaton/shell: %.2fx (aim <= 1.3x)\n", a / s }'
