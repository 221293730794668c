"""Secrets stay out of Temporal and the run store; large outputs travel outside history.

Histories are searched with every payload decoded (``tests.history_search``): a plain search of
``history.to_json()`` sees base64 and could never find a key inside a payload.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowFailureError

from activities.config import Endpoint, Settings
from tests.conftest import with_endpoint
from tests.fakes import FakeProvider, Reply, Seen, openai_completion, sim_responder
from tests.history_search import decoded_history, files_under, search_run
from tests.worker_process import start_worker
from worker.logs import log_file
from worker.worker import WorkerOptions, running_worker
from workflows.ask_types import AskInput, AskResult
from workflows.names import ASK, TOURNAMENT
from workflows.tournament.types import TournamentInput, TournamentResult

SECRET = "sk-test-" + "Zq8" * 12
CANARY = "canary-" + "Wv4" * 10
"""Planted wherever the key is echoed, but no key: finding it proves the search reaches there."""
PLANTED = ("memo", "search", "signal", "terminate")


def with_keyed_endpoint(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, name: str, base_url: str
) -> Settings:
    """``settings`` plus an OpenAI-compatible endpoint whose key (``SECRET``) is in the env."""
    monkeypatch.setenv("FAKE_PROVIDER_KEY", SECRET)
    endpoint = Endpoint(kind="openai", base_url=base_url, api_key_env="FAKE_PROVIDER_KEY")
    return with_endpoint(settings, name, endpoint)


def files_containing(root: Path, needle: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


async def test_api_key_never_reaches_history_run_dir_or_payload_store(
    client: Client, settings: Settings, fake: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = with_keyed_endpoint(settings, monkeypatch, "local", fake.url)
    # The provider echoes the key back: a careless raw-event writer would store it.
    fake.replies = [Reply(200, openai_completion("x" * 20_000, echoed_authorization=SECRET))]
    queue = f"test-{uuid.uuid4()}"
    run_id = f"ask-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        handle = await client.start_workflow(
            ASK,
            AskInput(question="hi", model="local:m", run_id=run_id),
            id=run_id,
            task_queue=queue,
            result_type=AskResult,
        )
        await handle.result()
    assert fake.seen[0].headers["authorization"] == f"Bearer {SECRET}"  # the key was used
    history = await decoded_history(handle, settings)
    assert history.external >= 1  # the 20 KB answer is a reference, decoded from the store
    assert "x" * 20_000 in history.text
    assert SECRET not in history.text
    assert files_containing(settings.runs_dir, SECRET) == []
    assert files_containing(settings.payload_dir, "x" * 20_000) != []  # the 20 KB output
    assert files_containing(settings.payload_dir, SECRET) == []
    raw = (settings.runs_dir / run_id / "raw-events.jsonl").read_text()
    assert "[redacted]" in raw
    assert "Bearer" not in raw


async def test_large_output_is_stored_outside_history(
    client: Client, settings: Settings, fake: FakeProvider
) -> None:
    settings = with_endpoint(settings, "local", Endpoint(kind="openai", base_url=fake.url))
    big = "".join(f"line {i:06d} of a long answer\n" for i in range(100_000 // 27 + 1))
    assert len(big) >= 100_000
    fake.replies = [Reply(200, openai_completion(big))]
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        handle = await client.start_workflow(
            ASK,
            AskInput(question="long", model="local:m"),
            id=f"ask-{uuid.uuid4()}",
            task_queue=queue,
            result_type=AskResult,
        )
        result = await handle.result()
    assert result.response.text == big
    history = await handle.fetch_history()
    history_json = history.to_json()
    assert "line 003000" not in history_json
    assert len(history_json) < 40_000
    assert "externalPayloads" in history_json or "external" in history_json.lower()
    stored = list(settings.payload_dir.rglob("*.payload"))
    assert stored, "no payload was written to the payload store"
    assert any(b"line 003000" in p.read_bytes() for p in stored)


async def test_a_key_echoed_in_an_error_body_is_redacted_from_history(
    client: Client, settings: Settings, fake: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = with_keyed_endpoint(settings, monkeypatch, "local", fake.url)
    fake.replies = [Reply(400, {"error": f"bad request with key {SECRET}"})]
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        handle = await client.start_workflow(
            ASK,
            AskInput(question="hi", model="local:m"),
            id=f"ask-{uuid.uuid4()}",
            task_queue=queue,
            result_type=AskResult,
        )
        with pytest.raises(WorkflowFailureError):
            await handle.result()
    history = (await decoded_history(handle, settings)).text
    assert "bad request with key" in history
    assert SECRET not in history


async def test_a_base_url_from_workflow_input_never_gets_the_endpoint_key(
    client: Client, settings: Settings, fake: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = with_keyed_endpoint(settings, monkeypatch, "guarded", "http://127.0.0.1:9/v1")
    # The worker declares the URL (else the input is refused before any request is made).
    settings = settings.model_copy(update={"allowed_base_urls": [fake.url]})
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        await client.execute_workflow(
            ASK,
            AskInput(question="hi", model="guarded:m", base_url=fake.url),
            id=f"ask-{uuid.uuid4()}",
            task_queue=queue,
            result_type=AskResult,
        )
    (seen,) = fake.seen
    assert "authorization" not in seen.headers


@contextlib.asynccontextmanager
async def keyed_worker(
    settings: Settings,
    address: str,
    fake: FakeProvider,
    monkeypatch: pytest.MonkeyPatch,
    output: Path,
) -> AsyncIterator[str]:
    """A worker process whose ``local`` endpoint (the fake) is called with ``SECRET``; its
    output goes to ``output``. Yields its task queue."""
    monkeypatch.setenv("FAKE_PROVIDER_KEY", SECRET)
    settings.home.mkdir(parents=True, exist_ok=True)
    (settings.home / "ponder.toml").write_text(
        f'[providers.local]\nkind = "openai"\nbase_url = "{fake.url}"\n'
        'api_key_env = "FAKE_PROVIDER_KEY"\nponder_headers = true\n'
    )
    queue = f"test-{uuid.uuid4()}"
    worker = await start_worker(settings, address, queue, output=output)
    try:
        yield queue
    finally:
        worker.send_signal(signal.SIGTERM)
        await worker.wait()


def echoing(kind: str) -> Reply:
    """A provider reply that echoes the key (and the canary beside it) under neutral names."""
    echo = f"{CANARY} {SECRET}"
    text = json.dumps({"answer": "42", "note": echo})
    if kind == "completion":  # in the completion text and a response field named "note"
        return Reply(200, openai_completion(text, note=echo))
    if kind == "large-completion":  # the same, big enough for the payload store
        return Reply(200, openai_completion("x" * 20_000 + text, note=echo))
    return Reply(400, {"error": f"bad request, note: {echo}", "note": echo})


# Where the canary must be found for each kind: the search provably reaches those places.
CANARY_PLACES = {
    "completion": {"history", "run_dir"},
    "large-completion": {"history", "run_dir", "payload_store"},
    "error-body": {"history", "run_dir", "logs"},
}


@pytest.mark.parametrize("kind", ["error-body", "completion", "large-completion"])
async def test_a_key_echoed_under_a_neutral_name_is_nowhere_while_a_canary_beside_it_is_found(
    client: Client,
    settings: Settings,
    server_address: str,
    fake: FakeProvider,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    kind: str,
) -> None:
    """None of the echoed key may reach history (every payload decoded), the run store, the
    payload store or the worker's log; the canary echoed beside it is found in each of them."""
    fake.replies = [echoing(kind)]
    output = tmp_path / "worker-output.log"
    async with keyed_worker(settings, server_address, fake, monkeypatch, output) as queue:
        handle = await client.start_workflow(
            ASK,
            AskInput(question="what is the answer?", model="local:m"),
            id=f"echo-{kind}-{uuid.uuid4().hex[:8]}",
            task_queue=queue,
            result_type=AskResult,
        )
        if kind == "error-body":
            with pytest.raises(WorkflowFailureError):
                await asyncio.wait_for(handle.result(), 60)
        else:
            await asyncio.wait_for(handle.result(), 60)
    assert [seen.headers["authorization"] for seen in fake.seen] == [f"Bearer {SECRET}"]

    canary = await search_run(client, settings, CANARY, workflow_ids=[handle.id], logs=[output])
    assert set(canary.places) == CANARY_PLACES[kind]
    assert any(p.endswith("raw-events.jsonl") for p in canary.places["run_dir"])
    worker_log = log_file(settings.home)  # $PONDER_HOME/logs/worker.log
    assert worker_log.is_file()
    if kind == "error-body":  # the failed call's traceback, in the worker's own log file
        assert str(worker_log) in canary.places["logs"]
    history = await decoded_history(handle, settings)
    if kind != "error-body":  # a failure message is plain text; a result is a payload
        assert CANARY not in history.raw_json  # base64 hides it: only decoding finds it
    if kind == "large-completion":
        assert history.external >= 1

    leaked = await search_run(client, settings, SECRET, workflow_ids=[handle.id], logs=[output])
    assert leaked.searched.keys() == {"history", "run_dir", "payload_store", "logs"}
    assert leaked.searched["logs"] == 1 + len(files_under(settings.home / "logs"))
    assert leaked.places == {}


