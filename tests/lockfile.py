"""The install locks and the pyproject.toml they were compiled from (``make lock``).

``requirements.lock`` pins, with hashes, everything ``.[embedded,dev]`` needs (``make install``,
CI); ``requirements-worker.lock`` pins the runtime alone at the same versions (the Dockerfile).
Each starts with a stamp line holding the sha256 of the dependency lists it was compiled from,
so a change to ``pyproject.toml``'s dependencies that was not relocked fails
``tests/test_lockfile.py``.

Standard library only: ``make lock`` runs ``python3 -m tests.lockfile stamp FILE...`` before any
venv exists.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tomllib
from pathlib import Path

__all__ = ["LOCKS", "STAMP", "dependency_digest", "stamp", "stamped_digest"]

ROOT = Path(__file__).resolve().parents[1]
LOCKS = {"requirements.lock": ("embedded", "dev"), "requirements-worker.lock": ()}
"""Each lock and the extras it holds besides the project's own dependencies."""
STAMP = "# pyproject-dependencies-sha256: "


def dependency_digest(pyproject: Path = ROOT / "pyproject.toml") -> str:
    """sha256 of what the locks are compiled from: requires-python, the dependencies and
    every optional-dependency list (comments and formatting do not count)."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    inputs = {
        "requires-python": project.get("requires-python"),
        "dependencies": project.get("dependencies", []),
        "optional-dependencies": project.get("optional-dependencies", {}),
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def stamped_digest(lock: Path) -> str | None:
    for line in lock.read_text(encoding="utf-8").splitlines():
        if line.startswith(STAMP):
            return line.removeprefix(STAMP).strip()
    return None


def stamp(lock: Path, pyproject: Path = ROOT / "pyproject.toml") -> None:
    """Put the stamp line first in ``lock`` (replacing an older one)."""
    lines = [
        line for line in lock.read_text(encoding="utf-8").splitlines() if not line.startswith(STAMP)
    ]
    header = f"{STAMP}{dependency_digest(pyproject)}"
    lock.write_text("\n".join([header, *lines]) + "\n", encoding="utf-8")


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] != "stamp":
        print("usage: python -m tests.lockfile stamp LOCK...", file=sys.stderr)
        return 2
    for name in argv[1:]:
        stamp(Path(name))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
