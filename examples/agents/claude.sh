#!/bin/sh
# claude.sh — run Claude Code (`claude -p`, print mode) as an automaton agent.
#
# Use, in .automaton/.agent.md (the path is relative to the project root, where it runs):
#   - **Agent**: claude
#   - **Agent command**: sh examples/agents/claude.sh
# `- **Agent**: claude` alone runs the same command line without this script; the script adds
# its knobs. Either way automaton reads the stream-json transcript back: an error result stops
# the phase even when claude exits 0, and tokens, cost, session id and model go to the task's
# logs/journal.jsonl and `automaton status`.
#
# What it runs, in the project root, with the rendered prompt on stdin:
#   claude -p --permission-mode acceptEdits --output-format stream-json --verbose [--model M] \
#       $CLAUDE_FLAGS "$@" < "$AUTOMATON_PROMPT_FILE"
#   ("$@": the script's own arguments, e.g. `- **Agent flags**`.)
# - `-p` is print mode: one non-interactive turn, then exit.
# - `--permission-mode acceptEdits` lets it write files. Without it, `claude -p` is denied the
#   write and still exits 0 — automaton then reports the missing artifact. Shell commands (the
#   implement phase must run tests; reviewers rerun them) need Bash allowed as well, e.g.
#   CLAUDE_ALLOWED_TOOLS='Bash(cargo test:*),Bash(git diff:*),Bash(git status:*)', or 'Bash' for
#   any command, or a permissions block in .claude/settings.json.
#   `--dangerously-skip-permissions` / `bypassPermissions` is refused when run as root unless
#   IS_SANDBOX=1 is set; use it only in a throw-away sandbox.
# - `--output-format stream-json --verbose` prints one JSON event a line, ending with a `result`
#   event (subtype, is_error, session_id, usage, total_cost_usd, modelUsage) that automaton's
#   claude adapter reads. With `- **Agent**: command` use CLAUDE_OUTPUT=text instead, so the
#   `CONTRACT_MET` line is plain text.
# - Files can only be written inside the working directory (the project root) or an --add-dir.
# Tested: Claude Code 2.1.332 in automaton's offline tier (tests/real_agents/run.sh).
#
# Requires: `claude` on PATH (npm install -g @anthropic-ai/claude-code), and either
# ANTHROPIC_API_KEY in the environment or a logged-in Claude account (`claude` then `/login`).
# ANTHROPIC_BASE_URL points it at another endpoint (a proxy, or a local stub in tests).
#
# Knobs (environment):
#   CLAUDE_BIN              the executable (default: claude)
#   CLAUDE_MODEL            --model value, e.g. sonnet, opus, or a full model id (default: unset)
#   CLAUDE_PERMISSION_MODE  default acceptEdits
#   CLAUDE_ALLOWED_TOOLS    --allowedTools value, one argument (commas between rules)
#   CLAUDE_OUTPUT           stream-json (default; needs the claude adapter) or text
#   CLAUDE_FLAGS            extra flags, split on spaces, e.g. '--max-turns 50'
#
# automaton's environment: AUTOMATON_PROMPT_FILE (required here), AUTOMATON_PHASE,
# AUTOMATON_TASK_DIR, AUTOMATON_ARTIFACT, AUTOMATON_PROJECT. See README.md beside this file.

set -eu

if [ -z "${AUTOMATON_PROMPT_FILE:-}" ]; then
    echo "claude.sh: AUTOMATON_PROMPT_FILE is not set (run me from automaton, see README.md)" >&2
    exit 2
fi
[ -r "$AUTOMATON_PROMPT_FILE" ] || {
    echo "claude.sh: cannot read the prompt file $AUTOMATON_PROMPT_FILE" >&2
    exit 2
}

bin=${CLAUDE_BIN:-claude}
command -v "$bin" >/dev/null 2>&1 || {
    echo "claude.sh: '$bin' not found on PATH (npm install -g @anthropic-ai/claude-code, or set CLAUDE_BIN)" >&2
    exit 127
}

# automaton also writes the prompt on stdin; drain it so the writer never blocks, then feed
# claude the copy on disk.
if [ ! -t 0 ]; then
    cat >/dev/null || true
fi

# A Claude Code session that started automaton must not leak its session marker into this one.
unset CLAUDECODE 2>/dev/null || true

output=${CLAUDE_OUTPUT:-stream-json}
extra=$*
set -- -p --permission-mode "${CLAUDE_PERMISSION_MODE:-acceptEdits}" --output-format "$output"
if [ "$output" = stream-json ]; then
    set -- "$@" --verbose
fi
if [ -n "${CLAUDE_MODEL:-}" ]; then
    set -- "$@" --model "$CLAUDE_MODEL"
fi
if [ -n "${CLAUDE_ALLOWED_TOOLS:-}" ]; then
    set -- "$@" --allowedTools "$CLAUDE_ALLOWED_TOOLS"
fi
# Isolation (`- **Isolation**: worktree`): the agent works in its task's git worktree, and the
# task folder (where the artifact goes) stays in the project: let it write there too.
if [ -n "${AUTOMATON_WORKTREE:-}" ] && [ -n "${AUTOMATON_TASK_DIR:-}" ]; then
    set -- "$@" --add-dir "$AUTOMATON_TASK_DIR"
fi

# shellcheck disable=SC2086 # CLAUDE_FLAGS and the arguments are meant to be split into flags
exec "$bin" "$@" ${CLAUDE_FLAGS:-} $extra <"$AUTOMATON_PROMPT_FILE"
