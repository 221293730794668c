"""Gate escalation notifiers (docs/plans.md, "Gate deadlines and escalation"): the worker's
``[notifiers.NAME]``.

A plan's ``escalate.notify`` names a notifier; the worker declares what the name means
(``kind = "webhook"``, ``url`` or ``url_env``), so whoever starts a run cannot make the worker
post anywhere it did not choose. Two activities:

- ``plan_check_notifiers`` (preflight): the names this worker does not declare
  (``escalation-unroutable``);
- ``plan_notify_gate``: one JSON post ``{run_id, step, deadline_at, command}``, bounded in size,
  with the notifier's own timeout, no redirects followed and the response body never read. It
  carries no gate token. A failure names the notifier and the HTTP status or error class only:
  a webhook URL is often a secret, so it never reaches an error, an event or a log.
"""

from __future__ import annotations

import json

import httpx
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.config import Notifier
from activities.errors import ConfigError
from workflows.plan.activity_contracts import (
    CHECK_NOTIFIERS,
    NOTIFY_GATE,
    NOTIFY_NOT_RETRYABLE,
    NOTIFY_REFUSED,
    NOTIFY_UNKNOWN,
)
from workflows.plan.run_types import CheckNotifiersInput, NotifyGateInput

__all__ = [
    "CHECK_NOTIFIERS",
    "MAX_NOTIFY_BODY",
    "NOTIFY_GATE",
    "NOTIFY_NOT_RETRYABLE",
    "NotifierActivities",
]

MAX_NOTIFY_BODY = 4096
"""Bytes of one escalation post (a run id, a step id, a time and a command: far less)."""


class NotifierActivities:
    def __init__(self, notifiers: dict[str, Notifier], http: httpx.AsyncClient) -> None:
        self.notifiers = notifiers
        self.http = http

    @activity.defn(name=CHECK_NOTIFIERS)
    async def check_notifiers(self, input: CheckNotifiersInput) -> list[str]:
        return sorted({name for name in input.names if name not in self.notifiers})

    @activity.defn(name=NOTIFY_GATE)
    async def notify_gate(self, input: NotifyGateInput) -> int:
        """Post the escalation; returns the HTTP status (2xx), else raises ApplicationError."""
        notifier = self.notifiers.get(input.notifier)
        if notifier is None:
            raise ApplicationError(
                f"notifier {input.notifier!r} is not declared on this worker",
                type=NOTIFY_UNKNOWN,
                non_retryable=True,
            )
        try:
            url = notifier.resolved_url()
        except ConfigError as exc:
            raise ApplicationError(
                f"notifier {input.notifier!r}: {exc.message}",
                type=NOTIFY_UNKNOWN,
                non_retryable=True,
            ) from None
        body = json.dumps(
            {
                "run_id": input.run_id,
                "step": input.step,
                "deadline_at": input.deadline_at,
                "command": input.command,
            }
        ).encode()
        if len(body) > MAX_NOTIFY_BODY:
            raise ApplicationError(
                f"notifier {input.notifier!r}: the post is {len(body)} bytes, over "
                f"{MAX_NOTIFY_BODY}",
                type=NOTIFY_REFUSED,
                non_retryable=True,
            )
        try:
            async with self.http.stream(
                "POST",
                url,
                content=body,
                headers={"content-type": "application/json"},
                timeout=notifier.timeout_s,
                follow_redirects=False,
            ) as response:
                status = response.status_code
        except httpx.HTTPError as exc:
            # The class only: an httpx message may quote the URL.
            raise ApplicationError(
                f"notifier {input.notifier!r}: {type(exc).__name__}", type="notify.transport"
            ) from None
        if 200 <= status < 300:
            return status
        final = status < 500 and status != 429  # a redirect or 4xx answers the same again
        raise ApplicationError(
            f"notifier {input.notifier!r} answered HTTP {status}",
            type=NOTIFY_REFUSED if final else "notify.http",
            non_retryable=final,
        )
