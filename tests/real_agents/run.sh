#!/usr/bin/env bash
# tests/real_agents/run.sh — the offline end-to-end tier: automaton drives the REAL Claude Code,
# Codex and aider CLIs through a whole task lifecycle against a scripted model on 127.0.0.1.
#
#   tests/real_agents/run.sh            # all three CLIs
#   REAL_AGENTS="codex" tests/real_agents/run.sh
#
# 1. Installs the pinned CLIs into the cache folder (npm for Claude Code and Codex, a pip venv
#    for aider), unless already there at that version. A CLI whose install fails is SKIPPED with
#    a message saying why (never silently); the tier fails if every CLI is skipped.
# 2. Builds automaton (cargo build --release) unless AUTOMATON_BIN names a binary.
# 3. Where `unshare -n` works (root or user namespaces), re-runs itself inside a fresh network
#    namespace with only loopback up, so any traffic beyond 127.0.0.1 fails the run. Otherwise it
#    says so and runs without the namespace.
# 4. For each CLI: starts tests/real_agents/stub_model.py (its own instance, ephemeral port, in
#    the same namespace), makes a scratch git project with `- **Agent**: <cli>` in
#    .automaton/.agent.md, runs `automaton orchestrate` through the whole lifecycle and checks
#    it (tests/real_agents/check.py): every artifact written by the CLI itself, .state complete,
#    usage in the journal (claude, codex). Extra paths: a FAIL verdict (codex, exit 10), the
#    agent's own error signal (claude and codex against a model error, exit 12), the
#    examples/agents/ recipes as the agent command (claude, codex, gemini, opencode), and
#    worktree isolation (claude, codex, gemini, opencode): a task split into two wave-1
#    sub-tasks run with --jobs 2, each in its own worktree, merged into the integration branch,
#    the project root's checkout untouched; and
#    the sandbox (claude, codex): with `- **Sandbox**: bwrap` the model first tells the agent to
#    delete a file in the home folder, copy an SSH key, write beside the project and reach a host
#    not allowed; each must fail (the victims survive, the refused host is in the journal) and
#    the task still completes; and rework (claude): the stub's first greeting.sh fails the
#    verify command, automaton sends implement back with the check's output (`- **Rework**: 1`),
#    the second passes, and the task completes with the first round kept in logs/rework/1/; and
#    a local engine (opencode): the stub also answers as an Ollama server serving a 32k window,
#    and `detect-vram` must report that window from the engine.
# Prints each orchestrate transcript, the per-phase journal and the total time.
#
# Knobs: AUTOMATON_REAL_AGENTS_CACHE (default target/real-agents-cache), REAL_AGENTS (default
# "claude codex aider"), AUTOMATON_BIN (skip the build), REAL_AGENTS_NO_UNSHARE=1,
# KEEP_WORK=1 (keep the scratch folders), REAL_AGENTS_SCENARIOS="claude-rework …" (run only
# the scenarios named).
# Needs: bash, git, python3 (3.9+, with venv), node 18+ and npm, cargo; network for the
# installs only.
set -euo pipefail

CLAUDE_VERSION=2.1.332
CODEX_VERSION=0.171.0
AIDER_VERSION=0.86.2
GEMINI_VERSION=0.61.0
OPENCODE_VERSION=1.18.33

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CACHE=${AUTOMATON_REAL_AGENTS_CACHE:-$ROOT/target/real-agents-cache}
export REAL_AGENTS=${REAL_AGENTS:-claude codex aider gemini opencode}

say() { printf '\n=== %s\n' "$*"; }

