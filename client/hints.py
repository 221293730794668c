"""How printed hints name the ``ponder`` program, so a hint runs as printed.

A hint such as ``continue with: ponder resume ID`` is copied into the same shell. When that
shell finds this very ``ponder`` on its PATH (an activated venv, an installed tool), the bare
name runs it; when it was run by path (``.venv/bin/ponder`` without activation), the bare name
would fail with exit 127, so the hint names the program as it was invoked.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

__all__ = ["ledger_extend", "ledger_wait_hint", "ponder_program"]


def ponder_program() -> str:
    """``ponder``, or the path this ``ponder`` was run by when PATH finds another (or none)."""
    invoked = sys.argv[0] if sys.argv else ""
    if Path(invoked).name != "ponder":  # python -m client, a test harness, an MCP host
        return "ponder"
    found = shutil.which("ponder")
    if found and Path(found).resolve() == Path(invoked).resolve():
        return "ponder"
    return shlex.quote(invoked)


def ledger_extend(blocking: str | None) -> str | None:
    """``ponder ledger extend NAME`` when a run waits for shared ledger NAME (its blocking
    limit or need names it: ``workflows.ledger.types.ledger_wait``); None for a run's own limit.
    A ledger is raised for every run drawing on it, never through one run's ``extend``."""
    from workflows.ledger.types import waiting_ledger

    name = waiting_ledger(blocking)
    return None if name is None else f"{ponder_program()} ledger extend {name}"


def ledger_wait_hint(blocking: str | None) -> str | None:
    """What an MCP client is told of a run waiting for its shared ledger (no tool raises a
    ledger: its operator does); None for a run's own limit."""
    command = ledger_extend(blocking)
    if command is None:
        return None
    return (
        f"the run waits for its shared ledger ({blocking}): `{command}` raises it for every run "
        "drawing on it, and the run continues where it stopped; the extend tool cannot"
    )
