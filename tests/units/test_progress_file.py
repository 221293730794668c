"""Direct test of ``progress.json``'s text."""

from __future__ import annotations

import json

from workflows.progress_file import PROGRESS_FILE, progress_json


def test_the_file_holds_the_kind_the_answer_and_both_times_indented_in_order() -> None:
    text = progress_json(
        "plan",
        {"steps": {"z": 1, "a": 2}},
        started_at="2026-01-01T00:00:00Z",
        written_at=None,
    )
    assert PROGRESS_FILE == "progress.json"
    assert text == (
        "{\n"
        '  "kind": "plan",\n'
        '  "progress": {\n'
        '    "steps": {\n'
        '      "z": 1,\n'
        '      "a": 2\n'
        "    }\n"
        "  },\n"
        '  "started_at": "2026-01-01T00:00:00Z",\n'
        '  "written_at": null\n'
        "}\n"
    )
    assert json.loads(text)["progress"] == {"steps": {"z": 1, "a": 2}}


def test_the_written_time_is_kept() -> None:
    text = progress_json("campaign", {}, started_at=None, written_at="later")
    assert json.loads(text) == {
        "kind": "campaign",
        "progress": {},
        "started_at": None,
        "written_at": "later",
    }
