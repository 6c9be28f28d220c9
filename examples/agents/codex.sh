#!/bin/sh
# codex.sh — run OpenAI Codex CLI (`codex exec`, non-interactive) as an automaton agent.
#
# Use, in .automaton/.agent.md (the path is relative to the project root, where it runs):
#   - **Agent**: codex
#   - **Agent command**: sh examples/agents/codex.sh
# `- **Agent**: codex` alone runs the same command line without this script. Either way
# automaton reads the --json events back: turn.failed stops the phase even when codex exits 0,
# and the thread id and token usage go to the task's logs/journal.jsonl and `automaton status`.
#
# What it runs, in the project root:
#   codex exec --json --sandbox workspace-write --skip-git-repo-check [-m M] $CODEX_FLAGS "$@" - \
#       < "$AUTOMATON_PROMPT_FILE"
#   ("$@": the script's own arguments, e.g. `- **Agent flags**`.)
# - `-` reads the prompt from stdin, which is the prompt file and so ends with EOF. (Codex reads
#   stdin whenever it is not a terminal, even with the prompt as an argument, and hangs on a pipe
#   that never closes — never start it with an open stdin.)
# - `--sandbox workspace-write` lets it write in the project. The default for `codex exec` is
#   read-only: the write fails and it still exits 0 — automaton then reports the missing artifact.
#   Where the bubblewrap sandbox cannot run (some CI containers), use
#   CODEX_SANDBOX=danger-full-access or CODEX_FLAGS=--dangerously-bypass-approvals-and-sandbox,
#   only inside a throw-away container.
# - `--skip-git-repo-check` lets it run in a project that is not a git repository.
# - `--json` prints one JSON event a line (thread.started, item.*, turn.completed with usage, or
#   turn.failed), which automaton's codex adapter reads. With `- **Agent**: command` set
#   CODEX_JSON=no: the final message is then plain text and automaton sees `CONTRACT_MET`.
# Tested: Codex CLI 0.171.0 in automaton's offline tier (tests/real_agents/run.sh).
#
# Requires: `codex` on PATH (npm install -g @openai/codex), and either OPENAI_API_KEY (or the key
# your ~/.codex/config.toml provider names) or a logged-in account (`codex login`). CODEX_HOME
# moves its config and session folder.
#
# Knobs (environment):
#   CODEX_BIN      the executable (default: codex)
#   CODEX_MODEL    -m value (default: unset, the model in ~/.codex/config.toml)
#   CODEX_SANDBOX  read-only | workspace-write | danger-full-access (default workspace-write)
#   CODEX_JSON     yes (default; needs the codex adapter) or no
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

extra=$*
set -- exec --sandbox "${CODEX_SANDBOX:-workspace-write}" --skip-git-repo-check
if [ "${CODEX_JSON:-yes}" != no ]; then
    set -- "$@" --json
fi
if [ -n "${CODEX_MODEL:-}" ]; then
    set -- "$@" -m "$CODEX_MODEL"
fi
# Isolation (`- **Isolation**: worktree`): the agent works in its task's git worktree, and the
# task folder (where the artifact goes) stays in the project: let it write there too.
if [ -n "${AUTOMATON_WORKTREE:-}" ] && [ -n "${AUTOMATON_TASK_DIR:-}" ]; then
    set -- "$@" --add-dir "$AUTOMATON_TASK_DIR"
fi

# shellcheck disable=SC2086 # CODEX_FLAGS and the arguments are meant to be split into flags
exec "$bin" "$@" ${CODEX_FLAGS:-} $extra - <"$AUTOMATON_PROMPT_FILE"
