#!/bin/sh
# codex.sh — run OpenAI Codex CLI (`codex exec`, non-interactive) as an automaton agent.
#
# Use, in .automaton/.agent.md (the path is relative to the project root, where it runs):
#   - **Agent command**: sh examples/agents/codex.sh
#
# What it runs, in the project root:
#   codex exec --sandbox workspace-write --skip-git-repo-check [-m M] $CODEX_FLAGS - \
#       < "$AUTOMATON_PROMPT_FILE"
# - `-` reads the prompt from stdin, which is the prompt file and so ends with EOF. (Codex reads
#   stdin whenever it is not a terminal, even with the prompt as an argument, and hangs on a pipe
#   that never closes — never start it with an open stdin.)
# - `--sandbox workspace-write` lets it write in the project. The default for `codex exec` is
#   read-only: the write fails and it still exits 0 — automaton then reports the missing artifact.
#   Where the bubblewrap sandbox cannot run (some CI containers), use
#   CODEX_SANDBOX=danger-full-access or CODEX_FLAGS=--dangerously-bypass-approvals-and-sandbox,
#   only inside a throw-away container.
# - `--skip-git-repo-check` lets it run in a project that is not a git repository.
# - The final agent message goes to stdout (progress to stderr), so automaton sees the
#   `CONTRACT_MET` line. Add CODEX_FLAGS=--json for JSONL events instead (then CONTRACT_MET is
#   inside JSON and only the exit code and the artifact count).
# Tested flags: Codex CLI 0.171.0.
#
# Requires: `codex` on PATH (npm install -g @openai/codex), and either OPENAI_API_KEY (or the key
# your ~/.codex/config.toml provider names) or a logged-in account (`codex login`). CODEX_HOME
# moves its config and session folder.
#
# Knobs (environment):
#   CODEX_BIN      the executable (default: codex)
#   CODEX_MODEL    -m value (default: unset, the model in ~/.codex/config.toml)
#   CODEX_SANDBOX  read-only | workspace-write | danger-full-access (default workspace-write)
#   CODEX_FLAGS    extra flags, split on spaces, e.g. '--ephemeral -c model_reasoning_effort=high'
#
# automaton's environment: AUTOMATON_PROMPT_FILE (required here), AUTOMATON_PHASE,
# AUTOMATON_TASK_DIR, AUTOMATON_ARTIFACT, AUTOMATON_PROJECT. See README.md beside this file.

set -eu

if [ -z "${AUTOMATON_PROMPT_FILE:-}" ]; then
    echo "codex.sh: AUTOMATON_PROMPT_FILE is not set (run me from automaton, see README.md)" >&2
    exit 2
fi
[ -r "$AUTOMATON_PROMPT_FILE" ] || {
    echo "codex.sh: cannot read the prompt file $AUTOMATON_PROMPT_FILE" >&2
    exit 2
}

bin=${CODEX_BIN:-codex}
command -v "$bin" >/dev/null 2>&1 || {
    echo "codex.sh: '$bin' not found on PATH (npm install -g @openai/codex, or set CODEX_BIN)" >&2
    exit 127
}

# automaton also writes the prompt on stdin; drain it so the writer never blocks.
if [ ! -t 0 ]; then
    cat >/dev/null || true
fi

set -- exec --sandbox "${CODEX_SANDBOX:-workspace-write}" --skip-git-repo-check
if [ -n "${CODEX_MODEL:-}" ]; then
    set -- "$@" -m "$CODEX_MODEL"
fi

# shellcheck disable=SC2086 # CODEX_FLAGS is meant to be split into several flags
exec "$bin" "$@" ${CODEX_FLAGS:-} - <"$AUTOMATON_PROMPT_FILE"
