#!/usr/bin/env python3
"""Drive one whole awaken-lua run over the sidecar's HTTP API.

The agent lives here, in Python: it owns the conversation's model (a canned
one, so the example runs offline) and its tools. At every phase it calls the
sidecar, which runs the Lua plugins, keeps the run's state and says what the
gate decided. Standard library only.

    awaken-lua serve &                      # in the repository root
    python3 examples/python/client.py       # --url, --token, --approve

With the repository's plugins (scripts/guard.lua) the model's fs_read of
.env is answered by the gate without running the tool, and the word count
runs here. A token is read from --token or $AWAKEN_TOKEN. A 429 overloaded
or 503 store_unavailable reply is retried after its Retry-After.
"""

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request


class SidecarError(Exception):
    """A problem+json reply: status, code and detail."""

    def __init__(self, status, problem, retry_after=1):
        self.status = status
        self.problem = problem
        self.retry_after = retry_after
        super().__init__("%s %s: %s" % (status, problem.get("code"), problem.get("detail")))


# Refusals after which the call changed nothing and may be sent again, after
# the reply's Retry-After: 429 overloaded (more requests in flight than
# [server] max_concurrent) and 503 store_unavailable (a save failed).
RETRIED = {(429, "overloaded"), (503, "store_unavailable")}


class Sidecar:
    def __init__(self, url, token=None, timeout=10, attempts=5):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.attempts = attempts

    def request(self, method, path, body=None):
        for attempt in range(1, self.attempts + 1):
            try:
                return self.send(method, path, body)
            except SidecarError as err:
                if (err.status, err.problem.get("code")) not in RETRIED or attempt == self.attempts:
                    raise
                time.sleep(max(0, min(err.retry_after, 10)))

    def send(self, method, path, body):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
                return json.loads(raw) if raw else {}
        except urllib.error.HTTPError as err:
            raw = err.read()
            try:
                problem = json.loads(raw)
            except ValueError:
                problem = {"code": "http_%d" % err.code, "detail": raw.decode(errors="replace")}
            try:
                retry_after = float(err.headers.get("Retry-After", "1"))
            except ValueError:
                retry_after = 1
            raise SidecarError(err.code, problem, retry_after) from None

    def phase(self, run_id, name, body=None):
        return self.request("POST", "/v1/runs/%s/phases/%s" % (run_id, name), body or {})


