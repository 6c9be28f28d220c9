#!/usr/bin/env bash
# Benchmark `automaton watch` on a large project (the tree of status_10k.sh), against
# `automaton status --json` on the same tree in the same run:
# - `watch --once --size 120x40` (read everything, draw one frame) vs `status --json` (read
#   everything, print it all): medians of <runs> warm runs;
# - the refresh: `watch` in a pipe (plain mode), then <changes> times a task's DESIGN.md is
#   written or removed; the time from the write to the line saying so (file notification,
#   a 15 ms coalescing window, re-reading that one task, the diff, the line);
# - memory: peak RSS of the long-running `watch` vs of one `status --json`.
# Usage: bench/watch_10k.sh [tasks] [runs] [changes]   (defaults 10000, 7 and 40).
# Aim: a refresh well under 100 ms.
set -euo pipefail

tasks="${1:-10000}"
runs="${2:-7}"
changes="${3:-40}"
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
make_tree "$project" "$tasks"

# median_ms <cmd...>: one warm-up run, then $runs runs; the median wall time in ms.
median_ms() {
    local times=() i
    "$@" >/dev/null 2>&1
    for ((i = 0; i < runs; i++)); do
        times+=("$(ms "$@")")
    done
    median "${times[@]}"
}
reported=$("$bin" --project "$project" status --json | grep -c '"parent":' || true)

once_cmd() { "$bin" --project "$project" watch --once --size 120x40; }
status_cmd() { "$bin" --project "$project" status --json; }
once_ms=$(median_ms once_cmd)
status_ms=$(median_ms status_cmd)
status_kb=$( { /usr/bin/time -f %M "$bin" --project "$project" status --json >/dev/null; } 2>&1 | tail -1)

now_us() { local t=${EPOCHREALTIME/./}; echo "$t"; }

fifo="$work/lines"
mkfifo "$fifo"
"$bin" --project "$project" watch >"$fifo" &
watch_pid=$!
trap 'kill "$watch_pid" 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
exec 3<"$fifo"
# The start: one line per task (a note first where notifications fall back to polling).
start=$(now_us)
seen=0
mode=notifications
while ((seen < reported)); do
    IFS= read -r -t 60 line <&3 || { echo "watch printed $seen of $reported start lines" >&2; exit 1; }
    case $line in
        note:*) mode="poll ($line)" ;;
        tasks/*) seen=$((seen + 1)) ;;
    esac
done
start_ms=$(( ($(now_us) - start) / 1000 ))

lat=()
for ((k = 0; k < changes; k++)); do
    printf -v name 't%05d' $(( (k / 2) * 10 + 1 ))   # i % 10 == 1: SPEC.md only (design)
    dir="$project/tasks/$name"
    t0=$(now_us)
    if ((k % 2 == 0)); then
        printf '# Design\n' >"$dir/DESIGN.md"
        want="tasks/$name: test_design (was design)"
    else
        rm "$dir/DESIGN.md"
        want="tasks/$name: design (was test_design)"
    fi
    IFS= read -r -t 30 line <&3 || { echo "no line after changing $name" >&2; exit 1; }
    t1=$(now_us)
    [ "$line" = "$want" ] || { echo "expected '$want', got '$line'" >&2; exit 1; }
    lat+=($((t1 - t0)))
done
watch_kb=$(awk '/VmHWM/ { print $2 }' "/proc/$watch_pid/status")

stats() {
    printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 }
        END { printf "median %.1f ms, p90 %.1f ms, max %.1f ms", a[int((NR + 1) / 2)] / 1e3, a[int(NR * 0.9 + 0.5)] / 1e3, a[NR] / 1e3 }'
}

printf 'tree: %d folders under tasks/, %d tasks with sub-tasks; watch uses %s\n' "$tasks" "$reported" "$mode"
printf '%-52s %10s\n' "command ($runs runs each, warm)" "median ms"
printf '%-52s %10s\n' "automaton status --json > /dev/null" "$status_ms"
printf '%-52s %10s\n' "automaton watch --once --size 120x40 > /dev/null" "$once_ms"
awk -v o="$once_ms" -v s="$status_ms" 'BEGIN { printf "ratio watch --once/status: %.2fx\n", o / s }'
printf 'watch (piped): first full listing after %d ms\n' "$start_ms"
printf 'refresh, write to line, %d changes: %s (aim: well under 100 ms)\n' "$changes" "$(stats "${lat[@]}")"
printf 'peak RSS: watch %d MiB (running), status --json %d MiB\n' $((watch_kb / 1024)) $((status_kb / 1024))
