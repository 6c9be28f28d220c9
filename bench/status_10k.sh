#!/usr/bin/env bash
# Benchmark `automaton status --json` over a large project against `find tasks -type f | wc -l`
# over the same tree (the floor: one directory walk, no file reads), warm page cache, same run,
# interleaved: cold index (`.automaton/.index` removed before each run) and warm index.
# Usage: bench/status_10k.sh [tasks] [runs]   (defaults 10000 and 7). Prints medians in ms and
# the ratios (aim: <= 1.0x warm, <= 1.5x cold).
set -euo pipefail

tasks="${1:-10000}"
runs="${2:-7}"
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
make_tree "$project" "$tasks"
files=$(find "$project/tasks" -type f | wc -l)
reported=$("$bin" --project "$project" status --json | grep -c '"parent":' || true)
# Files younger than 2 s are never recorded in the index (the racy-clean rule).
sleep 2.1

find_cmd() { find "$project/tasks" -type f | wc -l; }
status_cmd() { "$bin" --project "$project" status --json; }
cold_cmd() { rm -f "$project/.automaton/.index"; status_cmd; }

status_cmd >/dev/null; find_cmd >/dev/null
f=() c=() w=()
for ((i = 0; i < runs; i++)); do
    f+=("$(ms find_cmd)")
    c+=("$(ms cold_cmd)")
    status_cmd >/dev/null # leave a warm index
    w+=("$(ms status_cmd)")
done
find_ms=$(median "${f[@]}") cold_ms=$(median "${c[@]}") warm_ms=$(median "${w[@]}")
printf 'tree: %d tasks, %d files; status reports %d tasks; %d runs each, interleaved, medians\n' \
    "$tasks" "$files" "$reported" "$runs"
printf '%-48s %10s\n' "command" "median ms"
printf '%-48s %10s\n' "find tasks -type f | wc -l" "$find_ms"
printf '%-48s %10s\n' "automaton status --json (cold index)" "$cold_ms"
printf '%-48s %10s\n' "automaton status --json (warm index)" "$warm_ms"
awk -v c="$cold_ms" -v w="$warm_ms" -v f="$find_ms" \
    'BEGIN { printf "ratio status/find: cold %.2fx (aim <= 1.5x), warm %.2fx (aim <= 1.0x)\n", c / f, w / f }'
