"""Conditional steps (``when``) and human gates inside sub-flow bodies, through a real worker.

- a false ``when`` skips its step alone: a join after it runs on the other branch's output (the
  stratum reference's diamond); a true one runs; a step with none runs either way; the trace
  says why; the history replays;
- a step whose prompt reads a skipped step's output fails ``malformed-output`` naming the skip,
  and its ``on_fail`` routes that failure as any other; an expression reading it fails
  ``expr-failed``;
- a route's skip still carries on: nothing behind a killed gate runs, however deep;
- a ``when`` that is not a boolean fails the run ``expr-failed`` naming the step and the key;
- a ``when`` in a sub-flow's body reads the body's steps;
- a human gate in a body waits under its scoped id (status, ``resolve_gate``); approve goes
  on, kill routes to its ``on_kill`` within the body, revise re-runs the body's target;
- validation: ``when`` is CEL over earlier steps, never on a chain member; a human gate is
  accepted in a body; the stratum translation maps both.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.worker import Replayer

from activities.config import Settings
from client.connect import data_converter
from client.plan_display import steps_line
from tests.plans.run_helpers import agent, ended_with, events, plan_doc, start, status, wait_state
from tests.test_readme import fenced, section
from worker.worker import WORKFLOWS
from workflows.names import UPDATE_RESOLVE_GATE
from workflows.plan.activation import forward_routers, verdict
from workflows.plan.errors import CODES
from workflows.plan.run_types import PlanRunResult, ResolveGateInput
from workflows.plan.validate import validate_document

PAGE = "docs/plans.md"
CONDITIONAL = plan_doc(
    agent("review", "Review the draft.", "yes"),
    agent("fix", "Fix it.", "fixed", deps=["review"], when='steps["review"] == "no"'),
    agent("ship", "Ship it.", "shipped", deps=["review"], when='steps["review"] == "yes"'),
    # The diamond: a join after a skipped branch runs (no script: the sim answers its prompt).
    agent("join", "Join ${steps.ship.output}.", deps=["fix", "ship"]),
    agent("tidy", "Tidy up.", "tidied", deps=["join"]),
)


async def replays(handle: WorkflowHandle, settings: Settings) -> None:
    replayer = Replayer(workflows=WORKFLOWS, data_converter=data_converter(settings))
    result = await replayer.replay_workflow(await handle.fetch_history())
    assert result.replay_failure is None


@pytest.mark.parametrize("concurrency", [1, 2])  # the plan-order walk and the overlapping one
async def test_a_false_when_skips_its_step_alone_and_a_join_after_it_runs(
    client: Client, worker_queue: str, settings: Settings, concurrency: int
) -> None:
    handle = await start(client, worker_queue, CONDITIONAL | {"concurrency": concurrency})
    result: PlanRunResult = await handle.result()
    assert result.outputs["ship"] == "shipped" and result.outputs["tidy"] == "tidied"
    assert "Join shipped." in str(result.outputs["join"])  # it ran, on ship's output
    assert "fix" not in result.outputs
    done = await status(handle)
    assert done.state == "completed"
    assert (done.steps["fix"], done.steps["ship"], done.steps["join"]) == (
        "skipped", "settled", "settled",
    )  # fmt: skip
    trail = await events(handle)
    dispatched = [e.data["step"] for e in trail if e.type == "dispatched"]
    assert dispatched == ["review", "ship", "join", "tidy"]
    evaluated = {e.data["step"]: e.data["holds"] for e in trail if e.type == "when.evaluated"}
    assert evaluated == {"fix": False, "ship": True}
    skipped = {e.data["step"]: e.data["because"] for e in trail if e.type == "step.skipped"}
    assert skipped == {"fix": 'when steps["review"] == "no" is false'}
    await replays(handle, settings)


def reads_skipped(**fields: Any) -> dict[str, Any]:
    return plan_doc(
        agent("review", "Review the draft.", "yes"),
        agent("fix", "Fix it.", "fixed", deps=["review"], when='steps["review"] == "no"'),
        agent("recheck", "Check ${steps.fix.output}.", "ok", deps=["fix"], **fields),
        agent("fallback", "Check the draft as it is.", "checked as is"),
    )


async def test_reading_a_skipped_steps_output_fails_at_render(
    client: Client, worker_queue: str
) -> None:
    error = await ended_with(await start(client, worker_queue, reads_skipped()))
    assert error.type == "malformed-output"
    assert error.message.startswith("recheck: ${steps.fix.output}: step 'fix' has no output")
    assert "(step 'fix' was skipped, so its output is unavailable); fix: " in error.message


async def test_an_expression_reading_a_skipped_step_fails_expr_failed(
    client: Client, worker_queue: str
) -> None:
    plan = plan_doc(
        agent("review", "Review the draft.", "yes"),
        agent("fix", "Fix it.", "fixed", deps=["review"], when='steps["review"] == "no"'),
        agent("recheck", "Check it.", "ok", deps=["fix"], when='steps["fix"] == "fixed"'),
    )
    error = await ended_with(await start(client, worker_queue, plan))
    assert error.type == "expr-failed"
    assert error.message.startswith('recheck.when = steps["fix"] == "fixed": no such key (fix)')


async def test_a_render_failure_on_a_skipped_step_takes_its_on_fail_route(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    handle = await start(client, worker_queue, reads_skipped(on_fail="fallback"))
    result: PlanRunResult = await handle.result()
    assert result.outputs["fallback"] == "checked as is" and "recheck" not in result.outputs
    done = await status(handle)
    assert (done.steps["fix"], done.steps["recheck"]) == ("skipped", "failed")
    trail = await events(handle)
    [failed] = [e.data for e in trail if e.type == "step.failed"]
    assert failed == {"step": "recheck", "reason": "malformed-output", "on_fail": "fallback"}
    dispatched = [e.data["step"] for e in trail if e.type == "dispatched"]
    assert dispatched == ["review", "fallback"]  # recheck failed before any call
    await replays(handle, settings)


async def test_a_when_skip_in_a_sub_flow_body_is_local_too(
    client: Client, worker_queue: str
) -> None:
    body = {
        "input": {"mode": "string"},
        "output": "${steps.after.output}",
        "steps": [
            agent("maybe", "Maybe.", "done", when='input.mode == "on"'),
            agent("after", "After.", "after it", deps=["maybe"]),
        ],
    }
    plan = plan_doc(
        {"id": "call", "kind": "run", "flow": "body", "with": {"mode": "off"}},
        flows={"body": body},
    )
    result: PlanRunResult = await (await start(client, worker_queue, plan)).result()
    assert result.outputs["call"] == "after it"
    assert "call/maybe" not in result.outputs


KILLABLE = plan_doc(
    agent("draft", "Draft it.", "draft"),
    {"id": "approve", "kind": "gate", "deps": ["draft"], "gate": {"on_kill": "rework"}},
    agent("publish", "Publish ${steps.draft.output}.", "published", deps=["approve"]),
    agent("announce", "Announce it.", "announced", deps=["publish"]),
    agent("rework", "Rework it.", "reworked"),
    agent("later", "Later.", "later", deps=["announce"], when="true"),
)


async def test_a_killed_gate_still_skips_everything_behind_it(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    handle = await start(client, worker_queue, KILLABLE)
    await decide(handle, "approve", "kill")
    result: PlanRunResult = await handle.result()
    assert result.outputs["rework"] == "reworked"
    done = await status(handle)
    assert [done.steps[s] for s in ("publish", "announce", "later")] == ["skipped"] * 3
    trail = await events(handle)
    skipped = {e.data["step"]: e.data["because"] for e in trail if e.type == "step.skipped"}
    assert skipped == {
        "publish": "gate approve was killed",
        "announce": "publish was skipped",
        "later": "announce was skipped",
    }
    assert not [e for e in trail if e.type == "when.evaluated"]  # later's when was never asked
    await replays(handle, settings)


def test_only_a_when_skip_meets_a_dep() -> None:
    plan = validate_document(KILLABLE).plan
    assert plan is not None
    routers = forward_routers(plan.steps)

    def decided(step: str, states: dict[str, str], local: set[str]) -> tuple[str, str | None]:
        found = verdict(
            plan.step(step), armed=False, routers=routers, states=states, outputs={},
            gates={}, local=local,
        )  # fmt: skip
        return found.action, found.because

    assert decided("announce", {"publish": "skipped"}, set()) == ("skip", "publish was skipped")
    assert decided("announce", {"publish": "skipped"}, {"publish"}) == ("run", None)
    # local names a when skip; a dep in it that is not skipped is judged by its state
    assert decided("announce", {"publish": "failed"}, {"publish"}) == ("strand", "publish failed")
    assert decided("announce", {"publish": "settled"}, {"publish"}) == ("run", None)
    # a route target is still skipped when its route was not taken, whatever local says
    assert decided("rework", {}, {"approve"})[0] == "skip"


async def test_a_when_that_is_not_a_boolean_fails_expr_failed(
    client: Client, worker_queue: str
) -> None:
    plan = plan_doc(
        agent("count", "Count.", "3"),
        agent("use", "Use it.", "used", deps=["count"], when='steps["count"]'),
    )
    error = await ended_with(await start(client, worker_queue, plan))
    assert error.type == "expr-failed"
    assert "use.when" in error.message and "not a boolean" in error.message


GATED_FLOW = {
    "input": {"topic": "string"},
    "output": "${steps.final.output}",
    "steps": [
        agent("draft", "Draft ${input.topic}.", "draft one", "draft two"),
        {"id": "approve", "kind": "gate", "deps": ["draft"],
         "gate": {"on_kill": "rework", "on_revise": "draft", "max_rounds": 2}},
        agent("rework", "Rework it.", "reworked"),
        agent("final", "Finalise ${steps.draft.output}.", "final", deps=["approve"]),
        agent("note", "Note it.", "noted", when='input.topic == "loud"'),
    ],
}  # fmt: skip


def gated(topic: str) -> dict[str, Any]:
    return plan_doc(
        agent("topic", "Pick a topic.", topic),
        {"id": "brief", "kind": "run", "flow": "brief", "deps": ["topic"],
         "with": {"topic": "${steps.topic.output}"}},
        agent("after", "After ${steps.brief.output}.", "done", deps=["brief"]),
        flows={"brief": GATED_FLOW},
    )  # fmt: skip


async def decide(handle: WorkflowHandle, step: str, decision: str) -> None:
    pending = (await wait_state(handle, "awaiting_gate")).pending_gates
    assert [g.step for g in pending] == [step]
    await handle.execute_update(
        UPDATE_RESOLVE_GATE, ResolveGateInput(step=step, decision=decision, token=pending[0].token)
    )


async def test_a_human_gate_in_a_sub_flow_waits_under_its_scoped_id(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    handle = await start(client, worker_queue, gated("loud"))
    waiting = await wait_state(handle, "awaiting_gate")
    assert waiting.steps["brief/approve"] == "waiting" and waiting.steps["brief"] == "running"
    token = waiting.pending_gates[0].token
    with pytest.raises(WorkflowUpdateFailedError) as bare:  # the bare id is not the gate's name
        await handle.execute_update(
            UPDATE_RESOLVE_GATE, ResolveGateInput(step="approve", decision="approve", token=token)
        )
    assert "unknown-step" in str(bare.value.cause) and "brief/approve" in str(bare.value.cause)
    await decide(handle, "brief/approve", "revise")  # the body's draft runs again
    await decide(handle, "brief/approve", "approve")
    result: PlanRunResult = await handle.result()
    assert result.outputs["brief"] == "final" and result.outputs["after"] == "done"
    assert result.outputs["brief/draft"] == "draft two"
    assert result.outputs["brief/note"] == "noted"  # its when held
    done = await status(handle)
    assert done.steps["brief/rework"] == "skipped"  # the kill route was not taken
    trail = await events(handle)
    revised = [e.data for e in trail if e.type == "gate.revise"]
    assert revised == [{"step": "brief/approve", "target": "brief/draft", "epoch": 1}]
    dispatched = [e.data["step"] for e in trail if e.type == "dispatched"]
    assert dispatched == [
        "topic", "brief/draft", "brief/draft", "brief/final", "brief/note", "after",
    ]  # fmt: skip
    await replays(handle, settings)


async def test_a_killed_gate_in_a_sub_flow_routes_within_the_body(
    client: Client, worker_queue: str
) -> None:
    handle = await start(client, worker_queue, gated("quiet"))
    await decide(handle, "brief/approve", "kill")
    # final sat behind the killed gate and note's when was false: the flow's output (final's)
    # was never made, so the run step fails as any body without its output does.
    error = await ended_with(handle)
    assert error.type == "malformed-output" and "brief" in error.message
    done = await status(handle)
    assert done.steps["brief/rework"] == "settled"  # the kill route, within the body
    assert (done.steps["brief/final"], done.steps["brief/note"]) == ("skipped", "skipped")
    assert done.steps["after"] == "pending"


# --- validation -----------------------------------------------------------------------------


def codes(doc: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e.code, e.path) for e in validate_document(doc).errors]


@pytest.mark.parametrize(
    ("when", "expected"),
    [
        ('steps["ghost"] == "x"', ("ref.unknown_step", "steps[1].when")),
        ('steps["later"] == "x"', ("ref.not_earlier", "steps[1].when")),
        ("mood == 1", ("expr.unknown_name", "steps[1].when")),
        ("result == 1", ("expr.unknown_name", "steps[1].when")),
        ("(", ("expr.syntax", "steps[1].when")),
        ("", ("field.range", "steps[1].when")),
    ],
)
def test_when_is_cel_over_input_and_earlier_steps(when: str, expected: tuple[str, str]) -> None:
    doc = plan_doc(agent("first", "a"), agent("second", "b", when=when), agent("later", "c"))
    found = codes(doc)
    assert expected in found, found
    assert expected[0] in CODES


def test_when_on_a_chain_member_is_refused() -> None:
    doc = plan_doc(
        {"id": "fan", "kind": "fanout", "fanout": {"over": ["a", "b"], "chain": ["each"]}},
        agent("each", "Do it.", when="true"),
    )
    assert codes(doc) == [("when.chain_member", "steps[1].when")]
    assert "when.chain_member" in CODES


def test_when_is_accepted_on_every_kind_and_a_human_gate_in_a_body() -> None:
    doc = gated("x")
    doc["steps"][2]["when"] = 'steps["brief"] != ""'
    doc["steps"].insert(0, {"id": "wait", "kind": "pause", "when": "true",
                            "pause": {"state": "s", "resume_arg": "a"}})  # fmt: skip
    result = validate_document(doc)
    assert result.errors == [] and result.plan is not None
    assert "when" not in result.plan.steps[1].model_dump(by_alias=True)  # unset: not dumped


def stratum(*steps: dict[str, Any], **flows: Any) -> dict[str, Any]:
    return {
        "version": 1,
        "contracts": {"Text": {"value": "string"}},
        "flows": {
            "entry": "main",
            "main": {
                "steps": list(steps),
                "output": {"from": "${last.output}", "contract": "Text"},
            },
            **flows,
        },
    }


def test_stratum_when_and_a_gate_in_a_sub_flow_translate() -> None:
    doc = stratum(
        {"id": "look", "do": "Look.", "out": "Text"},
        {"id": "fix", "do": "Fix.", "out": "Text", "when": "result.look.value == 'broken'"},
        {"id": "last", "run": "check", "after": ["look"]},
        check={
            "output": {"from": "${done.output}", "contract": "Text"},
            "steps": [
                {"id": "draft", "do": "Draft.", "out": "Text"},
                {"id": "ok", "gate": {"on_approve": "done", "on_kill": None}, "after": ["draft"]},
                {"id": "done", "do": "Done.", "out": "Text", "after": ["ok"]},
            ],
        },
    )
    result = validate_document(doc)
    assert result.errors == [], result.errors
    fix = result.translated["steps"][1]  # type: ignore[index]
    assert fix["when"] == 'steps["look"].value == "broken"' and fix["deps"] == ["look"]
    body = result.translated["flows"]["check"]["steps"]  # type: ignore[index]
    assert body[1]["kind"] == "gate" and body[1]["gate"]["on_approve"] == "done"
    stage = stratum(
        {"id": "last", "fanout": {"over": ["a"], "concurrency": 1, "isolation": "none",
         "require": "all", "merge": "sequential", "steps": [{"do": "x", "when": "true"}]}},
    )  # fmt: skip
    assert ("stratum.unsupported", "flows.main.steps[0].fanout.steps[0].when") in codes(stage)


def test_the_steps_line_counts_skipped_and_running_steps() -> None:
    steps = {"a": "settled", "b": "skipped", "c": "running", "d": "running", "e": "pending"}
    assert steps_line(steps) == "1 / 5 settled, 1 skipped, 2 running"
    assert steps_line({"a": "settled"}) == "1 / 1 settled"


async def test_the_conditional_steps_recipe_runs_as_written(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    (recipe,) = fenced(section("## Conditional steps and gates in sub-flows", page=PAGE), "yaml")
    plan = yaml.safe_load(recipe)
    assert validate_document(plan).errors == []
    handle = await start(client, worker_queue, plan)
    await decide(handle, "release/approve", "approve")
    result: PlanRunResult = await handle.result()
    assert result.outputs["migration"] == "guide" and result.outputs["release"] == "published"
    await replays(handle, settings)
