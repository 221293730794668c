"""Runs that hung or ended silently wrong, through a real worker (and the CLI for step-done).

- training pairs of a sub-flow's children (an engine child and a consumer child) are captured
  under their scoped ids, and the run ends;
- a superseded consumer answer sent again through ``ponder step-done`` with another output is
  refused ``stale-dispatch-token``; the same command again stays one answer;
- a killed gate never runs what only its approve route reaches; an approved one never runs
  its kill route;
- a failure routed away by ``on_fail`` leaves its dependents stranded: the run fails
  ``steps-stranded`` naming them instead of completing.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Replayer

from activities.config import Settings
from client.connect import data_converter
from tests.cli import ponder
from tests.plans.run_helpers import (
    agent,
    ended_with,
    events,
    plan_doc,
    start,
    status,
    wait_state,
)
from tests.plans.test_run_cli import env, home, worker_env  # noqa: F401 (the fixtures)
from worker.worker import WORKFLOWS, WorkerOptions, running_worker
from workflows.names import UPDATE_RESOLVE_GATE, UPDATE_STEP_DONE
from workflows.plan.activation import forward_routers, verdict
from workflows.plan.consumer import StepDoneInput, step_done_id
from workflows.plan.run_types import PlanRunResult, ResolveGateInput
from workflows.plan.training import safe_name
from workflows.plan.validate import load_plan

SUMMARY = plan_doc(
    agent("source", "Write a paragraph.", "A long paragraph."),
    {"id": "short", "kind": "run", "flow": "summarise", "deps": ["source"],
     "with": {"text": "${steps.source.output}"}},
    name="Summaries",
    training_pairs=True,
    flows={"summarise": {
        "input": {"text": "string"},
        "output": "${steps.polish.output}",
        "steps": [
            agent("gist", "Summarise: ${input.text}", "The gist."),
            {"id": "polish", "kind": "agent", "prompt": "Polish: ${steps.gist.output}",
             "dispatch": "consumer", "deps": ["gist"]},
        ],
    }},
)  # fmt: skip


def pair_file(root: Path, run_id: str, step: str) -> Path:
    return root / safe_name("Summaries") / run_id / f"{safe_name(step)}.jsonl"


async def test_training_pairs_of_sub_flow_children_are_captured_under_scoped_ids(
    client: Client, settings: Settings, tmp_path: Path
) -> None:
    root = tmp_path / "training"
    settings = settings.model_copy(update={"training_dir": root})
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        handle = await start(client, queue, SUMMARY)
        # Before the fix, capturing short/gist raised KeyError in the workflow task, retried
        # for ever: the run never reached the consumer child.
        paused = await wait_state(handle, "awaiting_consumer", timeout=30)
        (issued,) = paused.issuances
        assert issued.step == "short/polish"
        done = StepDoneInput(step="short/polish", token=issued.token, result={"output": "Neat."})
        await handle.execute_update(UPDATE_STEP_DONE, done)
        result: PlanRunResult = await asyncio.wait_for(handle.result(), 30)
        trail = await events(handle)
    assert result.outputs["short"] == "Neat." and result.capture_failures == []
    (gist,) = [json.loads(line) for line in pair_file(root, handle.id, "short/gist").open()]
    assert (gist["step"], gist["output"]) == ("short/gist", "The gist.")
    assert gist["provenance"]["model"] == "sim:default"
    (polish,) = [json.loads(line) for line in pair_file(root, handle.id, "short/polish").open()]
    assert (polish["step"], polish["output"]) == ("short/polish", "Neat.")
    assert polish["provenance"]["model"] == "consumer"
    assert not pair_file(root, handle.id, "gist").exists()  # never the bare child id
    written = sorted(e.data["step"] for e in trail if e.type == "capture.written")
    assert written == ["short/gist", "short/polish", "source"]


CONSUMED = """\
schema: ponder-plan/1
name: superseded
contracts:
  Build: {name: string}
steps:
  - {id: build, kind: agent, prompt: Build the widget., dispatch: consumer, out: Build}
  - {id: ship, kind: gate, deps: [build], gate: {}}
"""


@pytest.mark.slow  # four CLI processes and a ``ponder worker``: started first
async def test_a_superseded_answer_with_another_output_is_refused_through_the_cli(
    env: dict[str, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(CONSUMED)
    run_id = f"superseded-{uuid.uuid4().hex[:8]}"
    paused = await ponder("plan", "run", str(plan), "--run-id", run_id, env=env)
    assert paused.code == 75, paused.err
    found = re.search(rf"continue with: ponder step-done {run_id} build --token (\S+) ", paused.err)
    assert found, paused.err
    token = found.group(1)
    first = ("step-done", run_id, "build", "--token", token, "--output", '{"name": "w"}')
    answered = await ponder(*first, env=env)
    assert answered.code == 75, answered.err  # on to the gate
    # The token was answered and is gone: a different output for it is refused, as through
    # ``temporal`` (its update id used to be the token alone, deduplicated to the first answer).
    other = await ponder("step-done", run_id, "build", "--token", token, "--output",
                         '{"name": "other"}', env=env)  # fmt: skip
    assert other.code == 2, (other.code, other.err)
    assert "stale-dispatch-token" in other.err
    again = await ponder(*first, env=env)  # the same command retried: still one answer
    assert again.code == 75, again.err


def test_the_step_done_update_id_digests_the_whole_answer() -> None:
    one = StepDoneInput(step="build", token="0-abc", result={"output": "x"})
    assert step_done_id(one) == step_done_id(one.model_copy())
    assert step_done_id(one) != step_done_id(one.model_copy(update={"result": {"output": "y"}}))
    assert step_done_id(one) != step_done_id(one.model_copy(update={"token": "0-abd"}))
    assert "0-abc" not in step_done_id(one)  # the token itself stays out of the id
    # what it cost is about the answer, not the answer: a retry that counts again is the same
    costed = one.model_copy(update={"result": {"output": "x", "usage": {"tokens": 5}}})
    assert step_done_id(costed) == step_done_id(one)
    assert step_done_id(one.model_copy(update={"result": "odd"})).startswith("step_done:")


async def replays(handle: WorkflowHandle, settings: Settings) -> None:
    """The run's history replays on this code (the new walk sits behind its patch marker)."""
    replayer = Replayer(workflows=WORKFLOWS, data_converter=data_converter(settings))
    result = await replayer.replay_workflow(await handle.fetch_history())
    assert result.replay_failure is None


