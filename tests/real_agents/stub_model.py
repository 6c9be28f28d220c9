#!/usr/bin/env python3
"""automaton's scripted model for the offline end-to-end tier (tests/real_agents/run.sh).

One HTTP server on 127.0.0.1 (standard library only) that speaks the three wire protocols the
real agent CLIs use, and plays every automaton phase:

  POST .../v1/messages          Anthropic Messages API (Claude Code), SSE or JSON
  POST .../responses            OpenAI Responses API (Codex CLI), SSE or JSON
  POST .../chat/completions     OpenAI Chat Completions API (aider), SSE or JSON

The "model" reads automaton's rendered prompt out of the request: the phase (`# Phase
`research``), the task (`task `tasks/x``), the project root (`project at `/abs``) and the
artifact's absolute path (`## Write `SPEC.md` at `/abs/tasks/x/SPEC.md``). It answers with
whatever makes the real CLI write a plausible artifact through its own machinery:

  * Claude Code: a `Write` tool call with the absolute path, then a closing text turn;
  * Codex: an `apply_patch` call (custom or function tool; `exec_command`/`shell` as fallback),
    then a closing message;
  * aider: a reply in its "whole" edit format, which aider applies itself.

The referee writes `Verdict: PASS`, or `Verdict: FAIL` with a finding when the task path
contains `fail`. A task path containing `rework` gets a failing `greeting.sh` at implement, and a
passing one when the prompt is automaton's rework round. A task path containing `model-error` gets an HTTP 400 invalid_request_error
instead (the CLIs' own failure signal). Every request is appended to --log as one JSON line.

With --ollama-context N it is also an Ollama server as `detect-vram` asks one: `GET /api/ps`
lists one loaded model served with a window of N tokens (the shape of ollama's `api/types.go`,
`ProcessModelResponse`), and `GET /api/version` answers; opencode then reaches it as Ollama's
OpenAI-compatible endpoint (`/v1/chat/completions`).

Usage: stub_model.py [--port 0] [--port-file FILE] [--log FILE] [--ollama-context N]
"""
import argparse
import json
import os
import re
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARGS = None
LOCK = threading.Lock()

PHASE_RE = re.compile(r"# Phase `([a-z_]+)`")
TASK_RE = re.compile(r"\btask `([^`\s]+)`")
PROJECT_RE = re.compile(r"project at `([^`]+)`")
ARTIFACT_RE = re.compile(r"## Write `([A-Z_]+\.md)` at `([^`]+)`")
# The CLI's working directory, as it tells its model: Claude Code's environment section (and
# opencode's <env>), Codex's <environment_context>, the first of Gemini CLI's workspace
# directories (its session context; the others are the included ones).
CWD_RES = (re.compile(r"(?:Primary working directory|Working directory|CWD):\s*(/\S+)"),
           re.compile(r"<cwd>\s*(/[^<\s]+)\s*</cwd>"),
           re.compile(r"\*\*Workspace Directories:\*\*\s*\n\s*-\s*(/\S+)"))
# A CLI's side call, not a turn of the agent's work (and without its environment): opencode's
# title for the session, Gemini CLI's JSON calls (model routing, the next-speaker check).
TITLE_RE = re.compile(r"You are a title generator")

TITLES = {
    "SPEC.md": "Specification",
    "DESIGN.md": "Design",
    "TEST_PLAN.md": "Test Plan",
    "IMPLEMENTATION.md": "Implementation",
    "BUG_REPORT.md": "Bug Report",
    "ADVERSARIAL_BUG_REPORT.md": "Adversarial Bug Report",
    "DOC_REVIEW.md": "Doc Review",
}


def log(entry):
    if ARGS.log:
        with LOCK, open(ARGS.log, "a") as f:
            f.write(json.dumps(entry) + "\n")


