"""Worker Deployment Versioning, end to end: real ``python -m worker --deployment`` processes of
two builds (``--build-id``) on the suite's dev server, each test on a deployment and task
queue of its own.

A plan waiting at a gate outlives its build: build A stops, build B starts and is promoted, the
gate is approved and the run finishes on B, its history replaying under the current code. A
tournament started on A stays pinned to A while B is current, and finishes there; an Ask
started after the promotion runs on B.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.api.enums.v1 import VersioningBehavior as Behavior
from temporalio.api.workflowservice.v1 import (
    SetWorkerDeploymentCurrentVersionRequest,
    SetWorkerDeploymentRampingVersionRequest,
)
from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Replayer

from activities.config import Settings
from activities.errors import ConfigError
from client.connect import data_converter
from client.deploy_cli import print_state
from client.runs import start_run
from client.session import Session
from tests.cli import cli_env, ponder, ponder_here
from tests.fakes import FakeProvider
from tests.plans.run_helpers import agent, plan_doc, start, status, wait_state
from tests.worker_process import declare_fake, start_worker
from worker.cli import worker_settings
from worker.deployment import (
    DEPLOYMENT_EMBEDDED,
    DEPLOYMENT_NOT_FOUND,
    PROMOTE_REFUSED,
    VERSION_UNKNOWN,
    DeployError,
    promote,
    take_first_version,
)
from worker.deployment_status import DeploymentState, deployment_state
from worker.worker import WORKFLOWS, WorkerOptions, running_worker
from workflows.ask_types import AskInput, AskResult
from workflows.names import ASK, CAMPAIGN, PLAN_RUN, TOURNAMENT, UPDATE_RESOLVE_GATE
from workflows.plan.run_types import ResolveGateInput
from workflows.tournament.types import TournamentInput, TournamentResult

pytestmark = pytest.mark.slow  # real worker processes: started first (tests/conftest.py)

GATED = plan_doc(
    agent("draft", "Draft.", "draft"),
    {"id": "ok", "kind": "gate", "deps": ["draft"], "gate": {}},
    agent("sign", "Sign.", "signed", deps=["ok"]),
)


FLAGS: dict[str, Any] = {
    "task_queue": None,
    "max_concurrent_activities": 1,
    "rate_limits": (),
    "heartbeat_timeout": None,
    "sticky_timeout": 1.0,
    "namespace": None,
    "tls": None,
    "api_key_env": None,
    "workspace_roots": (),
    "config": None,
}
"""``ponder worker``'s other flags, at their defaults."""


class Versions:
    """Worker processes of one deployment, by build id; leaving the block stops those left."""

    def __init__(self, settings: Settings, address: str, tmp_path: Path) -> None:
        self.settings, self.address, self.log = settings, address, tmp_path / "workers.log"
        self.name = f"d{uuid.uuid4().hex[:10]}"
        self.queue = f"test-{uuid.uuid4()}"
        self.processes: dict[str, asyncio.subprocess.Process] = {}

    async def start(self, build: str) -> None:
        args = ["--deployment", self.name, "--build-id", build]
        self.processes[build] = await start_worker(
            self.settings, self.address, self.queue, output=self.log, args=args
        )

    async def stop(self, build: str) -> None:
        process = self.processes.pop(build)
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        await process.wait()

    async def __aenter__(self) -> Versions:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        for build in list(self.processes):
            await self.stop(build)


async def state_when(
    client: Client, name: str, ready: Callable[[DeploymentState], bool], timeout: float = 60
) -> DeploymentState:
    """The deployment's state once ``ready(state)`` holds (a worker's start-up on a loaded
    machine takes seconds; nothing else bounds it)."""
    deadline = time.monotonic() + timeout
    state: DeploymentState | None = None
    while True:
        try:
            state = await deployment_state(client, name)
            if ready(state):
                return state
        except DeployError as exc:  # before the first worker's first poll
            assert exc.code == DEPLOYMENT_NOT_FOUND
        assert time.monotonic() < deadline, f"deployment {name}: {state}"
        await asyncio.sleep(0.3)


def listed(build: str) -> Callable[[DeploymentState], bool]:
    """The version polls, and the server lists both its queues (workflow and activity): until
    then a promotion is refused for the queue it lacks."""
    return lambda state: any(
        v.build_id == build and v.pollers and v.task_queues and v.activity_queues
        for v in state.versions
    )


