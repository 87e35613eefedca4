"""A small OpenAI-compatible HTTP server that answers from a script.

Real HTTP on 127.0.0.1, spoken to by the real ``openai`` client: the tests' model, and a
way to try the daemon without an LLM::

    python -m aether.testing.model --port 8900
    AETHER_LLM__BASE_URL=http://127.0.0.1:8900/v1 AETHER_LLM__MODEL=scripted aether up

Embeddings are deterministic bag-of-words vectors (texts sharing words are close); chat
completions pop the next scripted reply (run as a program: it says what it heard).
Every request is recorded for assertions.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def bag_of_words(text: str, dims: int) -> list[float]:
    """A unit vector of hashed word counts: texts that share words are close."""
    vector = [0.0] * dims
    for word in re.findall(r"\w+", text.lower()):
        vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % dims] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


def completion(
    content: str | None = None, tool_calls: list[tuple[str, str, dict[str, Any]]] | None = None
) -> dict[str, Any]:
    """A chat completion payload: text, or tool calls given as (id, name, arguments)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {
                "id": cid,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for cid, name, args in tool_calls
        ]
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


Responder = Callable[[dict[str, Any]], dict[str, Any]]


class ScriptedOpenAI:
    """Start with ``with ScriptedOpenAI(dims=...) as server:``; ``server.base_url``.

    Chat completions pop ``replies`` first, then ask ``responder`` (given the request
    body); with neither, or while ``failing`` is set, the server answers 500. A request
    for structured output (``response_format``: knowledge extraction) is answered by
    ``extractor`` instead, an empty extraction by default, so it never takes a reply
    scripted for the conversation.
    """

    def __init__(
        self,
        dims: int = 64,
        replies: list[dict[str, Any]] | None = None,
        responder: Responder | None = None,
        extractor: Responder | None = None,
        port: int = 0,
        on_embed: Callable[[list[str]], None] | None = None,
    ) -> None:
        self.dims = dims
        self.on_embed = on_embed
        self.replies = list(replies or [])
        self.responder = responder
        self.extractor = extractor or (
            lambda body: completion('{"facts": [], "entities": [], "relations": []}')
        )
        self.failing = False
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "body": body})
                if self.path.endswith("/embeddings"):
                    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                    if outer.on_embed is not None:
                        outer.on_embed(texts)  # a test watches (or slows) the embedding
                    payload: dict[str, Any] | None = {
                        "object": "list",
                        "model": body["model"],
                        "data": [
                            {
                                "object": "embedding",
                                "index": i,
                                "embedding": bag_of_words(t, outer.dims),
                            }
                            for i, t in enumerate(texts)
                        ],
                        "usage": {"prompt_tokens": 1, "total_tokens": 1},
                    }
                elif outer.failing:
                    payload = None
                elif self.path.endswith("/chat/completions") and "response_format" in body:
                    payload = outer.extractor(body)
                elif self.path.endswith("/chat/completions") and outer.replies:
                    payload = outer.replies.pop(0)
                elif self.path.endswith("/chat/completions") and outer.responder:
                    payload = outer.responder(body)
                else:
                    payload = None
                if payload is None:
                    self.send_response(500)
                    self.end_headers()
                    return
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def chat_requests(self) -> list[dict[str, Any]]:
        """Bodies of the chat completion requests (not extractions), in order."""
        return [
            r["body"]
            for r in self.requests
            if r["path"].endswith("/chat/completions") and "response_format" not in r["body"]
        ]

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible endpoint (``AETHER_LLM__BASE_URL``)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> ScriptedOpenAI:
        self._thread.start()
        return self

    def wait(self) -> None:
        """Serve until the process is interrupted."""
        self._thread.join()

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


_CALL = re.compile(r"^\s*(?:\[Current Time:[^\]]*\]\s*)?CALL\s+([A-Za-z0-9_.:-]+)\s*(\{.*\})?\s*$")


