"""A run waiting for its shared ledger is told to raise the ledger, not its own limit: the CLI's
continue line and the MCP tools' ``next`` for a tournament, a plan and a campaign."""

from __future__ import annotations

import pytest

from client.hints import ledger_extend, ledger_wait_hint
from client.mcp.campaigns import progress_view
from client.mcp.plans import status_view
from client.plan_display import continue_command
from client.tournament_display import resume_command
from workflows.budget import BudgetLimits, BudgetSpent
from workflows.campaign.progress import CampaignProgress
from workflows.ledger.types import ledger_wait, waiting_ledger
from workflows.plan.status import PlanBudgetStatus, PlanStatus
from workflows.tournament.progress import Progress


@pytest.mark.parametrize(
    ("blocking", "ledger"),
    [
        (ledger_wait("team", "calls"), "team"),
        (ledger_wait("eu-2", "usd limit of its period reached"), "eu-2"),
        ("ledger team: tokens", "team"),
        ("max_calls", None),
        ("ledgers: calls", None),
        ("ledger : calls", None),
        ("", None),
        (None, None),
    ],
)
def test_the_waiting_ledger_is_read_back_from_its_text(
    blocking: str | None, ledger: str | None
) -> None:
    assert waiting_ledger(blocking) == ledger
    assert ledger_extend(blocking) == (None if ledger is None else f"ponder ledger extend {ledger}")


def _tournament(blocking: str) -> Progress:
    return Progress(
        run_id="t-1",
        status="awaiting_budget",
        phase="judging",
        generation=1,
        calls_planned=20,
        budget=BudgetLimits(max_calls=20),
        spent=BudgetSpent(calls=8),
        blocking_limit=blocking,
    )


def test_a_tournament_waiting_for_its_ledger_is_continued_by_ledger_extend() -> None:
    assert resume_command("t-1", _tournament("ledger team: calls")) == "ponder ledger extend team"
    # Its own limit: its own extend, as before (12 calls left and a tenth for retries).
    assert resume_command("t-1", _tournament("max_calls")) == "ponder extend t-1 --calls +14"


def _plan(need: str | None) -> PlanStatus:
    budget = PlanBudgetStatus(
        calls_limit=10,
        calls_spent=4,
        calls_left=6,
        calls_cap=10,
        need=need,
        wall_limit_ms=0,
        wall_spent_ms=0,
        wall_cap_ms=0,
    )
    return PlanStatus(run_id="p-1", plan="p", state="awaiting_budget", budget=budget)


def test_a_plan_waiting_for_its_ledger_is_continued_by_ledger_extend() -> None:
    waiting = _plan(ledger_wait("team", "calls limit of its period reached"))
    assert continue_command(waiting) == "ponder ledger extend team"
    assert "ponder ledger extend team" in status_view(waiting)["next"]
    assert continue_command(_plan(None)) == "ponder extend p-1 --calls 10"
    assert "call extend with run_id 'p-1'" in status_view(_plan(None))["next"]


def test_mcp_tells_a_campaign_waiting_for_its_ledger_to_raise_the_ledger() -> None:
    waiting = CampaignProgress(
        run_id="c-1",
        status="awaiting_budget",
        cells_total=4,
        cells_done=1,
        cells_running=0,
        cells_failed=0,
        budget=BudgetLimits(max_calls=10),
        spent=BudgetSpent(calls=3),
        blocking_limit=ledger_wait("team", "usd"),
    )
    assert progress_view(waiting)["next"] == ledger_wait_hint("ledger team: usd")
    assert "`ponder ledger extend team`" in progress_view(waiting)["next"]
    own = waiting.model_copy(update={"blocking_limit": "max_usd"})
    assert progress_view(own)["next"].startswith("call extend with run_id 'c-1'")
