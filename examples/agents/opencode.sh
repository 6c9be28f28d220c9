#!/bin/sh
# opencode.sh — run opencode (`opencode run`, non-interactive) as an automaton agent.
#
# Use, in .automaton/.agent.md (the path is relative to the project root, where it runs):
#   - **Agent**: opencode
#   - **Agent command**: sh examples/agents/opencode.sh
# `- **Agent**: opencode` alone runs the same command line without this script. Either way
# automaton reads the JSON events back: an `error` event stops the phase, and the session id,
# tokens and cost of every step go to logs/journal.jsonl and `automaton status`.
#
# What it runs, in the project root:
#   opencode run --format json [-m PROVIDER/MODEL] $OPENCODE_FLAGS "$@" < "$AUTOMATON_PROMPT_FILE"
#   ("$@": the script's own arguments, e.g. `- **Agent flags**`.)
# - `run` answers one message and exits; the message is stdin, the prompt file, which ends.
# - opencode's default permissions let `run` edit files and run commands in its working
#   directory. Anything that would ask (a path outside it, a repeated call) is refused in `run`:
#   `--auto` approves those, for a sandbox or a container you can throw away only.
# - With isolation (AUTOMATON_WORKTREE set) it runs in the task's worktree and the task folder is
#   outside: the script allows it through opencode's `external_directory` permission
#   (OPENCODE_PERMISSION, JSON merged into its config).
# - `--format json`: one JSON event a line (step_start, text, tool_use, step_finish with tokens
#   and cost, error), which automaton's opencode adapter reads. With `- **Agent**: command` set
#   OPENCODE_FORMAT=default: the answer is then plain text and automaton sees `CONTRACT_MET`.
# Tested: opencode 1.18.33 (npm opencode-ai) in automaton's offline tier
# (tests/real_agents/run.sh), with an OpenAI-compatible provider from its config file.
#
# Requires: `opencode` on PATH (npm install -g opencode-ai), and a provider: a key from
# `opencode auth login`, or one in opencode.json (OPENCODE_CONFIG names another file), e.g. a
# local OpenAI-compatible server (Ollama, llama.cpp, vLLM) through `@ai-sdk/openai-compatible`.
#
# Knobs (environment):
#   OPENCODE_BIN     the executable (default: opencode)
#   OPENCODE_MODEL   -m value, provider/model, e.g. ollama/qwen3-coder (default: its config's)
#   OPENCODE_FORMAT  json (default; needs the opencode adapter) | default
#   OPENCODE_FLAGS   extra flags, split on spaces, e.g. '--agent build'
#
# automaton's environment: AUTOMATON_PROMPT_FILE (required here), AUTOMATON_PHASE,
# AUTOMATON_TASK_DIR, AUTOMATON_ARTIFACT, AUTOMATON_PROJECT, AUTOMATON_WORKTREE. See README.md
# beside this file.

set -eu

if [ -z "${AUTOMATON_PROMPT_FILE:-}" ]; then
    echo "opencode.sh: AUTOMATON_PROMPT_FILE is not set (run me from automaton, see README.md)" >&2
    exit 2
fi
[ -r "$AUTOMATON_PROMPT_FILE" ] || {
    echo "opencode.sh: cannot read the prompt file $AUTOMATON_PROMPT_FILE" >&2
    exit 2
}

bin=${OPENCODE_BIN:-opencode}
command -v "$bin" >/dev/null 2>&1 || {
    echo "opencode.sh: '$bin' not found on PATH (npm install -g opencode-ai, or set OPENCODE_BIN)" >&2
    exit 127
}

# automaton also writes the prompt on stdin; drain it so the writer never blocks.
if [ ! -t 0 ]; then
    cat >/dev/null || true
fi

extra=$*
set -- run --format "${OPENCODE_FORMAT:-json}"
if [ -n "${OPENCODE_MODEL:-}" ]; then
    set -- "$@" -m "$OPENCODE_MODEL"
fi
if [ -n "${AUTOMATON_WORKTREE:-}" ] && [ -n "${AUTOMATON_TASK_DIR:-}" ]; then
    # A path with a `"` or `\` would break this JSON; task folders have neither.
    OPENCODE_PERMISSION="{\"external_directory\":{\"$AUTOMATON_TASK_DIR/*\":\"allow\"}}"
    export OPENCODE_PERMISSION
fi

# shellcheck disable=SC2086 # OPENCODE_FLAGS and the extra arguments are meant to be split
exec "$bin" "$@" ${OPENCODE_FLAGS:-} $extra <"$AUTOMATON_PROMPT_FILE"