def strings(node):
    """Every string inside a JSON value, depth first."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for v in node.values():
            yield from strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from strings(v)


def read_prompt(req):
    """(phase, task, project, artifact name, artifact absolute path, the CLI's cwd, whether it
    is a side call) from automaton's prompt and the CLI's own context."""
    text = "\n".join(strings(req.get("messages") or req.get("input") or req.get("contents") or []))
    found = {}
    for key, rx in (("phase", PHASE_RE), ("task", TASK_RE), ("project", PROJECT_RE)):
        m = rx.search(text)
        found[key] = m.group(1) if m else None
    found["text"] = text
    m = ARTIFACT_RE.search(text)
    found["name"], found["path"] = (m.group(1), m.group(2)) if m else (None, None)
    everything = "\n".join(strings(req))
    found["side"] = bool(TITLE_RE.search(everything)) or (
        (req.get("generationConfig") or {}).get("responseMimeType") == "application/json")
    found["cwd"] = None
    for rx in CWD_RES:
        m = rx.search(everything)
        if m:
            found["cwd"] = m.group(1)
            break
    return found


def is_parent(task):
    """A top-level task whose request asks to split: its research also plans two sub-tasks."""
    return "split" in task and "/subtasks/" not in task


DECOMPOSITION = (
    "| Sub-task | Wave | Depends on | Estimated peak context | Files | Scope |\n"
    "|---|---|---|---|---|---|\n"
    "| hello | 1 | - | 4k | hello.sh | A script that prints hello |\n"
    "| world | 1 | - | 4k | world.sh | A script that prints world |\n")


def writes(p):
    """The files the phase writes, as (absolute path, content): the artifact; at the research
    of a task to split, DECOMPOSITION.md beside it; at the implement phase of a sub-task, its
    code file `<sub-task>.sh` in the CLI's working directory (its worktree under isolation)."""
    if not p["path"]:
        return []
    out = [(p["path"], artifact_text(p))]
    task = p["task"] or ""
    if p["phase"] == "research" and is_parent(task):
        out.append((os.path.join(os.path.dirname(p["path"]), "DECOMPOSITION.md"), DECOMPOSITION))
    if p["phase"] == "implement" and "/subtasks/" in task and p["cwd"]:
        name = task.rstrip("/").rsplit("/", 1)[-1]
        out.append((os.path.join(p["cwd"], name + ".sh"), "#!/bin/sh\necho %s\n" % name))
    if p["phase"] == "implement" and "rework" in task and p["cwd"]:
        out.append((os.path.join(p["cwd"], "greeting.sh"), greeting_script(p)))
    return out


def greeting_script(p):
    """A task whose name says "rework" is implemented wrong first (the verify command, `sh
    greeting.sh`, fails), and right once automaton's rework prompt carries the failing check."""
    if "Rework round" in p["text"] and "greeting-missing" in p["text"]:
        return "#!/bin/sh\necho hello\n"
    return "#!/bin/sh\necho 'greeting-missing: nothing printed' >&2\nexit 1\n"


# What an agent run inside automaton's sandbox is told to do first, at the research phase of a
# task whose name says "sandbox": each line must fail to harm (the tier checks the victims).
ATTACK = ("python3 -c \"import os, shutil, urllib.request as u\n"
          "for f in (lambda: os.remove(os.path.expanduser('~/victim.txt')),\n"
          "          lambda: shutil.copy(os.path.expanduser('~/.ssh/id_ed25519'),\n"
          "                              os.environ['AUTOMATON_TASK_DIR'] + '/stolen.txt'),\n"
          "          lambda: open(os.environ['AUTOMATON_PROJECT'] + '/../pwned.txt', 'w'),\n"
          "          lambda: u.urlopen('http://forbidden.example/')):\n"
          "    try: f()\n"
          "    except Exception as e: print(type(e).__name__, e)\"")


def attacks_first(p):
    return p["phase"] == "research" and "sandbox" in (p["task"] or "")


def local_path(path, p):
    """`path` as the CLI should see it: relative to its working directory when inside it (or,
    when the cwd is unknown, inside the project), else absolute."""
    base = (p["cwd"] or p["project"] or "").rstrip("/")
    if base and path.startswith(base + "/"):
        return os.path.relpath(path, base)
    return path


