"""A fault-injecting OpenAI-compatible provider on loopback, for ``benchmarks.chaos``.

It answers ``/chat/completions`` as the sim provider would (the same seed and call key give the
same text), except that a seeded share of requests get one of the faults real endpoints show:

* ``rate_limited``: HTTP 429 with ``Retry-After``;
* ``server_error``: HTTP 500 or 503 with a JSON error body;
* ``truncated_json``: HTTP 200 whose JSON body stops half-way;
* ``html``: HTTP 200 with an HTML page (a proxy's or a captive portal's);
* ``slow_body``: the headers at once, the body only after ``slow_s`` (past the runs'
  heartbeat timeout, so a worker that stops heartbeating while it waits loses the call);
* ``reset``: the request is read, then the connection is reset (TCP RST) with no answer.

Whether a request gets a fault, and which, is drawn from ``(seed, call id, how many requests
of that call id came before)``, so it does not depend on the order requests arrive in across
worker processes. A call id gets at most ``max_faults_per_call`` faults, then clean answers:
every call can finish whatever the rates. Every request is kept as an ``Exchange`` (its call
id, client port, fault, and when a whole answer was written), which is what the chaos driver
checks "answered at most once" against.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import random
import socket
import struct
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from activities.model_types import ModelRequest
from activities.providers.sim import SimOptions, simulate

__all__ = ["FAULT_KINDS", "ChaosProvider", "Exchange", "FaultRates"]

FAULT_KINDS = ("rate_limited", "server_error", "truncated_json", "html", "slow_body", "reset")
CALL_ID_HEADER = "x-ponder-call-id"


@dataclass(frozen=True)
class FaultRates:
    """The share of requests that get each fault (their sum at most 1)."""

    rate_limited: float = 0.05
    server_error: float = 0.05
    truncated_json: float = 0.03
    html: float = 0.03
    slow_body: float = 0.03
    reset: float = 0.04
    retry_after_s: int = 1
    slow_s: float = 3.0
    max_faults_per_call: int = 2

    def draw(self, rng: random.Random) -> str | None:
        """A fault kind, or None for a clean answer."""
        roll = rng.random()
        for kind in FAULT_KINDS:
            roll -= getattr(self, kind)
            if roll < 0:
                return kind
        return None


@dataclass
class Exchange:
    """One request: its call id, the client's port, the fault it got, when a whole answer went."""

    call_id: str
    port: int
    fault: str | None
    arrived: float = field(default_factory=time.monotonic)
    answered: float | None = None
    """When a whole 200 answer was written (None: a fault, or the client hung up first)."""
    latency_s: float = 0.0


def completion(text: str, model: str) -> dict[str, Any]:
    return {
        "id": "chaos-1",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": max(1, len(text) // 4)},
    }


def sim_answer(headers: dict[str, str], body: dict[str, Any]) -> bytes:
    """The sim provider's answer for the same seed and call key, as an OpenAI completion."""
    messages = body.get("messages", [])
    prompt = next((m["content"] for m in messages if m["role"] == "user"), "")
    system = next((m["content"] for m in messages if m["role"] == "system"), None)
    call_key = "/".join(headers.get(CALL_ID_HEADER, "").split("/")[1:])
    request = ModelRequest(
        model="sim:default",
        prompt=prompt,
        system=system,
        role=headers.get("x-ponder-role", "ask"),
        tag=headers.get("x-ponder-tag"),
        seed=int(body.get("seed", 0)),
    )
    text = simulate(request, request.seed, call_key, SimOptions.parse(body["model"]))
    return json.dumps(completion(text, body["model"])).encode()


class ChaosProvider:
    """The fault-injecting endpoint, serving on a thread until ``close()``."""

    def __init__(
        self,
        seed: int,
        rates: FaultRates = FaultRates(),
        *,
        latency_s: tuple[float, float] = (0, 0),
    ) -> None:
        """``latency_s``: a clean answer waits between these many seconds (drawn with its fault),
        as a model takes time to answer; calls then overlap, and a kill finds some in flight."""
        self.seed, self.rates, self.latency_s = seed, rates, latency_s
        self.exchanges: list[Exchange] = []
        self.faults: Counter[str] = Counter()
        self._requests: Counter[str] = Counter()
        self._faulted: Counter[str] = Counter()
        self._lock = threading.Lock()
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def finish(self) -> None:
                # A reset connection, or a client that hung up.
                with contextlib.suppress(OSError, ValueError):
                    super().finish()

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                headers = {k.lower(): v for k, v in self.headers.items()}
                exchange = provider._arrive(headers.get(CALL_ID_HEADER, ""), self.client_address)
                # The worker was killed or gave up: no whole answer went.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._answer(exchange, headers, body)

            def _answer(self, exchange: Exchange, headers: dict[str, str], body: Any) -> None:
                rates, fault = provider.rates, exchange.fault
                if fault == "reset":
                    # Linger 0: close() sends RST, as a crashed proxy or load balancer does.
                    self.connection.setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                    )
                    self.connection.close()
                    self.close_connection = True
                    return
                if fault == "rate_limited":
                    error = b'{"error": {"message": "rate limited", "type": "rate_limit"}}'
                    self._send(429, error, {"Retry-After": str(rates.retry_after_s)})
                    return
                if fault == "server_error":
                    status = 503 if len(exchange.call_id) % 2 else 500
                    self._send(status, b'{"error": {"message": "upstream trouble"}}', {})
                    return
                if fault == "html":
                    page = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
                    self._send(200, page, {"Content-Type": "text/html"})
                    return
                data = sim_answer(headers, body)
                time.sleep(exchange.latency_s)
                if fault == "truncated_json":
                    self._send(200, data[: len(data) // 2], {})
                    return
                if fault == "slow_body":
                    self.send_response(200)
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.flush()
                    time.sleep(rates.slow_s)
                    self.wfile.write(data)
                else:
                    self._send(200, data, {})
                self.wfile.flush()
                with provider._lock:
                    exchange.answered = time.monotonic()

            def _send(self, status: int, data: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                headers = {"Content-Type": "application/json", **headers}
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def _arrive(self, call_id: str, client: tuple[str, int]) -> Exchange:
        with self._lock:
            earlier = self._requests[call_id]
            self._requests[call_id] += 1
            rng = random.Random(f"{self.seed}/{call_id}/{earlier}")
            fault = self.rates.draw(rng)
            if fault is not None and self._faulted[call_id] >= self.rates.max_faults_per_call:
                fault = None
            if fault is not None:
                self._faulted[call_id] += 1
                self.faults[fault] += 1
            exchange = Exchange(call_id, client[1], fault, latency_s=rng.uniform(*self.latency_s))
            self.exchanges.append(exchange)
            return exchange

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def snapshot(self) -> list[Exchange]:
        """The exchanges so far (copies, so the caller reads a consistent view)."""
        with self._lock:
            return [dataclasses.replace(e) for e in self.exchanges]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
