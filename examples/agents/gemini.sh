#!/bin/sh
# gemini.sh — run Google's Gemini CLI (headless, one prompt) as an automaton agent.
#
# Use, in .automaton/.agent.md (the path is relative to the project root, where it runs):
#   - **Agent command**: sh examples/agents/gemini.sh
#
# What it runs, in the project root:
#   gemini --approval-mode yolo --skip-trust [-m M] $GEMINI_FLAGS \
#       -p "$(cat "$AUTOMATON_PROMPT_FILE")" </dev/null
# - `-p/--prompt` makes it non-interactive: answer, act, exit. Exit codes: 0 success, 1 error,
#   42 input error, 53 turn limit exceeded.
# - `--approval-mode yolo` approves every tool call (file writes and shell commands), which the
#   phases need; without it a headless run cannot write the artifact. `auto_edit` approves edits
#   only (then the implement phase cannot run tests). Use yolo in a sandbox or container you can
#   throw away; add GEMINI_FLAGS=--sandbox to use Gemini's own sandbox.
# - `--skip-trust` trusts the project folder for this run: in an untrusted folder Gemini CLI
#   forces the approval mode back to `default`, and the headless run then cannot write.
# - Flags assumed: Gemini CLI as documented in autumn 2026 (around 0.65: `--approval-mode`,
#   `--skip-trust`, `-m`, `-p`, `-o/--output-format text|json|stream-json`). Older releases lack
#   `--approval-mode` and `--skip-trust`: set GEMINI_APPROVAL_FLAGS=--yolo for them (`-y/--yolo`
#   is deprecated in newer ones, and giving both --yolo and --approval-mode is an error).
# - The prompt is passed as an argument, so it must stay under the kernel's single-argument limit
#   (128 KiB on Linux); automaton's prompts are far below that. stdin is /dev/null so the CLI
#   never waits on it.
# - Text output (the default) keeps the `CONTRACT_MET` line visible to automaton.
#
# Requires: `gemini` on PATH (npm install -g @google/gemini-cli), and GEMINI_API_KEY (Google AI
# Studio), or Vertex AI settings (GOOGLE_API_KEY / GOOGLE_CLOUD_PROJECT with
# GOOGLE_GENAI_USE_VERTEXAI=true), or a cached Google login from an interactive `gemini` run.
#
# Knobs (environment):
#   GEMINI_BIN             the executable (default: gemini)
#   GEMINI_MODEL           -m value, e.g. gemini-2.5-pro (default: unset, the CLI's default)
#   GEMINI_APPROVAL_FLAGS  default '--approval-mode yolo --skip-trust', split on spaces
#   GEMINI_FLAGS           extra flags, split on spaces, e.g. '--sandbox'
#
# automaton's environment: AUTOMATON_PROMPT_FILE (required here), AUTOMATON_PHASE,
# AUTOMATON_TASK_DIR, AUTOMATON_ARTIFACT, AUTOMATON_PROJECT. See README.md beside this file.

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

prompt=$(cat "$AUTOMATON_PROMPT_FILE")
[ -n "$prompt" ] || {
    echo "gemini.sh: the prompt file $AUTOMATON_PROMPT_FILE is empty" >&2
    exit 2
}

set --
if [ -n "${GEMINI_MODEL:-}" ]; then
    set -- -m "$GEMINI_MODEL"
fi

# shellcheck disable=SC2086 # the *_FLAGS variables are meant to be split into several flags
exec "$bin" ${GEMINI_APPROVAL_FLAGS:---approval-mode yolo --skip-trust} "$@" ${GEMINI_FLAGS:-} \
    -p "$prompt" </dev/null
