"""Run files encrypted at rest (``encrypt_run_files``): the format directly, then a tournament
and a plan run on real workers (the plan's calls over real HTTP to a fake provider), their run
directories searched byte for byte, and ``ponder status``, ``report`` and ``export`` of them as
processes, with the keyring, with a rotated one, and without.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from temporalio.client import Client

from activities.codec import Keyring
from activities.config import Endpoint, load_settings
from activities.errors import ConfigError
from activities.run_file_crypto import (
    MAGIC,
    RUN_FILE_INVALID,
    RUN_FILE_LOCKED,
    RUN_FILES_NEED_KEYRING,
    RunFileCipher,
    RunFileUnreadable,
    is_sealed_run,
    open_run_bytes,
    read_run_bytes,
    read_run_text,
    run_file_cipher,
)
from activities.run_store import FilesGap, RunStore
from client.connect import connect
from client.read_tokens import read_token
from tests.campaigns.helpers import document, run_campaign
from tests.cli import cli_env, ponder, ponder_here
from tests.conftest import with_endpoint
from tests.fakes import FakeProvider, Reply, openai_completion
from tests.plans.run_helpers import agent, plan_doc
from tests.plans.run_helpers import run as run_plan
from worker.worker import WorkerOptions, running_worker
from workflows.activity_contracts import FileAppend
from workflows.ask_types import AskInput, AskResult
from workflows.call_options import CallOptions
from workflows.names import ASK, TOURNAMENT
from workflows.tournament.types import TournamentInput, TournamentResult
from workflows.wire_replay import WireReplay

OLD_KEY = bytes(range(7, 39))
NEW_KEY = bytes(range(50, 82))
API_KEY = "sk-runfiles-" + "Vb8" * 12
QUESTION = "Which moon of Saturn has lakes? heron-" + "Tq6" * 8
ANSWER = "Titan, with methane lakes. kestrel-" + "Pz3" * 8
REPLIED = "Titan again. osprey-" + "Wd5" * 8
PLAIN_FILES = {"read-token", ".write-order"}
"""What stays plain in a run directory: the read capability and the artifact writes' order."""


def _ring(*entries: tuple[str, bytes]) -> str:
    return "".join(f"{key_id}={base64.b64encode(key).decode()}\n" for key_id, key in entries)


def _cipher(key_id: str | None = None, key: bytes = OLD_KEY) -> RunFileCipher:
    """A cipher under a key id no other test of this process registers (the process keeps the
    keys it has seen: a fresh id is one it does not know)."""
    return RunFileCipher(Keyring({key_id or f"t{uuid.uuid4().hex[:8]}": key}))


# --- the format, directly --------------------------------------------------------------------


def test_a_jsonl_file_is_sealed_a_line_at_a_time_and_appends_keep_counting_lines(
    tmp_path: Path,
) -> None:
    store = RunStore(tmp_path, cipher=_cipher())
    store.write_all("r1", {"events.jsonl": '{"n": 1}\n{"n": 2}\n', "summary.json": '{"q": 1}\n'})
    store.append("r1", "events.jsonl", FileAppend(after_lines=2, text='{"n": 3}\n'))
    # A retried append names the same lines before it: it replaces the tail, never adds twice.
    store.append("r1", "events.jsonl", FileAppend(after_lines=2, text='{"n": 4}\n{"n": 5}\n'))
    raw = (tmp_path / "r1" / "events.jsonl").read_bytes()
    assert [line.startswith(MAGIC) for line in raw.splitlines()] == [True] * 4
    assert b'"n"' not in raw
    assert read_run_text(tmp_path / "r1" / "events.jsonl").splitlines() == [
        '{"n": 1}',
        '{"n": 2}',
        '{"n": 4}',
        '{"n": 5}',
    ]
    summary = (tmp_path / "r1" / "summary.json").read_bytes()
    assert summary.count(b"\n") == 1 and summary.startswith(MAGIC)  # a whole file: one record
    assert read_run_text(tmp_path / "r1" / "summary.json") == '{"q": 1}\n'
    assert is_sealed_run(tmp_path / "r1")
    with pytest.raises(FilesGap):
        store.append("r1", "events.jsonl", FileAppend(after_lines=9, text="{}\n"))


