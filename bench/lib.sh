# Shared set-up of the benchmark scripts (sourced): a release build, a scratch folder removed
# on exit (KEEP=1 keeps it), and a private home so no user setting leaks into the figures.
# Sets: root, bin, work, project. BENCH_BIN=<path> times another build instead (to compare
# two commits on one machine); the scratch folder follows TMPDIR (the file system matters:
# see bench/README.md); BENCH_DROP_CACHES=1: see `settle`.
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
if [ -n "${BENCH_BIN:-}" ]; then
    bin="$BENCH_BIN"
else
    cargo build --release --quiet
    bin="$root/target/release/automaton"
fi
work="$(mktemp -d)"
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
project="$work/project"
mkdir -p "$project" "$work/home"
export HOME="$work/home" AUTOMATON_HOME="$work/home/.automaton"
unset AUTOMATON_AGENT ANTHROPIC_MODEL OPENAI_MODEL GEMINI_MODEL AIDER_MODEL NO_COLOR || true

# make_tree <project> <tasks>: the status tree (see bench/README.md): <tasks> folders under
# tasks/ at varied states, every tenth a parent with sub-tasks s01..s03. python3 writes it
# (bash takes ~45 s for 10,000 tasks).
make_tree() {
    python3 - "$1" "$2" <<'PY'
import os, sys
project, n = sys.argv[1], int(sys.argv[2])
life = ["SPEC.md", "DESIGN.md", "TEST_PLAN.md", "IMPLEMENTATION.md", "BUG_REPORT.md",
        "ADVERSARIAL_BUG_REPORT.md", "DOC_REVIEW.md"]
def put(path, text):
    with open(path, "w") as f:
        f.write(text)
def fill(d, k):
    os.makedirs(d, exist_ok=True)
    name = os.path.basename(d)
    put(f"{d}/TASK.md", f"# Task\n\nBenchmark task {name}.\n")
    for a in life[:min(k, 7)]:
        put(f"{d}/{a}", f"# {a}\n\nSome content for {name}.\n")
    if k >= 8:
        put(f"{d}/VERDICT.md", "# Verdict\n\nVerdict: PASS\n\n## Findings\n- None\n")
for i in range(1, n + 1):
    d = f"{project}/tasks/t{i:06d}"
    if i % 10 == 0:
        fill(d, 1)
        put(f"{d}/DECOMPOSITION.md", "| Sub-task | Wave | Depends on | Estimated peak context |\n|---|---|---|---|\n"
            "| s01 | 1 | - | 4k |\n| s02 | 1 | - | 4k |\n| s03 | 2 | s01, s02 | 6k |\n")
        fill(f"{d}/subtasks/s01", 8)
        fill(f"{d}/subtasks/s02", i % 9)
        fill(f"{d}/subtasks/s03", 0)
    elif i % 10 == 9:
        fill(d, 7)
        put(f"{d}/VERDICT.md", "# Verdict\n\nVerdict: FAIL\n\n## Findings\n- broken-thing: it does not work\n")
    else:
        fill(d, i % 10)
PY
}

# settle: before a timed run, write back what earlier runs (and their removal) left dirty, so
# a run is not timed while the kernel flushes its predecessor (hyperfine's --prepare idea).
# BENCH_DROP_CACHES=1 (root) also drops the page cache, then reads the programs back: on ext4
# without a journal every file create scans the inodes freed in the last minutes while their
# inode-table blocks are cached, so the previous tree's `rm -rf` would be timed again in the
# next run's creates (see bench/README.md).
settle() {
    sync
    if [ -n "${BENCH_DROP_CACHES:-}" ]; then
        echo 1 > /proc/sys/vm/drop_caches
        # shellcheck disable=SC2046 # one path per program
        cat "$bin" $(command -v sh cat xargs seq ninja) >/dev/null
    fi
}
if [ -n "${BENCH_DROP_CACHES:-}" ] && ! [ -w /proc/sys/vm/drop_caches ]; then
    echo "BENCH_DROP_CACHES=1 needs root (it writes /proc/sys/vm/drop_caches)" >&2
    exit 2
fi

# completed <task>: stop the script unless the task under $project is complete; after a
# warm-up and after each timed run (outside the timing), so a failed run is no figure.
completed() {
    [ "$(cat "$project/$1/.state" 2>/dev/null)" = complete ] || { echo "$1 did not complete" >&2; exit 1; }
}

# median <numbers...>: the median.
median() {
    printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 }
        END { printf "%.1f", (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

# ms <cmd...>: wall time of one run in ms (output discarded).
ms() {
    local start end
    start=$(date +%s%N)
    "$@" >/dev/null 2>&1 || true
    end=$(date +%s%N)
    awk -v n=$((end - start)) 'BEGIN { printf "%.1f", n / 1e6 }'
}

# scratch_fs: the file system the runs wrote to, which sets much of a figure (an fsync's
# journal commit, ext4 without a journal scanning recently freed inodes on every create;
# see bench/README.md).
scratch_fs() {
    printf 'scratch: %s (%s)\n' "$work" \
        "$(findmnt -n -o FSTYPE,SOURCE -T "$work" 2>/dev/null || stat -f -c %T "$work")"
}