def echo(body: dict[str, Any]) -> dict[str, Any]:
    """The program's reply: it says what it heard, or makes the tool calls it is told to.

    A user message whose lines read ``CALL tool_name {"json": "arguments"}`` is answered
    with those tool calls (when the turn offers the tool), so tools and approvals can be
    tried without a model; once their results are in, it says what they were. Any other
    message: what it heard (the last user message, shortened).
    """
    messages = body.get("messages", [])
    users = [m for m in messages if m.get("role") == "user"]
    heard = str(users[-1].get("content") or "") if users else ""
    if messages and messages[-1].get("role") == "tool":
        results = []
        for m in reversed(messages):
            if m.get("role") != "tool":
                break
            results.append(" ".join(str(m.get("content") or "").split())[:200])
        return completion("(scripted model) the tools said: " + " | ".join(reversed(results)))
    offered = {t["function"]["name"] for t in body.get("tools") or [] if "function" in t}
    calls: list[tuple[str, str, dict[str, Any]]] = []
    refused: list[str] = []
    for line in heard.splitlines():
        match = _CALL.match(line)
        if match is None:
            continue
        name, raw = match.group(1), match.group(2) or "{}"
        try:
            arguments = json.loads(raw)
        except json.JSONDecodeError:
            refused.append(f"{name}: its arguments are not JSON")
            continue
        if name not in offered or not isinstance(arguments, dict):
            refused.append(f"{name}: not a tool of this turn" if name not in offered else name)
            continue
        calls.append((f"call_{len(calls)}", name, arguments))
    if calls:
        return completion(tool_calls=calls)
    if refused:
        return completion("(scripted model) I cannot call " + "; ".join(refused))
    heard = " ".join(heard.split())[:200]
    return completion(f'(scripted model) I heard: "{heard}"')


_NUMBERED = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)


def structured(body: dict[str, Any]) -> dict[str, Any]:
    """The program's structured answers: relevance grades by shared words, else nothing.

    A relevance judge's request (``AETHER_MEMORY__RERANK=llm``: a question, then numbered
    memories) gets each memory graded by the share of the question's longer words it
    holds (half or more 3, a quarter 2, any 1, none 0), so a search can be judged without
    a model; any other request (knowledge extraction) what aether's own deterministic
    extractor finds in the conversation's lines (``speaker: text``).
    """
    asked = str(body["messages"][-1].get("content") or "")
    schema = json.dumps(body.get("response_format", {}))
    if '"grades"' not in schema:
        return completion(_extraction(asked))
    question = {w for w in re.findall(r"\w+", asked.splitlines()[0].lower()) if len(w) > 3}
    grades = []
    for number, text in _NUMBERED.findall(asked):
        share = len(question & set(re.findall(r"\w+", text.lower()))) / max(1, len(question))
        grade = 3 if share >= 0.5 else 2 if share >= 0.25 else int(share > 0)
        grades.append({"memory": int(number), "grade": grade})
    return completion(json.dumps({"grades": grades}))


def _extraction(asked: str) -> str:
    from aether.memory.knowledge.extraction import Extraction, extract

    found = Extraction()
    for line in asked.splitlines():
        speaker, sep, said = line.partition(": ")
        if sep and speaker and len(speaker) < 40 and said.strip() and speaker != "Assistant":
            found = found.merged(extract("" if speaker == "Tool" else speaker, said))
    return found.model_dump_json()


def main(argv: list[str] | None = None) -> None:
    """Serve the scripted model until Ctrl-C, saying how to point aether at it."""
    parser = argparse.ArgumentParser(prog="python -m aether.testing.model", description=__doc__)
    parser.add_argument("--port", type=int, default=8900, help="TCP port on 127.0.0.1")
    args = parser.parse_args(argv)
    with ScriptedOpenAI(dims=384, responder=echo, extractor=structured, port=args.port) as server:
        print(f"scripted model at {server.base_url}", flush=True)
        print(f"  AETHER_LLM__BASE_URL={server.base_url} AETHER_LLM__MODEL=scripted", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            server.wait()


if __name__ == "__main__":
    main()
