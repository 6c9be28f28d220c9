#!/usr/bin/env bash
# What `automaton detect-vram` reads through NVML, next to what `nvidia-smi` says, on a machine
# with an NVIDIA GPU: the two must name the same cards and agree on total memory (free memory
# moves between the two reads). Without a GPU it says so and exits 0.
# Usage: bench/nvml_check.sh   (BENCH_BIN=<path> checks another build, as every bench script)
set -euo pipefail

if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "nvml_check: no nvidia-smi on PATH: no NVIDIA GPU to compare; nothing to check"
    exit 0
fi
if ! smi="$(nvidia-smi --query-gpu=name,memory.total,memory.free --format=csv 2>&1)"; then
    echo "nvml_check: nvidia-smi found no usable GPU ($smi); nothing to check"
    exit 0
fi

# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"

json="$("$bin" --project "$project" detect-vram --refresh --format json 2>"$work/stderr")"
echo "== automaton detect-vram --refresh (NVML) =="
python3 - "$json" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
print(f"gpu_vram_gb (sum, whole GiB): {r['gpu_vram_gb']}   gpu_reason: {r['gpu_reason']}")
for g in r["gpus"]:
    print(f"  GPU {g['index']}: {g['name']}, total {g['total_gb']} GiB "
          f"({g['total_gb'] * 1024:.0f} MiB), free {g['free_gb']} GiB ({g['free_gb'] * 1024:.0f} MiB)")
print(f"recommended_kb: {r['recommended_kb']}   max_peak_context_kb: {r['max_peak_context_kb']}   source: {r['source']}")
PY
if [ -s "$work/stderr" ]; then
    echo "warnings:"
    sed 's/^/  /' "$work/stderr"
fi
echo
echo "== nvidia-smi --query-gpu=name,memory.total,memory.free --format=csv =="
echo "$smi"
