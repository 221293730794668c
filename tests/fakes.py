"""Fake model providers: real HTTP servers on loopback, scripted per test.

Each fake answers OpenAI chat completions (``/chat/completions``) or Anthropic messages
(``/v1/messages``). A test queues replies, or lets the default responder answer; by default the
OpenAI fake wraps the sim provider so the same seed gives the same text as ``sim:`` directly.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from activities.model_types import ModelRequest
from activities.providers.sim import SimOptions, simulate


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None
    delay_s: float = 0.0
    no_length: bool = False
    """Send no content-length: the body ends when the connection closes (HTTP/1.0)."""


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float = field(default_factory=time.monotonic)

    @property
    def call_id(self) -> str:
        return self.headers.get("x-ponder-call-id", "")

    @property
    def phase(self) -> str:
        return self.call_id.split("/")[1] if self.call_id.count("/") >= 3 else ""


def openai_completion(text: str, *, model: str = "fake-model", **extra: Any) -> dict[str, Any]:
    finish = extra.pop("finish_reason", "stop")
    return {
        "id": "cmpl-1",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}
        ],
        "usage": {
            "prompt_tokens": 12,
            "completion_tokens": max(1, len(text) // 4),
            "prompt_tokens_details": {"cached_tokens": 4},
        },
        **extra,
    }


def anthropic_message(text: str, *, model: str = "claude-fake") -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": {
            "input_tokens": 10,
            "output_tokens": 5,
            "cache_read_input_tokens": 7,
            "cache_creation_input_tokens": 3,
        },
    }


def sim_responder(seen: Seen) -> Reply:
    """Answer as the sim provider would for the same seed and call key."""
    messages = seen.body.get("messages", [])
    prompt = next((m["content"] for m in messages if m["role"] == "user"), "")
    system = next((m["content"] for m in messages if m["role"] == "system"), None)
    call_key = "/".join(seen.call_id.split("/")[1:])
    request = ModelRequest(
        model="sim:default",
        prompt=prompt,
        system=system,
        role=seen.headers.get("x-ponder-role", "ask"),
        tag=seen.headers.get("x-ponder-tag"),
        seed=int(seen.body.get("seed", 0)),
    )
    text = simulate(request, request.seed, call_key, SimOptions.parse(seen.body["model"]))
    return Reply(body=openai_completion(text, model=seen.body["model"]))


class FakeProvider:
    """One fake endpoint. ``replies`` are served first, then ``responder``."""

    def __init__(self, responder: Callable[[Seen], Reply] = sim_responder, port: int = 0) -> None:
        self.responder = responder
        self.replies: list[Reply] = []
        self.seen: list[Seen] = []
        self.release = threading.Event()
        self.release.set()
        self.arrived = threading.Event()
        self.hold_when: Callable[[Seen], bool] | None = None
        """Requests matching this are held until ``release`` is set (like ``hold()``)."""
        self._lock = threading.Lock()
        self.bodies_sent = 0
        self.bodies_cut = 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                seen = Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with fake._lock:
                    fake.seen.append(seen)
                    reply = fake.replies.pop(0) if fake.replies else None
                    if fake.hold_when is not None and fake.hold_when(seen):
                        fake.release.clear()
                fake.arrived.set()
                fake.release.wait(timeout=120)
                reply = reply or fake.responder(seen)
                if reply.delay_s:
                    threading.Event().wait(reply.delay_s)
                data = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    if not reply.no_length:
                        self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    with fake._lock:
                        fake.bodies_sent += 1
                except (BrokenPipeError, ConnectionResetError):
                    with fake._lock:
                        fake.bodies_cut += 1  # the client stopped reading and hung up

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def hold(self) -> None:
        """Hold every request open until ``release.set()``."""
        self.arrived.clear()
        self.release.clear()

    def resume(self) -> None:
        """Stop holding and let every held request go (atomically with the hold check)."""
        with self._lock:
            self.hold_when = None
            self.release.set()

    def close(self) -> None:
        self.resume()
        self.server.shutdown()
        self.server.server_close()
