#!/usr/bin/env python3
"""A scripted model API on 127.0.0.1 that drives a real coding agent through a fixed session.

It speaks the three wire formats the agents call (server-sent events, streamed):

* Anthropic Messages, ``POST /v1/messages`` (Claude Code, with ``ANTHROPIC_BASE_URL``);
* OpenAI Responses, ``POST /v1/responses`` (Codex CLI, a custom model provider's
  ``base_url``);
* Gemini ``:streamGenerateContent?alt=sse`` and ``:generateContent`` (Gemini CLI, with
  ``GOOGLE_GEMINI_BASE_URL``).

The script (a JSON file) maps a marker that starts a user prompt ("Prompt 1:") to the tool
calls the model makes for it, one per request, and the text it ends with. Which call comes
next is read from the conversation the agent sends, as a model would: the newest user
message holding a marker names the prompt, and the number of tool calls the model made
since names the step. So the server keeps no state, and a resumed session goes on where it
was. A call's strings may name ``{root}`` (the project directory, ``--root``) and
``{session}``: the agent's session id, which each agent sends (Claude Code in
``metadata.user_id``, Codex in its ``session_id`` header, Gemini CLI as the
``{session}`` it was started with, ``--session``). A step may instead say which session to
find in the last tool result (``"session_from_result": true``).

Requests the script does not answer (titles, summaries, token counts, the agents' own side
questions) get a short text. Every request is appended to ``--log`` as one JSON line, so a
failing test can show what the agent sent. Only loopback is served, and the server exits
after ``--idle-exit`` seconds without a request, so a test that dies leaves nothing behind.

Usage: model_server.py --script FILE --root DIR [--session ID] --log FILE
Prints ``PORT <n>`` on stdout once it listens.
"""

import argparse
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MARKER = re.compile(r"Prompt (\d+):")
CALL_ID = re.compile(r"scripted_p(\d+)s\d+")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class Script:
    """The prompts' steps, and what fills in their placeholders."""

    def __init__(self, path, root, session):
        with open(path, encoding="utf-8") as f:
            self.prompts = json.load(f)["prompts"]
        self.root = root
        self.session = session

    def step(self, prompt, calls_made, session, last_result):
        """The step after `calls_made` tool calls for `prompt`: a call or the closing text."""
        steps = self.prompts.get(prompt)
        if steps is None:
            return {"text": "There is no script for this prompt."}
        if calls_made >= len(steps["calls"]):
            return {"text": steps.get("reply", "Done.")}
        call = steps["calls"][calls_made]
        if call.get("session_from_result"):
            found = UUID.search(last_result or "")
            session = found.group(0) if found else session
        return {
            "tool": call["tool"],
            "namespace": call.get("namespace"),
            "args": fill(call.get("args", {}), self.root, session or self.session),
            "custom": call.get("custom") and fill(call["custom"], self.root, session),
        }


def fill(value, root, session):
    """`value` with `{root}` and `{session}` replaced in every string."""
    if isinstance(value, str):
        return value.replace("{root}", root).replace("{session}", session or "")
    if isinstance(value, list):
        return [fill(v, root, session) for v in value]
    if isinstance(value, dict):
        return {k: fill(v, root, session) for k, v in value.items()}
    return value


def fitting(schema):
    """A value that fits a JSON schema: "user" where an enum allows it, else its first
    choice, and a plain value of each required type."""
    kind = str(schema.get("type", "object")).lower()
    if "enum" in schema:
        return "user" if "user" in schema["enum"] else schema["enum"][0]
    if kind == "object":
        properties = schema.get("properties") or {}
        return {k: fitting(v) for k, v in properties.items()}
    if kind == "array":
        return []
    if kind in ("number", "integer"):
        return 1
    if kind == "boolean":
        return False
    return "scripted"


