"""The run store: writes stay inside the runs directory, carry no keys, and never block the loop."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities import run_store
from activities.call_model import ModelActivities
from activities.campaign.report import CampaignArtifactActivities
from activities.config import known_secrets, load_settings
from activities.plan.files import PlanFileActivities
from activities.run_files import RunFileActivities
from activities.run_store import (
    CLAIMS,
    RUN_DIR_INVALID,
    RUN_ID_IN_USE,
    FileAppend,
    FilesGap,
    RunDirRefused,
    RunIdInUse,
    RunIdInvalid,
    RunStore,
    WriteRunFilesInput,
)
from activities.tournament.artifacts import TournamentArtifactActivities
from workflows.campaign.types import CampaignArtifactsInput
from workflows.model_types import CallModelInput, ModelRequest
from workflows.run_ids import (
    RUN_ID_INVALID,
    check_run_id,
    foreign_run_id_problem,
    run_id_problem,
    writer_problem,
)
from workflows.tournament.types import TournamentSnapshot


def as_workflow(workflow_id: str | None) -> ActivityEnvironment:
    """An activity context as workflow ``workflow_id`` schedules it (None: no workflow)."""
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, workflow_id=workflow_id)
    return env


@pytest.mark.parametrize(
    "run_id", ["../../etc", "a/b", "", ".x", "-x", "x" * 129, "é", "abc\n", "x" * 128 + "\n"]
)
def test_run_id_validator_refuses_with_its_code(run_id: str) -> None:
    problem = run_id_problem(run_id)
    assert problem is not None
    assert "[A-Za-z0-9][A-Za-z0-9._-]*" in problem
    with pytest.raises(RunIdInvalid) as info:
        check_run_id(run_id)
    assert info.value.code == RUN_ID_INVALID


@pytest.mark.parametrize("run_id", ["a", "t-1f3.x_y", "x" * 128])
def test_run_id_validator_accepts_good_ids(run_id: str) -> None:
    assert run_id_problem(run_id) is None
    assert check_run_id(run_id) == run_id


def test_a_symlinked_run_dir_is_refused(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs")
    (tmp_path / "runs").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "runs" / "r1").symlink_to(outside)
    with pytest.raises(RunDirRefused, match="symlink"):
        store.write("r1", "summary.json", "{}")
    assert list(outside.iterdir()) == []
    # A runs directory that is itself a link (the user's choice) is fine.
    (tmp_path / "linked-runs").symlink_to(tmp_path / "runs")
    assert RunStore(tmp_path / "linked-runs").write("r2", "f.txt", "x").read_text() == "x"


def test_a_batch_refuses_each_path_that_leaves_its_run_dir(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs")
    outside = tmp_path / "outside"
    outside.mkdir()
    store.write_all("r1", {"a.txt": "a"})
    (tmp_path / "runs" / "r1" / "sub").symlink_to(outside)
    for relative in ("sub/b.txt", "../r2/c.txt"):
        with pytest.raises(RunDirRefused, match="leaves the run directory"):
            store.write_all("r1", {"ok.txt": "ok", relative: "x"})
        with pytest.raises(RunDirRefused, match="leaves the run directory"):
            store.write_all("r1", {}, {relative: FileAppend(after_lines=0, text="x\n")})
    assert list(outside.iterdir()) == []
    assert not (tmp_path / "runs" / "r2").exists()
    (tmp_path / "runs" / "r3").symlink_to(outside)
    with pytest.raises(RunDirRefused, match="symlink"):
        store.write_all("r3", {"a.txt": "a"})
    assert list(outside.iterdir()) == []


def test_the_writer_redacts_configured_keys(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs", secrets=["sk-abc123", ""])
    path = store.write("r1", "config.json", '{"task": "use sk-abc123 please"}')
    assert path.read_text() == '{"task": "use [redacted] please"}'


class SlowStore(RunStore):
    def _write(self, target: Path, content: str | bytes, made: set[Path] | None = None) -> Path:
        time.sleep(0.5)  # a slow disk
        return super()._write(target, content, made)


async def test_run_file_writes_do_not_block_the_event_loop(tmp_path: Path) -> None:
    files = RunFileActivities(SlowStore(tmp_path / "runs"))
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.05)

    task = asyncio.create_task(ticker())
    try:
        payload = WriteRunFilesInput(run_id="r1", files={"a.txt": "a"})
        await as_workflow("r1").run(files.write_run_files, payload)
    finally:
        task.cancel()
    assert ticks >= 5  # the loop (and its heartbeats) kept running during the 0.5 s write
    assert (tmp_path / "runs" / "r1" / "a.txt").read_text() == "a"


def test_known_secrets_cover_every_endpoint_key_and_the_cluster_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-1")
    monkeypatch.setenv("TEMPORAL_API_KEY", "tmprl-2")
    monkeypatch.setenv("MY_LOCAL_KEY", "local-3")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    config = tmp_path / "ponder.toml"
    config.write_text(
        '[providers.local]\nkind = "openai"\nbase_url = "http://127.0.0.1:1/v1"\n'
        'api_key_env = "MY_LOCAL_KEY"\n'
    )
    settings = load_settings(config, home=str(tmp_path / "h"))
    assert sorted(known_secrets(settings)) == ["local-3", "sk-openai-1", "tmprl-2"]


# -- a run writes only its own directory -------------------------------------------------------


def test_input_may_name_only_its_own_run() -> None:
    assert foreign_run_id_problem("r1", None) is None
    assert foreign_run_id_problem("r1", "r1") is None
    problem = foreign_run_id_problem("hijack-1", "ask-ok-1")
    assert problem is not None
    assert problem.startswith("run_id: 'ask-ok-1' is not this run's workflow id 'hijack-1'")


@pytest.mark.parametrize(
    ("workflow_id", "run_id", "allowed"),
    [
        ("c1", "c1", True),
        ("c1", "c1.0123456789ab", True),  # a campaign's cell, a plan step's tournament
        ("c1", "c1.review.1.x", True),
        ("c1", "c10", False),  # a prefix is not a parent
        ("c1.0123456789ab", "c1", False),  # a child never writes its parent
        ("hijack-1", "ask-ok-1", False),
        (None, "r1", False),  # a standalone activity: no workflow, no run directory
    ],
)
def test_a_workflow_writes_its_own_and_its_childrens_directories(
    workflow_id: str | None, run_id: str, allowed: bool
) -> None:
    assert (writer_problem(workflow_id, run_id) is None) is allowed


Writer = Callable[[Path, httpx.AsyncClient, str], tuple[Callable[[Any], Awaitable[Any]], Any]]


def _run_files(runs: Path, http: httpx.AsyncClient, run_id: str) -> tuple[Any, Any]:
    payload = WriteRunFilesInput(run_id=run_id, files={"summary.json": "OVERWRITTEN"})
    return RunFileActivities(RunStore(runs)).write_run_files, payload


def _plan_files(runs: Path, http: httpx.AsyncClient, run_id: str) -> tuple[Any, Any]:
    payload = WriteRunFilesInput(run_id=run_id, files={"cost.json": "OVERWRITTEN"})
    return PlanFileActivities(RunStore(runs)).write_plan_files, payload


def _tournament(runs: Path, http: httpx.AsyncClient, run_id: str) -> tuple[Any, Any]:
    snap = TournamentSnapshot.model_construct(run_id=run_id)  # refused before it is rendered
    return TournamentArtifactActivities(RunStore(runs)).write_tournament_artifacts, snap


def _campaign(runs: Path, http: httpx.AsyncClient, run_id: str) -> tuple[Any, Any]:
    payload = CampaignArtifactsInput.model_construct(run_id=run_id)
    return CampaignArtifactActivities(RunStore(runs)).write_campaign_artifacts, payload


def _call_model(runs: Path, http: httpx.AsyncClient, run_id: str) -> tuple[Any, Any]:
    settings = load_settings(None, home=str(runs.parent))
    settings.runs_dir = runs
    request = ModelRequest(model="sim:default", prompt="OVERWRITTEN")
    call = CallModelInput(run_id=run_id, phase="ask", index=0, request=request)
    return ModelActivities(settings, http).call_model, call  # its raw events: refused


@pytest.mark.parametrize(
    "writer",
    [_run_files, _plan_files, _tournament, _campaign, _call_model],
    ids=lambda w: w.__name__.strip("_"),
)
@pytest.mark.parametrize("workflow_id", ["hijack-1", None])
async def test_no_activity_writes_another_runs_directory(
    tmp_path: Path, writer: Writer, workflow_id: str | None
) -> None:
    """Whatever run id an activity's input names, it writes only its workflow's directory."""
    runs = tmp_path / "runs"
    victim = runs / "ask-ok-1"
    victim.mkdir(parents=True)
    (victim / "summary.json").write_text("{}")
    async with httpx.AsyncClient() as http:
        with pytest.raises(ApplicationError) as info:
            await as_workflow(workflow_id).run(*writer(runs, http, "ask-ok-1"))
    assert info.value.type == RUN_DIR_INVALID
    assert info.value.non_retryable
    assert sorted(p.name for p in victim.iterdir()) == ["summary.json"]
    assert (victim / "summary.json").read_text() == "{}"


async def test_a_reused_workflow_id_cannot_overwrite_the_earlier_run(tmp_path: Path) -> None:
    """Temporal starts a closed workflow's id again by default: the run store keeps the id for
    the execution chain that wrote it first, and refuses the later one ``run.id_in_use``."""
    runs = tmp_path / "runs"
    files = RunFileActivities(RunStore(runs))
    env = as_workflow("ask-ok-1")

    def payload(text: str, chain: str | None) -> WriteRunFilesInput:
        return WriteRunFilesInput(run_id="ask-ok-1", files={"summary.json": text}, chain=chain)

    await env.run(files.write_run_files, payload("first", "chain-1"))
    await env.run(files.write_run_files, payload("again", "chain-1"))  # the same run: fine
    with pytest.raises(ApplicationError) as info:
        await env.run(files.write_run_files, payload("OVERWRITTEN", "chain-2"))
    assert info.value.type == RUN_ID_IN_USE and info.value.non_retryable
    assert (runs / "ask-ok-1" / "summary.json").read_text() == "again"
    assert (runs / CLAIMS / "ask-ok-1").read_text() == "chain-1"
    # A child's directory is written under its parent's claim, and claims its own id itself.
    child = WriteRunFilesInput(run_id="ask-ok-1.c", files={"f": "x"}, chain="chain-2")
    with pytest.raises(ApplicationError, match="already used"):
        await env.run(files.write_run_files, child)
    assert not (runs / "ask-ok-1.c").exists()


def test_an_append_keeps_the_lines_sent_before_and_a_retry_writes_the_same_bytes(
    tmp_path: Path,
) -> None:
    store = RunStore(tmp_path, secrets=["sk-secret-123"])
    store.write("r1", "trace.jsonl", "1\n2\n")
    again = FileAppend(after_lines=2, text="3 sk-secret-123\n4\n")
    store.append("r1", "trace.jsonl", again)
    store.append("r1", "trace.jsonl", again)  # a retried write cuts back to the 2 lines first
    assert (tmp_path / "r1" / "trace.jsonl").read_text() == "1\n2\n3 [redacted]\n4\n"
    with pytest.raises(FilesGap, match="holds 4 lines, not the 9"):
        store.append("r1", "trace.jsonl", FileAppend(after_lines=9, text="10\n"))
    with pytest.raises(FilesGap):  # a file this disk never had
        store.append("r1", "calls.jsonl", FileAppend(after_lines=1, text="x\n"))
    store.append("r1", "new.jsonl", FileAppend(after_lines=0, text="a\n"))
    assert (tmp_path / "r1" / "new.jsonl").read_text() == "a\n"


def test_a_remembered_claim_is_still_enforced_and_the_memory_is_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's later writes skip the claim's file (its chain is remembered), yet another chain is
    refused as before, and a claim forgotten past the bound is read from its file again."""
    monkeypatch.setattr(run_store, "CLAIMS_REMEMBERED", 2)
    store = RunStore(tmp_path)
    store.claim("ask-ok-1", "chain-1")
    with monkeypatch.context() as files:  # a remembered claim makes no file

        def no_files(*args: object, **kwargs: object) -> None:
            raise AssertionError("the remembered claim touched its file")

        files.setattr(run_store.tempfile, "mkstemp", no_files)
        store.claim("ask-ok-1", "chain-1")
    with pytest.raises(RunIdInUse):
        store.claim("ask-ok-1", "chain-2")
    store.claim("ask-ok-2", "chain-2")
    store.claim("ask-ok-3", "chain-3")  # the third: ask-ok-1 is forgotten
    assert sorted(store._claimed) == ["ask-ok-2", "ask-ok-3"]
    with pytest.raises(RunIdInUse):  # read from its file again
        store.claim("ask-ok-1", "chain-9")
    store.claim("ask-ok-1", "chain-1")
    assert sorted(store._claimed) == ["ask-ok-1", "ask-ok-3"]


