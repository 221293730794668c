"""Profiles, rank blocks and the dry-run plan."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workflows.tournament.errors import TournamentError
from workflows.tournament.profiles import (
    BUILTIN_PROFILES,
    Profile,
    RankBlock,
    check_planned_calls,
    elite_count,
    get_profile,
    mutant_count,
    plan,
    profile_name,
)


@contextmanager
def refused(code: str, *fragments: str) -> Iterator[None]:
    """Expect a TournamentError with ``code`` whose message holds every fragment."""
    with pytest.raises(TournamentError) as info:
        yield
    assert info.value.code == code, info.value
    for fragment in fragments:
        assert fragment in info.value.message, (fragment, info.value.message)


@pytest.mark.parametrize(
    ("name", "shape", "calls", "rounds"),
    [
        ("quick", (4, 2, 1, 2), 15, 4),
        ("balanced", (8, 3, 2, 4), 60, 6),
        ("paper", (20, 4, 3, 10), 285, 8),
    ],
)
def test_builtin_profiles_match_the_spec_table(
    name: str, shape: tuple[int, int, int, int], calls: int, rounds: int
) -> None:
    p = get_profile(name)
    assert (p.n, p.k, p.t, p.m) == shape
    assert (p.lambda_, p.generate_temperature, p.mutate_temperature, p.judge_temperature) == (
        0.01,
        1.0,
        1.0,
        0.0,
    )
    dry = plan(p)
    assert dry.calls == dry.planned_calls == calls
    assert sum(phase.calls for phase in dry.phases) == calls
    assert dry.sequential_rounds == rounds
    assert profile_name(p) == name


def test_custom_profile_defaults() -> None:
    p = Profile(n=6, k=2, t=1, m=3)
    assert (p.lambda_, p.generate_temperature, p.mutate_temperature, p.judge_temperature) == (
        0.01,
        0.8,
        0.6,
        0.0,
    )
    assert profile_name(p) is None
    assert p.check() is p


def test_lambda_travels_as_lambda_in_json() -> None:
    data = json.loads(BUILTIN_PROFILES["quick"].model_dump_json())
    assert data["lambda"] == 0.01 and "lambda_" not in data
    assert Profile.model_validate(data) == BUILTIN_PROFILES["quick"]
    assert Profile.model_validate({"n": 4, "k": 2, "t": 0, "m": 2, "lambda_": 0.5}).lambda_ == 0.5


def test_plan_phases_retries_and_worst_case() -> None:
    dry = plan(get_profile("paper"), finalizer=True, invalid_json_retries=2, usd_per_call=0.01)
    assert [(p.phase, p.calls) for p in dry.phases] == [
        ("initial_generation", 20),
        ("generation_judging:1", 40),
        ("generation_mutation:1", 15),
        ("generation_judging:2", 40),
        ("generation_mutation:2", 15),
        ("generation_judging:3", 40),
        ("generation_mutation:3", 15),
        ("final_judging", 100),
        ("finalizing", 1),
    ]
    assert (dry.calls, dry.finalizer_calls, dry.planned_calls) == (285, 1, 286)
    assert dry.retry_headroom == (3 * 40 + 100) * 2
    assert dry.worst_case_calls == 286 + 440
    assert dry.estimated_usd == pytest.approx(2.86)
    assert dry.worst_case_usd == pytest.approx(7.26)
    assert dry.warning is not None and "286" in dry.warning


def test_plan_warns_at_100_calls_only() -> None:
    assert plan(get_profile("balanced")).warning is None
    assert plan(get_profile("quick")).estimated_usd is None
    p = Profile(n=10, k=2, t=2, m=8)
    assert plan(p).calls == 10 + 2 * (10 + 7) + 40 == 84
    assert plan(p).warning is None
    p = Profile(n=10, k=4, t=2, m=8)
    assert plan(p).calls == 10 + 2 * (20 + 7) + 40 == 104
    assert plan(p).warning is not None


def test_t_zero_is_legal() -> None:
    dry = plan(Profile(n=4, k=2, t=0, m=2))
    assert (dry.calls, dry.sequential_rounds) == (4 + 4, 2)


@given(
    n=st.integers(2, 64),
    k=st.integers(1, 63),
    t=st.integers(0, 5),
    m=st.integers(1, 63),
    retries=st.integers(0, 3),
)
@settings(derandomize=True, deadline=None, max_examples=150)
def test_plan_formula(n: int, k: int, t: int, m: int, retries: int) -> None:
    p = Profile(n=n, k=k, t=t, m=m)
    valid = k < n and m < n and n * k % 2 == 0 and n * m % 2 == 0
    if not valid:
        with pytest.raises(TournamentError):
            plan(p)
        return
    dry = plan(p, invalid_json_retries=retries)
    assert elite_count(n) + mutant_count(n) == n
    assert dry.calls == n + t * (n * k // 2 + n - -(-n // 4)) + n * m // 2
    assert dry.retry_headroom == (t * n * k // 2 + n * m // 2) * retries
    assert dry.sequential_rounds == 2 + 2 * t


@pytest.mark.parametrize(
    ("fields", "fragments"),
    [
        ({"n": 1, "k": 1, "m": 1}, ["profile.n must be >= 2", "at least two"]),
        ({"t": -1}, ["profile.t must be >= 0"]),
        ({"k": 4}, ["profile.k must be < n", "lower k or raise n"]),
        ({"m": 5}, ["profile.m must be < n"]),
        ({"n": 5, "k": 3, "m": 2}, ["n*k must be even", "make n or k even"]),
        ({"n": 5, "k": 2, "m": 1}, ["n*m must be even"]),
        ({"k": 0}, ["profile.k must be >= 1"]),
        ({"lambda_": 0.0}, ["profile.lambda must be a finite number > 0"]),
        ({"judge_temperature": -0.5}, ["profile.judge_temperature must be"]),
    ],
)
def test_invalid_profiles_are_refused(fields: dict[str, float], fragments: list[str]) -> None:
    base: dict[str, float] = {"n": 4, "k": 2, "t": 1, "m": 2}
    p = Profile.model_validate(base | fields)
    with refused("profile.invalid", *fragments):
        p.check()
    with refused("profile.invalid"):
        plan(p)


def test_every_problem_is_reported_at_once() -> None:
    with refused("profile.invalid", "profile.n", "profile.t", "; "):
        Profile(n=1, k=1, t=-1, m=1).check()


def test_unknown_profile_name() -> None:
    with refused("profile.invalid", "'fast'", "quick, balanced, paper"):
        get_profile("fast")


def test_rank_k_regular_counts_and_codes() -> None:
    assert RankBlock(mode="k-regular", k=4).calls(10) == 20
    with refused("rank.k_required", "rank.k is required", "all-pairs"):
        RankBlock(mode="k-regular").calls(10)
    with refused("rank.k_invalid", "rank.k=10", "n=10"):
        RankBlock(mode="k-regular", k=10).calls(10)
    with refused("rank.k_invalid", "n*k even"):
        RankBlock(mode="k-regular", k=3).calls(9)
    with refused("rank.k_invalid"):
        RankBlock(mode="k-regular", k=0).calls(9)
    with refused("rank.max_calls_exceeded", "needs 20 calls", "rank.max_calls=19"):
        RankBlock(mode="k-regular", k=4, max_calls=19).calls(10)


def test_rank_all_pairs_limits() -> None:
    assert RankBlock(mode="all-pairs").calls(14) == 91  # <= 100 pairs: no cap needed
    with refused("rank.max_calls_required", ">= 105", "not set", "k-regular"):
        RankBlock(mode="all-pairs").calls(15)
    # Over 100 pairs a cap below the pair count is the same refusal (as the reference does).
    with refused("rank.max_calls_required", ">= 105", "is 104"):
        RankBlock(mode="all-pairs", max_calls=104).calls(15)
    assert RankBlock(mode="all-pairs", max_calls=105).calls(15) == 105
    with refused("rank.max_calls_exceeded", "needs 45 calls"):
        RankBlock(mode="all-pairs", max_calls=44).calls(10)


def test_rank_block_replaces_final_judging_in_the_plan() -> None:
    dry = plan(get_profile("quick"), rank=RankBlock(mode="all-pairs"))
    assert dry.phases[-1].phase == "final_judging" and dry.phases[-1].calls == 6
    assert dry.calls == 15 - 4 + 6


def test_preflight_refuses_a_plan_over_max_calls() -> None:
    dry = plan(get_profile("quick"), finalizer=True)
    check_planned_calls(dry, None)
    check_planned_calls(dry, 16)  # retry headroom is not counted
    with refused("budget.planned_calls_exceeded", "needs 16 calls", "max_calls=15", "at least 16"):
        check_planned_calls(dry, 15)


def test_given_candidates_plan_no_generation_calls() -> None:
    """Ranking 5 given candidates makes the 10 judge calls only (it planned 15 before)."""
    from workflows.tournament.preflight import preflight, rank_profile
    from workflows.tournament.types import GivenCandidate, TournamentInput

    given = [GivenCandidate(id=f"c{i}", text=f"answer {i}") for i in range(5)]
    payload = TournamentInput(
        task="x",
        custom=rank_profile(5),
        rank=RankBlock(mode="all-pairs"),
        candidates=given,
        budget={"max_calls": 10},  # type: ignore[arg-type]
    )
    checked = preflight(payload)  # a max_calls equal to the pair count is enough
    assert checked.tournament.planned_calls == 10
    assert checked.tournament.phases[0].calls == 0
    with refused("budget.planned_calls_exceeded", "needs 10 calls"):
        preflight(
            payload.model_copy(
                update={"budget": payload.budget.model_copy(update={"max_calls": 9})}
            )
        )


def test_finalizer_polishes_at_its_own_low_temperature() -> None:
    from workflows.tournament.preflight import preflight
    from workflows.tournament.types import TournamentInput

    for name in BUILTIN_PROFILES:
        temps = preflight(TournamentInput(task="x", profile=name)).temperatures
        assert temps["finalize"] == 0.2
        assert temps["mutate"] == 1.0  # the finalizer no longer borrows it
    with refused("profile.invalid", "finalize_temperature"):
        Profile(n=4, k=2, t=1, m=2, finalize_temperature=-1).check()


def test_rank_block_modes_and_the_auto_fallback() -> None:
    from workflows.tournament.profiles import ALL_PAIRS_FREE_LIMIT, rank_block

    assert rank_block(5).mode == "all-pairs"  # 10 pairs fit the free limit
    assert rank_block(14).mode == "all-pairs"  # 91 pairs
    fallback = rank_block(20)  # 190 pairs > 100: the largest k with n*k/2 <= 100
    assert (fallback.mode, fallback.k) == ("k-regular", 10)
    assert fallback.calls(20) <= ALL_PAIRS_FREE_LIMIT
    capped = rank_block(20, max_calls=190)
    assert (capped.mode, capped.calls(20)) == ("all-pairs", 190)
    assert rank_block(7, max_calls=10).k == 2  # odd n needs an even k; 7 calls
    assert rank_block(6, k=3).mode == "k-regular"  # an explicit degree is honoured
    assert rank_block(6, "all-pairs", seed=9).seed == 9
    with refused("rank.max_calls_exceeded", "at least 7 judge calls"):
        rank_block(7, max_calls=6)
    with refused("profile.invalid", "at least two candidates"):
        rank_block(1, "all-pairs")


def test_an_auto_rank_block_in_workflow_input_resolves_before_scheduling() -> None:
    from workflows.tournament.schedule import final_schedule

    auto = RankBlock(mode="auto")
    ids = [f"c{i}" for i in range(20)]
    assert auto.calls(5) == 10 and auto.resolved(5).mode == "all-pairs"
    pairs = final_schedule(ids, m=2, seed=1, rank=auto)
    assert len(pairs) == 100  # 190 pairs over the cap: k-regular with k = 10
    degree = {cid: 0 for cid in ids}
    for pair in pairs:
        degree[pair.scheduled_a] += 1
        degree[pair.scheduled_b] += 1
    assert set(degree.values()) == {10}
    assert len(final_schedule(ids[:5], m=2, seed=1, rank=auto)) == 10
    assert plan(get_profile("quick"), rank=auto).phases[-1].calls == 6
