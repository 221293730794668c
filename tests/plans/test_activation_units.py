"""Direct unit tests of route activation (workflows.plan.activation): which steps route, what a
step reads before it may overlap, the verdicts and the stranded message."""

from __future__ import annotations

from typing import Any

from workflows.plan.activation import (
    KILL,
    Verdict,
    forward_routers,
    gate_route_targets,
    has_conditions,
    has_routes,
    overlaps,
    reads,
    redo_target,
    redo_waits,
    stranded_detail,
    verdict,
    with_strings,
)
from workflows.plan.model import Plan


def plan(steps: list[dict[str, Any]], flows: dict[str, Any] | None = None) -> Plan:
    doc = {"schema": "ponder-plan/1", "name": "p", "steps": steps, "flows": flows or {}}
    return Plan.model_validate(doc)


def agent(sid: str, **fields: Any) -> dict[str, Any]:
    return {"id": sid, "kind": "agent", "prompt": "go", **fields}


def test_has_routes_looks_at_every_scope() -> None:
    assert not has_routes(plan([agent("a"), {"id": "g", "kind": "gate", "prompt": "x"}]))
    assert has_routes(plan([agent("a", on_fail="b"), agent("b")]))
    assert has_routes(plan([{"id": "h", "kind": "gate", "gate": {"on_kill": "a"}}, agent("a")]))
    assert has_routes(plan([{"id": "h", "kind": "gate", "gate": {"on_approve": "a"}}, agent("a")]))
    assert not has_routes(
        plan([{"id": "h", "kind": "gate", "gate": {"on_revise": "a"}}, agent("a")])
    )
    in_flow = plan(
        [{"id": "r", "kind": "run", "flow": "f"}],
        {"f": {"steps": [agent("c", on_fail="d"), agent("d")]}},
    )
    assert has_routes(in_flow)
    run_routes = plan(
        [{"id": "r", "kind": "run", "flow": "f", "on_fail": "a"}, agent("a")],
        {"f": {"steps": [agent("c")]}},
    )
    assert has_routes(run_routes)


def test_has_conditions_looks_at_every_scope() -> None:
    assert not has_conditions(plan([agent("a")]))
    assert has_conditions(plan([agent("a", when="true")]))
    in_flow = plan(
        [{"id": "r", "kind": "run", "flow": "f"}], {"f": {"steps": [agent("c", when="false")]}}
    )
    assert has_conditions(in_flow)


def test_gate_route_targets() -> None:
    p = plan(
        [
            {"id": "h", "kind": "gate", "gate": {"on_approve": "a", "on_kill": "b"}},
            {"id": "m", "kind": "gate", "prompt": "x"},
            agent("a"),
            agent("b"),
        ]
    )
    assert gate_route_targets(p.step("h")) == ("a", "b")
    assert gate_route_targets(p.step("m")) == (None, None)
    assert gate_route_targets(p.step("a")) == (None, None)


def test_forward_routers_keep_only_later_targets() -> None:
    p = plan(
        [
            agent("a", on_fail="c"),
            agent("b", on_fail="a"),  # a loop back: not a forward route
            agent("c"),
            {"id": "h", "kind": "gate", "gate": {"on_approve": "d", "on_kill": "c"}},
            agent("d", on_fail="ghost"),
        ]
    )
    assert forward_routers(p.steps) == {"c": {"a"}, "d": {"h"}}


def test_overlaps() -> None:
    p = plan(
        [
            agent("a"),
            agent("c", dispatch="consumer"),
            agent("k", checkpoint="here"),
            {"id": "s", "kind": "set", "set": {"x": "1"}},
            {"id": "sk", "kind": "set", "set": {"x": "1"}, "checkpoint": "there"},
            {"id": "g", "kind": "gate", "prompt": "x"},
            {"id": "r", "kind": "run", "flow": "clean"},
            {"id": "rc", "kind": "run", "flow": "mixed"},
            {"id": "rg", "kind": "run", "flow": "ghost"},
            {"id": "rk", "kind": "run", "flow": "clean", "checkpoint": "x"},
        ],
        {
            "clean": {"steps": [agent("c1"), {"id": "s1", "kind": "set", "set": {"y": "2"}}]},
            "mixed": {"steps": [agent("c2"), agent("c3", dispatch="consumer")]},
        },
    )
    got = {s.id: overlaps(s, flows=p.flows) for s in p.steps}
    assert got == {
        "a": True,
        "c": False,
        "k": False,
        "s": True,
        "sk": False,
        "g": False,
        "r": True,
        "rc": False,
        "rg": False,
        "rk": False,
    }
    # without the flows (sub-flows may not overlap) a run step runs alone
    assert overlaps(p.step("r")) is False


def test_reads_collects_deps_templates_predicates_and_expressions() -> None:
    p = plan(
        [
            agent("a"),
            agent("b"),
            agent("c"),
            agent("d"),
            agent("e"),
            agent("f"),
            agent(
                "x",
                deps=["a"],
                prompt="use ${steps.b.output} and ${input.k} and ${steps.a.output}",
                ensure=[
                    {"file_exists": "out/${steps.c.output}.md"},
                    {"file_contains": {"path": "${steps.d.output}", "text": "z"}},
                    {"expr": 'steps["e"] == "1"'},
                ],
                when='steps["f"] != ""',
            ),
            {"id": "r", "kind": "run", "flow": "fl", "with": {"k": ["${steps.c.output}"]}},
            {"id": "s", "kind": "set", "set": {"v": 'steps["e"]'}, "when": 'steps["a"] == ""'},
            {"id": "bad", "kind": "agent", "prompt": "${steps.", "deps": ["b"]},
        ],
        {"fl": {"steps": [agent("q")]}},
    )
    assert reads(p.step("x")) == ["a", "b", "c", "d", "e", "f"]
    assert reads(p.step("r")) == ["c"]
    assert reads(p.step("s")) == ["e", "a"]
    assert reads(p.step("bad")) == ["b"]  # an unparseable template is left to validation


