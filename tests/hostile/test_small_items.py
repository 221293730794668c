"""Smaller holes, each sent through the real ``temporal`` binary (and ``ponder plan validate``)
to one real worker process: a resume that arrives in a plan run's first workflow task, budgets
of nested ledgers past the run's ceilings, a re-used run id, a ``with`` value nested past what a
sub-flow renders, and an update too large for the history event that would record it.

Each hostile run ends with its code (or is refused before it starts) and the run it was aimed
at goes on; a probe ``Ask`` on the same worker completes within 10 s meanwhile, and the worker
exits within 10 s of SIGTERM (``shared_worker`` asserts that on leaving the block).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from activities.config import Settings
from tests.cli import cli_env, ponder_here
from tests.hostile.harness import SharedWorker, dumps, shared_worker, temporal
from tests.plans.test_run_consumer import settled_history
from workflows.bounds import MAX_MESSAGE_BYTES
from workflows.names import ASK, PLAN_RUN, QUERY_STATUS, TOURNAMENT
from workflows.plan.run_types import PlanStatus

CODED_WITHIN = 30.0


def _plan(name: str, *steps: dict[str, Any], **header: Any) -> dict[str, Any]:
    return {"schema": "ponder-plan/1", "name": name, **header, "steps": list(steps)}


PAUSED = _plan(
    "early-resume",
    {"id": "wait", "kind": "pause", "pause": {"state": "n", "resume_arg": "n",
                                              "schema": {"type": "integer"}}},
    {"id": "use", "kind": "set", "deps": ["wait"], "set": {"n": 'steps["wait"] + 1'}},
)  # fmt: skip

CONSUMER = _plan(
    "big-step-done",
    {"id": "b", "kind": "agent", "prompt": "B.", "dispatch": "consumer"},
)

DEEP: Any = "x"
for _ in range(40):
    DEEP = [DEEP]
NESTED = _plan(
    "deep-with",
    {"id": "r", "kind": "run", "flow": "f", "with": {"v": DEEP}},
    flows={"f": {"steps": [{"id": "a", "kind": "agent", "prompt": "${input.v}",
                            "model": "sim:default"}]}},
)  # fmt: skip

HUGE_BUDGETS = _plan(
    "huge-budgets",
    {"id": "top", "kind": "agent", "prompt": "t", "model": "sim:default",
     "budget": {"usd": 1e308}},
    {"id": "fan", "kind": "fanout", "budget": {"tokens": 10**15},
     "fanout": {"over": [1, 2], "chain": ["fan.one"]}},
    {"id": "fan.one", "kind": "agent", "prompt": "one", "model": "sim:default"},
    {"id": "r", "kind": "run", "flow": "f", "budget": {"wall_ms": 10**17}},
    flows={"f": {"steps": [{"id": "a", "kind": "agent", "prompt": "a", "model": "sim:default",
                            "budget": {"calls": 10**12}}]}},
)  # fmt: skip


async def _status(worker: SharedWorker, run_id: str) -> PlanStatus:
    return await worker.handle(run_id).query(QUERY_STATUS, result_type=PlanStatus)


async def _resume_in_the_first_task(worker: SharedWorker, tag: str) -> None:
    """The invalid resume rides on the start (update-with-start), so it is handled in the
    run's first workflow task, before ``run`` has read the plan: refused, and the run waits."""
    run_id = f"small-early-{tag}"
    target = ["--address", worker.address, "--namespace", "default"]
    code, output = await temporal(
        "workflow", "execute-update-with-start", *target,
        "--task-queue", worker.queue, "--type", PLAN_RUN, "--workflow-id", run_id,
        "--id-conflict-policy", "Fail", "--input", dumps({"plan": PAUSED}),
        "--update-name", "resume", "--update-input", dumps({"args": {"n": '"seven"'}}),
    )  # fmt: skip
    assert code != 0, output
    assert "input.invalid" in output and "n: " in output, output[-600:]
    for bad in ('"7"', "not json"):  # and once the run is going, the same rule
        code, output = await worker.update(run_id, "resume", dumps({"args": {"n": bad}}))
        assert code != 0 and "input.invalid" in output, output[-600:]
    shown = await _status(worker, run_id)
    assert shown.state == "awaiting_input", shown
    assert shown.pending_pause is not None and shown.pending_pause.resume_arg == "n"
    code, output = await worker.update(run_id, "resume", dumps({"args": {"n": "7"}}))
    assert code == 0, output
    result = await asyncio.wait_for(worker.handle(run_id).result(), CODED_WITHIN)
    assert result["outputs"]["wait"] == 7 and result["outputs"]["use"] == {"n": 8}


