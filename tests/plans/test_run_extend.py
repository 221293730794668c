"""Every limit that can pause a plan run can be extended: calls, wall clock, tokens and USD,
from ``ponder extend`` / ``ponder plan extend`` (absolute or ``+N``), the ``temporal`` binary
(update and signal forms) and the ledger underneath. MCP is in ``tests/mcp/test_plans.py``."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.client import Client

from activities.config import Settings
from activities.errors import ConfigError
from client.plan_display import blocking_limit
from client.plan_extend import plan_limits
from client.session import wait_for_worker
from tests.cli import cli_env, ponder, start_ponder
from tests.plans.run_helpers import agent, plan_doc, start, status, wait_state
from tests.plans.test_run_control import temporal
from worker.worker import WorkerOptions, running_worker
from workflows.model_types import Price
from workflows.names import SIGNAL_EXTEND_BUDGET, UPDATE_EXTEND_BUDGET
from workflows.plan.boundaries import Reservation, plan_totals
from workflows.plan.ledger import PlanLedger
from workflows.plan.reasons import Reason
from workflows.plan.run_types import PlanBudgetOverride, PlanBudgetStatus, PlanRunResult
from workflows.plan.validate import load_plan

pytestmark = pytest.mark.slow  # started first: see tests/conftest.py

THREE = plan_doc(agent("a", "One."), agent("b", "Two.", deps=["a"]), agent("c", "Three."))
PRICED = {"sim:default": Price(input=1000.0, output=1000.0)}  # a sim call costs about $0.1


def spent_ledger(*, tokens: int | None = None, usd: float | None = None) -> PlanLedger:
    ledger = PlanLedger.start(plan_totals(load_plan(THREE)), tokens=tokens, usd=usd)
    ledger.open("a", Reservation(1, 1000))
    ledger.spend("a")
    ledger.budget.settle(input_tokens=60, output_tokens=40, usd=0.25, transport_retries=0)
    ledger.close()
    return ledger


def test_the_ledger_extends_tokens_and_usd_above_what_is_spent() -> None:
    ledger = spent_ledger(tokens=50, usd=0.1)
    assert ledger.need("b", Reservation(1, 1000)) is not None
    reason, why = ledger.extend(calls=None, wall_ms=None, tokens=100)
    assert reason == Reason.EXTENSION_BELOW_SPENT and "give more than 100" in why
    reason, why = ledger.extend(calls=None, wall_ms=None, usd=0.25)
    assert reason == Reason.EXTENSION_BELOW_SPENT and "0.25" in why
    reason, why = ledger.extend(calls=None, wall_ms=None, tokens=1_000, usd=2.0)
    assert reason is None and why.endswith("tokens=1000, usd=2")
    assert ledger.need("b", Reservation(1, 1000)) is None


def test_ponder_extend_flags_are_absolute_or_added() -> None:
    current = PlanBudgetStatus(
        calls_limit=3, calls_spent=1, calls_left=2, calls_cap=6, wall_limit_ms=1000,
        wall_spent_ms=10, wall_cap_ms=2000, tokens_limit=50, usd_limit=0.5,
    )  # fmt: skip
    new = plan_limits(current, calls="+2", wall_ms="1500", tokens="+100", usd="+0.25")
    assert (new.calls, new.wall_ms, new.tokens, new.usd) == (5, 1500, 150, 0.75)
    assert plan_limits(current, tokens="400").model_dump(exclude_none=True) == {"tokens": 400}
    with pytest.raises(ConfigError, match="one token limit, input and output together"):
        plan_limits(current, input_tokens="+5")
    with pytest.raises(ConfigError, match="--usd 'lots' is not a number"):
        plan_limits(current, usd="lots")
    with pytest.raises(ConfigError, match="tokens: Input should be less than or equal"):
        plan_limits(current, tokens=str(10**13))
    assert blocking_limit(current) is None
    spent = current.model_copy(update={"input_tokens": 30, "output_tokens": 20})
    assert blocking_limit(spent) == "tokens"
    assert blocking_limit(current.model_copy(update={"usd": 0.5})) == "usd"


@pytest.fixture
async def priced_queue(client: Client, settings: Settings) -> AsyncIterator[str]:
    queue = f"test-{uuid.uuid4()}"
    priced = settings.model_copy(update={"prices": PRICED})
    async with running_worker(client, priced, WorkerOptions(task_queue=queue)):
        yield queue


async def test_token_and_usd_pauses_continue_through_the_temporal_binary(
    client: Client, server_address: str, priced_queue: str
) -> None:
    budget = PlanBudgetOverride(tokens=10, usd=1000.0)
    handle = await start(client, priced_queue, THREE, budget=budget)
    paused = await wait_state(handle, "awaiting_budget")
    assert paused.budget is not None and "raise the token limit" in (paused.budget.need or "")
    update = ["workflow", "update", "execute", "--workflow-id", handle.id]
    code, output = await temporal(
        server_address, *update, "--name", UPDATE_EXTEND_BUDGET, "--input", '{"tokens": 10}'
    )
    assert code != 0 and "extension-below-spent" in output, output
    signal = ["workflow", "signal", "--workflow-id", handle.id, "--name", SIGNAL_EXTEND_BUDGET]
    code, output = await temporal(server_address, *signal, "--input", '{"tokens": 1000000}')
    assert code == 0, output
    result: PlanRunResult = await handle.result()
    assert result.calls == 3

    handle = await start(client, priced_queue, THREE, budget=PlanBudgetOverride(usd=0.01))
    paused = await wait_state(handle, "awaiting_budget")
    assert paused.budget is not None and "raise the USD limit" in (paused.budget.need or "")
    code, output = await temporal(
        server_address, *update[:-1], handle.id, "--name", UPDATE_EXTEND_BUDGET,
        "--input", '{"usd": 100}',
    )  # fmt: skip
    assert code == 0, output
    result = await handle.result()
    assert result.calls == 3 and result.usd > 0.01
    assert (await status(handle)).budget.usd_limit == 100  # type: ignore[union-attr]


@pytest.fixture
async def env(client: Client, tmp_path: Path, server_address: str) -> AsyncIterator[dict[str, str]]:
    """A priced ``ponder worker`` process on its own queue; the CLI is a client."""
    (tmp_path / "ponder.toml").write_text('[prices."sim:default"]\ninput = 1000\noutput = 1000\n')
    queue = f"cli-{uuid.uuid4().hex[:8]}"
    environment = cli_env(tmp_path, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE=queue)
    worker = await start_ponder("worker", env=environment)
    try:
        await wait_for_worker(client, queue, 60)
        yield environment
    finally:
        worker.terminate()
        await worker.wait()


async def test_ponder_extend_continues_token_and_usd_pauses(
    env: dict[str, str], tmp_path: Path
) -> None:
    plan = tmp_path / "three.json"
    plan.write_text(json.dumps(THREE))
    paused = await ponder(
        "plan", "run", str(plan), "--budget", "tokens=10", "--run-id", "cli-tokens", env=env
    )
    assert paused.code == 75, paused.err
    assert "continue with: ponder extend cli-tokens --tokens +" in paused.err
    split = await ponder("extend", "cli-tokens", "--input-tokens", "+5", env=env)
    assert split.code == 2 and "extend it with --tokens N (or +N)" in split.err
    done = await ponder("plan", "extend", "cli-tokens", "--tokens", "+1000000", "--follow", env=env)
    assert done.code == 0, done.err
    assert "run cli-tokens completed: 3 calls" in done.err

    paused = await ponder(
        "plan", "run", str(plan), "--budget", "usd=0.01", "--run-id", "cli-usd", env=env
    )
    assert paused.code == 75, paused.err
    assert "continue with: ponder extend cli-usd --usd +" in paused.err
    done = await ponder("extend", "cli-usd", "--usd", "+100", "--follow", env=env)
    assert done.code == 0, done.err
    assert "run cli-usd completed: 3 calls" in done.err