async def test_the_search_decodes_memo_search_attributes_signals_updates_and_termination(
    client: Client, settings: Settings, worker_queue: str
) -> None:
    """The helper's own positive control for the payloads an Ask does not produce."""
    from temporalio.api.enums.v1 import IndexedValueType
    from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest
    from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes
    from temporalio.service import RPCError

    from workflows.budget import BudgetLimits
    from workflows.names import SIGNAL_EXTEND_BUDGET, UPDATE_EXTEND_BUDGET
    from workflows.tournament.types import ExtendBudgetInput, ExtendBudgetResult

    planted = {place: f"canary-{place}-{uuid.uuid4().hex}" for place in PLANTED}
    # Added once per dev server; a second add may answer AlreadyExists. Had it failed,
    # starting the workflow below would fail with "no mapping defined for search attribute".
    with contextlib.suppress(RPCError):
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(
                namespace=client.namespace,
                search_attributes={"PonderNote": IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD},
            )
        )
    note = SearchAttributeKey.for_keyword("PonderNote")
    handle = await client.start_workflow(
        TOURNAMENT,
        TournamentInput(task="x", profile="quick", budget=BudgetLimits(max_output_tokens=1)),
        id=f"planted-{uuid.uuid4().hex[:8]}",
        task_queue=worker_queue,
        memo={"note": planted["memo"]},
        search_attributes=TypedSearchAttributes([SearchAttributePair(note, planted["search"])]),
    )
    await handle.signal(SIGNAL_EXTEND_BUDGET, {"max_calls": -1, "note": planted["signal"]})
    # An accepted update's input and result: only numbers fit, so a number no event has (within
    # the 10,000,000-call ceiling).
    update = str(9_182_736 + uuid.uuid4().int % 1000)
    await handle.execute_update(
        UPDATE_EXTEND_BUDGET,
        ExtendBudgetInput(max_calls=int(update)),  # max_output_tokens=1 keeps it paused
        result_type=ExtendBudgetResult,
    )
    await handle.terminate(planted["terminate"], reason="planted")
    history = await decoded_history(handle, settings)
    for place, canary in {**planted, "update": update}.items():
        assert canary not in history.raw_json, place  # base64 in the raw history
        assert canary in history.text, place  # found once decoded


