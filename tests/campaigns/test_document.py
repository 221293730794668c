"""The ponder-campaign/1 document: valid documents, and every error coded with its path."""

from __future__ import annotations

import json

import yaml

from tests.campaigns.helpers import document
from workflows.campaign.document import (
    DEFAULT_DRAIN_TIMEOUT_S,
    MAX_DRAIN_TIMEOUT_S,
    validate_text,
    validate_value,
)
from workflows.campaign.matrix import cell_run_id, cells, fingerprint


def codes(doc: object) -> list[tuple[str, str]]:
    return [(e.code, e.path) for e in validate_value(doc).errors]


def test_a_valid_document_in_json_and_yaml() -> None:
    doc = document()
    for text, name in ((json.dumps(doc), "c.json"), (yaml.safe_dump(doc), "c.yaml")):
        result = validate_text(text, filename=name)
        assert result.ok, result.errors
        assert result.document is not None
        assert result.document.comparator_id == "single"
        assert result.document.rope == 0.02  # the default ROPE


def test_defaults() -> None:
    doc = document()
    del doc["seeds"], doc["min_pairs"], doc["comparator"]
    parsed = validate_value(doc).document
    assert parsed is not None
    assert (parsed.seeds, parsed.min_pairs, parsed.split) == ([0, 1, 2], 20, "holdout")
    assert parsed.integrity == "mark_failed" and parsed.comparator_id == "single"


def test_every_error_is_reported_with_code_and_path() -> None:
    doc = document(
        comparator="nobody",
        seeds=[1, 1],
        surprise=True,
        commit_sha="",
    )
    doc["variants"].append({"id": "single", "kind": "single", "config": {"model": "x:y"}})
    doc["scenarios"][1]["scorer"] = {"kind": "regex", "pattern": "(unclosed"}
    doc["scenarios"][2]["scorer"] = {"kind": "command", "name": "pytest", "argv": ["rm", "-rf"]}
    doc["variants"][1]["config"]["seed"] = 3
    # Shape errors come first (the model cannot be built), then the cross-field rules.
    assert codes(doc) == [("field.unknown", "surprise")]
    del doc["surprise"]
    assert codes(doc) == [
        ("variant.duplicate", "variants[2].id"),
        ("seed.duplicate", "seeds[1]"),
        ("comparator.unknown", "comparator"),
        ("commit_sha.missing", "commit_sha"),
        ("field.not_allowed", "variants[1].config.seed"),
        ("scorer.pattern", "scenarios[1].scorer.pattern"),
        ("scorer.argv_not_allowed", "scenarios[2].scorer.argv"),
    ]


def test_shape_errors_name_the_field() -> None:
    doc = document()
    doc["scenarios"][0]["scorer"] = {"kind": "numeric", "tolerance": -1}
    doc["variants"][0]["config"] = {"temperature": "hot"}
    doc["concurrency"] = 0
    doc["rope"] = float("nan")
    found = codes(doc)
    assert ("field.missing", "scenarios[0].scorer.expected") in found
    assert ("field.range", "scenarios[0].scorer.tolerance") in found
    assert ("field.range", "concurrency") in found
    assert ("value.not_finite", "rope") in found
    # The single config is checked once the shape holds.
    doc = document()
    doc["variants"][0]["config"] = {"temperature": "hot"}
    assert ("field.missing", "variants[0].config.model") in codes(doc)
    assert ("field.type", "variants[0].config.temperature") in codes(doc)


def test_the_drain_bound_has_a_default_and_a_ceiling() -> None:
    parsed = validate_value(document()).document
    assert parsed is not None and parsed.drain_timeout_s == DEFAULT_DRAIN_TIMEOUT_S == 30
    for bad in (0, -1, MAX_DRAIN_TIMEOUT_S + 1):
        assert codes(document(drain_timeout_s=bad)) == [("field.range", "drain_timeout_s")]
    assert codes(document(drain_timeout_s=MAX_DRAIN_TIMEOUT_S)) == []