def test_each_record_has_its_own_nonce_and_a_plain_file_reads_as_it_is(tmp_path: Path) -> None:
    cipher = _cipher()
    assert cipher.seal("a.json", b"same") != cipher.seal("a.json", b"same")
    assert cipher.seal("a.json", b"") == b""
    plain = tmp_path / "plain.jsonl"
    plain.write_bytes(b'{"a": 1}\n{"b": "' + MAGIC + b'"}\n')  # the magic mid-line is text
    assert read_run_bytes(plain) == plain.read_bytes()
    assert not is_sealed_run(tmp_path)


def test_lines_written_before_the_option_stay_and_a_torn_last_record_is_left_for_readers() -> None:
    cipher = _cipher()
    sealed = cipher.seal_lines(b'{"late": 1}\n{"late": 2}\n')
    mixed = b'{"early": 0}\n' + sealed
    assert open_run_bytes(mixed, "x") == b'{"early": 0}\n{"late": 1}\n{"late": 2}\n'
    torn = sealed[: len(sealed) - 10]  # a writer stopped inside its last record
    opened = open_run_bytes(torn, "x").splitlines()
    assert opened[0] == b'{"late": 1}'
    assert opened[1].startswith(MAGIC)  # not JSON: the readers' torn-line rule skips it


def test_an_unknown_key_is_locked_and_an_altered_record_is_invalid() -> None:
    writer = _cipher()
    record = writer.seal("summary.json", b'{"q": "secret"}')
    stranger = record.replace(writer.key_id.encode(), b"nobody-" + uuid.uuid4().hex[:6].encode())
    with pytest.raises(RunFileUnreadable) as locked:
        open_run_bytes(stranger, "runs/r1/summary.json")
    assert locked.value.code == RUN_FILE_LOCKED
    assert "runs/r1/summary.json" in locked.value.message and "keyring" in locked.value.message
    assert not isinstance(locked.value, ValueError)  # readers skip ValueErrors as half-written
    body = record.rstrip(b"\n").rsplit(b" ", 1)[1]
    tag = bytearray(base64.b64decode(body))
    tag[-1] ^= 1
    for altered in (record.replace(body, base64.b64encode(tag)), record.replace(body, b"!" + body)):
        with pytest.raises(RunFileUnreadable) as invalid:
            open_run_bytes(altered, "r1/summary.json")
        assert invalid.value.code == RUN_FILE_INVALID
    # The key id is authenticated: a record relabelled to another known key does not open.
    other = _cipher()
    relabelled = record.replace(writer.key_id.encode(), other.key_id.encode())
    with pytest.raises(RunFileUnreadable) as moved:
        open_run_bytes(relabelled, "r1/summary.json")
    assert moved.value.code == RUN_FILE_INVALID


def test_encrypt_run_files_without_a_keyring_is_refused(tmp_path: Path) -> None:
    settings = load_settings(home=str(tmp_path / "home"), encrypt_run_files=True)
    with pytest.raises(ConfigError) as refused:
        run_file_cipher(settings)
    assert refused.value.code == RUN_FILES_NEED_KEYRING
    done = ponder_here("worker", "--encrypt-run-files", env=cli_env(tmp_path / "home"))
    assert done.code == 2
    assert RUN_FILES_NEED_KEYRING in done.err and "keyring_file" in done.err
    env = cli_env(tmp_path / "home", PONDER_ENCRYPT_RUN_FILES="1")
    done = ponder_here("worker", env=env)
    assert done.code == 2 and RUN_FILES_NEED_KEYRING in done.err


# --- runs on real workers --------------------------------------------------------------------


async def _ask(client: Client, queue: str, payload: AskInput) -> AskResult:
    assert payload.run_id is not None
    handle = await client.start_workflow(
        ASK, payload, id=payload.run_id, task_queue=queue, result_type=AskResult
    )
    return await asyncio.wait_for(handle.result(), 60)


