"""``ponder status`` of an ended run reads its run store (under 0.3 s, no query), and
shows the server's own view: the same JSON as ``--live``, for an Ask, a plan and a campaign (a
tournament's is checked in ``tests/tournament/test_think_cli.py``)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowFailureError

from activities.config import Endpoint, Settings
from client.ask_view import stored_ask_view
from client.embedded import EmbeddedServer
from tests.cli import cli_env, ponder
from tests.conftest import with_endpoint
from tests.fakes import FakeProvider, Reply
from worker.worker import WorkerOptions, running_worker
from workflows.ask_types import AskInput, AskResult
from workflows.names import ASK
from workflows.progress_file import PROGRESS_FILE

STORED_LINE = "source   run store"


async def _stored_and_live(run_id: str, env: dict[str, str]) -> tuple[dict, dict]:
    stored = await ponder("status", run_id, "--json", env=env)
    assert stored.code == 0, stored.err
    live = await ponder("status", run_id, "--json", "--live", env=env)
    assert live.code == 0, live.err
    return json.loads(stored.out), json.loads(live.out)


async def _shown_from_store(run_id: str, env: dict[str, str]) -> str:
    shown = await ponder("status", run_id, env=env)
    assert shown.code == 0, shown.err
    assert shown.out.rstrip().endswith(STORED_LINE), shown.out
    return shown.out


@pytest.mark.slow
async def test_ended_asks_plans_and_campaigns_show_their_stored_view_while_the_server_is_up(
    tmp_path: Path,
) -> None:
    env = cli_env(tmp_path, PONDER_SERVER_IDLE_S="60")
    server = EmbeddedServer(tmp_path)

    asked = await ponder("ask", "hello", "--model", "sim:default", "--run-id", "a1", env=env)
    assert asked.code == 0, asked.err
    assert server.up()  # its last user left; it stays for its idle period
    stored, live = await _stored_and_live("a1", env)
    # Elapsed: the store counts to the summary's write, the server to the close (a few ms on).
    assert abs(stored.pop("elapsed_s") - live.pop("elapsed_s")) <= 0.2
    assert stored == live
    assert (stored["status"], stored["model"], stored["simulated"]) == (
        "completed",
        "sim:default",
        True,
    )
    assert stored["answer_path"].endswith("a1/artifacts/answer.txt")
    assert "output tokens" in await _shown_from_store("a1", env)

    planned = await ponder(
        "plan", "run", "examples/plans/set-values.yaml", "--arg", "pages=12",
        "--arg", "audience=engineers", "--run-id", "p1", env=env,
    )  # fmt: skip
    assert planned.code == 0, planned.err
    assert (tmp_path / "runs" / "p1" / PROGRESS_FILE).is_file()
    stored, live = await _stored_and_live("p1", env)
    assert stored == live and list(stored["steps"]) == list(live["steps"])  # plan order kept
    assert stored["state"] == "completed" and set(stored["steps"].values()) == {"settled"}
    assert "settled" in await _shown_from_store("p1", env)

    campaign = "examples/campaigns/deep-vs-single-small.yaml"
    ran = await ponder("campaign", "run", campaign, "--run-id", "c1", env=env, timeout=240)
    assert ran.code == 0, ran.err
    stored, live = await _stored_and_live("c1", env)
    assert stored == live
    assert (stored["status"], stored["cells_done"]) == ("completed", stored["cells_total"])
    assert "[completed] cells" in await _shown_from_store("c1", env)


async def test_a_failed_asks_stored_view_is_the_servers(
    client: Client, settings: Settings, server_address: str, fake: FakeProvider, tmp_path: Path
) -> None:
    """A failed Ask's ``summary.json`` gives the error the server's view gives."""
    settings = with_endpoint(settings, "local", Endpoint(kind="openai", base_url=fake.url))
    fake.replies = [Reply(status=400, body={"error": {"message": "no such model"}})]
    queue = f"test-{uuid.uuid4()}"
    run_id = f"ask-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        with pytest.raises(WorkflowFailureError):
            await client.execute_workflow(
                ASK,
                AskInput(question="hi", model="local:default", run_id=run_id),
                id=run_id,
                task_queue=queue,
                result_type=AskResult,
            )
        env = cli_env(tmp_path, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE=queue)
        live = await ponder("status", run_id, "--json", env=env, timeout=30)
    assert live.code == 0, live.err
    served = json.loads(live.out)
    stored = stored_ask_view(settings.runs_dir / run_id)
    assert stored is not None
    assert abs(stored.pop("elapsed_s") - served.pop("elapsed_s")) <= 0.2
    assert stored == served
    assert stored["status"] == "failed" and stored["error"].startswith("provider.bad_request: ")


def test_a_summary_without_its_start_time_is_not_a_stored_view(tmp_path: Path) -> None:
    """Runs written before summaries had ``started_at`` go to the server (or the store's row)."""
    (tmp_path / "summary.json").write_text(
        json.dumps({"run_id": "a1", "status": "completed", "completed_at": "2026-12-01T00:00:00"})
    )
    assert stored_ask_view(tmp_path) is None
    assert stored_ask_view(tmp_path / "missing") is None
