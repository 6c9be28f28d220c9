#!/bin/sh
# gemini.sh — run Google's Gemini CLI (headless, one prompt) as an automaton agent.
#
# Use, in .automaton/.agent.md (the path is relative to the project root, where it runs):
#   - **Agent**: gemini
#   - **Agent command**: sh examples/agents/gemini.sh
# `- **Agent**: gemini` alone runs the same command line without this script. Either way
# automaton reads the stream-json events back: a `result` with status `error` stops the phase,
# and the session id, the model and the token usage go to logs/journal.jsonl and `automaton
# status`.
#
# What it runs, in the project root:
#   gemini --skip-trust --approval-mode auto_edit --output-format stream-json [-m M] \
#       [--include-directories "$AUTOMATON_TASK_DIR"] $GEMINI_FLAGS "$@" -p '' \
#       < "$AUTOMATON_PROMPT_FILE"
#   ("$@": the script's own arguments, e.g. `- **Agent flags**`.)
# - `-p ''` makes it non-interactive (answer, act, exit); the prompt comes on stdin, the prompt
#   file, which ends (the flag's value is appended to stdin's text).
# - `--approval-mode auto_edit` approves its file edits (write_file, replace) and refuses shell
#   commands, which a headless run cannot ask about; `yolo` approves every tool call (the
#   implement phase can then run the tests): use GEMINI_APPROVAL=yolo only in a sandbox or a
#   container you can throw away (GEMINI_FLAGS=--sandbox uses Gemini's own).
# - `--skip-trust` trusts the project folder for this run: in an untrusted folder Gemini CLI
#   forces the approval mode back to `default`, and the headless run then cannot write.
# - With isolation (AUTOMATON_WORKTREE set) it runs in the task's worktree, and its file tools
#   write only inside their workspace: `--include-directories "$AUTOMATON_TASK_DIR"` adds the
#   task folder, where the artifact goes.
# - `--output-format stream-json`: one JSON event a line (init, message, tool_use, tool_result,
#   result), which automaton's gemini adapter reads. With `- **Agent**: command` set
#   GEMINI_OUTPUT=text: the answer is then plain text and automaton sees `CONTRACT_MET`.
# - Exit codes: 0 success, 1 error, 42 input error, 53 turn limit exceeded.
# Tested: Gemini CLI 0.61.0 in automaton's offline tier (tests/real_agents/run.sh).
#
# Requires: `gemini` on PATH (npm install -g @google/gemini-cli), and GEMINI_API_KEY (Google AI
# Studio), or Vertex AI settings (GOOGLE_API_KEY / GOOGLE_CLOUD_PROJECT with
# GOOGLE_GENAI_USE_VERTEXAI=true), or a cached Google login from an interactive `gemini` run.
#
# Knobs (environment):
#   GEMINI_BIN       the executable (default: gemini)
#   GEMINI_MODEL     -m value, e.g. gemini-2.5-pro (default: unset, the CLI's router chooses)
#   GEMINI_APPROVAL  auto_edit (default) | yolo | default | plan
#   GEMINI_OUTPUT    stream-json (default; needs the gemini adapter) | json | text
#   GEMINI_FLAGS     extra flags, split on spaces, e.g. '--sandbox'
#
# automaton's environment: AUTOMATON_PROMPT_FILE (required here), AUTOMATON_PHASE,
# AUTOMATON_TASK_DIR, AUTOMATON_ARTIFACT, AUTOMATON_PROJECT, AUTOMATON_WORKTREE. See README.md
# beside this file.

set -eu

if [ -z "${AUTOMATON_PROMPT_FILE:-}" ]; then
    echo "gemini.sh: AUTOMATON_PROMPT_FILE is not set (run me from automaton, see README.md)" >&2
    exit 2
fi
[ -r "$AUTOMATON_PROMPT_FILE" ] || {
    echo "gemini.sh: cannot read the prompt file $AUTOMATON_PROMPT_FILE" >&2
    exit 2
}

bin=${GEMINI_BIN:-gemini}
command -v "$bin" >/dev/null 2>&1 || {
    echo "gemini.sh: '$bin' not found on PATH (npm install -g @google/gemini-cli, or set GEMINI_BIN)" >&2
    exit 127
}

# automaton also writes the prompt on stdin; drain it so the writer never blocks.
if [ ! -t 0 ]; then
    cat >/dev/null || true
fi

extra=$*
set -- --skip-trust --approval-mode "${GEMINI_APPROVAL:-auto_edit}" \
    --output-format "${GEMINI_OUTPUT:-stream-json}"
if [ -n "${GEMINI_MODEL:-}" ]; then
    set -- "$@" -m "$GEMINI_MODEL"
fi
if [ -n "${AUTOMATON_WORKTREE:-}" ] && [ -n "${AUTOMATON_TASK_DIR:-}" ]; then
    set -- "$@" --include-directories "$AUTOMATON_TASK_DIR"
fi

# shellcheck disable=SC2086 # GEMINI_FLAGS and the extra arguments are meant to be split
exec "$bin" "$@" ${GEMINI_FLAGS:-} $extra -p '' <"$AUTOMATON_PROMPT_FILE"
