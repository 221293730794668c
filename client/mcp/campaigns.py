"""The ``campaign_run`` tool, and a campaign's status, outcome and budget extension.

The document is given as text (YAML or JSON) and validated as ``ponder campaign validate``
does. A plan variant must carry its plan inline: over MCP the caller is elsewhere, so the
server never reads a file a document names (the CLI inlines ``plan: PATH`` on its own machine).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from temporalio.client import (
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.service import RPCError

from activities.errors import ConfigError
from activities.providers import default_model_for
from client.hints import ledger_wait_hint
from client.ledgers import attach_ledger
from client.mcp.args import CampaignRunArgs
from client.mcp.backend import Backend
from client.profiles import expand_saved_profiles
from client.runs import failure_view, new_run_id, start_run
from workflows.campaign.configs import config_errors
from workflows.campaign.document import validate_value
from workflows.campaign.errors import CampaignInvalid
from workflows.campaign.types import CampaignProgress, CampaignResult
from workflows.names import CAMPAIGN, QUERY_PROGRESS, UPDATE_EXTEND_BUDGET
from workflows.plan.document import parse_text
from workflows.run_ids import check_run_id
from workflows.tournament.types import ExtendBudgetInput, ExtendBudgetResult

__all__ = ["campaign_run", "extend", "outcome", "progress_view"]

POLL_S = 0.5


def _handle(backend: Backend, run_id: str) -> WorkflowHandle:
    return backend.client.get_workflow_handle(check_run_id(run_id), result_type=CampaignResult)


def progress_view(p: CampaignProgress) -> dict[str, Any]:
    view: dict[str, Any] = {
        "run_id": p.run_id,
        "kind": "campaign",
        "status": p.status,
        "cells": {
            "total": p.cells_total,
            "done": p.cells_done,
            "running": p.cells_running,
            "failed": p.cells_failed,
        },
        "calls": p.spent.calls,
        "usd": p.spent.usd,
        "budget": p.budget.model_dump(exclude_none=True),
        "leader": p.leader,
        "leader_mean": p.leader_mean,
    }
    if p.error:
        view["error"] = p.error
    if p.status == "awaiting_budget":
        view["next"] = ledger_wait_hint(p.blocking_limit) or (
            f"call extend with run_id {p.run_id!r} and a higher {p.blocking_limit}; "
            "the campaign continues where it stopped"
        )
    return view


async def _progress(handle: WorkflowHandle) -> CampaignProgress | None:
    with contextlib.suppress(RPCError):
        progress: CampaignProgress = await handle.query(
            QUERY_PROGRESS, result_type=CampaignProgress
        )
        return progress
    return None


async def outcome(backend: Backend, run_id: str, *, wait_s: float, progress: Any) -> dict[str, Any]:
    """The campaign's decision if it ended (waiting up to ``wait_s``), else its progress."""
    handle = _handle(backend, run_id)
    deadline = time.monotonic() + wait_s
    result = asyncio.ensure_future(handle.result())
    closed = (await handle.describe()).status != WorkflowExecutionStatus.RUNNING
    ended = False
    try:
        while not closed and not result.done():
            live = await _progress(handle)
            if live is not None:
                if progress is not None:
                    await progress(
                        float(live.cells_done),
                        float(live.cells_total) or None,
                        f"cells {live.cells_done}/{live.cells_total}, {live.spent.calls} calls",
                    )
                paused = live.status == "awaiting_budget" and live.cells_running == 0
                if paused or time.monotonic() >= deadline:
                    return progress_view(live)
            elif time.monotonic() >= deadline:
                return {"run_id": run_id, "kind": "campaign", "status": "running"}
            await asyncio.wait({result}, timeout=POLL_S)
        ended = True
    finally:
        if not ended:
            result.cancel()
    try:
        done: CampaignResult = await result
    except WorkflowFailureError as exc:
        return {"run_id": run_id, "kind": "campaign", **failure_view(exc)}
    return {
        "kind": "campaign",
        **done.model_dump(mode="json"),
        "report": f"{done.run_dir}/report.html",
    }


async def campaign_run(backend: Backend, args: CampaignRunArgs, progress: Any) -> dict[str, Any]:
    value, problems = parse_text(args.document, filename=args.filename)
    if problems:
        lines = [f"{p.path or '(document)'}: [{p.code}] {p.message}" for p in problems]
        raise ConfigError(problems[0].code, "; ".join(lines), fix="fix the document's syntax")
    variants = value.get("variants") if isinstance(value, dict) else None
    for i, variant in enumerate(variants if isinstance(variants, list) else []):
        config = variant.get("config") if isinstance(variant, dict) else None
        if isinstance(config, dict) and isinstance(config.get("plan"), str):
            raise ConfigError(
                "document.plan_path",
                f"variants[{i}].config.plan names a file, which this server does not read",
                fix="put the plan document itself (an object) under config.plan",
            )
    settings = backend.settings
    for path, exc in expand_saved_profiles(
        value, settings.home, lambda p: default_model_for(p, settings)
    ):
        raise ConfigError(exc.code, f"{path}: {exc.message}", fix="fix the saved profile it names")
    checked = validate_value(value)
    if checked.document is not None and not checked.errors:
        checked.errors += config_errors(checked.document)
    if checked.document is None or checked.errors:
        raise CampaignInvalid(checked.errors)
    run_id = check_run_id(args.run_id or new_run_id("campaign"))
    payload = attach_ledger(
        checked.document.model_dump(mode="json", by_alias=True), backend.settings, args.ledger
    )
    await backend.ensure_worker()
    await start_run(backend.session, CAMPAIGN, payload, run_id, CampaignResult)
    if not args.wait:
        return {
            "run_id": run_id,
            "kind": "campaign",
            "status": "running",
            "next": f"call result with run_id {run_id!r} (wait: true to block)",
        }
    return await outcome(backend, run_id, wait_s=args.timeout_s, progress=progress)


async def extend(
    backend: Backend, run_id: str, limits: dict[str, Any], *, wait: bool, wait_s: float,
    progress: Any,
) -> dict[str, Any]:  # fmt: skip
    handle = _handle(backend, run_id)
    await backend.ensure_worker()
    try:
        done = await handle.execute_update(
            UPDATE_EXTEND_BUDGET, ExtendBudgetInput(**limits), result_type=ExtendBudgetResult
        )
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        raise ConfigError(
            "budget.extend_refused",
            str(getattr(cause, "message", cause)),
            fix="give limits above what the campaign has already spent (see the status tool)",
        ) from None
    view = {"run_id": run_id, "budget": done.budget.model_dump(exclude_none=True)}
    if not wait:
        return {**view, "kind": "campaign", "status": "running"}
    return {**view, **await outcome(backend, run_id, wait_s=wait_s, progress=progress)}