# ---------------------------------------------------------------------------------- outside
if [ "${1:-}" != --inside ]; then
    TIER_T0=$(date +%s)
    export TIER_T0
    mkdir -p "$CACHE"
    CACHE=$(cd "$CACHE" && pwd)
    export AUTOMATON_REAL_AGENTS_CACHE=$CACHE
    skipped=""
    installed() { [ -x "$1" ] && "$1" --version 2>/dev/null | grep -qF "$2"; }
    for a in $REAL_AGENTS; do
        case $a in
            claude)
                bin=$CACHE/claude/node_modules/.bin/claude
                installed "$bin" "$CLAUDE_VERSION" || {
                    say "installing @anthropic-ai/claude-code@$CLAUDE_VERSION into $CACHE/claude"
                    npm install --prefix "$CACHE/claude" --no-audit --no-fund \
                        "@anthropic-ai/claude-code@$CLAUDE_VERSION" >"$CACHE/claude-install.log" 2>&1 || true
                } ;;
            codex)
                bin=$CACHE/codex/node_modules/.bin/codex
                installed "$bin" "$CODEX_VERSION" || {
                    say "installing @openai/codex@$CODEX_VERSION into $CACHE/codex"
                    npm install --prefix "$CACHE/codex" --no-audit --no-fund \
                        "@openai/codex@$CODEX_VERSION" >"$CACHE/codex-install.log" 2>&1 || true
                } ;;
            gemini | opencode)
                if [ "$a" = gemini ]; then pkg=@google/gemini-cli@$GEMINI_VERSION; else pkg=opencode-ai@$OPENCODE_VERSION; fi
                bin=$CACHE/$a/node_modules/.bin/$a
                installed "$bin" "${pkg##*@}" || {
                    say "installing $pkg into $CACHE/$a"
                    npm install --prefix "$CACHE/$a" --no-audit --no-fund "$pkg" \
                        >"$CACHE/$a-install.log" 2>&1 || true
                } ;;
            aider)
                bin=$CACHE/aider-venv/bin/aider
                installed "$bin" "$AIDER_VERSION" || {
                    say "installing aider-chat==$AIDER_VERSION into $CACHE/aider-venv"
                    { python3 -m venv "$CACHE/aider-venv" &&
                        "$CACHE/aider-venv/bin/pip" install -q "aider-chat==$AIDER_VERSION"; } \
                        >"$CACHE/aider-install.log" 2>&1 || true
                } ;;
            *) echo "run.sh: unknown agent '$a' in REAL_AGENTS" >&2; exit 2 ;;
        esac
        case $a in
            claude) want=$CLAUDE_VERSION ;;
            codex) want=$CODEX_VERSION ;;
            gemini) want=$GEMINI_VERSION ;;
            opencode) want=$OPENCODE_VERSION ;;
            *) want=$AIDER_VERSION ;;
        esac
        if installed "$bin" "$want"; then
            echo "$a: $("$bin" --version 2>/dev/null | head -n 1)"
        else
            echo "SKIP $a: the install of the pinned version failed; see $CACHE/$a-install.log:" >&2
            tail -n 5 "$CACHE/$a-install.log" >&2 2>/dev/null || true
            skipped="$skipped $a"
        fi
    done
    export REAL_AGENTS_SKIPPED=$skipped
    if [ -z "${AUTOMATON_BIN:-}" ]; then
        say "building automaton (release)"
        (cd "$ROOT" && cargo build --release --locked --quiet)
        AUTOMATON_BIN=$ROOT/target/release/automaton
    fi
    export AUTOMATON_BIN
    TIER_INSTALL_S=$(($(date +%s) - TIER_T0))
    export TIER_INSTALL_S
    if [ -z "${REAL_AGENTS_NO_UNSHARE:-}" ] && unshare -n true 2>/dev/null; then
        say "entering a network namespace with only loopback (unshare -n)"
        exec unshare -n bash "$0" --inside
    fi
    echo "NOTE: unshare -n is not available here; running without network isolation" >&2
    exec bash "$0" --inside --no-namespace
fi

# ----------------------------------------------------------------------------------- inside
if [ "${2:-}" != --no-namespace ]; then
    if command -v ip >/dev/null; then ip link set lo up; else python3 -c 'import socket,fcntl,struct; s=socket.socket(); fcntl.ioctl(s, 0x8914, struct.pack("16sH22x", b"lo", 0x1|0x40))'; fi
    # Prove the isolation: nothing beyond loopback is reachable.
    if python3 -c 'import socket; socket.create_connection(("1.1.1.1", 53), timeout=2)' 2>/dev/null; then
        echo "run.sh: the network namespace reaches the outside; refusing to run" >&2
        exit 1
    fi
    echo "network: loopback only (1.1.1.1 unreachable)"
fi

