"""How big a plan may be (``workflows.plan.limits``): the history estimate and the concurrency
ceiling, refused at validation with a code, a path and the limit. Pure: microseconds each."""

from __future__ import annotations

from typing import Any

from workflows.plan.boundaries import MAX_CONCURRENCY, boundaries
from workflows.plan.limits import EVENTS_PER_ACTIVITY, estimate_history
from workflows.plan.validate import load_plan, validate_document
from workflows.tournament.preflight import HISTORY_EVENTS_BUDGET


def region(items: int, **fanout: Any) -> dict[str, Any]:
    member: dict[str, Any] = {"id": "work", "kind": "agent", "prompt": "x", "model": "sim:default"}
    member |= fanout.pop("member", {})
    return {
        "schema": "ponder-plan/1",
        "name": "wide",
        "steps": [
            {
                "id": "fan",
                "kind": "fanout",
                "fanout": {"over": list(range(items)), "chain": ["work"], **fanout},
            },
            member,
        ],
    }


def codes(doc: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e.code, e.path) for e in validate_document(doc).errors]


def test_the_issue_region_of_ten_thousand_items_is_refused_with_the_limit() -> None:
    errors = validate_document(region(10_000, concurrency=10_000, max_fanout=10_000)).errors
    assert [(e.code, e.path) for e in errors] == [
        ("fanout.concurrency", "steps[0].fanout.concurrency"),
        ("plan.too_large", "steps[0].fanout.max_fanout"),
    ]
    assert f"ceiling of {MAX_CONCURRENCY}" in errors[0].message
    assert "60," in errors[1].message and f"{HISTORY_EVENTS_BUDGET:,}" in errors[1].message
    assert "50,000-event limit" in errors[1].message


def test_a_region_of_two_thousand_items_at_256_lanes_is_accepted() -> None:
    plan = load_plan(region(2_000, concurrency=256))
    estimate = estimate_history(plan)
    assert 2_000 * EVENTS_PER_ACTIVITY < estimate.events < HISTORY_EVENTS_BUDGET


def test_the_default_concurrency_is_capped_at_the_ceiling() -> None:
    # No concurrency: max_fanout (1,000) would be the default; the region runs 256 at once and
    # reserves its wall clock for 256 lanes, not 1,000.
    plan = load_plan(region(1_000, max_fanout=1_000, member={"timeout_ms": 1_000}))
    (boundary,) = [b for b in boundaries(plan) if b.kind == "region"]
    assert boundary.reservation.wall_ms == -(-1_000 * 1_000 // MAX_CONCURRENCY)


def test_work_per_invocation_counts_in_the_estimate() -> None:
    plain = estimate_history(load_plan(region(2_000))).events
    files = region(
        2_000,
        member={"artifacts": {"writes": ["out.txt"]}, "deliverable": "file"},
    )
    # a path check, a snapshot and a landed check beside each call: four activities, not one
    assert codes(files) == [("plan.too_large", "steps[0].fanout.over")]
    assert plain < HISTORY_EVENTS_BUDGET


def test_a_consumer_issuance_counts_its_timer_update_and_trace_write() -> None:
    # 2,000 engine calls fit; 2,000 issuances (a timer, an update, a trace write each) do not.
    assert estimate_history(load_plan(region(2_000))).events < HISTORY_EVENTS_BUDGET
    consumers = region(2_000, member={"dispatch": "consumer", "model": None})
    assert codes(consumers) == [("plan.too_large", "steps[0].fanout.over")]


def test_revise_rounds_multiply_the_worst_case() -> None:
    doc = region(1_500)
    doc["steps"].append(
        {
            "id": "ship",
            "kind": "gate",
            "deps": ["fan"],
            "gate": {"on_revise": "fan", "max_rounds": 3},
        }
    )
    errors = validate_document(doc).errors
    assert [e.code for e in errors] == ["plan.too_large"]
    assert "4 pass(es)" in errors[0].message
    doc["steps"][-1]["gate"]["max_rounds"] = 1
    assert validate_document(doc).errors == []


def test_a_human_gate_that_loops_back_is_bounded_by_the_calls_cap() -> None:
    doc = {
        "schema": "ponder-plan/1",
        "name": "loop",
        "budget": {"calls": 20_000},
        "steps": [
            {"id": "a", "kind": "agent", "prompt": "x", "model": "sim:default"},
            {"id": "ok", "kind": "gate", "deps": ["a"], "gate": {"on_approve": "a"}},
        ],
    }
    assert [e.code for e in validate_document(doc).errors] == ["plan.too_large"]
    doc["budget"] = {"calls": 100}
    assert validate_document(doc).errors == []


def test_each_run_step_counts_its_flows_children() -> None:
    body = [{"id": f"s{k}", "kind": "agent", "prompt": "x", "model": "sim:default"}
            for k in range(500)]  # fmt: skip

    def calls(n: int) -> dict[str, Any]:
        steps = [{"id": f"r{k}", "kind": "run", "flow": "big"} for k in range(n)]
        return {"schema": "ponder-plan/1", "name": "f", "flows": {"big": {"steps": body}},
                "steps": steps}  # fmt: skip

    once = estimate_history(load_plan(calls(1))).events
    assert 500 * EVENTS_PER_ACTIVITY < once < HISTORY_EVENTS_BUDGET
    assert codes(calls(3)) == [("plan.too_large", "steps[0]")]  # 1,500 children, each a boundary