async def task_marks(client: Client, run_id: str) -> list[tuple[str, int]]:
    """Each completed workflow task's build id and versioning behaviour, in history order."""
    history = await client.get_workflow_handle(run_id).fetch_history()
    return [
        (attrs.deployment_version.build_id, attrs.versioning_behavior)
        for attrs in (
            event.workflow_task_completed_event_attributes
            for event in history.events
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
        )
    ]


async def test_a_plan_at_a_gate_finishes_on_the_build_promoted_while_it_waited(
    client: Client, settings: Settings, server_address: str, tmp_path: Path
) -> None:
    settings.home.mkdir(parents=True, exist_ok=True)
    (settings.home / "ponder.toml").write_text("")  # the worker processes' configuration
    async with Versions(settings, server_address, tmp_path) as versions:
        await versions.start("build-a")
        # The deployment's first version makes itself current: no promotion, no stuck run.
        await state_when(client, versions.name, lambda s: s.current == "build-a")
        handle = await start(client, versions.queue, GATED)
        gate = (await wait_state(handle, "awaiting_gate")).pending_gates[0]

        await versions.stop("build-a")
        await versions.start("build-b")
        waiting = await state_when(client, versions.name, listed("build-b"))
        assert waiting.current == "build-a"  # a later build waits for its promotion
        env = cli_env(tmp_path / "home", TEMPORAL_ADDRESS=server_address)
        done = await ponder("deploy", "promote", "--deployment", versions.name, env=env)
        assert done.code == 0, done.err
        assert "build-b is current (was build-a)" in done.out
        assert "runs pinned to build-a finish there" in done.out

        await handle.execute_update(
            UPDATE_RESOLVE_GATE, ResolveGateInput(step="ok", decision="approve", token=gate.token)
        )
        await asyncio.wait_for(handle.result(), 60)
        assert (await status(handle)).state == "completed"

    marks = await task_marks(client, handle.id)
    assert {behaviour for _, behaviour in marks} == {Behavior.VERSIONING_BEHAVIOR_AUTO_UPGRADE}
    builds = [build for build, _ in marks]
    switch = builds.index("build-b")  # what A did before the gate, B after it
    assert switch > 0 and set(builds[:switch]) == {"build-a"}
    assert set(builds[switch:]) == {"build-b"}
    history = await client.get_workflow_handle(handle.id).fetch_history()
    replayer = Replayer(workflows=WORKFLOWS, data_converter=data_converter(settings))
    replayed = await replayer.replay_workflow(WorkflowHistory(handle.id, history.events))
    assert replayed.replay_failure is None


async def test_a_pinned_tournament_finishes_on_its_build_while_that_build_drains(
    client: Client, settings: Settings, server_address: str, tmp_path: Path, fake: FakeProvider
) -> None:
    declare_fake(settings, fake.url)
    fake.hold()  # the tournament's first calls wait until B is current
    async with Versions(settings, server_address, tmp_path) as versions:
        await versions.start("build-a")
        await state_when(client, versions.name, lambda s: s.current == "build-a")
        handle = await client.start_workflow(
            TOURNAMENT,
            TournamentInput(task="Sort a list.", profile="quick", seed=3, model="local:default"),
            id=f"pinned-{uuid.uuid4().hex[:8]}",
            task_queue=versions.queue,
            result_type=TournamentResult,
        )
        try:
            assert await asyncio.to_thread(fake.arrived.wait, 60)
            await versions.start("build-b")
            await state_when(client, versions.name, listed("build-b"))
            with pytest.raises(DeployError) as unknown:
                await promote(client, versions.name, "build-z")
            assert unknown.value.code == VERSION_UNKNOWN
            assert "its versions are build-a, build-b" in unknown.value.message
            assert await promote(client, versions.name, "build-b") == ("build-b", "build-a")
            assert await promote(client, versions.name, "build-b") == ("build-b", "build-b")
            # The tournament is still held on A: A drains, B takes new runs.
            draining = await deployment_state(client, versions.name)
            assert draining.current == "build-b"
            assert {v.build_id: v.status for v in draining.versions} == {
                "build-a": "draining",
                "build-b": "current",
            }
        finally:
            fake.resume()
        result = await asyncio.wait_for(handle.result(), 90)
        assert result.winner_id

        env = cli_env(tmp_path / "home", TEMPORAL_ADDRESS=server_address)
        shown = await ponder("deploy", "status", "--deployment", versions.name, "--json", env=env)
        assert shown.code == 0, shown.err
        state = json.loads(shown.out)
        by_build = {v["build_id"]: v for v in state["versions"]}
        assert state["current"] == "build-b"
        assert by_build["build-a"]["status"] in ("draining", "drained")
        assert by_build["build-b"]["pollers"] == 1 and by_build["build-b"]["task_queues"] == [
            versions.queue
        ]

        # A run started now starts on the current build.
        ask_id = f"ask-{uuid.uuid4().hex[:8]}"
        await client.execute_workflow(
            ASK,
            AskInput(question="q", run_id=ask_id),
            id=ask_id,
            task_queue=versions.queue,
            result_type=AskResult,
        )

    pinned = Behavior.VERSIONING_BEHAVIOR_PINNED
    assert set(await task_marks(client, handle.id)) == {("build-a", pinned)}
    assert set(await task_marks(client, ask_id)) == {("build-b", pinned)}


