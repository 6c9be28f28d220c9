#!/usr/bin/env bash
# Benchmark `automaton status --json` over a large project against `find tasks -type f | wc -l`
# over the same tree (the floor: one directory walk, no file reads), warm cache, same run.
# Usage: bench/status_10k.sh [tasks] [runs]   (defaults 10000 and 7). Prints medians in ms
# and the ratio status/find (aim: within 2x).
#
# The tree: <tasks> folders under tasks/, at varied states (i % 10 artifacts of the lifecycle,
# i.e. nothing .. VERDICT.md `Verdict: PASS`, some `Verdict: FAIL`); every tenth task is a
# parent with SPEC.md, a DECOMPOSITION.md listing 3 sub-tasks and subtasks/s01..s03 at
# varied states too.
set -euo pipefail

tasks="${1:-10000}"
runs="${2:-7}"
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
mkdir -p "$project/tasks"

lifecycle=(SPEC.md DESIGN.md TEST_PLAN.md IMPLEMENTATION.md BUG_REPORT.md
    ADVERSARIAL_BUG_REPORT.md DOC_REVIEW.md)

# fill <dir> <n>: the first n artifacts of the lifecycle (n = 8: all of them plus a verdict).
fill() {
    local dir=$1 n=$2 k
    mkdir -p "$dir"
    printf '# Task\n\nBenchmark task %s.\n' "${dir##*/}" > "$dir/TASK.md"
    for ((k = 0; k < n && k < 7; k++)); do
        printf '# %s\n\nSome content for %s.\n' "${lifecycle[k]}" "${dir##*/}" > "$dir/${lifecycle[k]}"
    done
    if ((n >= 8)); then
        printf '# Verdict\n\nVerdict: PASS\n\n## Findings\n- None\n' > "$dir/VERDICT.md"
    fi
}

gen_start=$(date +%s%N)
decomp_header='| Sub-task | Wave | Depends on | Estimated peak context |
|---|---|---|---|'
for ((i = 1; i <= tasks; i++)); do
    printf -v name 't%05d' "$i"
    dir="$project/tasks/$name"
    if ((i % 10 == 0)); then
        # A parent: research done, decomposed into s01 (wave 1), s02 (wave 1), s03 (wave 2).
        fill "$dir" 1
        printf '%s\n| s01 | 1 | - | 4k |\n| s02 | 1 | - | 4k |\n| s03 | 2 | s01, s02 | 6k |\n' \
            "$decomp_header" > "$dir/DECOMPOSITION.md"
        fill "$dir/subtasks/s01" 8
        fill "$dir/subtasks/s02" $((i % 9))
        fill "$dir/subtasks/s03" 0
    elif ((i % 10 == 9)); then
        fill "$dir" 7
        printf '# Verdict\n\nVerdict: FAIL\n\n## Findings\n- broken-thing: it does not work\n' > "$dir/VERDICT.md"
    else
        fill "$dir" $((i % 10))
    fi
done
gen_end=$(date +%s%N)

files=$(find "$project/tasks" -type f | wc -l)
dirs=$(find "$project/tasks" -type d | wc -l)
# Sanity: status runs and reports every task (parents, sub-tasks and plain ones).
if command -v jq >/dev/null; then
    reported=$("$bin" --project "$project" status --json | jq '.tasks | length')
else
    reported=$("$bin" --project "$project" status --json | grep -c '"parent":' || true)
fi

# median_ms <cmd...>: one warm-up run, then $runs runs; the median wall time in ms.
median_ms() {
    local times=() i start end
    "$@" >/dev/null 2>&1
    for ((i = 0; i < runs; i++)); do
        start=$(date +%s%N)
        "$@" >/dev/null 2>&1
        end=$(date +%s%N)
        times+=($((end - start)))
    done
    printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 }
        END { m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "%.1f", m / 1e6 }'
}

find_cmd() { find "$project/tasks" -type f | wc -l; }
status_cmd() { "$bin" --project "$project" status --json; }

find_ms=$(median_ms find_cmd)
status_ms=$(median_ms status_cmd)

printf 'tree: %d tasks, %d dirs, %d files (generated in %.1f s); status reports %d tasks\n' \
    "$tasks" "$dirs" "$files" "$(awk -v n=$((gen_end - gen_start)) 'BEGIN { print n / 1e9 }')" "$reported"
printf '%-40s %10s\n' "command ($runs runs each, warm)" "median ms"
printf '%-40s %10s\n' "find tasks -type f | wc -l" "$find_ms"
printf '%-40s %10s\n' "automaton status --json > /dev/null" "$status_ms"
awk -v s="$status_ms" -v f="$find_ms" 'BEGIN { printf "ratio status/find: %.2fx (aim: <= 2x)\n", s / f }'
