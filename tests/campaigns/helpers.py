"""Campaign documents for tests."""

from __future__ import annotations

from typing import Any


def document(**overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schema": "ponder-campaign/1",
        "campaign_id": "deep-vs-single",
        "commit_sha": "abc123",
        "variants": [
            {"id": "single", "kind": "single", "config": {"model": "sim:default"}},
            {
                "id": "deep",
                "kind": "tournament",
                # An accurate simulated judge: the tournament reliably keeps its best answer.
                "config": {"profile": "quick", "model": "sim:default,accuracy=0.95"},
            },
        ],
        "scenarios": [
            {"id": f"s{i}", "task": f"Task number {i}.", "scorer": {"kind": "sim_truth"}}
            for i in range(3)
        ],
        "seeds": [0, 1, 2],
        "comparator": "single",
        "min_pairs": 6,
    }
    doc.update(overrides)
    return doc
