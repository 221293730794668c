"""Direct tests of the tournament preflight's refusals and findings, whole messages."""

from __future__ import annotations

from typing import Any

import pytest

from workflows.tournament.errors import TournamentError
from workflows.tournament.preflight import (
    BYTES_PER_CALL,
    EVENTS_PER_CALL,
    EVENTS_PER_PHASE,
    SelfPreferenceRisk,
    check_history_size,
    estimate_history,
    preflight,
    profile_of,
    rank_profile,
    self_preference_risks,
)
from workflows.tournament.profiles import BUILTIN_PROFILES, Profile, plan
from workflows.tournament.types import TournamentInput


def tournament(**fields: Any) -> TournamentInput:
    return TournamentInput.model_validate({"task": "write a haiku", "model": "sim:a"} | fields)


def refusal(input: TournamentInput, run_id: str | None = None) -> tuple[str, str]:
    with pytest.raises(TournamentError) as caught:
        preflight(input, run_id)
    return caught.value.code, caught.value.message


def given(*ids: str) -> list[dict[str, str]]:
    return [{"id": i, "text": f"answer {i}"} for i in ids]


def test_a_run_id_that_breaks_the_rule_is_refused_before_anything_else() -> None:
    assert refusal(tournament(task=" "), "../x") == (
        "run.id_invalid",
        "run id '../x' must match [A-Za-z0-9][A-Za-z0-9._-]* and be at most 128 characters: "
        "choose another",
    )
    assert refusal(tournament(run_id=".hidden"))[0] == "run.id_invalid"
    # the argument wins over the input's own run id
    assert preflight(tournament(run_id=".hidden"), "good-id").profile_name == "quick"


def test_a_task_of_whitespace_only_is_refused() -> None:
    assert refusal(tournament(task=" \n\t")) == (
        "profile.invalid",
        "task must not be empty: give the question or problem to work on",
    )


def test_given_candidates_need_unique_ids_and_a_profile_of_their_number_with_no_mutation() -> None:
    custom = {"n": 3, "k": 2, "t": 0, "m": 2}
    assert refusal(tournament(candidates=given("a", "b", "a", "b", "c"), custom=custom)) == (
        "profile.invalid",
        "candidate ids must be unique; a, b appear more than once: rename them",
    )
    assert refusal(tournament(candidates=given("a", "b", "c"))) == (
        "profile.invalid",
        "ranking 3 given candidates needs a profile with n=3 and t=0 (got n=4, t=1)",
    )
    assert refusal(tournament(candidates=given("a", "b", "c"), custom=custom | {"t": 1}))[1] == (
        "ranking 3 given candidates needs a profile with n=3 and t=0 (got n=3, t=1)"
    )
    checked = preflight(tournament(candidates=given("a", "b", "c"), custom=custom))
    assert checked.tournament.phases[0].calls == 0


def test_the_profile_is_the_custom_one_else_the_named_one_else_quick() -> None:
    custom = Profile(n=6, k=1, t=0, m=1)
    assert profile_of(tournament(custom=custom.model_dump(by_alias=True))) == custom
    assert profile_of(tournament(profile="paper")) == BUILTIN_PROFILES["paper"]
    assert profile_of(tournament(profile=None)) == BUILTIN_PROFILES["quick"]
    with pytest.raises(TournamentError):
        profile_of(tournament(custom={"n": 1, "k": 1, "t": 0, "m": 1}))


def test_the_preflight_plans_with_the_input_s_options() -> None:
    input = tournament(
        models={"finalize": "sim:f"},
        invalid_json_retries=0,
        judge_orders="both",
        schedule="adaptive",
        adaptive_share=0.5,
    )
    checked = preflight(input, usd_per_call=0.25)
    expected = plan(
        BUILTIN_PROFILES["quick"],
        finalizer=True,
        invalid_json_retries=0,
        usd_per_call=0.25,
        calls_per_pair=2,
        adaptive_share=0.5,
    )
    assert checked.tournament == expected
    assert checked.profile_name == "quick"
    assert checked.self_preference == ()
    assert preflight(tournament(profile="balanced")).tournament == plan(
        BUILTIN_PROFILES["balanced"]
    )


def test_the_budget_s_max_calls_and_the_prompts_are_checked() -> None:
    assert refusal(tournament(budget={"max_calls": 5}))[0] == "budget.planned_calls_exceeded"
    code, message = refusal(tournament(output_token_caps={"nobody": 5}))
    assert (code, message.startswith("output_token_caps names role 'nobody'")) == (
        "profile.invalid",
        True,
    )
    code, _ = refusal(tournament(prompts={"generate": {"user": "{nope}"}}))
    assert code == "prompts.unknown_variable"


def test_a_huge_profile_is_refused_for_its_history() -> None:
    huge = {"n": 2000, "k": 2, "t": 1, "m": 2}
    assert refusal(tournament(custom=huge))[0] == "profile.too_large"


def test_the_temperatures_by_prompt_role() -> None:
    custom = Profile(
        n=4,
        k=2,
        t=1,
        m=2,
        generate_temperature=0.1,
        judge_temperature=0.2,
        mutate_temperature=0.3,
        finalize_temperature=0.4,
    )
    checked = preflight(tournament(custom=custom.model_dump(by_alias=True)))
    assert checked.temperatures == {
        "generate": 0.1,
        "compare": 0.2,
        "mutate": 0.3,
        "finalize": 0.4,
    }


