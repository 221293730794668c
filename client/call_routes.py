"""Which task queue each provider's calls go to, decided once when a run starts.

``ponder worker --rate-limit P=N/s`` serves provider P on its own queue. A run sends P's calls
there only if its input says so (``calls.provider_queues``): routing is part of the run's history,
never a setting of whichever worker happens to run it. So the client that starts a run looks for
a worker polling each provider queue the run would use, and records the ones it finds.

A long-lived client (a script's ``Ponder``, the MCP server) starting runs in a burst asks once
per provider queue in ``ROUTES_FRESH_S``, so a start costs one RPC, not two (``RouteLookups``).

A session-served provider (``mcp:``, sampled from the host of a connected ``ponder mcp``) is
always routed to its session queue (``calls.session_queues``), whose name carries the secret of
this client's ponder home, and a start is refused (``mcp.no_session``) when no ``ponder mcp`` of
this home polls that queue: nothing could answer its calls.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from activities.errors import ConfigError
from activities.routes import POLLER_FRESH_S, queue_polled, session_secret
from workflows.call_options import (
    NO_SESSION,
    provider_of,
    provider_task_queue,
    session_task_queue,
)

if TYPE_CHECKING:
    from temporalio.client import Client

    from activities.config import Settings

__all__ = [
    "NO_SESSION",
    "POLLER_FRESH_S",
    "ROUTES_FRESH_S",
    "RouteLookups",
    "model_specs",
    "polled_provider_queues",
    "route_calls",
]

T = TypeVar("T")

ROUTES_FRESH_S = 2.0
"""How long a client reuses what it saw of a provider queue: short beside ``POLLER_FRESH_S``
(how long the server's poller list lags a worker that left), so reuse adds little to the lag."""


@dataclass
class RouteLookups:
    """Whether each provider queue was polled, as one client last asked (and when)."""

    fresh_s: float = ROUTES_FRESH_S
    seen: dict[str, tuple[float, bool]] = field(default_factory=dict)

    async def polled(self, client: Client, queue: str) -> bool:
        now = time.monotonic()
        asked, polled = self.seen.get(queue, (float("-inf"), False))
        if now - asked >= self.fresh_s:
            polled = await queue_polled(client, queue)
            self.seen[queue] = (now, polled)
        return polled


def _specs_in(value: Any) -> list[str]:
    """``provider:model`` specs anywhere in a JSON document: ``model`` values and the values of
    ``models`` and ``executors`` maps (plan steps, campaign variants)."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "model" and isinstance(item, str):
                found.append(item)
            elif key in ("models", "executors") and isinstance(item, dict):
                found += [v for v in item.values() if isinstance(v, str)]
            found += _specs_in(item)
    elif isinstance(value, list):
        found = [spec for item in value for spec in _specs_in(item)]
    return [spec for spec in found if ":" in spec]


def _is_a(value: Any, module: str, name: str) -> bool:
    """``isinstance(value, module.name)`` without importing ``module``: a value's class is loaded
    by the time the value is built, so a module this process never imported holds none of it."""
    found = getattr(sys.modules.get(module), name, None)
    return isinstance(found, type) and isinstance(value, found)


def model_specs(input: Any) -> list[str]:
    """Every model spec a run's input may call."""
    # Importing every run kind's types to rule them out would cost an Ask or a read such as
    # ``ponder status`` a few hundred ms (the tournament and plan types are large models).
    if _is_a(input, "workflows.ask_types", "AskInput"):
        return [input.model]
    if _is_a(input, "workflows.tournament.types", "TournamentInput"):
        roles = input.models.model_dump().values()
        return [input.model, *(spec for spec in roles if spec)]
    if _is_a(input, "workflows.plan.run_types", "PlanRunInput"):
        return [*input.executors.values(), *_specs_in(input.plan)]
    if isinstance(input, dict):  # a document sent as JSON (a campaign)
        return list(dict.fromkeys(_specs_in(input)))
    return []


async def polled_provider_queues(
    client: Client, task_queue: str, specs: list[str], lookups: RouteLookups | None = None
) -> dict[str, str]:
    """Provider name -> its rate-limited queue, for those a worker polls now (or, with
    ``lookups``, in the last ``ROUTES_FRESH_S``)."""
    lookups = lookups or RouteLookups()
    routes = {}
    for provider in sorted({provider_of(spec) for spec in specs}):
        queue = provider_task_queue(task_queue, provider)
        if await lookups.polled(client, queue):
            routes[provider] = queue
    return routes


async def session_queues(
    client: Client,
    task_queue: str,
    specs: list[str],
    settings: Settings,
    lookups: RouteLookups | None = None,
) -> dict[str, str]:
    """Session-served provider name -> its session queue; refused when nothing polls one."""
    from activities.providers.sampling import SESSION_KIND  # the providers load httpx

    lookups = lookups or RouteLookups()
    routes = {}
    for provider in sorted({provider_of(spec) for spec in specs}):
        endpoint = settings.providers.get(provider)
        if endpoint is None or endpoint.kind != SESSION_KIND:
            continue
        secret = session_secret(settings.home)
        queue = None if secret is None else session_task_queue(task_queue, provider, secret)
        if queue is None or not await lookups.polled(client, queue):
            raise ConfigError(
                NO_SESSION,
                f"{provider}: models are answered by the host of a connected MCP session "
                f"(sampling), and no `ponder mcp` of {settings.home} serves task queue "
                f"{task_queue}: start the run from an MCP client's tools (think, ask), or use "
                "another model",
            )
        routes[provider] = queue
    return routes


async def route_calls(
    client: Client,
    task_queue: str,
    input: T,
    lookups: RouteLookups | None = None,
    settings: Settings | None = None,
) -> T:
    """``input`` with ``calls.provider_queues`` (and, given ``settings``, the
    ``calls.session_queues`` its session-served models need) filled in; routes the input names
    win."""
    specs = model_specs(input)
    if not specs:
        return input
    found = await polled_provider_queues(client, task_queue, specs, lookups)
    sessions = (
        {}
        if settings is None
        else await session_queues(client, task_queue, specs, settings, lookups)
    )
    if not found and not sessions:
        return input
    if isinstance(input, dict):
        raw = dict(input.get("calls") or {})
        for key, routes in (("provider_queues", found), ("session_queues", sessions)):
            if routes:
                raw[key] = routes | dict(raw.get(key) or {})
        return {**input, "calls": raw}  # type: ignore[return-value]
    calls = getattr(input, "calls", None)
    if calls is None:
        return input
    routed = calls.model_copy(
        update={
            "provider_queues": found | calls.provider_queues,
            "session_queues": sessions | calls.session_queues,
        }
    )
    return input.model_copy(update={"calls": routed})  # type: ignore[attr-defined,no-any-return]
