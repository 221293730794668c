"""Preflight refuses a tournament whose history would outgrow Temporal's limits."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client

from tests.cli import cli_env, ponder_here
from tests.test_inputs import refusal, temporal_start
from tests.tournament.helpers import start
from workflows.names import TOURNAMENT
from workflows.tournament.errors import TournamentError
from workflows.tournament.preflight import (
    HISTORY_BYTES_BUDGET,
    HISTORY_EVENTS_BUDGET,
    TEMPORAL_HISTORY_EVENTS,
    check_history_size,
    estimate_history,
)
from workflows.tournament.profiles import BUILTIN_PROFILES, Profile, plan


def test_the_budget_is_half_of_temporals_event_limit() -> None:
    assert HISTORY_EVENTS_BUDGET * 2 == TEMPORAL_HISTORY_EVENTS


@pytest.mark.parametrize("name", list(BUILTIN_PROFILES))
def test_builtin_profiles_fit_even_with_judge_retries(name: str) -> None:
    tournament = plan(BUILTIN_PROFILES[name], finalizer=True, invalid_json_retries=3)
    check_history_size(tournament)


def test_the_estimate_is_above_what_a_paper_run_measured() -> None:
    # A paper run made 1,182 events for 285 calls, and with 20 KB candidates stays under 2 MB
    # (test_history_and_report); the estimate must not be below either, nor refuse it.
    estimate = estimate_history(plan(BUILTIN_PROFILES["paper"]))
    assert 1_182 < estimate.events < HISTORY_EVENTS_BUDGET
    assert 2_000_000 < estimate.bytes < HISTORY_BYTES_BUDGET


def test_ten_thousand_candidates_are_refused_with_the_limit_and_the_fix() -> None:
    quick = BUILTIN_PROFILES["quick"]
    huge = Profile.model_validate(quick.model_dump() | {"n": 2000, "m": 2})
    with pytest.raises(TournamentError) as info:
        check_history_size(plan(huge))
    error = info.value
    assert error.code == "profile.too_large"
    assert "over 25,000 (half of Temporal's 50,000-event limit)" in error.message
    assert "pick a smaller profile" in error.message


def test_every_judge_call_of_a_pair_counts_towards_the_plan_and_the_estimate() -> None:
    paper = BUILTIN_PROFILES["paper"]
    one = plan(paper)
    both = plan(paper, calls_per_pair=2)
    judging = 3 * 40 + 100  # pairs: three generations of 20*4/2, then 20*10/2
    assert both.planned_calls == one.planned_calls + judging
    assert both.retry_headroom == 2 * one.retry_headroom
    # Nine judges in both orders: 18 calls a pair makes the paper profile too big to run.
    check_history_size(plan(paper, calls_per_pair=2))
    with pytest.raises(TournamentError, match="history events"):
        check_history_size(plan(paper, calls_per_pair=18))
    with pytest.raises(ValueError, match="calls_per_pair"):
        plan(paper, calls_per_pair=0)


def test_judge_retries_count_towards_the_estimate() -> None:
    big = Profile(n=100, k=4, t=3, m=10)
    check_history_size(plan(big, invalid_json_retries=1))
    with pytest.raises(TournamentError, match="invalid_json_retries"):
        check_history_size(plan(big, invalid_json_retries=10))


async def test_a_too_large_run_from_the_temporal_cli_fails_at_once(
    client: Client, server_address: str, worker_queue: str
) -> None:
    workflow_id = f"t-large-{uuid.uuid4().hex[:8]}"
    raw = json.dumps({"task": "x", "custom": {"n": 2000, "k": 2, "t": 1, "m": 2}})
    await temporal_start(server_address, worker_queue, TOURNAMENT, workflow_id, raw)
    # A domain refusal writes the run directory first (one activity), nothing else; the first
    # workflow task also records the run's one patch marker and its search-attribute upsert
    # (``CURRENT_PATCH``: one for all; 21 events when each patch was asked on its own).
    error = await refusal(client, workflow_id, max_events=13)
    assert error.type == "profile.too_large"


def test_think_refuses_a_too_large_run_before_anything_starts(tmp_path: Path) -> None:
    done = ponder_here(
        "think", "x", "--n", "300", "--t", "3", "--k", "4", "--m", "10", "--dry-run",
        env=cli_env(tmp_path),
    )  # fmt: skip
    assert done.code == 2, done.err
    assert "profile.too_large" in done.err
    assert len(done.err.strip().splitlines()) == 1
    absurd = ponder_here("think", "x", "--n", "10000", "--dry-run", env=cli_env(tmp_path))
    assert absurd.code == 2, absurd.err
    assert "less than or equal to 2000" in absurd.err


ONE_AT_A_TIME = {"generate": 1, "judge": 1, "mutate": 1}


@pytest.mark.parametrize(
    ("profile", "fields"),
    [
        ("quick", {"concurrency": ONE_AT_A_TIME, "invalid_json_retries": 0}),
        (
            "quick",
            {"concurrency": ONE_AT_A_TIME, "invalid_json_retries": 0, "schedule": "adaptive"},
        ),
        ("balanced", {}),
    ],
)
async def test_the_estimate_bounds_a_real_runs_history(
    client: Client, worker_queue: str, profile: str, fields: dict
) -> None:
    # Concurrency 1 is the worst case: every answer comes back in its own workflow task (a
    # paper run so measured 1,758 events against an estimate of 1,818).
    handle = await start(client, worker_queue, profile=profile, seed=3, **fields)
    await handle.result()
    events = len((await handle.fetch_history()).events)
    retries = fields.get("invalid_json_retries", 1)
    estimate = estimate_history(plan(BUILTIN_PROFILES[profile], invalid_json_retries=retries))
    assert events <= estimate.events
