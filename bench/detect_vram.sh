#!/usr/bin/env bash
# Benchmark `automaton detect-vram`: the cached call, the uncached `--refresh` call, and
# `cat .automaton/.vram_cache.json` as the floor (process start + reading the file).
# Usage: bench/detect_vram.sh [runs]   (default 200). Prints medians in ms, side by side.
set -euo pipefail

runs="${1:-200}"
# A private home (bench/lib.sh) so the real ~/.claude etc. are not read; no detection script, so
# the uncached call runs the built-in probe (NVML load attempt + sysinfo), as most machines do.
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"

"$bin" --project "$project" detect-vram --refresh >/dev/null 2>&1
cache="$project/.automaton/.vram_cache.json"
test -s "$cache"

# median_ms <cmd...>: run the command $runs times, print the median wall time in ms.
median_ms() {
    local times=() i start end
    for ((i = 0; i < runs; i++)); do
        start=$(date +%s%N)
        "$@" >/dev/null 2>&1
        end=$(date +%s%N)
        times+=($(( end - start )))
    done
    printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 }
        END { m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "%.2f", m / 1e6 }'
}

floor=$(median_ms cat "$cache")
cached=$(median_ms "$bin" --project "$project" detect-vram)
uncached=$(median_ms "$bin" --project "$project" detect-vram --refresh)

printf '%-34s %10s\n' "command ($runs runs each)" "median ms"
printf '%-34s %10s\n' "cat .vram_cache.json (floor)" "$floor"
printf '%-34s %10s\n' "detect-vram (cached)" "$cached"
printf '%-34s %10s\n' "detect-vram --refresh (uncached)" "$uncached"
awk -v c="$cached" -v f="$floor" 'BEGIN { printf "cached - floor: %.2f ms\n", c - f }'
