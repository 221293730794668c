"""The maps in the plan packages' docstrings name every module, and only modules that exist.

``workflows/plan_run/__init__.py`` and ``workflows/plan/__init__.py`` each give a new engineer a
one-line-a-module map. A map that misses a module added later, or names one renamed or removed,
misleads more than no map, so this checks both ways. The docstrings are read from the source
(``ast``), not imported: the check is the text, and it costs no import.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("workflows/plan_run", "workflows/plan")
MAPPED = re.compile(r"``(\w+)``(?=(?:, ``\w+``)*:)")
"""A module the map gives a line to: ``name``: ..., or several as ``a``, ``b``: ..."""
DOTTED = re.compile(r"``((?:workflows\.)?\w+(?:\.\w+)+)``")
FILE_SUFFIXES = {"json", "jsonl", "html"}
"""``checkpoints.json`` is a run file, not ``checkpoints``' attribute."""
PLAN_KEYS = {"iterate.until", "run.closed"}
"""Spelled like a module's attribute but a plan key and a trace event, not code."""


def docstring(package: str) -> str:
    source = (ROOT / package / "__init__.py").read_text(encoding="utf-8")
    text = ast.get_docstring(ast.parse(source))
    assert text is not None, f"{package}/__init__.py has no docstring"
    return text


def modules(package: str) -> set[str]:
    return {p.stem for p in (ROOT / package).glob("*.py") if p.stem != "__init__"}


def mapped(text: str) -> list[str]:
    """The modules named in the map's lines (each starts ``- ``; an indented line goes on the
    one above), in order."""
    lines: list[str] = []
    for line in text.splitlines():
        if line.startswith("- "):
            lines.append(line)
        elif line.startswith("  ") and lines:
            lines[-1] += " " + line.strip()
        else:
            lines.append("")
    return [name for line in lines if line for name in MAPPED.findall(line)]


def top_level_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def missing_references(package: str, text: str) -> list[str]:
    """Dotted names the docstring cites that do not exist: ``workflows.X.Y`` as a module, and
    ``module.attr`` (a module of this package) as a top-level name of that module."""
    own = modules(package)
    missing = []
    for ref in DOTTED.findall(text):
        parts = ref.split(".")
        if parts[-1] in FILE_SUFFIXES:
            continue
        if parts[0] == "workflows":
            path = ROOT.joinpath(*parts)
            if not (path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()):
                missing.append(ref)
        elif (
            parts[0] in own
            and ref not in PLAN_KEYS
            and parts[1] not in top_level_names(ROOT / package / f"{parts[0]}.py")
        ):
            missing.append(ref)
    return missing


@pytest.mark.parametrize("package", PACKAGES)
def test_every_module_has_exactly_one_line_and_every_line_a_module(package: str) -> None:
    named = mapped(docstring(package))
    assert len(named) >= 20
    assert sorted({n for n in named if named.count(n) > 1}) == []
    assert sorted(modules(package) - set(named)) == [], "modules the map leaves out"
    assert sorted(set(named) - modules(package)) == [], "the map names modules that do not exist"


@pytest.mark.parametrize("package", PACKAGES)
def test_every_dotted_name_the_docstring_cites_exists(package: str) -> None:
    text = docstring(package)
    assert DOTTED.search(text) is not None
    assert missing_references(package, text) == []


def test_the_checks_catch_a_stale_map() -> None:
    package = "workflows/plan_run"
    text = docstring(package)
    dropped = text.replace("- ``pacing``:", "- pacing:")
    assert sorted(modules(package) - set(mapped(dropped))) == ["pacing"]
    renamed = text + "\n- ``pacer``: a module that is not there.\n"
    assert sorted(set(mapped(renamed)) - modules(package)) == ["pacer"]
    cited = text + "\nSee ``walk._no_such`` and ``workflows.plan.no_such``.\n"
    assert missing_references(package, cited) == ["walk._no_such", "workflows.plan.no_such"]


def test_contributing_points_to_both_maps() -> None:
    layout = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8").split("## Layout", 1)[1]
    for package in PACKAGES:
        assert f"{package}/__init__.py" in layout
