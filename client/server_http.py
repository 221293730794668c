"""Reads (and an Ask's start) over the embedded server's HTTP API, for commands that must
answer at once.

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

__all__ = ["HttpUnanswered", "RunDescription", "ServerHttp", "payload_data"]

TIMEOUT_S = 5.0
"""A query waits for a worker; one that answers takes milliseconds."""


class HttpUnanswered(Exception):
    """The HTTP API did not answer this read; ask through the SDK instead."""


class RunDescription:
    """What ``describe`` says of a run: its kind, queue, times and pending activities."""

    def __init__(self, answer: dict[str, Any]) -> None:
        info = answer.get("workflowExecutionInfo", {})
        self.kind: str = info.get("type", {}).get("name", "")
        config = answer.get("executionConfig", {})
        self.task_queue: str | None = config.get("taskQueue", {}).get("name")
        self.start_time = _timestamp(info.get("startTime"))
        self.close_time = _timestamp(info.get("closeTime"))
        self.pending_activities: list[dict[str, Any]] = answer.get("pendingActivities", [])


class ServerHttp:
    def __init__(self, port: int, namespace: str) -> None:
        self._port = port
        self._base = f"/api/v1/namespaces/{quote(namespace, safe='')}"

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        status, answer = self._exchange(method, path, body)
        if status != 200:
            raise HttpUnanswered(f"HTTP {status}")
        return answer

    def _exchange(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        *,
        timeout_s: float = TIMEOUT_S,
    ) -> tuple[int, Any]:
        """The answer's status and JSON (a refusal's too: its details tell refusals apart)."""
        connection = http.client.HTTPConnection("127.0.0.1", self._port, timeout=timeout_s)
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
        try:
            return response.status, json.loads(text)
        except ValueError as exc:
            raise HttpUnanswered(f"HTTP {response.status}, not JSON") from exc

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
        return payload_data(answer.get("queryResult"))

    def start_workflow(self, workflow_id: str, request: dict[str, Any]) -> tuple[int, Any]:
        """``StartWorkflowExecution`` as JSON: the status and the answer, a refusal's included
        (an id already used answers 409 with the request id that started it)."""
        return self._exchange("POST", f"/workflows/{quote(workflow_id, safe='')}", request)

    def close_event(self, workflow_id: str, run_id: str, *, wait_s: float) -> dict[str, Any]:
        """The run's close event, waited for at most ``wait_s`` (a long poll of its history);
        ``HttpUnanswered`` when it has not closed by then."""
        params = {
            "execution.runId": run_id,
            "waitNewEvent": "true",
            "historyEventFilterType": "HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT",
        }
        path = f"/workflows/{quote(workflow_id, safe='')}/history?{urlencode(params)}"
        status, answer = self._exchange("GET", path, timeout_s=wait_s)
        events = answer.get("history", {}).get("events", []) if status == 200 else []
        if len(events) != 1:
            raise HttpUnanswered(f"HTTP {status}, no close event")
        event: dict[str, Any] = events[0]
        return event

    def polled(self, task_queue: str, task_queue_type: str) -> bool:
        """Whether the server lists any poller of ``task_queue`` (``TASK_QUEUE_TYPE_...``), however
        long ago it polled."""
        queue = quote(task_queue, safe="")
        described = self._call("GET", f"/task-queues/{queue}?taskQueueType={task_queue_type}")
        return bool(described.get("pollers"))

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


def payload_data(payloads: dict[str, Any] | None) -> bytes:
    """The bytes of the one plain JSON payload in ``payloads`` (the API's ``Payloads``);
    anything else (none, several, a payload kept in the payload store) is the SDK's to decode."""
    items = (payloads or {}).get("payloads", [])
    if len(items) != 1:
        raise HttpUnanswered("no single payload")
    (payload,) = items
    if _text(payload.get("metadata", {}).get("encoding")) != "json/plain":
        raise HttpUnanswered("not a plain JSON payload")
    return base64.b64decode(payload.get("data", ""))


def _text(encoded: str | None) -> str | None:
    return None if encoded is None else base64.b64decode(encoded).decode(errors="replace")


def _timestamp(text: str | None) -> datetime | None:
    """An RFC 3339 time; the zero time the API prints for an unset one is None."""
    if not text or text.startswith("0001-"):
        return None
    return datetime.fromisoformat(text)
