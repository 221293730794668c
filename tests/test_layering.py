"""Workflows, the worker and the CLI never name a provider: only ``activities/`` does."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROVIDER_NAMES = re.compile(
    r"(?<![\w.])(openai|anthropic|sim|command|replay)(?=:\S|[\"'])", re.IGNORECASE
)


def test_no_provider_name_outside_activities() -> None:
    offenders = []
    for package in ("workflows", "worker", "client"):
        for path in (ROOT / package).rglob("*.py"):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                # A campaign scorer's ``kind: command`` is a scorer kind, not a provider name.
                if PROVIDER_NAMES.search(line) and "not a provider name" not in line:
                    offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == []


def test_the_pattern_would_catch_a_provider_branch() -> None:
    assert PROVIDER_NAMES.search('if model.startswith("openai:"):')
    assert PROVIDER_NAMES.search("model = 'sim:default'")
    assert PROVIDER_NAMES.search('kind == "anthropic"')
    assert not PROVIDER_NAMES.search("a simulated run")
    assert not PROVIDER_NAMES.search("def run(command: click.Command)")


def test_pure_modules_do_not_import_temporal() -> None:
    # The tournament modules that await (the rest are pure).
    orchestration = {"workflow.py", "calls.py", "fits.py", "artifact_writes.py"}
    pure = [
        p for p in (ROOT / "workflows" / "tournament").glob("*.py") if p.name not in orchestration
    ]
    pure.append(ROOT / "workflows" / "budget.py")
    assert len(pure) >= 10
    for path in pure:
        assert "temporalio" not in path.read_text(), path
