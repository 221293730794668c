"""``ponder report ID`` (and ``ponder campaign report ID``) of a campaign: its report rewritten
from its run directory, without a server.

The campaign stored the analysis of its records in ``summary.json`` when it wrote its report; the
re-render takes it from there while the records are the ones it was computed from (as many as
the summary counts), so the statistics (numpy, scipy: more than a second to import) are computed
again only for records the summary does not describe.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from activities.errors import ConfigError
from activities.run_file_crypto import read_run_text, run_dir_cipher
from workflows.run_ids import check_run_id

if TYPE_CHECKING:
    from activities.config import Settings
    from workflows.campaign.analysis import Analysis

__all__ = ["rerender_report"]


def rerender_report(settings: Settings, run_id: str) -> tuple[Path, dict[str, str]]:
    """Rewrite ``report.md`` and ``report.html`` from ``records.jsonl``: the run directory and
    the two files' text.

    The same records give the same bytes, so the rewritten files equal the campaign's own.
    """
    # The renderer (jinja2) is imported only by a command that renders.
    from activities.campaign.render import ReportDesign, render_report
    from activities.run_store import RunStore
    from workflows.campaign.records import RunRecord

    run_dir = settings.runs_dir / check_run_id(run_id)
    try:
        summary = json.loads(read_run_text(run_dir / "summary.json"))
        document = json.loads(read_run_text(run_dir / "campaign.json"))
        lines = read_run_text(run_dir / "records.jsonl").splitlines()
    except (OSError, ValueError) as exc:
        raise ConfigError(
            "run.not_found",
            f"no campaign report for {run_id!r} in {run_dir} ({exc}): check the run id; a "
            "campaign writes its report when it ends",
        ) from None
    records = [RunRecord.model_validate_json(line) for line in lines if line.strip()]
    design = ReportDesign.from_document(
        run_id,
        document,
        fingerprint=summary["fingerprint"],
        status=summary["status"],
        planned_cells=summary["cells"]["planned"],
    )
    _, files = render_report(design, records, stored_analysis(summary, len(records)))
    store = RunStore(settings.runs_dir, cipher=run_dir_cipher(settings, run_dir))
    for name in ("report.md", "report.html"):
        store.write(run_id, name, files[name])
    return run_dir, {name: files[name] for name in ("report.md", "report.html")}


def stored_analysis(summary: dict[str, Any], records: int) -> Analysis | None:
    """The analysis ``summary.json`` holds, when it was computed from ``records`` records; None
    (compute it) when the summary holds none or counted other records."""
    from pydantic import ValidationError

    from workflows.campaign.analysis import Analysis

    cells = summary.get("cells")
    stored = summary.get("analysis")
    if not isinstance(cells, dict) or cells.get("recorded") != records or stored is None:
        return None
    try:
        return Analysis.model_validate(stored)
    except ValidationError:
        return None
