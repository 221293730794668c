"""Direct unit tests of the plan run's pure parts: routing, the run directory's data files, the
run record, the failure detail, worktree names and the landing rule, training pairs and the
preflight refusals. Each expected value is worked out here by hand, not by the code under test."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from workflows.plan.model import Plan
from workflows.plan.preflight import (
    check_trace,
    declared_paths,
    default_calls_differ,
    open_ledger,
    qe_unchecked,
    qe_waivers,
    reqe_debt,
    route_models,
)
from workflows.plan.reasons import Reason
from workflows.plan.routing import route, step_family
from workflows.plan.run_files import args_json, calls_jsonl, graph_json, outputs_json
from workflows.plan.run_record import (
    MAX_REFUSED_SHOWN,
    CallRow,
    PlanFailure,
    PlanRecord,
    TerminalRoute,
)
from workflows.plan.run_types import PlanFailureDetail, PlanRunInput
from workflows.plan.training import (
    DETAIL_CHARS,
    MAX_IO_CHARS,
    MAX_LINE_BYTES,
    Provenance,
    Unserializable,
    build_pair,
    clip_detail,
    is_key,
    pair_key,
    pair_line,
    safe_name,
    truncate_pair,
)
from workflows.plan.worktrees import (
    isolated_fanouts,
    land_decision,
    merge_name,
    patch_file,
    worktree_name,
)


def plan(steps: list[dict[str, Any]], **extra: Any) -> Plan:
    return Plan.model_validate({"schema": "ponder-plan/1", "name": "p", "steps": steps, **extra})


def agent(sid: str, **fields: Any) -> dict[str, Any]:
    return {"id": sid, "kind": "agent", "prompt": "do it", **fields}


def run_input(**fields: Any) -> PlanRunInput:
    return PlanRunInput.model_validate({"plan": {}, **fields})


# -- routing ------------------------------------------------------------------------------


EXECUTORS = {"claude": "anthropic:claude-x", "openai": "openai:gpt-x", "mine": "sim:mine"}


@pytest.mark.parametrize(
    ("model", "family", "default", "expected"),
    [
        ("sim:given", "claude", "openai", "sim:given"),  # a full spec is taken as it is
        (None, "openai", "claude", "openai:gpt-x"),  # an explicit family beats the default
        ("opus", None, "openai", "anthropic:claude-x"),  # a family name given as the model
        ("codex-1", None, None, "openai:gpt-x"),
        ("mine", None, None, "sim:mine"),  # not a known family: the name is the family
        (None, None, "mine", "sim:mine"),  # nothing given: the default family
        (None, None, None, None),  # nothing at all: unroutable
        ("ghost", None, "claude", None),  # a family no executor runs
        (None, "Sonnet", None, "anthropic:claude-x"),  # a family alias, canonicalised
        (None, "ghost", None, None),
        ("opus", "openai", None, "openai:gpt-x"),  # the family wins over the model's
    ],
)
def test_route_resolves_model_family_and_default(
    model: str | None, family: str | None, default: str | None, expected: str | None
) -> None:
    assert route(model, family, executors=EXECUTORS, default_family=default) == expected


def test_an_empty_executor_spec_is_unroutable() -> None:
    assert route(None, "claude", executors={"claude": ""}, default_family=None) is None
    # an empty spec under the alias falls through to the canonical family's executor
    both = {"sonnet": "", "claude": "anthropic:c"}
    assert route(None, "sonnet", executors=both, default_family=None) == "anthropic:c"


@pytest.mark.parametrize(
    ("model", "spec", "family", "expected"),
    [
        ("opus", "openai:gpt-x", "fam", "fam"),  # explicit family first
        ("opus", "openai:gpt-x", None, "claude"),  # the family name it was given
        ("mine", "openai:gpt-x", None, "mine"),  # an unknown bare name is its own family
        ("sim:x", "anthropic:claude-3", None, "claude"),  # from the spec's model name
        (None, "openai:other", None, "openai"),  # from the spec's provider
        (None, "sim:default", None, "sim"),  # neither: the provider part
        (None, "anthropic:something", None, "anthropic"),
    ],
)
def test_step_family(model: str | None, spec: str, family: str | None, expected: str) -> None:
    assert step_family(model, spec, family) == expected


# -- run files ----------------------------------------------------------------------------


def test_graph_json_lists_steps_with_states_chains_and_flow_children() -> None:
    p = plan(
        [
            agent("a", title="First"),
            {
                "id": "fan",
                "kind": "fanout",
                "deps": ["a"],
                "fanout": {"over": ["x"], "chain": ["one"]},
            },
            agent("one"),
            {"id": "call", "kind": "run", "deps": ["a"], "flow": "body"},
            {"id": "ghost", "kind": "run", "flow": "nowhere"},
        ],
        flows={"body": {"steps": [agent("c1"), agent("c2", deps=["c1"], title="Second")]}},
    )
    graph = json.loads(graph_json(p, {"a": "settled", "call/c1": "running"}))
    assert graph["plan"] == "p"
    assert graph["steps"] == [
        {"id": "a", "kind": "agent", "title": "First", "deps": [], "state": "settled"},
        {
            "id": "fan",
            "kind": "fanout",
            "title": None,
            "deps": ["a"],
            "state": "pending",
            "chain": ["one"],
        },
        {"id": "one", "kind": "agent", "title": None, "deps": [], "state": "pending"},
        {"id": "call", "kind": "run", "title": None, "deps": ["a"], "state": "pending"},
        {
            "id": "call/c1",
            "kind": "agent",
            "title": None,
            "deps": ["call"],
            "state": "running",
            "flow": "body",
        },
        {
            "id": "call/c2",
            "kind": "agent",
            "title": "Second",
            "deps": ["call/c1"],
            "state": "pending",
            "flow": "body",
        },
        {"id": "ghost", "kind": "run", "title": None, "deps": [], "state": "pending"},
    ]
    assert graph_json(p, {}).endswith("}\n")
    assert graph_json(p, {}).startswith('{\n "plan"')  # indent=1


def test_graph_json_without_a_plan() -> None:
    assert graph_json(None, {"a": "settled"}) == '{\n "plan": "",\n "steps": []\n}\n'


def test_calls_jsonl_is_one_sorted_row_per_call() -> None:
    rows = [CallRow("i1", "a", "sim:x", input_tokens=3), CallRow("i2", "b", "sim:y", usd=0.5)]
    text = calls_jsonl(rows)
    lines = text.split("\n")
    assert lines[-1] == "" and len(lines) == 3
    first = json.loads(lines[0])
    assert list(first) == sorted(first)
    assert first == {
        "invocation": "i1",
        "step": "a",
        "model": "sim:x",
        "input_tokens": 3,
        "output_tokens": 0,
        "usd": 0.0,
        "latency_ms": 0.0,
        "outcome": "ok",
        "simulated": False,
        "priced": True,
        "model_calls": 1,
    }
    assert json.loads(lines[1])["usd"] == 0.5
    assert calls_jsonl([]) == ""


def test_args_and_outputs_json_keep_unicode_and_end_in_a_newline() -> None:
    assert args_json({"who": "Zoë"}) == '{\n "who": "Zoë"\n}\n'
    assert outputs_json({"a": {"k": "ü"}}) == '{\n "a": {\n  "k": "ü"\n }\n}\n'


# -- run record -----------------------------------------------------------------------------


def test_events_are_numbered_from_one_with_the_clock_and_causes() -> None:
    ticks = iter(["t1", "t2", "t3"])
    record = PlanRecord(now=lambda: next(ticks))
    assert record.event("started", plan="p") == 1
    assert record.event("settled", caused_by=[1], step="a") == 2
    first, second = record.events
    assert (first.seq, first.ts, first.type, first.data, first.caused_by) == (
        1,
        "t1",
        "started",
        {"plan": "p"},
        [],
    )
    assert (second.seq, second.ts, second.caused_by) == (2, "t2", [1])
    lines = record.trace_jsonl().splitlines(keepends=True)
    assert len(lines) == 2 and all(line.endswith("\n") for line in lines)
    assert json.loads(lines[1])["seq"] == 2
    assert record.trace_jsonl(1) == lines[1]
    assert record.trace_jsonl(2) == ""


def test_refusals_keep_the_last_ten_and_each_is_an_event() -> None:
    record = PlanRecord(now=lambda: "t")
    for i in range(MAX_REFUSED_SHOWN + 2):
        record.refuse("resume", Reason.UNKNOWN_STEP, f"m{i}")
    assert MAX_REFUSED_SHOWN == 10
    assert len(record.refused) == 10
    assert record.refused[0] == "resume: unknown-step: m2"
    assert record.refused[-1] == "resume: unknown-step: m11"
    last = record.events[-1]
    assert last.type == "control.refused"
    assert last.data == {"control": "resume", "reason": "unknown-step", "message": "m11"}
    assert len(record.events) == 12


def test_causes_are_the_settled_deps_seqs_in_dep_order() -> None:
    record = PlanRecord(now=lambda: "t", last_settled={"a": 3, "b": 7})
    assert record.causes(["b", "ghost", "a"]) == [7, 3]
    assert record.causes([]) == []


def test_cost_json_sums_the_calls() -> None:
    record = PlanRecord(now=lambda: "t")
    record.steps = {"a": "settled", "b": "failed", "c": "settled"}
    record.calls = [
        CallRow("i1", "a", "m", 10, 5, 0.1234564, simulated=True, model_calls=3),
        CallRow("i2", "c", "m", 1, 2, 0.0000004, simulated=True, priced=False),
    ]
    row = json.loads(
        record.cost_json(run_id="r", plan="p", outcome="completed", wall_ms=100, waited_ms=20)
    )
    assert row == {
        "run_id": "r",
        "plan": "p",
        "outcome": "completed",
        "steps": 2,
        "invocations": 2,
        "calls": 4,
        "input_tokens": 11,
        "output_tokens": 7,
        "usd": 0.123457,
        "unpriced_invocations": 1,
        "wall_ms": 100,
        "elapsed_ms": 120,
        "waited_ms": 20,
        "simulated": True,
    }
    text = record.cost_json(run_id="r", plan="p", outcome="x", wall_ms=1, elapsed_ms=9)
    assert text.endswith("}\n") and text.startswith('{\n  "run_id"')  # indent=2
    assert json.loads(text)["elapsed_ms"] == 9
    assert json.loads(text)["waited_ms"] == 0
    record.calls[1].simulated = False
    assert (
        json.loads(record.cost_json(run_id="r", plan="p", outcome="x", wall_ms=1))["simulated"]
        is False
    )
    record.calls = []
    empty = json.loads(record.cost_json(run_id="r", plan="p", outcome="x", wall_ms=0))
    assert empty["simulated"] is False and empty["elapsed_ms"] == 0


def test_a_plan_failure_carries_its_parts() -> None:
    failure = PlanFailure(Reason.GATE_FAILED, "no", step="s", cause="provider.x")
    assert str(failure) == "gate-failed: no"
    assert (failure.reason, failure.detail, failure.step, failure.cause) == (
        Reason.GATE_FAILED,
        "no",
        "s",
        "provider.x",
    )
    bare = PlanFailure(Reason.GATE_FAILED, "no")
    assert bare.step is None and bare.cause is None
    route_ = TerminalRoute("done")
    assert route_.label == "done" and str(route_) == "done"


def test_call_row_defaults() -> None:
    row = CallRow("i", "s", "m")
    assert (row.input_tokens, row.output_tokens, row.usd, row.latency_ms) == (0, 0, 0.0, 0.0)
    assert (row.outcome, row.simulated, row.priced, row.model_calls) == ("ok", False, True, 1)


# -- failure detail -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("details", "cause"),
    [
        ([{"cause": "provider.replay_miss"}, {"cause": "other"}], "provider.replay_miss"),
        ([], None),
        ([{"cause": 3}], None),
        (["provider.x"], None),
        ([{}], None),
        ([None, {"cause": "second"}], None),
    ],
)
def test_failure_detail_reads_the_first_details_cause(
    details: list[Any], cause: str | None
) -> None:
    assert PlanFailureDetail.of(details).cause == cause


# -- worktrees ------------------------------------------------------------------------------


def test_worktree_names_and_patch_files() -> None:
    assert worktree_name("build", 7) == "build-7"
    assert merge_name("build") == "build-merge"
    assert patch_file("build-7") == "worktrees/build-7.patch"
    assert patch_file("a.b:c_d-merge") == "worktrees/a.b:c_d-merge.patch"
    assert patch_file("s-99999") == "worktrees/s-99999.patch"
    for bad in ("build", "../x-1", "a/b-1", "s-123456", "Build-1", "s-", "-1", "s-merged"):
        with pytest.raises(ValueError, match="is not a worktree name"):
            patch_file(bad)
    with pytest.raises(ValueError):
        patch_file("x" * 65 + "-1")
    assert patch_file("x" * 64 + "-1") == f"worktrees/{'x' * 64}-1.patch"


def test_land_decision() -> None:
    assert land_decision("m", base="b", merged="m") == "done"
    assert land_decision("b", base="b", merged="m") == "apply"
    assert land_decision("x", base="b", merged="m") == "conflict"
    assert land_decision("b", base="b", merged="b") == "done"


def test_isolated_fanouts_are_the_worktree_regions() -> None:
    p = plan(
        [
            {
                "id": "w",
                "kind": "fanout",
                "fanout": {"over": ["x"], "chain": ["one"], "isolation": "worktree"},
            },
            {"id": "n", "kind": "fanout", "fanout": {"over": ["x"], "chain": ["two"]}},
            agent("one"),
            agent("two"),
        ]
    )
    assert isolated_fanouts(p) == ["w"]


# -- training pairs -------------------------------------------------------------------------


def test_safe_name_maps_unsafe_runs_and_appends_a_digest() -> None:
    digest = hashlib.sha256(b"My Plan/..").hexdigest()[:8]
    assert safe_name("My Plan/..") == f"my-plan--{digest}"
    assert safe_name("ok_name-1") == f"ok_name-1-{hashlib.sha256(b'ok_name-1').hexdigest()[:8]}"
    assert safe_name("") == hashlib.sha256(b"").hexdigest()[:8]
    long = "a" * 100
    assert safe_name(long) == "a" * 64 + "-" + hashlib.sha256(long.encode()).hexdigest()[:8]
    assert safe_name("A") != safe_name("a")
    surrogate = "\udc80"
    assert safe_name(surrogate).endswith(
        hashlib.sha256(surrogate.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    )


def test_pair_key_and_is_key() -> None:
    expected = hashlib.sha256(json.dumps(["s", "in", "out"]).encode()).hexdigest()
    assert pair_key("s", "in", "out") == expected
    assert pair_key("s", "é", "") == hashlib.sha256(b'["s", "\\u00e9", ""]').hexdigest()
    assert is_key(expected)
    assert not is_key(expected[:-1])
    assert not is_key(expected.upper())
    assert not is_key(expected + "\n0")


def test_truncation_keeps_the_shorter_side_whole_or_halves_both() -> None:
    half = MAX_IO_CHARS // 2
    assert MAX_IO_CHARS == 48_000
    assert truncate_pair("a" * half, "b" * half) == ("a" * half, "b" * half, None)
    # the output is within half: it stays whole, the input gets the rest
    kept_in, kept_out, cut = truncate_pair("a" * 50_000, "b" * 100)
    assert kept_out == "b" * 100
    sha_in = hashlib.sha256(b"a" * 50_000).hexdigest()
    assert kept_in == "a" * 47_900 + f"\n…[TRUNCATED 2100 chars — sha256={sha_in}]"
    assert cut is not None
    assert (cut.input_chars, cut.output_chars) == (50_000, 100)
    assert cut.input_sha256 == sha_in
    assert cut.output_sha256 == hashlib.sha256(b"b" * 100).hexdigest()
    # the input is within half
    kept_in, kept_out, _ = truncate_pair("a" * 10, "b" * 48_000)
    assert kept_in == "a" * 10
    assert kept_out.startswith("b" * 47_990 + "\n…[TRUNCATED 10 chars")
    # both over half: each keeps half
    kept_in, kept_out, _ = truncate_pair("a" * 30_000, "b" * 30_000)
    assert kept_in.startswith("a" * half + "\n…[TRUNCATED 6000 chars")
    assert kept_out.startswith("b" * half + "\n…[TRUNCATED 6000 chars")
    # exactly half on the output side: kept whole
    kept_in, kept_out, _ = truncate_pair("a" * 30_000, "b" * half)
    assert kept_out == "b" * half and kept_in.startswith("a" * half + "\n…")
    kept_in, kept_out, _ = truncate_pair("a" * half, "b" * 30_000)
    assert kept_in == "a" * half and kept_out.startswith("b" * half + "\n…")


def test_truncation_digests_a_lone_surrogate_as_it_is() -> None:
    text = "\udc80" * 50_000
    _, _, cut = truncate_pair(text, "o")
    assert cut is not None
    assert cut.input_sha256 == hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def test_build_pair_keys_the_full_text_and_line_serialises() -> None:
    prov = Provenance(model="sim:x", family="sim", role="a")
    pair = build_pair(
        plan="p",
        run_id="r",
        step="a",
        item=2,
        ts="t",
        input="i" * 50_000,
        output="o",
        provenance=prov,
        capture_mode="backfill",
        resumed=True,
    )
    assert pair.key == pair_key("a", "i" * 50_000, "o")
    assert (pair.plan, pair.run_id, pair.step, pair.item, pair.ts) == ("p", "r", "a", 2, "t")
    assert pair.output == "o" and len(pair.input) < 50_000
    assert pair.truncated is not None and pair.truncated.input_chars == 50_000
    assert (pair.capture_mode, pair.resumed, pair.provenance) == ("backfill", True, prov)
    plain = build_pair(
        plan="p", run_id="r", step="a", item=None, ts="t", input="i", output="ö", provenance=prov
    )
    assert (plain.capture_mode, plain.resumed, plain.truncated) == ("capture", False, None)
    line = pair_line(plain)
    assert "\n" not in line and '"ö"' in line and ", " not in line and '": ' not in line
    assert json.loads(line)["schema"] == "ponder-trainpair/1"


def test_pair_line_refuses_bad_unicode_and_oversize() -> None:
    prov = Provenance(model="m", family="f", role="r")
    bad = build_pair(
        plan="p",
        run_id="r",
        step="a",
        item=None,
        ts="t",
        input="\udc80",
        output="o",
        provenance=prov,
    )
    with pytest.raises(Unserializable, match="not valid Unicode"):
        pair_line(bad)
    big = build_pair(
        plan="p" * MAX_LINE_BYTES,
        run_id="r",
        step="a",
        item=None,
        ts="t",
        input="i",
        output="o",
        provenance=prov,
    )
    with pytest.raises(Unserializable, match=f"over {MAX_LINE_BYTES}"):
        pair_line(big)
    # just under the ceiling is written
    probe = build_pair(
        plan="", run_id="r", step="a", item=None, ts="t", input="i", output="o", provenance=prov
    )
    room = MAX_LINE_BYTES - len(pair_line(probe).encode())
    fits = build_pair(
        plan="p" * room,
        run_id="r",
        step="a",
        item=None,
        ts="t",
        input="i",
        output="o",
        provenance=prov,
    )
    assert len(pair_line(fits).encode()) == MAX_LINE_BYTES


def test_clip_detail() -> None:
    assert DETAIL_CHARS == 500
    assert clip_detail("x" * 500) == "x" * 500
    assert clip_detail("x" * 501) == "x" * 500 + "…"


# -- preflight ------------------------------------------------------------------------------


def test_check_trace_refuses_a_loop_plan_without_trace_emit() -> None:
    check_trace(plan([agent("a")]))  # a ponder-plan/1 plan: nothing to check
    check_trace(plan([agent("a")], loop_plan={"trace_emit": True}))
    with pytest.raises(PlanFailure) as caught:
        check_trace(plan([agent("a")], loop_plan={"trace_emit": False}))
    assert caught.value.reason == Reason.TRACE_EMIT_REQUIRED
    assert "trace: {emit: true}" in caught.value.detail


def test_route_models_resolves_steps_children_judges_and_tournaments() -> None:
    p = plan(
        [
            agent("a", model="opus"),
            agent("c", dispatch="consumer"),
            agent(
                "j",
                model="sim:x",
                ensure=[
                    {"expr": "true"},
                    {"judged": {"statement": "fine"}},
                    {"judged": {"statement": "good", "model": "codex"}},
                ],
            ),
            {"id": "call", "kind": "run", "flow": "body"},
            {"id": "t", "kind": "tournament", "prompt": "x", "model": "sim:t"},
            {
                "id": "u",
                "kind": "tournament",
                "prompt": "x",
                "tournament": {"judge_model": "sim:judge"},
            },
        ],
        flows={"body": {"steps": [agent("k", family="openai")]}},
    )
    models = route_models(p, run_input(executors=EXECUTORS, default_family="mine"))
    assert models == {
        "a": "anthropic:claude-x",
        "c": "consumer",
        "j": "sim:x",
        "j#judged1": "sim:x",
        "j#judged2": "openai:gpt-x",
        "call/k": "openai:gpt-x",
        "t": "sim:t",
        "u": "sim:mine",
        "u/judge": "sim:judge",
    }


def test_route_models_names_every_unroutable_step() -> None:
    p = plan(
        [
            agent("a"),
            agent("j", model="sim:x", ensure=[{"judged": {"statement": "s", "model": "ghost"}}]),
            {"id": "t", "kind": "tournament", "prompt": "x"},
            {
                "id": "u",
                "kind": "tournament",
                "prompt": "x",
                "model": "sim:u",
                "tournament": {"judge_model": "nobody"},
            },
        ]
    )
    with pytest.raises(PlanFailure) as caught:
        route_models(p, run_input())
    assert caught.value.reason == Reason.PLAN_MODEL_UNROUTABLE
    assert caught.value.detail == (
        "no executor for: a (model (none)), j ensure[0] judged (model ghost), "
        "t (model (none), judge None), u (model sim:u, judge nobody); fix: give the step a "
        "provider:model, or --executor FAMILY=SPEC / --default-family"
    )


def test_declared_paths_are_sorted_and_unique() -> None:
    p = plan(
        [
            agent("a", artifacts={"reads": ["z.md", "a.md"], "writes": ["out/x"]}),
            agent("b", artifacts={"reads": ["a.md"]}),
        ]
    )
    assert declared_paths(p) == ["a.md", "out/x", "z.md"]


def test_qe_unchecked_and_waivers() -> None:
    p = plan(
        [
            agent("q", model="sim:x", role="qe", family="claude"),
            agent("r", model="sim:y", role="qe", family="openai"),
            agent("w", model="sim:z", family="claude"),
        ]
    )
    assert qe_unchecked(p, run_input()) == ["q", "r"]
    assert qe_unchecked(p, run_input(coder_family="claude")) == []
    models = {"q": "sim:x", "r": "sim:y", "w": "sim:z"}
    assert qe_waivers(p, models, run_input()) == []
    with pytest.raises(PlanFailure) as caught:
        qe_waivers(p, models, run_input(coder_family="claude"))
    assert caught.value.reason == Reason.SAME_FAMILY_QE_REFUSED
    assert caught.value.detail == (
        "QE step 'q' runs in the coder's family 'claude': its review is not independent; "
        "fix: give it another family, or --allow-same-family-qe"
    )
    waived = qe_waivers(p, models, run_input(coder_family="claude", allow_same_family_qe=True))
    assert waived == [
        (
            "q",
            "WAIVER (--allow-same-family-qe): QE step 'q' runs in the coder's family 'claude': "
            "its review is not independent; a re-QE is owed (reqe-due.json)",
        )
    ]


def test_reqe_debt_record() -> None:
    text = reqe_debt(run_id="r1", plan="p", coder_family="claude", steps=["q", "z"], emitted_at="T")
    assert text.endswith("}\n") and text.startswith('{\n  "schema"')
    assert json.loads(text) == {
        "schema": "ponder-reqe-due/1",
        "run_id": "r1",
        "plan": "p",
        "coder_family": "claude",
        "qe_family": "claude",
        "steps": ["q", "z"],
        "reason": "plan run r1: QE step(s) q, z ran in the coder's family claude under "
        "--allow-same-family-qe; an independent review is owed",
        "emitted_at": "T",
    }


def test_open_ledger_takes_the_override_then_the_plan_budget() -> None:
    p = plan([agent("a")], budget={"calls": 5, "wall_ms": 900_000, "usd": 2.0})
    ledger = open_ledger(p, run_input())
    assert (ledger.calls_limit, ledger.wall_limit_ms) == (5, 900_000)
    assert (ledger.budget.limits.max_usd, ledger.max_tokens) == (2.0, None)
    over = run_input(budget={"calls": 7, "wall_ms": 950_000, "tokens": 99, "usd": 1.5})
    ledger = open_ledger(p, over)
    assert (ledger.calls_limit, ledger.wall_limit_ms) == (7, 950_000)
    assert (ledger.budget.limits.max_usd, ledger.max_tokens) == (1.5, 99)
    partial = open_ledger(p, run_input(budget={"tokens": 5}))
    assert (partial.calls_limit, partial.wall_limit_ms) == (5, 900_000)
    assert (partial.budget.limits.max_usd, partial.max_tokens) == (2.0, 5)
    assert open_ledger(plan([agent("a")]), run_input()).budget.limits.max_usd is None


def test_open_ledger_checks_the_limit_that_applies() -> None:
    three = agent("a", retry={"max_attempts": 3})
    with pytest.raises(PlanFailure) as caught:
        open_ledger(plan([agent("a")], budget={"calls": 5}), run_input(budget={"wall_ms": 1}))
    assert caught.value.reason == Reason.RESERVATION_UNSATISFIABLE
    assert caught.value.detail.startswith("wall_ms=1 is below the 900000 ms")
    with pytest.raises(PlanFailure, match="calls=2 is below the 3"):
        open_ledger(plan([three], budget={"calls": 2}), run_input())
    with pytest.raises(PlanFailure, match="calls=2 is below the 3"):  # the plan's calls still
        open_ledger(plan([three], budget={"calls": 2}), run_input(budget={"wall_ms": 999_999}))
    with pytest.raises(PlanFailure, match="wall_ms=5 is below"):  # the plan's wall_ms still
        open_ledger(plan([three], budget={"wall_ms": 5}), run_input(budget={"calls": 3}))
    with pytest.raises(PlanFailure, match="calls=2 is below the 3"):
        open_ledger(plan([three]), run_input(budget={"calls": 2}))
    with pytest.raises(PlanFailure, match="wall_ms=7 is below"):
        open_ledger(plan([three]), run_input(budget={"wall_ms": 7}))
    # the override wins over the plan's own limit
    ledger = open_ledger(plan([three], budget={"calls": 2}), run_input(budget={"calls": 3}))
    assert ledger.calls_limit == 3


def test_a_qe_steps_family_is_the_one_its_model_names() -> None:
    # "opus" is claude whichever executor runs it
    p = plan([agent("q", model="opus", role="qe")])
    with pytest.raises(PlanFailure) as caught:
        qe_waivers(p, {"q": "openai:gpt-x"}, run_input(coder_family="claude"))
    assert caught.value.reason == Reason.SAME_FAMILY_QE_REFUSED
    assert qe_waivers(p, {"q": "anthropic:claude-x"}, run_input(coder_family="openai")) == []


def test_default_calls_differ_only_for_a_region() -> None:
    region = [{"id": "f", "kind": "fanout", "fanout": {"over": [1, 2, 3], "chain": ["m"]}}]
    assert not default_calls_differ(plan([agent("a")]))
    assert default_calls_differ(plan([*region, agent("m")]))
    assert not default_calls_differ(
        plan([{**region[0], "fanout": {"over": [1], "chain": ["m"]}}, agent("m")])
    )
