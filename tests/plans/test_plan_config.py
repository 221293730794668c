"""``[executors]`` and ``[plans] default_family`` in ponder.toml, with the flags over them.

The client resolves both into the workflow's input; the worker's own configuration never routes
a step (its ponder.toml here names a default family the client's does not, and it is not used).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from client.session import wait_for_worker
from tests.cli import cli_env, ponder, start_ponder

PLAN = {
    "schema": "ponder-plan/1",
    "name": "routed",
    "steps": [{"id": "hello", "kind": "agent", "prompt": "Say hello."}],  # no model
}
CLIENT_TOML = '[executors]\nwriter = "sim:default"\n\n[plans]\ndefault_family = "writer"\n'
WORKER_TOML = '[executors]\nother = "sim:default"\n\n[plans]\ndefault_family = "other"\n'


@pytest.fixture
async def envs(
    client: Client, tmp_path: Path, server_address: str
) -> AsyncIterator[tuple[dict[str, str], dict[str, str]]]:
    """(the CLI's environment with CLIENT_TOML, one with no config); a ``ponder worker`` with
    WORKER_TOML serves the queue."""
    queue = f"cfg-{uuid.uuid4().hex[:8]}"
    (tmp_path / "client.toml").write_text(CLIENT_TOML)
    (tmp_path / "worker.toml").write_text(WORKER_TOML)
    base = cli_env(tmp_path, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE=queue)
    worker = await start_ponder(
        "worker", env=base | {"PONDER_CONFIG": str(tmp_path / "worker.toml")}
    )
    try:
        await wait_for_worker(client, queue, 60)
        yield base | {"PONDER_CONFIG": str(tmp_path / "client.toml")}, base
    finally:
        worker.terminate()
        await worker.wait()


async def _input(client: Client, run_id: str) -> dict[str, Any]:
    history = await client.get_workflow_handle(run_id).fetch_history()
    started = history.events[0].workflow_execution_started_event_attributes
    decoded: dict[str, Any] = json.loads(started.input.payloads[0].data)
    return decoded


async def test_routing_comes_from_the_client_config_and_flags(
    client: Client, envs: tuple[dict[str, str], dict[str, str]], tmp_path: Path
) -> None:
    configured, bare = envs
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(PLAN))

    run_id = f"cfg-{uuid.uuid4().hex[:6]}"
    done = await ponder("plan", "run", str(plan), "--run-id", run_id, env=configured)
    assert done.code == 0, done.err
    assert done.out.startswith("Simulated answer to: Say hello.")
    assert f"report: {tmp_path}/runs/{run_id}/report.html" in done.err  # where to look
    sent = await _input(client, run_id)
    assert sent["default_family"] == "writer" and sent["executors"] == {"writer": "sim:default"}

    run_id = f"cfg-{uuid.uuid4().hex[:6]}"
    flags = ["--default-family", "fam", "--executor", "fam=sim:default"]
    done = await ponder("plan", "run", str(plan), "--run-id", run_id, *flags, env=configured)
    assert done.code == 0, done.err
    sent = await _input(client, run_id)
    assert sent["default_family"] == "fam"  # the flag over [plans] default_family
    assert sent["executors"] == {"writer": "sim:default", "fam": "sim:default"}

    unset = await ponder("plan", "run", str(plan), "--executor", "writer=", env=configured)
    assert unset.code == 1 and "plan-model-unroutable" in unset.err, unset.err

    # The worker's ponder.toml names a default family and its executor: it does not route.
    worker_side = await ponder("plan", "run", str(plan), env=bare)
    assert worker_side.code == 1 and "plan-model-unroutable" in worker_side.err, worker_side.err
    assert "/report.html" in worker_side.err  # a failed run's report too

    bad = await ponder("plan", "run", str(plan), "--executor", "writer=gpt", env=configured)
    assert bad.code == 2, bad.err
    assert "--executor writer=gpt: 'gpt' is not PROVIDER:MODEL" in bad.err