WORKROOT=$(mktemp -d "${TMPDIR:-/tmp}/automaton-real-agents.XXXXXX")
STUB_PIDS=""
cleanup() {
    for p in $STUB_PIDS; do kill "$p" 2>/dev/null || true; done
    if [ -n "${KEEP_WORK:-}" ]; then echo "scratch kept in $WORKROOT"; else rm -rf "$WORKROOT"; fi
}
trap cleanup EXIT

FAILED=""
RAN=0

# new_project NAME: scratch project, home and a running stub; sets W, PROJ, PORT.
new_project() {
    W=$WORKROOT/$1
    PROJ=$W/proj
    # A retried scenario starts from nothing: no old task, no old stub's port file.
    rm -rf "$W"
    mkdir -p "$W/home" "$PROJ/.automaton"
    python3 "$HERE/stub_model.py" --port 0 --port-file "$W/port" --log "$W/requests.jsonl" \
        --ollama-context "${OLLAMA_CTX:-0}" >/dev/null 2>"$W/stub.err" &
    STUB_PIDS="$STUB_PIDS $!"
    for _ in $(seq 200); do [ -s "$W/port" ] && break; sleep 0.05; done
    PORT=$(cat "$W/port" 2>/dev/null || echo 9)
    # What a sandboxed agent is told to harm (see SANDBOX=1).
    mkdir -p "$W/home/.ssh"
    echo "keep me" >"$W/home/victim.txt"
    echo "FAKE PRIVATE KEY" >"$W/home/.ssh/id_ed25519"
    git -C "$PROJ" init -q
    echo "# demo" >"$PROJ/README.md"
    git -C "$PROJ" add README.md
    git -C "$PROJ" -c user.email=ci@example.invalid -c user.name=ci commit -q -m init
}

# agent_env CLI: the environment that points the CLI at the stub (no keys of anyone's).
agent_env() {
    # No git identity anywhere (an empty global config): automaton's own commits must not need one.
    : >"$W/empty-gitconfig"
    local common=(HOME="$W/home" AUTOMATON_HOME="$W/automaton-home" AUTOMATON_RETRIES=0
        GIT_CONFIG_GLOBAL="$W/empty-gitconfig" GIT_CONFIG_NOSYSTEM=1
        PATH="$CACHE/claude/node_modules/.bin:$CACHE/codex/node_modules/.bin:$CACHE/aider-venv/bin:$CACHE/gemini/node_modules/.bin:$CACHE/opencode/node_modules/.bin:$PATH")
    case $1 in
        claude) ENV=("${common[@]}" ANTHROPIC_BASE_URL="http://127.0.0.1:$PORT" ANTHROPIC_API_KEY=sk-test
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1
            DISABLE_ERROR_REPORTING=1) ;;
        codex)
            mkdir -p "$W/codex-home"
            cat >"$W/codex-home/config.toml" <<EOF
model = "gpt-5.5"
model_provider = "stub"
check_for_update_on_startup = false

[model_providers.stub]
name = "stub"
base_url = "http://127.0.0.1:$PORT/v1"
wire_api = "responses"
env_key = "STUB_API_KEY"

[analytics]
enabled = false

[features]
plugins = false
remote_plugin = false

# The scratch folders are under /tmp, which workspace-write makes writable by default: take
# it out, so that only the working directory (a worktree) and --add-dir are writable.
[sandbox_workspace_write]
exclude_slash_tmp = true
exclude_tmpdir_env_var = true
EOF
            # Codex makes its helper commands (apply_patch, which writes the agent's files inside
            # its bubblewrap sandbox) only when CODEX_HOME is outside the temporary folder, so the
            # temporary folder is a folder of its own here, not the /tmp the scratch lives under.
            mkdir -p "$W/codex-tmp"
            ENV=("${common[@]}" CODEX_HOME="$W/codex-home" TMPDIR="$W/codex-tmp" STUB_API_KEY=sk-test) ;;
        aider)
            cat >"$W/model-metadata.json" <<'EOF'
{"openai/stub": {"max_input_tokens": 128000, "max_output_tokens": 8192, "max_tokens": 8192,
                 "input_cost_per_token": 0.000001, "output_cost_per_token": 0.000002,
                 "litellm_provider": "openai", "mode": "chat"}}
