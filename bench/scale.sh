#!/usr/bin/env bash
# Scale: `status --json`, `graph` and a no-op `orchestrate --manual` (its fix tasks already
# made by an untimed first run, so it only reads and reports) on growing trees (the status
# tree of bench/status_10k.sh: <n> top-level tasks, every tenth a parent with 3 sub-tasks),
# warm index. Prints median wall ms, ms per task, and peak RSS (`/usr/bin/time -f %M`) above
# the empty-project baseline, per task (aim: linear time, < 1 KB per task).
# Usage: bench/scale.sh [sizes="10000 100000"] [runs=3]
set -euo pipefail

sizes="${1:-10000 100000}"
runs="${2:-3}"
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
timer=/usr/bin/time
[ -x "$timer" ] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 1; }

# rss_kb <cmd...>: peak RSS of one run in KB.
rss_kb() { "$timer" -f %M -o "$work/rss" "$@" >/dev/null 2>&1 || true; tail -1 "$work/rss"; }

empty="$work/empty"
mkdir -p "$empty"
base_status=$(rss_kb "$bin" --project "$empty" status --json)
base_graph=$(rss_kb "$bin" --project "$empty" graph)
base_orch=$(rss_kb "$bin" --project "$empty" orchestrate --manual)
printf 'empty project peak RSS: status %s KB, graph %s KB, orchestrate %s KB\n' \
    "$base_status" "$base_graph" "$base_orch"
printf '%-9s %-12s %10s %12s %12s %12s\n' tasks command "median ms" "us/task" "peak KB" "B/task"
for n in $sizes; do
    rm -rf "$project" && mkdir -p "$project"
    make_tree "$project" "$n"
    total=$(( n + n / 10 * 3 ))
    "$bin" --project "$project" orchestrate --manual >/dev/null 2>&1 || true
    sleep 2.1
    for c in status graph orchestrate; do
        case $c in
            status) cmd=("$bin" --project "$project" status --json) base=$base_status ;;
            graph) cmd=("$bin" --project "$project" graph) base=$base_graph ;;
            orchestrate) cmd=("$bin" --project "$project" orchestrate --manual) base=$base_orch ;;
        esac
        "${cmd[@]}" >/dev/null 2>&1 || true # warm the index
        t=()
        for ((i = 0; i < runs; i++)); do t+=("$(ms "${cmd[@]}")"); done
        m=$(median "${t[@]}")
        kb=$(rss_kb "${cmd[@]}")
        awk -v n="$total" -v c="$c" -v m="$m" -v kb="$kb" -v b="$base" 'BEGIN {
            printf "%-9d %-12s %10.1f %12.1f %12d %12.0f\n", n, c, m, m * 1000 / n, kb, (kb - b) * 1024 / n }'
    done
done
