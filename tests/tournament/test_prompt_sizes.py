"""The worst-case size of a tournament's prompts, checked when the input decodes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from activities.config import Settings
from activities.errors import ConfigError
from client.tournament_inputs import build_mutate_input
from tests.campaigns.helpers import document
from tests.cli import cli_env, ponder_here
from workflows.bounds import MAX_RESPONSE_BYTES
from workflows.campaign.configs import config_errors
from workflows.campaign.document import validate_value
from workflows.inputs import InputInvalid, decode_json
from workflows.plan.refs import RenderTooLong, render
from workflows.tournament.prompt_sizes import (
    PROMPT_CEILING_CHARS,
    prompt_size_problem,
    role_size,
    variable_bounds,
    worst_case_chars,
)
from workflows.tournament.prompts import PromptOverride, PromptOverrides, Role
from workflows.tournament.types import TournamentInput

BOUNDS = {"task": 10, "rubric": 3, "candidate": 7, "candidateA": 7, "candidateB": 7, "critique": 5}


def test_a_template_costs_its_literal_text_plus_each_use_of_a_variable_at_its_bound() -> None:
    assert worst_case_chars("", BOUNDS) == 0
    assert worst_case_chars("plain", BOUNDS) == 5
    assert worst_case_chars("ab{task}cd", BOUNDS) == 2 + 10 + 2
    assert worst_case_chars("{task}{task}{rubric}", BOUNDS) == 10 + 10 + 3
    assert worst_case_chars("{{task}}", BOUNDS) == len("{task}")  # literal braces, no variable
    assert worst_case_chars("{candidateA}|{candidateB}", BOUNDS) == 7 + 1 + 7
    assert worst_case_chars("{nope}", BOUNDS) == len("{nope}")  # left as written
    assert worst_case_chars("{task}" * 10_000, {"task": 10_000}) == 100_000_000


def test_bounds_are_the_given_texts_or_the_largest_response() -> None:
    generated = variable_bounds(task="t" * 12, rubric="r" * 4, given=None, critique_chars=16_000)
    assert generated == {
        "task": 12,
        "rubric": 4,
        "candidate": 1_048_576,
        "candidateA": 1_048_576,
        "candidateB": 1_048_576,
        "critique": 16_000,
    }
    given = variable_bounds(task="t", rubric="r", given=["abc", "defgh"], critique_chars=256)
    assert (given["candidate"], given["candidateA"], given["critique"]) == (5, 5, 256)
    assert variable_bounds(task="t", rubric="r", given=[], critique_chars=256)["candidate"] == 0


def test_a_role_adds_its_system_and_user_prompt() -> None:
    overrides = PromptOverrides(
        mutate=PromptOverride(system="S:{critique}{critique}", user="{candidate}!")
    )
    size = role_size("mutate", BOUNDS, overrides=overrides)
    assert (size.system, size.user, size.total) == (2 + 5 + 5, 7 + 1, 20)
    assert (size.field, size.heaviest, size.uses) == ("prompts.mutate.system", "critique", 2)
    # Without overrides, a built-in template: the built-in generate system prompt has no
    # variable (120 characters), its user prompt names the task and the rubric once.
    plain = role_size("generate", BOUNDS)
    assert plain.system == 120 and plain.field == "task" and plain.uses == 1


def test_the_issues_input_is_over_the_ceiling_and_says_by_how_much() -> None:
    bounds = variable_bounds(task="x" * 10_000, rubric="r", given=None, critique_chars=16_000)
    overrides = PromptOverrides(generate=PromptOverride(user="{task}" * 10_000))
    assert PROMPT_CEILING_CHARS == 4_194_304
    assert prompt_size_problem(bounds, overrides=overrides) == (
        "prompts.generate.user: the generate prompt can render up to 100,000,120 characters "
        "({task} 10,000 times, at up to 10,000 characters each), over the ceiling of "
        "4,194,304 characters per prompt: name each {variable} fewer times in "
        "prompts.generate.user, or shorten the task"
    )
    # Only the named roles are checked; the ceiling can be given.
    compare: tuple[Role, ...] = ("compare",)
    generate: tuple[Role, ...] = ("generate",)
    assert prompt_size_problem(bounds, overrides=overrides, roles=compare) is None
    assert prompt_size_problem({**bounds, "task": 1}, ceiling=10_000, roles=generate) is None


def test_the_built_in_prompts_fit_with_every_candidate_at_the_response_cap() -> None:
    bounds = variable_bounds(task="t" * 100_000, rubric="r", given=None, critique_chars=1_000_000)
    for style in ("general", "paper-programming"):
        assert prompt_size_problem(bounds, style=style) is None
        compare = role_size("compare", bounds, style=style)
        assert compare.total > 2 * MAX_RESPONSE_BYTES  # two candidates at 1 MiB each


def _decode(**fields: object) -> TournamentInput:
    return decode_json(TournamentInput, json.dumps({"task": "Sort a list.", **fields}))


def test_decoding_refuses_a_prompt_over_the_ceiling_naming_the_field() -> None:
    assert _decode().prompts is None
    ordinary = {"generate": {"user": "Task: {task}\nRubric: {rubric}\nAnswer {{in JSON}}."}}
    assert _decode(prompts=ordinary).prompts is not None
    with pytest.raises(InputInvalid) as refused:
        _decode(prompts={"finalize": {"user": "{candidate}" * 5}})  # 5 x 1 MiB
    assert "prompts.finalize.user: the finalize prompt can render up to" in refused.value.message
    assert "({candidate} 5 times, at up to 1,048,576 characters each)" in refused.value.message
    with pytest.raises(InputInvalid) as refused:
        _decode(task="x" * 3_000_000)  # beside two candidates of 1 MiB in the judge's prompt
    assert "task: the compare prompt can render up to" in refused.value.message
    given = [{"id": "a", "text": "a" * 2_100_000}, {"id": "b", "text": "b"}]
    with pytest.raises(InputInvalid) as refused:
        _decode(candidates=given, custom={"n": 2, "k": 1, "t": 0, "m": 1})
    assert "candidates: the compare prompt can render up to" in refused.value.message
    assert "shorten the given candidates" in refused.value.message


def test_a_mutate_prompt_over_the_ceiling_is_refused_before_it_starts(settings: Settings) -> None:
    def build(candidate: str) -> object:
        return build_mutate_input(
            settings,
            candidate,
            task="Sort a list.",
            critique="Too slow.",
            rubric=None,
            model="sim:default",
            prompt_style="general",
            seed=1,
            run_id="m-1",
        )

    assert build("def sort(xs): ...") is not None
    with pytest.raises(ConfigError) as refused:
        build("x" * PROMPT_CEILING_CHARS)
    assert refused.value.code == "input.invalid"
    assert "over the ceiling of 4,194,304 characters per prompt" in refused.value.message


def test_a_render_stops_as_soon_as_it_passes_its_limit() -> None:
    inputs = {"t": "x" * 1_000}
    assert render("${input.t}!", inputs=inputs, outputs={}, max_chars=1_001) == "x" * 1_000 + "!"
    with pytest.raises(RenderTooLong) as too_long:
        render("${input.t}" * 1_000, inputs=inputs, outputs={}, max_chars=10_500)
    assert (too_long.value.size, too_long.value.max_chars) == (11_000, 10_500)
    assert "passes 10,500 characters (at least 11,000 so far)" in str(too_long.value)


def test_a_campaign_checks_its_tournament_prompts_against_its_longest_task() -> None:
    doc = document()
    doc["variants"][1]["config"]["prompts"] = {"generate": {"user": "{task}" * 1_000}}
    checked = validate_value(doc)
    assert checked.document is not None and config_errors(checked.document) == []
    doc["scenarios"][2]["task"] = "x" * 10_000  # x 1,000 uses: 10 million characters
    checked = validate_value(doc)
    assert checked.document is not None
    (error,) = config_errors(checked.document)
    assert error.path == "variants[1].config"
    assert "the generate prompt can render up to 10,000,120 characters" in error.message


def test_ponder_think_refuses_it_before_starting(tmp_path: Path) -> None:
    task = tmp_path / "task.md"
    task.write_text("x" * 10_000)
    prompts = tmp_path / "prompts.json"
    prompts.write_text(json.dumps({"generate": {"user": "{task}" * 10_000}}))
    env = cli_env(tmp_path)
    done = ponder_here("think", f"@{task}", "--prompts", str(prompts), "--dry-run", env=env)
    assert done.code == 2, done.err
    assert "input.invalid" in done.err and "prompts.generate.user" in done.err
    assert "over the ceiling of 4,194,304 characters per prompt" in done.err
    prompts.write_text(json.dumps({"generate": {"user": "{task}" * 100}}))  # 1 MB: fits
    done = ponder_here("think", f"@{task}", "--prompts", str(prompts), "--dry-run", env=env)
    assert done.code == 0, done.err


def test_a_role_s_size_is_of_its_style_s_templates() -> None:
    general = role_size("generate", BOUNDS)
    paper = role_size("generate", BOUNDS, style="paper-programming")
    assert (general.system, paper.system) == (120, 153)
    generate: tuple[Role, ...] = ("generate",)
    assert prompt_size_problem(BOUNDS, roles=generate, ceiling=500) is None
    problem = prompt_size_problem(BOUNDS, style="paper-programming", roles=generate, ceiling=500)
    assert problem == (
        f"task: the generate prompt can render up to {paper.total:,} characters ({{task}} once, "
        "at up to 10 characters each), over the ceiling of 500 characters per prompt: "
        "shorten the task"
    )


def test_a_critique_heavy_prompt_names_critique_chars() -> None:
    size = role_size("mutate", {**BOUNDS, "critique": 10**6})
    assert (size.field, size.heaviest) == ("critique_chars", "critique")


def test_the_heaviest_variable_weighs_its_uses_at_its_bound_an_unbounded_one_nothing() -> None:
    overrides = PromptOverrides(generate=PromptOverride(system="s", user="{nope}{nope}{task}"))
    size = role_size("generate", {**BOUNDS, "task": 1}, overrides=overrides)
    assert (size.heaviest, size.uses) == ("task", 1)
    only = PromptOverrides(generate=PromptOverride(system="{nope}{nope}", user="x"))
    generate: tuple[Role, ...] = ("generate",)
    assert prompt_size_problem(BOUNDS, overrides=only, roles=generate, ceiling=5) == (
        "prompts.generate.system: the generate prompt can render up to 13 characters ({nope} "
        "2 times, at up to 0 characters each), over the ceiling of 5 characters per prompt: "
        "name each {variable} fewer times in prompts.generate.system, or use fewer variables"
    )
