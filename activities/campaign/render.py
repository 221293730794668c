"""A campaign's report drawn: ``report.md`` and ``report.html`` from its records and design.

A pure function of the records and the design (no clock, no host), so ``ponder report ID``
re-renders it from ``records.jsonl``. It imports neither Temporal nor the statistics' numpy and
scipy unless it computes the analysis: a re-render given the analysis the campaign stored (its
``summary.json``) loads only the templates (``client.campaign_report``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from activities.campaign.plot import Plot, pareto_plot
from activities.reports import PREVIEW_CHARS, compiled_templates, render_page
from workflows.campaign.analysis import BOOTSTRAP_SEED, Analysis
from workflows.campaign.records import RunRecord

if TYPE_CHECKING:
    from workflows.campaign.types import CampaignArtifactsInput

__all__ = ["ReportDesign", "ScenarioRow", "render_report", "scorer_rule"]


_MD = Environment(
    loader=PackageLoader("activities", "templates"),
    bytecode_cache=compiled_templates(),
    autoescape=False,  # markdown, not HTML
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)


@dataclass(frozen=True)
class ScenarioRow:
    """A scenario as the report shows it: its task (cut at ``PREVIEW_CHARS``) and scorer."""

    id: str
    task: str
    task_chars: int
    scorer: str  # its kind
    rule: str  # what the scorer checks, in words

    @classmethod
    def of(cls, scenario: dict[str, Any]) -> ScenarioRow:
        task = str(scenario.get("task", ""))
        scorer: dict[str, Any] = scenario.get("scorer") or {}
        return cls(
            id=str(scenario.get("id", "")),
            task=task[:PREVIEW_CHARS],
            task_chars=len(task),
            scorer=str(scorer.get("kind", "")),
            rule=scorer_rule(scorer),
        )


def scorer_rule(scorer: dict[str, Any]) -> str:
    """What a scorer checks, in words (from the document's JSON)."""
    kind = scorer.get("kind")
    if kind == "exact":
        how = " (trimmed, case and spacing folded)" if scorer.get("normalize", True) else ""
        return f"the answer equals {json.dumps(scorer.get('expected'))}{how}: 1, else 0"
    if kind == "numeric":
        tolerance = float(scorer.get("tolerance", 1e-6))
        share = " of |expected|" if scorer.get("relative") else ""
        return (
            f"the last number in the answer is {scorer.get('expected')} within {tolerance:g}"
            f"{share}: 1, else 0"
        )
    if kind == "regex":
        return f"RE2 {scorer.get('pattern')!r} matches anywhere in the answer: 1, else 0"
    if kind == "command":
        return (
            f"the worker's command {scorer.get('name')!r} reads the answer on stdin: exit 0 "
            "is 1 (else 0), unless its last line is a number, the score"
        )
    if kind == "judge":
        scale = float(scorer.get("scale", 1.0))
        return (
            f"judge {scorer.get('model')} grades on [0, {scale:g}] against the rubric "
            f"{json.dumps(scorer.get('rubric'))}; the score is the grade / {scale:g}"
        )
    if kind == "sim_truth":
        return "the simulated answer's hidden quality (sim variants only)"
    return ""


@dataclass(frozen=True)
class ReportDesign:
    campaign_id: str
    run_id: str
    variants: list[str]
    comparator: str
    rope: float
    min_pairs: int
    split: str
    fingerprint: str
    preregistration_hash: str | None
    commit_sha: str | None
    status: str
    planned_cells: int
    analysis_seed: int = BOOTSTRAP_SEED
    scenarios: tuple[ScenarioRow, ...] = ()

    @classmethod
    def of(cls, input: CampaignArtifactsInput) -> ReportDesign:
        return cls.from_document(
            input.run_id,
            input.document,
            fingerprint=input.fingerprint,
            status=input.status,
            planned_cells=input.planned_cells,
        )

    @classmethod
    def from_document(
        cls,
        run_id: str,
        doc: dict[str, Any],
        *,
        fingerprint: str,
        status: str,
        planned_cells: int,
    ) -> ReportDesign:
        """From the campaign document as JSON (``campaign.json`` in the run directory)."""
        variants = [v["id"] for v in doc["variants"]]
        seed = doc.get("analysis_seed")
        return cls(
            campaign_id=doc["campaign_id"],
            run_id=run_id,
            variants=variants,
            comparator=doc.get("comparator") or variants[0],
            rope=float(doc.get("rope", 0.02)),
            min_pairs=int(doc.get("min_pairs", 20)),
            split=doc.get("split", "holdout"),
            fingerprint=fingerprint,
            preregistration_hash=doc.get("preregistration_hash"),
            commit_sha=doc.get("commit_sha"),
            status=status,
            planned_cells=planned_cells,
            analysis_seed=BOOTSTRAP_SEED if seed is None else int(seed),
            scenarios=tuple(ScenarioRow.of(s) for s in doc.get("scenarios", [])),
        )


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


def _plot(analysis: Analysis) -> Plot:
    """The variants with a mean score on the cost (x) vs mean score (y) plot."""
    return pareto_plot(
        [
            (s.variant, s.mean_cost_usd, s.mean, s.pareto)
            for s in analysis.variants
            if s.mean is not None
        ]
    )


def _context(design: ReportDesign, analysis: Analysis, records: Sequence[RunRecord]) -> dict:
    unscored = [r for r in records if r.failure_class is not None]  # failed or cancelled
    return {
        "design": design,
        "analysis": analysis,
        "failed": unscored,
        "records": records,
        "fmt": _fmt,
        "signed": _signed,
        "plot": _plot(analysis),
        "scenarios": design.scenarios,
        "preview_chars": PREVIEW_CHARS,
    }


def render_report(
    design: ReportDesign, records: Sequence[RunRecord], analysis: Analysis | None = None
) -> tuple[Analysis, dict[str, str]]:
    """The analysis and the report files (``records.jsonl``, ``report.md``, ``report.html``);
    ``analysis`` given (the one computed from these records before), it is not computed again."""
    records = sorted(records, key=lambda r: (design.variants.index(r.variant), r.scenario, r.seed))
    if analysis is None:
        from workflows.campaign.stats import analyse  # numpy and scipy: only to compute it

        analysis = analyse(
            records,
            variants=design.variants,
            comparator=design.comparator,
            rope=design.rope,
            min_pairs=design.min_pairs,
            seed=design.analysis_seed,
        )
    context = _context(design, analysis, records)
    simulated = bool(records) and all(r.simulated for r in records)
    facts = [
        ("campaign", design.campaign_id),
        ("run", design.run_id),
        ("status", design.status),
        ("cells", f"{len(records)} of {design.planned_cells}"),
        ("recommendation", analysis.recommendation),
        ("comparator", design.comparator),
        ("split", design.split),
        ("fingerprint", design.fingerprint),
        ("preregistration", design.preregistration_hash or "none"),
        ("commit", design.commit_sha or "-"),
    ]
    html = render_page(
        "campaign.html",
        title=f"campaign {design.campaign_id}",
        heading=f"Campaign {design.campaign_id}",
        facts=facts,
        fact_ids={"recommendation": "recommendation", "fingerprint": "fingerprint"},
        simulated=simulated,
        **context,
    )
    markdown = _MD.get_template("campaign.md").render(simulated=simulated, **context)
    lines = "".join(r.model_dump_json() + "\n" for r in records)
    return analysis, {"records.jsonl": lines, "report.md": markdown, "report.html": html}