EOF
            ENV=("${common[@]}" OPENAI_API_BASE="http://127.0.0.1:$PORT/v1" OPENAI_API_KEY=sk-test
                LITELLM_LOCAL_MODEL_COST_MAP=True) ;;
        gemini)
            # An API key with a base URL: the Gemini API client of the CLI, pointed at the stub.
            # Without a chosen auth type a headless run stops ("Invalid auth method selected").
            mkdir -p "$W/home/.gemini"
            cat >"$W/home/.gemini/settings.json" <<'EOF'
{"security": {"auth": {"selectedType": "gemini-api-key"}},
 "privacy": {"usageStatisticsEnabled": false},
 "general": {"disableAutoUpdate": true, "disableUpdateNag": true}}
EOF
            ENV=("${common[@]}" GEMINI_API_KEY=sk-test GOOGLE_GEMINI_BASE_URL="http://127.0.0.1:$PORT") ;;
        opencode)
            # A provider of its own (the AI SDK's OpenAI-compatible one, bundled in the binary)
            # at the stub's Chat Completions; no fetch of the models.dev catalogue. With
            # OLLAMA_CTX the stub is an Ollama server too, and the provider is named as
            # opencode's Ollama recipe names it.
            cat >"$W/opencode.json" <<EOF
{"\$schema": "https://opencode.ai/config.json", "autoupdate": false, "share": "disabled",
 "provider": {"stub": {"npm": "@ai-sdk/openai-compatible", "name": "${OLLAMA_CTX:+Ollama (local)}${OLLAMA_CTX:-stub}",
   "options": {"baseURL": "http://127.0.0.1:$PORT/v1", "apiKey": "sk-test"},
   "models": {"stub-model": {"name": "stub model", "limit": {"context": 128000, "output": 8192}}}}}}
EOF
            ENV=("${common[@]}" OPENCODE_CONFIG="$W/opencode.json" OPENCODE_DISABLE_MODELS_FETCH=1
                OPENCODE_DISABLE_AUTOUPDATE=1) ;;
    esac
}

# agent_md CLI: .automaton/.agent.md choosing the adapter: its default command line, or the
# examples/agents/ recipe when RECIPE=1; `- **Isolation**: worktree` when WORKTREE=1 (else the
# default, auto, which is worktree in these git projects too).
agent_md() {
    {
        echo "## Agent"
        echo "- **Agent**: $1"
        if [ "${WORKTREE:-}" = 1 ]; then
            echo "- **Isolation**: worktree"
        fi
        if [ "${SANDBOX:-}" = 1 ]; then
            # The stub's port is in Codex's config file, not in a variable: allowed by name.
            echo "- **Sandbox**: bwrap"
            echo "- **Network allow**: 127.0.0.1:$PORT"
            echo "- **Pass env**: STUB_API_KEY"
        fi
        if [ "${REWORK:-}" = 1 ]; then
            # The stub's first greeting.sh fails this check; its rework round's passes.
            echo "- **Verify command**: sh greeting.sh"
        fi
        if [ "${RECIPE:-}" = 1 ]; then
            echo "- **Agent command**: sh $ROOT/examples/agents/$1.sh"
        fi
        case $1 in
            # The model flag of the default command line (and, for gemini, no router call).
            gemini) echo "- **Model**: gemini-2.5-flash" ;;
            opencode) echo "- **Model**: stub/stub-model" ;;
        esac
        if [ "$1" = aider ]; then
            echo "- **Model**: openai/stub"
            echo "- **Agent flags**: --model-metadata-file $W/model-metadata.json --edit-format whole" \
                "--analytics-disable --no-show-model-warnings --no-show-release-notes --map-tokens 0" \
                "--chat-history-file $W/aider.chat.md --input-history-file $W/aider.input"
        fi
    } >"$PROJ/.automaton/.agent.md"
    if [ "${REWORK:-}" = 1 ]; then
        printf '# Config\n\n## Limits\n- **Rework**: 1\n' >"$PROJ/.automaton/config.md"
    fi
    if [ -n "${OLLAMA_CTX:-}" ]; then
        # detect-vram and the fit check before each phase ask the engine for its window.
        printf '# Config\n\n## Model Configuration\n- **Model**: qwen2.5-coder:7b\n- **Model endpoint**: http://127.0.0.1:%s\n' \
            "$PORT" >"$PROJ/.automaton/config.md"
    fi
}

