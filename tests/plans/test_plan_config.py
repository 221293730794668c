"""``[executors]`` and ``[plans] default_family`` in ponder.toml, with the flags over them.

The client resolves both into the workflow's input; the worker's own configuration never routes
a step (its ponder.toml here names a default family the client's does not, and it is not used).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from activities.config import load_settings
from activities.errors import ConfigError
from client.plan_input import routing
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

    first, second = f"cfg-{uuid.uuid4().hex[:6]}", f"cfg-{uuid.uuid4().hex[:6]}"
    flags = ["--default-family", "fam", "--executor", "fam=sim:default"]
    run = ("plan", "run", str(plan))
    # Independent runs, started together to keep the test short.
    done, flagged, unset, worker_side, bad = await asyncio.gather(
        ponder(*run, "--run-id", first, env=configured),
        ponder(*run, "--run-id", second, *flags, env=configured),
        ponder(*run, "--executor", "writer=", env=configured),
        # The worker's ponder.toml names a default family and its executor: it does not route.
        ponder(*run, env=bare),
        ponder(*run, "--executor", "writer=gpt", env=configured),
    )
    assert done.code == 0, done.err
    assert done.out.startswith("Simulated answer to: Say hello.")
    assert f"report: {tmp_path}/runs/{first}/report.html" in done.err  # where to look
    sent = await _input(client, first)
    assert sent["default_family"] == "writer" and sent["executors"] == {"writer": "sim:default"}

    assert flagged.code == 0, flagged.err
    sent = await _input(client, second)
    assert sent["default_family"] == "fam"  # the flag over [plans] default_family
    assert sent["executors"] == {"writer": "sim:default", "fam": "sim:default"}

    assert unset.code == 1 and "plan-model-unroutable" in unset.err, unset.err
    assert worker_side.code == 1 and "plan-model-unroutable" in worker_side.err, worker_side.err
    assert "/report.html" in worker_side.err  # a failed run's report too
    assert bad.code == 2, bad.err
    assert "--executor writer=gpt: 'gpt' is not PROVIDER:MODEL" in bad.err


def test_routing_merges_the_config_under_the_given_values(tmp_path: Path) -> None:
    config = tmp_path / "ponder.toml"
    config.write_text(CLIENT_TOML)
    settings = load_settings(config, home=str(tmp_path / "home"))
    assert routing(settings, {}, None) == ({"writer": "sim:default"}, "writer")
    merged = routing(settings, {"writer": "", "x": "openai:gpt-4.1"}, "x")
    assert merged == ({"writer": "", "x": "openai:gpt-4.1"}, "x")
    with pytest.raises(ConfigError, match=r"'gpt-4\.1' is not PROVIDER:MODEL"):
        routing(settings, {"x": "gpt-4.1"}, None)
    with pytest.raises(ConfigError, match="--default-family is empty"):
        routing(settings, {}, " ")
    config.write_text('[executors]\nwriter = "sim"\n')
    with pytest.raises(ConfigError, match=r"\[executors\] writer=sim: 'sim' is not PROVIDER:MODEL"):
        routing(load_settings(config, home=str(tmp_path / "home")), {}, None)
    config.write_text('[plans]\ndefault_family = ""\n')
    with pytest.raises(ConfigError, match=r"plans\.default_family"):
        load_settings(config, home=str(tmp_path / "home"))
