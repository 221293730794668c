"""The MCP resources: ``ponder://runs/{run_id}/{summary|leaderboard|comparisons|trace|report}``.

Read from the run store (what the worker wrote). Record lists page with ``?cursor=N``
(``PAGE_RECORDS`` records, at most ``PAGE_BYTES``), the summary and the report with
``?offset=N`` (bytes, ``PAGE_BYTES`` a page); each page says where the next one is (``next`` in
a record page, ``_meta["ponder/next"]`` otherwise); an ``offset`` or ``cursor`` that is not a
number from 0 to ``MAX_QUERY_INT`` is ``input.invalid``. A run id that is not a plain id (a
path, ``..``) is refused.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import parse_qs, unquote, urlsplit

import mcp_types as types

from activities.config import Settings
from activities.errors import ConfigError
from activities.run_file_crypto import MAGIC, open_run_bytes, read_run_bytes
from client.run_list import checked_run_dir, store_rows
from workflows import phases

__all__ = ["NAMES", "PAGE_BYTES", "PAGE_RECORDS", "list_resources", "read", "templates"]

PAGE_RECORDS = 100
PAGE_BYTES = 256 * 1024
MAX_QUERY_DIGITS = 18
MAX_QUERY_INT = 10**MAX_QUERY_DIGITS - 1
"""The largest ``?offset=`` or ``?cursor=`` (past the end of a file a page is empty)."""
LISTED_RUNS = 50
NAMES = {
    "summary": "the run's summary: status, winner or outcome, calls, usage (?offset=N)",
    "leaderboard": "the final ranking (Bradley-Terry scores, W/L/T)",
    "comparisons": "every judge verdict with both critiques (paged: ?cursor=N)",
    "trace": "the run's events (paged: ?cursor=N)",
    "report": "report.html (paged by bytes: ?offset=N)",
}


def templates() -> list[types.ResourceTemplate]:
    return [
        types.ResourceTemplate(
            name=f"run-{name}",
            uri_template=f"ponder://runs/{{run_id}}/{name}",
            description=description,
            mime_type="text/html" if name == "report" else "application/json",
        )
        for name, description in NAMES.items()
    ]


def list_resources(settings: Settings) -> list[types.Resource]:
    rows = sorted(store_rows(settings.runs_dir), key=lambda r: r.created or "", reverse=True)
    return [
        types.Resource(
            name=f"{row.run_id} summary",
            uri=f"ponder://runs/{row.run_id}/summary",
            description=f"{row.kind}, {row.status}" + (f", {row.outcome}" if row.outcome else ""),
            mime_type="application/json",
        )
        for row in rows[:LISTED_RUNS]
    ]


def _parse(uri: str) -> tuple[str, str, dict[str, list[str]]]:
    parts = urlsplit(uri)
    segments = parts.path.split("/")
    if parts.scheme != "ponder" or parts.netloc != "runs" or len(segments) != 3 or segments[0]:
        raise ConfigError(
            "resource.invalid",
            f"{uri!r} is not a ponder resource",
            fix="use ponder://runs/{run_id}/" + "|".join(NAMES),
        )
    run_id, name = unquote(segments[1]), segments[2]
    if name not in NAMES:
        raise ConfigError(
            "resource.invalid",
            f"no resource {name!r} for a run",
            fix=f"use one of {', '.join(NAMES)}",
        )
    return run_id, name, parse_qs(parts.query)


def _int(query: dict[str, list[str]], key: str) -> int:
    """``?offset=N`` or ``?cursor=N``: ASCII digits, at most ``MAX_QUERY_INT`` (a seek past
    2^63 was an ``internal.error``, and so was a number too long for ``int``)."""
    raw = query.get(key, ["0"])[0]
    if not (raw.isascii() and raw.isdigit()) or len(raw) > MAX_QUERY_DIGITS:
        raise ConfigError(
            "input.invalid",
            f"{key}={raw[:40]!r} is not a number from 0 to {MAX_QUERY_INT}",
            fix=f"give {key}=N (0 <= N <= {MAX_QUERY_INT}), as the page's next link does",
        )
    return int(raw)


def _file(run_dir: Path, name: str) -> Path:
    path = run_dir / name
    if path.is_symlink() or not path.is_file():
        raise ConfigError(
            "run.not_found",
            f"run {run_dir.name!r} has no {name} here",
            fix="check the run id with list_runs; a remote worker keeps artifacts on its machine",
        )
    return path


def _records(uri: str, path: Path, cursor: int, keep: Any = None) -> str:
    items: list[Any] = []
    size = total = 0
    next_cursor: int | None = None
    with path.open() as f:
        index = -1
        for line in _lines(f, path):
            if not line.strip():
                continue
            record = json.loads(line)
            if keep is not None and not keep(record):
                continue
            index += 1
            total = index + 1
            if index < cursor or next_cursor is not None:
                continue
            if len(items) >= PAGE_RECORDS or size + len(line) > PAGE_BYTES:
                next_cursor = index
                continue
            items.append(record)
            size += len(line)
    base = uri.split("?", 1)[0]
    return json.dumps(
        {
            "items": items,
            "cursor": cursor,
            "total": total,
            "next": None if next_cursor is None else f"{base}?cursor={next_cursor}",
        }
    )


def _lines(f: TextIO, path: Path) -> Iterable[str]:
    """``f``'s lines, opened first when the run file is sealed (read whole then)."""
    first = f.readline()
    if not first.startswith(MAGIC.decode()):
        yield first
        yield from f
        return
    yield from open_run_bytes((first + f.read()).encode(), path).decode().splitlines(True)