# scenario CLI NAME DESCRIPTION EXPECTED_EXIT CHECK_MODE [--usage]
# With WORKTREE=1: isolation on and `--jobs 2` (the stub splits a task whose name says "split"
# into two wave-1 sub-tasks).
scenario() {
    local cli=$1 name=$2 desc=$3 want=$4 mode=$5 extra=${6:-}
    RAN=$((RAN + 1))
    new_project "$name"
    agent_env "$cli"
    agent_md "$cli"
    local task
    task=tasks/$(printf '%s' "$desc" | tr '[:upper:]' '[:lower:]' | tr -cs '[:lower:][:digit:]' '-' | sed 's/^-//; s/-$//')
    local jobs=()
    if [ "${WORKTREE:-}" = 1 ]; then
        jobs=(--jobs 2)
        extra="$extra --root $(git -C "$PROJ" rev-parse HEAD):$(git -C "$PROJ" symbolic-ref HEAD)"
        extra="$extra --requests $W/requests.jsonl"
    fi
    say "$cli${RECIPE:+ (examples/agents/$cli.sh)}${WORKTREE:+ (worktrees)}: automaton orchestrate ${jobs[*]:+${jobs[*]} }\"$desc\" (expect exit $want)"
    local t0 rc=0
    t0=$(date +%s%N)
    # Bounded twice: automaton's own caps, and a hard timeout in case anything hangs.
    timeout -k 10 330 env "${ENV[@]}" "$AUTOMATON_BIN" --project "$PROJ" orchestrate "${jobs[@]}" \
        --max-phase-time 3m --stall-timeout 2m --max-total-time 5m "$desc" >"$W/transcript.txt" 2>&1 || rc=$?
    local ms=$((($(date +%s%N) - t0) / 1000000))
    sed 's/^/    | /' "$W/transcript.txt"
    echo "    exit $rc after ${ms} ms"
    local ok=1
    if [ "$rc" != "$want" ]; then
        echo "    FAIL: expected exit $want, got $rc"
        ok=0
    fi
    if [ -f "$PROJ/$task/logs/journal.jsonl" ]; then
        # shellcheck disable=SC2086 # extra is a list of flags
        python3 "$HERE/check.py" "$mode" "$PROJ" "$task" "$cli" $extra || ok=0
    else
        echo "    FAIL: no journal at $task/logs/journal.jsonl"
        ok=0
    fi
    if [ "${SANDBOX:-}" = 1 ]; then
        # The stub told the agent to delete a file of the real home, read ~/.ssh, write outside
        # the project and reach a host it may not: each must have failed.
        grep -qx "keep me" "$W/home/victim.txt" || { echo "    FAIL: the home's victim.txt is gone"; ok=0; }
        if grep -qs FAKE "$PROJ/$task/stolen.txt"; then echo "    FAIL: ~/.ssh was read"; ok=0; fi
        [ ! -e "$W/pwned.txt" ] || { echo "    FAIL: the agent wrote outside the project"; ok=0; }
        grep -qs '"forbidden.example:80"' "$PROJ/$task/logs/journal.jsonl" ||
            { echo "    FAIL: no refused forbidden.example:80 in the journal"; ok=0; }
    fi
    if [ -n "${OLLAMA_CTX:-}" ]; then
        # What detect-vram read from the engine: its name, URL and the window it serves.
        env "${ENV[@]}" "$AUTOMATON_BIN" --project "$PROJ" detect-vram --refresh >"$W/vram.json" 2>"$W/vram.err" || true
        python3 - "$W/vram.json" "$PORT" "$OLLAMA_CTX" <<'PY' || ok=0
import json, sys
v = json.load(open(sys.argv[1]))
e = v.get("engine") or {}
want = {"name": "ollama", "url": "http://127.0.0.1:" + sys.argv[2],
        "context_tokens": int(sys.argv[3])}
got = {k: e.get(k) for k in want}
print("    detect-vram: engine %s, model_context_kb %s (%s)"
      % (got, v.get("model_context_kb"), v.get("model_context_source")))
if got != want or v.get("model_context_kb") != int(sys.argv[3]):
    print("    FAIL: detect-vram did not read the engine's window")
    sys.exit(1)
PY
    fi
    if [ "$mode" = complete ] || [ "$mode" = worktrees ]; then
        env "${ENV[@]}" "$AUTOMATON_BIN" --project "$PROJ" status 2>&1 |
            grep -E '^\- \*\*(Status|Usage)\*\*' | sed 's/^/    status: /' || true
    fi
    if [ "$ok" = 0 ]; then
        FAILED="$FAILED $cli:$name"
        for f in "$PROJ/$task"/logs/*.log "$PROJ/$task"/subtasks/*/logs/*.log; do
            [ -f "$f" ] && { echo "    --- tail of $f"; tail -n 15 "$f" | sed 's/^/    /'; }
        done
        echo "    --- stub requests: $(wc -l <"$W/requests.jsonl" 2>/dev/null || echo 0); stub stderr:"
        tail -n 10 "$W/stub.err" | sed 's/^/    /'
    fi
}

# A real CLI under load can retry its model for minutes before it gives up; run a failed
# scenario once more before calling it failed (both attempts are printed).
scenario_retry() {
    if [ -n "${REAL_AGENTS_SCENARIOS:-}" ]; then
        case " $REAL_AGENTS_SCENARIOS " in *" $2 "*) ;; *) return 0 ;; esac
    fi
    local before=$FAILED
    scenario "$@"
    if [ "$FAILED" != "$before" ]; then
        echo "    RETRY: running scenario $2 once more"
        FAILED=$before
        RAN=$((RAN - 1))
        scenario "$@"
    fi
}

for cli in $REAL_AGENTS; do
    case " $REAL_AGENTS_SKIPPED " in *" $cli "*) continue ;; esac
    case $cli in
        claude)
            scenario_retry claude claude-lifecycle "add a greeting script" 0 complete --usage
            scenario_retry claude claude-model-error "model-error on every call" 12 agent_failed
            RECIPE=1 scenario_retry claude claude-recipe "add a greeting script" 0 complete --usage
            WORKTREE=1 scenario_retry claude claude-worktrees "split the greeting" 0 worktrees --usage
            SANDBOX=1 scenario_retry claude claude-sandbox "add a greeting script in a sandbox" 0 complete --usage
            REWORK=1 scenario_retry claude claude-rework "add a greeting script with rework" 0 rework --usage ;;
        codex)
            scenario_retry codex codex-lifecycle "add a greeting script" 0 complete --usage
            scenario_retry codex codex-verdict-fail "greeting the referee must fail" 10 verdict_fail
            scenario_retry codex codex-model-error "model-error on every call" 12 agent_failed
            RECIPE=1 scenario_retry codex codex-recipe "add a greeting script" 0 complete --usage
            WORKTREE=1 scenario_retry codex codex-worktrees "split the greeting" 0 worktrees --usage
            SANDBOX=1 scenario_retry codex codex-sandbox "add a greeting script in a sandbox" 0 complete --usage ;;
        aider)
            scenario_retry aider aider-lifecycle "add a greeting script" 0 complete ;;
        gemini | opencode)
            scenario_retry "$cli" "$cli-lifecycle" "add a greeting script" 0 complete --usage
            scenario_retry "$cli" "$cli-model-error" "model-error on every call" 12 agent_failed
            RECIPE=1 scenario_retry "$cli" "$cli-recipe" "add a greeting script" 0 complete --usage
            WORKTREE=1 scenario_retry "$cli" "$cli-worktrees" "split the greeting" 0 worktrees --usage
            if [ "$cli" = opencode ]; then
                OLLAMA_CTX=32768 scenario_retry opencode opencode-ollama "add a greeting script on ollama" 0 complete --usage
            fi ;;
    esac
done

total=$(($(date +%s) - TIER_T0))
say "real-agents tier: $RAN scenarios in ${total}s (installs and build: ${TIER_INSTALL_S}s)"
[ -n "$REAL_AGENTS_SKIPPED" ] && echo "SKIPPED (install impossible):$REAL_AGENTS_SKIPPED"
nfailed=$(printf '%s\n' $FAILED | grep -c . || true)
echo "real-agents: $((RAN - nfailed)) passed, $nfailed failed"
if [ -n "$FAILED" ]; then
    echo "FAILED:$FAILED"
    exit 1
fi
if [ "$RAN" = 0 ]; then
    echo "FAILED: no CLI could be installed, nothing ran"
    exit 1
fi
echo "OK"
