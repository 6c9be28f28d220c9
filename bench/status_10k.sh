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
gen_start=$(date +%s%N)
make_tree "$tasks"
gen_end=$(date +%s%N)

files=$(find "$project/tasks" -type f | wc -l)
dirs=$(find "$project/tasks" -type d | wc -l)
# Sanity: status runs and reports every task (parents, sub-tasks and plain ones).
if command -v jq >/dev/null; then
    reported=$("$bin" --project "$project" status --json | jq '.tasks | length')
else
    reported=$("$bin" --project "$project" status --json | grep -c '"parent":' || true)
fi

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
