#!/usr/bin/env bash
# What `Sandbox: bwrap` costs per phase: one task through its 8 phases with the sandbox
# (`Network: none`, and `Network: model` with its bridge) against the same run without it,
# interleaved, medians. Usage: bench/sandbox.sh [runs=9]. No aim: a phase of a real agent
# runs for minutes, and the figure is for the closing note and README.
set -euo pipefail

runs="${1:-9}"
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
command -v bwrap >/dev/null || { echo "bench/sandbox.sh needs bwrap (apt-get install bubblewrap)" >&2; exit 1; }
agent="$work/agent.sh"
cat > "$agent" <<'EOF2'
cat >/dev/null
case $AUTOMATON_PHASE in referee) echo 'Verdict: PASS' ;; *) echo done ;; esac > "$AUTOMATON_ARTIFACT"
EOF2
prepare() {
    rm -rf "$project"
    mkdir -p "$project/tasks/t"
    settle
}
run_with() {
    AUTOMATON_SANDBOX=$1 "$bin" --project "$project" orchestrate --quiet --jobs 1 \
        --agent "sh $agent" --task tasks/t
}
run_none() { run_with none; }
run_bwrap() {
    mkdir -p "$project/.automaton"
    printf '# Agent\n- **Network**: none\n' > "$project/.automaton/.agent.md"
    run_with bwrap
}
run_bridged() {
    mkdir -p "$project/.automaton"
    printf '# Agent\n- **Network allow**: 127.0.0.1:9\n' > "$project/.automaton/.agent.md"
    run_with bwrap
}
prepare
run_bwrap >/dev/null
completed tasks/t
n=() b=() m=()
for ((r = 0; r < runs; r++)); do
    prepare
    n+=("$(ms run_none)")
    completed tasks/t
    prepare
    b+=("$(ms run_bwrap)")
    completed tasks/t
    prepare
    m+=("$(ms run_bridged)")
    completed tasks/t
done
nm=$(median "${n[@]}") bm=$(median "${b[@]}") mm=$(median "${m[@]}")
printf 'one task, 8 phases, %d runs each, interleaved, medians\n' "$runs"
printf '%-36s %8s ms\n' "Sandbox: none" "$nm" "Sandbox: bwrap, Network: none" "$bm" \
    "Sandbox: bwrap, Network: model" "$mm"
awk -v n="$nm" -v b="$bm" -v m="$mm" 'BEGIN {
    printf "per phase: +%.1f ms with the sandbox, +%.1f ms with its network bridge (ratio %.2fx, %.2fx)\n",
        (b - n) / 8, (m - n) / 8, b / n, m / n }'
