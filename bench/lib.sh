# Shared set-up of the benchmark scripts (sourced): a release build, a scratch folder removed
# on exit (KEEP=1 keeps it), and a private home so no user setting leaks into the figures.
# Sets: root, bin, work, project.
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
cargo build --release --quiet
bin="$root/target/release/automaton"
work="$(mktemp -d)"
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
project="$work/project"
mkdir -p "$project" "$work/home"
export HOME="$work/home" AUTOMATON_HOME="$work/home/.automaton"
unset AUTOMATON_AGENT ANTHROPIC_MODEL OPENAI_MODEL GEMINI_MODEL AIDER_MODEL NO_COLOR || true

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

# make_tree <tasks>: <tasks> folders under $project/tasks at varied states (i % 10 artifacts of
# the lifecycle, i.e. nothing .. VERDICT.md `Verdict: PASS`, some `Verdict: FAIL`); every
# tenth task is a parent with SPEC.md, a DECOMPOSITION.md listing 3 sub-tasks and
# subtasks/s01..s03 at varied states too. (status_10k.sh, watch_10k.sh)
make_tree() {
    local i name dir
    local header='| Sub-task | Wave | Depends on | Estimated peak context |
|---|---|---|---|'
    mkdir -p "$project/tasks"
    for ((i = 1; i <= $1; i++)); do
        printf -v name 't%05d' "$i"
        dir="$project/tasks/$name"
        if ((i % 10 == 0)); then
            # A parent: research done, decomposed into s01 (wave 1), s02 (wave 1), s03 (wave 2).
            fill "$dir" 1
            printf '%s\n| s01 | 1 | - | 4k |\n| s02 | 1 | - | 4k |\n| s03 | 2 | s01, s02 | 6k |\n' \
                "$header" > "$dir/DECOMPOSITION.md"
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
}

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
