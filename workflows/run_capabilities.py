"""Read capabilities: what input must carry to name another run as a source.

A run acts with its own authority only. Input that makes a run read another run's directory
(``replay:RUN_ID`` as a model, ``from_checkpoint``, ``calls.replay``) must also carry that run's
*read token*: 32 hex characters the run store writes to ``<runs_dir>/<run>/read-token`` (mode
0600) when the run first writes, and never sends anywhere else. Whoever can read that directory
holds it (the CLI, the MCP server and the Python client read it on their user's behalf and put
it in ``calls.read_tokens``); whoever can only start workflows does not.

Why the token itself travels in input, not a hash or a proof: anything the worker checks must
be in the activity's input, and activity input is history. So the token lands in the consuming
run's history, readable by whoever may read histories on that Temporal namespace; those readers
can already read the source run's own history, which holds everything its files do. What the
token withholds is the worker's disk from those who may only *start* workflows.

Pure (no I/O): workflows refuse input that names a run without a token at decode
(``run.capability_required``); the activities that read a source compare the token with the
file in constant time before they read anything (``run.capability_invalid``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from workflows.run_ids import run_id_problem

__all__ = [
    "CAPABILITY_INVALID",
    "CAPABILITY_REQUIRED",
    "MAX_READ_TOKENS",
    "READ_TOKEN_FILE",
    "READ_TOKEN_PATTERN",
    "REPLAY_PREFIX",
    "missing_read_tokens",
    "named_runs",
    "required_message",
]

READ_TOKEN_FILE = "read-token"
READ_TOKEN_PATTERN = r"^[0-9a-f]{32}$"
MAX_READ_TOKENS = 64
"""Entries of ``calls.read_tokens``."""
CAPABILITY_REQUIRED = "run.capability_required"
"""Input names another run as a source without that run's read token."""
CAPABILITY_INVALID = "run.capability_invalid"
"""The read token given for a source run is not the one in its directory (or it has none)."""
REPLAY_PREFIX = "replay:"
_TOKEN = re.compile(READ_TOKEN_PATTERN)


def named_runs(document: Any) -> dict[str, str]:
    """Run id -> the field that names it as a source, for every source run in a run's input
    (as plain JSON): a ``replay:RUN_ID`` string anywhere (a model of an Ask, a plan step, an
    executor, a tournament role or judge, a campaign variant), ``from_checkpoint.run_id`` and
    ``replay.run_id`` (wire replay). A ``replay:`` path names no run id here: the worker maps it
    to its run directory and asks for that run's token there."""
    found: dict[str, str] = {}
    _walk(document, "", found)
    return found


def _walk(value: Any, path: str, found: dict[str, str]) -> None:
    if isinstance(value, str):
        if value.startswith(REPLAY_PREFIX):
            run_id = value[len(REPLAY_PREFIX) :]
            if run_id_problem(run_id) is None:
                found.setdefault(run_id, path or "input")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if key in ("from_checkpoint", "replay") and isinstance(item, dict):
                source = item.get("run_id")
                if isinstance(source, str) and run_id_problem(source) is None:
                    found.setdefault(source, f"{where}.run_id")
            _walk(item, where, found)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _walk(item, f"{path}[{i}]", found)


def missing_read_tokens(document: Any, tokens: Mapping[str, str]) -> dict[str, str]:
    """The source runs ``document`` names (see :func:`named_runs`) that ``tokens`` holds no
    well-formed token for, with the field naming each. Wire replay (``replay.run_id``) is left
    to the worker: its recording may live in a directory the worker declares (``replay_dirs``)
    rather than the run store, and only the worker knows which."""
    return {
        run_id: where
        for run_id, where in named_runs(document).items()
        if not where.endswith("replay.run_id") and not _TOKEN.fullmatch(tokens.get(run_id, ""))
    }


def required_message(missing: Mapping[str, str]) -> str:
    """The refusal of input naming source runs without their read tokens (field, rule, fix)."""
    named = list(missing.items())[:5]
    shown = ", ".join(f"{where} names run {run_id!r}" for run_id, where in named)
    return (
        f"{shown}: reading another run needs its read token in calls.read_tokens "
        '({"RUN_ID": "<32 hex>"}); fix: start the run with ponder (the CLI, the MCP server or '
        "the Python client read it for you from the source run's directory), or copy it from "
        f"<runs_dir>/RUN_ID/{READ_TOKEN_FILE} if you can read that directory"
    )
