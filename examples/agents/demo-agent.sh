#!/bin/sh
# demo-agent.sh — a scripted stand-in for a coding agent. No API key, no network, no model.
#
# It follows automaton's agent contract (see README.md beside this file) and writes a plausible
# artifact for every phase, so the whole lifecycle can be watched in a few seconds:
#   research             SPEC.md (with ## Acceptance Criteria)
#   decomposition        DECOMPOSITION.md (a two-row sub-task table)
#   design               DESIGN.md
#   test_design          TEST_PLAN.md
#   implement            IMPLEMENTATION.md, plus a real file in its working folder: greeting.sh
#                        (it also runs greeting.sh and reports what it printed)
#   bug_find             BUG_REPORT.md            (## Findings: No findings.)
#   adversarial_bug_find ADVERSARIAL_BUG_REPORT.md (## Findings: one Low finding)
#   doc_review           DOC_REVIEW.md
#   referee              VERDICT.md (Verdict: PASS unless DEMO_AGENT_VERDICT says otherwise)
# Every file is written to a temp file beside it and moved into place, so it appears atomically.
# The last line printed is CONTRACT_MET.
#
# Use, in .automaton/.agent.md (the path is relative to the project root, where it runs):
#   - **Agent command**: sh examples/agents/demo-agent.sh
#
# Environment, set by automaton:
#   AUTOMATON_PHASE        the phase word (required)
#   AUTOMATON_ARTIFACT     absolute path of the artifact to write (required)
#   AUTOMATON_TASK_DIR     absolute task folder (default: the artifact's folder)
#   AUTOMATON_PROJECT      absolute project root (default: the current directory)
#   AUTOMATON_PROMPT_FILE  the rendered prompt (only reported; the demo needs no prompt)
# Knobs:
#   DEMO_AGENT_DELAY       seconds to "think" per step, default 0.2 (0 = no sleeping)
#   DEMO_AGENT_VERDICT     PASS (default), FAIL or NEEDS_REVIEW: what the referee writes
#
# Exit status: 0 on success, 2 on a usage error (missing variable, unknown phase or verdict),
# 1 if a file could not be written.
#
# POSIX sh (runs under dash); no bash-isms.

set -eu

me=demo-agent

die() {
    printf '%s: %s\n' "$me" "$1" >&2
    exit "${2:-1}"
}

phase=${AUTOMATON_PHASE:-}
artifact=${AUTOMATON_ARTIFACT:-}
[ -n "$phase" ] || die "AUTOMATON_PHASE is not set (run me from automaton, or set it by hand)" 2
[ -n "$artifact" ] || die "AUTOMATON_ARTIFACT is not set" 2
task_dir=${AUTOMATON_TASK_DIR:-$(dirname "$artifact")}
project=${AUTOMATON_PROJECT:-$(pwd)}
delay=${DEMO_AGENT_DELAY:-0.2}
verdict=${DEMO_AGENT_VERDICT:-PASS}

case $phase in
    research | decomposition | design | test_design | implement | bug_find | \
        adversarial_bug_find | doc_review | referee) ;;
    *) die "unknown phase '$phase' (expected research, decomposition, design, test_design, implement, bug_find, adversarial_bug_find, doc_review or referee)" 2 ;;
esac
case $verdict in
    PASS | FAIL | NEEDS_REVIEW) ;;
    *) die "DEMO_AGENT_VERDICT must be PASS, FAIL or NEEDS_REVIEW, not '$verdict'" 2 ;;
esac

# automaton writes the prompt on stdin and closes it; read it so the writer never blocks.
if [ ! -t 0 ]; then
    cat >/dev/null || true
fi

think() {
    case $delay in
        '' | 0 | 0.0 | 0.00) return 0 ;;
    esac
    # Fractional seconds work with GNU, BusyBox and BSD sleep; fall back to 1 s elsewhere.
    sleep "$delay" 2>/dev/null || sleep 1
}

say() {
    printf '%s\n' "$*"
}

