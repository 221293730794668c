"""The run directory's data files beside ``trace.jsonl`` and ``cost.json``, for ``report.html``.

Pure. ``graph.json`` is the plan's step graph (ids, kinds, titles, deps, a region's chain, a ``run``
step's flow, followed by its children under their scoped ids, after it) with each step's
current state; ``calls.jsonl`` is one row per invocation (step, model, tokens, USD,
latency, outcome), so the report can show each step's cost. Both are small next to the trace.
``args.json`` holds the run's arguments (those it started with, and those ``resume`` gave) and
``outputs.json`` each settled step's output (the values the run's result returns), so a person
reads what each step produced without the workflow's history.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from workflows.plan.flows import scoped
from workflows.plan.model import FanoutStep, Plan, RunStep
from workflows.plan.run_record import CallRow

__all__ = ["args_json", "calls_jsonl", "graph_json", "outputs_json"]


def graph_json(plan: Plan | None, states: Mapping[str, str]) -> str:
    steps: list[dict[str, Any]] = []
    for step in plan.steps if plan else []:
        node: dict[str, Any] = {
            "id": step.id,
            "kind": step.kind,
            "title": step.title,
            "deps": list(step.deps),
            "state": states.get(step.id, "pending"),
        }
        if isinstance(step, FanoutStep):
            node["chain"] = list(step.fanout.chain)
        steps.append(node)
        if plan is None or not isinstance(step, RunStep) or step.flow not in plan.flows:
            continue
        for child in plan.flows[step.flow].steps:
            sid = scoped(step.id, child.id)
            steps.append(
                {
                    "id": sid,
                    "kind": child.kind,
                    "title": child.title,
                    # a first child runs after its run step starts: drawn below it
                    "deps": [scoped(step.id, d) for d in child.deps] or [step.id],
                    "state": states.get(sid, "pending"),
                    "flow": step.flow,
                }
            )
    return json.dumps({"plan": plan.name if plan else "", "steps": steps}, indent=1) + "\n"


def calls_jsonl(calls: Sequence[CallRow]) -> str:
    # ``vars``, not ``dataclasses.asdict``: the rows are flat, and asdict's deep copy made the
    # final write of a 2,000-item region outlast the deadlock timeout in the workflow sandbox.
    return "".join(json.dumps(vars(c), sort_keys=True) + "\n" for c in calls)


def args_json(args: Mapping[str, Any]) -> str:
    return json.dumps(dict(args), indent=1, ensure_ascii=False) + "\n"


def outputs_json(outputs: Mapping[str, Any]) -> str:
    """Step id -> output (text, or the JSON a contract, a set step or a region produced)."""
    return json.dumps(dict(outputs), indent=1, ensure_ascii=False) + "\n"
