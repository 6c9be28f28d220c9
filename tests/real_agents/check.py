#!/usr/bin/env python3
"""Assertions of the real-agents tier over one finished project (standard library only).

Usage: check.py complete|verdict_fail|agent_failed|worktrees PROJECT TASK AGENT [--usage]
                [--root SHA:REF --requests FILE]

complete      every lifecycle artifact is there and non-empty, .state says complete, the journal
              has one v2 line per phase with this agent, each run ended with exit 0, and the
              phase log shows the real CLI's own write (Write tool result, file_change item,
              "Applied edit to", a successful write_file, a completed opencode `write`).
verdict_fail  VERDICT.md says FAIL and .state says human_intervention.
agent_failed  the last journal line records the agent's own failure (ok false, an error).
worktrees     TASK was split (DECOMPOSITION.md, written by the CLI at research) into the two
              wave-1 sub-tasks hello and world, run with --jobs 2 under `Isolation: worktree`:
              both complete as `complete` says; every model request of a sub-task came from the
              CLI running in its own worktree (the stub's log, --requests); the two overlapped
              in time; the sub-task's branch automaton/<parent>--<sub> has the commit
              `automaton: <sub-task> implement` adding <sub>.sh; the integration branch
              automaton/<parent> holds both files; the project root's HEAD and branch are still
              --root, its tracked files unchanged, and neither file is there.
--usage       every journal line carries input and output tokens (and a session id).
Prints a per-phase table (seconds, tokens, cost, model, session) from the journal.
"""
import json
import os
import subprocess
import sys

LIFECYCLE = [
    ("research", "SPEC.md"), ("design", "DESIGN.md"), ("test_design", "TEST_PLAN.md"),
    ("implement", "IMPLEMENTATION.md"), ("bug_find", "BUG_REPORT.md"),
    ("adversarial_bug_find", "ADVERSARIAL_BUG_REPORT.md"), ("doc_review", "DOC_REVIEW.md"),
    ("referee", "VERDICT.md"),
]
# What each CLI's own output shows when it wrote a file itself.
# Every string of a CLI's tuple must be in the log.
WRITE_MARK = {"claude": ('"type":"tool_result"',), "codex": ('"type":"file_change"',),
              "aider": ("Applied edit to",),
              "gemini": ('"tool_name":"write_file"', '"type":"tool_result"',
                         '"status":"success"'),
              "opencode": ('"tool":"write"', '"state":{"status":"completed"')}

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def opt(name):
    args = sys.argv[5:]
    return args[args.index(name) + 1] if name in args[:-1] else None


