"""A ``with`` or a fan-out's ``over`` that reads a step its own ``when`` skipped fails
``malformed-output`` naming the skip and its condition, on the real dev server."""

from __future__ import annotations

from typing import Any

from temporalio.client import Client

from tests.plans.run_helpers import agent, ended_with, plan_doc, start, status

WHEN = 'steps["review"] == "no"'


def reads_skipped(reader: dict[str, Any], **header: Any) -> dict[str, Any]:
    return plan_doc(
        agent("review", "Review the draft.", "yes"),
        agent("fix", "Fix it.", '["a", "b"]', deps=["review"], when=WHEN),
        reader,
        **header,
    )


async def test_a_with_reading_a_skipped_step_names_the_skip(
    client: Client, worker_queue: str
) -> None:
    plan = reads_skipped(
        {"id": "r", "kind": "run", "flow": "one", "deps": ["fix"],
         "with": {"text": "Fixed: ${steps.fix.output}"}},
        flows={"one": {"input": {"text": "string"}, "steps": [agent("a", "${input.text}")]}},
    )  # fmt: skip
    handle = await start(client, worker_queue, plan)
    error = await ended_with(handle)
    assert error.type == "malformed-output"
    assert error.message.startswith(
        f"r.with: step 'fix' was skipped (when: {WHEN} was false), so ${{steps.fix.output}} "
        "has no output; fix: "
    ), error.message
    done = await status(handle)
    assert (done.steps["fix"], done.steps["r"]) == ("skipped", "failed")


async def test_an_over_reading_a_skipped_step_names_the_skip(
    client: Client, worker_queue: str
) -> None:
    plan = reads_skipped(
        {"id": "fan", "kind": "fanout", "deps": ["fix"],
         "fanout": {"over": "${steps.fix.output}", "chain": ["each"], "max_fanout": 2}},
    )  # fmt: skip
    plan["steps"].append(agent("each", "Do it."))
    handle = await start(client, worker_queue, plan)
    error = await ended_with(handle)
    assert error.type == "malformed-output"
    assert error.message.startswith(
        f"fan.fanout.over: step 'fix' was skipped (when: {WHEN} was false)"
    ), error.message