def test_schema_syntax_and_plan_variants() -> None:
    assert codes(document(schema="ponder-campaign/2")) == [("schema.unknown", "schema")]
    assert [e.code for e in validate_text("{not json", filename="x.json").errors] == [
        "document.syntax"
    ]
    assert [e.code for e in validate_text('{"a": 1, "a": 2}').errors] == ["document.duplicate_key"]
    doc = document()
    doc["variants"][1] = {"id": "p", "kind": "plan", "config": {"plan": "x.yaml"}}
    assert codes(doc) == [("variant.config", "variants[1].config.plan")]  # a path: CLI only
    doc["variants"][1]["config"]["plan"] = {"schema": "ponder-plan/1", "name": "p", "steps": []}
    found = codes(doc)
    assert found and all(c == "variant.config" for c, _ in found)
    assert found[0][1].startswith("variants[1].config.plan")


def test_cells_are_variant_major_with_stable_run_ids() -> None:
    doc = validate_value(document()).document
    assert doc is not None
    matrix = cells(doc, "camp-1")
    assert len(matrix) == 18
    assert [(c.variant, c.scenario, c.seed) for c in matrix[:4]] == [
        ("single", "s0", 0),
        ("single", "s0", 1),
        ("single", "s0", 2),
        ("single", "s1", 0),
    ]
    assert matrix[9].variant == "deep"
    assert len({c.run_id for c in matrix}) == 18
    assert matrix[0].run_id == cell_run_id("camp-1", "single", "s0", 0)
    assert cells(doc, "camp-1") == matrix
    assert cells(doc, "camp-2")[0].run_id != matrix[0].run_id


def test_fingerprint_is_the_design_not_its_order() -> None:
    a = validate_value(document()).document
    shuffled = document(seeds=[2, 0, 1])
    shuffled["scenarios"].reverse()
    b = validate_value(shuffled).document
    c = validate_value(document(split="search")).document
    assert a and b and c
    assert fingerprint(a) == fingerprint(b) != fingerprint(c)


def test_patterns_are_re2_and_refused_at_validation_with_their_path() -> None:
    """A backreference, lookaround, a pattern that does not compile, an over-long one, and an
    ``re:`` route rule: each refused by ``campaign validate`` (and the workflow's preflight),
    never first compiled when an answer or a base URL is matched."""
    doc = document()
    doc["scenarios"][0]["scorer"] = {"kind": "regex", "pattern": r"(a)\1"}
    doc["scenarios"][1]["scorer"] = {"kind": "regex", "pattern": "x(?=y)"}
    doc["scenarios"][2]["scorer"] = {"kind": "regex", "pattern": "a" * 1001}
    doc["route"] = {"allow": ["http://127.0.0.1", "re:("], "block": ["re:(?<!x)y"]}
    result = validate_value(doc)
    assert [(e.code, e.path) for e in result.errors] == [
        ("scorer.pattern", "scenarios[0].scorer.pattern"),
        ("scorer.pattern", "scenarios[1].scorer.pattern"),
        ("scorer.pattern", "scenarios[2].scorer.pattern"),
        ("route.pattern", "route.allow[1]"),
        ("route.pattern", "route.block[0]"),
    ]
    assert "RE2" in result.errors[0].message and "1000" in result.errors[2].message


def test_a_redos_pattern_is_valid_and_scores_in_linear_time() -> None:
    """``(?:.|.)*!NOPE`` froze the worker on Python's ``re``; on RE2 it is an ordinary pattern."""
    from workflows.campaign.document import RegexScorer
    from workflows.campaign.scoring import score_regex

    doc = document()
    doc["scenarios"][0]["scorer"] = {"kind": "regex", "pattern": "(?:.|.)*!NOPE"}
    assert validate_value(doc).ok
    scorer = RegexScorer(kind="regex", pattern="(?:.|.)*!NOPE")
    assert score_regex(scorer, "x" * 100_000) == 0.0
    assert score_regex(scorer, "x" * 100 + "!NOPE") == 1.0
