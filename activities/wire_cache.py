"""The wire-replay cache: a recorded run's exchanges, found by wire key (``workflows.wire_replay``).

A run whose ``calls.replay`` names ``RUN_ID`` reads ``RUN_ID/raw-events.jsonl`` and, for a
campaign, every cell's ``RUN_ID.<12 hex>/raw-events.jsonl``, from the worker's run store and the
directories it declares in ``replay_dirs``: input names a run id, never a path, and links are
not followed. Kept: answered exchanges (status 200, sim ones included, marked ``synthetic``)
and final errors (a 4xx no retry changes); an error that was retried is not an outcome.

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
from activities.providers.http import is_final_status
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
    """Answered exchanges (status 200) by key."""
    failures: dict[str, list[Recorded]] = field(default_factory=dict)
    """Final error answers (a 4xx no retry changes, see ``is_final_status``) by key: a call
    that failed so in the original fails the same way in the replay."""

    def find(
        self, keys: list[str], *, call_key: str, provider_kind: str
    ) -> tuple[int, Recorded] | None:
        """The exchange answering the first of ``keys`` that has one, and that key's index;
        an answer wins over a final error under any key (a JSON-mode request the endpoint
        refused, then its fallback that was answered, replays as the answer)."""
        for table in (self.entries, self.failures):
            for i, key in enumerate(keys):
                found = [r for r in table.get(key, ()) if r.provider_kind == provider_kind]
                if found:
                    same_place = [r for r in found if r.call_key == call_key]
                    return i, (same_place or found)[0]
        return None


def recording_files(run_id: str, settings: Settings) -> list[Path]:
    """The raw-event files of run ``run_id`` and of its campaign cells, in run-id order.

    Links are not followed (a cell directory or events file that is a symlink is skipped), so
    nothing outside a root is read, without resolving every path."""
    check_run_id(run_id)
    own = re.compile(rf"^{re.escape(run_id)}(\.[0-9a-f]{{12}})?$")
    files: list[Path] = []
    for root in [settings.runs_dir, *settings.replay_dirs]:
        root = Path(root).resolve()
        try:
            names = sorted(
                e.name
                for e in os.scandir(root)
                if own.match(e.name) and e.is_dir(follow_symlinks=False)
            )
        except OSError:
            continue
        for name in names:
            path = root / name / RAW_EVENTS
            if path.is_file() and not path.is_symlink():
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
            try:
                event = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # a line cut short by a killed worker holds no exchange: a miss
            body = (event.get("request") or {}).get("body")
            status = (event.get("response") or {}).get("status")
            if not isinstance(body, dict) or not isinstance(status, int):
                continue
            if status == 200:
                table = cache.entries
            elif is_final_status(status) and not event.get("replay_miss"):
                table = cache.failures
            else:
                continue  # retried in the original: its later attempt holds the outcome
            seed = event.get("seed", body.get("seed", 0))
            key = wire_key(body, int(seed) if isinstance(seed, int) else 0)
            table.setdefault(key, []).append(
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
    """The caches of the last few recorded runs a worker replayed from.

    Built on first use and rebuilt on a miss (a recording still being written, or a cell
    directory copied in since), never rescanned on a hit: a lookup then costs a dict access,
    not a walk of the run store.
    """

    KEEP = 4

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._caches: dict[str, WireCache] = {}

    def get(self, run_id: str, *, fresh: bool = False) -> WireCache:
        with self._lock:
            cached = None if fresh else self._caches.get(run_id)
        if cached is not None:
            return cached
        cache = _load(recording_files(run_id, self.settings))
        with self._lock:
            self._caches.pop(run_id, None)
            self._caches[run_id] = cache
            while len(self._caches) > self.KEEP:  # the oldest built goes first
                self._caches.pop(next(iter(self._caches)))
        return cache
