#!/usr/bin/env python3
"""Assertions of the real-agents tier over one finished project (standard library only).

Usage: check.py complete|verdict_fail|agent_failed PROJECT TASK AGENT [--usage]

complete      every lifecycle artifact is there and non-empty, .state says complete, the journal
              has one v2 line per phase with this agent, each run ended with exit 0, and the
              phase log shows the real CLI's own write (Write tool result, file_change item,
              "Applied edit to").
verdict_fail  VERDICT.md says FAIL and .state says human_intervention.
agent_failed  the last journal line records the agent's own failure (ok false, an error).
--usage       every journal line carries input and output tokens (and a session id).
Prints a per-phase table (seconds, tokens, cost, model, session) from the journal.
"""
import json
import os
import sys

LIFECYCLE = [
    ("research", "SPEC.md"), ("design", "DESIGN.md"), ("test_design", "TEST_PLAN.md"),
    ("implement", "IMPLEMENTATION.md"), ("bug_find", "BUG_REPORT.md"),
    ("adversarial_bug_find", "ADVERSARIAL_BUG_REPORT.md"), ("doc_review", "DOC_REVIEW.md"),
    ("referee", "VERDICT.md"),
]
# What each CLI's own output shows when it wrote a file itself.
WRITE_MARK = {"claude": '"type":"tool_result"', "codex": '"type":"file_change"',
              "aider": "Applied edit to"}

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def main():
    mode, project, task, agent = sys.argv[1:5]
    want_usage = "--usage" in sys.argv[5:]
    tdir = os.path.join(project, task)
    jpath = os.path.join(tdir, "logs", "journal.jsonl")
    lines = [json.loads(line) for line in read(jpath).splitlines() if line.strip()]
    print("    %-22s %7s %8s %9s  %-18s %s" % ("phase", "seconds", "tokens", "cost", "model",
                                              "session"))
    for j in lines:
        cost = "-" if j.get("cost_usd") is None else "$%.4f" % j["cost_usd"]
        print("    %-22s %7.2f %8s %9s  %-18s %s" % (
            j["phase"], j["seconds"], j.get("tokens") if j.get("tokens") is not None else "-",
            cost, j.get("model") or "-", j.get("session_id") or "-"))
    for j in lines:
        check(j.get("v") == 2, "journal line is not v2: %s" % j)
        check(j.get("agent") == agent, "journal agent is %r, not %r" % (j.get("agent"), agent))
        if want_usage and j.get("ok") is not False:
            check(isinstance(j.get("input_tokens"), int) and j["input_tokens"] > 0,
                  "%s: no input tokens recorded" % j["phase"])
            check(isinstance(j.get("output_tokens"), int) and j["output_tokens"] > 0,
                  "%s: no output tokens recorded" % j["phase"])
            check(bool(j.get("session_id")), "%s: no session id recorded" % j["phase"])
    state = read(os.path.join(tdir, ".state")).strip()
    if mode == "complete":
        check(state == "complete", ".state is %r, not complete" % state)
        phases = [j["phase"] for j in lines]
        check(phases == [p for p, _ in LIFECYCLE], "phases run: %s" % phases)
        for phase, name in LIFECYCLE:
            path = os.path.join(tdir, name)
            check(os.path.isfile(path) and read(path).strip(), "%s missing or empty" % name)
            log = os.path.join(tdir, "logs", "%s-1.log" % phase)
            check(os.path.isfile(log) and WRITE_MARK[agent] in read(log),
                  "%s: the %s log does not show the CLI's own write (%s)"
                  % (phase, agent, WRITE_MARK[agent]))
        for j in lines:
            check(j.get("end") == "exited" and j.get("exit_code") == 0,
                  "%s: ended %s %s" % (j["phase"], j.get("end"), j.get("exit_code")))
        check("Verdict: PASS" in read(os.path.join(tdir, "VERDICT.md")), "VERDICT.md is not PASS")
    elif mode == "verdict_fail":
        check(state == "human_intervention", ".state is %r, not human_intervention" % state)
        check("Verdict: FAIL" in read(os.path.join(tdir, "VERDICT.md")), "VERDICT.md is not FAIL")
    elif mode == "agent_failed":
        check(state == "human_intervention", ".state is %r, not human_intervention" % state)
        last = lines[-1] if lines else {}
        check(last.get("ok") is False and last.get("error"),
              "last journal line has no agent failure: %s" % last)
        print("    agent error recorded: %s (exit code %s)" % (last.get("error"),
                                                             last.get("exit_code")))
    else:
        sys.exit("unknown mode " + mode)
    if lines:
        tok = sum(j.get("tokens") or 0 for j in lines)
        cost = sum(j.get("cost_usd") or 0 for j in lines)
        print("    total: %d phases, %.2fs, %d tokens, $%.4f" % (
            len(lines), sum(j["seconds"] for j in lines), tok, cost))
    for f in failures:
        print("    FAIL: " + f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