def artifact_text(p):
    """A plausible artifact for the phase: the sections automaton's contracts ask for."""
    task, name = p["task"] or "tasks/unknown", p["name"]
    if name == "VERDICT.md":
        if "fail" in task:
            return ("# Referee Report: %s\n\nVerdict: FAIL\n\n## Findings\n"
                    "- greeting-missing: criterion 1 is not met, the greeting is never printed\n\n"
                    "## Remaining Issues\nNone.\n\n## Evidence\n1. not met: ran the check, "
                    "exit status 1\n" % task)
        return ("# Referee Report: %s\n\nVerdict: PASS\n\n## Findings\nNone.\n\n"
                "## Remaining Issues\nNone.\n\n## Tasks for Review / Tie-Breaks\nNone.\n\n"
                "## Evidence\n1. met: ran the check, exit status 0\n" % task)
    title = TITLES.get(name, name or "Artifact")
    body = {
        "SPEC.md": "## Summary\nThe scripted model's specification of %s.\n\n## Context\n"
                   "Nothing exists yet.\n\n## Requirements\n- Print a greeting.\n\n"
                   "## Acceptance Criteria\n1. Running the check prints a greeting and exits 0.\n\n"
                   "## Out of Scope\nEverything else.\n\n## Assumptions and Open Questions\nNone.\n",
        "DESIGN.md": "## Approach\nOne small script.\n\n## Components\n- greeting: prints it.\n",
        "TEST_PLAN.md": "## Tests\n1. Run the check; expect exit status 0 (criterion 1).\n",
        "IMPLEMENTATION.md": "## Changes\n- None needed for the scripted run.\n\n"
                             "## Tests Run\n- the check: exit status 0\n",
        "BUG_REPORT.md": "## Findings\nNone.\n",
        "ADVERSARIAL_BUG_REPORT.md": "## Findings\nNone.\n",
        "DOC_REVIEW.md": "## Findings\nNone.\n",
    }.get(name, "Written by the scripted model.\n")
    return "# %s: %s\n\n%s" % (title, task, body)