def git(project, *args):
    out = subprocess.run(["git", "-C", project] + list(args), capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else None


SUBTASKS = ("hello", "world")


def check_worktrees(project, task, agent, want_usage):
    """The split task's sub-tasks ran at once, each in its own worktree, and merged back."""
    parent = task.split("/", 1)[1]
    wt_root = os.path.join(os.path.realpath(project), ".automaton", "worktrees")
    check(os.path.isfile(os.path.join(project, task, "DECOMPOSITION.md")),
          "no DECOMPOSITION.md in %s" % task)
    reqs = [json.loads(line) for line in read(opt("--requests")).splitlines() if line.strip()]
    spans = {}
    for sub in SUBTASKS:
        rel = "%s/subtasks/%s" % (task, sub)
        print("    %s:" % rel)
        check_task("complete", project, rel, agent, want_usage)
        branch = "automaton/%s--%s" % (parent, sub)
        worktree = os.path.join(wt_root, "%s--%s" % (parent, sub))
        # The agent's own turns; a side call (a title, a routing question) carries no cwd.
        mine = [r for r in reqs if (r.get("prompt") or {}).get("task") == rel
                and not r["prompt"].get("side")]
        check(mine, "%s: the stub saw no request" % rel)
        cwds = sorted({os.path.realpath(r["prompt"].get("cwd") or "?") for r in mine})
        check(cwds == [worktree], "%s: the CLI ran in %s, not its worktree %s"
              % (rel, cwds, worktree))
        if mine:
            spans[sub] = (min(r["t"] for r in mine), max(r["t"] for r in mine))
        msg = "automaton: %s implement" % rel
        commit = git(project, "log", "--format=%H", "--fixed-strings", "--grep", msg, branch)
        check(commit, "%s has no commit %r" % (branch, msg))
        if commit:
            commit = commit.splitlines()[0]
            files = git(project, "show", "--format=", "--name-only", commit) or ""
            check("%s.sh" % sub in files.split(),
                  "%s: the implement commit does not hold %s.sh: %s" % (branch, sub, files))
            print("    %s: %s %s (%s)" % (branch, commit[:10], msg, " ".join(files.split())))
    if len(spans) == 2:
        (a0, a1), (b0, b1) = spans["hello"], spans["world"]
        t0 = min(a0, b0)
        print("    model requests: hello %.2fs..%.2fs, world %.2fs..%.2fs (from the first)"
              % (a0 - t0, a1 - t0, b0 - t0, b1 - t0))
        check(a0 < b1 and b0 < a1, "the two sub-tasks did not overlap: %s" % spans)
    integration = "automaton/%s" % parent
    for sub in SUBTASKS:
        check("echo %s" % sub in (git(project, "show", "%s:%s.sh" % (integration, sub)) or ""),
              "%s does not hold %s.sh" % (integration, sub))
        check(not os.path.exists(os.path.join(project, sub + ".sh")),
              "%s.sh is in the project root's checkout" % sub)
    sha, ref = opt("--root").split(":", 1)
    check(git(project, "rev-parse", "HEAD") == sha, "the project root's HEAD moved")
    check(git(project, "symbolic-ref", "HEAD") == ref, "the project root's branch changed")
    check(git(project, "status", "--porcelain", "--untracked-files=no") == "",
          "the project root's tracked files changed")
    print("    %s: %s" % (integration, git(project, "log", "--oneline", "-1", integration)))


def main():
    mode, project, task, agent = sys.argv[1:5]
    want_usage = "--usage" in sys.argv[5:]
    if mode == "worktrees":
        print("    %s:" % task)
        check_task("parent", project, task, agent, want_usage)
        check_worktrees(project, task, agent, want_usage)
    else:
        check_task(mode, project, task, agent, want_usage)
    for f in failures:
        print("    FAIL: " + f)
    sys.exit(1 if failures else 0)


def check_task(mode, project, task, agent, want_usage):
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
    if mode == "parent":
        check(state == "complete", ".state is %r, not complete" % state)
        check([j["phase"] for j in lines][:1] == ["research"], "the parent's phases: %s"
              % [j["phase"] for j in lines])
        for j in lines:
            check(j.get("end") == "exited" and j.get("exit_code") == 0,
                  "%s: ended %s %s" % (j["phase"], j.get("end"), j.get("exit_code")))
    elif mode == "complete":
        check(state == "complete", ".state is %r, not complete" % state)
        phases = [j["phase"] for j in lines]
        check(phases == [p for p, _ in LIFECYCLE], "phases run: %s" % phases)
        for phase, name in LIFECYCLE:
            path = os.path.join(tdir, name)
            check(os.path.isfile(path) and read(path).strip(), "%s missing or empty" % name)
            log = os.path.join(tdir, "logs", "%s-1.log" % phase)
            check(os.path.isfile(log) and all(m in read(log) for m in WRITE_MARK[agent]),
                  "%s: the %s log does not show the CLI's own write (%s)"
                  % (phase, agent, " and ".join(WRITE_MARK[agent])))
        for j in lines:
            check(j.get("end") == "exited" and j.get("exit_code") == 0,
                  "%s: ended %s %s" % (j["phase"], j.get("end"), j.get("exit_code")))
        check("Verdict: PASS" in read(os.path.join(tdir, "VERDICT.md")), "VERDICT.md is not PASS")
    elif mode == "rework":
        # The verify command failed after the first implement; one rework round fixed it.
        check(state == "complete", ".state is %r, not complete" % state)
        phases = [j["phase"] for j in lines]
        want = [p for p, _ in LIFECYCLE]
        want.insert(want.index("implement"), "implement")
        check(phases == want, "phases run: %s" % phases)
        rounds = [j["phase"] for j in lines if j.get("rework_round") == 1]
        check(rounds[:1] == ["implement"] and rounds[-1:] == ["referee"],
              "the phases of rework round 1: %s" % rounds)
        kept = os.path.join(tdir, "logs", "rework", "1")
        check(os.path.isfile(os.path.join(kept, "IMPLEMENTATION.md")),
              "logs/rework/1/ does not keep the first IMPLEMENTATION.md")
        check("greeting-missing" in read(os.path.join(kept, "FINDINGS.md")),
              "logs/rework/1/FINDINGS.md does not name the failing check's output")
        second = read(os.path.join(tdir, "logs", "implement-2.prompt.md"))
        check("Rework round 1" in second and "greeting-missing" in second,
              "the second implement prompt lacks the failing check")
        branch = "automaton/" + task.rstrip("/").rsplit("/", 1)[-1]
        check("echo hello" in (git(project, "show", "%s:greeting.sh" % branch) or ""),
              "%s does not hold the fixed greeting.sh" % branch)
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


if __name__ == "__main__":
    main()
