"""Direct tests of the tournament profiles' rules, each refusal's whole message and the plan's
arithmetic, computed by hand."""

from __future__ import annotations

import pytest

from workflows.tournament.errors import TournamentError
from workflows.tournament.profiles import (
    BUILTIN_PROFILES,
    Profile,
    RankBlock,
    adaptive_pairs_budget,
    check_planned_calls,
    elite_count,
    final_judging_calls,
    get_profile,
    mutant_count,
    plan,
    profile_name,
    rank_block,
)


def refusal(call: object, *args: object, **kwargs: object) -> tuple[str, str]:
    with pytest.raises(TournamentError) as caught:
        call(*args, **kwargs)  # type: ignore[operator]
    return caught.value.code, caught.value.message


def problems(**fields: float) -> str:
    profile = Profile.model_validate({"n": 4, "k": 2, "t": 1, "m": 2} | fields)
    code, message = refusal(profile.check)
    assert code == "profile.invalid"
    return message


def test_each_profile_problem_s_whole_message() -> None:
    assert problems(n=1, k=1, m=1) == (
        "profile.n must be >= 2 (got 1): use at least two candidates; "
        "profile.k must be < n (got k=1, n=1): lower k or raise n; "
        "profile.m must be < n (got m=1, n=1): lower m or raise n"
    )
    assert problems(t=-1) == "profile.t must be >= 0 (got -1): use 0 for no mutation rounds"
    assert problems(k=0) == "profile.k must be >= 1 (got 0): judge each candidate"
    assert problems(m=0) == "profile.m must be >= 1 (got 0): judge each candidate"
    assert problems(n=5, k=3, m=2) == "profile n*k must be even (n=5, k=3): make n or k even"
    assert problems(n=5, k=2, m=1) == "profile n*m must be even (n=5, m=1): make n or m even"
    assert problems(lambda_=0.0) == (
        "profile.lambda must be a finite number > 0 (got 0.0): try 0.01"
    )
    assert problems(lambda_=-1.0).startswith("profile.lambda must be")
    for name in (
        "generate_temperature",
        "mutate_temperature",
        "judge_temperature",
        "finalize_temperature",
    ):
        assert problems(**{name: -0.5}) == f"profile.{name} must be a finite number >= 0 (got -0.5)"


def test_the_boundaries_of_a_valid_profile() -> None:
    Profile.model_validate({"n": 2, "k": 1, "t": 0, "m": 1, "lambda": 1e-9}).check()
    assert Profile(n=3, k=2, t=0, m=2).check() == Profile(n=3, k=2, t=0, m=2)


def test_an_unknown_profile_name_lists_the_built_in_ones() -> None:
    assert refusal(get_profile, "fast") == (
        "profile.invalid",
        "profile 'fast' is not a built-in profile: use one of quick, balanced, paper, "
        "or give n, k, t and m",
    )
    assert get_profile("paper") is BUILTIN_PROFILES["paper"]


def test_a_profile_is_named_only_when_it_equals_a_built_in_one() -> None:
    assert profile_name(get_profile("balanced")) == "balanced"
    assert profile_name(Profile(n=4, k=2, t=1, m=2)) is None  # quick's sizes, other temperatures


def test_the_rank_blocks_whole_refusals() -> None:
    assert refusal(RankBlock(mode="k-regular").calls, 10) == (
        "rank.k_required",
        "rank.k is required when rank.mode is k-regular: set rank.k (an integer 1..9 with n*k "
        "even) or use mode all-pairs",
    )
    assert refusal(RankBlock(mode="k-regular", k=3).calls, 9) == (
        "rank.k_invalid",
        "rank.k=3 cannot form a k-regular schedule over n=9 candidates: k must be in 1..8 and "
        "n*k even",
    )
    assert refusal(RankBlock(mode="k-regular", k=4, max_calls=19).calls, 10) == (
        "rank.max_calls_exceeded",
        "rank block needs 20 calls, over rank.max_calls=19: raise rank.max_calls or lower rank.k",
    )
    assert refusal(RankBlock(mode="all-pairs").calls, 15) == (
        "rank.max_calls_required",
        "rank.max_calls must be >= 105 for all-pairs over 15 candidates (more than 100 pairs; "
        "rank.max_calls is not set): set rank.max_calls (ponder rank --rank-max-calls) to 105 "
        "or use mode k-regular",
    )
    assert (
        "rank.max_calls is 104)" in refusal(RankBlock(mode="all-pairs", max_calls=104).calls, 15)[1]
    )