def echo_everywhere(seen: Seen) -> Reply:
    """The sim's answer with the key and the canary echoed: in a judge's critiques and a
    ``note`` field of its verdict, and after every other completion's text."""
    echo = f"{CANARY} {SECRET}"
    reply = sim_responder(seen)
    message = reply.body["choices"][0]["message"]
    try:
        verdict = json.loads(message["content"])
    except ValueError:
        verdict = None
    if isinstance(verdict, dict) and "winner" in verdict:
        verdict["feedback_a"] = f"{verdict.get('feedback_a', '')} {echo}"
        verdict["feedback_b"] = f"{verdict.get('feedback_b', '')} {echo}"
        message["content"] = json.dumps({**verdict, "note": echo})
    else:
        message["content"] += f"\n\nnote: {echo}"
    reply.body["note"] = echo
    return reply


async def test_a_key_echoed_through_a_whole_tournament_is_nowhere(
    client: Client,
    settings: Settings,
    server_address: str,
    fake: FakeProvider,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """Critiques travel on into mutation prompts (activity inputs) and the artifact snapshot:
    the canary beside the key is found there, the key nowhere."""
    fake.responder = echo_everywhere
    output = tmp_path / "worker-output.log"
    async with keyed_worker(settings, server_address, fake, monkeypatch, output) as queue:
        handle = await client.start_workflow(
            TOURNAMENT,
            TournamentInput(task="Sort a list in place.", profile="quick", model="local:default"),
            id=f"echo-t-{uuid.uuid4().hex[:8]}",
            task_queue=queue,
            result_type=TournamentResult,
        )
        result = await asyncio.wait_for(handle.result(), 60)
    assert result.spent.calls == len(fake.seen) == 15
    assert {seen.headers["authorization"] for seen in fake.seen} == {f"Bearer {SECRET}"}

    canary = await search_run(client, settings, CANARY, workflow_ids=[handle.id], logs=[output])
    assert {"history", "run_dir"} <= set(canary.places)
    found_in = {Path(p).name for p in canary.places["run_dir"]}
    assert {"candidates.jsonl", "comparisons.jsonl", "raw-events.jsonl"} <= found_in
    mutate_prompts = [s for s in fake.seen if s.phase.startswith("generation_mutation")]
    assert mutate_prompts and all(CANARY in json.dumps(s.body) for s in mutate_prompts)

    leaked = await search_run(client, settings, SECRET, workflow_ids=[handle.id], logs=[output])
    assert log_file(settings.home).is_file()
    assert leaked.searched["logs"] == 1 + len(files_under(settings.home / "logs"))
    assert leaked.places == {}
    assert not any(SECRET in json.dumps(s.body) for s in fake.seen)  # not even sent back out