async def _oversized_step_done(worker: SharedWorker, tag: str, tmp_path: Path) -> None:
    """A ``step_done`` over the message bound (and under Temporal's own 2 MiB limit, which no
    refusal can pass: see docs/security.md) is refused by the validator: nothing enters history, and
    the next (valid) answer is taken at once. The signal form is recorded as refused."""
    run_id = f"small-big-{tag}"
    await worker.start(PLAN_RUN, run_id, dumps({"plan": CONSUMER}))
    for _ in range(600):
        shown = await _status(worker, run_id)
        if shown.issuances:
            break
        await asyncio.sleep(0.05)
    token = shown.issuances[0].token
    before = await settled_history(worker.handle(run_id))
    big = tmp_path / "big.json"
    body = {"step": "b", "token": token, "result": {"output": "x" * (MAX_MESSAGE_BYTES * 3 // 2)}}
    big.write_text(dumps(body))
    target = ["--address", worker.address, "--namespace", "default", "--workflow-id", run_id]
    code, output = await temporal(
        "workflow", "update", "execute", *target, "--name", "step_done", "--input-file", str(big)
    )
    assert code != 0, output
    assert "input.invalid" in output and f"{MAX_MESSAGE_BYTES}-byte limit" in output, output[-600:]
    # Refused by the validator, so at once: nothing entered history (no clock needed to tell).
    assert await settled_history(worker.handle(run_id)) == before
    code, output = await temporal(
        "workflow", "signal", *target, "--name", "step_done_signal", "--input-file", str(big)
    )
    assert code == 0, output
    ok = dumps({"step": "b", "token": token, "result": {"output": "ok"}})
    code, output = await worker.update(run_id, "step_done", ok)
    assert code == 0, output
    result = await asyncio.wait_for(worker.handle(run_id).result(), CODED_WITHIN)
    assert result["outputs"]["b"] == "ok"
    # Taken at once: no workflow task failed (and was retried after a backoff) on the way.
    history = await worker.handle(run_id).fetch_history()
    assert not any(e.HasField("workflow_task_failed_event_attributes") for e in history.events)
    refused = (await _status(worker, run_id)).refused
    assert len(refused) == 1 and "input.invalid" in refused[0], refused


TINY_KEY_TOML = """
[providers.tiny]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "SMALL_ITEMS_TINY_KEY"
"""


async def test_small_items_are_refused_and_the_worker_keeps_serving(
    client: Client,
    settings: Settings,
    server_address: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tag = uuid.uuid4().hex[:8]
    monkeypatch.setenv("SMALL_ITEMS_TINY_KEY", "k")  # too short to redact: the worker says so
    async with shared_worker(client, settings, server_address, toml=TINY_KEY_TOML) as worker:
        warned = "warning: SMALL_ITEMS_TINY_KEY holds a key under 8 characters"
        for _ in range(100):
            if warned in worker.worker_log():
                break
            await asyncio.sleep(0.05)
        assert warned in worker.worker_log()
        # Refused before they run: budgets past the ceilings, a with value nested too deep.
        refused = {f"small-budgets-{tag}": HUGE_BUDGETS, f"small-deep-{tag}": NESTED}
        for run_id, plan in refused.items():
            await worker.start(PLAN_RUN, run_id, dumps({"plan": plan}))
        # A run id used before: one of each kind, started again once the first has closed.
        firsts = {
            ASK: {"question": "q", "model": "sim:default"},
            TOURNAMENT: {"task": "Sort a list.", "model": "sim:default", "profile": "quick"},
            PLAN_RUN: {
                "plan": _plan(
                    "again", {"id": "a", "kind": "agent", "prompt": "A.", "model": "sim:default"}
                )
            },
        }
        again = {kind: f"small-again-{kind.lower()}-{tag}" for kind in firsts}
        for kind, value in firsts.items():
            await worker.start(kind, again[kind], dumps(value))
        await worker.probe()

        budgets = await worker.failure(f"small-budgets-{tag}", within=CODED_WITHIN)
        assert budgets.type == "plan-invalid", budgets
        for needle in (
            "steps[0].budget.usd",
            "steps[1].budget.tokens",
            "steps[3].budget.wall_ms",
            "flows.f.steps[0].budget.calls",
        ):
            assert needle in budgets.message, (needle, budgets.message)
        deep = await worker.failure(f"small-deep-{tag}", within=CODED_WITHIN)
        assert deep.type == "plan-invalid", deep
        assert "[flow.with_too_deep]" in deep.message and "steps[0].with.v" in deep.message
        for run_id in refused:
            assert not (settings.runs_dir / run_id / "calls.jsonl").exists()

        for kind, workflow_id in again.items():
            await asyncio.wait_for(worker.handle(workflow_id).result(), 60)
            await worker.start(kind, workflow_id, dumps(firsts[kind]))
        reused = {
            kind: await worker.failure(workflow_id, within=CODED_WITHIN)
            for kind, workflow_id in again.items()
        }
        for kind, error in reused.items():
            assert error.type == "run.id_in_use", (kind, error)
            assert error.non_retryable and "already used by an earlier run" in error.message

        await _resume_in_the_first_task(worker, tag)
        await _oversized_step_done(worker, tag, tmp_path)
        await worker.probe()


def test_ponder_plan_validate_refuses_them_with_their_codes(tmp_path: Path) -> None:
    """The same documents through ``ponder plan validate``: refused with their paths and codes,
    exit 2 (the nested budgets and the deep ``with`` used to pass)."""
    env = cli_env(tmp_path / "home")
    for plan, codes in (
        (
            HUGE_BUDGETS,
            [
                "field.range",
                "steps[0].budget.usd",
                "steps[1].budget.tokens",
                "steps[3].budget.wall_ms",
            ],
        ),
        (NESTED, ["flow.with_too_deep", "steps[0].with.v"]),
    ):
        path = tmp_path / f"{plan['name']}.json"
        path.write_text(json.dumps(plan))
        done = ponder_here("plan", "validate", str(path), env=env)
        assert done.code == 2, (done.out, done.err)
        for needle in codes:
            assert needle in done.out + done.err, (needle, done.out, done.err)
