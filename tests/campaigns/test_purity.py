"""The pure campaign modules import no Temporal, httpx or activities, not even transitively."""

from __future__ import annotations

import subprocess
import sys

PURE = [
    "workflows.campaign.errors",
    "workflows.campaign.document",
    "workflows.campaign.matrix",
    "workflows.campaign.scoring",
    "workflows.campaign.records",
    "workflows.campaign.stats",
    "workflows.campaign.cells_budget",
    "workflows.campaign.cell_records",
    "workflows.campaign.configs",
    "workflows.campaign.types",
    "workflows.campaign.state",
]

CHECK = """
import importlib, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
bad = sorted(m for m in sys.modules if m.split('.')[0] in ('temporalio', 'httpx', 'activities'))
print(','.join(bad))
"""


def test_pure_modules_import_nothing_with_effects() -> None:
    out = subprocess.run(
        [sys.executable, "-c", CHECK, *PURE], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == ""


def test_the_check_would_catch_an_import() -> None:
    out = subprocess.run(
        [sys.executable, "-c", CHECK, "workflows.model_calls"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "activities" in out.stdout
