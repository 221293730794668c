"""The first job end to end: ``Ask`` on the sim provider and on fake HTTP providers."""

from __future__ import annotations

import json
import uuid

from temporalio.client import Client

from activities.config import Endpoint, Settings
from activities.model_types import CallModelInput, ModelRequest
from activities.providers.sim import SimOptions, simulate
from activities.sim_math import parse_trailers
from tests.conftest import with_endpoint
from tests.fakes import FakeProvider
from worker.worker import WorkerOptions, running_worker
from workflows.ask_types import AskInput, AskResult
from workflows.names import ASK


async def ask(client: Client, queue: str, payload: AskInput) -> AskResult:
    return await client.execute_workflow(
        ASK,
        payload,
        id=payload.run_id or f"ask-{uuid.uuid4()}",
        task_queue=queue,
        result_type=AskResult,
    )


async def test_ask_sim_writes_answer_and_summary(
    client: Client, settings: Settings, worker_queue: str
) -> None:
    run_id = f"ask-{uuid.uuid4().hex[:8]}"
    result = await ask(client, worker_queue, AskInput(question="What is 2+2?", run_id=run_id))
    assert result.response.simulated
    ((_q, tag),) = parse_trailers(result.response.text)
    assert tag == "ask-0-0"
    run_dir = settings.runs_dir / run_id
    assert (run_dir / "artifacts/answer.txt").read_text() == result.response.text
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["simulated"] is True
    assert summary["usage"]["output_tokens"] == len(result.response.text) // 4


async def test_sim_is_a_pure_function_of_seed_and_call(client: Client, worker_queue: str) -> None:
    first = await ask(client, worker_queue, AskInput(question="q", seed=7))
    second = await ask(client, worker_queue, AskInput(question="q", seed=7))
    other = await ask(client, worker_queue, AskInput(question="q", seed=8))
    assert first.response.text == second.response.text
    assert first.response.text != other.response.text


async def test_openai_compatible_server_wrapping_sim_gives_same_text(
    client: Client, settings: Settings, fake: FakeProvider
) -> None:
    settings = with_endpoint(settings, "local", Endpoint(kind="openai", base_url=fake.url))
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        direct = await ask(client, queue, AskInput(question="Sort a list", seed=42))
        via_http = await ask(
            client, queue, AskInput(question="Sort a list", seed=42, model="local:default")
        )
    assert via_http.response.text == direct.response.text
    assert not via_http.response.simulated
    assert via_http.response.usage.cache_hit_tokens == 4
    (seen,) = fake.seen
    assert seen.call_id.endswith("/ask/0/0")


def test_sim_judge_prefers_better_candidate_at_high_accuracy() -> None:
    prompt = "A:\nfoo [sim q=2.000 id=a]\nB:\nbar [sim q=-2.000 id=b]"
    wins = 0
    for i in range(200):
        request = ModelRequest(model="sim:default", prompt=prompt, role="judge", seed=i)
        verdict = json.loads(simulate(request, i, f"j/{i}/0", SimOptions(accuracy=0.95)))
        wins += verdict["winner"] == "A"
    assert wins > 190


def test_call_id_is_stable_and_names_the_call() -> None:
    call = CallModelInput(
        run_id="r1",
        phase="initial_generation",
        index=3,
        request=ModelRequest(prompt="x", model="sim:default"),
    )
    assert call.call_id == "r1/initial_generation/3/0"
    assert call.call_key == "initial_generation/3/0"
