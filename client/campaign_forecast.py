"""What ``ponder campaign validate`` and ``run --dry-run`` print of a campaign before it runs:
its summary line, and its forecast (cells, worst-case calls and USD, the power at the planned
pairs). Imported when one of them runs, not for ``--help`` (it loads the statistics).
"""

from __future__ import annotations

from pathlib import Path

import click

from activities.config import Settings
from activities.errors import ConfigError
from activities.model_types import Usage
from activities.pricing import PRICES_AS_OF, cost_usd
from activities.providers import price_table
from activities.run_file_crypto import read_run_text
from workflows.campaign.configs import cell_calls, variant_models
from workflows.campaign.document import CampaignDocument, Validation
from workflows.campaign.records import RunRecord
from workflows.campaign.stats import (
    ALPHA,
    DEFAULT_DIFF_SD,
    MIN_PAIRS_FLOOR,
    paired_power,
    pilot_diff_sd,
)
from workflows.run_ids import check_run_id

__all__ = ["forecast", "summary"]

# A forecast cannot know token counts: this per-call shape gives a rough worst-case USD figure.
ROUGH_INPUT_TOKENS = 2_000
ROUGH_OUTPUT_TOKENS = 1_000


def summary(result: Validation) -> str:
    doc = result.document
    assert doc is not None
    cells = len(doc.variants) * len(doc.scenarios) * len(doc.seeds)
    calls = sum(cell_calls(v, s) for v in doc.variants for s in doc.scenarios) * len(doc.seeds)
    return (
        f"valid campaign {doc.campaign_id!r}: {len(doc.variants)} variants x "
        f"{len(doc.scenarios)} scenarios x {len(doc.seeds)} seeds = {cells} cells, "
        f"worst case {calls} model calls; comparator {doc.comparator_id}, split {doc.split}"
    )


def _pilot_records(pilot: str, settings: Settings) -> list[RunRecord]:
    path = Path(pilot)
    if not path.is_file():
        path = settings.runs_dir / check_run_id(pilot) / "records.jsonl"
    try:
        lines = read_run_text(path).splitlines()
    except OSError as exc:
        raise ConfigError(
            "file.unreadable", f"cannot read the pilot's records {path}: {exc.strerror}"
        ) from None
    return [RunRecord.model_validate_json(line) for line in lines if line.strip()]


def forecast(
    doc: CampaignDocument, settings: Settings, *, effect: float, pilot: str | None
) -> None:
    """Print the cells, the worst case in calls and USD, and the power at the planned pairs."""
    usage = Usage(input_tokens=ROUGH_INPUT_TOKENS, output_tokens=ROUGH_OUTPUT_TOKENS)
    models = variant_models(doc)
    prices = price_table([m for _, m, _ in models], settings, require_key=False)
    click.echo(
        f"campaign {doc.campaign_id!r}: {len(doc.variants)} variants x {len(doc.scenarios)} "
        f"scenarios x {len(doc.seeds)} seeds = "
        f"{len(doc.variants) * len(doc.scenarios) * len(doc.seeds)} cells, "
        f"at most {doc.concurrency} at once"
    )
    total_calls, total_usd, unpriced = 0, 0.0, set()
    for variant in doc.variants:
        calls = sum(cell_calls(variant, s) for s in doc.scenarios) * len(doc.seeds)
        specs = [m for v, m, _ in models if v == variant.id]
        missing = {m for m in specs if m not in prices}
        per_call = max((cost_usd(prices[m], usage) for m in specs if m in prices), default=0.0)
        unpriced |= missing
        total_calls += calls
        total_usd += calls * per_call
        usd = "unknown" if missing else f"{calls * per_call:.4f}"
        click.echo(f"  {variant.id:<20} {variant.kind:<10} worst case {calls:>6} calls, USD {usd}")
    usd_total = f"{total_usd:.4f}" + (
        f" + unpriced {', '.join(sorted(unpriced))}" if unpriced else ""
    )
    click.echo(
        f"worst case: {total_calls} calls, USD {usd_total} (at ~{ROUGH_INPUT_TOKENS} in / "
        f"{ROUGH_OUTPUT_TOKENS} out tokens a call; prices as of {PRICES_AS_OF}, ponder.toml wins)"
    )
    pairs = len(doc.scenarios) * len(doc.seeds)
    sd, source = DEFAULT_DIFF_SD, f"the stated default {DEFAULT_DIFF_SD}"
    if pilot is not None:
        measured = pilot_diff_sd(_pilot_records(pilot, settings), doc.comparator_id)
        if measured is not None:
            sd, source = measured, f"pilot {pilot}"
    power = paired_power(effect, sd, pairs)
    needed = next((n for n in range(2, 100_000) if paired_power(effect, sd, n) >= 0.8), None)
    floor = max(MIN_PAIRS_FLOOR, doc.min_pairs)
    click.echo(
        f"power: {pairs} pairs per variant against {doc.comparator_id}, SD of paired "
        f"differences {sd:.4g} ({source}): {power:.0%} to detect an effect of {effect:g} "
        f"(alpha {ALPHA}); 80% needs {needed or 'over 100000'} pairs; a decision needs "
        f">= {floor} pairs"
    )
