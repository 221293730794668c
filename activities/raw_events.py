"""Raw request/response events, one JSON line per HTTP attempt, in the run directory.

They never travel through Temporal: the provider appends them straight to
``<runs_dir>/<run_id>/raw-events.jsonl``. Every event is redacted before it is written.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from activities.run_file_crypto import RunFileCipher

__all__ = ["MIN_REDACTED_CHARS", "REDACTED", "RawEventLog", "redact"]

REDACTED = "[redacted]"
MIN_REDACTED_CHARS = 8
"""The shortest secret searched for in text: real provider keys are far longer, and a shorter
one occurs in ordinary text by chance."""
# Keys whose values are secrets, in headers and in config alike; numeric budget keys such as
# ``max_input_tokens`` do not match (only a key ending in ``token`` does).
SECRET_KEY = re.compile(
    r"(api[_-]?key|authorization|cookie|password|passwd|secret|credential|(^|_)token$)",
    re.IGNORECASE,
)
_lock = threading.Lock()
log = logging.getLogger(__name__)


@functools.lru_cache(maxsize=1024)
def _secret_key(key: str) -> bool:
    """Whether ``key`` names a secret (remembered: events reuse a few dozen keys)."""
    return SECRET_KEY.search(key) is not None


def redact(value: Any, secrets: Iterable[str] = ()) -> Any:
    """``value`` with secret-named keys and every occurrence of a secret string replaced.

    A secret shorter than ``MIN_REDACTED_CHARS`` is not searched for: text holds it by chance
    (a key ``k`` would turn "fake says hi" into "fa[redacted]e says hi"), so replacing it would
    mangle every answer while hiding nothing worth hiding. Secret-named keys are still
    redacted whatever their value; the worker warns at start about such keys
    (``activities.config.short_secret_names``)."""
    return _redact(value, [s for s in secrets if len(s) >= MIN_REDACTED_CHARS])


def _redact(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, Mapping):
        return {
            k: REDACTED if _secret_key(str(k)) else _redact(v, secrets) for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_redact(v, secrets) for v in value]
    return value


class RawEventLog:
    """Appends redacted events for one call; ``path`` None means "keep nothing"."""

    def __init__(
        self,
        path: Path | None,
        *,
        secrets: Iterable[str] = (),
        base: dict[str, Any],
        cipher: RunFileCipher | None = None,
    ):
        self.path = path
        self.secrets = [s for s in secrets if s]
        self.base = base
        self.cipher = cipher
        """Seals each event (``encrypt_run_files``): one record a line, appended like a plain
        line."""

    async def record(self, event: dict[str, Any]) -> None:
        """``append`` in a thread: providers run on the event loop, whose heartbeats a slow
        disk must not stall."""
        if self.path is not None:
            import asyncio  # here: the CLI reads this module's constants without an event loop

            await asyncio.to_thread(self.append, event)

    def append(self, event: dict[str, Any]) -> None:
        """A sink that cannot be written (a full disk, a read-only store) loses the event and
        says so in the worker log, but never fails the call: the request is already sent and
        paid for, and a retry would pay again. The campaign's capture check is what flags the
        loss (``no_raw_sink``, ``orphan_llm_span``, ``missing_raw_events``)."""
        if self.path is None:
            return
        line = orjson.dumps(redact({**self.base, **event}, self.secrets)) + b"\n"
        if self.cipher is not None:
            line = self.cipher.seal_lines(line)
        try:
            with _lock:
                try:
                    _append(self.path, line)
                except FileNotFoundError:  # the run's first event: make its directory
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    _append(self.path, line)
        except OSError as exc:
            log.warning(
                "raw event of call %s not recorded in %s: %s",
                self.base.get("call_id", "?"),
                self.path,
                exc,
            )


def _append(path: Path, line: bytes) -> None:
    """``line`` at the end of ``path`` (O_APPEND), creating the file: two fewer system calls
    than ``Path.open("ab")`` after a ``mkdir``, on every model call."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        rest = memoryview(line)
        while rest:
            rest = rest[os.write(fd, rest) :]
    finally:
        os.close(fd)