async def test_an_unknown_deployment_is_refused_with_its_code(client: Client) -> None:
    with pytest.raises(DeployError) as info:
        await deployment_state(client, f"d{uuid.uuid4().hex[:10]}")
    assert info.value.code == DEPLOYMENT_NOT_FOUND
    assert "ponder worker --deployment" in info.value.message


def test_versioning_is_refused_on_the_embedded_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PONDER_HOME", str(tmp_path / "home"))
    with pytest.raises(DeployError) as info:
        worker_settings(embedded=True, deployment="ponder", **FLAGS)
    assert info.value.code == DEPLOYMENT_EMBEDDED
    _, options = worker_settings(embedded=False, deployment=None, build_id="v2.1", **FLAGS)
    assert options.deployment is None and options.version == "v2.1"
    done = ponder_here("deploy", "status", env=cli_env(tmp_path / "home"))
    assert done.code == 2 and f"ponder: {DEPLOYMENT_EMBEDDED}: " in done.err


@pytest.mark.parametrize(
    ("flag", "value"),
    [("deployment", "a.b"), ("deployment", ""), ("build_id", "-x"), ("build_id", "a b")],
)
def test_a_bad_deployment_name_or_build_id_is_refused(
    flag: str, value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PONDER_HOME", str(tmp_path / "home"))

    with pytest.raises(ConfigError) as info:
        chosen: dict[str, Any] = {flag: value}
        worker_settings(embedded=False, **FLAGS, **chosen)
    assert info.value.code == "option.invalid"
    assert f"--{flag.replace('_', '-')} {value!r}" in info.value.message


def test_a_versioned_worker_registers_each_workflow_with_its_behaviour() -> None:
    """The classes every worker registers declare no behaviour (Temporal refuses one from an
    unversioned worker); a versioned worker's stand-ins declare it, under the same names."""
    from temporalio.common import VersioningBehavior
    from temporalio.workflow import _Definition

    from workflows.versioned import VERSIONED

    wanted = {
        ASK: VersioningBehavior.PINNED,
        TOURNAMENT: VersioningBehavior.PINNED,
        PLAN_RUN: VersioningBehavior.AUTO_UPGRADE,
        CAMPAIGN: VersioningBehavior.AUTO_UPGRADE,
    }
    declared = {}
    for plain, versioned in VERSIONED.items():
        base, stand_in = _Definition.must_from_class(plain), _Definition.must_from_class(versioned)
        assert base.versioning_behavior == VersioningBehavior.UNSPECIFIED
        assert stand_in.name == base.name and issubclass(versioned, plain)
        assert set(stand_in.signals) == set(base.signals)
        assert set(stand_in.queries) == set(base.queries)
        assert set(stand_in.updates) == set(base.updates)
        declared[base.name] = stand_in.versioning_behavior
    assert declared == wanted
    assert all(_Definition.must_from_class(c).versioning_behavior == 0 for c in WORKFLOWS)


async def test_ponder_worker_refuses_versioning_on_the_embedded_server(tmp_path: Path) -> None:
    done = await ponder("worker", "--deployment", env=cli_env(tmp_path / "home"))
    assert done.code == 2
    assert f"ponder: {DEPLOYMENT_EMBEDDED}: --deployment versions a cluster's workers" in done.err
    assert not (tmp_path / "home" / "server.json").exists()  # refused before any server


async def test_only_a_deployments_first_version_makes_itself_current(
    client: Client, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    """In-process versioned workers (in the sandbox, as the suite runs them): the first version
    takes the deployment, a later one waits, and so does one after the deployment was sent back
    to unversioned workers on purpose. Status shows a ramp."""
    name, queue = f"d{uuid.uuid4().hex[:10]}", f"test-{uuid.uuid4()}"

    def version(build: str) -> WorkerOptions:
        return WorkerOptions(task_queue=queue, deployment=name, build_id=build)

    async with running_worker(client, settings, version("one")):
        said = await take_first_version(client, name, "one")
        assert said == (
            f"deployment {name!r}: version 'one' is current (the deployment's first): new runs "
            "start here"
        )
        assert await take_first_version(client, name, "one") == (
            f"deployment {name!r}: version 'one' is current: new runs start here"
        )
        ask_id = f"ask-{uuid.uuid4().hex[:8]}"
        await client.execute_workflow(
            ASK, AskInput(question="q", run_id=ask_id), id=ask_id, task_queue=queue
        )
        assert set(await task_marks(client, ask_id)) == {
            ("one", Behavior.VERSIONING_BEHAVIOR_PINNED)
        }
        async with running_worker(client, settings, version("two")):
            said = await take_first_version(client, name, "two")
            await state_when(client, name, listed("two"))
            assert said == (
                f"deployment {name!r}: version 'two' waits (current is 'one'); `ponder deploy "
                "promote two` sends new runs and upgrading plans and campaigns here"
            )
            await client.workflow_service.set_worker_deployment_ramping_version(
                SetWorkerDeploymentRampingVersionRequest(
                    namespace=client.namespace, deployment_name=name, build_id="two", percentage=25
                )
            )
            ramped = await deployment_state(client, name)
            assert (ramped.current, ramped.ramping, ramped.ramping_percent) == ("one", "two", 25)
            assert [(v.build_id, v.status, v.pollers) for v in ramped.versions] == [
                ("two", "ramping", 1),
                ("one", "current", 1),
            ]
            now = max(v.last_poll for v in ramped.versions if v.last_poll is not None)
            print_state(ramped, now)
            shown = capsys.readouterr().out.splitlines()
            assert shown[:3] == [
                f"deployment {name}",
                "current   one",
                "ramping   two (25% of new runs)",
            ]
            assert shown[3].split() == [
                "BUILD",
                "ID",
                "STATUS",
                "DRAINAGE",
                "POLLERS",
                "LAST",
                "POLL",
                "TASK",
                "QUEUES",
            ]
            assert shown[4].split()[:4] == ["two", "ramping", "-", "1"]
            assert shown[4].endswith(queue) and shown[5].startswith("one ")

            # A version that lacks a queue the current one serves is not promoted.
            elsewhere = WorkerOptions(
                task_queue=f"test-{uuid.uuid4()}", deployment=name, build_id="four"
            )
            async with running_worker(client, settings, elsewhere):
                await state_when(client, name, listed("four"))
                with pytest.raises(DeployError) as refused:
                    await promote(client, name, "four")
                assert refused.value.code == PROMOTE_REFUSED
                assert "the server refused to make 'four' current: " in refused.value.message

            await client.workflow_service.set_worker_deployment_current_version(
                SetWorkerDeploymentCurrentVersionRequest(
                    namespace=client.namespace, deployment_name=name, build_id=""
                )
            )
            async with running_worker(client, settings, version("three")):
                said = await take_first_version(client, name, "three")
                assert "version 'three' waits (current is unversioned workers)" in said
                assert (await deployment_state(client, name)).current is None


async def test_a_cluster_command_starts_no_run_eagerly(client: Client, settings: Settings) -> None:
    """A command on a cluster with a worker of its own (``--local-worker``, unversioned) does not
    ask for eager start: it would hand the run's first task to that worker past the current
    version, whose code may differ."""
    name, queue = f"d{uuid.uuid4().hex[:10]}", f"test-{uuid.uuid4()}"
    command = Session(client, settings.model_copy(update={"task_queue": queue}), embedded=False)
    versioned = WorkerOptions(task_queue=queue, deployment=name, build_id="one")
    async with running_worker(client, settings, versioned):
        assert "'one' is current" in await take_first_version(client, name, "one")
        async with running_worker(client, command.settings, WorkerOptions(task_queue=queue)):
            run_id = f"ask-{uuid.uuid4().hex[:12]}"
            payload = AskInput(question="q", run_id=run_id)
            handle = await start_run(command, ASK, payload, run_id, AskResult)
            await handle.result()
    started = (await handle.fetch_history()).events[0]
    assert not started.workflow_execution_started_event_attributes.eager_execution_accepted
    assert set(await task_marks(client, run_id)) == {("one", Behavior.VERSIONING_BEHAVIOR_PINNED)}
