"""The cell matrix: variant-major order, deterministic run ids, the design fingerprint.

Pure (hashlib and json only).
"""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel

from workflows.campaign.document import CampaignDocument

__all__ = ["MAX_CAMPAIGN_RUN_ID", "Cell", "cell_run_id", "cells", "child_seed", "fingerprint"]

# A cell's run id is the campaign's plus ``.`` and 12 hex digits; run ids stop at 128.
MAX_CAMPAIGN_RUN_ID = 128 - 13


class Cell(BaseModel):
    index: int
    variant: str
    scenario: str
    seed: int
    run_id: str
    child_seed: int
    """The seed the cell's child runs with (see :func:`child_seed`)."""


def child_seed(seed: int, scenario: str) -> int:
    """The seed of every variant's cell on ``(scenario, seed)``.

    The same for all variants of a pair (common random numbers, so pairs differ by the variant
    only), different across scenarios: draws that depend on the seed alone (the simulated
    provider's, a sampling seed) would otherwise repeat in every scenario and make its cells
    copies of each other rather than independent pairs.
    """
    digest = hashlib.sha256(json.dumps([scenario, seed]).encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def cell_run_id(campaign_run_id: str, variant: str, scenario: str, seed: int) -> str:
    """Stable for ``(campaign, variant, scenario, seed)``: a restarted cell finds its own run."""
    key = json.dumps([campaign_run_id, variant, scenario, seed])
    return f"{campaign_run_id}.{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def cells(doc: CampaignDocument, campaign_run_id: str) -> list[Cell]:
    """Every cell, variant-major (then scenario, then seed), each with its run id."""
    out: list[Cell] = []
    for variant in doc.variants:
        for scenario in doc.scenarios:
            for seed in doc.seeds:
                out.append(
                    Cell(
                        index=len(out),
                        variant=variant.id,
                        scenario=scenario.id,
                        seed=seed,
                        run_id=cell_run_id(campaign_run_id, variant.id, scenario.id, seed),
                        child_seed=child_seed(seed, scenario.id),
                    )
                )
    return out


def fingerprint(doc: CampaignDocument) -> str:
    """sha256 of the design: ids and seeds sorted, split, comparator, route, preregistration."""
    design: dict[str, object] = {
        "campaign_id": doc.campaign_id,
        "variants": sorted(v.id for v in doc.variants),
        "scenarios": sorted(s.id for s in doc.scenarios),
        "seeds": sorted(doc.seeds),
        "split": doc.split,
        "comparator": doc.comparator_id,
        "base_urls": sorted(
            {str(v.config.get("base_url")) for v in doc.variants if v.config.get("base_url")}
        ),
        "provider": doc.route.provider,
        "preregistration_hash": doc.preregistration_hash,
    }
    if doc.analysis_seed is not None:  # only when given: a document without one keeps its hash
        design["analysis_seed"] = doc.analysis_seed
    text = json.dumps(design, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()
