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

__all__ = ["ponder_program"]


def ponder_program() -> str:
    """``ponder``, or the path this ``ponder`` was run by when PATH finds another (or none)."""
    invoked = sys.argv[0] if sys.argv else ""
    if Path(invoked).name != "ponder":  # python -m client, a test harness, an MCP host
        return "ponder"
    found = shutil.which("ponder")
    if found and Path(found).resolve() == Path(invoked).resolve():
        return "ponder"
    return shlex.quote(invoked)
