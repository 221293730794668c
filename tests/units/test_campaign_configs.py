"""Direct tests of a campaign variant's child input, its models and its worst-case calls."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from tests.campaigns.helpers import document
from workflows.call_options import CallOptions
from workflows.campaign.configs import (
    ask_input,
    cell_calls,
    config_errors,
    final_step,
    plan_input,
    prompt_hash,
    tournament_input,
    variant_models,
)
from workflows.campaign.document import Scenario, Variant, validate_value
from workflows.tournament.preflight import preflight
from workflows.tournament.prompts import DEFAULT_RUBRIC, render

PLAN: dict[str, Any] = {
    "schema": "ponder-plan/1",
    "name": "p",
    "steps": [
        {"id": "a", "kind": "agent", "prompt": "Do ${input.task}", "model": "sim:a"},
        {
            "id": "t",
            "kind": "tournament",
            "deps": ["a"],
            "prompt": "x ${steps.a.output}",
            "model": "sim:t",
            "tournament": {"judge_model": "sim:judge"},
        },
        {"id": "last", "kind": "agent", "deps": ["t"], "prompt": "y ${steps.t.output}"},
    ],
}


def variant(kind: str, **config: object) -> Variant:
    return Variant.model_validate({"id": "v", "kind": kind, "config": config})


def test_a_plan_cell_s_input_passes_the_task_as_an_argument_its_args_can_set() -> None:
    calls = CallOptions(heartbeat_timeout_s=5.0)
    run = plan_input(variant("plan", plan=PLAN), task="T", seed=4, run_id="c.1", calls=calls)
    assert (run.plan, run.args, run.seed, run.run_id, run.calls) == (
        PLAN,
        {"task": "T"},
        4,
        "c.1",
        calls,
    )
    own = plan_input(
        variant("plan", plan=PLAN, args={"task": "mine", "x": 1}), task="T", seed=0, run_id="c"
    )
    assert own.args == {"task": "mine", "x": 1}
    assert own.calls == CallOptions()


def test_a_plan_s_prompt_hash_is_of_its_document_and_arguments() -> None:
    blob = json.dumps(
        {"plan": PLAN, "args": {"task": "é", "x": 1}}, sort_keys=True, ensure_ascii=False
    )
    expected = hashlib.sha256(blob.encode()).hexdigest()
    assert prompt_hash(variant("plan", plan=PLAN, args={"x": 1}), task="é") == expected


def test_a_tournament_s_prompt_hash_takes_its_generate_override() -> None:
    override = {"generate": {"user": "Answer: {task}"}}
    hashed = prompt_hash(variant("tournament", model="sim:a", prompts=override), task="T")
    expected = render(
        "generate",
        {"task": "T", "rubric": DEFAULT_RUBRIC},
        override=tournament_input(
            variant("tournament", prompts=override), task="T", seed=0, run_id="r"
        ).prompts.generate,  # type: ignore[union-attr]
    )
    assert hashed == expected.sha256
    assert hashed != prompt_hash(variant("tournament", model="sim:a"), task="T")


def test_a_single_shot_in_a_style_keeps_its_own_system_message() -> None:
    asked = ask_input(
        variant("single", model="sim:a", prompt_style="general", system="Mine."),
        task="T",
        seed=3,
        run_id="c.2",
    )
    generate = render("generate", {"task": "T", "rubric": DEFAULT_RUBRIC}, style="general")
    assert (asked.question, asked.system) == (generate.user, "Mine.")
    styled = ask_input(
        variant("single", model="sim:a", prompt_style="general"), task="T", seed=0, run_id="c"
    )
    assert styled.system == generate.system
    plain = ask_input(
        variant("single", model="sim:a", temperature=0.5, max_output_tokens=9, base_url="http://h"),
        task="T",
        seed=3,
        run_id="c.2",
    )
    assert (plain.question, plain.system, plain.temperature, plain.max_output_tokens) == (
        "T",
        None,
        0.5,
        9,
    )
    assert (plain.base_url, plain.role, plain.seed, plain.run_id) == (
        "http://h",
        "generate",
        3,
        "c.2",
    )


def test_a_tournament_cell_never_pauses_and_draws_its_reserved_calls() -> None:
    calls = CallOptions(heartbeat_timeout_s=5.0)
    t = tournament_input(
        variant("tournament", model="sim:a"),
        task="T",
        seed=2,
        run_id="c.3",
        max_calls=40,
        calls=calls,
    )
    assert (t.task, t.seed, t.run_id, t.calls) == ("T", 2, "c.3", calls)
    assert t.on_budget_exhausted == "fail"
    assert t.budget.max_calls == 40
    unbounded = tournament_input(variant("tournament"), task="T", seed=0, run_id="c")
    assert unbounded.budget.max_calls is None
    assert unbounded.calls == CallOptions()


def test_the_answer_is_the_plan_s_last_top_level_step() -> None:
    assert final_step(variant("plan", plan=PLAN)) == "last"


def test_a_cell_s_worst_case_is_its_variant_s_plus_one_for_a_judge_scorer() -> None:
    judged = Scenario.model_validate(
        {"id": "s", "task": "T", "scorer": {"kind": "judge", "model": "sim:j", "rubric": "r"}}
    )
    plain = Scenario.model_validate({"id": "s", "task": "T", "scorer": {"kind": "sim_truth"}})
    assert cell_calls(variant("single", model="sim:a"), plain) == 1
    assert cell_calls(variant("single", model="sim:a"), judged) == 2
    deep = variant("tournament", profile="quick", model="sim:a")
    probe = tournament_input(deep, task="probe", seed=0, run_id="probe")
    assert cell_calls(deep, plain) == preflight(probe).tournament.worst_case_calls
    assert cell_calls(variant("plan", plan=PLAN), plain) > 1


def test_every_model_a_campaign_uses_with_its_base_url() -> None:
    variants = [
        {"id": "one", "kind": "single", "config": {"model": "sim:a", "base_url": "http://h"}},
        {
            "id": "deep",
            "kind": "tournament",
            "config": {"model": "sim:a", "models": {"judge": "sim:j", "mutate": "sim:a"}},
        },
        {"id": "planned", "kind": "plan", "config": {"plan": PLAN}},
    ]
    scenarios = [
        {
            "id": "s0",
            "task": "T",
            "scorer": {"kind": "judge", "model": "sim:grader", "rubric": "r"},
        },
        {"id": "s1", "task": "T", "scorer": {"kind": "sim_truth"}},
    ]
    doc = validate_value(
        document(variants=variants, scenarios=scenarios, comparator="one")
    ).document
    assert doc is not None, validate_value(document(variants=variants, scenarios=scenarios)).errors
    assert variant_models(doc) == [
        ("one", "sim:a", "http://h"),
        ("deep", "sim:a", None),
        ("deep", "sim:j", None),
        ("planned", "sim:a", None),
        ("planned", "sim:t", None),
        ("planned", "sim:judge", None),
        ("scorer:s0", "sim:grader", None),
    ]


def test_tournament_configs_are_checked_by_the_tournament_s_model_and_preflight() -> None:
    variants = document()["variants"]
    variants[1]["config"] = {"profile": "quick", "model": "sim:a", "budget": {"max_calls": 3}}
    doc = validate_value(document(variants=variants)).document
    assert doc is not None
    (error,) = config_errors(doc)
    assert (error.code, error.path) == ("variant.config", "variants[1].config")
    assert error.message.startswith("budget.planned_calls_exceeded: the plan needs ")
    variants[1]["config"] = {"profile": "quick", "no_such_field": 1}
    shaped = validate_value(document(variants=variants)).document
    assert shaped is not None
    assert [e.path for e in config_errors(shaped)] == ["variants[1].config.no_such_field"]


def test_a_tournament_s_prompt_hash_is_of_its_style_s_generate_prompt() -> None:
    styled = variant("tournament", model="sim:a", prompt_style="paper-programming")
    expected = render(
        "generate", {"task": "T", "rubric": DEFAULT_RUBRIC}, style="paper-programming"
    )
    assert prompt_hash(styled, task="T") == expected.sha256
    assert expected.sha256 != prompt_hash(variant("tournament", model="sim:a"), task="T")
