"""References, path containment and output contracts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from workflows.plan.contracts import check_output, parse_type
from workflows.plan.paths import escape_problem, lexical_problem
from workflows.plan.refs import Ref, RefError, parse_template, render, resolve, whole_reference


def test_templates_split_into_text_and_references() -> None:
    assert parse_template("Hi ${input.name}, see ${steps.notes.write.output.items.0}.") == [
        "Hi ",
        Ref("input", "name"),
        ", see ",
        Ref("steps", "notes.write", ("items", "0")),
        ".",
    ]
    assert parse_template("cost: $${HOME} $5") == ["cost: ${HOME} $5"]


@pytest.mark.parametrize(
    "bad",
    ["${input}", "${input.1x}", "${steps.a}", "${steps.A.output}", "${env.X}", "${input.a", "${}"],
)
def test_malformed_references_are_refused(bad: str) -> None:
    with pytest.raises(RefError):
        parse_template(bad)


def test_render_resolves_inputs_outputs_and_paths() -> None:
    outputs = {"find": '```json\n{"items": ["a", {"b": 2}]}\n```', "pause": "alice"}
    inputs = {"topic": "tides", "approved_by": "bob"}
    text = "${input.topic}/${steps.find.output.items.1}/${steps.pause.output}/${input.approved_by}"
    assert render(text, inputs=inputs, outputs=outputs) == 'tides/{"b": 2}/alice/bob'
    assert resolve(Ref("steps", "find", ("items", "0")), inputs={}, outputs=outputs) == "a"


def test_resolved_values_are_not_rescanned() -> None:
    outputs = {"a": "${input.secret}"}
    assert render("${steps.a.output}", inputs={"secret": "s3cret"}, outputs=outputs) == (
        "${input.secret}"
    )


@pytest.mark.parametrize(
    ("ref", "match"),
    [
        (Ref("input", "missing"), "--arg missing"),
        (Ref("steps", "later"), "no output yet"),
        (Ref("steps", "text", ("x",)), "not JSON"),
        (Ref("steps", "obj", ("nope",)), "no 'nope'"),
        (Ref("steps", "obj", ("list", "9")), "no '9'"),
    ],
)
def test_unresolvable_references_say_why(ref: Ref, match: str) -> None:
    outputs = {"text": "plain words", "obj": {"list": [1]}}
    with pytest.raises(RefError, match=match):
        resolve(ref, inputs={}, outputs=outputs)


def test_whole_reference() -> None:
    assert whole_reference("${steps.a.output.items}") == Ref("steps", "a", ("items",))
    assert whole_reference("x ${steps.a.output}") is None
    assert whole_reference("${bad}") is None


@pytest.mark.parametrize(
    ("rel", "why"),
    [
        ("", "an empty path"),
        ("./", "an empty path"),
        ("/etc/passwd", "an absolute path"),
        ("\\\\server\\share", "an absolute path"),
        ("C:/x", "an absolute path"),
        ("a/../../b", '".." segment'),
        ("a\\..\\b", '".." segment'),
        ("a\nb", "control character"),
        ("a\x7fb", "control character"),
        ("docs/plan.md", None),
        ("./docs/./plan.md", None),
        ("..foo/bar", None),
    ],
)
def test_lexical_rules(rel: str, why: str | None) -> None:
    problem = lexical_problem(rel)
    assert (problem is None) if why is None else (problem is not None and why in problem)


def _fs(root: Path, rel: str) -> str | None:
    return escape_problem(
        rel, str(root), exists=os.path.lexists, realpath=lambda p: os.path.realpath(p)
    )


def test_symlinks_out_of_the_workspace_are_caught(tmp_path: Path) -> None:
    root, outside = tmp_path / "ws", tmp_path / "outside"
    (root / "docs").mkdir(parents=True)
    outside.mkdir()
    assert _fs(root, "docs/new/file.md") is None  # a leaf not written yet is fine
    (root / "link").symlink_to(outside)
    assert "outside the workspace" in (_fs(root, "link/new.md") or "")  # symlinked ancestor
    (root / "dangling.md").symlink_to(outside / "not-yet.md")
    assert "outside the workspace" in (_fs(root, "dangling.md") or "")  # a dangling link
    (root / "inner").symlink_to(root / "docs")
    assert _fs(root, "inner/x.md") is None  # a link that stays inside is fine


def test_a_symlinked_root_is_resolved_first(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "a").mkdir(parents=True)
    alias = tmp_path / "alias"
    alias.symlink_to(real)
    assert _fs(alias, "a/b.md") is None


def test_contract_types_parse() -> None:
    contracts = {"Item": {"name": "string"}}
    assert parse_type("Item[]?", contracts).list_depth == 1
    for bad in ("strin", "string[", "[]", "Item?[]"):
        with pytest.raises(ValueError):
            parse_type(bad, contracts)


def test_outputs_are_checked_against_contracts() -> None:
    contracts = {
        "Report": {"title": "string", "items": "Item[]", "score": "number?"},
        "Item": {"name": "string", "count": "integer"},
    }
    ok = '```json\n{"title": "t", "items": [{"name": "a", "count": 2}], "extra": 1}\n```'
    value, problem = check_output(ok, "Report", contracts)
    assert problem is None and value["title"] == "t"
    item = '{"name": "a", "count": 1.5}'
    cases = {
        "not json": "not JSON",
        '{"items": []}': "title: missing",
        '{"title": "t", "items": [' + item + "]}": "items: [0]: count: expected integer",
        '{"title": "t", "items": [], "score": "high"}': "score: expected number",
        '{"title": "t", "items": [], "score": true}': "score: expected number",
        "[1]": "expected a Report object",
    }
    for text, why in cases.items():
        value, problem = check_output(text, "Report", contracts)
        assert value is None and problem is not None and why in problem, (text, problem)