def test_with_strings_walks_nested_values() -> None:
    assert with_strings({"a": ["x", {"b": "y", "n": 3}], "c": None, "d": "z"}) == ["x", "y", "z"]
    assert with_strings("s") == ["s"]
    assert with_strings(7) == []
    assert with_strings(None) == []


def test_verdicts() -> None:
    p = plan(
        [
            agent("a"),
            {"id": "h", "kind": "gate", "gate": {"on_kill": "t"}},
            agent("t", deps=["h", "a"]),
            agent("u", deps=["a", "h"]),
        ]
    )
    routers = forward_routers(p.steps)
    gates = {"h": p.step("h")}
    t, u = p.step("t"), p.step("u")
    settled = {"a": "settled", "h": "settled"}

    def judge(step: Any, *, armed: bool, states: dict[str, str], **kw: Any) -> Verdict:
        return verdict(
            step,
            armed=armed,
            routers=routers,
            states=states,
            outputs=kw.get("outputs", {}),
            gates=gates,
            local=kw.get("local", frozenset()),
        )

    assert judge(t, armed=False, states=settled) == Verdict("skip", "no route to it was taken (h)")
    # armed: its dep on the gate that routed to it is met by the route
    assert judge(t, armed=True, states={"a": "settled"}) == Verdict("run")
    assert judge(t, armed=True, states={"a": "failed"}) == Verdict("strand", "a failed")
    assert judge(u, armed=False, states={"a": "running"}) == Verdict("strand", "a never ran")
    assert judge(u, armed=False, states={}) == Verdict("strand", "a never ran")
    assert judge(u, armed=False, states=settled) == Verdict("run")
    assert judge(u, armed=False, states=settled, outputs={"h": KILL}) == Verdict(
        "skip", "gate h was killed"
    )
    assert judge(u, armed=False, states=settled, outputs={"h": "approve"}) == Verdict("run")
    skipped = {"a": "skipped", "h": "settled"}
    assert judge(u, armed=False, states=skipped, outputs={"h": KILL}) == Verdict(
        "skip", "a was skipped"
    )  # the first reason is kept
    assert judge(u, armed=False, states=skipped, local={"a"}) == Verdict("run")
    assert judge(u, armed=False, states=skipped, local={"a"}, outputs={"h": KILL}) == Verdict(
        "skip", "gate h was killed"
    )
    # a strand after a skip still strands
    assert judge(u, armed=False, states={"a": "skipped", "h": "failed"}) == Verdict(
        "strand", "h failed"
    )
    # the kill output only counts for a gate
    assert verdict(u, armed=False, routers={}, states=settled, outputs={"a": KILL}, gates={}) == (
        Verdict("run")
    )


def test_stranded_detail_names_at_most_twenty() -> None:
    fix = (
        "; fix: make them depend on the on_fail target rather than the failed step, or drop "
        "on_fail so the failure itself fails the run"
    )
    assert stranded_detail([("a", "b failed"), ("c", None)]) == (
        "no runnable step remains and 2 step(s) never ran: a (b failed); c" + fix
    )
    many = [(f"s{i}", None) for i in range(21)]
    shown = "; ".join(f"s{i}" for i in range(20))
    assert stranded_detail(many) == (
        f"no runnable step remains and 21 step(s) never ran: {shown}; and 1 more" + fix
    )
    assert stranded_detail(many[:20]) == (
        f"no runnable step remains and 20 step(s) never ran: {shown}" + fix
    )


def test_redo_target_is_a_model_gates_fail_route_with_redos() -> None:
    p = plan(
        [
            agent("a"),
            {"id": "g", "kind": "gate", "prompt": "x", "fail_route": "a", "max_redos": 1},
            {"id": "z", "kind": "gate", "prompt": "x", "fail_route": "a", "max_redos": 0},
            {"id": "t", "kind": "gate", "prompt": "x", "fail_route": "terminal:no", "max_redos": 1},
            {"id": "h", "kind": "gate", "gate": {}},
        ]
    )
    assert [redo_target(s) for s in p.steps] == [None, "a", None, None, None]
    # a model gate reads the step it may redo; other kinds read no ensure they lack
    assert reads(p.step("g")) == ["a"]
    assert reads(p.step("h")) == []


def test_redo_waits_order_readers_around_the_gate() -> None:
    p = plan(
        [
            agent("a"),
            agent("b", prompt="use ${steps.a.output}"),
            {"id": "g", "kind": "gate", "prompt": "x", "fail_route": "a", "max_redos": 1},
            agent("c", prompt="after ${steps.a.output}"),
            agent("d"),
        ]
    )
    # the gate waits for b (it read the output the gate judges); c waits for the gate
    assert redo_waits(p.steps) == [[], [], [1], [2], []]
    assert redo_waits(p.steps[:2]) == [[], []]
