"""The ``command`` and ``replay`` providers end to end through the ``Ask`` workflow."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError

from activities.config import Endpoint, Settings
from activities.model_types import CallModelInput, ModelRequest
from client.embedded import find_temporal_binary
from client.read_tokens import read_token
from tests.call_once import CallModelOnce, call_worker
from tests.cli import cli_env, ponder, ponder_here
from tests.conftest import with_endpoint
from tests.fakes import FakeProvider
from worker.worker import WorkerOptions, running_worker
from workflows.ask_types import AskInput, AskResult
from workflows.call_options import CallOptions
from workflows.names import ASK, TOURNAMENT
from workflows.tournament.types import TournamentInput, TournamentResult


def script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


async def start_ask(client: Client, queue: str, payload: AskInput) -> WorkflowHandle:
    run_id = payload.run_id or f"ask-{uuid.uuid4().hex[:12]}"
    return await client.start_workflow(
        ASK,
        payload.model_copy(update={"run_id": run_id}),
        id=run_id,
        task_queue=queue,
        result_type=AskResult,
    )


async def ask(client: Client, queue: str, payload: AskInput) -> AskResult:
    handle = await start_ask(client, queue, payload)
    result: AskResult = await handle.result()
    return result


async def failure_of(client: Client, queue: str, payload: AskInput) -> ApplicationError:
    with pytest.raises(WorkflowFailureError) as info:
        await ask(client, queue, payload)
    # Ask fails with the provider's code itself, not with a wrapped activity error.
    error = info.value.cause
    assert isinstance(error, ApplicationError)
    assert error.non_retryable
    return error


def raw_events(settings: Settings, run_id: str) -> list[dict[str, object]]:
    path = settings.runs_dir / run_id / "raw-events.jsonl"
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def live_group_members(pgid: int) -> list[int]:
    """Pids of live (non-zombie) processes in process group ``pgid``."""
    members = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state != "Z":
            members.append(int(proc.name))
    return members


def alive(pid: int) -> bool:
    """``pid`` exists and is not a zombie (an orphan may wait for a reaper a while)."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


async def wait_until(predicate: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.05)


# -- command ---------------------------------------------------------------------------


def declare(settings: Settings, name: str, agent: Path, **options: object) -> Settings:
    """``settings`` with the command agent ``name`` declared, as ponder.toml would."""
    endpoint = Endpoint.model_validate({"kind": "command", "argv": [str(agent)], **options})
    return with_endpoint(settings, name, endpoint)


async def test_a_declared_command_gets_the_prompt_on_stdin_and_the_call_env(
    client: Client, settings: Settings, tmp_path: Path
) -> None:
    agent = script(
        tmp_path / "upper.sh",
        "upper=$(tr '[:lower:]' '[:upper:]')\n"
        "printf '%s\\n' \"$upper\"\n"
        'printf "run=%s step=%s attempt=%s\\n" "$PONDER_RUN_ID" "$PONDER_STEP_ID" '
        '"$PONDER_ATTEMPT"\n',
    )
    settings = declare(settings, "upper", agent)
    run_id = f"cmd-{uuid.uuid4().hex[:8]}"
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        result = await ask(
            client, queue, AskInput(question="hello command", model="command:upper", run_id=run_id)
        )
    assert result.response.text == f"HELLO COMMAND\nrun={run_id} step=ask attempt=1\n"
    assert result.response.provider == "upper"
    assert not result.response.simulated
    assert result.response.usage.input_tokens == len("hello command") // 4
    assert (settings.runs_dir / run_id / "artifacts/answer.txt").read_text() == (
        result.response.text
    )
    (event,) = raw_events(settings, run_id)
    assert event["argv"] == [str(agent)]
    assert event["exit_code"] == 0
    assert event["call_key"] == "ask/0/0"


async def test_command_nonzero_exit_is_a_dispatch_error_with_stderr(
    client: Client, settings: Settings, tmp_path: Path
) -> None:
    runs = tmp_path / "runs.log"
    agent = script(
        tmp_path / "fails.sh",
        f"echo started >> {runs}\n"
        "echo 'half an answer'\n"
        "echo 'boom: the agent broke' >&2\n"
        "exit 3\n",
    )
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(
        client, declare(settings, "fails", agent), WorkerOptions(task_queue=queue)
    ):
        error = await failure_of(client, queue, AskInput(question="hi", model="fails:x"))
    assert error.type == "provider.dispatch"
    assert error.non_retryable
    assert "exited 3" in error.message
    assert "boom: the agent broke" in error.message
    assert runs.read_text() == "started\n"  # not retried


