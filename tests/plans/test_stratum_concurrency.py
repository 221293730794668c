"""A stratum flow's independent steps run side by side: the reference dispatches every ready
step of its entry flow at once, so the translation gives the plan a ``concurrency`` of the most
steps that can be ready together, and none to a flow whose steps form one chain.

The documents have the shape of the reference's own parity flows (flow-style YAML, a
``Result`` contract, an entry flow ``main`` calling a sub-flow ``child``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from temporalio.client import Client, WorkflowHandle

from tests.plans.run_helpers import events, start
from workflows.plan.run_types import PlanRunResult
from workflows.plan.validate import validate_document

ROOT = Path(__file__).resolve().parents[2]

LINEAR = """\
version: 1
contracts:
  Result: {value: string}
flows:
  entry: main
  main:
    input: {name: string}
    output: {from: "${after.output}", contract: Result}
    steps:
      - {id: before, do: "before ${input.name}", out: Result, ENSURE}
      - {id: wrap, after: [before], run: child, with: {name: "${input.name}"}}
      - {id: after, after: [wrap], do: after, out: Result, ENSURE}
  child:
    input: {name: string}
    output: {from: "${child_two.output}", contract: Result}
    steps:
      - {id: child_one, do: "child one ${input.name}", out: Result, ENSURE}
      - {id: child_two, after: [child_one], do: child-two, out: Result, ENSURE}
""".replace("ENSURE", "ensure: [{expr: \"result.value != ''\"}]")

# The same flow with ``before`` and ``wrap`` independent, and ``after`` reading both.
PARALLEL = LINEAR.replace("after: [before], run: child", "run: child").replace(
    "after: [wrap], do: after", "after: [before, wrap], do: after"
)


def translated(text: str) -> dict[str, Any]:
    result = validate_document(yaml.safe_load(text))
    assert result.ok, result.errors
    assert result.translated is not None
    return result.translated


def test_a_chain_of_steps_gets_no_concurrency() -> None:
    assert "concurrency" not in translated(LINEAR)


def test_independent_steps_get_the_most_that_can_be_ready_together() -> None:
    assert translated(PARALLEL)["concurrency"] == 2
    three = PARALLEL.replace(
        "      - {id: after,",
        "      - {id: side, do: side, out: Result}\n      - {id: after,",
    )
    assert translated(three)["concurrency"] == 3  # before, wrap and side; after joins them
    brief = (ROOT / "examples" / "flows" / "brief-subflow.v1.yaml").read_text()
    assert translated(brief)["concurrency"] == 2  # size beside the fan-out


def test_a_route_orders_its_target_after_the_step_routing_to_it() -> None:
    routed = yaml.safe_dump({
        "version": 1,
        "contracts": {"Result": {"value": "string"}},
        "flows": {"entry": "main", "main": {
            "output": {"from": "${rescue.output}", "contract": "Result"},
            "steps": [
                {"id": "risky", "do": "risky", "out": "Result", "on_fail": "rescue"},
                {"id": "rescue", "do": "rescue", "out": "Result"},
                {"id": "other", "do": "other", "out": "Result"},
            ],
        }},
    })  # fmt: skip
    # risky -> rescue -> main:output is one chain (rescue waits for the route), other beside it
    assert translated(routed)["concurrency"] == 2


def test_a_fanouts_stages_run_inside_it_and_are_not_counted() -> None:
    plan = translated((ROOT / "examples" / "flows" / "fact-colors.v1.yaml").read_text())
    assert "colors.stage0" in [s["id"] for s in plan["steps"]]
    assert "concurrency" not in plan  # fact, review, the fan-out and the output: one chain


async def run_on_sim(client: Client, worker_queue: str, flow: str) -> WorkflowHandle[Any, Any]:
    """``flow`` (main: before, a sub-flow ``wrap``, after; the sub-flow's children) run to its
    end on the simulated provider, each step answering its own id; the run's handle."""
    doc = yaml.safe_load(flow)
    main, child = doc["flows"]["main"]["steps"], doc["flows"]["child"]["steps"]
    for step in [main[0], main[2], *child]:
        step["x-sim"] = {"outputs": [f'{{"value": "{step["id"]}"}}']}
    handle = await start(
        client,
        worker_queue,
        doc,
        args={"name": "ponder"},
        executors={"claude": "sim:default"},
        default_family="claude",
    )
    result: PlanRunResult = await handle.result()
    assert result.outputs["main:output"] == {"value": "after"}
    return handle


async def test_a_stratum_flow_runs_its_independent_steps_side_by_side(
    client: Client, worker_queue: str
) -> None:
    handle = await run_on_sim(client, worker_queue, PARALLEL)
    order = [(e.type, e.data["step"]) for e in await events(handle)
             if e.type in ("dispatched", "settled")]  # fmt: skip
    # before and the sub-flow's first child are both dispatched before either settles
    assert order[:2] == [("dispatched", "before"), ("dispatched", "wrap/child_one")]
    assert order.index(("dispatched", "after")) > order.index(("settled", "wrap/child_two"))
