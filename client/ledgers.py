"""Shared spend ledgers from the client's side: the draw a run's input carries, and the
``Ledger`` entity's view and extension (``ponder ledger``, ``client/ledger_cli.py``).

Input that draws on a ledger must carry its draw token (``workflows/ledger/types.py``): the CLI
and the Python client read it from the ledger's 0600 token file on their user's behalf, as they
read a source run's read token (``client/read_tokens.py``).
"""

from __future__ import annotations

import re
from contextvars import ContextVar
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from temporalio.client import Client

    from activities.config import Settings
    from workflows.ledger.types import LedgerView

__all__ = ["COMMAND_LEDGER", "attach_ledger", "extend_ledger", "ledger_view", "unknown_ledger"]

T = TypeVar("T")
COMMAND_LEDGER: ContextVar[str | None] = ContextVar("ponder_command_ledger", default=None)
"""The running command's ``--ledger NAME`` (``client.ledger_cli.ledger_option`` sets it)."""


def unknown_ledger(settings: Settings, name: str) -> Exception:
    from activities.errors import ConfigError
    from workflows.ledger.types import LEDGER_UNKNOWN

    declared = ", ".join(sorted(settings.ledgers)) or "none"
    return ConfigError(
        LEDGER_UNKNOWN,
        f"--ledger {name}: ponder.toml declares no [ledgers.{name}] (declared: {declared}): "
        "add it, as on the workers",
    )


def attach_ledger(input: T, settings: Settings, name: str | None = None) -> T:
    """``input`` (a workflow input model with ``calls``, or a JSON document) drawing on ledger
    ``name`` (default: the command's ``--ledger``), with its draw token."""
    if name is None:
        name = COMMAND_LEDGER.get()
    if name is None:
        return input
    from activities.errors import ConfigError
    from activities.ledger import draw_token, token_path
    from workflows.ledger.types import DRAW_TOKEN_PATTERN, LEDGER_TOKEN_REQUIRED

    if name not in settings.ledgers:
        raise unknown_ledger(settings, name)
    token = draw_token(settings, name)
    if not re.fullmatch(DRAW_TOKEN_PATTERN, token):
        raise ConfigError(
            LEDGER_TOKEN_REQUIRED,
            f"--ledger {name}: {token_path(settings, name)} does not hold a draw token (32 "
            "lower-case hex characters): copy the ledger's token file from a worker's machine",
        )
    draw = {"name": name, "token": token}
    if isinstance(input, dict):
        calls = dict(input.get("calls") or {})
        calls["ledger"] = draw
        return {**input, "calls": calls}  # type: ignore[return-value]
    calls_model = getattr(input, "calls", None)
    if calls_model is None:
        return input
    from workflows.ledger.types import LedgerDraw

    updated = calls_model.model_copy(update={"ledger": LedgerDraw.model_validate(draw)})
    return input.model_copy(update={"calls": updated})  # type: ignore[attr-defined,no-any-return]


async def ledger_view(client: Client, name: str) -> LedgerView | None:
    """What ledger ``name`` holds now; None if no run has drawn on it yet."""
    from temporalio.service import RPCError, RPCStatusCode

    from workflows.ledger.types import LedgerView, ledger_workflow_id
    from workflows.names import QUERY_LEDGER

    handle = client.get_workflow_handle(ledger_workflow_id(name))
    try:
        return await handle.query(QUERY_LEDGER, result_type=LedgerView)
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return None
        raise


async def extend_ledger(
    client: Client,
    settings: Settings,
    name: str,
    *,
    calls: str | None = None,
    tokens: str | None = None,
    usd: str | None = None,
) -> LedgerView:
    """Raise ledger ``name``'s limits (absolute, or ``+N`` on the current ones); the entity is
    started with ponder.toml's limits first if nothing drew on it yet."""
    from temporalio.client import WorkflowUpdateFailedError

    from activities.errors import ConfigError
    from activities.ledger import draw_token, ledger_start
    from client.budget_extend import new_limit
    from workflows.ledger.types import ExtendLedgerInput, LedgerView, token_digest
    from workflows.names import UPDATE_LEDGER_EXTEND

    config = settings.ledgers.get(name)
    if config is None:
        raise unknown_ledger(settings, name)
    current = await ledger_view(client, name)
    limits = current.limits if current is not None else config.limits()
    digest = token_digest(draw_token(settings, name))
    new = ExtendLedgerInput.model_validate(
        {
            "token_sha256": digest,
            "calls": new_limit("calls", calls, limits.calls, int),
            "tokens": new_limit("tokens", tokens, limits.tokens, int),
            "usd": new_limit("usd", usd, limits.usd, float),
        }
    )
    start = ledger_start(name, config, digest, settings.task_queue)
    try:
        view: LedgerView = await client.execute_update_with_start_workflow(
            UPDATE_LEDGER_EXTEND, new, start_workflow_operation=start, result_type=LedgerView
        )
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        raise ConfigError(
            "ledger.extend_refused",
            f"ledger {name}: extend refused: {getattr(cause, 'message', cause)}",
        ) from None
    return view
