#!/bin/sh
# aider.sh — run aider (one non-interactive message) as an automaton agent.
#
# Use, in .automaton/.agent.md (the path is relative to the project root, where it runs):
#   - **Agent**: aider
#   - **Agent command**: sh examples/agents/aider.sh
# `- **Agent**: aider` alone runs aider without the --read inputs this script adds. Either way
# automaton reads the `Model:` and `Tokens: … Cost: …` lines back into the task's
# logs/journal.jsonl and `automaton status`; success is the exit code plus the artifact.
#
# What it runs, in the project root:
#   aider --yes-always --no-auto-commits --no-gitignore --no-check-update --no-pretty \
#         --no-fancy-input [--model M] --read <each input of the task folder> $AIDER_FLAGS "$@" \
#         --message-file "$AUTOMATON_PROMPT_FILE" "$AUTOMATON_ARTIFACT" $AIDER_FILES
#   ("$@": the script's own arguments, e.g. `- **Agent flags**`.)
# - `--message-file` sends the prompt as one message; aider answers, applies its edits, exits.
# - `--yes-always` answers aider's questions (create the file? add it to the chat?) with yes.
# - `--no-auto-commits --no-gitignore`: git belongs to you and automaton; aider would otherwise
#   commit each edit and add `.aider*` to .gitignore.
# - aider has no tools to open files by itself: it edits only the files named on its command line
#   (the artifact, plus AIDER_FILES) and sees only those and the `--read` ones. So this script
#   adds every existing input of the task folder (TASK.md, SPEC.md, … PARENT_SPEC.md,
#   VRAM_CONFIG.md) as read-only context, and the artifact as the file to write. (The project
#   rules are already in the prompt.) For the implement phase name the source files to change in AIDER_FILES
#   (aider may also ask to add files it sees in its repo map; --yes-always agrees). aider runs
#   no shell commands on its own: give it your tests with AIDER_TEST_CMD='make test' and
#   AIDER_AUTO_TEST=true (aider's own variables), and use automaton's verify command as well.
# - aider exits 0 even when the reply held no edit it could apply; automaton checks the artifact.
# - It leaves .aider.chat.history.md, .aider.input.history and .aider.tags.cache.v4/ in the
#   project unless you move them (AIDER_FLAGS='--chat-history-file /tmp/x.md ...' or a
#   .aider.conf.yml).
# - `--no-pretty --no-fancy-input`: plain output lines for the log and the adapter.
# Tested: aider-chat 0.86.2 in automaton's offline tier (tests/real_agents/run.sh).
#
# Requires: `aider` on PATH (python -m pip install aider-chat, or pipx install aider-chat) and
# the API key of your model's provider: OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY, … or a
# local model (AIDER_MODEL=ollama_chat/qwen2.5-coder, with OLLAMA_API_BASE). Every aider option
# also reads from .aider.conf.yml and AIDER_* variables.
#
# Knobs (environment):
#   AIDER_BIN    the executable (default: aider)
#   AIDER_MODEL  --model value, e.g. sonnet, gpt-4o, ollama_chat/qwen2.5-coder (default: unset)
#   AIDER_FILES  extra files aider may edit, split on spaces (default: none)
#   AIDER_FLAGS  extra flags, split on spaces, e.g. '--edit-format whole --no-stream'
#
# automaton's environment: AUTOMATON_PROMPT_FILE and AUTOMATON_ARTIFACT (required here),
# AUTOMATON_TASK_DIR (the inputs), AUTOMATON_PROJECT, AUTOMATON_PHASE. See README.md beside this file.

set -eu

if [ -z "${AUTOMATON_PROMPT_FILE:-}" ]; then
    echo "aider.sh: AUTOMATON_PROMPT_FILE is not set (run me from automaton, see README.md)" >&2
    exit 2
fi
if [ -z "${AUTOMATON_ARTIFACT:-}" ]; then
    echo "aider.sh: AUTOMATON_ARTIFACT is not set (run me from automaton, see README.md)" >&2
    exit 2
fi
[ -r "$AUTOMATON_PROMPT_FILE" ] || {
    echo "aider.sh: cannot read the prompt file $AUTOMATON_PROMPT_FILE" >&2
    exit 2
}

bin=${AIDER_BIN:-aider}
command -v "$bin" >/dev/null 2>&1 || {
    echo "aider.sh: '$bin' not found on PATH (python -m pip install aider-chat, or set AIDER_BIN)" >&2
    exit 127
}

# automaton also writes the prompt on stdin; drain it so the writer never blocks.
if [ ! -t 0 ]; then
    cat >/dev/null || true
fi

task_dir=${AUTOMATON_TASK_DIR:-$(dirname "$AUTOMATON_ARTIFACT")}

extra=$*
set -- --yes-always --no-auto-commits --no-gitignore --no-check-update --no-pretty --no-fancy-input
if [ -n "${AIDER_MODEL:-}" ]; then
    set -- "$@" --model "$AIDER_MODEL"
fi

# Read-only context: the task's inputs that exist, except the artifact being written.
for f in TASK.md PARENT_SPEC.md VRAM_CONFIG.md SPEC.md DECOMPOSITION.md DESIGN.md TEST_PLAN.md \
    IMPLEMENTATION.md BUG_REPORT.md ADVERSARIAL_BUG_REPORT.md DOC_REVIEW.md; do
    path=$task_dir/$f
    if [ -s "$path" ] && [ "$path" != "$AUTOMATON_ARTIFACT" ]; then
        set -- "$@" --read "$path"
    fi
done

# shellcheck disable=SC2086 # AIDER_FLAGS and AIDER_FILES are meant to be split
exec "$bin" "$@" ${AIDER_FLAGS:-} $extra --message-file "$AUTOMATON_PROMPT_FILE" \
    "$AUTOMATON_ARTIFACT" ${AIDER_FILES:-} </dev/null
