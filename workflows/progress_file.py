"""``progress.json``: a run's own status view as its last write left it, read once it has ended.

``ponder status`` of an ended run reads this file instead of asking the server: a query of a
closed workflow replays its whole history on a worker (about a second for a campaign, more
with the embedded server up but no worker running), where the file is a few milliseconds. The
file holds exactly what the run's status query answers (a tournament's ``Progress``, a plan's
``PlanStatus``, a campaign's ``CampaignProgress``), so the view is the same, field for field,
whether the server is up or not. An Ask has no status query: its ``summary.json`` is its
record (``client.status_cli``).

Pure: written by workflows (a plan's files) and activities (a tournament's and a campaign's
artifact writers) alike, read by the CLI.
"""

from __future__ import annotations

import json
from typing import Any, Literal

__all__ = ["PROGRESS_FILE", "ProgressKind", "progress_json"]

PROGRESS_FILE = "progress.json"
ProgressKind = Literal["tournament", "plan", "campaign"]


def progress_json(
    kind: ProgressKind,
    progress: dict[str, Any],
    *,
    started_at: str | None,
    written_at: str | None,
) -> str:
    """The file's text: the status query's answer (``progress``, JSON mode) and the times the
    run started and wrote it (ISO 8601)."""
    return (
        json.dumps(
            {
                "kind": kind,
                "progress": progress,
                "started_at": started_at,
                "written_at": written_at,
            },
            indent=2,  # keys in the model's order: a plan's steps are listed in plan order
        )
        + "\n"
    )
