"""Search everything a run leaves behind for a string, with every payload decoded first.

``history.to_json()`` shows payloads as base64, so a plain search of it can never find a value
inside a workflow input, an activity result or a failure's details, and a payload over the
threshold is only a reference into the payload store. Here every ``Payload`` anywhere in every
event (inputs, results, activity inputs and results, failure details and encoded attributes,
signals, updates, memo, search attributes, headers) is decoded through the project's own data
converter, external references included, before the search. The run directory, its raw events,
the payload store (each stored payload decoded too) and the worker's log files are searched
alongside.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf.message import Message
from temporalio.api.common.v1 import Payload
from temporalio.client import Client, WorkflowHandle
from temporalio.converter import DataConverter

from activities.config import Settings
from client.connect import data_converter

__all__ = ["PLACES", "Findings", "decoded_history", "files_under", "payloads_in", "search_run"]

PLACES = ("history", "run_dir", "payload_store", "logs")


def payloads_in(message: Message) -> Iterator[Payload]:
    """Every ``Payload`` nested anywhere in ``message`` (maps and repeated fields included)."""
    if isinstance(message, Payload):
        yield message
        return
    for descriptor, value in message.ListFields():
        if descriptor.message_type is None:
            continue
        if descriptor.message_type.GetOptions().map_entry:
            entry_value = descriptor.message_type.fields_by_name["value"]
            if entry_value.message_type is not None:
                for item in value.values():
                    yield from payloads_in(item)
        elif descriptor.is_repeated:
            for item in value:
                yield from payloads_in(item)
        else:
            yield from payloads_in(value)


async def payload_text(converter: DataConverter, payload: Payload) -> str:
    """A payload as searchable text: decoded (and fetched from the store when external)."""
    (value,) = await converter.decode([payload])
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return json.dumps(value, ensure_ascii=False, default=str)


@dataclass
class DecodedHistory:
    raw_json: str
    payload_texts: list[str]
    external: int
    """How many payloads were references into the payload store."""

    @property
    def text(self) -> str:
        return "\n".join([self.raw_json, *self.payload_texts])


async def decoded_history(handle: WorkflowHandle, settings: Settings) -> DecodedHistory:
    history = await handle.fetch_history()
    converter = data_converter(settings)
    texts: list[str] = []
    external = 0
    for event in history.events:
        for payload in payloads_in(event):
            external += bool(payload.external_payloads)
            texts.append(await payload_text(converter, payload))
    return DecodedHistory(history.to_json(), texts, external)


def files_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


async def stored_payload_texts(settings: Settings) -> dict[Path, str]:
    """Every payload in the payload store, decoded, plus its raw bytes as text."""
    converter = data_converter(settings)
    texts = {}
    for path in files_under(settings.payload_dir):
        data = path.read_bytes()
        payload = Payload()
        payload.ParseFromString(data)
        decoded = await payload_text(converter, payload)
        texts[path] = decoded + "\n" + data.decode("utf-8", "replace")
    return texts


def log_files(settings: Settings, extra: Iterable[Path] = ()) -> list[Path]:
    """The worker's log files under ``$PONDER_HOME/logs`` and any captured worker output."""
    return files_under(settings.home / "logs") + [p for p in extra if p.is_file()]


@dataclass
class Findings:
    """Where a needle was found, by place; ``searched`` counts what was read in each place."""

    places: dict[str, list[str]] = field(default_factory=dict)
    searched: dict[str, int] = field(default_factory=dict)

    def add(self, place: str, name: str, text: str, needle: str) -> None:
        self.searched[place] = self.searched.get(place, 0) + 1
        if needle in text:
            self.places.setdefault(place, []).append(name)

    def __bool__(self) -> bool:
        return bool(self.places)


async def search_run(
    client: Client,
    settings: Settings,
    needle: str,
    *,
    workflow_ids: Iterable[str],
    logs: Iterable[Path] = (),
) -> Findings:
    """Where ``needle`` occurs: decoded histories, run store, payload store, worker logs."""
    found = Findings(searched=dict.fromkeys(PLACES, 0))
    for workflow_id in workflow_ids:
        history = await decoded_history(client.get_workflow_handle(workflow_id), settings)
        found.add("history", workflow_id, history.text, needle)
    for path in files_under(settings.runs_dir):
        found.add("run_dir", str(path), path.read_bytes().decode("utf-8", "replace"), needle)
    for path, text in (await stored_payload_texts(settings)).items():
        found.add("payload_store", str(path), text, needle)
    for path in log_files(settings, logs):
        found.add("logs", str(path), path.read_bytes().decode("utf-8", "replace"), needle)
    return found
