"""Prompt roles, styles, overrides and one-pass substitution."""

from __future__ import annotations

import json
import re

import pytest
from pydantic import ValidationError

from workflows.tournament.errors import TournamentError
from workflows.tournament.prompts import (
    DEFAULT_RUBRIC,
    OUTPUT_TOKEN_CAPS,
    ROLE_VARIABLES,
    PromptOverride,
    PromptOverrides,
    builtin_template,
    render,
    substitute,
    template_variables,
    validate_overrides,
)

VALUES = {
    "task": "TASK-TEXT",
    "rubric": "RUBRIC-TEXT",
    "candidate": "CANDIDATE-TEXT",
    "candidateA": "FIRST-TEXT",
    "candidateB": "SECOND-TEXT",
    "critique": "CRITIQUE-TEXT",
}


def values_for(role: str) -> dict[str, str]:
    return {name: VALUES[name] for name in ROLE_VARIABLES[role]}  # type: ignore[index]


def test_default_rubric_is_the_spec_text() -> None:
    assert DEFAULT_RUBRIC == (
        "Prefer answers that are correct, complete, robust, verifiable, and directly aligned "
        "with the task."
    )


def test_roles_variables_and_caps() -> None:
    assert {role: sorted(names) for role, names in ROLE_VARIABLES.items()} == {
        "generate": ["rubric", "task"],
        "compare": ["candidateA", "candidateB", "rubric", "task"],
        "mutate": ["candidate", "critique", "rubric", "task"],
        "finalize": ["candidate", "rubric", "task"],
    }
    assert dict(OUTPUT_TOKEN_CAPS) == {
        "generate": 4096,
        "compare": 1024,
        "mutate": 4096,
        "finalize": 4096,
    }


@pytest.mark.parametrize("style", ["general", "paper-programming"])
@pytest.mark.parametrize("role", ["generate", "compare", "mutate", "finalize"])
def test_builtin_prompts_use_every_variable_of_their_role(style: str, role: str) -> None:
    template = builtin_template(role, style)  # type: ignore[arg-type]
    assert set(template_variables(template.system + template.user)) == ROLE_VARIABLES[role]  # type: ignore[index]
    prompt = render(role, values_for(role), style=style)  # type: ignore[arg-type]
    assert prompt.max_output_tokens == OUTPUT_TOKEN_CAPS[role]  # type: ignore[index]
    for name in ROLE_VARIABLES[role]:  # type: ignore[index]
        assert VALUES[name] in prompt.user
    assert not re.search(r"\{[A-Za-z_]\w*\}", prompt.system + prompt.user)


@pytest.mark.parametrize("style", ["general", "paper-programming"])
def test_compare_prompt_shows_a_then_b_and_asks_for_the_verdict_json(style: str) -> None:
    prompt = render("compare", values_for("compare"), style=style)  # type: ignore[arg-type]
    assert prompt.user.index("FIRST-TEXT") < prompt.user.index("SECOND-TEXT")
    assert "Solution A" in prompt.user and "Solution B" in prompt.user
    example = prompt.user[prompt.user.index('{"feedback_a"') :]
    assert example.endswith("}")
    for key in ('"feedback_b"', '"winner"', '"confidence"'):
        assert key in example


def test_paper_programming_asks_for_cpp17() -> None:
    prompt = render("generate", values_for("generate"), style="paper-programming")
    assert "C++17" in prompt.user and "```cpp" in prompt.user


def test_double_braces_are_literal_and_single_unknown_forms_stay_text() -> None:
    text = substitute(
        '{{"winner": "A"}} {task} {{task}} { task } {"k": 1} {0} }} {{',
        {"task": "T", "rubric": "R"},
        role="generate",
    )
    assert text == '{"winner": "A"} T {task} { task } {"k": 1} {0} } {'


def test_values_are_never_expanded_again() -> None:
    values = {"task": "use {rubric} and {{x}} and {0}", "rubric": "R"}
    assert substitute("{task}|{rubric}", values, role="generate") == (
        "use {rubric} and {{x}} and {0}|R"
    )


def test_unknown_variable_is_refused_with_a_clear_message() -> None:
    with pytest.raises(TournamentError) as info:
        substitute("Judge {candidate}", values_for("compare"), role="compare")
    assert info.value.code == "prompts.unknown_variable"
    message = info.value.message
    assert "{candidate}" in message and "compare role" in message
    assert "{candidateA}, {candidateB}, {rubric}, {task}" in message
    assert "{{ and }}" in message


def test_missing_values_are_a_programming_error() -> None:
    with pytest.raises(ValueError, match="lack"):
        substitute("{task}", {"task": "t"}, role="generate")


def test_overrides_are_validated_per_role_and_field() -> None:
    validate_overrides(None)
    validate_overrides(
        PromptOverrides(
            compare=PromptOverride(user="A: {candidateA}\nB: {candidateB}\n{{json}}"),
            mutate=PromptOverride(system="Improve {candidate} using {critique}."),
        )
    )
    bad = PromptOverrides(mutate=PromptOverride(user="Fix {candidateA}"))
    with pytest.raises(TournamentError) as info:
        validate_overrides(bad)
    assert info.value.code == "prompts.unknown_variable"
    assert "override mutate.user" in info.value.message
    assert "{candidateA}" in info.value.message
    with pytest.raises(TournamentError, match=r"generate\.system"):
        validate_overrides(PromptOverrides(generate=PromptOverride(system="{critique}")))


def test_unknown_roles_and_fields_are_refused_by_the_model() -> None:
    with pytest.raises(ValidationError):
        PromptOverrides.model_validate({"judge": {"user": "x"}})
    with pytest.raises(ValidationError):
        PromptOverride.model_validate({"assistant": "x"})


def test_an_override_replaces_only_what_it_gives() -> None:
    base = render("generate", values_for("generate"))
    custom = render(
        "generate", values_for("generate"), override=PromptOverride(user="Only: {task}")
    )
    assert custom.system == base.system
    assert custom.user == "Only: TASK-TEXT"
    both = render(
        "finalize",
        values_for("finalize"),
        override=PromptOverride(system="S {rubric}", user="U {candidate}"),
    )
    assert (both.system, both.user) == ("S RUBRIC-TEXT", "U CANDIDATE-TEXT")


def test_json_example_in_an_override_survives() -> None:
    override = PromptOverride(user='{candidateA} vs {candidateB}. Reply {{"winner": "A"}}')
    prompt = render("compare", values_for("compare"), override=override)
    assert json.loads(prompt.user.split("Reply ")[1]) == {"winner": "A"}


def test_unknown_style_or_role() -> None:
    with pytest.raises(ValueError, match="styles are general, paper-programming"):
        builtin_template("generate", "poetry")  # type: ignore[arg-type]
