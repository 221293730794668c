"""A CEL string literal that never closes, escapes and all, through the real ``temporal`` binary:
the exact input that froze every worker (cel-python's string regexes backtrack exponentially in
the escapes) ends ``plan-invalid`` within seconds, in a set value, an ensure and an
``iterate.until``, with each quote style, and a campaign whose plan variant holds one ends
``variant.config``; a probe Ask completes meanwhile, and the worker exits within 10 s of
SIGTERM (``shared_worker``)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from activities.config import Settings
from tests.hostile.harness import dumps, shared_worker
from workflows.names import CAMPAIGN, PLAN_RUN

ESCAPES = "\\a" * 32  # 24 escapes took 25 s on the unchanged lexer; 32 never returned


def _plan(name: str, step: dict[str, Any]) -> dict[str, Any]:
    return {"plan": {"schema": "ponder-plan/1", "name": name, "steps": [step]}}


def _set(literal: str) -> dict[str, Any]:
    return {"id": "v", "kind": "set", "set": {"v": literal}}


def _agent(**checks: Any) -> dict[str, Any]:
    return {"id": "a", "kind": "agent", "prompt": "go", "model": "sim:default", **checks}


PLANS = {
    "lex-dq": _plan("lex", _set('"' + ESCAPES)),  # a lexer that once ran away
    "lex-sq": _plan("lex", _set("'" + ESCAPES)),
    "lex-raw": _plan("lex", _set('r"' + ESCAPES)),
    "lex-bytes": _plan("lex", _set('b"' + ESCAPES)),
    "lex-triple": _plan("lex", _set('"""' + ESCAPES)),
    "lex-ensure": _plan("lex", _agent(ensure=[{"expr": 'result == "' + ESCAPES}])),
    "lex-until": _plan("lex", _agent(iterate={"max": 2, "until": "'" + ESCAPES})),
}


def _campaign() -> dict[str, Any]:
    plan = _plan("lex-variant", _set('"' + "\\a" * 21))["plan"]
    return {
        "schema": "ponder-campaign/1",
        "campaign_id": "lex",
        "commit_sha": "x",
        "seeds": [0],
        "variants": [
            {"id": "single", "kind": "single", "config": {"model": "sim:default"}},
            {"id": "plan", "kind": "plan", "config": {"plan": plan}},
        ],
        "scenarios": [{"id": "s", "task": "t", "scorer": {"kind": "sim_truth"}}],
    }


async def test_an_unclosed_literal_with_escapes_is_refused_at_once(
    client: Client, settings: Settings, server_address: str
) -> None:
    async with shared_worker(client, settings, server_address) as worker:
        began = time.monotonic()
        for run_id, run_input in PLANS.items():
            await worker.start(PLAN_RUN, run_id, dumps(run_input))
        await worker.start(CAMPAIGN, "lex-campaign", dumps(_campaign()))
        await worker.probe()
        errors = await asyncio.gather(*(worker.failure(run_id, within=20) for run_id in PLANS))
        for run_id, error in zip(PLANS, errors, strict=True):
            assert error.type == "plan-invalid", (run_id, error)
            assert "[expr.syntax]" in error.message, (run_id, error.message)
            assert "is not closed" in error.message, (run_id, error.message)
        campaign = await worker.failure("lex-campaign", within=20)
        assert campaign.type == "variant.config", campaign
        assert "is not closed" in campaign.message
        assert time.monotonic() - began < 30
        history = await worker.handle("lex-dq").fetch_history()
        kinds = {event.event_type for event in history.events}
        assert EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED not in kinds  # failed once, coded
        assert EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED not in kinds
        await worker.probe()