def texts(content):
    """The text of a message's content, whatever shape the wire format gives it."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(texts(part) for part in content)
    if isinstance(content, dict):
        if content.get("type") in ("tool_result", "function_call_output"):
            return ""
        return "\n".join(
            texts(content[k]) for k in ("text", "content") if k in content and k != "type"
        )
    return ""


def where_in_script(turns):
    """(prompt marker, tool calls made for it, last tool result) of a conversation given as
    (role, text, tool call id, tool result) tuples, oldest first. The prompt is the newest
    user message with a marker; the calls made for it are told by their ids, which name the
    prompt (`call_id`): agents reorder and merge a resumed conversation's messages."""
    prompt, last, ids = None, None, set()
    for role, text, call, result in turns:
        found = MARKER.search(text) if role == "user" else None
        if found:
            prompt, last = found.group(1), None
        if call:
            ids.add(call)
        if result is not None:
            last = result
    if prompt is None:
        return None, 0, None
    made = {i for i in ids if CALL_ID.search(i) and CALL_ID.search(i).group(1) == prompt}
    return "Prompt %s:" % prompt, len(made), last


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.server.touch()
        if self.path.startswith("/v1/models"):
            return self.json(200, {"object": "list", "data": [], "models": []})
        self.json(404, {"error": {"message": "not scripted: GET " + self.path}})

    def do_HEAD(self):
        self.server.touch()
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        self.server.touch()
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        self.server.record({"path": self.path, "headers": dict(self.headers), "body": body})
        path = self.path.split("?")[0]
        if path.endswith("/messages/count_tokens"):
            return self.json(200, {"input_tokens": 10})
        if path.endswith("/messages"):
            return self.anthropic(body)
        if path.endswith("/responses"):
            return self.openai_responses(body)
        if ":streamGenerateContent" in path:
            return self.gemini(body, stream=True)
        if ":generateContent" in path:
            return self.gemini(body, stream=False)
        if ":countTokens" in path:
            return self.json(200, {"totalTokens": 10})
        self.json(404, {"error": {"message": "not scripted: POST " + self.path}})

    # --- the three wire formats -------------------------------------------------------

    def anthropic(self, body):
        tools = {t.get("name") for t in body.get("tools") or []}
        turns = []
        for message in body.get("messages", []):
            content = message.get("content")
            blocks = content if isinstance(content, list) else [content]
            for block in blocks:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    turns.append((message["role"], "", block.get("id"), None))
                elif isinstance(block, dict) and block.get("type") == "tool_result":
                    turns.append((message["role"], "", None, texts(block.get("content"))))
                else:
                    turns.append((message["role"], texts(block), None, None))
        user_id = str((body.get("metadata") or {}).get("user_id", ""))
        found = UUID.search(user_id.split("session")[-1])
        step = self.next_step(turns, tools, found.group(0) if found else None)
        events = [("message_start", {"type": "message_start", "message": {
            "id": "msg_scripted", "type": "message", "role": "assistant",
            "model": body.get("model", "scripted"), "content": [], "stop_reason": None,
            "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}})]
        if "tool" in step:
            block = {"type": "tool_use", "id": "toolu_" + step["id"],
                     "name": step["tool"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(step["args"])}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": step["text"]}
            stop = "end_turn"
        events += [
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": block}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                     "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta",
                               "delta": {"stop_reason": stop, "stop_sequence": None},
                               "usage": {"output_tokens": 5}}),
            ("message_stop", {"type": "message_stop"}),
        ]
        if body.get("stream"):
            return self.sse(events)
        message = events[0][1]["message"]
        message.update(content=[dict(block, **({"input": step["args"]} if "tool" in step
                                               else {"text": step["text"]}))],
                       stop_reason=stop)
        self.json(200, message)

    def openai_responses(self, body):
        # A tool without a name (Codex's `tool_search`) goes by its type.
        tools = {t.get("name") or t.get("type") for t in body.get("tools") or []}
        turns = []
        for item in body.get("input") or []:
            kind = item.get("type")
            if kind in ("function_call", "custom_tool_call", "tool_search_call"):
                turns.append(("assistant", "", item.get("call_id"), None))
            elif kind in ("function_call_output", "custom_tool_call_output"):
                turns.append(("tool", "", None, texts(item.get("output"))))
            elif kind == "tool_search_output":
                turns.append(("tool", "", None, json.dumps(item.get("tools"))))
            elif kind == "message":
                turns.append((item.get("role"), texts(item.get("content")), None, None))
        session = self.headers.get("session-id") or self.headers.get("thread-id")
        step = self.next_step(turns, tools, session)
        response = {"id": "resp_scripted", "object": "response", "status": "completed",
                    "model": body.get("model"), "output": [],
                    "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
                              "input_tokens_details": {"cached_tokens": 0},
                              "output_tokens_details": {"reasoning_tokens": 0}}}
        if step.get("tool") == "tool_search":
            item = {"type": "tool_search_call", "call_id": "call_" + step["id"],
                    "execution": "client", "arguments": step["args"]}
        elif "tool" in step and step.get("custom"):
            item = {"type": "custom_tool_call", "id": "ctc_1", "status": "completed",
                    "call_id": "call_" + step["id"], "name": step["tool"],
                    "input": step["custom"]}
        elif "tool" in step:
            item = {"type": "function_call", "id": "fc_1", "status": "completed",
                    "call_id": "call_" + step["id"], "name": step["tool"],
                    "arguments": json.dumps(step["args"])}
            if step.get("namespace"):
                item["namespace"] = step["namespace"]
        else:
            item = {"type": "message", "id": "msg_1", "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": step["text"],
                                 "annotations": []}]}
        created = dict(response, status="in_progress")
        self.sse([
            ("response.created", {"type": "response.created", "response": created}),
            ("response.output_item.added", {"type": "response.output_item.added",
                                            "output_index": 0, "item": item}),
            ("response.output_item.done", {"type": "response.output_item.done",
                                           "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed",
                                    "response": dict(response, output=[item])}),
        ])

    def gemini(self, body, stream):
        declared = body.get("tools") or []
        tools = {f.get("name") for t in declared for f in t.get("functionDeclarations") or []}
        turns = []
        for content in body.get("contents") or []:
            for part in content.get("parts") or []:
                if "functionCall" in part:
                    turns.append(("model", "", part["functionCall"].get("id"), None))
                elif "functionResponse" in part:
                    turns.append(("tool", "", None,
                                  json.dumps(part["functionResponse"].get("response"))))
                else:
                    turns.append((content.get("role"), part.get("text") or "", None, None))
        config = body.get("generationConfig") or {}
        if config.get("responseMimeType") == "application/json":
            # A side question with a JSON answer (which model should answer, who speaks
            # next): an answer that fits its schema, in which the user speaks next.
            schema = config.get("responseJsonSchema") or config.get("responseSchema") or {}
            step = {"text": json.dumps(fitting(schema))}
        elif not tools:
            step = {"text": "Done."}
        else:
            step = self.next_step(turns, tools, None)
        if "tool" in step:
            part = {"functionCall": {"id": step["id"], "name": step["tool"], "args": step["args"]}}
        else:
            part = {"text": step["text"]}
        chunk = {"candidates": [{"content": {"role": "model", "parts": [part]},
                                 "finishReason": "STOP", "index": 0}],
                 "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                                   "totalTokenCount": 15},
                 "modelVersion": "scripted"}
        if stream:
            return self.sse([(None, chunk)])
        self.json(200, chunk)

    # --- shared -------------------------------------------------------------------------

    def next_step(self, turns, tools, session):
        prompt, calls, last = where_in_script(turns)
        if prompt is None or not tools:
            return {"text": "Done."}
        step = self.server.script.step(prompt, calls, session, last)
        # A namespaced tool is offered by an earlier tool search, not in `tools`.
        if "tool" in step and not step.get("namespace") and step["tool"] not in tools:
            self.server.record({"error": "the agent offers no tool %r" % step["tool"],
                                "tools": sorted(t for t in tools if t)})
            return {"text": "The scripted tool %s is not offered." % step["tool"]}
        if "tool" in step:
            step["id"] = self.server.call_id(MARKER.search(prompt).group(1), calls)
        self.server.record({"answer": step, "prompt": prompt, "calls_made": calls})
        return step

    def sse(self, events):
        payload = "".join(
            ("event: %s\n" % name if name else "") + "data: %s\n\n" % json.dumps(data)
            for name, data in events
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def json(self, status, value):
        payload = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, script, log_path):
        super().__init__(("127.0.0.1", 0), Handler)
        self.script = script
        self.log_path = log_path
        self.lock = threading.Lock()
        self.calls = 0
        self.last_request = time.monotonic()

    def touch(self):
        self.last_request = time.monotonic()

    def call_id(self, prompt, step):
        """A tool call id naming the prompt and step it is for (`where_in_script` reads it)."""
        with self.lock:
            self.calls += 1
            return "scripted_p%ss%d_%d" % (prompt, step, self.calls)

    def record(self, entry):
        with self.lock, open(self.log_path, "a", encoding="utf-8") as log:
            log.write(json.dumps(entry) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--script", required=True)
    parser.add_argument("--root", required=True)
    parser.add_argument("--session")
    parser.add_argument("--log", required=True)
    parser.add_argument("--idle-exit", type=float, default=300)
    args = parser.parse_args()
    server = Server(Script(args.script, args.root, args.session), args.log)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print("PORT %d" % server.server_address[1], flush=True)
    while time.monotonic() - server.last_request < args.idle_exit:
        time.sleep(1)
    server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