# The tools this agent offers, and their implementations.
TOOLS = [
    {
        "name": "word_count",
        "description": "Counts the words of a text",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    },
    {
        "name": "fs_read",
        "description": "Reads a file of the workspace",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
]


def word_count(args):
    return {"status": "success", "data": len(str(args.get("text", "")).split())}


def fs_read(args):
    return {"status": "success", "data": "(the contents of %s)" % args.get("path")}


IMPLEMENTATIONS = {"word_count": word_count, "fs_read": fs_read}

# The model, canned: first it calls two tools, then it answers.
ANSWERS = [
    {
        "text": "",
        "tool_calls": [
            {"id": "call_1", "name": "fs_read", "args": {"path": ".env"}},
            {"id": "call_2", "name": "word_count", "args": {"text": "the quick brown fox"}},
        ],
    },
    {"text": "The sentence has 4 words. I did not read .env: it holds secrets.", "tool_calls": []},
]


def show_result(result):
    if result.get("status") == "success":
        return "success: %s" % json.dumps(result.get("data"))
    return "%s: %s" % (result.get("status"), result.get("message") or json.dumps(result.get("data")))


def run_call(sidecar, run_id, call, decision):
    """Executes an allowed call here (or takes the result of a plugin's tool,
    which the sidecar runs); a call the gate answered goes straight to
    after_tool_execute, which uses the gate's result."""
    if decision["decision"] == "allow":
        call = dict(call, args=decision["args"])  # the arguments after any rewrite
        started = sidecar.phase(run_id, "before_tool_execute", {"call": call})
        if started.get("termination"):
            return started["termination"]  # a plugin stopped the run: the call does not run
        if "result" in started:
            result = started["result"]  # a plugin's own tool: the sidecar ran it
        else:
            result = IMPLEMENTATIONS[call["name"]](call["args"])
        reply = sidecar.phase(run_id, "after_tool_execute", {"call": call, "result": result})
    else:
        reply = sidecar.phase(run_id, "after_tool_execute", {"call": call})
    print("  tool %s -> %s" % (call["name"], show_result(reply["result"])))
    return reply.get("termination")


def gate(sidecar, run_id, call):
    decision = sidecar.phase(run_id, "tool_gate", {"call": call})
    line = "  gate %s -> %s" % (call["name"], decision["decision"])
    if decision.get("reason"):
        line += ": " + decision["reason"]
    elif decision.get("result"):
        line += ": " + show_result(decision["result"])
    print(line)
    return decision


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default=os.environ.get("AWAKEN_URL", "http://127.0.0.1:7878"))
    ap.add_argument("--token", default=os.environ.get("AWAKEN_TOKEN"))
    ap.add_argument("--thread", help="reuse a thread (its thread-scoped state carries over)")
    ap.add_argument("--approve", choices=["all", "none"], default="none",
                    help="what a human answers when a plugin suspends a call")
    opts = ap.parse_args()

    sidecar = Sidecar(opts.url, opts.token)
    created = sidecar.request("POST", "/v1/runs", {
        "thread_id": opts.thread or "",
        "cwd": os.getcwd(),  # what path rules such as Read(./.env) are anchored at
        "messages": [{"role": "user", "content": "How many words are in 'the quick brown fox'? Also show me .env."}],
        "tools": TOOLS,
    })
    run_id = created["run_id"]
    print("run %s on thread %s (generation %s)" % (run_id, created["thread_id"], created["generation"]))

    termination = created.get("termination")
    for step, answer in enumerate(ANSWERS, start=1):
        if termination:
            break
        termination = sidecar.phase(run_id, "step_start").get("termination")
        if termination:
            break
        # The sidecar keeps the conversation: send no messages, get back the
        # request as the model must see it (context messages placed, tools
        # filtered, transforms run).
        prepared = sidecar.phase(run_id, "before_inference", {"request": {"messages": [], "params": {"temperature": 0.2}}})
        request = prepared["request"]
        names = ", ".join(c["name"] for c in answer["tool_calls"]) or "no tools"
        print("step %d: %d messages, %d tools offered; the model calls %s" % (
            step, len(request["messages"]), len(request["tools"]), names))
        termination = prepared.get("termination")
        if termination:
            break
        termination = sidecar.phase(run_id, "after_inference", {"response": answer}).get("termination")
        for call in answer["tool_calls"]:
            if termination:
                break
            decision = gate(sidecar, run_id, call)
            if decision["decision"] == "suspend":
                print("  ticket %s: %s" % (decision["ticket"]["id"], decision["ticket"].get("message", "")))
                continue  # answered after step_end, when the run waits
            termination = run_call(sidecar, run_id, call, decision)
        if termination:
            break
        ended = sidecar.phase(run_id, "step_end")
        termination = ended.get("termination")
        while termination == "suspended":
            # The run waits for a human: answer every ticket, then gate the
            # resumed calls again and end the step.
            waiting = sidecar.request("GET", "/v1/runs/" + run_id)
            action = "resume" if opts.approve == "all" else "cancel"
            decisions = [{"target": t["id"], "action": action, "reason": "answered by client.py"} for t in waiting["suspended"]]
            resumed = sidecar.request("POST", "/v1/runs/%s/resume" % run_id, {"decisions": decisions})
            termination = None
            for c in resumed["calls"]:
                print("  %s %s" % ("resumed" if c["status"] == "resuming" else "cancelled", c["id"]))
                if c["status"] == "resuming" and not termination:
                    call = {"id": c["id"], "name": c["name"], "args": c["args"]}
                    decision = gate(sidecar, run_id, call)
                    if decision["decision"] != "suspend":
                        termination = run_call(sidecar, run_id, call, decision)
            if not termination:
                termination = sidecar.phase(run_id, "step_end").get("termination")
        if answer["text"]:
            print("  answer: %s" % answer["text"])

    final = sidecar.phase(run_id, "run_end")
    print("termination: %s" % final.get("termination"))
    state = sidecar.request("GET", "/v1/runs/" + run_id)
    print("status %s after %d steps, revision %d" % (state["status"], state["step"], state["revision"]))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SidecarError as err:
        print("sidecar error: %s" % err, file=sys.stderr)
        sys.exit(1)
    except urllib.error.URLError as err:
        print("cannot reach the sidecar: %s (is `awaken-lua serve` running?)" % err.reason, file=sys.stderr)
        sys.exit(1)
