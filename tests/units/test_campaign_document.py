"""Direct tests of campaign document refusals that need their code, path and message whole."""

from __future__ import annotations

from tests.campaigns.helpers import document
from workflows.campaign.document import MAX_CELLS, validate_text, validate_value


def test_a_campaign_over_the_cell_limit_is_refused() -> None:
    seeds = list(range(MAX_CELLS // 6 + 1))  # 2 variants x 3 scenarios x 167 seeds: 1,002 cells
    errors = validate_value(document(seeds=seeds)).errors
    assert [(e.code, e.path, e.message) for e in errors] == [
        (
            "campaign.too_large",
            "",
            "1002 cells (variants x scenarios x seeds) is over 1000; fix: split the campaign",
        )
    ]
    assert validate_value(document(seeds=list(range(166)))).ok  # 996 cells


def test_a_scenario_used_twice_is_refused_at_its_path() -> None:
    scenarios = document()["scenarios"]
    scenarios[2]["id"] = "s0"
    errors = validate_value(document(scenarios=scenarios)).errors
    assert [(e.code, e.path, e.message) for e in errors] == [
        ("scenario.duplicate", "scenarios[2].id", "id 's0' is used twice")
    ]


def test_text_that_does_not_parse_is_refused_with_the_parser_s_path_and_message() -> None:
    result = validate_text("{not json", filename="c.json")
    assert result.document is None
    assert [(e.code, e.path, e.message) for e in result.errors] == [
        (
            "document.syntax",
            "",
            "not valid JSON: Expecting property name enclosed in double quotes: line 1 column 2 "
            "(char 1); fix: correct the syntax",
        )
    ]


def test_each_pydantic_error_kind_has_its_code() -> None:
    from workflows.campaign.document import _code

    assert _code("too_short") == _code("too_long") == "field.range"
    assert _code("greater_than_equal") == _code("less_than") == "field.range"
    assert _code("string_too_long") == "field.range"
    assert _code("float_parsing") == _code("int_type") == "field.type"
    assert _code("value_error") == "field.invalid"


def test_whole_messages_of_the_schema_an_unknown_field_and_a_missing_commit() -> None:
    wrong = document()
    wrong["schema"] = "x"
    assert [(e.code, e.path, e.message) for e in validate_value(wrong).errors] == [
        ("schema.unknown", "schema", "schema is 'x'; fix: set schema: ponder-campaign/1")
    ]
    extra = document(extra=1)
    assert [(e.code, e.path, e.message) for e in validate_value(extra).errors] == [
        ("field.unknown", "extra", "Extra inputs are not permitted")
    ]
    unsigned = document()
    del unsigned["commit_sha"]
    assert [(e.code, e.path, e.message) for e in validate_value(unsigned).errors] == [
        (
            "commit_sha.missing",
            "commit_sha",
            "commit_sha is required; fix: set it to the git sha under test (e.g. the output of "
            "`git rev-parse HEAD`)",
        )
    ]
