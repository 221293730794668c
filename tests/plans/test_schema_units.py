"""Direct unit tests of the schema's post-processing (workflows.plan.schema)."""

from __future__ import annotations

from typing import Any

from workflows.plan.schema import SCHEMA_ID, _closed_maps, generate_schema


def test_closed_maps_closes_pattern_maps_at_any_depth_and_keeps_explicit_ones() -> None:
    node: Any = {
        "patternProperties": {"^a": {}},
        "items": [{"patternProperties": {"^b": {}}}],
        "nested": {
            "patternProperties": {"^c": {}},
            "additionalProperties": {"type": "string"},
        },
        "plain": {"properties": {}},
    }
    _closed_maps(node)
    assert node == {
        "patternProperties": {"^a": {}},
        "additionalProperties": False,
        "items": [{"patternProperties": {"^b": {}}, "additionalProperties": False}],
        "nested": {
            "patternProperties": {"^c": {}},
            "additionalProperties": {"type": "string"},
        },
        "plain": {"properties": {}},
    }


def test_the_generated_schema_is_headed_by_its_identity() -> None:
    schema = generate_schema()
    assert schema["$id"] == SCHEMA_ID
    assert schema["title"] == "ponder-plan/1"
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["description"].startswith("A ponder plan. Shape only:")
    # by alias: the document's own key names
    assert "schema" in schema["required"] and "schema_" not in schema["properties"]
