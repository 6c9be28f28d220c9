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
