"""Ensure predicates and iterate end to end (docs/plans.md, "Expressions, ensure, iterate and set"),
on the sim and on a fake OpenAI server (to read the prompts a retry and an iteration send)."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from activities.config import Endpoint, Settings
from tests.conftest import with_endpoint
from tests.fakes import FakeProvider, Reply, openai_completion
from tests.plans.run_helpers import agent, failure, plan_doc, run, start, trace
from worker.worker import WorkerOptions, running_worker
from workflows.plan.run_types import PlanRunResult

SCORE = {"S": {"score": "number"}}


def checked(rows: list[dict[str, Any]], step: str) -> list[tuple[int, str, bool]]:
    return [
        (r["data"]["index"], r["data"]["form"], r["data"]["holds"])
        for r in rows
        if r["type"] == "ensure.checked" and r["data"]["step"] == step
    ]


def dispatches(rows: list[dict[str, Any]], step: str, phase: str | None = None) -> int:
    return sum(
        1
        for r in rows
        if r["type"] == "dispatched"
        and r["data"]["step"] == step
        and r["data"].get("phase") == phase
    )


@pytest.fixture
async def fake_queue(client: Client, settings: Settings, fake: FakeProvider) -> AsyncIterator[str]:
    settings = with_endpoint(settings, "fake", Endpoint(kind="openai", base_url=fake.url))
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        yield queue


def prompts(fake: FakeProvider) -> list[str]:
    return [
        next(m["content"] for m in s.body["messages"] if m["role"] == "user") for s in fake.seen
    ]


async def test_an_expr_failure_is_retried_with_feedback_to_success(
    client: Client, fake_queue: str, fake: FakeProvider, settings: Settings
) -> None:
    fake.replies = [Reply(body=openai_completion(t)) for t in ('{"score": 0.2}', '{"score": 0.9}')]
    plan = plan_doc(
        agent(
            "rate", "Rate it.", model="fake:m", out="S", idempotent=True,
            retry={"max_attempts": 3, "on": ["ensure-failed"]},
            ensure=[{"expr": "result.score >= 0.5"}],
        ),
        contracts=SCORE,
    )  # fmt: skip
    result = await run(client, fake_queue, plan)
    assert result.outputs["rate"] == '{"score": 0.9}'
    sent = prompts(fake)
    assert len(sent) == 2 and "Your previous attempt failed" not in sent[0]
    failed = "ensure expr failed: `result.score >= 0.5` evaluated to false"
    assert f"Your previous attempt failed: {failed}" in sent[1]
    rows = trace(settings.runs_dir, result.run_id)
    assert checked(rows, "rate") == [(0, "expr", False), (0, "expr", True)]


async def test_identical_output_stops_an_expr_retry_not_a_file_one(
    client: Client, worker_queue: str, settings: Settings, tmp_path: Path
) -> None:
    retry = {"max_attempts": 3, "on": ["ensure-failed"]}
    expr = plan_doc(
        agent("e", "Rate.", '{"score": 0.1}', out="S", idempotent=True, retry=retry,
              ensure=[{"expr": "result.score > 0.5"}]),
        contracts=SCORE,
    )  # fmt: skip
    handle = await start(client, worker_queue, expr)
    error = await failure_of(handle)
    assert error.type == "ensure-failed" and "identical output" in error.message
    assert dispatches(trace(settings.runs_dir, handle.id), "e") == 2
    workspace = tmp_path / "ws"
    workspace.mkdir()
    files = plan_doc(
        agent("f", "Write it.", "done", idempotent=True, retry=retry,
              ensure=[{"file_exists": "out/${input.name}.md"}]),
    )  # fmt: skip
    handle = await start(
        client, worker_queue, files, workspace=str(workspace), args={"name": "report"}
    )
    error = await failure_of(handle)
    assert error.type == "ensure-failed" and "out/report.md does not exist" in error.message
    assert dispatches(trace(settings.runs_dir, handle.id), "f") == 3  # "done" twice: retried


async def failure_of(handle: Any) -> Any:
    from temporalio.client import WorkflowFailureError

    with pytest.raises(WorkflowFailureError) as info:
        await handle.result()
    return info.value.cause


async def test_no_judge_is_paid_after_a_failing_expr_and_a_judge_decides_after_passing_ones(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    plan = plan_doc(
        agent(
            "w", "Write.", '{"score": 0.1}', '{"score": 0.8}', '{"score": 0.9}', out="S",
            idempotent=True, retry={"max_attempts": 3, "on": ["ensure-failed"]},
            ensure=[{"judged": {"statement": "it is kind"}}, {"expr": "result.score > 0.5"}],
            **{"x-sim": {"outputs": ['{"score": 0.1}', '{"score": 0.8}', '{"score": 0.9}'],
                        "judged": ["Harsh.\nGATE: FAIL", "Kind enough.\nGATE: PASS"]}},
        ),
        contracts=SCORE,
    )  # fmt: skip
    result = await run(client, worker_queue, plan)
    assert result.outputs["w"] == '{"score": 0.9}'
    rows = trace(settings.runs_dir, result.run_id)
    # attempt 1: the free expr refuses first, so no judge; 2: judge fails; 3: judge passes.
    assert checked(rows, "w") == [
        (1, "expr", False),
        (1, "expr", True), (0, "judged", False),
        (1, "expr", True), (0, "judged", True),
    ]  # fmt: skip
    assert dispatches(rows, "w", "judged") == 2
    assert result.calls == 5  # 3 dispatches + 2 judge calls, all in the boundary's reservation
    reasons = [r["data"]["reason"] for r in rows if r["data"].get("form") == "judged"]
    assert reasons == ["Harsh.", "Kind enough."]


async def test_a_symlink_out_of_the_workspace_fails_the_run(
    client: Client, worker_queue: str, tmp_path: Path
) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("s3cret")
    (workspace / "link").symlink_to(outside)
    plan = plan_doc(
        agent("f", "Check.", "ok", ensure=[{"file_contains": {"path": "link/secret.txt",
                                                              "text": "s3cret"}}]),
    )  # fmt: skip
    error = await failure(client, worker_queue, plan, workspace=str(workspace))
    assert error.type == "artifact-path-escapes-root"
    assert "s3cret" not in error.message.replace("secret.txt", "")


async def test_a_fifo_does_not_hang_the_probe(
    client: Client, worker_queue: str, tmp_path: Path, settings: Settings
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    os.mkfifo(workspace / "pipe")
    plan = plan_doc(
        agent("f", "Check.", "ok", ensure=[{"file_contains": {"path": "pipe", "text": "x"}}]),
    )
    handle = await start(client, worker_queue, plan, workspace=str(workspace))
    error = await asyncio.wait_for(failure_of(handle), 60)
    assert error.type == "ensure-failed" and "pipe is not a regular file" in error.message


async def test_until_holds_at_the_last_iteration_with_feedback(
    client: Client, fake_queue: str, fake: FakeProvider, settings: Settings
) -> None:
    fake.replies = [Reply(body=openai_completion(f'{{"score": {v}}}')) for v in (1, 2, 3)]
    plan = plan_doc(
        agent("grow", "Improve it.", model="fake:m", out="S",
              iterate={"max": 3, "until": "result.score >= 3 && iteration == 3"}),
        contracts=SCORE,
    )  # fmt: skip
    result = await run(client, fake_queue, plan)
    assert result.outputs["grow"] == '{"score": 3}'
    sent = prompts(fake)
    assert len(sent) == 3
    assert "Previous iteration (1 of 3) did not satisfy until" in sent[1]
    assert sent[1].endswith('Previous output:\n{"score": 1}')
    assert "Previous iteration (2 of 3)" in sent[2] and "(1 of 3)" not in sent[2]
    rows = trace(settings.runs_dir, result.run_id)
    nexts = [r["data"]["iteration"] for r in rows if r["type"] == "iterate.next"]
    assert nexts == [1, 2]


async def test_iterate_exhausted_by_max_and_by_identical_output_routes_on_fail(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    def plan(*outputs: str) -> dict[str, Any]:
        return plan_doc(
            agent("grow", "Improve.", *outputs, out="S", on_fail="rescue",
                  iterate={"max": 3, "until": "result.score > 10"}),
            agent("rescue", "Rescue."),
            contracts=SCORE,
        )  # fmt: skip

    by_max = await run(client, worker_queue, plan('{"score": 1}', '{"score": 2}', '{"score": 3}'))
    rows = trace(settings.runs_dir, by_max.run_id)
    failed = next(r["data"] for r in rows if r["type"] == "step.failed")
    assert failed["reason"] == "iterate-exhausted" and failed["on_fail"] == "rescue"
    assert dispatches(rows, "grow") == 3 and "rescue" in by_max.outputs
    identical = await run(client, worker_queue, plan('{"score": 1}'))
    rows = trace(settings.runs_dir, identical.run_id)
    assert dispatches(rows, "grow") == 2  # the second iteration repeated the first: exhausted
    failed = next(r["data"] for r in rows if r["type"] == "step.failed")
    assert failed["reason"] == "iterate-exhausted"


async def test_each_iteration_has_its_own_retries(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    # Iteration 1: a malformed answer, retried, then a score; iteration 2: malformed, retried,
    # then the score that satisfies until. With attempts shared, the second retry would be lost.
    plan = plan_doc(
        agent("grow", "Improve.", "junk", '{"score": 1}', "junk", '{"score": 5}', out="S",
              idempotent=True, retry={"max_attempts": 2, "on": ["malformed-output"]},
              iterate={"max": 2, "until": "result.score >= 5"}),
        contracts=SCORE,
    )  # fmt: skip
    result: PlanRunResult = await run(client, worker_queue, plan)
    assert result.outputs["grow"] == '{"score": 5}'
    assert dispatches(trace(settings.runs_dir, result.run_id), "grow") == 4


async def test_a_chain_member_checks_its_own_item(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    plan = plan_doc(
        {"id": "fan", "kind": "fanout",
         "fanout": {"over": ["a", "b"], "chain": ["fan.echo"], "concurrency": 1, "join": "any"}},
        agent("fan.echo", "Echo the item.", '{"v": "a"}', '{"v": "x"}', out="V",
              ensure=[{"expr": "result.v == item && item_index < 2"}]),
        contracts={"V": {"v": "string"}},
        budget={"calls": 2},  # the default counts a chain member once, not per item
    )  # fmt: skip
    result = await run(client, worker_queue, plan)
    assert result.outputs["fan"] == ['{"v": "a"}', None]  # item 1's branch failed its ensure
    rows = trace(settings.runs_dir, result.run_id)
    items = [(r["data"]["item"], r["data"]["holds"]) for r in rows if r["type"] == "ensure.checked"]
    assert items == [(0, True), (1, False)]


async def test_an_unroutable_judge_is_refused_at_preflight(
    client: Client, worker_queue: str
) -> None:
    plan = plan_doc(
        agent("w", "Write.", "ok", ensure=[{"judged": {"statement": "s", "model": "opus"}}]),
    )
    error = await failure(client, worker_queue, plan)  # no executor for the claude family
    assert error.type == "plan-model-unroutable"
    assert "w ensure[0] judged (model opus)" in error.message


async def test_an_on_fail_target_is_told_why_it_was_routed_there(
    client: Client, fake_queue: str, fake: FakeProvider
) -> None:
    fake.replies = [Reply(body=openai_completion(t)) for t in ('{"score": 0.1}', "fixed")]
    plan = plan_doc(
        agent(
            "rate", "Rate it.", model="fake:m", out="S", on_fail="repair",
            ensure=[{"expr": "result.score >= 0.5"}],
        ),
        agent("repair", "Repair the rating.", model="fake:m"),
        contracts=SCORE,
    )  # fmt: skip
    result = await run(client, fake_queue, plan)
    assert result.outputs["repair"] == "fixed"
    sent = prompts(fake)
    assert len(sent) == 2 and "routed here" not in sent[0]
    assert (
        "You were routed here because step rate failed (ensure-failed): rate: ensure[0] expr "
        "failed: `result.score >= 0.5` evaluated to false"
    ) in sent[1]