def test_the_history_estimate_by_hand() -> None:
    tournament_plan = plan(Profile(n=4, k=2, t=1, m=2), invalid_json_retries=2)
    estimate = estimate_history(tournament_plan)
    phases = len(tournament_plan.phases)
    assert estimate.events == tournament_plan.worst_case_calls * 6 + (phases + 1) * 12
    assert estimate.bytes == tournament_plan.planned_calls * 16 * 1024
    assert (EVENTS_PER_CALL, EVENTS_PER_PHASE, BYTES_PER_CALL) == (6, 12, 16384)


def test_a_history_too_large_in_bytes_and_events_says_both() -> None:
    huge = plan(Profile(n=2000, k=2, t=1, m=2))
    estimate = estimate_history(huge)
    with pytest.raises(TournamentError) as caught:
        check_history_size(huge)
    assert caught.value.code == "profile.too_large"
    assert caught.value.message == (
        f"this tournament plans {huge.planned_calls:,} calls (up to {huge.worst_case_calls:,} "
        f"with judge retries): about {estimate.events:,} history events, over 25,000 (half of "
        f"Temporal's 50,000-event limit) and about {estimate.bytes / 2**20:.0f} MiB of history, "
        "over 25 MiB (half of Temporal's 50 MiB limit): pick a smaller profile (lower n, k, m "
        "or t, or fewer invalid_json_retries) or split the work into several runs"
    )


def test_a_history_too_large_in_bytes_only_says_so() -> None:
    # 1,700 planned calls: 26.6 MiB at 16 KiB each, 10,200 events, under 25,000
    tournament_plan = plan(Profile(n=1000, k=1, t=0, m=1), invalid_json_retries=0)
    assert tournament_plan.planned_calls == 1500
    with pytest.raises(TournamentError) as caught:
        check_history_size(tournament_plan.model_copy(update={"planned_calls": 1700}))
    assert "history events" not in caught.value.message
    assert "about 27 MiB of history, over 25 MiB" in caught.value.message


def test_a_history_of_exactly_the_budget_s_bytes_passes() -> None:
    tournament_plan = plan(Profile(n=4, k=2, t=0, m=2), invalid_json_retries=0)
    at_budget = tournament_plan.model_copy(update={"planned_calls": 1600})  # 25 MiB
    assert estimate_history(at_budget).bytes == 25 * 2**20
    check_history_size(at_budget)
    with pytest.raises(TournamentError):
        check_history_size(tournament_plan.model_copy(update={"planned_calls": 1601}))


@pytest.mark.parametrize(("count", "k"), [(2, 1), (3, 2), (4, 1), (5, 2), (9, 2)])
def test_the_rank_profile_is_the_smallest_that_ranks_given_candidates(count: int, k: int) -> None:
    profile = rank_profile(count)
    assert profile == Profile(n=count, k=k, t=0, m=k)
    profile.check()


def test_self_preference_is_flagged_for_a_judge_of_some_generators_families_only() -> None:
    input = tournament(
        model="openai:gpt-4o", models={"mutate": "anthropic:claude-3", "judge": "openai:gpt-5"}
    )
    profile = BUILTIN_PROFILES["quick"]
    (risk,) = self_preference_risks(input, profile)
    assert risk == SelfPreferenceRisk("openai:gpt-5", "openai", ("openai:gpt-4o",))
    assert risk.message == (
        "judge openai:gpt-5 is of the openai family, like generator openai:gpt-4o but not the "
        "others: LLM judges tend to prefer their own family's answers; add judges of other "
        "families (--judges a,b,c) or judge with a model of none of the generators' families"
    )
    assert preflight(input).self_preference == (risk,)


def test_no_risk_without_mutation_with_one_family_or_with_given_candidates() -> None:
    mixed = {
        "model": "openai:gpt-4o",
        "models": {"mutate": "anthropic:claude-3", "judge": "openai:gpt-5"},
    }
    no_mutation = Profile(n=4, k=2, t=0, m=2)
    assert self_preference_risks(tournament(**mixed), no_mutation) == []
    same = tournament(model="openai:gpt-4o", models={"judge": "openai:gpt-5"})
    assert self_preference_risks(same, BUILTIN_PROFILES["quick"]) == []
    ranked = tournament(**mixed, candidates=given("a", "b"))
    assert self_preference_risks(ranked, BUILTIN_PROFILES["quick"]) == []


def test_a_panel_is_checked_judge_by_judge_and_a_generator_listed_once() -> None:
    input = tournament(
        model="openai:gpt-4o",
        models={"generate": "anthropic:claude-3", "mutate": "openai:gpt-4o"},
        judges=["openai:gpt-5", "anthropic:claude-4", "google:gemini-2"],
    )
    risks = self_preference_risks(input, BUILTIN_PROFILES["quick"])
    assert [(r.judge, r.family, r.generators) for r in risks] == [
        ("openai:gpt-5", "openai", ("openai:gpt-4o",)),
        ("anthropic:claude-4", "claude", ("anthropic:claude-3",)),
    ]
    assert "like generator openai:gpt-4o, x" not in risks[0].message
    two = SelfPreferenceRisk("j", "f", ("a", "b"))
    assert "like generator a, b but not the others" in two.message
