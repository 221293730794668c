"""A plan run's workspace is confined to the roots its worker declares (the trust boundary).

Whoever starts a workflow names the workspace; the worker decides where one may be. Checked on
the worker (the preflight probe activity), so the real CLI and raw ``temporal workflow start``
input are refused alike: FAILED at once with ``artifact-path-escapes-root``, before any step.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ApplicationError

from activities.config import Settings, load_settings
from activities.errors import ConfigError
from activities.plan.roots import default_roots, worker_roots
from activities.plan.workspace import WorkspaceActivities
from client.session import wait_for_worker
from tests.cli import cli_env, ponder, start_ponder
from tests.plans.run_helpers import agent, plan_doc, run, start, trace, wait_state
from tests.test_inputs import temporal_start
from workflows.names import PLAN_RUN, UPDATE_RESUME
from workflows.plan.run_types import PathsInput, ResumeInput

PLAN = plan_doc(agent("hello", "Say hello."), name="roots")
ESCAPES = "artifact-path-escapes-root"


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    (allowed / "ws").mkdir(parents=True)
    outside.mkdir()
    (allowed / "escape").symlink_to(outside)  # inside the root by name, outside really
    return {"allowed": allowed, "outside": outside}


# -- through the real CLI and a real ``ponder worker`` ------------------------------------


@pytest.fixture
async def env(
    client: Client, tmp_path: Path, server_address: str, dirs: dict[str, Path]
) -> AsyncIterator[dict[str, str]]:
    queue = f"roots-{uuid.uuid4().hex[:8]}"
    # The home apart from the workspaces: ponder's own stores are never part of one.
    home = tmp_path / "home"
    environment = cli_env(home, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE=queue)
    worker = await start_ponder("worker", "--workspace-root", str(dirs["allowed"]), env=environment)
    try:
        await wait_for_worker(client, queue, 60)
        yield environment
    finally:
        worker.terminate()
        _, err = await worker.communicate()
        # The worker says where plan workspaces may be, and it is only the declared root.
        assert f"plan workspaces allowed under: {dirs['allowed']}\n" in err.decode()


async def test_the_cli_workspace_is_held_to_the_worker_roots(
    env: dict[str, str], tmp_path: Path, dirs: dict[str, Path]
) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(PLAN))

    reads_plan = tmp_path / "reads.json"
    reads = {**PLAN, "steps": [{**PLAN["steps"][0], "artifacts": {"reads": ["README.md"]}}]}
    reads_plan.write_text(json.dumps(reads))
    run = ("plan", "run", str(plan))
    # Independent runs, started together to keep the test short.
    outside, linked, inside, bare, cwd = await asyncio.gather(
        ponder(*run, "--workspace", str(dirs["outside"]), env=env),
        ponder(*run, "--workspace", str(dirs["allowed"] / "escape"), env=env),
        ponder(*run, "--workspace", str(dirs["allowed"] / "ws"), env=env),
        # No --workspace: a plan that declares no files sends none (nothing to confine) ...
        ponder(*run, env=env),
        # ... one that does sends the cwd, held to the roots like any other.
        ponder("plan", "run", str(reads_plan), env=env),
    )
    assert outside.code == 1, outside.err
    assert ESCAPES in outside.err
    assert f"workspace '{dirs['outside']}' is outside every workspace root" in outside.err
    assert "ponder worker --workspace-root DIR" in outside.err  # the fix
    assert "[plans] workspace_roots" in outside.err

    assert linked.code == 1, linked.err
    assert ESCAPES in linked.err and f"(really '{dirs['outside']}')" in linked.err

    assert inside.code == 0, inside.err
    assert "Simulated answer to: Say hello." in inside.out
    assert bare.code == 0, bare.err
    assert cwd.code == 1 and ESCAPES in cwd.err, cwd.err
    assert f"workspace '{os.getcwd()}' is outside every workspace root" in cwd.err


# -- raw ``temporal workflow start`` input --------------------------------------------------


async def _refused(client: Client, run_id: str) -> ApplicationError:
    handle = client.get_workflow_handle(run_id)
    with pytest.raises(WorkflowFailureError) as info:
        await asyncio.wait_for(handle.result(), 60)
    cause = info.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == ESCAPES, cause
    assert cause.non_retryable
    history = await handle.fetch_history()
    scheduled = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    assert "call_model" not in scheduled  # no step ran
    assert history.events[-1].event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED
    return cause


async def test_raw_temporal_input_cannot_point_the_worker_elsewhere(
    client: Client, server_address: str, worker_queue: str, tmp_path: Path, dirs: dict[str, Path]
) -> None:
    # The test worker declares tmp_path as its one root (tests/conftest.py).
    cases = {
        "input": ({"plan": PLAN, "workspace": "/etc"}, "workspace '/etc' is outside every"),
        "plan": ({"plan": {**PLAN, "workspace": "/usr"}}, "plan.workspace '/usr' is outside"),
        "relative": ({"plan": PLAN, "workspace": "ws"}, "workspace 'ws' is not an absolute path"),
        "link": ({"plan": PLAN, "workspace": str(tmp_path / "root")}, "(really '/')"),
    }
    (tmp_path / "root").symlink_to("/")  # inside the root by name
    for name, (raw, needle) in cases.items():
        run_id = f"roots-{name}-{uuid.uuid4().hex[:6]}"
        await temporal_start(server_address, worker_queue, PLAN_RUN, run_id, json.dumps(raw))
        cause = await _refused(client, run_id)
        assert needle in cause.message, (name, cause.message)
        assert "; fix: give a" in cause.message

    done = await run(client, worker_queue, PLAN, workspace=str(dirs["allowed"] / "ws"))
    assert str(done.outputs["hello"]).startswith("Simulated answer to: Say hello.")


# -- the declared roots ----------------------------------------------------------------------


def test_ponder_toml_declares_roots_and_refuses_relative_ones(tmp_path: Path) -> None:
    config = tmp_path / "ponder.toml"
    config.write_text('[plans]\nworkspace_roots = ["/srv/work", "~/projects"]\n')
    settings = load_settings(config, home=str(tmp_path / "home"))
    assert settings.workspace_roots == [Path("/srv/work"), Path("~/projects").expanduser()]
    flagged = load_settings(config, home=str(tmp_path / "home"), workspace_roots=[Path("/x")])
    assert flagged.workspace_roots == [Path("/x")]  # ponder worker --workspace-root replaces it

    config.write_text('[plans]\nworkspace_roots = ["projects"]\n')
    with pytest.raises(ConfigError, match=r"plans\.workspace_roots.*'projects' is not an absolute"):
        load_settings(config, home=str(tmp_path / "home"))
    config.write_text('[plans]\nworkspace_root = ["/srv"]\n')
    with pytest.raises(ConfigError, match=r"plans\.workspace_root: Extra inputs"):
        load_settings(config, home=str(tmp_path / "home"))


def test_the_default_root_is_the_start_directory_never_the_home(tmp_path: Path) -> None:
    here = str(tmp_path)
    assert default_roots(cwd=here) == [here]
    assert worker_roots([], cwd=here) == [here]
    assert os.path.realpath(Path.home()) not in worker_roots([], cwd=here)
    assert default_roots(cwd="/") == []  # never declares everything
    assert default_roots(cwd=str(Path.home())) == []  # nor the home, with its keys and secrets
    assert worker_roots([tmp_path / "a"], cwd=here) == [str(tmp_path / "a")]


def test_snapshots_outside_the_roots_are_refused_not_read(dirs: dict[str, Path]) -> None:
    activities = WorkspaceActivities([str(dirs["allowed"])])
    (dirs["outside"] / "secret.txt").write_text("x")
    with pytest.raises(ApplicationError) as info:
        activities._snapshot_writes(
            PathsInput(workspace=str(dirs["outside"]), paths=["secret.txt"])
        )
    assert info.value.type == ESCAPES and info.value.non_retryable
    inside = activities._snapshot_writes(PathsInput(workspace=str(dirs["allowed"]), paths=["x"]))
    assert inside.hashes == {"x": None}


def test_the_readme_configuration_loads(tmp_path: Path) -> None:
    from tests.test_readme import fenced, section

    (block,) = fenced(section("# Configuration", page="docs/configuration.md"), "toml")
    config = tmp_path / "ponder.toml"
    config.write_text(block)
    settings = load_settings(config, home=str(tmp_path / "home"))
    assert settings.default_family == "claude"
    assert settings.executors["openai"] == "openai:gpt-4.1"
    assert Path("~/src").expanduser() in settings.workspace_roots


async def test_a_workspace_swapped_after_preflight_is_refused_at_the_call(
    client: Client, worker_queue: str, tmp_path: Path, settings: Settings
) -> None:
    """Preflight passed; while the run waits, the workspace becomes a link out of the roots.
    The model call (a command agent's cwd) checks again, on whichever worker runs it."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    plan = plan_doc(
        {"id": "wait", "kind": "pause", "pause": {"state": "WAIT", "resume_arg": "go"}},
        agent("hello", "Say hello.", deps=["wait"]),
    )
    handle = await start(client, worker_queue, plan, workspace=str(workspace))
    await wait_state(handle, "awaiting_input")
    workspace.rmdir()
    workspace.symlink_to("/etc")
    await handle.execute_update(UPDATE_RESUME, ResumeInput(args={"go": "yes"}))
    with pytest.raises(WorkflowFailureError) as info:
        await asyncio.wait_for(handle.result(), 60)
    cause = info.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == ESCAPES, cause
    assert f"workspace '{workspace}' (really '/etc') is outside every" in cause.message
    settled = [
        e["data"]
        for e in trace(settings.runs_dir, handle.id)
        if e["type"] == "settled" and e["data"]["step"] == "hello"
    ]
    assert [d.get("failure") for d in settled] == ["escapes-root"]  # refused once, not retried


def test_plan_run_help_states_the_workspace_rule() -> None:
    from click.testing import CliRunner

    from client.plan_run_cli import run as plan_run

    shown = CliRunner().invoke(plan_run, ["--help"], terminal_width=200)
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.output.split())
    assert "It must lie inside a root the worker declares" in text
    assert "[plans] workspace_roots in ponder.toml or ponder worker --workspace-root DIR" in text
    assert "artifact-path-escapes-root" in text