def release(**gate: Any) -> dict[str, Any]:
    return plan_doc(
        agent("build", "Build it.", "built"),
        {"id": "gate", "kind": "gate", "deps": ["build"],
         "gate": {"on_approve": "ship", "on_kill": "rollback"} | gate},
        agent("rollback", "Roll back.", "rolled back"),
        agent("ship", "Ship it.", "shipped", deps=["gate"]),
        agent("announce", "Announce ${steps.ship.output}.", "announced", deps=["ship"]),
        agent("tidy", "Tidy up.", "tidied"),
    )  # fmt: skip


async def test_a_killed_gate_never_runs_its_approve_route(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    handle = await start(client, worker_queue, release(deadline=1500, default="kill"))
    result: PlanRunResult = await handle.result()  # the deadline kills it
    assert result.outputs["gate"] == "kill" and result.outputs["rollback"] == "rolled back"
    assert "ship" not in result.outputs and "announce" not in result.outputs
    assert result.outputs["tidy"] == "tidied"  # reached by no route: it runs either way
    done = await status(handle)
    assert (done.steps["ship"], done.steps["announce"]) == ("skipped", "skipped")
    dispatched = [e.data["step"] for e in await events(handle) if e.type == "dispatched"]
    assert dispatched == ["build", "rollback", "tidy"]
    await replays(handle, settings)

    # Approved: the kill route is the one not taken.
    handle = await start(client, worker_queue, release())
    pending = (await wait_state(handle, "awaiting_gate")).pending_gates[0]
    decision = ResolveGateInput(step="gate", decision="approve", token=pending.token)
    await handle.execute_update(UPDATE_RESOLVE_GATE, decision)
    result = await handle.result()
    assert result.outputs["ship"] == "shipped" and "rollback" not in result.outputs
    assert (await status(handle)).steps["rollback"] == "skipped"


STRANDING = plan_doc(
    agent("risky", "Give v.", "junk", out="R", on_fail="rescue"),
    agent("publish", "Publish ${steps.risky.output.v}.", "published", deps=["risky"]),
    agent("rescue", "Recover.", "recovered"),
    agent("tail", "Close.", "closed"),
    contracts={"R": {"v": "integer"}},
)


async def test_a_failure_routed_away_strands_its_dependents_and_fails_the_run(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    handle = await start(client, worker_queue, STRANDING)
    error = await ended_with(handle)
    assert error.type == "steps-stranded"
    assert "publish (risky failed)" in error.message
    done = await status(handle)
    assert done.state == "failed" and done.error is not None and "publish" in done.error
    assert (done.steps["risky"], done.steps["rescue"], done.steps["publish"]) == (
        "failed", "settled", "pending",
    )  # fmt: skip
    assert done.steps["tail"] == "settled"  # runnable work still ran
    await replays(handle, settings)


def test_activation_verdicts() -> None:
    plan = load_plan(release())
    routers = forward_routers(plan.steps)
    assert routers == {"ship": {"gate"}, "rollback": {"gate"}}
    gates = {"gate": plan.step("gate")}
    killed = {"build": "settled", "gate": "settled"}

    def decide(step: str, armed: bool, states: dict[str, str], decision: str) -> str:
        return verdict(
            plan.step(step), armed=armed, routers=routers, states=states,
            outputs={"gate": decision}, gates=gates,
        ).action  # fmt: skip

    assert decide("ship", False, killed, "kill") == "skip"
    assert decide("ship", True, killed, "approve") == "run"
    assert decide("rollback", True, killed, "kill") == "run"
    assert decide("announce", False, killed | {"ship": "skipped"}, "kill") == "skip"
    assert decide("announce", False, killed | {"ship": "failed"}, "kill") == "strand"
    assert decide("tidy", False, killed, "kill") == "run"
    stranded = load_plan(STRANDING)
    states = {"risky": "failed"}
    routed = forward_routers(stranded.steps)
    assert routed == {"rescue": {"risky"}}
    publish = verdict(stranded.step("publish"), armed=False, routers=routed, states=states,
                      outputs={}, gates={})  # fmt: skip
    assert (publish.action, publish.because) == ("strand", "risky failed")
