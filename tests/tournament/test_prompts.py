"""Prompt roles, styles, overrides and one-pass substitution."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from pydantic import ValidationError
from temporalio.client import Client

from tests.fakes import FakeProvider, Reply, Seen, openai_completion
from tests.tournament.helpers import read_jsonl, run
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
from workflows.tournament.types import RoleModels

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


@pytest.mark.parametrize("style", ["general", "paper-programming"])
def test_finalizer_polishes_and_keeps_the_approach(style: str) -> None:
    prompt = render("finalize", values_for("finalize"), style=style)  # type: ignore[arg-type]
    text = (prompt.system + prompt.user).lower()
    assert "keep" in text and ("approach" in text or "algorithm" in text)
    assert "do not start over" in text or "not write a new program" in text
    assert "correct" in text


def test_paper_programming_has_a_code_rubric_per_role() -> None:
    from workflows.tournament.prompts import CODE_RUBRICS

    assert set(CODE_RUBRICS) == {"generate", "compare", "mutate", "finalize"}
    assert len(set(CODE_RUBRICS.values())) == 4  # each role its own
    for role in ("generate", "compare", "mutate", "finalize"):
        paper = render(role, values_for(role), style="paper-programming")  # type: ignore[arg-type]
        general = render(role, values_for(role), style="general")  # type: ignore[arg-type]
        assert CODE_RUBRICS[role] in paper.user  # type: ignore[index]
        assert "Code rubric" not in general.user
        assert "RUBRIC-TEXT" in paper.user  # the task's own rubric still applies


def test_output_caps_override_per_role_and_are_validated() -> None:
    from workflows.tournament.prompts import validate_output_caps

    capped = render("compare", values_for("compare"), caps={"compare": 300})
    assert capped.max_output_tokens == 300
    assert render("mutate", values_for("mutate"), caps={"compare": 300}).max_output_tokens == 4096
    validate_output_caps({"generate": 10})
    with pytest.raises(TournamentError, match="role 'judge'"):
        validate_output_caps({"judge": 10})
    with pytest.raises(TournamentError, match=">= 1"):
        validate_output_caps({"mutate": 0})


def test_rendered_prompt_has_a_content_address() -> None:
    one = render("generate", values_for("generate"))
    assert one.sha256 == render("generate", values_for("generate")).sha256
    other = render("generate", values_for("generate") | {"task": "another"})
    assert one.sha256 != other.sha256 and len(one.sha256) == 64


async def test_finalizer_call_runs_at_0_2_and_an_unchanged_polish_is_not_postprocessed(
    client: Client, queue: str, fake: FakeProvider
) -> None:
    """Every candidate is "SAME"; a finalizer that returns it unchanged post-processed nothing."""
    verdict = '{"feedback_a": "ok", "feedback_b": "ok", "winner": "A"}'

    def same(seen: Seen) -> Reply:
        user = seen.body["messages"][-1]["content"]
        return Reply(body=openai_completion(verdict if "Solution A" in user else "SAME"))

    fake.responder = same
    result = await run(
        client,
        queue,
        profile="quick",
        seed=5,
        model="local:m",
        models=RoleModels(finalize="local:m"),
        include_prompts=True,
    )
    run_dir = Path(result.run_dir)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert result.final_answer == "SAME"
    assert summary["final_answer_is_postprocessed"] is False
    finalizing = [s for s in fake.seen if s.phase == "finalizing"]
    assert [s.body["temperature"] for s in finalizing] == [0.2]
    mutating = [s for s in fake.seen if s.phase.startswith("generation_mutation")]
    assert {s.body["temperature"] for s in mutating} == {1.0}
    # include_prompts: every usage row names a stored, content-addressed prompt.
    usage = read_jsonl(run_dir / "usage.jsonl")
    assert len(usage) == 16 and all(row["prompt_sha256"] for row in usage)
    for row in usage:
        stored = json.loads((run_dir / "prompts" / f"{row['prompt_sha256']}.json").read_text())
        text = json.dumps(stored, sort_keys=True, ensure_ascii=False)
        assert hashlib.sha256(text.encode()).hexdigest() == row["prompt_sha256"]
    final_prompt = next(u for u in usage if u["phase"] == "finalizing")["prompt_sha256"]
    stored = json.loads((run_dir / "prompts" / f"{final_prompt}.json").read_text())
    assert stored["role"] == "finalize" and "SAME" in stored["user"]