def _final_phase(record: dict[str, Any]) -> bool:
    return record.get("phase") == phases.FINAL_JUDGING


def _bytes(uri: str, path: Path, offset: int) -> tuple[str, str | None]:
    """One page of a file by bytes from ``offset``, and the next page's URI (None: the end)."""
    with path.open("rb") as f:
        if f.read(len(MAGIC)) == MAGIC:  # sealed: pages of the opened file
            plain = read_run_bytes(path)
            chunk, more = plain[offset : offset + PAGE_BYTES], len(plain) > offset + PAGE_BYTES
        else:
            f.seek(min(offset, os.fstat(f.fileno()).st_size))  # past the end: an empty page
            chunk = f.read(PAGE_BYTES)
            more = bool(f.read(1))
    # A page may end inside a multi-byte character: the next page starts after this one's
    # bytes, so nothing is lost, only that character's halves are dropped from the two pages.
    text = chunk.decode("utf-8", errors="ignore")
    next_page = f"{uri.split('?', 1)[0]}?offset={offset + len(chunk)}" if more else None
    return text, next_page


def read(settings: Settings, uri: str) -> types.TextResourceContents:
    run_id, name, query = _parse(uri)
    run_dir = checked_run_dir(settings.runs_dir, run_id)  # run.id_invalid for a path-shaped id
    plan = (run_dir / "cost.json").is_file() and not (run_dir / "summary.json").exists()
    next_page: str | None = None
    if name == "summary":
        summary = _file(run_dir, "cost.json" if plan else "summary.json")
        text, next_page = _bytes(uri, summary, _int(query, "offset"))
    elif name == "leaderboard":
        text = _records(uri, _file(run_dir, "scores.jsonl"), _int(query, "cursor"), _final_phase)
    elif name == "comparisons":
        text = _records(uri, _file(run_dir, "comparisons.jsonl"), _int(query, "cursor"))
    elif name == "trace":
        events = "trace.jsonl" if plan else "events.jsonl"
        text = _records(uri, _file(run_dir, events), _int(query, "cursor"))
    else:
        text, next_page = _bytes(uri, _file(run_dir, "report.html"), _int(query, "offset"))
        if next_page:
            text += f"\n<!-- ponder: truncated at {PAGE_BYTES} bytes; next page {next_page} -->"
    mime = "text/html" if name == "report" else "application/json"
    meta = {"ponder/next": next_page} if next_page else None
    return types.TextResourceContents(uri=uri, text=text, mime_type=mime, _meta=meta)