async def test_a_runs_later_calls_are_prepared_on_the_loop_only_when_they_read_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first call of a run checks its directory and claims it in a thread; its later calls
    are prepared on the event loop, unless preparing them would read a file (a secrets file, a
    workspace, a replay's recording) or they are another chain's, which is still refused."""
    monkeypatch.delenv("PONDER_SECRETS_FILE", raising=False)
    settings = load_settings(None, home=str(tmp_path))
    env = as_workflow("ask-ok-1")
    request = ModelRequest(model="sim:default", prompt="hi")
    call = CallModelInput(run_id="ask-ok-1", phase="ask", index=0, chain="chain-1", request=request)
    async with httpx.AsyncClient() as http:
        model = ModelActivities(settings, http)
        assert env.run(model._in_memory, call) is None  # nothing checked yet
        await env.run(model.call_model, call)
        assert env.run(model._in_memory, call) == settings.runs_dir / "ask-ok-1"
        other_chain = call.model_copy(update={"chain": "chain-2"})
        assert env.run(model._in_memory, other_chain) is None
        with pytest.raises(ApplicationError) as info:
            await env.run(model.call_model, other_chain)
        assert info.value.type == RUN_ID_IN_USE
        for update in ({"workspace": str(tmp_path)}, {"model": "replay:ask-ok-1"}):
            reads = call.model_copy(update={"request": request.model_copy(update=update)})
            assert env.run(model._in_memory, reads) is None
        monkeypatch.setenv("PONDER_SECRETS_FILE", str(tmp_path / "secrets.env"))
        assert env.run(model._in_memory, call) is None
