"""Reads from the embedded server's HTTP API, for commands that must answer at once.

``ponder status`` of a live run spent most of its time importing the SDK client (about 0.3 s of
0.6 s). The embedded dev server also serves Temporal's HTTP API (``--http-port``, recorded in
``server.json``), which answers the same describe and query calls as JSON. Payloads are asked
for as stored (no "payload shorthand": that turns a payload's JSON into a protobuf ``Value`` and
back, which drops empty lists), so a query's answer is the worker's own JSON bytes, decoded as
the SDK's converter does. The standard library's ``http.client`` talks to it on loopback, so
nothing heavy is imported.

Only the happy path is served here: any other answer (a refusal, an error, a timeout, a payload
that is not plain JSON) raises ``HttpUnanswered`` and the caller asks again through the SDK,
which owns every error message.
"""

from __future__ import annotations

import base64
import http.client
import json
from datetime import datetime
from typing import Any
from urllib.parse import quote, urlencode

from client.worker_liveness import Heartbeat, serves

__all__ = ["HttpUnanswered", "RunDescription", "ServerHttp"]

TIMEOUT_S = 5.0
"""A query waits for a worker; one that answers takes milliseconds."""


class HttpUnanswered(Exception):
    """The HTTP API did not answer this read; ask through the SDK instead."""


class RunDescription:
    """What ``describe`` says of a run: its kind, queue and times."""

    def __init__(self, answer: dict[str, Any]) -> None:
        info = answer.get("workflowExecutionInfo", {})
        self.kind: str = info.get("type", {}).get("name", "")
        config = answer.get("executionConfig", {})
        self.task_queue: str | None = config.get("taskQueue", {}).get("name")
        self.start_time = _timestamp(info.get("startTime"))
        self.close_time = _timestamp(info.get("closeTime"))


class ServerHttp:
    def __init__(self, port: int, namespace: str) -> None:
        self._port = port
        self._base = f"/api/v1/namespaces/{quote(namespace, safe='')}"

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        connection = http.client.HTTPConnection("127.0.0.1", self._port, timeout=TIMEOUT_S)
        try:
            connection.request(
                method,
                self._base + path,
                body=None if body is None else json.dumps(body),
                headers={
                    "Content-Type": "application/json",
                    "Accept": "application/json+no-payload-shorthand",
                },
            )
            response = connection.getresponse()
            text = response.read()
        except OSError as exc:  # refused, reset, timed out
            raise HttpUnanswered(str(exc)) from exc
        finally:
            connection.close()
        if response.status != 200:
            raise HttpUnanswered(f"HTTP {response.status}")
        try:
            return json.loads(text)
        except ValueError as exc:
            raise HttpUnanswered("not JSON") from exc

    def describe(self, run_id: str) -> RunDescription:
        return RunDescription(self._call("GET", f"/workflows/{quote(run_id, safe='')}"))

    def list_workflows(self, query: str, *, limit: int) -> list[dict[str, Any]]:
        """The executions ``query`` (a visibility query) matches, newest first, at most
        ``limit``: what the SDK's ``list_workflows`` gives, as the API's JSON."""
        found: list[dict[str, Any]] = []
        token = ""
        while len(found) < limit:
            params = {"query": query, "pageSize": str(min(limit - len(found), 1000))}
            if token:
                params["nextPageToken"] = token
            page = self._call("GET", "/workflows?" + urlencode(params))
            found.extend(page.get("executions", []))
            token = page.get("nextPageToken") or ""
            if not token:
                break
        return found[:limit]

    def query(self, run_id: str, query_type: str) -> bytes:
        """The query's answer: the JSON its worker encoded (for the caller's pydantic type)."""
        path = f"/workflows/{quote(run_id, safe='')}/query/{quote(query_type, safe='')}"
        answer = self._call("POST", path, {"query": {"queryType": query_type}})
        if answer.get("queryRejected"):
            raise HttpUnanswered("query rejected")
        payloads = answer.get("queryResult", {}).get("payloads", [])
        if len(payloads) != 1:
            raise HttpUnanswered("no single query result")
        (payload,) = payloads
        # Anything but plain JSON (a payload kept in the payload store, say) is the SDK's to decode.
        if _text(payload.get("metadata", {}).get("encoding")) != "json/plain":
            raise HttpUnanswered("not a plain JSON payload")
        return base64.b64decode(payload.get("data", ""))

    def serves(self, task_queue: str, now: float) -> bool:
        """Whether a live worker serves ``task_queue`` (``client.worker_liveness`` decides)."""
        queue = quote(task_queue, safe="")
        described = self._call(
            "GET", f"/task-queues/{queue}?taskQueueType=TASK_QUEUE_TYPE_WORKFLOW"
        )
        polls = [
            moment.timestamp()
            for poller in described.get("pollers", [])
            if (moment := _timestamp(poller.get("lastAccessTime"))) is not None
        ]
        try:
            listed = self._call(
                "GET", "/workers?" + urlencode({"query": f"TaskQueue = '{task_queue}'"})
            )
        except HttpUnanswered:  # an older server: no worker heartbeats
            return serves(polls, None, now)
        heartbeats = []
        for info in listed.get("workersInfo", []):
            beat = info.get("workerHeartbeat", {})
            sent = _timestamp(beat.get("heartbeatTime"))
            if sent is None:
                continue
            heartbeats.append(
                Heartbeat(
                    running=beat.get("status") == "WORKER_STATUS_RUNNING",
                    at=sent.timestamp(),
                    interval_s=float(beat.get("elapsedSinceLastHeartbeat", "0s").removesuffix("s")),
                )
            )
        return serves(polls, heartbeats, now)


def _text(encoded: str | None) -> str | None:
    return None if encoded is None else base64.b64decode(encoded).decode(errors="replace")


def _timestamp(text: str | None) -> datetime | None:
    """An RFC 3339 time; the zero time the API prints for an unset one is None."""
    if not text or text.startswith("0001-"):
        return None
    return datetime.fromisoformat(text)