def test_k_regular_degrees_at_their_bounds() -> None:
    assert RankBlock(mode="k-regular", k=1).calls(2) == 1
    assert RankBlock(mode="k-regular", k=9).calls(10) == 45
    assert RankBlock(mode="k-regular", k=4, max_calls=20).calls(10) == 20
    for k in (0, 10):
        assert refusal(RankBlock(mode="k-regular", k=k).calls, 10)[0] == "rank.k_invalid"


def test_all_pairs_at_the_free_limit_and_an_auto_block_resolves() -> None:
    assert RankBlock(mode="all-pairs").calls(14) == 91
    assert RankBlock(mode="all-pairs", max_calls=91).calls(14) == 91
    auto = RankBlock(mode="auto", k=None, seed="s", max_calls=10)
    assert auto.resolved(5) == RankBlock(mode="all-pairs", seed="s", max_calls=10)
    assert auto.calls(5) == 10
    assert auto.resolved(6) == RankBlock(mode="k-regular", k=3, seed="s", max_calls=10)
    assert auto.calls(6) == 9
    fixed = RankBlock(mode="k-regular", k=2)
    assert fixed.resolved(50) is fixed


def test_rank_block_auto_picks_all_pairs_under_the_cap_else_the_widest_degree() -> None:
    # 105 pairs > 100; n odd: k even, the widest 12 (90 calls)
    assert rank_block(15) == RankBlock(mode="k-regular", k=12)
    assert rank_block(14) == RankBlock(mode="all-pairs")
    assert rank_block(6, max_calls=15) == RankBlock(mode="all-pairs", max_calls=15)
    assert rank_block(6, max_calls=14) == RankBlock(mode="k-regular", k=4, max_calls=14)
    assert rank_block(6, k=1) == RankBlock(mode="k-regular", k=1)
    assert rank_block(6, "all-pairs", k=2, seed=3, max_calls=9) == RankBlock(
        mode="all-pairs", k=2, seed=3, max_calls=9
    )


def test_rank_block_refusals() -> None:
    assert refusal(rank_block, 1) == (
        "profile.invalid",
        "ranking needs at least two candidates to compare (got 1): give two or more",
    )
    assert refusal(rank_block, 6, max_calls=2) == (
        "rank.max_calls_exceeded",
        "ranking 6 candidates needs at least 3 judge calls, over the rank call limit of 2: "
        "raise rank.max_calls (--rank-max-calls)",
    )
    assert refusal(rank_block, 5, max_calls=4)[1].startswith(
        "ranking 5 candidates needs at least 5 judge calls, over the rank call limit of 4"
    )
    assert rank_block(6, max_calls=3) == RankBlock(mode="k-regular", k=1, max_calls=3)
    assert rank_block(2, max_calls=1) == RankBlock(mode="all-pairs", max_calls=1)


@pytest.mark.parametrize(("n", "elites"), [(1, 1), (4, 1), (5, 2), (8, 2), (9, 3)])
def test_elites_are_a_quarter_rounded_up_and_the_rest_are_mutants(n: int, elites: int) -> None:
    assert elite_count(n) == elites
    assert mutant_count(n) == n - elites


def test_final_judging_is_n_m_over_two_or_the_rank_block_s() -> None:
    assert final_judging_calls(Profile(n=6, k=1, t=0, m=3)) == 9
    assert final_judging_calls(Profile(n=6, k=1, t=0, m=3), RankBlock(mode="all-pairs")) == 15


@pytest.mark.parametrize(
    ("regular", "n", "share", "budget"),
    [(100, 20, 0.3, 30), (100, 20, 0.1, 20), (10, 20, 0.3, 10), (7, 2, 0.5, 4), (10, 2, 0.3, 3)],
)
def test_the_adaptive_budget_is_the_share_rounded_up_between_n_and_regular(
    regular: int, n: int, share: float, budget: int
) -> None:
    assert adaptive_pairs_budget(regular, n, share) == budget