@dataclass
class SealedRuns:
    home: Path
    runs_dir: Path
    old_ring: Path
    """Lists k1 alone: what the tournament was written with."""
    rotated_ring: Path
    """k1, then k2 (the newest): what the plan run was written with."""
    tournament: str
    plan: str
    campaign: str
    asked: str
    final_answer: str
    fake: FakeProvider


@pytest.fixture(scope="module")
async def sealed(
    server_address: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[SealedRuns]:
    tmp = tmp_path_factory.mktemp("sealed")
    old_ring, rotated_ring = tmp / "keyring-old", tmp / "keyring-rotated"
    old_ring.write_text(_ring(("k1", OLD_KEY)))
    rotated_ring.write_text(_ring(("k1", OLD_KEY), ("k2", NEW_KEY)))
    fake = FakeProvider()
    fake.replies = [Reply(body=openai_completion(text, model="m")) for text in (ANSWER, REPLIED)]
    os.environ["RUNFILES_TEST_API_KEY"] = API_KEY
    base = load_settings(home=str(tmp / "home")).model_copy(
        update={
            "config_file": None,
            "server_idle_s": 0.0,
            "workspace_roots": [tmp],
            "encrypt_run_files": True,
        }
    )
    base = with_endpoint(
        base,
        "keyed",
        Endpoint(kind="openai", base_url=fake.url, api_key_env="RUNFILES_TEST_API_KEY"),
    )
    tournament_id = f"rft-{uuid.uuid4().hex[:8]}"
    plan_id = f"rfp-{uuid.uuid4().hex[:8]}"
    campaign_id = f"rfc-{uuid.uuid4().hex[:8]}"
    asked, replayed = f"rfa-{uuid.uuid4().hex[:8]}", f"rfr-{uuid.uuid4().hex[:8]}"
    try:
        settings = base.model_copy(update={"keyring_file": old_ring})
        client = await connect(settings, server_address)
        queue = f"test-{uuid.uuid4()}"
        async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
            handle = await client.start_workflow(
                TOURNAMENT,
                TournamentInput(task=QUESTION, profile="quick", seed=3, run_id=tournament_id),
                id=tournament_id,
                task_queue=queue,
                result_type=TournamentResult,
            )
            result = await asyncio.wait_for(handle.result(), 90)
        settings = base.model_copy(update={"keyring_file": rotated_ring})
        client = await connect(settings, server_address)
        queue = f"test-{uuid.uuid4()}"
        plan = plan_doc(
            agent("ask", f"Answer this: {QUESTION}", model="keyed:m"),
            agent("check", "Check: ${steps.ask.output}", "fine", deps=["ask"]),
        )
        campaign = document(
            variants=[
                {"id": "one", "kind": "single", "config": {"model": "sim:default"}},
                {"id": "two", "kind": "single", "config": {"model": "sim:default,accuracy=0.9"}},
            ],
            scenarios=[{"id": "s0", "task": QUESTION, "scorer": {"kind": "sim_truth"}}],
            seeds=[0],
            comparator="one",
            min_pairs=1,
        )
        async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
            done = await asyncio.wait_for(run_plan(client, queue, plan, run_id=plan_id), 90)
            outcome = await asyncio.wait_for(run_campaign(client, queue, campaign, campaign_id), 90)
            question = AskInput(question=QUESTION, model="keyed:m", seed=1)
            recorded = await _ask(client, queue, question.model_copy(update={"run_id": asked}))
            calls = len(fake.seen)
            # Replayed from the recorded run's sealed raw events: no request leaves.
            token = read_token(settings.runs_dir, asked) or ""
            options = CallOptions(replay=WireReplay(run_id=asked), read_tokens={asked: token})
            replay = question.model_copy(update={"run_id": replayed, "calls": options})
            again = await _ask(client, queue, replay)
        assert recorded.response.text == again.response.text == REPLIED
        assert len(fake.seen) == calls
        assert done.outputs["ask"] == ANSWER
        assert not isinstance(outcome, BaseException), outcome
        yield SealedRuns(
            tmp / "home",
            settings.runs_dir,
            old_ring,
            rotated_ring,
            tournament_id,
            plan_id,
            campaign_id,
            asked,
            result.final_answer,
            fake,
        )
    finally:
        os.environ.pop("RUNFILES_TEST_API_KEY", None)
        fake.close()


def _files(run_dir: Path) -> list[Path]:
    return sorted(p for p in run_dir.rglob("*") if p.is_file())


def test_no_run_file_holds_the_question_an_answer_or_the_key(sealed: SealedRuns) -> None:
    assert sealed.fake.seen[0].headers["authorization"] == f"Bearer {API_KEY}"
    secrets = [QUESTION, ANSWER, API_KEY, sealed.final_answer.splitlines()[0]]
    assert len(secrets[-1]) >= 20
    opened = b""
    run_dirs = [p for p in sealed.runs_dir.iterdir() if not p.name.startswith(".")]
    # The three runs, and the campaign's cells, each a run of its own.
    assert len(run_dirs) > 3
    assert {sealed.tournament, sealed.plan, sealed.campaign} <= {p.name for p in run_dirs}
    for run_dir in run_dirs:
        files = _files(run_dir)
        assert {"summary.json", "trace.jsonl"} & {p.name for p in files}, run_dir
        for path in files:
            raw = path.read_bytes()
            assert [s for s in secrets if s.encode() in raw] == [], path
            assert [s for s in secrets if json.dumps(s)[1:-1].encode() in raw] == [], path
            if path.name not in PLAIN_FILES and raw:
                assert raw.startswith(MAGIC), path
                opened += read_run_bytes(path)
    # Opened, the same files hold them: the search above could have hit.
    assert QUESTION.encode() in opened and ANSWER.encode() in opened
    assert sealed.final_answer.splitlines()[0].encode() in opened
    assert API_KEY.encode() not in opened  # redacted before it was sealed


def test_the_plan_run_names_the_newest_key_and_the_tournament_the_old_one(
    sealed: SealedRuns,
) -> None:
    plan_trace = (sealed.runs_dir / sealed.plan / "trace.jsonl").read_bytes()
    tournament_events = (sealed.runs_dir / sealed.tournament / "events.jsonl").read_bytes()
    assert {line.split(b" ")[1] for line in plan_trace.splitlines()} == {b"k2"}
    assert {line.split(b" ")[1] for line in tournament_events.splitlines()} == {b"k1"}


COMMANDS = (("status",), ("report",), ("export", "--format", "json"))


@pytest.mark.parametrize("kind", ["tournament", "plan", "campaign", "asked"])
def test_status_report_and_export_read_sealed_runs_with_the_rotated_keyring(
    sealed: SealedRuns, kind: str
) -> None:
    """In this process (its workers loaded both keyrings); a ``ponder`` process loading the
    keyring from its own settings is the next test's."""
    run_id = getattr(sealed, kind)
    env = cli_env(sealed.home, PONDER_KEYRING_FILE=str(sealed.rotated_ring))
    status, report, export = (ponder_here(verb, run_id, *rest, env=env) for verb, *rest in COMMANDS)
    assert (status.code, report.code, export.code) == (0, 0, 0), (status, report, export)
    assert "completed" in status.out and "run store" in status.out
    bundle = json.loads(export.out)
    assert bundle["run"]["run_id"] == run_id and bundle["run"]["status"] == "completed"
    # What only the sealed files held: the question (a tournament's task, a campaign's
    # scenario), the plan's cost, the Ask's answer.
    assert {"plan": '"invocations": 2', "asked": REPLIED}.get(kind, QUESTION) in export.out
    html = Path(report.out.strip())
    assert html == sealed.runs_dir / run_id / "report.html"
    assert html.read_bytes().startswith(MAGIC)  # re-rendered, and sealed again
    assert "<html" in read_run_text(html)


async def test_without_the_keyring_status_report_export_and_runs_refuse_with_the_code(
    sealed: SealedRuns,
) -> None:
    # A keyring that lost the old key still reads the newer run, never the older one.
    new_only = sealed.home.parent / "keyring-new"
    new_only.write_text(_ring(("k2", NEW_KEY)))
    bare, rotated = cli_env(sealed.home), cli_env(sealed.home, PONDER_KEYRING_FILE=str(new_only))
    *refused, older, newer = await asyncio.gather(
        *(ponder(verb, sealed.tournament, *rest, env=bare) for verb, *rest in COMMANDS),
        ponder("runs", "--json", env=bare),
        ponder("status", sealed.tournament, env=rotated),
        ponder("export", sealed.plan, env=rotated),
    )
    for done in refused:
        assert done.code == 2, done
        assert RUN_FILE_LOCKED in done.err and "keyring" in done.err
        assert QUESTION not in done.out + done.err
    assert older.code == 2 and "'k1'" in older.err and RUN_FILE_LOCKED in older.err
    assert newer.code == 0 and json.loads(newer.out)["cost"]["calls"] == 2


def test_the_documented_configuration_turns_the_option_on(tmp_path: Path) -> None:
    from tests.test_readme import fenced, section

    (block,) = fenced(section("## Encryption at rest", page="docs/security.md"), "toml")
    config = tmp_path / "ponder.toml"
    config.write_text(block)
    settings = load_settings(config, home=str(tmp_path / "home"))
    assert settings.encrypt_run_files is True
    with pytest.raises(ConfigError):  # the page's keyring file is absent here: refused at start
        run_file_cipher(settings)


def test_a_raw_event_is_appended_as_one_sealed_line(tmp_path: Path) -> None:
    from activities.raw_events import RawEventLog

    path = tmp_path / "r1" / "raw-events.jsonl"
    log = RawEventLog(path, secrets=[API_KEY], base={"call_id": "c1"}, cipher=_cipher())
    log.append({"request": {"prompt": QUESTION, "authorization": API_KEY}})
    log.append({"response": {"text": ANSWER}})
    raw = path.read_bytes()
    assert raw.count(b"\n") == 2 and QUESTION.encode() not in raw
    events = [json.loads(line) for line in read_run_text(path).splitlines()]
    assert events[0]["request"] == {"prompt": QUESTION, "authorization": "[redacted]"}
    assert events[1]["response"]["text"] == ANSWER


def test_runs_lists_sealed_runs(sealed: SealedRuns) -> None:
    env = cli_env(sealed.home, PONDER_KEYRING_FILE=str(sealed.rotated_ring))
    keyed = ponder_here("runs", "--json", env=env)
    assert keyed.code == 0, keyed
    rows = {row["run_id"]: row for row in json.loads(keyed.out)}
    # Its created time comes from the first (sealed) event: no file's mtime stands in for it.
    first = json.loads(
        read_run_text(sealed.runs_dir / sealed.tournament / "events.jsonl").splitlines()[0]
    )
    assert rows[sealed.tournament]["created"] == first["ts"]
    assert rows[sealed.plan]["status"] == "completed"


def test_the_mcp_resources_page_the_opened_file(sealed: SealedRuns) -> None:
    from client.mcp.resources import _bytes, _records

    run_dir = sealed.runs_dir / sealed.tournament
    page = json.loads(_records("ponder://runs/x/candidates", run_dir / "candidates.jsonl", 0))
    plain = read_run_text(run_dir / "candidates.jsonl").splitlines()
    assert page["total"] == len(plain) > 0
    assert page["items"][0] == json.loads(plain[0])
    text, _ = _bytes("ponder://runs/x/answer", run_dir / "summary.json", 0)
    assert text == read_run_text(run_dir / "summary.json")[: len(text)] and "winner_id" in text


def test_an_altered_run_file_stops_export_with_the_code(sealed: SealedRuns, tmp_path: Path) -> None:
    import shutil

    home = tmp_path / "home"
    copy = home / "runs" / sealed.tournament
    shutil.copytree(sealed.runs_dir / sealed.tournament, copy)
    summary = copy / "summary.json"
    record = bytearray(summary.read_bytes())
    record[len(MAGIC) + 8] ^= 1  # a character of the nonce, in the record's base64
    summary.write_bytes(bytes(record))
    env = cli_env(home, PONDER_KEYRING_FILE=str(sealed.rotated_ring))
    done = ponder_here("export", sealed.tournament, env=env)
    assert done.code == 2 and RUN_FILE_INVALID in done.err, done
    assert "summary.json" in done.err
