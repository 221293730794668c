"""The layering holds at import time, not only in the text.

The pure modules are imported in a fresh interpreter (one for them all: a forbidden module is in
``sys.modules`` after them all iff it is in some one module's import closure, and each is blamed on
the import that loaded it) and must leave no ``temporalio``, ``httpx`` or ``activities`` module in
``sys.modules``. ``pyproject.toml``'s import-linter contracts
are the one list: every module under ``workflows/`` is a pure core (the pure contract's sources)
or workflow code that awaits activities (the definitions activities may not import), so a new
module cannot slip past both checks. Workflows, the worker and the CLI never name a provider:
only ``activities/`` does.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_NAMES = "openai|anthropic|sim|command|replay"
# A quoted provider name ("openai", 'sim:...') or a model spec (openai:gpt-4o) anywhere; not the
# English word in "a command's worker".
PROVIDER_NAMES = re.compile(rf"[\"']({_NAMES})(?=:|[\"'])|(?<![\w.])({_NAMES}):\w", re.IGNORECASE)
PROVIDER_NAME_ALLOWED: dict[str, set[str]] = {
    # The default model id and the examples --help and errors show are data every side
    # shares, declared once (here, so a command's --help imports nothing of activities/).
    "workflows/model_names.py": {"sim", "openai", "anthropic", "command", "mcp"},
    # The built-in sim endpoint's options are input whose ceilings decode checks:
    # validation of a name, not a branch on which provider runs.
    "workflows/sim_options.py": {"sim"},
    # A campaign's "command" scorer kind (it names a command the worker declares), not a provider.
    "workflows/campaign/document.py": {"command"},
    # The usage example in the programmatic client's docstring.
    "client/api.py": {"sim"},
    # loop-plan/1 model *family* names (claude, openai), routed through the run's executors.
    "workflows/plan/routing.py": {"openai"},
    # Model families (a judge's self-preference, plan routing): names of vendors' model lines
    # and what a sim model's family= says, not a branch on which provider runs a call.
    "workflows/families.py": {"sim", "openai", "anthropic"},
    # The USD column's label for a simulated run, and the MCP help pointing at the free sim.
    "client/runs_cli.py": {"sim"},
    # The endpoint kinds a served ask resolves as the registry would, loading no provider.
    "client/ask_http.py": {"sim", "openai", "anthropic"},
    "client/mcp/server.py": {"sim"},
    # The call input's ``replay`` field (the run's wire-replay routing, carried to the activity
    # as a dict key), not a branch on which provider runs a call.
    "workflows/model_calls.py": {"replay"},
    # Which runs an input reads: a replay model names a run, whose read token decode requires
    # (a capability check on the source, not a branch on which provider runs a call).
    "workflows/run_capabilities.py": {"replay"},
}
"""Files allowed to spell these provider names, and why; nothing else outside activities/."""
FORBIDDEN_ROOTS = ("temporalio", "httpx", "activities")
PURE_CONTRACT = "pure cores import no Temporal, HTTP or activities, even transitively"
DEFINITIONS_CONTRACT = "activities never import workflow definitions"
PACKAGES = {
    _name
    for _init in (ROOT / "workflows").rglob("__init__.py")
    for _name in [".".join(_init.parent.relative_to(ROOT).parts)]
}
"""Package modules need no entry (as a contract source a package means all of it)."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def workflow_modules() -> list[str]:
    return sorted(_module_name(p) for p in (ROOT / "workflows").rglob("*.py"))


def _contract(name: str) -> dict[str, list[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    [contract] = [c for c in config["tool"]["importlinter"]["contracts"] if c["name"] == name]
    return contract


def _matches(module: str, expressions: list[str]) -> bool:
    return any(
        module == e or (e.endswith(".**") and module.startswith(e[:-2])) for e in expressions
    )


PURE_SOURCES = _contract(PURE_CONTRACT)["source_modules"]
DEFINITION_MODULES = _contract(DEFINITIONS_CONTRACT)["forbidden_modules"]
PURE = [m for m in workflow_modules() if _matches(m, PURE_SOURCES)]
"""The pure cores, as ``pyproject.toml`` declares them (one list for both checks)."""
DEFINITIONS = [m for m in workflow_modules() if _matches(m, DEFINITION_MODULES)]
"""Workflow code that awaits activities: the workflow definitions and their helpers."""


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


def loaded_by_each_import(modules: list[str]) -> dict[str, list[str]]:
    """In one fresh interpreter, ``import`` each of ``modules`` in turn: the forbidden modules each
    import newly loaded. A forbidden module in any one module's import closure is loaded by the
    first import whose closure holds it, so it is seen exactly when a lone import would show it
    (one interpreter instead of one per module: ~24 s of CPU a suite run)."""
    code = (
        "import importlib, json, sys\n"
        f"roots = {FORBIDDEN_ROOTS}\n"
        "def bad(): return {m for m in sys.modules if m.split('.')[0] in roots}\n"
        "found = {}\n"
        "for name in sys.argv[1:]:\n"
        "    before = bad()\n"
        "    importlib.import_module(name)\n"
        "    found[name] = sorted(bad() - before)\n"
        "print(json.dumps(found))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, *modules], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return dict(json.loads(out.stdout))


def test_pure_modules_load_no_temporal_httpx_or_activities() -> None:
    loaded = loaded_by_each_import(PURE)
    assert list(loaded) == PURE
    assert {module: found for module, found in loaded.items() if found} == {}


def test_the_shared_interpreter_blames_the_import_that_loads_a_forbidden_module() -> None:
    # workflows.model_calls loads temporalio; a pure module after it adds none.
    loaded = loaded_by_each_import(["workflows.budget", "workflows.model_calls", PURE[0]])
    assert loaded["workflows.budget"] == [] and loaded[PURE[0]] == []
    assert "temporalio" in loaded["workflows.model_calls"]


def test_the_check_sees_a_transitive_import() -> None:
    # The OpenAI provider imports no httpx itself: the HTTP helpers it posts with do.
    loaded = loaded_after_import("activities.providers.openai")
    assert "httpx" in loaded and "activities.providers.http" in loaded


def test_workflow_definitions_load_no_activity_module() -> None:
    # Workflows reach their activities through the contract modules (names, models, codes) on
    # their own side: importing workflow code, as every process that starts or replays a run
    # does, loads none of the activities' I/O code.
    loaded = loaded_by_each_import(DEFINITIONS)
    assert list(loaded) == DEFINITIONS
    assert "temporalio" in loaded[DEFINITIONS[0]]  # the probe sees what a definition loads
    activity_modules = {
        module: [m for m in found if m.split(".")[0] == "activities"]
        for module, found in loaded.items()
    }
    assert {module: found for module, found in activity_modules.items() if found} == {}


def test_every_workflows_module_is_declared_pure_or_a_definition() -> None:
    undeclared = [
        m for m in workflow_modules() if m not in PACKAGES and m not in PURE + DEFINITIONS
    ]
    assert undeclared == [], (
        "declare these in pyproject.toml: in the pure-core contract's source_modules, or (if they "
        "await activities) in the workflow-definitions contract's forbidden_modules"
    )
    assert set(PURE).isdisjoint(DEFINITIONS)
    assert len(PURE) >= 15 and "workflows.tournament.workflow" in DEFINITIONS


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
