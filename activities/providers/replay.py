"""Wire replay: answer each call from a recorded ``raw-events.jsonl``.

``replay:RUN_ID`` (that run's ``raw-events.jsonl``) or ``replay:/path/to/raw-events.jsonl``
inside the run store or a declared ``replay_dirs`` entry (the registry confines the source)
finds the last successful recorded exchange with the same call key (phase/index/attempt) and
normalizes its response body with the provider that made it.

A recording inside the run store belongs to a run, and is read only with that run's read token
(``workflows/run_capabilities.py``): ``source_run`` and ``store_holds`` say which run a replay
reads, so ``call_model`` checks the token before anything is read.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import orjson

from activities.errors import ConfigError, MalformedOutputError
from activities.providers.base import CallContext, Provider
from activities.run_file_crypto import open_run_bytes
from workflows.bounds import MAX_RECORDING_BYTES
from workflows.model_types import ModelRequest, ModelResponse

__all__ = ["ReplayProvider", "read_recording", "source_run", "store_holds"]


def source_run(recording: Path, runs_dir: Path) -> str | None:
    """The run whose directory holds ``recording`` (a ``replay:`` source, already confined by
    the registry), or None when it lies outside the run store (a declared ``replay_dirs``
    entry, which the worker shares on purpose)."""
    root = runs_dir.resolve()
    path = recording.resolve()
    if not path.is_relative_to(root) or path == root:
        return None
    return path.relative_to(root).parts[0]


def store_holds(run_id: str, runs_dir: Path) -> bool:
    """Whether the run store holds run ``run_id`` or one of its children (``<run id>.<...>``,
    a campaign's cells, a plan step's tournaments): what a wire replay of it would read."""
    try:
        with os.scandir(runs_dir) as entries:
            return any(e.name == run_id or e.name.startswith(run_id + ".") for e in entries)
    except OSError:
        return False


def read_recording(path: Path) -> list[bytes]:
    """A recording's lines, refused past ``MAX_RECORDING_BYTES`` (before reading it)."""
    try:
        with path.open("rb") as file:
            size = os.fstat(file.fileno()).st_size
            if size > MAX_RECORDING_BYTES:
                raise ConfigError(
                    "replay.too_large",
                    f"replay recording {path} is {size} bytes, over the "
                    f"{MAX_RECORDING_BYTES} bytes (256 MiB) a replay reads: replay a smaller run",
                )
            return open_run_bytes(file.read(MAX_RECORDING_BYTES + 1), path).splitlines()
    except OSError as exc:
        raise ConfigError(
            "file.unreadable", f"replay recording {path} cannot be read ({exc.strerror})"
        ) from exc


def _recorded(path: Path) -> dict[str, dict[str, Any]]:
    """The last successful exchange per call key. A line that is not a recorded exchange (cut
    short by a killed worker, or not an event at all) holds none: a miss, never a crash."""
    lines = read_recording(path)
    exchanges: dict[str, dict[str, Any]] = {}
    for line in lines:
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(event, dict) or not isinstance(event.get("call_key"), str):
            continue
        response = event.get("response")
        if isinstance(response, dict) and response.get("status") == 200 and "body" in response:
            exchanges[event["call_key"]] = event
    return exchanges


class ReplayProvider:
    kind = "replay"

    def __init__(self, providers: dict[str, Provider]) -> None:
        self._providers = providers

    async def request(self, request: ModelRequest, ctx: CallContext) -> ModelResponse:
        recorded = await asyncio.to_thread(_recorded, Path(ctx.model_name))
        event = recorded.get(ctx.call_key)
        if event is None:
            raise MalformedOutputError(
                f"replay file {ctx.model_name} has no successful exchange for call "
                f"{ctx.call_key}: record that run again",
                model=ctx.model_name,
            )
        return self.parse_response(event, request, ctx)

    def parse_response(self, body: Any, request: ModelRequest, ctx: CallContext) -> ModelResponse:
        original = self._providers.get(str(body.get("provider_kind")))
        if original is None:  # a hand-edited or foreign line
            raise MalformedOutputError(
                f"replay file {ctx.model_name}: the exchange for call {ctx.call_key} names "
                f"provider kind {body.get('provider_kind')!r}, which cannot answer it: record "
                "that run again",
                model=ctx.model_name,
            )
        response = original.parse_response(body["response"]["body"], request, ctx)
        return response.model_copy(update={"provider": ctx.provider_name})
