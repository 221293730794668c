"""Properties of random valid plans: they validate, and the extension cap lets them finish.

The cap ``max(2 x plan total, sum of reservations)`` exists so that a valid plan can always be
finished by extending (the reference's fix for plain doubling): walking the boundaries with
the worst case spent at each, every pause is cured by an extension within the cap.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from workflows.plan.boundaries import boundaries, plan_totals, unsatisfiable
from workflows.plan.ledger import PlanLedger
from workflows.plan.validate import validate_document


@st.composite
def valid_plans(draw: st.DrawFn) -> dict[str, Any]:
    steps: list[dict[str, Any]] = []
    agents: list[str] = []
    for n in range(draw(st.integers(1, 12))):
        deps = [s["id"] for s in steps if not s["id"].startswith("m")][-1:]  # last top-level
        kind = draw(st.sampled_from(["agent", "agent", "gate", "human", "pause", "fanout"]))
        attempts = draw(st.integers(1, 4))
        invocation = {
            "prompt": f"step {n}",
            "timeout_ms": draw(st.integers(1, 10_000)),
            "retry": {"max_attempts": attempts, "on": ["timeout"]},
            "idempotent": True,
        }
        if draw(st.booleans()):
            invocation["budget"] = {"max_agents": draw(st.integers(1, 4))}
        if kind == "agent" or (kind == "gate" and not agents):
            steps.append({"id": f"a{n}", "kind": "agent", "deps": deps, **invocation})
            agents.append(f"a{n}")
        elif kind == "gate":
            route = draw(st.sampled_from([*agents, "terminal:stop"]))
            redos = draw(st.integers(0, 3)) if not route.startswith("terminal:") else 0
            steps.append({"id": f"g{n}", "kind": "gate", "deps": deps, **invocation,
                          "fail_route": route, "max_redos": redos})  # fmt: skip
        elif kind == "human":
            steps.append({"id": f"h{n}", "kind": "gate", "deps": deps, "gate": {}})
        elif kind == "pause":
            steps.append({"id": f"p{n}", "kind": "pause", "deps": deps,
                          "pause": {"state": "WAIT", "resume_arg": f"arg{n}"}})  # fmt: skip
        else:
            chain = [f"m{n}.{k}" for k in range(draw(st.integers(1, 3)))]
            items = draw(st.lists(st.integers(0, 5), max_size=12))
            fanout: dict[str, Any] = {"over": items, "chain": chain, "dedup": draw(st.booleans())}
            if draw(st.booleans()):
                fanout["max_fanout"] = draw(st.integers(1, 12))
                fanout["concurrency"] = draw(st.integers(1, fanout["max_fanout"]))
            steps.append({"id": f"f{n}", "kind": "fanout", "deps": deps, "fanout": fanout})
            for k, member in enumerate(chain):
                member_deps = [chain[k - 1]] if k else []
                steps.append({"id": member, "kind": "agent", "deps": member_deps, **invocation})
    return {"schema": "ponder-plan/1", "name": "random", "steps": steps}


@settings(derandomize=True, max_examples=300, deadline=None)
@given(valid_plans())
def test_random_valid_plans_validate_and_can_always_finish(doc: dict[str, Any]) -> None:
    result = validate_document(doc)
    assert result.ok, [e.line() for e in result.errors]
    assert result.plan is not None
    walk = boundaries(result.plan)
    totals = plan_totals(result.plan, walk)
    assert unsatisfiable(walk, calls=totals.calls_cap, wall_ms=totals.wall_cap_ms) is None
    assert totals.default_wall_ms >= max((b.reservation.wall_ms for b in walk), default=0)

    # Walk with the default budget, spending each boundary's worst case; a pause is cured by
    # extending just enough, and that extension is always within the cap.
    ledger = PlanLedger.start(totals)
    for boundary in walk:
        res = boundary.reservation
        need = ledger.need(boundary.step_id, res)
        if need is not None:
            calls = max(ledger.calls_limit, ledger.budget.spent.calls + res.invocations)
            wall = max(ledger.wall_limit_ms, ledger.wall_spent_ms + res.wall_ms)
            reason, why = ledger.extend(calls=calls, wall_ms=wall)
            assert reason is None, why
            assert ledger.need(boundary.step_id, res) is None
        ledger.open(boundary.step_id, res)
        for _ in range(res.invocations):
            ledger.spend(boundary.step_id)
        ledger.spend_wall(res.wall_ms)
        ledger.close()
    assert ledger.budget.spent.calls == totals.reserved_calls
