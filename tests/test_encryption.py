"""Payload encryption at rest: the codec alone, a whole encrypted run's history read raw from the
dev server, a run whose key the worker lacks, and ``ponder codec-server`` behind the real
``temporal workflow show --codec-endpoint``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import socket
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from google.protobuf.message import Message
from temporalio.api.common.v1 import Payload
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError

from activities.codec import (
    ENCODING,
    KEY_ID_METADATA,
    EncryptionCodec,
    Keyring,
    keyring_from_settings,
    parse_keyring,
)
from activities.config import Endpoint, Settings
from activities.errors import ConfigError
from client.codec_server import codec_app
from client.connect import connect, data_converter
from client.embedded import find_temporal_binary
from tests.cli import cli_env
from tests.conftest import with_endpoint
from tests.fakes import FakeProvider, Reply
from tests.history_search import decoded_history, files_under
from worker.worker import WorkerOptions, running_worker
from workflows.ask_types import AskInput, AskResult
from workflows.names import ASK, TOURNAMENT
from workflows.tournament.types import TournamentInput, TournamentResult

OLD_KEY = bytes(range(32))
NEW_KEY = bytes(range(100, 132))
API_KEY = "sk-enc-" + "Qx7" * 12
QUESTION = "Which prime follows 7919? zebra-" + "Lm3" * 8
TOKEN = "codec-token-" + "Hj2" * 8
CORE_BOOKKEEPING = [
    ".marker_recorded_event_attributes.details[data].payloads",
    ".marker_recorded_event_attributes.details[patch-data].payloads",
    ".upsert_workflow_search_attributes_event_attributes.search_attributes"
    ".indexed_fields[TemporalChangeVersion]",
]


def b64(key: bytes) -> str:
    return base64.b64encode(key).decode()


def keyring_text(*entries: tuple[str, bytes]) -> str:
    return "".join(f"{key_id}={b64(key)}\n" for key_id, key in entries)


def encrypted(settings: Settings, tmp: Path, *entries: tuple[str, bytes]) -> Settings:
    path = tmp / f"keyring-{uuid.uuid4().hex[:6]}"
    path.write_text("# oldest first\n" + keyring_text(*entries))
    return settings.model_copy(update={"keyring_file": path})


def json_payload(text: str) -> Payload:
    return Payload(metadata={"encoding": b"json/plain"}, data=f'"{text}"'.encode())


# --- the keyring and the codec, directly -------------------------------------------------------


def test_the_keyring_lists_keys_oldest_first_and_the_last_is_newest() -> None:
    ring = parse_keyring(f"# c\nk1={b64(OLD_KEY)}\n\n k2 = {b64(NEW_KEY)} \n", "f")
    assert ring.keys == {"k1": OLD_KEY, "k2": NEW_KEY}
    assert ring.newest == "k2"
    assert parse_keyring(f"a={b64(OLD_KEY)},b={b64(NEW_KEY)}", "env").newest == "b"


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("", "lists no key"),
        ("# only a comment\n", "lists no key"),
        (f"{b64(OLD_KEY)}\n", "entry 1's key is not 32 bytes"),  # a bare key: no id
        (f"bad id={b64(OLD_KEY)}\n", "entry 1 is not KEY_ID=BASE64"),
        (f"k1={b64(OLD_KEY[:16])}\n", "entry 1's key is not 32 bytes"),
        ("k1=not*base64\n", "entry 1's key is not 32 bytes"),
        (f"k1={b64(OLD_KEY)}\nk1={b64(NEW_KEY)}\n", "entry 2: key id 'k1' is listed twice"),
    ],
)
def test_a_bad_keyring_is_refused_with_its_rule(text: str, rule: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_keyring(text, "/etc/ponder/keys")
    assert refused.value.code == "encryption.keyring_invalid"
    assert rule in str(refused.value)
    assert "/etc/ponder/keys" in str(refused.value)
    assert b64(OLD_KEY)[:40] not in str(refused.value)  # a key never lands in an error message


async def test_the_newest_key_encrypts_with_a_fresh_nonce_and_the_metadata_names_it() -> None:
    codec = EncryptionCodec(Keyring({"k1": OLD_KEY, "k2": NEW_KEY}))
    plain = json_payload(QUESTION)
    first, second = await codec.encode([plain, plain])
    assert first.metadata["encoding"] == ENCODING
    assert first.metadata[KEY_ID_METADATA] == b"k2"
    assert QUESTION.encode() not in first.SerializeToString()
    assert first.data[:12] != second.data[:12]  # a random 96-bit nonce per payload
    assert first.data != second.data
    assert await codec.decode([first, second]) == [plain, plain]


async def test_keys_rotate_without_re_encrypting_history() -> None:
    before = EncryptionCodec(Keyring({"k1": OLD_KEY}))
    after = EncryptionCodec(Keyring({"k1": OLD_KEY, "k2": NEW_KEY}))
    (written_before,) = await before.encode([json_payload("old")])
    (written_after,) = await after.encode([json_payload("new")])
    assert written_after.metadata[KEY_ID_METADATA] == b"k2"
    assert await after.decode([written_before, written_after]) == [
        json_payload("old"),
        json_payload("new"),
    ]


async def test_a_plain_payload_decodes_as_it_is() -> None:
    """A history from before encryption was turned on stays readable (and replays)."""
    codec = EncryptionCodec(Keyring({"k1": OLD_KEY}))
    assert await codec.decode([json_payload("x")]) == [json_payload("x")]


async def test_an_unknown_key_id_fails_with_its_code_and_is_not_retried() -> None:
    (sealed,) = await EncryptionCodec(Keyring({"k2": NEW_KEY})).encode([json_payload("x")])
    with pytest.raises(ApplicationError) as failed:
        await EncryptionCodec(Keyring({"k1": OLD_KEY})).decode([sealed])
    assert failed.value.type == "encryption.key_unknown"
    assert failed.value.non_retryable
    assert "'k2'" in failed.value.message and "k1" in failed.value.message


@pytest.mark.parametrize("tamper", ["data", "key_id", "short"])
async def test_an_altered_payload_does_not_authenticate(tamper: str) -> None:
    codec = EncryptionCodec(Keyring({"k1": OLD_KEY, "k2": NEW_KEY}))
    (sealed,) = await codec.encode([json_payload("x")])
    if tamper == "data":
        sealed.data = sealed.data[:-1] + bytes([sealed.data[-1] ^ 1])
    elif tamper == "short":  # shorter than a nonce: AES-GCM itself refuses it (ValueError)
        sealed.data = sealed.data[:5]
    else:  # relabelled to the other listed key: the key id is authenticated too
        sealed.metadata[KEY_ID_METADATA] = b"k1"
    with pytest.raises(ApplicationError) as failed:
        await codec.decode([sealed])
    assert failed.value.type == "encryption.payload_invalid"
    assert failed.value.non_retryable


def test_encryption_is_off_without_a_keyring(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(settings.keyring_env, raising=False)
    assert keyring_from_settings(settings) is None
    converter = data_converter(settings)
    assert converter.payload_codec is None
    assert type(converter.failure_converter).__name__ == "DefaultFailureConverter"


def test_the_keyring_comes_from_its_variable_when_no_file_is_set(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(settings.keyring_env, keyring_text(("k1", OLD_KEY), ("k2", NEW_KEY)))
    ring = keyring_from_settings(settings)
    assert ring is not None and ring.newest == "k2"
    converter = data_converter(settings)
    assert isinstance(converter.payload_codec, EncryptionCodec)
    assert type(converter.failure_converter).__name__ == (
        "DefaultFailureConverterWithEncodedAttributes"
    )


def test_an_unreadable_keyring_file_is_refused(settings: Settings, tmp_path: Path) -> None:
    missing = settings.model_copy(update={"keyring_file": tmp_path / "absent"})
    with pytest.raises(ConfigError) as refused:
        keyring_from_settings(missing)
    assert refused.value.code == "encryption.keyring_invalid"
    assert "absent" in str(refused.value)


# --- a whole encrypted run, read raw from the server --------------------------------------------


@dataclass
class EncryptedRun:
    handle: WorkflowHandle
    settings: Settings
    result: TournamentResult


def raw_bytes(events: Iterable[HistoryEvent]) -> bytes:
    return b"".join(event.SerializeToString() for event in events)


@pytest.fixture(scope="module")
async def encrypted_run(
    server_address: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[EncryptedRun]:
    """One quick sim tournament on a worker and client that both hold the keyring; payloads over
    1 KiB go to the payload store, so the store is exercised too."""
    from activities.config import load_settings

    tmp = tmp_path_factory.mktemp("encrypted")
    base = load_settings(home=str(tmp / "home")).model_copy(
        update={"config_file": None, "server_idle_s": 0.0, "payload_threshold": 4096}
    )
    os.environ["ENC_TEST_API_KEY"] = API_KEY
    base = with_endpoint(
        base,
        "keyed",
        Endpoint(kind="openai", base_url="http://127.0.0.1:9", api_key_env="ENC_TEST_API_KEY"),
    )
    settings = encrypted(base, tmp, ("k1", OLD_KEY), ("k2", NEW_KEY))
    client = await connect(settings, server_address)
    queue = f"test-{uuid.uuid4()}"
    run_id = f"enc-{uuid.uuid4().hex[:8]}"
    try:
        async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
            handle = await client.start_workflow(
                TOURNAMENT,
                TournamentInput(task=QUESTION, profile="quick", seed=5, run_id=run_id),
                id=run_id,
                task_queue=queue,
                result_type=TournamentResult,
            )
            result = await asyncio.wait_for(handle.result(), 120)
        yield EncryptedRun(handle, settings, result)
    finally:
        os.environ.pop("ENC_TEST_API_KEY", None)


async def test_an_encrypted_runs_history_holds_no_question_candidate_or_key(
    encrypted_run: EncryptedRun, client: Client
) -> None:
    """``client`` holds no keyring: the history as the server stores it."""
    run = encrypted_run
    candidate = run.result.final_answer
    assert len(candidate) > 20
    history = await client.get_workflow_handle(run.handle.id).fetch_history()
    raw = raw_bytes(history.events) + history.to_json().encode()
    lines = [line for line in candidate.splitlines() if len(line) >= 20]
    secrets = [QUESTION, *lines, API_KEY, b64(OLD_KEY), b64(NEW_KEY)]
    assert [s for s in secrets if s.encode() in raw] == []
    assert [s for s in secrets if b64(s.encode())[:24].encode() in raw] == []
    plain = sorted(
        {
            re.sub(r"\[\d+\]", "", path)
            for event in history.events
            for path, p in _payloads(event)
            if p.metadata.get("encoding") != ENCODING and not p.external_payloads
        }
    )
    # What stays plain is the SDK's own bookkeeping, which carries no run data: a patch's id, a
    # local activity's type and times, the patch search attribute the server indexes.
    assert plain == CORE_BOOKKEEPING, plain
    # The payload store holds the large payloads, encrypted too.
    stored = files_under(run.settings.payload_dir)
    assert stored != []
    assert [p for p in stored if QUESTION.encode() in p.read_bytes()] == []
    # Decoded with the keyring's codec, the same history holds them (the search can hit).
    decoded = await decoded_history(run.handle, run.settings)
    assert QUESTION in decoded.text
    assert json.dumps(candidate)[1:-1] in decoded.text
    assert decoded.external >= 1


def _payloads(message: Message, path: str = "") -> Iterator[tuple[str, Payload]]:
    """Every payload in ``message`` with the field path that leads to it."""
    if isinstance(message, Payload):
        yield path, message
        return
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        where = f"{path}.{field.name}"
        if field.message_type.GetOptions().map_entry:
            if field.message_type.fields_by_name["value"].message_type is not None:
                for key, item in value.items():
                    yield from _payloads(item, f"{where}[{key}]")
        elif field.is_repeated:
            for i, item in enumerate(value):
                yield from _payloads(item, f"{where}[{i}]")
        else:
            yield from _payloads(value, where)


async def test_a_failure_message_is_encrypted_and_its_code_stays_readable(
    client: Client, settings: Settings, fake: FakeProvider, tmp_path: Path
) -> None:
    """A provider's error text would land in the failure's message; encoded, only the code is
    plain."""
    leaked = "provider-said-" + "Yp5" * 8
    fake.replies = [Reply(400, {"error": {"message": leaked}})] * 4
    keyed = with_endpoint(settings, "local", Endpoint(kind="openai", base_url=fake.url))
    settings_enc = encrypted(keyed, tmp_path, ("k1", OLD_KEY))
    enc_client = await connect(settings_enc, client.service_client.config.target_host)
    queue = f"test-{uuid.uuid4()}"
    run_id = f"encf-{uuid.uuid4().hex[:8]}"
    async with running_worker(enc_client, settings_enc, WorkerOptions(task_queue=queue)):
        handle = await enc_client.start_workflow(
            ASK,
            AskInput(question="q", model="local:m", run_id=run_id),
            id=run_id,
            task_queue=queue,
            result_type=AskResult,
        )
        with pytest.raises(WorkflowFailureError) as failed:
            await asyncio.wait_for(handle.result(), 60)
    assert leaked in _all_messages(failed.value)  # decoded with the key: the text is there
    history = await client.get_workflow_handle(run_id).fetch_history()
    raw = raw_bytes(history.events)
    assert leaked.encode() not in raw
    assert b"provider.bad_request" in raw  # the code stays plain, for filters and alerts


def _all_messages(error: BaseException | None) -> str:
    parts = []
    while error is not None:
        parts.append(str(error))
        error = error.__cause__
    return " | ".join(parts)


async def test_a_worker_without_the_runs_key_fails_the_run_with_the_code_at_once(
    client: Client, settings: Settings, tmp_path: Path
) -> None:
    """The client encrypts with k2, the worker lists only k1: the run fails with
    ``encryption.key_unknown`` on its first workflow task instead of retrying it for ever."""
    server = client.service_client.config.target_host
    starter = await connect(encrypted(settings, tmp_path, ("k1", OLD_KEY), ("k2", NEW_KEY)), server)
    worker_settings = encrypted(settings, tmp_path, ("k1", OLD_KEY))
    worker_client = await connect(worker_settings, server)
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(worker_client, worker_settings, WorkerOptions(task_queue=queue)):
        handle = await starter.start_workflow(
            ASK,
            AskInput(question=QUESTION),
            id=f"enck-{uuid.uuid4().hex[:8]}",
            task_queue=queue,
            result_type=AskResult,
        )
        started = time.monotonic()
        with pytest.raises(WorkflowFailureError) as failed:
            await asyncio.wait_for(handle.result(), 30)
        took = time.monotonic() - started
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == "encryption.key_unknown"
    assert "'k2'" in cause.message
    assert took < 20
    history = await handle.fetch_history()
    assert not any(e.HasField("workflow_task_failed_event_attributes") for e in history.events)


# --- ponder codec-server -----------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
async def codec_server(
    encrypted_run: EncryptedRun, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[str]:
    """``ponder codec-server`` as its own process, with the run's keyring and a token."""
    home = tmp_path_factory.mktemp("codec-home")
    port = _free_port()
    assert encrypted_run.settings.keyring_file is not None
    env = cli_env(
        home,
        PONDER_KEYRING_FILE=str(encrypted_run.settings.keyring_file),
        PONDER_CODEC_TOKEN=TOKEN,
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "client",
        "codec-server",
        "--port",
        str(port),
        env=env,
        stderr=asyncio.subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        async with httpx.AsyncClient() as http:
            while True:
                assert process.returncode is None, "ponder codec-server exited"
                try:
                    await http.post(f"{url}/decode")
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline, "codec server not listening in 30 s"
                    await asyncio.sleep(0.1)
        yield url
    finally:
        process.terminate()
        await process.wait()


async def test_temporal_workflow_show_decodes_through_the_codec_server(
    codec_server: str, encrypted_run: EncryptedRun, server_address: str
) -> None:
    show = (
        find_temporal_binary(),
        "workflow",
        "show",
        "--address",
        server_address,
        "-w",
        encrypted_run.handle.id,
        "--detailed",
        "--codec-endpoint",
        codec_server,
    )
    decoded = await _run(*show, "--codec-auth", f"Bearer {TOKEN}")
    assert QUESTION in decoded
    # The same history without the codec server: encrypted, the question is nowhere.
    assert "Which prime" not in await _run(*show[:-2])


async def _run(*args: str) -> str:
    process = await asyncio.create_subprocess_exec(
        *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await asyncio.wait_for(process.communicate(), 60)
    return out.decode()


async def test_the_codec_server_refuses_without_the_token_and_answers_the_ui_origin(
    codec_server: str,
) -> None:
    body: dict[str, list[object]] = {"payloads": []}
    async with httpx.AsyncClient() as http:
        assert (await http.post(f"{codec_server}/decode", json=body)).status_code == 401
        wrong = {"authorization": f"Bearer {TOKEN}x"}
        assert (
            await http.post(f"{codec_server}/decode", json=body, headers=wrong)
        ).status_code == 401
        good = {"authorization": f"Bearer {TOKEN}", "x-namespace": "default"}
        answer = await http.post(f"{codec_server}/default/decode", json=body, headers=good)
        assert answer.status_code == 200 and answer.json() == {}
        preflight = {
            "origin": "http://localhost:8233",
            "access-control-request-method": "POST",
            "access-control-request-headers": "authorization,content-type,x-namespace",
        }
        allowed = await http.options(f"{codec_server}/decode", headers=preflight)
        assert allowed.status_code == 200
        assert allowed.headers["access-control-allow-origin"] == "http://localhost:8233"
        assert allowed.headers["access-control-allow-credentials"] == "true"
        foreign = await http.options(
            f"{codec_server}/decode", headers={**preflight, "origin": "http://evil.example"}
        )
        assert "access-control-allow-origin" not in foreign.headers


async def test_the_codec_app_round_trips_and_reports_an_unknown_key() -> None:
    """``/encode`` then ``/decode`` through the app; a payload of a key it lacks is a 422 with
    the code, not a crash."""
    codec = EncryptionCodec(Keyring({"k1": OLD_KEY}))
    app = codec_app(codec, token=TOKEN, ui_origins=[])
    auth = {"authorization": f"Bearer {TOKEN}"}
    plain = {"metadata": {"encoding": b64(b"json/plain")}, "data": b64(b'"hello"')}
    (foreign,) = await EncryptionCodec(Keyring({"k9": NEW_KEY})).encode([json_payload("x")])
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://codec") as http:
        sealed = (await http.post("/encode", json={"payloads": [plain]}, headers=auth)).json()
        assert sealed["payloads"][0]["metadata"]["encoding"] == b64(ENCODING)
        opened = (await http.post("/decode", json=sealed, headers=auth)).json()
        assert opened == {"payloads": [plain]}
        unknown = {
            "payloads": [
                {
                    "metadata": {k: b64(v) for k, v in foreign.metadata.items()},
                    "data": b64(foreign.data),
                }
            ]
        }
        refused = await http.post("/decode", json=unknown, headers=auth)
        assert refused.status_code == 422
        assert refused.json()["code"] == "encryption.key_unknown"
        garbage = await http.post("/decode", content=b"{nope", headers=auth)
        assert garbage.status_code == 400


# --- the page's recipes ------------------------------------------------------------------------

PAGE = "docs/security.md"


async def test_the_keyring_recipe_makes_a_keyring_that_loads(tmp_path: Path) -> None:
    from tests.test_readme import fenced, run_bash, section

    (recipe,) = fenced(section("## Encryption at rest", page=PAGE), "sh")
    code, output = await run_bash(recipe, tmp_path, timeout=30)
    assert code == 0, output
    ring = parse_keyring((tmp_path / "keyring").read_text(), "keyring")
    assert list(ring.keys) == ["k1"] and len(ring.keys["k1"]) == 32


def test_the_encryption_configuration_loads(tmp_path: Path) -> None:
    from activities.config import load_settings
    from tests.test_readme import fenced, section

    (block,) = fenced(section("## Encryption at rest", page=PAGE), "toml")
    config = tmp_path / "ponder.toml"
    config.write_text(block)
    settings = load_settings(config, home=str(tmp_path / "home"))
    assert settings.keyring_file == Path("/etc/ponder/keyring")
    assert settings.codec_token_env == "PONDER_CODEC_TOKEN"
    with pytest.raises(ConfigError) as refused:  # the example's file is absent here
        keyring_from_settings(settings)
    assert refused.value.code == "encryption.keyring_invalid"


def test_a_rotated_keyring_is_a_new_worker_configuration(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lingering embedded worker holding the old keyring must not serve runs encrypted with a
    newer key: the keyring is part of the configuration's queue name (as a digest)."""
    from client.worker_fingerprint import worker_fingerprint

    monkeypatch.delenv(settings.keyring_env, raising=False)
    plain = worker_fingerprint(settings)
    monkeypatch.setenv(settings.keyring_env, keyring_text(("k1", OLD_KEY)))
    from_env = worker_fingerprint(settings)
    monkeypatch.setenv(settings.keyring_env, keyring_text(("k1", OLD_KEY), ("k2", NEW_KEY)))
    rotated_env = worker_fingerprint(settings)
    monkeypatch.delenv(settings.keyring_env)
    on_disk = encrypted(settings, tmp_path, ("k1", OLD_KEY))
    before = worker_fingerprint(on_disk)
    assert on_disk.keyring_file is not None
    on_disk.keyring_file.write_text(keyring_text(("k1", OLD_KEY), ("k2", NEW_KEY)))
    after = worker_fingerprint(on_disk)
    assert len({plain, from_env, rotated_env, before, after}) == 5
    assert OLD_KEY.hex()[:16] not in after and b64(OLD_KEY)[:16] not in after


async def test_a_payload_the_commands_keyring_cannot_open_is_a_coded_one_line_error() -> None:
    """A client whose keyring lacks the key (``ponder status`` on another machine) prints the
    code and the fix, not ``internal.error``."""
    from client.failures import describe

    (sealed,) = await EncryptionCodec(Keyring({"k2": NEW_KEY})).encode([json_payload("x")])
    with pytest.raises(ApplicationError) as failed:
        await EncryptionCodec(Keyring({"k1": OLD_KEY})).decode([sealed])
    shown = describe(failed.value)
    assert shown.code == "encryption.key_unknown"
    assert shown.exit_code == 1
    assert "add that key to the keyring" in shown.fix


@pytest.mark.parametrize(
    ("keyring", "token", "code"),
    [
        (None, TOKEN, "encryption.keyring_invalid"),
        (True, None, "encryption.token_missing"),
        (True, "short-token", "encryption.token_missing"),
    ],
)
def test_the_codec_server_will_not_start_without_a_keyring_and_a_token(
    tmp_path: Path, keyring: bool | None, token: str | None, code: str
) -> None:
    from tests.cli import ponder_here

    extra = {}
    if keyring:
        extra["PONDER_KEYRING"] = keyring_text(("k1", OLD_KEY))
    if token:
        extra["PONDER_CODEC_TOKEN"] = token
    done = ponder_here("codec-server", "--port", "1", env=cli_env(tmp_path / "home", **extra))
    assert done.code == 2, done
    assert done.err.startswith(f"ponder: {code}: "), done.err
    assert len(done.err.strip().splitlines()) == 1


async def test_history_replays_after_rotation_and_plain_history_replays_with_encryption_on(
    encrypted_run: EncryptedRun, tmp_path: Path
) -> None:
    """The encrypted run replays on a worker whose keyring gained a newer key (nothing was
    re-encrypted); a history saved before encryption replays on a worker that encrypts."""
    from temporalio.client import WorkflowHistory
    from temporalio.worker import Replayer

    from worker.worker import WORKFLOWS

    rotated = encrypted(
        encrypted_run.settings, tmp_path, ("k1", OLD_KEY), ("k2", NEW_KEY), ("k3", bytes(32))
    )
    replayer = Replayer(workflows=WORKFLOWS, data_converter=data_converter(rotated))
    history = await encrypted_run.handle.fetch_history()
    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None
    saved = Path(__file__).parent / "histories" / "ask.json"
    plain = WorkflowHistory.from_json("ask", saved.read_text())
    result = await replayer.replay_workflow(plain, raise_on_replay_failure=True)
    assert result.replay_failure is None
    # Without the key that wrote it, the encrypted run does not replay: the check has teeth.
    lacking = encrypted(encrypted_run.settings, tmp_path, ("k1", OLD_KEY))
    refused = await Replayer(
        workflows=WORKFLOWS, data_converter=data_converter(lacking)
    ).replay_workflow(history, raise_on_replay_failure=False)
    assert refused.replay_failure is not None
