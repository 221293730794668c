"""Through the real ``temporal`` binary: regexes and JSON Schemas from input
cannot freeze the shared worker or wedge a run.

Each case asserts the harness's three things: the hostile run ends with its code (or the hostile
message is refused) within a bounded time, a probe ``Ask`` on the same worker completes within
10 s while it is processed, and the worker exits within 10 s of SIGTERM (``shared_worker``).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from temporalio.client import Client

from activities.config import Settings
from tests.hostile.harness import dumps, shared_worker
from workflows.campaign.types import CampaignResult
from workflows.names import CAMPAIGN, PLAN_RUN, SIGNAL_RESUME, UPDATE_RESUME
from workflows.plan.run_types import PlanRunResult

REDOS_VALUE = "a" * 26 + "!"  # ~40 s on Python's re against ^(a|a)*$; each extra "a" doubles it


def _id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _campaign(campaign_id: str, **fields: Any) -> dict[str, Any]:
    return {
        "schema": "ponder-campaign/1",
        "campaign_id": campaign_id,
        "commit_sha": "x",
        "seeds": [0],
        "variants": [{"id": "v", "kind": "single", "config": {"model": "sim:default"}}],
        "scenarios": [{"id": "s", "task": "t", "scorer": {"kind": "sim_truth"}}],
        **fields,
    }


def _pause_plan(schema: dict[str, Any]) -> dict[str, Any]:
    pause = {"state": "AWAITING_V", "resume_arg": "v", "schema": schema}
    return {
        "plan": {
            "schema": "ponder-plan/1",
            "name": "hostile-pause",
            "steps": [{"id": "v", "kind": "pause", "pause": pause}],
        }
    }


async def test_a_redos_scorer_from_start_input_scores_in_linear_time(
    client: Client, settings: Settings, server_address: str
) -> None:
    """Once, the cell-settling activity never returned on Python's ``re``.
    On RE2 the pattern is an ordinary one: the campaign completes, its cell scored 0."""
    run_id = _id("c-redos")
    scorer = {"kind": "regex", "pattern": "(?:.|.)*!NOPE"}
    doc = _campaign("redos", scenarios=[{"id": "s", "task": "t", "scorer": scorer}])
    async with shared_worker(client, settings, server_address) as worker:
        await worker.start(CAMPAIGN, run_id, dumps(doc))
        probe = asyncio.create_task(worker.probe())
        handle = client.get_workflow_handle(run_id, result_type=CampaignResult)
        result = await asyncio.wait_for(handle.result(), 90)
        await probe
        assert result.cells == 1 and result.failed_cells == 0


async def test_a_route_rule_runs_on_re2_and_a_broken_one_is_refused_at_start(
    client: Client, settings: Settings, server_address: str
) -> None:
    """``re:`` route rules went through the same ``re.search``: ``^http://(?:h|h)*$`` against a
    base URL of 30 h's and an x is ~2^30 steps there. On RE2 the route check answers at once
    (the URL is not blocked; the missing key is the route's refusal), and ``re:(`` is refused
    before the route check runs."""
    host = "http://" + "h" * 30 + "x.invalid/v1"
    variant = {"id": "v", "kind": "single", "config": {"model": "openai:gpt-x", "base_url": host}}
    routed = _campaign(
        "route", variants=[variant], route={"block": ["re:^http://(?:h|h)*$"], "require_auth": True}
    )
    broken = _campaign("route", route={"allow": ["re:("]})
    slow_id, broken_id = _id("c-route"), _id("c-route-bad")
    async with shared_worker(client, settings, server_address) as worker:
        await worker.start(CAMPAIGN, slow_id, dumps(routed))
        await worker.start(CAMPAIGN, broken_id, dumps(broken))
        await worker.probe()
        slow = await worker.failure(slow_id)
        assert slow.type == "route.no_auth", slow
        bad = await worker.failure(broken_id)
        assert bad.type == "route.pattern" and "route.allow[0]" in bad.message, bad


async def test_a_redos_pause_schema_refuses_the_value_in_linear_time(
    client: Client, settings: Settings, server_address: str
) -> None:
    """A pause ``schema`` with ``^(a|a)*$`` (accepted by ``ponder plan validate``), then ``update
    resume`` with 26 a's and ``!``: the worker froze for ~40 s. Now the update's validator
    refuses it at once (nothing enters history), the signal form records ``control.refused``,
    and a matching value still ends the run."""
    run_id = _id("p-redos")
    plan = _pause_plan({"type": "string", "pattern": "^(a|a)*$"})
    bad = dumps({"args": {"v": f'"{REDOS_VALUE}"'}})
    async with shared_worker(client, settings, server_address) as worker:
        await worker.start(PLAN_RUN, run_id, dumps(plan))
        code, output = await worker.update(run_id, UPDATE_RESUME, bad)
        assert code != 0 and "v must match ^(a|a)*$" in output, output
        await worker.signal(run_id, SIGNAL_RESUME, bad)
        await worker.probe()
        code, output = await worker.update(run_id, UPDATE_RESUME, dumps({"args": {"v": '"aaa"'}}))
        assert code == 0, output
        handle = client.get_workflow_handle(run_id, result_type=PlanRunResult)
        result = await asyncio.wait_for(handle.result(), 60)
        assert result.outputs["v"] == "aaa"


async def test_a_pause_schema_that_does_not_compile_is_refused_at_start(
    client: Client, settings: Settings, server_address: str
) -> None:
    """``"pattern": "("`` validated, then its ``resume_signal`` failed the workflow task forever
    ("missing )") and ``cancel`` could not end it. Now the run is refused as it starts, with the
    path to the pattern."""
    run_id = _id("p-paren")
    async with shared_worker(client, settings, server_address) as worker:
        await worker.start(PLAN_RUN, run_id, dumps(_pause_plan({"type": "string", "pattern": "("})))
        await worker.probe()
        error = await worker.failure(run_id)
        assert error.type == "plan-invalid", error
        assert "steps[0].pause.schema.pattern" in error.message and "RE2" in error.message