# A temp file being written is removed if we exit or are killed before it is moved into place.
tmp=
cleanup() {
    if [ -n "$tmp" ]; then
        rm -f "$tmp"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# write_file PATH: stdin -> PATH, atomically (temp file in the same folder, then mv).
write_file() {
    dest=$1
    dir=$(dirname "$dest")
    mkdir -p "$dir" || die "cannot create $dir"
    tmp="$dir/.$(basename "$dest").tmp.$$"
    cat >"$tmp" || die "cannot write $tmp"
    [ -s "$tmp" ] || die "refusing to write an empty $dest"
    mv -f "$tmp" "$dest" || die "cannot move $tmp to $dest"
    tmp=
}

# read_input NAME: announce reading an input of the task folder when it exists.
read_input() {
    if [ -s "$task_dir/$1" ]; then
        say "reading $1..."
    fi
}

# The request, in one line without table-breaking characters: TASK.md, else the scope in
# PARENT_SPEC.md (sub-tasks), else the folder name.
first_text_line() {
    # First line that is not blank and not a heading; a leading bullet and bold label removed.
    sed -e 's/^[[:space:]]*//' -e 's/^[-*][[:space:]]*//' \
        -e 's/^\*\*[^*]*\*\*:*[[:space:]]*//' "$1" 2>/dev/null |
        grep -v -e '^#' -e '^[[:space:]]*$' | head -n 1
}

scope_line() {
    # The line that names the sub-task's scope, else the first text line.
    line=$(grep -i 'scope' "$1" 2>/dev/null | grep -v '^#' | head -n 1 || true)
    if [ -n "$line" ]; then
        printf '%s\n' "$line" | sed -e 's/^[[:space:]]*[-*]*[[:space:]]*//' \
            -e 's/^\*\*[^*]*\*\*:*[[:space:]]*//' -e 's/^[A-Za-z ]*:[[:space:]]*//'
    else
        first_text_line "$1"
    fi
}

request=
if [ -s "$task_dir/TASK.md" ]; then
    request=$(first_text_line "$task_dir/TASK.md")
elif [ -s "$task_dir/PARENT_SPEC.md" ]; then
    request=$(scope_line "$task_dir/PARENT_SPEC.md")
fi
task_name=$(basename "$task_dir")
[ -n "$request" ] || request=$(printf '%s' "$task_name" | tr '-' ' ')
request=$(printf '%s' "$request" | tr '|\r' '/ ' | cut -c1-160)

task_rel=${task_dir#"$project"/}
name=$(basename "$artifact")
# The code goes where the agent works: the project root, or its worktree with isolation.
greeting="$(pwd)/greeting.sh"

say "demo-agent: phase $phase for $task_rel"
say "request: $request"
if [ -n "${AUTOMATON_PROMPT_FILE:-}" ] && [ -s "$AUTOMATON_PROMPT_FILE" ]; then
    say "prompt: $(wc -l <"$AUTOMATON_PROMPT_FILE" | tr -d ' ') lines in $AUTOMATON_PROMPT_FILE"
fi
think

case $phase in
research)
    read_input TASK.md
    read_input PARENT_SPEC.md
    read_input VRAM_CONFIG.md
    say "looking at the project layout..."
    think
    say "writing $name"
    write_file "$artifact" <<EOF
# Specification: $request

## Summary
The project needs: $request. This task adds a small, self-contained shell script,
\`greeting.sh\` in the project root, that prints a friendly greeting, with an optional name.

## Context
- The project has no greeting command today (checked with \`ls\` and \`grep -ri greeting\`).
- Scripts in this project are POSIX \`sh\` and run from the project root.

## Requirements
- \`sh greeting.sh\` prints a greeting to standard output and exits 0.
- \`sh greeting.sh NAME\` greets NAME instead of the world.
- The script has no dependencies beyond a POSIX shell.

## Acceptance Criteria
1. \`sh greeting.sh\` prints exactly \`Hello, world!\` followed by a newline and exits 0.
2. \`sh greeting.sh Ada\` prints exactly \`Hello, Ada!\` and exits 0.
3. \`sh greeting.sh "Ada Lovelace"\` prints \`Hello, Ada Lovelace!\` (a name with a space is kept whole).
4. \`sh -n greeting.sh\` reports no syntax error, and the script runs under dash.

## Out of Scope
- Localisation and other languages.
- Reading the name from a file or the environment.

## Assumptions and Open Questions
- Assumed the greeting goes to standard output, not a log file.
- Assumed "world" is the right default when no name is given.
EOF
    ;;

decomposition)
    read_input SPEC.md
    read_input VRAM_CONFIG.md
    say "estimating the size of each piece..."
    think
    say "writing $name"
    write_file "$artifact" <<EOF
# Decomposition: $request

The work splits into the script itself and its documentation; the docs describe the script's
behaviour, so they come second.

| Sub-task | Wave | Depends on | Estimated peak context | Files | Scope |
|---|---|---|---|---|---|
| greeting-script | 1 | - | 4k | greeting.sh | greeting.sh prints Hello, world! or Hello, NAME! for its first argument and exits 0 |
| greeting-docs | 2 | greeting-script | 3k | GREETING.md | GREETING.md documents how to run greeting.sh with and without a name, with example output |

## Coverage
- Criterion 1 (default greeting): greeting-script
- Criterion 2 (named greeting): greeting-script
- Criterion 3 (name with a space): greeting-script
- Criterion 4 (POSIX syntax): greeting-script
EOF
    ;;

design)
    read_input SPEC.md
    read_input PARENT_SPEC.md
    say "reading the existing scripts for conventions..."
    think
    say "writing $name"
    write_file "$artifact" <<EOF
# Design: $request

## Overview
One POSIX \`sh\` script, \`greeting.sh\`, in the project root. It takes an optional first
argument and prints one line. Nothing else in the project changes.

## Changes
- \`greeting.sh\` (new): \`name=\${1:-world}\`, then \`printf 'Hello, %s!\\n' "\$name"\`.

## Data Flow and Interfaces
- Input: the first command-line argument (optional). Output: one line on standard output.
- Exit status: 0.

## Error Handling
- No error paths: any argument, including an empty string, is printed as given
  (an empty first argument falls back to "world").
- \`printf '%s'\` is used instead of \`echo\` so names starting with \`-\` or holding
  backslashes are printed literally.

## Alternatives Considered
- \`echo "Hello, \$1!"\`: rejected, \`echo\` treats \`-n\` and backslashes differently across shells.

## Risks
- None significant; the script is new and self-contained.

## Acceptance Criteria Mapping
- 1: the \`\${1:-world}\` default.
- 2, 3: the quoted \`"\$name"\` argument to printf.
- 4: plain POSIX syntax, no bash-isms.
EOF
    ;;

test_design)
    read_input SPEC.md
    read_input DESIGN.md
    say "planning one test per acceptance criterion..."
    think
    say "writing $name"
    write_file "$artifact" <<EOF
# Test Plan: $request

## Strategy
Black-box tests of the script from the shell: run it, compare standard output and the exit
status. They run from the project root with \`sh\`.

## Test Cases
| ID | Criterion | Level | Test (file :: name) | Steps | Expected |
|---|---|---|---|---|---|
| T1 | 1 | end-to-end | greeting.sh :: default | \`sh greeting.sh\` | \`Hello, world!\`, exit 0 |
| T2 | 2 | end-to-end | greeting.sh :: named | \`sh greeting.sh Ada\` | \`Hello, Ada!\`, exit 0 |
| T3 | 3 | end-to-end | greeting.sh :: space | \`sh greeting.sh "Ada Lovelace"\` | \`Hello, Ada Lovelace!\` |
| T4 | 4 | static | greeting.sh :: syntax | \`sh -n greeting.sh\` | no output, exit 0 |
| T5 | 2 | end-to-end | greeting.sh :: dash name | \`sh greeting.sh -n\` | \`Hello, -n!\` |

## Coverage
- 1: T1
- 2: T2, T5
- 3: T3
- 4: T4

## How to Run
\`\`\`sh
test "\$(sh greeting.sh)" = "Hello, world!" && test "\$(sh greeting.sh Ada)" = "Hello, Ada!"
\`\`\`
A pass is exit status 0.

## Not Tested
- Shells other than dash and bash.
EOF
    ;;

implement)
    read_input SPEC.md
    read_input DESIGN.md
    read_input TEST_PLAN.md
    say "writing greeting.sh"
    think
    write_file "$greeting" <<'EOF'
#!/bin/sh
# greeting.sh — print a friendly greeting. Usage: sh greeting.sh [NAME]
name=${1:-world}
printf 'Hello, %s!\n' "$name"
EOF
    chmod +x "$greeting" || true
    say "running the tests..."
    think
    out1=$(sh "$greeting") && rc1=0 || rc1=$?
    out2=$(sh "$greeting" Ada) && rc2=0 || rc2=$?
    out3=$(sh "$greeting" "Ada Lovelace") && rc3=0 || rc3=$?
    sh -n "$greeting" && rc4=0 || rc4=$?
    # shellcheck disable=SC2016 # the backticks are Markdown, not command substitution
    check() { # check ID COMMAND EXPECTED ACTUAL EXIT-STATUS: one result line of the report
        if [ "$4" = "$3" ] && [ "$5" -eq 0 ]; then
            printf '%s %s `%s` -> exit %s, printed "%s": ok\n' - "$1" "$2" "$5" "$4"
        else
            printf '%s %s `%s` -> exit %s, printed "%s", expected "%s": FAILED\n' \
                - "$1" "$2" "$5" "$4" "$3"
        fi
    }
    results=$(
        check T1 'sh greeting.sh' 'Hello, world!' "$out1" "$rc1"
        check T2 'sh greeting.sh Ada' 'Hello, Ada!' "$out2" "$rc2"
        check T3 'sh greeting.sh "Ada Lovelace"' 'Hello, Ada Lovelace!' "$out3" "$rc3"
        check T4 'sh -n greeting.sh' '' '' "$rc4"
    )
    failed=$(printf '%s\n' "$results" | grep -c FAILED || true)
    passed=$((4 - failed))
    say "tests: $passed passed, $failed failed"
    if [ "$failed" -eq 0 ]; then status=met; else status="not met"; fi
    say "writing $name"
    write_file "$artifact" <<EOF
# Implementation: $request

## Summary
Added \`greeting.sh\`, which prints \`Hello, world!\` or \`Hello, NAME!\`.

## Changes
- \`greeting.sh\` (added): the greeting script, POSIX sh, executable.

## Tests
Commands run from the project root after the last change:
$results

Result: $passed passed, $failed failed.

## Acceptance Criteria
- 1: $status (T1)
- 2: $status (T2)
- 3: $status (T3)
- 4: $status (T4, \`sh -n greeting.sh\`)

## Deviations and Known Issues
- None. (This report was written by automaton's scripted demo agent.)
EOF
    if [ "$failed" -ne 0 ]; then
        say "some tests failed; see $name"
    fi
    ;;

bug_find)
    read_input SPEC.md
    read_input IMPLEMENTATION.md
    say "reviewing greeting.sh against the acceptance criteria..."
    think
    if [ -f "$greeting" ]; then found="present"; else found="MISSING"; fi
    say "writing $name"
    write_file "$artifact" <<EOF
# Bug Report: $request

## Findings
No findings.

## What Was Checked
- \`greeting.sh\`: $found in the project root; read in full.
- Criterion 1: \`sh greeting.sh\` printed \`$(sh "$greeting" 2>&1 || true)\`.
- Criterion 2: \`sh greeting.sh Ada\` printed \`$(sh "$greeting" Ada 2>&1 || true)\`.
- Criterion 3: \`sh greeting.sh "Ada Lovelace"\` printed \`$(sh "$greeting" "Ada Lovelace" 2>&1 || true)\`.
- Criterion 4: \`sh -n greeting.sh\` exit $(sh -n "$greeting" >/dev/null 2>&1 && echo 0 || echo 1).
EOF
    ;;

adversarial_bug_find)
    read_input SPEC.md
    read_input IMPLEMENTATION.md
    read_input BUG_REPORT.md
    say "attacking greeting.sh with odd names..."
    think
    say "writing $name"
    write_file "$artifact" <<EOF
# Adversarial Bug Report: $request

## Findings

### Low: empty-name-falls-back — an explicitly empty name greets the world
- **Location**: \`greeting.sh:3\`
- **Attack**: \`sh greeting.sh ""\`
- **What happens**: prints \`Hello, world!\`.
- **Expected**: the spec does not say; criterion 1 covers only "no argument". Harmless.
- **Reproduction**: \`sh greeting.sh ""\` printed \`$(sh "$greeting" "" 2>&1 || true)\`.
- **Suggested fix**: none needed unless the spec is changed to require \`Hello, !\`.

## Attacks Tried
- A name that looks like an option: \`sh greeting.sh -n\` printed \`$(sh "$greeting" -n 2>&1 || true)\`.
- A name holding a printf format: \`sh greeting.sh '%s%d'\` printed \`$(sh "$greeting" '%s%d' 2>&1 || true)\`.
- An empty name: see the finding above.
- Syntax under dash: \`sh -n greeting.sh\` exit $(sh -n "$greeting" >/dev/null 2>&1 && echo 0 || echo 1).
EOF
    ;;

doc_review)
    read_input SPEC.md
    read_input IMPLEMENTATION.md
    say "checking the docs for greeting.sh..."
    think
    say "writing $name"
    write_file "$artifact" <<EOF
# Doc Review: $request

## Docs Checked
- \`greeting.sh\` header comment: states the usage \`sh greeting.sh [NAME]\`; matches the code.
- Project README: compared with SPEC.md's user-visible change (the new script).

## Gaps
- Low: readme-greeting: README — does not mention \`greeting.sh\`; one line with its usage
  would help. (SPEC.md does not require it.)

## Examples Run
- \`sh greeting.sh\` — printed \`Hello, world!\` as the header comment implies.
EOF
    ;;

referee)
    read_input SPEC.md
    read_input IMPLEMENTATION.md
    read_input BUG_REPORT.md
    read_input ADVERSARIAL_BUG_REPORT.md
    read_input DOC_REVIEW.md
    say "rerunning the acceptance checks..."
    think
    findings="None."
    remaining="None."
    case $verdict in
        FAIL) findings="- greeting-output: the greeting does not match acceptance criterion 1 (a failure staged by the demo agent)" ;;
        NEEDS_REVIEW) remaining="- empty-name-behaviour: decide whether an empty name should greet the world (a question staged by the demo agent)" ;;
    esac
    say "verdict: $verdict"
    say "writing $name"
    write_file "$artifact" <<EOF
# Referee Report: $request

Verdict: $verdict

## Findings
$findings

## Remaining Issues
$remaining

## Tasks for Review / Tie-Breaks
None.

## Evidence
- 1: \`sh greeting.sh\` printed \`$(sh "$greeting" 2>&1 || true)\`.
- 2: \`sh greeting.sh Ada\` printed \`$(sh "$greeting" Ada 2>&1 || true)\`.
- 3: \`sh greeting.sh "Ada Lovelace"\` printed \`$(sh "$greeting" "Ada Lovelace" 2>&1 || true)\`.
- 4: \`sh -n greeting.sh\` exit $(sh -n "$greeting" >/dev/null 2>&1 && echo 0 || echo 1).
- BUG_REPORT.md: no findings. ADVERSARIAL_BUG_REPORT.md: one Low finding, confirmed, breaks no
  criterion. DOC_REVIEW.md: one Low gap, not required by the spec.
EOF
    ;;

esac

say "wrote $task_rel/$name"
say "CONTRACT_MET"
