"""The wire-replay cache: a recorded run's exchanges, found by wire key (``workflows.wire_replay``).

A run whose ``calls.replay`` names ``RUN_ID`` reads ``RUN_ID/raw-events.jsonl`` and, for a
campaign, every cell's ``RUN_ID.<12 hex>/raw-events.jsonl``, from the worker's run store and the
directories it declares in ``replay_dirs``: input names a run id, never a path, and a link that
leads out of its root is not followed. Only answered exchanges (status 200) are kept, sim ones
included (their events are marked ``synthetic``).

One key can hold several exchanges: calls with the same request in the same seed, such as the
candidates a tournament generates from one prompt. The exchange recorded at the same call key
(phase/index/attempt, the call's place in the deterministic workflow) answers; failing that the
first one recorded (cells in run-id order, then file order), so a lookup never depends on timing.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from activities.config import Settings
from activities.errors import ConfigError
from workflows.run_ids import check_run_id
from workflows.wire_replay import wire_key

__all__ = ["Recorded", "WireCache", "WireCaches", "recording_files"]

RAW_EVENTS = "raw-events.jsonl"


@dataclass(frozen=True)
class Recorded:
    """One answered exchange, without its request (the key stands for it: half the memory)."""

    call_id: str
    call_key: str
    provider_kind: str
    url: str | None
    synthetic: bool
    response: dict[str, Any]


@dataclass
class WireCache:
    files: list[Path]
    entries: dict[str, list[Recorded]] = field(default_factory=dict)

    def find(
        self, keys: list[str], *, call_key: str, provider_kind: str
    ) -> tuple[int, Recorded] | None:
        """The exchange answering the first of ``keys`` that has one, and that key's index."""
        for i, key in enumerate(keys):
            found = [r for r in self.entries.get(key, ()) if r.provider_kind == provider_kind]
            if found:
                same_place = [r for r in found if r.call_key == call_key]
                return i, (same_place or found)[0]
        return None


def recording_files(run_id: str, settings: Settings) -> list[Path]:
    """The raw-event files of run ``run_id`` and of its campaign cells, in run-id order."""
    check_run_id(run_id)
    own = re.compile(rf"^{re.escape(run_id)}(\.[0-9a-f]{{12}})?$")
    files: list[Path] = []
    for root in [settings.runs_dir, *settings.replay_dirs]:
        root = Path(root).resolve()
        try:
            names = sorted(e.name for e in os.scandir(root) if own.match(e.name))
        except OSError:
            continue
        for name in names:
            path = (root / name / RAW_EVENTS).resolve()  # links judged by where they lead
            if path.is_relative_to(root) and path.is_file():
                files.append(path)
    return files


def _load(files: list[Path]) -> WireCache:
    cache = WireCache(files)
    for path in files:
        try:
            lines = path.read_bytes().splitlines()
        except OSError as exc:
            raise ConfigError(f"replay recording {path} cannot be read ({exc.strerror})") from exc
        for line in lines:
            if not line.strip():
                continue
            event = orjson.loads(line)
            body = (event.get("request") or {}).get("body")
            if (event.get("response") or {}).get("status") != 200 or not isinstance(body, dict):
                continue
            seed = event.get("seed", body.get("seed", 0))
            key = wire_key(body, int(seed) if isinstance(seed, int) else 0)
            cache.entries.setdefault(key, []).append(
                Recorded(
                    call_id=str(event.get("call_id", "")),
                    call_key=str(event.get("call_key", "")),
                    provider_kind=str(event.get("provider_kind", "")),
                    url=event.get("url"),
                    synthetic=bool(event.get("synthetic", False)),
                    response=event["response"],
                )
            )
    return cache


class WireCaches:
    """One cache per recorded run on a worker, rebuilt when its files change."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._caches: dict[str, tuple[tuple[tuple[str, int, int], ...], WireCache]] = {}

    def get(self, run_id: str) -> WireCache:
        files = recording_files(run_id, self.settings)
        signature = tuple((str(p), (s := p.stat()).st_size, s.st_mtime_ns) for p in files)
        with self._lock:
            cached = self._caches.get(run_id)
            if cached is not None and cached[0] == signature:
                return cached[1]
        cache = _load(files)
        with self._lock:
            self._caches[run_id] = (signature, cache)
        return cache