@pytest.mark.parametrize(
    "model",
    ["command:/bin/sh -c 'id > {proof}; echo ok'", "command:./agent.sh", "command:nothere"],
)
async def test_input_cannot_name_an_undeclared_command(
    client: Client, worker_queue: str, tmp_path: Path, model: str
) -> None:
    proof = tmp_path / "proof.txt"
    error = await failure_of(
        client, worker_queue, AskInput(question="hi", model=model.format(proof=proof))
    )
    assert error.type == "provider.config"
    assert "declared by the worker" in error.message
    assert 'kind = "command"' in error.message
    assert not proof.exists()


async def test_a_command_line_in_raw_tournament_input_is_refused(
    client: Client, worker_queue: str, tmp_path: Path
) -> None:
    """The hostile input, through the real ``temporal`` binary."""
    proof = tmp_path / "proof.txt"
    workflow_id = f"cmd-{uuid.uuid4().hex[:8]}"
    payload = {"task": "x", "model": f"command:/bin/sh -c 'id > {proof}; echo ok'"}
    process = await asyncio.create_subprocess_exec(
        find_temporal_binary(),
        "workflow",
        "start",
        "--address",
        client.service_client.config.target_host,
        "--type",
        "Tournament",
        "--task-queue",
        worker_queue,
        "--workflow-id",
        workflow_id,
        "--input",
        orjson.dumps(payload).decode(),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0, err.decode()
    with pytest.raises(WorkflowFailureError) as info:
        await asyncio.wait_for(client.get_workflow_handle(workflow_id).result(), 60)
    error = info.value.cause
    assert isinstance(error, ApplicationError)
    assert error.type == "provider.config"
    assert "declared by the worker" in error.message
    assert not proof.exists()


async def test_a_command_agent_gets_only_the_allowlisted_environment(
    client: Client, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_MODE", "fast")
    monkeypatch.setenv("NOT_LISTED", "worker-only")
    agent = script(tmp_path / "env.sh", "env | sort\n")
    settings = declare(settings, "envy", agent, env=["AGENT_MODE"])
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        result = await ask(client, queue, AskInput(question="hi", model="envy:m"))
    names = {line.partition("=")[0] for line in result.response.text.splitlines()}
    assert "AGENT_MODE=fast" in result.response.text.splitlines()
    assert "NOT_LISTED" not in names
    assert names - {"PWD", "SHLVL", "_", "OLDPWD"} <= {
        "PATH",
        "HOME",
        "LANG",
        "AGENT_MODE",
        "PONDER_RUN_ID",
        "PONDER_STEP_ID",
        "PONDER_ATTEMPT",
        "PONDER_ITEM",
    }


async def test_ponder_ask_with_an_env_printing_agent_reveals_no_key(
    server_address: str, tmp_path: Path
) -> None:
    """``ponder ask hi --model command:/usr/bin/env``, with a declared agent."""
    secret = "sk-live-" + "Qz8" * 12
    config = tmp_path / "ponder.toml"
    config.write_text('[providers.envy]\nkind = "command"\nargv = ["/usr/bin/env"]\n')
    home = tmp_path / "home"
    env = cli_env(
        home,
        TEMPORAL_ADDRESS=server_address,
        PONDER_CONFIG=str(config),
        PONDER_TASK_QUEUE=f"test-{uuid.uuid4()}",
        OPENAI_API_KEY=secret,
    )
    run_id = f"env-{uuid.uuid4().hex[:8]}"
    done = await ponder(
        "ask", "hi", "--model", "envy:any", "--run-id", run_id, "--local-worker", env=env
    )
    assert done.code == 0, done.err
    assert "PONDER_RUN_ID=" in done.out  # the agent ran and printed its environment
    assert secret not in done.out + done.err
    assert "OPENAI_API_KEY" not in done.out
    answer = home / "runs" / run_id / "artifacts" / "answer.txt"
    assert secret not in answer.read_text()
    refused = await ponder("ask", "hi", "--model", "command:/usr/bin/env", env=env)
    assert refused.code == 2
    assert "declared by the worker" in refused.err


async def test_named_command_endpoint_runs_its_argv(
    client: Client, settings: Settings, tmp_path: Path
) -> None:
    agent = script(
        tmp_path / "agent.sh",
        "printf '[%s]' \"$@\"\nprintf ' stdin=%s' \"$(cat)\"\n",
    )
    settings = with_endpoint(
        settings,
        "agent",
        Endpoint(kind="command", argv=[str(agent), "-p", "two words"], timeout_s=30),
    )
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        result = await ask(client, queue, AskInput(question="do it", model="agent:any-model"))
    assert result.response.text == "[-p][two words] stdin=do it"
    assert result.response.provider == "agent"
    assert result.response.model == "any-model"


async def test_command_timeout_kills_the_whole_process_group(
    client: Client, settings: Settings, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    agent = script(
        tmp_path / "slow.sh",
        f'sleep 300 &\necho "$$ $!" >> {pids}\nsleep 300\necho never\n',
    )
    settings = with_endpoint(
        settings, "slow", Endpoint(kind="command", argv=[str(agent)], timeout_s=1.0)
    )

    def attempts() -> list[tuple[int, int]]:
        if not pids.exists():
            return []
        lines = pids.read_text().splitlines()
        return [(int(a), int(b)) for a, b in (line.split() for line in lines)]

    queue = f"test-{uuid.uuid4()}"
    try:
        async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
            handle = await start_ask(client, queue, AskInput(question="hi", model="slow:agent"))
            try:
                # The second attempt starts after the first timed out and its retry delay (1 s).
                await wait_until(lambda: len(attempts()) >= 2, 20)
                (leader, child), _ = attempts()[:2]
                assert live_group_members(leader) == []
                assert not alive(leader)
                assert not alive(child)  # the background `sleep 300` went with its group
                description = await handle.describe()
                (pending,) = description.raw_description.pending_activities
                assert pending.attempt == 2
                assert pending.last_failure.application_failure_info.type == "provider.timeout"
                assert "ran past" in pending.last_failure.message
                # The second attempt times out on its own a second later; end the run in the
                # retry gap that follows so no third attempt starts.
                second_leader = attempts()[1][0]
                await wait_until(lambda: live_group_members(second_leader) == [], 10)
            finally:
                await handle.terminate("test done")
        for leader, child in attempts():
            assert live_group_members(leader) == []
            assert not alive(child)
    finally:  # whatever failed above, leave no `sleep 300` behind
        for leader, _child in attempts():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(leader, signal.SIGKILL)


async def test_cancelling_the_call_kills_the_agent_process_group(
    client: Client, settings: Settings, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    agent = script(tmp_path / "slow.sh", f'sleep 300 &\necho "$$ $!" >> {pids}\nsleep 300\n')
    settings = declare(settings, "slow", agent, timeout_s=600)
    queue = f"test-{uuid.uuid4()}"
    leader = child = 0
    try:
        async with call_worker(client, settings, queue):
            request = ModelRequest(model="slow:agent", prompt="hi")
            run_id = f"once-{uuid.uuid4()}"  # the activity writes only its workflow's run
            handle = await client.start_workflow(
                CallModelOnce,
                CallModelInput(run_id=run_id, phase="ask", index=0, request=request),
                id=run_id,
                task_queue=queue,
            )
            await wait_until(lambda: pids.exists() and pids.read_text().count(" ") == 1, 60)
            leader, child = (int(x) for x in pids.read_text().split())
            assert alive(child)
            await handle.cancel()
            # The cancellation reaches the activity on its next heartbeat; the group goes.
            await wait_until(lambda: not alive(child) and live_group_members(leader) == [], 60)
            with pytest.raises(WorkflowFailureError):
                await handle.result()
    finally:
        if leader:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(leader, signal.SIGKILL)


# -- replay ----------------------------------------------------------------------------


async def test_replay_answers_from_a_recorded_run(
    client: Client, settings: Settings, fake: FakeProvider
) -> None:
    settings = with_endpoint(settings, "local", Endpoint(kind="openai", base_url=fake.url))
    queue = f"test-{uuid.uuid4()}"
    recorded_id = f"rec-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        recorded = await ask(
            client,
            queue,
            AskInput(question="Explain retries", model="local:m", seed=3, run_id=recorded_id),
        )
        log = settings.runs_dir / recorded_id / "raw-events.jsonl"
        tokens = {recorded_id: read_token(settings.runs_dir, recorded_id) or ""}
        replayed = await ask(
            client,
            queue,
            AskInput(
                question="Explain retries",
                model=f"replay:{log}",
                seed=3,
                calls=CallOptions(read_tokens=tokens),
            ),
        )
    assert len(fake.seen) == 1  # the replay made no HTTP call
    assert replayed.response.text == recorded.response.text
    assert "[sim q=" in replayed.response.text
    assert replayed.response.usage == recorded.response.usage
    assert replayed.response.provider == "replay"
    assert recorded.response.provider == "local"


async def test_replay_without_the_call_key_is_malformed_output(
    client: Client, settings: Settings, tmp_path: Path
) -> None:
    body = {"model": "m", "choices": [{"message": {"content": "recorded"}}]}
    events = [
        # The Ask call (ask/0/0) was recorded only as a failure; another call succeeded.
        {"call_key": "ask/0/0", "provider_kind": "openai", "response": {"status": 503}},
        {
            "call_key": "ask/1/0",
            "provider_kind": "openai",
            "response": {"status": 200, "body": body},
        },
    ]
    recordings = tmp_path / "recordings"
    recordings.mkdir()
    log = recordings / "raw-events.jsonl"
    log.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    # A directory outside the run store is readable only once the worker declares it.
    settings = settings.model_copy(update={"replay_dirs": [recordings]})
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        error = await failure_of(client, queue, AskInput(question="q", model=f"replay:{log}"))
        gone = recordings / "gone" / "raw-events.jsonl"
        missing = await failure_of(client, queue, AskInput(question="q", model=f"replay:{gone}"))
    assert error.type == "provider.malformed_output"
    assert error.non_retryable
    assert "ask/0/0" in error.message
    assert missing.type == "provider.config"
    assert missing.non_retryable
    assert "cannot be read" in missing.message


async def test_replay_reads_only_the_run_store_or_a_declared_directory(
    client: Client, settings: Settings, worker_queue: str, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.jsonl"
    body = {"model": "m", "choices": [{"message": {"content": "from outside"}}]}
    event = {"call_key": "ask/0/0", "provider_kind": "openai", "response": {"status": 200}}
    outside.write_bytes(orjson.dumps(event | {"response": {"status": 200, "body": body}}))
    # A link inside the run store that leads out is judged by where it leads.
    link_dir = settings.runs_dir / "linked"
    link_dir.mkdir(parents=True)
    (link_dir / "raw-events.jsonl").symlink_to(outside)
    for source in ["/etc/passwd", str(outside), str(link_dir / "raw-events.jsonl")]:
        error = await failure_of(
            client, worker_queue, AskInput(question="q", model=f"replay:{source}")
        )
        assert error.type == "provider.config"
        assert "outside the run store" in error.message
        assert "replay_dirs" in error.message
        assert "root:" not in error.message
    # A recorded run in the store is named by its id.
    (settings.runs_dir / "rec1").mkdir()
    (settings.runs_dir / "rec1" / "raw-events.jsonl").write_bytes(outside.read_bytes())
    rec1 = CallOptions(read_tokens={"rec1": read_token(settings.runs_dir, "rec1") or ""})
    result = await ask(
        client, worker_queue, AskInput(question="q", model="replay:rec1", calls=rec1)
    )
    assert result.response.text == "from outside"


async def test_an_invalid_ask_run_id_fails_at_once_with_its_code(
    client: Client, settings: Settings, worker_queue: str, tmp_path: Path
) -> None:
    escape = f"../../escape-{uuid.uuid4().hex[:8]}"
    handle = await client.start_workflow(
        ASK,
        AskInput(question="hi", run_id=escape),
        id=escape,  # Temporal takes any workflow id; a run id must be a safe name
        task_queue=worker_queue,
        result_type=AskResult,
    )
    with pytest.raises(WorkflowFailureError) as info:  # at once: nothing was scheduled
        await asyncio.wait_for(handle.result(), 60)
    error = info.value.cause
    assert isinstance(error, ApplicationError)
    assert error.type == "run.id_invalid"
    assert error.non_retryable
    assert escape in error.message
    history = await handle.fetch_history()
    assert not any(e.HasField("activity_task_scheduled_event_attributes") for e in history.events)
    assert not (settings.runs_dir.parent.parent / escape.removeprefix("../../")).exists()


async def test_a_symlinked_run_dir_is_refused_for_writes(
    client: Client, settings: Settings, worker_queue: str, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    settings.runs_dir.mkdir(parents=True, exist_ok=True)
    (settings.runs_dir / "planted").symlink_to(elsewhere)
    error = await failure_of(client, worker_queue, AskInput(question="hi", run_id="planted"))
    assert error.type == "run.dir_invalid"
    assert "symlink" in error.message
    assert list(elsewhere.iterdir()) == []


async def test_a_tournament_into_a_symlinked_run_dir_fails_with_a_code(
    client: Client, settings: Settings, worker_queue: str, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    settings.runs_dir.mkdir(parents=True, exist_ok=True)
    run_id = f"planted-{uuid.uuid4().hex[:6]}"
    (settings.runs_dir / run_id).symlink_to(elsewhere)
    handle = await client.start_workflow(
        TOURNAMENT,
        TournamentInput(task="x", run_id=run_id),
        id=run_id,
        task_queue=worker_queue,
        result_type=TournamentResult,
    )
    with pytest.raises(WorkflowFailureError) as info:
        await asyncio.wait_for(handle.result(), 60)
    error = info.value.cause
    while not isinstance(error, ApplicationError) and error is not None:
        error = error.__cause__
    assert isinstance(error, ApplicationError)
    assert error.type == "run.dir_invalid"
    assert list(elsewhere.iterdir()) == []


def test_ponder_report_refuses_a_path_as_run_id(tmp_path: Path) -> None:
    # Refused on the argument alone: in this process, not a ponder process (most of a second).
    done = ponder_here("report", "../../etc", env=cli_env(tmp_path / "home"))
    assert done.code == 2, done.err
    assert "run.id_invalid" in done.err
    assert "ValueError" not in done.err


async def test_a_command_that_prints_a_configured_key_has_it_redacted(
    client: Client, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-agent-" + "Xy7" * 10
    monkeypatch.setenv("OTHER_PROVIDER_KEY", secret)
    settings = with_endpoint(
        settings,
        "other",
        Endpoint(kind="openai", base_url="http://127.0.0.1:9/v1", api_key_env="OTHER_PROVIDER_KEY"),
    )
    # The agent is given the key (listed in its env) and prints it on both streams.
    echo = script(tmp_path / "echo.sh", 'echo "my key is $OTHER_PROVIDER_KEY"\n')
    leaky = script(tmp_path / "leaky.sh", 'echo "my key is $OTHER_PROVIDER_KEY" >&2\nexit 3\n')
    settings = declare(settings, "echo", echo, env=["OTHER_PROVIDER_KEY"])
    settings = declare(settings, "leaky", leaky, env=["OTHER_PROVIDER_KEY"])
    queue = f"test-{uuid.uuid4()}"
    run_id = f"cmd-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        result = await ask(client, queue, AskInput(question="x", model="echo:m", run_id=run_id))
        error = await failure_of(client, queue, AskInput(question="x", model="leaky:m"))
        history = await client.get_workflow_handle(run_id).fetch_history()
    assert result.response.text == "my key is [redacted]\n"
    answer = settings.runs_dir / run_id / "artifacts" / "answer.txt"
    assert answer.read_text() == "my key is [redacted]\n"
    # Payload data is raw JSON bytes inside the serialized events, so a leaked key would show.
    assert b"my key is [redacted]" in b"".join(e.SerializeToString() for e in history.events)
    assert all(secret.encode() not in e.SerializeToString() for e in history.events)
    assert error.type == "provider.dispatch"
    assert "my key is [redacted]" in error.message
    assert secret not in error.message
