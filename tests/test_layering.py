"""The layering holds at import time, not only in the text.

Each pure module is imported alone in a fresh interpreter and must leave no ``temporalio``,
``httpx`` or ``activities`` module in ``sys.modules``. Every module under ``workflows/`` is either
one of the orchestration modules (they await activities) or declared pure in the import-linter
contract in ``pyproject.toml``, so a new module cannot slip past both checks. Workflows, the
worker and the CLI never name a provider: only ``activities/`` does.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_NAMES = "openai|anthropic|sim|command|replay"
# A quoted provider name ("openai", 'sim:...') or a model spec (openai:gpt-4o) anywhere; not the
# English word in "a command's worker".
PROVIDER_NAMES = re.compile(rf"[\"']({_NAMES})(?=:|[\"'])|(?<![\w.])({_NAMES}):\w", re.IGNORECASE)
PROVIDER_NAME_ALLOWED: dict[str, set[str]] = {
    # The default model id is data every side shares, declared once; it is not a branch.
    "workflows/model_types.py": {"sim"},
    # A campaign's "command" scorer kind (it names a command the worker declares), not a provider.
    "workflows/campaign/document.py": {"command"},
    # The usage example in the programmatic client's docstring.
    "client/api.py": {"sim"},
}
"""Files allowed to spell these provider names, and why; nothing else outside activities/."""
ORCHESTRATION = {
    "workflows.ask",
    "workflows.campaign.workflow",
    "workflows.model_calls",
    "workflows.raw_input",
    "workflows.tournament.artifact_writes",
    "workflows.tournament.calls",
    "workflows.tournament.fits",
    "workflows.tournament.workflow",
    "workflows.plan_run.dispatch",
    "workflows.plan_run.workflow",
}
"""Workflow code that awaits activities; everything else under ``workflows/`` is pure."""
FORBIDDEN_ROOTS = ("temporalio", "httpx", "activities")
PURE_CONTRACT = "pure cores import no Temporal, HTTP or activities, even transitively"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def workflow_modules() -> list[str]:
    return sorted(_module_name(p) for p in (ROOT / "workflows").rglob("*.py"))


def contract_sources(name: str) -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    [contract] = [c for c in contracts if c["name"] == name]
    return list(contract["source_modules"])


def declared_pure(module: str, sources: list[str]) -> bool:
    return any(
        module == source or (source.endswith(".**") and module.startswith(source[:-2]))
        for source in sources
    )


PURE = [
    m
    for m in workflow_modules()
    if m not in ORCHESTRATION
    and m not in {"workflows", "workflows.tournament", "workflows.plan_run", "workflows.campaign"}
]


def loaded_after_import(module: str) -> list[str]:
    """The forbidden modules ``import module`` loads in a fresh interpreter."""
    code = (
        f"import json, sys; import {module}; "
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN_ROOTS})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return list(json.loads(out.stdout))


@pytest.mark.parametrize("module", PURE)
def test_pure_module_loads_no_temporal_httpx_or_activities(module: str) -> None:
    assert loaded_after_import(module) == []


def test_the_check_sees_a_transitive_import() -> None:
    # workflows.model_calls imports activities (through Temporal's passthrough block).
    loaded = loaded_after_import("workflows.model_calls")
    assert "temporalio" in loaded and "activities.call_model" in loaded


def test_every_workflows_module_is_declared() -> None:
    sources = contract_sources(PURE_CONTRACT)
    undeclared = [m for m in PURE if not declared_pure(m, sources)]
    assert undeclared == [], (
        "add these to the pure-core contract in pyproject.toml, or to ORCHESTRATION here if "
        "they await activities"
    )
    assert len(PURE) >= 15
    assert not any(declared_pure(m, sources) for m in ORCHESTRATION)


def test_import_contracts_hold() -> None:
    lint = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "0 broken" in result.stdout


def test_no_provider_name_outside_activities() -> None:
    offenders = []
    for package in ("workflows", "worker", "client"):
        for path in (ROOT / package).rglob("*.py"):
            relative = str(path.relative_to(ROOT))
            allowed = PROVIDER_NAME_ALLOWED.get(relative, set())
            for number, line in enumerate(path.read_text().splitlines(), 1):
                names = {(m.group(1) or m.group(2)).lower() for m in PROVIDER_NAMES.finditer(line)}
                if names - allowed:
                    offenders.append(f"{relative}:{number}: {line.strip()}")
    assert offenders == []


def test_the_pattern_would_catch_a_provider_branch() -> None:
    assert PROVIDER_NAMES.search('if model.startswith("openai:"):')
    assert PROVIDER_NAMES.search("model = 'sim:default'")
    assert PROVIDER_NAMES.search('kind == "anthropic"')
    assert not PROVIDER_NAMES.search("a simulated run")
    assert not PROVIDER_NAMES.search("def run(command: click.Command)")
    assert not PROVIDER_NAMES.search("A command's own worker")
    assert PROVIDER_NAMES.search("e.g. openai:gpt-4o-mini")
