#!/usr/bin/env bash
# The 801-phase decomposition: one parent (SPEC.md, decomposition on) whose decomposition phase
# lists <n> sub-tasks in wave 1; each then runs 8 phases: 1 + 8n agent runs, `--jobs 2`, an
# agent that only writes its artifact. Baselines from the same run, interleaved: `xargs -P2`
# running the same agent 1 + 8n times (and `ninja -j2` when installed).
# Usage: bench/decomp_801.sh [subtasks=100] [runs=3]   Aim: automaton < 2x xargs, < 5 ms a phase.
set -euo pipefail

n="${1:-100}"
runs="${2:-3}"
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
agent="$work/agent.sh"
cat > "$agent" <<EOF2
cat >/dev/null
case \$AUTOMATON_PHASE in
decomposition) { echo '| Sub-task | Wave | Depends on |'; echo '|---|---|---|'
    i=1; while [ \$i -le $n ]; do echo "| s\$i | 1 | - |"; i=\$((i + 1)); done; } ;;
referee) echo 'Verdict: PASS' ;;
*) echo done ;;
esac > "\$AUTOMATON_ARTIFACT"
EOF2
phases=$((1 + 8 * n))

# Each run starts from a fresh tree, set up (and the previous one removed) outside the timing.
prepare_automaton() {
    rm -rf "$project"
    mkdir -p "$project/.automaton" "$project/tasks/parent"
    printf '## Phases\n- **Decomposition**: Yes\n' > "$project/.automaton/config.md"
    echo spec > "$project/tasks/parent/SPEC.md"
    settle
}
run_automaton() {
    "$bin" --project "$project" orchestrate --quiet --jobs 2 --agent "sh $agent" --task tasks/parent
}
prepare_xargs() {
    rm -rf "$work/x"
    mkdir -p "$work/x"
    settle
}
run_xargs() {
    seq "$phases" | AUTOMATON_PHASE=implement xargs -P2 -I{} \
        sh -c "AUTOMATON_ARTIFACT=$work/x/{} sh $agent < $agent"
}
prepare_ninja() {
    rm -rf "$work/nj" "$work/.ninja_log" "$work/.ninja_deps"
    mkdir -p "$work/nj"
    { echo "rule a"; echo "  command = AUTOMATON_PHASE=implement AUTOMATON_ARTIFACT=\$out sh $agent < $agent"
      for ((i = 1; i <= phases; i++)); do echo "build $work/nj/$i: a"; done; } > "$work/build.ninja"
    settle
}
run_ninja() {
    (cd "$work" && ninja -f build.ninja -j2 >/dev/null) # .ninja_log stays in the scratch folder
}
have_ninja=$(command -v ninja >/dev/null && echo 1 || echo "")
prepare_automaton
run_automaton >/dev/null # warm-up
completed tasks/parent
a=() x=() j=()
for ((r = 0; r < runs; r++)); do
    # Each prepare is a statement of its own, so `set -e` stops the script when it fails.
    prepare_automaton
    a+=("$(ms run_automaton)")
    completed tasks/parent
    prepare_xargs
    x+=("$(ms run_xargs)")
    if [ -n "$have_ninja" ]; then
        prepare_ninja
        j+=("$(ms run_ninja)")
    fi
done
am=$(median "${a[@]}") xm=$(median "${x[@]}")
printf '%d phases (1 + 8 x %d sub-tasks), --jobs 2, %d runs each, interleaved, medians\n' "$phases" "$n" "$runs"
scratch_fs
printf '%-28s %10s ms\n' "automaton orchestrate" "$am" "xargs -P2" "$xm"
[ -z "$have_ninja" ] || printf '%-28s %10s ms\n' "ninja -j2" "$(median "${j[@]}")"
awk -v a="$am" -v x="$xm" -v p="$phases" 'BEGIN { printf "ratio automaton/xargs: %.2fx (aim < 2x); overhead %.2f ms/phase (aim < 5)\n", a / x, (a - x) / p }'
