"""The JSON Schema of ``ponder-plan/1``, generated from the model and shipped in the package.

``python -m workflows.plan.schema`` rewrites the shipped file; a test fails when it differs from
what the model generates now, so the published schema cannot drift from the validator.
The schema covers the document's shape; the cross-field rules (references, deps, routes) are
``ponder plan validate``'s.
"""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from workflows.plan.model import Plan

__all__ = ["SCHEMA_FILE", "generate_schema", "render_schema", "shipped_schema"]

SCHEMA_FILE = "ponder-plan-1.schema.json"
SCHEMA_ID = "https://ponder.invalid/schemas/ponder-plan-1.schema.json"


def _closed_maps(node: Any) -> None:
    """A map with pattern keys (``set``, ``with``, ``contracts``, ``flows``) takes no other key,
    as the validator says: pydantic writes ``patternProperties`` alone, which JSON Schema reads
    as "any other key is fine"."""
    if isinstance(node, dict):
        if "patternProperties" in node and "additionalProperties" not in node:
            node["additionalProperties"] = False
        for value in node.values():
            _closed_maps(value)
    elif isinstance(node, list):
        for value in node:
            _closed_maps(value)


def generate_schema() -> dict[str, Any]:
    # Not mutated: pydantic's own defaults, spelled out (dropping either changes nothing).
    schema = Plan.model_json_schema(by_alias=True, mode="validation")  # pragma: no mutate
    _closed_maps(schema)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "ponder-plan/1",
        "description": (
            "A ponder plan. Shape only: `ponder plan validate` also checks references, deps, "
            "routes and the other cross-field rules."
        ),
        **{k: v for k, v in schema.items() if k not in ("title", "description")},
    }


def render_schema() -> str:
    return json.dumps(generate_schema(), indent=2, sort_keys=True) + "\n"


def shipped_schema() -> str:
    shipped = resources.files("workflows.plan") / SCHEMA_FILE
    # Not mutated: "UTF-8" and "utf-8" name the same codec.
    return shipped.read_text(encoding="utf-8")  # pragma: no mutate


if __name__ == "__main__":
    path = Path(__file__).with_name(SCHEMA_FILE)
    path.write_text(render_schema(), encoding="utf-8")
    sys.stdout.write(f"wrote {path}\n")