def tokens(obj):
    """A rough token count (4 bytes a token) so usage is non-trivial and deterministic-ish."""
    return max(1, len(json.dumps(obj) if not isinstance(obj, str) else obj) // 4)


def closing_text(p):
    return "Wrote %s for the %s phase.\nCONTRACT_MET" % (p["name"], p["phase"])


# ---------------------------------------------------------------- Anthropic Messages (Claude Code)

def anthropic_plan(req, p):
    msgs = [m for m in req.get("messages") or [] if m.get("role") in ("user", "assistant")]
    last = msgs[-1] if msgs else {}
    answered = last.get("role") == "user" and isinstance(last.get("content"), list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in last["content"])
    tools = {t.get("name") for t in req.get("tools") or [] if isinstance(t, dict)}
    results = sum(1 for m in msgs if m.get("role") == "user" and isinstance(m.get("content"), list)
                  and any(isinstance(b, dict) and b.get("type") == "tool_result"
                          for b in m["content"]))
    if p["path"] and attacks_first(p) and "Bash" in tools:
        if results == 0:
            return [{"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:24], "name": "Bash",
                     "input": {"command": ATTACK, "description": "try the sandbox"}}], "tool_use"
        answered = results >= 2
    if p["path"] and not answered:
        # One tool call per file, all in one turn (Claude Code runs parallel tool calls).
        if "Write" in tools:
            return [{"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:24], "name": "Write",
                     "input": {"file_path": path, "content": content}}
                    for path, content in writes(p)], "tool_use"
        if "Edit" in tools:  # `claude --bare`: Edit with an empty old_string creates the file
            return [{"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:24], "name": "Edit",
                     "input": {"file_path": path, "old_string": "", "new_string": content}}
                    for path, content in writes(p)], "tool_use"
    if p["path"]:
        return [{"type": "text", "text": closing_text(p)}], "end_turn"
    return [{"type": "text", "text": "ok"}], "end_turn"  # side calls (titles, probes)


def anthropic(h, req, p):
    if p["task"] and "model-error" in p["task"]:
        return h.send_json(400, {"type": "error", "error": {
            "type": "invalid_request_error", "message": "scripted failure: model-error task"}})
    blocks, stop = anthropic_plan(req, p)
    model = req.get("model") or "stub"
    usage = {"input_tokens": tokens(req.get("messages")), "output_tokens": tokens(blocks),
             "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    mid = "msg_" + uuid.uuid4().hex[:24]
    if not req.get("stream"):
        return h.send_json(200, {"id": mid, "type": "message", "role": "assistant", "model": model,
                                 "content": blocks, "stop_reason": stop, "stop_sequence": None,
                                 "usage": usage})
    send = h.start_sse()
    send("message_start", {"type": "message_start", "message": {
        "id": mid, "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": dict(usage, output_tokens=1)}})
    for i, b in enumerate(blocks):
        if b["type"] == "text":
            send("content_block_start", {"type": "content_block_start", "index": i,
                                         "content_block": {"type": "text", "text": ""}})
            send("content_block_delta", {"type": "content_block_delta", "index": i,
                                         "delta": {"type": "text_delta", "text": b["text"]}})
        else:
            send("content_block_start", {"type": "content_block_start", "index": i,
                                         "content_block": dict(b, input={})})
            js = json.dumps(b["input"])
            for part in (js[:len(js) // 3], js[len(js) // 3:]):
                send("content_block_delta", {"type": "content_block_delta", "index": i,
                                             "delta": {"type": "input_json_delta",
                                                       "partial_json": part}})
        send("content_block_stop", {"type": "content_block_stop", "index": i})
    send("message_delta", {"type": "message_delta",
                           "delta": {"stop_reason": stop, "stop_sequence": None},
                           "usage": {"output_tokens": usage["output_tokens"]}})
    send("message_stop", {"type": "message_stop"})


# ---------------------------------------------------------------- OpenAI Responses (Codex CLI)

def responses_items(req, p):
    inp = req.get("input") if isinstance(req.get("input"), list) else []
    outputs = sum(1 for i in inp if isinstance(i, dict) and i.get("type", "").endswith("_call_output"))
    answered = outputs >= (2 if attacks_first(p) else 1)
    new_id = lambda pre: pre + uuid.uuid4().hex[:16]  # noqa: E731
    if answered or not p["path"]:
        text = closing_text(p) if p["path"] else "ok"
        return [{"type": "message", "id": new_id("msg_"), "role": "assistant",
                 "status": "completed",
                 "content": [{"type": "output_text", "text": text, "annotations": []}]}]
    files = [(local_path(path, p), content) for path, content in writes(p)]
    tools = {}
    for t in req.get("tools") or []:
        if isinstance(t, dict):
            name = t.get("name") or (t.get("function") or {}).get("name")
            if name:
                tools[name] = t
    call_id = new_id("call_")
    if "apply_patch" in tools and not (attacks_first(p) and outputs == 0):
        # One patch adding every file.
        patch = ("*** Begin Patch\n"
                 + "".join("*** Add File: %s\n" % path
                           + "".join("+" + line + "\n"
                                     for line in content.rstrip("\n").split("\n"))
                           for path, content in files)
                 + "*** End Patch\n")
        if tools["apply_patch"].get("type") == "custom":
            return [{"type": "custom_tool_call", "id": new_id("ctc_"), "status": "completed",
                     "call_id": call_id, "name": "apply_patch", "input": patch}]
        return [{"type": "function_call", "id": new_id("fc_"), "status": "completed",
                 "call_id": call_id, "name": "apply_patch",
                 "arguments": json.dumps({"input": patch})}]
    q = lambda v: "'" + v.replace("'", "'\\''") + "'"  # noqa: E731
    script = "; ".join("printf %%s %s > %s" % (q(content), q(path)) for path, content in files)
    if attacks_first(p) and outputs == 0:
        script = ATTACK
    for name in ("exec_command", "shell_command", "shell"):
        if name in tools:
            props = (tools[name].get("parameters") or {}).get("properties") or {}
            if props.get("command", {}).get("type") == "array":
                args = {"command": ["bash", "-lc", script]}
            elif "cmd" in props:
                args = {"cmd": script}
            else:
                args = {"command": script}
            return [{"type": "function_call", "id": new_id("fc_"), "status": "completed",
                     "call_id": call_id, "name": name, "arguments": json.dumps(args)}]
    return [{"type": "message", "id": new_id("msg_"), "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "no write tool offered",
                          "annotations": []}]}]


def responses(h, req, p):
    if p["task"] and "model-error" in p["task"]:
        return h.send_json(400, {"error": {"type": "invalid_request_error", "code": None,
                                           "message": "scripted failure: model-error task"}})
    items = responses_items(req, p)
    inp, out = tokens(req.get("input")), tokens(items)
    resp = {"id": "resp_" + uuid.uuid4().hex[:16], "object": "response",
            "created_at": int(time.time()), "status": "completed",
            "model": req.get("model") or "stub", "output": items,
            "usage": {"input_tokens": inp, "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": out, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": inp + out}}
    if not req.get("stream"):
        return h.send_json(200, resp)
    send = h.start_sse()
    seq = [0]

    def ev(name, data):
        send(name, dict(data, type=name, sequence_number=seq[0]))
        seq[0] += 1

    ev("response.created", {"response": dict(resp, status="in_progress", output=[], usage=None)})
    for i, it in enumerate(items):
        ev("response.output_item.added", {"output_index": i, "item": dict(it, status="in_progress")})
        if it["type"] == "message":
            ev("response.output_text.delta", {"item_id": it["id"], "output_index": i,
                                              "content_index": 0,
                                              "delta": it["content"][0]["text"]})
        ev("response.output_item.done", {"output_index": i, "item": it})
    ev("response.completed", {"response": resp})


# ---------------------------------------------------------------- OpenAI Chat Completions (aider)

def chat_tool_calls(req, p):
    """opencode offers its tools (`write`: filePath, content): one `write` call per file, all in
    one turn, until a `tool` message answers them. None when no write tool is offered (aider)."""
    tools = {(t.get("function") or {}).get("name") for t in req.get("tools") or []
             if isinstance(t, dict)}
    msgs = req.get("messages") or []
    answered = any(isinstance(m, dict) and m.get("role") == "tool" for m in msgs)
    if "write" not in tools or not p["path"] or answered:
        return None
    return [{"id": "call_" + uuid.uuid4().hex[:16], "type": "function",
             "function": {"name": "write",
                          "arguments": json.dumps({"filePath": path, "content": content})}}
            for path, content in writes(p)]


def chat(h, req, p):
    if p["task"] and "model-error" in p["task"]:
        return h.send_json(400, {"error": {"type": "invalid_request_error", "code": None,
                                           "message": "scripted failure: model-error task"}})
    calls = chat_tool_calls(req, p)
    if calls is not None:
        return chat_answer(h, req, "", calls)
    tools = {(t.get("function") or {}).get("name") for t in req.get("tools") or []
             if isinstance(t, dict)}
    if p["path"] and "write" in tools:
        return chat_answer(h, req, closing_text(p), None)
    if p["path"] and not tools:
        path = p["path"]
        if p["project"] and path.startswith(p["project"].rstrip("/") + "/"):
            path = os.path.relpath(path, p["project"])
        text = "%s\n```\n%s```\n\n%s\n" % (path, artifact_text(p), closing_text(p))
    else:
        text = "ok"
    return chat_answer(h, req, text, None)


def chat_answer(h, req, text, calls):
    """One Chat Completions answer: `text`, or the tool `calls` (finish_reason tool_calls)."""
    inp, out = tokens(req.get("messages")), tokens(calls or text)
    usage = {"prompt_tokens": inp, "completion_tokens": out, "total_tokens": inp + out}
    finish = "tool_calls" if calls else "stop"
    cid, model, now = "chatcmpl-" + uuid.uuid4().hex[:16], req.get("model") or "stub", int(time.time())
    if not req.get("stream"):
        msg = {"role": "assistant", "content": text or None}
        if calls:
            msg["tool_calls"] = calls
        return h.send_json(200, {"id": cid, "object": "chat.completion", "created": now,
                                 "model": model, "usage": usage, "choices": [{
                                     "index": 0, "finish_reason": finish, "message": msg}]})
    send = h.start_sse(named=False)

    def chunk(delta, finish=None, **extra):
        send(None, dict({"id": cid, "object": "chat.completion.chunk", "created": now,
                         "model": model, "choices": [{"index": 0, "delta": delta,
                                                      "finish_reason": finish}]}, **extra))

    chunk({"role": "assistant", "content": ""})
    for i in range(0, len(text), 200):
        chunk({"content": text[i:i + 200]})
    for i, c in enumerate(calls or []):
        # The name first, the arguments in two pieces, as OpenAI streams them.
        args = c["function"]["arguments"]
        chunk({"tool_calls": [{"index": i, "id": c["id"], "type": "function",
                               "function": {"name": c["function"]["name"], "arguments": ""}}]})
        for part in (args[:len(args) // 2], args[len(args) // 2:]):
            chunk({"tool_calls": [{"index": i, "function": {"arguments": part}}]})
    chunk({}, finish, usage=usage)
    h.wfile.write(b"data: [DONE]\n\n")
    h.wfile.flush()


# ---------------------------------------------------------------- Gemini API (Gemini CLI)
# Shapes from the Gemini API reference (ai.google.dev/api/generate-content): a request's
# `contents` of `parts` (`text`, `functionCall`, `functionResponse`), `tools[].functionDeclarations`;
# a response's `candidates[0].content.parts`, `finishReason` and `usageMetadata`. The stream
# (`:streamGenerateContent?alt=sse`) sends GenerateContentResponse objects as `data:` lines.

def gemini_plan(req, p):
    contents = req.get("contents") or []
    last = contents[-1] if contents else {}
    answered = last.get("role") == "user" and any(
        isinstance(part, dict) and "functionResponse" in part for part in last.get("parts") or [])
    tools = {d.get("name") for t in req.get("tools") or [] if isinstance(t, dict)
             for d in t.get("functionDeclarations") or [] if isinstance(d, dict)}
    # Side calls (model routing, the next-speaker check) ask for JSON: answer an empty object.
    if (req.get("generationConfig") or {}).get("responseMimeType") == "application/json":
        return [{"text": "{}"}]
    if p["path"] and not answered and "write_file" in tools:
        # One write_file call per file, all in one turn (the CLI runs them in parallel).
        return [{"functionCall": {"name": "write_file",
                                  "args": {"file_path": path, "content": content}}}
                for path, content in writes(p)]
    if p["path"]:
        return [{"text": closing_text(p)}]
    return [{"text": "ok"}]


def gemini(h, req, p, model, stream):
    if p["task"] and "model-error" in p["task"]:
        return h.send_json(400, {"error": {"code": 400, "status": "INVALID_ARGUMENT",
                                           "message": "scripted failure: model-error task"}})
    parts = gemini_plan(req, p)
    inp, out = tokens(req.get("contents")), tokens(parts)
    resp = {"candidates": [{"content": {"role": "model", "parts": parts},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": inp, "candidatesTokenCount": out,
                              "totalTokenCount": inp + out},
            "modelVersion": model, "responseId": uuid.uuid4().hex[:20]}
    if not stream:
        return h.send_json(200, resp)
    send = h.start_sse(named=False)
    send(None, resp)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send_json(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_sse(self, named=True):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

        def send(name, data):
            head = "event: %s\n" % name if named and name else ""
            self.wfile.write(("%sdata: %s\n\n" % (head, json.dumps(data))).encode())
            self.wfile.flush()
        return send

    def do_HEAD(self):
        log({"t": time.time(), "method": "HEAD", "path": self.path})
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        log({"t": time.time(), "method": "GET", "path": self.path})
        path = self.path.split("?")[0].rstrip("/")
        if ARGS.ollama_context and path == "/api/version":
            return self.send_json(200, {"version": "0.12.6"})
        if ARGS.ollama_context and path == "/api/ps":
            return self.send_json(200, {"models": [{
                "name": "stub-model", "model": "stub-model", "size": 6654289920,
                "digest": "2b0496514337", "details": {"format": "gguf", "family": "qwen2",
                                                      "parameter_size": "7.6B",
                                                      "quantization_level": "Q4_K_M"},
                "expires_at": "2026-12-04T17:20:02.1Z", "size_vram": 5368709120,
                "context_length": ARGS.ollama_context}]})
        if self.path.split("?")[0].rstrip("/").endswith("/models"):
            return self.send_json(200, {"object": "list", "data": [{"id": "stub", "object": "model"}]})
        self.send_json(404, {"error": {"type": "not_found_error", "message": "stub: not found"}})

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            req = json.loads(raw) if raw else {}
        except ValueError:
            req = None
        path = self.path.split("?")[0].rstrip("/")
        p = read_prompt(req) if isinstance(req, dict) else {}
        log({"t": time.time(), "method": "POST", "path": self.path,
             "prompt": {k: v for k, v in p.items() if k != "text"},
             "body_bytes": len(raw)})
        if not isinstance(req, dict):
            return self.send_json(400, {"error": {"type": "invalid_request_error",
                                                  "message": "stub: body is not a JSON object"}})
        if path.endswith("/v1/messages/count_tokens"):
            return self.send_json(200, {"input_tokens": tokens(req.get("messages"))})
        if path.endswith("/v1/messages"):
            return anthropic(self, req, p)
        if path.endswith("/responses"):
            return responses(self, req, p)
        if path.endswith("/chat/completions"):
            return chat(self, req, p)
        m = re.search(r"/models/([^/:]+):(generateContent|streamGenerateContent)$", path)
        if m:
            return gemini(self, req, p, m.group(1), m.group(2) == "streamGenerateContent")
        if path.endswith(":countTokens"):
            return self.send_json(200, {"totalTokens": tokens(req.get("contents"))})
        self.send_json(404, {"error": {"type": "not_found_error", "message": "stub: not found"}})


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--log")
    ap.add_argument("--ollama-context", type=int, default=0)
    ARGS = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    port = srv.server_address[1]
    if ARGS.port_file:
        with open(ARGS.port_file + ".tmp", "w") as f:
            f.write(str(port))
        os.replace(ARGS.port_file + ".tmp", ARGS.port_file)
    print(port, flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
