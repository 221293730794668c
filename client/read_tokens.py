"""The read tokens a run's input needs, read from the run store on the user's behalf.

Input that reads another run (a ``replay`` model, ``from_checkpoint``, ``calls.replay``) must
carry that run's read token (``workflows/run_capabilities.py``). Whoever starts a run through
ponder (the CLI, the MCP server, the Python client) can read the run store, so the client reads
each token from ``<runs_dir>/<run>/read-token`` and puts it in ``calls.read_tokens``; tokens the
input already carries win. A run from before read tokens existed has none: the client makes one
in its directory (as the user who owns it). A run that is not in this run store (a worker on
another machine, a ``replay_dirs`` recording) gets nothing here: the worker decides.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from workflows.run_capabilities import READ_TOKEN_FILE, REPLAY_PREFIX, named_runs
from workflows.run_ids import run_id_problem

__all__ = ["attach_read_tokens", "read_token"]

T = TypeVar("T")


def read_token(runs_dir: Path, run_id: str) -> str | None:
    """Run ``run_id``'s read token from the run store, made first if the run has none; None
    when the run store holds no such run (or its directory cannot be read)."""
    if run_id_problem(run_id) is not None:
        return None
    run_dir = Path(runs_dir) / run_id
    if not run_dir.is_dir() or run_dir.is_symlink():
        return None
    path = run_dir / READ_TOKEN_FILE
    if not path.exists():
        _make_token(run_dir)
    try:
        text = path.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return None
    return text or None


def _make_token(run_dir: Path) -> None:
    try:
        fd, tmp = tempfile.mkstemp(dir=run_dir, prefix=".read-token.")  # 0600
    except OSError:
        return
    try:
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(16) + "\n")
        os.link(tmp, run_dir / READ_TOKEN_FILE)
    except OSError:
        pass  # made meanwhile, or not ours to write: read what is there
    finally:
        Path(tmp).unlink(missing_ok=True)


def _store_paths(value: Any, runs_dir: Path) -> set[str]:
    """Run ids of the ``replay:/path`` sources inside the run store."""
    found: set[str] = set()
    if isinstance(value, str) and value.startswith(REPLAY_PREFIX + "/"):
        root = runs_dir.resolve()
        path = Path(value[len(REPLAY_PREFIX) :]).resolve()
        if path.is_relative_to(root) and path != root:
            found.add(path.relative_to(root).parts[0])
    elif isinstance(value, dict):
        for item in value.values():
            found |= _store_paths(item, runs_dir)
    elif isinstance(value, list):
        for item in value:
            found |= _store_paths(item, runs_dir)
    return found


def attach_read_tokens(input: T, runs_dir: Path) -> T:
    """``input`` (a workflow input model with ``calls``, or a JSON document) with
    ``calls.read_tokens`` holding the token of every run it reads that this run store holds."""
    if isinstance(input, dict):
        doc: Any = input
    elif isinstance(input, BaseModel) and hasattr(input, "calls"):
        doc = input.model_dump(mode="json")
    else:
        return input
    wanted = set(named_runs(doc)) | _store_paths(doc, Path(runs_dir))
    if not wanted:
        return input
    found = {r: t for r in sorted(wanted) if (t := read_token(Path(runs_dir), r)) is not None}
    if not found:
        return input
    if isinstance(input, dict):
        calls = dict(input.get("calls") or {})
        calls["read_tokens"] = found | dict(calls.get("read_tokens") or {})
        return {**input, "calls": calls}  # type: ignore[return-value]
    calls_model = input.calls  # type: ignore[attr-defined]
    tokens = found | calls_model.read_tokens
    updated = calls_model.model_copy(update={"read_tokens": tokens})
    return input.model_copy(update={"calls": updated})  # type: ignore[attr-defined,no-any-return]
