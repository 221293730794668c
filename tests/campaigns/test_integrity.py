"""The capture check after each cell, on run directories as the children leave them.

Real runs: test_capture.py (HTTP cells, a plan's tournament step over HTTP: no issue),
test_integrity_runs.py (``no_run``, ``missing_llm_spans`` and ``missing_outcome``) and
test_integrity_http_runs.py (``no_raw_sink``, ``missing_raw_events``, ``orphan_llm_span``), each
from a natural trigger under each policy. Here each of the six issues comes from a run directory
missing what a real run writes.
"""

from __future__ import annotations

import json
from pathlib import Path

from activities.campaign.cells import CampaignCellActivities
from activities.config import Settings
from workflows.campaign.types import SettleCellInput

SCORER = {"kind": "regex", "pattern": "ok"}


def cell(settings: Settings, run_id: str, **files: str) -> Path:
    run_dir = settings.runs_dir / run_id
    for name, text in files.items():
        path = run_dir / name.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return run_dir


def settle(
    settings: Settings, run_id: str, *, http: bool = False, failed: bool = False
) -> list[str]:
    input = SettleCellInput.model_validate(
        {"run_id": run_id, "kind": "single", "scorer": SCORER, "http": http, "child_failed": failed}
    )
    return CampaignCellActivities(settings).settle(input).integrity_issues


def summary(status: str = "completed") -> str:
    return json.dumps({"status": status, "provider": "p", "model": "m", "usage": {}})


def raw(*events: dict) -> str:  # type: ignore[type-arg]
    return "".join(json.dumps(e) + "\n" for e in events)


def test_each_capture_issue(settings: Settings) -> None:
    assert settle(settings, "gone") == ["no_run"]
    cell(settings, "fine", **{"summary.json": summary(), "artifacts__answer.txt": "ok"})
    assert settle(settings, "fine") == []
    cell(settings, "unanswered", **{"summary.json": summary()})
    assert settle(settings, "unanswered") == ["missing_outcome"]
    cell(settings, "limbo", **{"summary.json": summary("running"), "artifacts__answer.txt": "ok"})
    assert settle(settings, "limbo") == ["missing_outcome"]
    # An HTTP cell: its raw events must be there and whole.
    cell(settings, "nosink", **{"summary.json": summary(), "artifacts__answer.txt": "ok"})
    assert settle(settings, "nosink", http=True) == ["no_raw_sink"]
    request = {"call_id": "half/ask/0/0", "request": {"body": {}}}
    cell(
        settings,
        "half",
        **{
            "summary.json": summary(),
            "artifacts__answer.txt": "ok",
            "raw-events.jsonl": raw(request),
        },
    )
    assert settle(settings, "half", http=True) == ["missing_raw_events"]
    cut = raw({**request, "call_id": "cut/ask/0/0", "response": {"status": 200}})[:-20] + "\n"
    cell(
        settings,
        "cut",
        **{"summary.json": summary(), "artifacts__answer.txt": "ok", "raw-events.jsonl": cut},
    )
    assert settle(settings, "cut", http=True) == ["missing_raw_events", "orphan_llm_span"]
    whole = {**request, "call_id": "whole/ask/0/0", "response": {"status": 200}}
    cell(
        settings,
        "whole",
        **{
            "summary.json": summary(),
            "artifacts__answer.txt": "ok",
            "raw-events.jsonl": raw(whole),
        },
    )
    assert settle(settings, "whole", http=True) == []
    # A command agent's run record (no request) is no broken exchange, and covers no span.
    command = {"call_id": "cmd/ask/0/0", "provider_kind": "command", "argv": ["a"], "exit_code": 0}
    cell(
        settings,
        "cmd",
        **{
            "summary.json": summary(),
            "artifacts__answer.txt": "ok",
            "raw-events.jsonl": raw(command),
        },
    )
    assert settle(settings, "cmd", http=True) == ["orphan_llm_span"]
    # A tournament that billed calls no request event covers.
    tournament = json.dumps({"status": "completed", "usage": {"calls": 3}, "models": {}})
    cell(
        settings,
        "orphans",
        **{
            "summary.json": tournament,
            "artifacts__final.txt": "ok",
            "raw-events.jsonl": raw(whole),
        },
    )
    input = SettleCellInput.model_validate(
        {"run_id": "orphans", "kind": "tournament", "scorer": SCORER, "http": True}
    )
    assert CampaignCellActivities(settings).settle(input).integrity_issues == ["orphan_llm_span"]
    zero = json.dumps({"status": "completed", "usage": {"calls": 0}, "models": {}})
    cell(settings, "nocalls", **{"summary.json": zero, "artifacts__final.txt": "ok"})
    input = input.model_copy(update={"run_id": "nocalls", "http": False})
    assert CampaignCellActivities(settings).settle(input).integrity_issues == ["missing_llm_spans"]


def test_policies_decide_what_an_issue_does_to_the_record() -> None:
    from tests.campaigns.helpers import document
    from workflows.campaign.cell_records import build_record
    from workflows.campaign.document import validate_value
    from workflows.campaign.matrix import cells
    from workflows.campaign.types import CellOutcome

    outcome = CellOutcome(
        exists=True, completed=True, calls=1, score=0.7, integrity_issues=["no_raw_sink"]
    )

    def record(policy: str):  # type: ignore[no-untyped-def]
        doc = validate_value(document(integrity=policy)).document
        assert doc is not None
        cell = cells(doc, "c")[0]
        return build_record(
            doc, cell, outcome, calls=1, wall_ms=1.0, child_error=None, cancelled=False,
            prompt_hash="p",
        )  # fmt: skip

    marked = record("mark_failed")
    assert (marked.failure_class, marked.holdout_score) == ("integrity_failed", None)
    logged = record("log")
    assert (logged.failure_class, logged.holdout_score, logged.integrity_issues) == (
        None,
        0.7,
        ["no_raw_sink"],
    )
    # Under throw the record is failed too; the workflow then stops the campaign (a genuine
    # error, see the workflow's integrity check).
    assert record("throw").failure_class == "integrity_failed"
