#!/usr/bin/env bash
# Benchmark worktree isolation: the cost, per sub-task, of its worktree and its merge-back
# (plus the per-phase commit checks) on a git repository of <files> files, side by side with a
# plain shell loop doing the same git work (`git worktree add` + commit + `git merge`).
# Usage: bench/isolation.sh [files] [subtasks] [runs]   (defaults 5000, 8, 3).
#
# automaton: one parent (SPEC.md + a DECOMPOSITION.md of <subtasks> wave-1 sub-tasks), an agent
# that writes its artifact (and one file at implement), `orchestrate --jobs 1`, run once with
# `--isolation none` and once with `--isolation worktree` on fresh copies of the repository.
# Its isolation cost per sub-task = (worktree - none) / subtasks: the integration worktree, each
# sub-task's worktree and branch, 8 commit checks (one commit), the merge-back and its checks.
# Shell: a fresh copy, `git worktree add -b integ`, then per sub-task `git worktree add -b`, write
# a file, `git add -A && git commit`, `git -C integ merge --no-edit` (fast-forward, then merge
# commits), divided by subtasks. Medians of <runs> runs. Aim: automaton within 1.3x of shell.
set -euo pipefail

files="${1:-5000}"
subtasks="${2:-8}"
runs="${3:-3}"
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
export GIT_CONFIG_GLOBAL="$work/gitconfig" GIT_CONFIG_NOSYSTEM=1
printf '[user]\n\tname = bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n' > "$GIT_CONFIG_GLOBAL"

# The template repository: <files> files in 100 folders, one commit.
tpl="$work/template"
mkdir -p "$tpl"
python3 - "$tpl" "$files" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = f"{root}/src/d{i % 100:02d}"
    os.makedirs(d, exist_ok=True)
    with open(f"{d}/f{i:05d}.txt", "w") as f:
        f.write(f"file {i}\n" * 20)
PY
git -C "$tpl" init --quiet
git -C "$tpl" add -A
git -C "$tpl" commit --quiet -m init
mkdir -p "$tpl/tasks/parent" "$tpl/.automaton"
printf '# Parent\n\nThe isolation benchmark.\n' > "$tpl/tasks/parent/TASK.md"
printf '# Spec\n\n%d independent sub-tasks.\n' "$subtasks" > "$tpl/tasks/parent/SPEC.md"
{
    printf '| Sub-task | Wave | Depends on | Estimated peak context |\n|---|---|---|---|\n'
    for ((i = 1; i <= subtasks; i++)); do printf '| s%02d | 1 | - | 4k |\n' "$i"; done
} > "$tpl/tasks/parent/DECOMPOSITION.md"
printf 'tasks/\n.automaton/lock\n.automaton/.vram_cache.json\n' >> "$tpl/.git/info/exclude"

agent="$work/agent.sh"
cat > "$agent" <<'A'
cat >/dev/null
if [ "$AUTOMATON_PHASE" = implement ]; then
    mkdir -p out && echo "$AUTOMATON_TASK" > "out/${AUTOMATON_TASK##*/}.txt"
fi
case $AUTOMATON_PHASE in referee) echo 'Verdict: PASS' ;; *) echo done ;; esac > "$AUTOMATON_ARTIFACT"
A

# automaton <mode> <dir>: one orchestrate run on a fresh copy; prints its wall ms.
automaton_run() {
    local mode=$1 dir=$2
    rm -rf "$dir"
    cp -a "$tpl" "$dir"
    local start end rc=0
    start=$(date +%s%N)
    "$bin" --project "$dir" orchestrate --quiet --agent "sh $agent" --jobs 1 \
        --isolation "$mode" --task tasks/parent > "$work/out.txt" 2>&1 || rc=$?
    end=$(date +%s%N)
    if ((rc != 0)); then
        echo "error: orchestrate --isolation $mode exited $rc" >&2
        cat "$work/out.txt" >&2
        exit 1
    fi
    if [ "$mode" = worktree ]; then
        local n
        n=$(git -C "$dir" ls-tree -r --name-only automaton/parent -- out | wc -l)
        if ((n != subtasks)); then
            echo "error: the integration branch holds $n of $subtasks sub-task files" >&2
            exit 1
        fi
    fi
    awk -v n=$((end - start)) 'BEGIN { printf "%.1f", n / 1e6 }'
}

# shell_run <dir>: the same git work as a plain loop; prints its wall ms.
shell_run() {
    local dir=$1
    rm -rf "$dir"
    cp -a "$tpl" "$dir"
    local start end
    start=$(date +%s%N)
    (
        set -e
        cd "$dir"
        git worktree add --quiet -b integ wt/integ HEAD
        for ((i = 1; i <= subtasks; i++)); do
            git worktree add --quiet -b "s$i" "wt/s$i" integ
            mkdir -p "wt/s$i/out"
            echo "s$i" > "wt/s$i/out/s$i.txt"
            git -C "wt/s$i" add -A
            git -C "wt/s$i" commit --quiet -m "s$i"
            git -C wt/integ merge --quiet --no-edit "s$i"
        done
    ) >/dev/null
    end=$(date +%s%N)
    local n
    n=$(git -C "$dir" ls-tree -r --name-only integ -- out | wc -l)
    if ((n != subtasks)); then
        echo "error: the shell loop merged $n of $subtasks" >&2
        exit 1
    fi
    awk -v n=$((end - start)) 'BEGIN { printf "%.1f", n / 1e6 }'
}

# median <numbers...>: the median.
median() {
    printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 }
        END { printf "%.1f", (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

# One warm-up of each, untimed.
automaton_run none "$work/run" >/dev/null
automaton_run worktree "$work/run" >/dev/null
shell_run "$work/run" >/dev/null
none=() wt=() sh=()
for ((r = 1; r <= runs; r++)); do
    none+=("$(automaton_run none "$work/run")")
    wt+=("$(automaton_run worktree "$work/run")")
    sh+=("$(shell_run "$work/run")")
done
m_none=$(median "${none[@]}")
m_wt=$(median "${wt[@]}")
m_sh=$(median "${sh[@]}")
awk -v none="$m_none" -v wt="$m_wt" -v sh="$m_sh" -v n="$subtasks" -v f="$files" -v r="$runs" 'BEGIN {
    per_a = (wt - none) / n; per_s = sh / n
    printf "repository: %d files; %d sub-tasks, --jobs 1; medians of %d runs\n", f, n, r
    printf "%-44s %10s\n", "", "ms"
    printf "%-44s %10.1f\n", "automaton orchestrate --isolation none", none
    printf "%-44s %10.1f\n", "automaton orchestrate --isolation worktree", wt
    printf "%-44s %10.1f\n", "shell loop (worktree add + commit + merge)", sh
    printf "%-44s %10.1f\n", "automaton isolation per sub-task", per_a
    printf "%-44s %10.1f\n", "shell per sub-task", per_s
    printf "ratio automaton/shell per sub-task: %.2fx (aim <= 1.3x)\n", per_a / per_s
}'