def test_the_plan_refuses_negative_retries_and_no_calls_per_pair() -> None:
    profile = get_profile("quick")
    with pytest.raises(ValueError) as caught:
        plan(profile, invalid_json_retries=-1)
    assert str(caught.value) == "invalid_json_retries must be >= 0 (got -1)"
    with pytest.raises(ValueError) as caught:
        plan(profile, calls_per_pair=0)
    assert str(caught.value) == "calls_per_pair must be >= 1 (got 0)"
    assert plan(profile, invalid_json_retries=0).retry_headroom == 0


def test_a_plan_by_hand_with_every_option() -> None:
    profile = Profile(n=8, k=3, t=2, m=4)
    p = plan(
        profile,
        finalizer=True,
        invalid_json_retries=2,
        usd_per_call=0.5,
        calls_per_pair=2,
        adaptive_share=0.5,
    )
    judging = max(6, 8) * 2  # 12 pairs, half of them is 6, at least n = 8; 2 calls a pair
    final = max(8, 8) * 2  # 16 pairs, half is 8
    mutants = 8 - 2
    calls = 8 + 2 * (judging + mutants) + final
    assert p.calls == calls
    assert p.calls_per_pair == 2
    assert [(c.phase, c.calls) for c in p.phases] == [
        ("initial_generation", 8),
        ("generation_judging:1", judging),
        ("generation_mutation:1", mutants),
        ("generation_judging:2", judging),
        ("generation_mutation:2", mutants),
        ("final_judging", final),
        ("finalizing", 1),
    ]
    assert p.finalizer_calls == 1
    assert p.planned_calls == calls + 1
    assert p.retry_headroom == (2 * judging + final) * 2
    assert p.worst_case_calls == calls + 1 + (2 * judging + final) * 2
    assert p.sequential_rounds == 6
    assert p.warning is None
    assert p.usd_per_call == 0.5
    assert p.estimated_usd == (calls + 1) * 0.5
    assert p.worst_case_usd == p.worst_case_calls * 0.5


def test_a_rank_block_s_final_phase_is_never_adaptive_and_given_candidates_cost_nothing() -> None:
    profile = Profile(n=6, k=1, t=0, m=1)
    p = plan(profile, rank=RankBlock(mode="all-pairs"), given=True, adaptive_share=0.1)
    assert [(c.phase, c.calls) for c in p.phases] == [
        ("initial_generation", 0),
        ("final_judging", 15),
    ]
    assert (p.calls, p.finalizer_calls, p.sequential_rounds) == (15, 0, 2)
    assert p.estimated_usd is None and p.worst_case_usd is None


def test_the_warning_starts_at_one_hundred_planned_calls() -> None:
    profile = Profile(n=10, k=9, t=0, m=9)  # 10 + 45 = 55 calls
    assert plan(profile).warning is None
    big = plan(profile, calls_per_pair=2)  # 10 + 90 = 100
    assert big.warning == (
        "this tournament makes 100 model calls (up to 190 with judge retries): "
        "check the budget, or pick a smaller profile"
    )
    assert plan(Profile(n=10, k=9, t=0, m=9), finalizer=True, calls_per_pair=2).planned_calls == 101


def test_planned_calls_over_max_calls_are_refused_with_the_number_to_raise_to() -> None:
    p = plan(get_profile("quick"))
    check_planned_calls(p, None)
    check_planned_calls(p, p.planned_calls)
    assert refusal(check_planned_calls, p, p.planned_calls - 1) == (
        "budget.planned_calls_exceeded",
        f"the plan needs {p.planned_calls} calls, over max_calls={p.planned_calls - 1}: "
        f"raise max_calls to at least {p.planned_calls} or pick a smaller profile",
    )


def test_a_built_in_profile_samples_at_temperature_one() -> None:
    from workflows.tournament.profiles import _builtin

    assert _builtin(6, 1, 2, 3) == Profile(
        n=6, k=1, t=2, m=3, generate_temperature=1.0, mutate_temperature=1.0
    )


def test_the_least_judge_calls_of_an_even_field_is_half_of_it() -> None:
    assert refusal(rank_block, 4, max_calls=1)[1].startswith(
        "ranking 4 candidates needs at least 2 judge calls, over the rank call limit of 1"
    )


def test_an_auto_block_keeps_its_own_degree() -> None:
    auto = RankBlock(mode="auto", k=2)
    assert auto.resolved(20) == RankBlock(mode="k-regular", k=2)
    assert auto.calls(20) == 20
