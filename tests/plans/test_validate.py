"""Plan validation: one case per error code, all errors reported, paths and messages."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.plans.helpers import LOOP_EXAMPLE_PATH, base, check, codes, step
from workflows.plan.errors import CODES, PlanError, PlanInvalid
from workflows.plan.model import AgentStep, FanoutStep, GateStep, Plan
from workflows.plan.rules import check_plan
from workflows.plan.validate import load_plan, validate_document, validate_text

Doc = dict[str, Any]
LOOP_EXAMPLE = LOOP_EXAMPLE_PATH
ROOT = Path(__file__).resolve().parents[2]


def on(step_id: str, **fields: Any) -> Callable[[Doc], None]:
    def apply(doc: Doc) -> None:
        target = step(doc, step_id)
        for key, value in fields.items():
            if value is _DROP:
                target.pop(key, None)
            else:
                target[key] = value

    return apply


def top(**fields: Any) -> Callable[[Doc], None]:
    def apply(doc: Doc) -> None:
        doc.update(fields)

    return apply


def add(new_step: Doc) -> Callable[[Doc], None]:
    def apply(doc: Doc) -> None:
        doc["steps"].append(new_step)

    return apply


_DROP = object()
FLOW: Doc = {
    "input": {"topic": "string", "depth": "integer?"},
    "output": "${steps.check.output}",
    "steps": [
        {"id": "write", "kind": "agent", "prompt": "Write on ${input.topic}."},
        {"id": "check", "kind": "gate", "deps": ["write"], "prompt": "Check it.",
         "fail_route": "write", "max_redos": 1},
    ],
}  # fmt: skip
RUN: Doc = {"id": "call", "kind": "run", "deps": ["t"], "flow": "review", "with": {"topic": "t"}}


def on_flow(**fields: Any) -> Callable[[Doc], None]:
    """Declare the review flow (and a run step calling it), with its first step bent."""

    def apply(doc: Doc) -> None:
        flow = json.loads(json.dumps(FLOW))
        flow["steps"][0].update(fields)
        doc["flows"] = {"review": flow}
        doc["steps"].append(dict(RUN))

    return apply


def big_walk(doc: Doc) -> None:
    """Ten run steps of a 1,000-step flow: 10,000 children beside the plan's own steps."""
    chain = [{"id": f"s{k}", "kind": "agent", "prompt": "x"} for k in range(1000)]
    doc["flows"] = {"big": {"steps": chain}}
    doc["steps"] += [{"id": f"r{k}", "kind": "run", "flow": "big"} for k in range(10)]


def call(**fields: Any) -> Callable[[Doc], None]:
    """Declare the review flow and a run step calling it, the run step bent."""

    def apply(doc: Doc) -> None:
        doc["flows"] = {"review": json.loads(json.dumps(FLOW))}
        doc["steps"].append(RUN | fields)

    return apply


def on_flow_header(**fields: Any) -> Callable[[Doc], None]:
    def apply(doc: Doc) -> None:
        doc["flows"] = {"review": {**json.loads(json.dumps(FLOW)), **fields}}
        doc["steps"].append(dict(RUN))

    return apply


def _set(expression: str) -> Doc:
    """A set step at the end of the base plan (steps[7]) with one value."""
    return {"id": "computed", "kind": "set", "deps": ["t"], "set": {"v": expression}}


def _late_dep(doc: Doc) -> None:
    doc["steps"].append({"id": "late", "kind": "agent", "prompt": "x"})
    step(doc, "ask")["deps"] = ["late"]


def _consumer_in_worktrees(doc: Doc) -> None:
    step(doc, "fan")["fanout"]["isolation"] = "worktree"
    step(doc, "fan.one")["dispatch"] = "consumer"


# (code, mutation of the valid base plan, expected path). Every code a document can produce
# appears here or in TEXT_CASES; test_every_code_has_a_case fails on a code without one.
DOC_CASES: list[tuple[str, Callable[[Doc], None], str]] = [
    ("document.not_object", add("just a string"), "steps[7]"),
    ("schema.unknown", top(schema="ponder-plan/2"), "schema"),
    ("field.unknown", top(extras=1), "extras"),
    ("field.unknown", top(loop_plan={"trace_emit": True}), "loop_plan"),
    (
        "field.unknown",
        on("draft", retry={"max_attempts": 1, "backoff": 2}),
        "steps[1].retry.backoff",
    ),
    ("field.missing", on("draft", prompt=_DROP), "steps[1].prompt"),
    ("field.missing", lambda d: d.pop("name"), "name"),
    ("field.type", on("draft", idempotent="yes"), "steps[1].idempotent"),
    ("field.type", top(steps={"a": 1}), "steps"),
    ("field.range", on("review", max_redos=-1), "steps[2].max_redos"),
    ("field.range", top(steps=[]), "steps"),
    ("field.pattern", on("draft", id="Draft!"), "steps[1].id"),
    ("field.choice", on("draft", deliverable="email"), "steps[1].deliverable"),
    (
        "field.choice",
        on("draft", retry={"max_attempts": 1, "on": ["flaky"]}),
        "steps[1].retry.on[0]",
    ),
    ("value.not_finite", top(budget={"usd": float("nan")}), "budget.usd"),
    (
        "field.choice",
        on("fan", fanout={"over": [1], "chain": ["fan.one"], "isolation": "git"}),
        "steps[3].fanout.isolation",
    ),
    ("feature.not_available", top(checkpoints={}), "checkpoints"),
    ("fanout.isolation", _consumer_in_worktrees, "steps[3].fanout.isolation"),
    ("step.kind_unknown", add({"id": "z", "kind": "shell"}), "steps[7].kind"),
    ("step.field_not_for_kind", on("draft", fanout={}), "steps[1].fanout"),
    ("step.id_duplicate", add({"id": "draft", "kind": "agent", "prompt": "x"}), "steps[7].id"),
    ("deps.unknown", on("draft", deps=["nope"]), "steps[1].deps[0]"),
    ("deps.not_earlier", lambda d: _late_dep(d), "steps[0].deps[0]"),
    ("deps.cycle", on("draft", deps=["draft"]), "steps[1].deps[0]"),
    ("deps.duplicate", on("review", deps=["draft", "draft"]), "steps[2].deps[1]"),
    ("ref.syntax", on("draft", prompt="Use ${input.topic"), "steps[1].prompt"),
    ("ref.syntax", on("draft", prompt="Use ${env.HOME}"), "steps[1].prompt"),
    ("ref.unknown_step", on("draft", prompt="${steps.ghost.output}"), "steps[1].prompt"),
    ("ref.not_earlier", on("draft", prompt="${steps.review.output}"), "steps[1].prompt"),
    ("ref.chain_member", on("t", prompt="${steps.fan.one.output}"), "steps[6].prompt"),
    ("retry.needs_idempotent", on("draft", idempotent=False), "steps[1].retry.max_attempts"),
    ("deliverable.needs_writes", on("draft", artifacts={}), "steps[1].deliverable"),
    (
        "path.escapes_root",
        on("draft", artifacts={"writes": ["../out.md"]}),
        "steps[1].artifacts.writes[0]",
    ),
    (
        "path.escapes_root",
        on("draft", artifacts={"reads": ["/etc/passwd"], "writes": ["a"]}),
        "steps[1].artifacts.reads[0]",
    ),
    (
        "path.escapes_root",
        on("draft", artifacts={"writes": ["a\x07b"]}),
        "steps[1].artifacts.writes[0]",
    ),
    ("gate.mode", on("ok", prompt="also a model gate?"), "steps[5].prompt"),
    ("gate.mode", on("review", prompt=_DROP), "steps[2]"),
    ("gate.route", on("review", fail_route="t"), "steps[2].fail_route"),
    ("gate.route", on("review", fail_route="ask"), "steps[2].fail_route"),
    ("gate.route", on("review", fail_route="terminal:"), "steps[2].fail_route"),
    ("gate.redos_need_route", on("review", fail_route="terminal:rejected"), "steps[2].max_redos"),
    ("gate.redos_need_route", on("review", fail_route=_DROP), "steps[2].max_redos"),
    ("gate.target", on("ok", gate={"on_approve": "ghost"}), "steps[5].gate.on_approve"),
    ("gate.target", on("ok", gate={"on_kill": "ok"}), "steps[5].gate.on_kill"),
    ("gate.revise_needs_rounds", on("ok", gate={"on_revise": "draft"}), "steps[5].gate.max_rounds"),
    (
        "gate.revise_not_ancestor",
        on("ok", gate={"on_revise": "t", "max_rounds": 1}),
        "steps[5].gate.on_revise",
    ),
    (
        "gate.deadline",
        on("ok", gate={"deadline": 999, "default": "kill"}),
        "steps[5].gate.deadline",
    ),
    ("gate.deadline", on("ok", gate={"deadline": 2000}), "steps[5].gate.default"),
    ("gate.deadline", on("ok", gate={"default": "approve"}), "steps[5].gate.deadline"),
    (
        "gate.deadline",
        on("ok", gate={"deadline": 2000, "default": "revise"}),
        "steps[5].gate.default",
    ),
    (
        "gate.deadline",
        on("ok", gate={"deadline": 2000, "default": "kill", "escalate": {"after_ms": 2000}}),
        "steps[5].gate.escalate.after_ms",
    ),
    (
        "gate.deadline",
        on("ok", gate={"escalate": {"after_ms": 90 * 86_400_000 + 1}}),
        "steps[5].gate.escalate.after_ms",
    ),
    (
        "fanout.chain",
        on("fan", fanout={"over": [1], "chain": ["review"]}),
        "steps[3].fanout.chain[0]",
    ),
    (
        "fanout.chain",
        on("fan", fanout={"over": [1], "chain": ["ghost"]}),
        "steps[3].fanout.chain[0]",
    ),
    (
        "fanout.chain",
        on("fan", fanout={"over": [1], "chain": ["fan.one", "fan.one"]}),
        "steps[3].fanout.chain[1]",
    ),
    ("fanout.member_deps", on("fan.one", deps=["t"]), "steps[4].deps[0]"),
    ("fanout.member_referenced", on("t", deps=["fan.one"]), "steps[6].deps[0]"),
    (
        "fanout.max_required",
        on("fan", fanout={"over": "${steps.draft.output.items}", "chain": ["fan.one"]}),
        "steps[3].fanout.max_fanout",
    ),
    (
        "fanout.concurrency",
        on("fan", fanout={"over": [1, 2], "chain": ["fan.one"], "max_fanout": 2, "concurrency": 3}),
        "steps[3].fanout.concurrency",
    ),
    ("consumer.not_allowed", on("review", dispatch="consumer"), "steps[2].dispatch"),
    ("field.choice", on("draft", dispatch="someone"), "steps[1].dispatch"),
    (
        "checkpoint.duplicate",
        lambda d: (on("draft", checkpoint="c")(d), on("review", checkpoint="c")(d)),
        "steps[2].checkpoint",
    ),
    ("checkpoint.not_top_level", on("fan.one", checkpoint="c"), "steps[4].checkpoint"),
    ("field.pattern", on("draft", checkpoint="no spaces"), "steps[1].checkpoint"),
    (
        "checkpoint.too_many",
        lambda d: d["steps"].extend(
            {"id": f"c{n}", "kind": "agent", "prompt": "x", "checkpoint": f"l{n}"}
            for n in range(51)
        ),
        "steps[57].checkpoint",
    ),
    (
        "plan.too_large",
        on("fan", fanout={"over": list(range(5_000)), "chain": ["fan.one"], "concurrency": 256}),
        "steps[3].fanout.over",
    ),
    (
        "fanout.over",
        on(
            "fan",
            fanout={"over": "items: ${steps.draft.output}", "chain": ["fan.one"], "max_fanout": 2},
        ),
        "steps[3].fanout.over",
    ),
    ("fanout.over", on("fan", fanout={"over": 7, "chain": ["fan.one"]}), "steps[3].fanout.over"),
    (
        "field.pattern",
        on("fan", fanout={"over": [1], "chain": ["fan.one"], "join": "most"}),
        "steps[3].fanout.join",
    ),
    (
        "join.quorum_unreachable",
        on(
            "fan",
            fanout={
                "over": ["a", "a", "b"],
                "chain": ["fan.one"],
                "dedup": True,
                "join": "quorum:3",
            },
        ),
        "steps[3].fanout.join",
    ),
    ("on_fail.target", on("draft", on_fail="ask"), "steps[1].on_fail"),
    ("on_fail.target", on("fan.one", on_fail="t"), "steps[4].on_fail"),
    ("contract.unknown", on("draft", out="Report"), "steps[1].out"),
    (
        "contract.type",
        top(contracts={"Findings": {"items": "strang[]"}}),
        "contracts.Findings.items",
    ),
    (
        "contract.type",
        top(contracts={"Findings": {"items": "string[]]"}}),
        "contracts.Findings.items",
    ),
    (
        "pause.arg_duplicate",
        add({"id": "again", "kind": "pause", "pause": {"state": "S", "resume_arg": "topic"}}),
        "steps[7].pause.resume_arg",
    ),
    (
        "pause.schema",
        on("ask", pause={"state": "S", "resume_arg": "topic", "schema": {"type": "strng"}}),
        "steps[0].pause.schema.type",
    ),
    (
        "pause.schema",
        on("ask", pause={"state": "S", "resume_arg": "topic", "schema": {"properties": {"a": 1}}}),
        "steps[0].pause.schema.properties.a",
    ),
    (
        "pause.schema",
        on("ask", pause={"state": "S", "resume_arg": "topic", "schema": {"pattern": "("}}),
        "steps[0].pause.schema.pattern",
    ),
    ("tournament.profile", on("t", tournament={"profile": "huge"}), "steps[6].tournament.profile"),
    ("expr.syntax", add(_set("1 +")), "steps[7].set.v"),
    ("expr.too_complex", add(_set("x" * 2001)), "steps[7].set.v"),
    ("expr.too_complex", add(_set("[1].map(a, [1].map(b, [1].map(c, c)))")), "steps[7].set.v"),
    ("expr.unknown_name", add(_set("result.score")), "steps[7].set.v"),
    ("expr.unknown_name", on("draft", ensure=[{"expr": "item == 1"}]), "steps[1].ensure[0].expr"),
    ("expr.function", add(_set("timestamp('2024-01-01T00:00:00Z')")), "steps[7].set.v"),
    ("expr.function", add(_set("[1].reduce(a, b, 0, a + b)")), "steps[7].set.v"),
    ("expr.dynamic_ref", add(_set("steps[input.key]")), "steps[7].set.v"),
    ("expr.dynamic_ref", add(_set("steps.draft")), "steps[7].set.v"),
    ("ref.unknown_step", add(_set('steps["ghost"].x')), "steps[7].set.v"),
    (
        "ref.not_earlier",
        on("draft", ensure=[{"expr": 'steps["t"] != ""'}]),
        "steps[1].ensure[0].expr",
    ),
    ("ref.chain_member", add(_set('steps["fan.one"]')), "steps[7].set.v"),
    ("ensure.form", on("draft", ensure=[{}]), "steps[1].ensure[0]"),
    (
        "ensure.form",
        on("draft", ensure=[{"expr": "true", "file_exists": "a"}]),
        "steps[1].ensure[0]",
    ),
    (
        "path.escapes_root",
        on("draft", ensure=[{"expr": "true"}, {"file_exists": "../${input.topic}"}]),
        "steps[1].ensure[1].file_exists",
    ),
    ("field.range", on("draft", iterate={"max": 101, "until": "true"}), "steps[1].iterate.max"),
    (
        "step.field_not_for_kind",
        on("review", iterate={"max": 2, "until": "true"}),
        "steps[2].iterate",
    ),
    ("budget.unsatisfiable", top(budget={"calls": 2}), "budget.calls"),
    ("budget.unsatisfiable", top(budget={"wall_ms": 1000}), "budget.wall_ms"),
    ("budget.unsatisfiable", on("draft", budget={"calls": 1}), "steps[1].budget.calls"),
    ("budget.unsatisfiable", on("fan", budget={"wall_ms": 10}), "steps[3].budget.wall_ms"),
    ("budget.unsatisfiable", call(budget={"calls": 2}), "steps[7].budget.calls"),
    ("budget.chain_member", on("fan.one", budget={"tokens": 100}), "steps[4].budget"),
    ("when.chain_member", on("fan.one", when="true"), "steps[4].when"),
    ("flow.unknown", call(flow="ghost"), "steps[7].flow"),
    ("flow.step_kind", top(flows={"f": {"steps": [{"id": "p", "kind": "pause"}]}}),
     "flows.f.steps[0].kind"),
    ("flow.step_kind", top(flows={"f": {"steps": [RUN | {"id": "again"}]}}),
     "flows.f.steps[0].kind"),
    ("flow.with", call(**{"with": {"topic": "t", "mood": "${steps.t.output}"}}),
     "steps[7].with.mood"),
    ("flow.with", call(**{"with": {}}), "steps[7].with"),
    ("flow.with_too_deep", call(**{"with": {"topic": json.loads("[" * 40 + "]" * 40)}}),
     "steps[7].with.topic"),
    ("flow.with", on_flow(prompt="Write on ${input.subject}"), "flows.review.steps[0].prompt"),
    ("flow.output", on_flow_header(output="${steps.ghost.output}"), "flows.review.output"),
    ("flow.output", on_flow_header(output="the last one"), "flows.review.output"),
    ("ref.not_earlier", on_flow(prompt="${steps.check.output}"), "flows.review.steps[0].prompt"),
    ("ref.unknown_step", on_flow(prompt="${steps.draft.output}"), "flows.review.steps[0].prompt"),
    ("gate.route", on_flow(kind="gate", fail_route="draft"), "flows.review.steps[0].fail_route"),
    ("deps.unknown", on_flow(deps=["t"]), "flows.review.steps[0].deps[0]"),
    ("retry.needs_idempotent", on_flow(retry={"max_attempts": 2}),
     "flows.review.steps[0].retry.max_attempts"),
    ("on_fail.target", call(on_fail="t"), "steps[7].on_fail"),
    ("ref.not_earlier", call(**{"with": {"topic": "${steps.call.output}"}}), "steps[7].with.topic"),
    ("contract.unknown", on_flow_header(input="Ghost"), "flows.review.input"),
    ("contract.type", on_flow_header(input={"topic": "strang"}), "flows.review.input.topic"),
    ("field.pattern", top(flows={"Review": FLOW}), "flows.Review"),
    ("flow.too_large", big_walk, "steps"),
    ("field.unknown", on_flow_header(steps_per_item=3), "flows.review.steps_per_item"),
]  # fmt: skip

# Codes only text can produce: (code, text, filename, expected path).
TEXT_CASES: list[tuple[str, str, str | None, str]] = [
    ("document.syntax", '{"schema": ', "p.json", ""),
    ("document.syntax", "steps: [a\n  - b", "p.yaml", ""),
    ("document.duplicate_key", '{"schema": "ponder-plan/1", "schema": "ponder-plan/1"}', None, ""),
    (
        "value.not_finite",
        '{"schema": "ponder-plan/1", "budget": {"usd": NaN}}',
        "p.json",
        "budget.usd",
    ),
    ("value.not_finite", '{"budget": {"usd": 1e999}}', "p.json", "budget.usd"),
    ("value.not_finite", "budget: {usd: .inf}", "p.yaml", "budget.usd"),
    ("value.not_json", "name: 2024-01-01", "p.yaml", "name"),
    ("value.not_json", "contracts: {1: x}", "p.yaml", "contracts"),
    ("value.not_json", "tags: !!set {a, b}", "p.yaml", "tags"),
    ("document.syntax", "a: &a [*a]", "p.yaml", ""),
    ("document.too_large", "x" * (8 * 1024 * 1024 + 1), "p.yaml", ""),
    ("document.not_object", "- 1\n- 2\n", "p.yaml", ""),
]

LOOP_CASES: list[tuple[str, Callable[[Doc], None], str]] = [
    ("loop.unsupported", lambda d: d["fanouts"][0].update(overflow="spill"), "fanouts[0].overflow"),
    ("loop.unsupported", lambda d: d["steps"][2].update({"x-role": "judge"}), "steps[2].x-role"),
    ("loop.unsupported", lambda d: d.update(flows={}), "flows"),
    ("loop.unsupported", lambda d: d["steps"][1].update(dispatch="consumer"), "steps[1].dispatch"),
    ("loop.unsupported", lambda d: d["steps"][1].update(checkpoint="c"), "steps[1].checkpoint"),
    ("loop.unsupported", lambda d: d["steps"][1].update(kind="run"), "steps[1].kind"),
    (
        "loop.unsupported",
        lambda d: d["steps"][1].update(budget={"maxAgents": 2, "tokens": 9}),
        "steps[1].budget.tokens",
    ),
    (
        "loop.unsupported",
        lambda d: d.update(subsystems={"trainingPairs": True}),
        "subsystems",
    ),
    (
        "loop.unsupported",
        lambda d: d["steps"][1].update(ensure=[{"expr": "true"}]),
        "steps[1].ensure",
    ),
    (
        "loop.unsupported",
        lambda d: d["steps"][1].update(iterate={"max": 2, "until": "true"}),
        "steps[1].iterate",
    ),
    (
        "loop.unsupported",
        lambda d: d["steps"].append({"stepId": "s", "kind": "set", "set": {"a": "1"}}),
        "steps[7].kind",
    ),
    (
        "loop.fold_unknown",
        lambda d: d["gates"].append({"stepId": "ghost", "maxRedos": 1}),
        "gates[1].stepId",
    ),
    ("loop.fold_duplicate", lambda d: d["gates"].append({"stepId": "review"}), "gates[1].stepId"),
    ("loop.fold_missing", lambda d: d["fanouts"].clear(), "steps[4]"),
    ("loop.fold_missing", lambda d: d["pauses"].clear(), "steps[3].pauseState"),
    ("field.unknown", lambda d: d.update(checkpointing=True), "checkpointing"),
    ("field.unknown", lambda d: d["steps"][1].update(timeoutMs=5), "steps[1].timeoutMs"),
    ("gate.route", lambda d: d["gates"][0].update(failRoute="notes"), "gates[0].failRoute"),
    ("field.pattern", lambda d: d["joins"][0].update(joinPolicy="most"), "joins[0].joinPolicy"),
    (
        "retry.needs_idempotent",
        lambda d: d["steps"][1].pop("idempotent"),
        "steps[1].retry.maxAttempts",
    ),
    ("field.range", lambda d: d["fanouts"][0].update(maxFanout=0), "fanouts[0].maxFanout"),
    ("field.missing", lambda d: d["steps"][1].pop("stepId"), "steps[1].stepId"),
]


@pytest.mark.parametrize(
    ("code", "mutate", "path"), DOC_CASES, ids=[f"{c[0]}@{c[2]}" for c in DOC_CASES]
)
def test_each_rule_reports_its_code_and_path(
    code: str, mutate: Callable[[Doc], None], path: str
) -> None:
    doc = base()
    mutate(doc)
    result = check(doc)
    assert not result.ok and result.plan is None
    assert (code, path) in codes(result), [e.line() for e in result.errors]
    error = next(e for e in result.errors if (e.code, e.path) == (code, path))
    assert "fix:" in error.message


@pytest.mark.parametrize(
    ("code", "text", "filename", "path"), TEXT_CASES, ids=[c[0] for c in TEXT_CASES]
)
def test_text_level_errors(code: str, text: str, filename: str | None, path: str) -> None:
    result = validate_text(text, filename=filename)
    assert (code, path) in codes(result), [e.line() for e in result.errors]


def _loop() -> Doc:
    return json.loads(LOOP_EXAMPLE.read_text())


@pytest.mark.parametrize(
    ("code", "mutate", "path"), LOOP_CASES, ids=[f"{c[0]}@{c[2]}" for c in LOOP_CASES]
)
def test_loop_plan_errors_point_at_what_the_author_wrote(
    code: str, mutate: Callable[[Doc], None], path: str
) -> None:
    doc = _loop()
    mutate(doc)
    result = validate_document(doc)
    assert result.form == "loop-plan/1"
    assert (code, path) in codes(result), [e.line() for e in result.errors]


def test_every_code_has_a_case() -> None:
    covered = (
        {c for c, _, _ in DOC_CASES} | {c for c, *_ in TEXT_CASES} | {c for c, _, _ in LOOP_CASES}
    )
    covered |= {"document.unreadable"}  # the CLI's: test_cli.py::test_unreadable_file
    covered |= {"field.invalid"}  # the fallback: test_unmapped_pydantic_errors_are_field_invalid
    # a stratum flow's: each has a case in test_stratum_flows.py (held there to that rule)
    covered |= {c for c in CODES if c.startswith("stratum.")}
    unused = set(CODES) - covered
    assert unused == set()


def test_worktree_isolation_is_accepted() -> None:
    doc = base()
    step(doc, "fan")["fanout"]["isolation"] = "worktree"
    result = validate_document(doc)
    assert result.errors == [] and result.plan is not None
    fan = result.plan.step("fan")
    assert isinstance(fan, FanoutStep) and fan.fanout.isolation == "worktree"
    assert FanoutStep.model_validate(step(base(), "fan")).fanout.isolation == "none"


def test_isolation_takes_engine_members() -> None:
    """A member an external executor runs (``dispatch: consumer``) never sees the item's
    worktree: ``fanout.isolation`` at the fan-out's field (and section 7's
    ``consumer.not_allowed`` at the member's)."""
    doc = base()
    _consumer_in_worktrees(doc)
    found = codes(validate_document(doc))
    assert ("fanout.isolation", "steps[3].fanout.isolation") in found
    assert ("consumer.not_allowed", "steps[4].dispatch") in found
    step(doc, "fan.one")["dispatch"] = "engine"
    assert validate_document(doc).errors == []


def test_unknown_codes_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown plan error code"):
        PlanError("made.up", "", "x")


def test_all_errors_are_reported_not_just_the_first() -> None:
    doc = base()
    doc["extras"] = 1
    step(doc, "draft")["fanout"] = {}
    step(doc, "review")["deps"] = ["ghost"]
    step(doc, "fan")["fanout"]["join"] = "quorum:9"
    step(doc, "t")["tournament"] = {"profile": "huge"}
    doc["steps"].append({"id": "z", "kind": "shell"})
    assert set(codes(check(doc))) == {
        ("field.unknown", "extras"),
        ("step.field_not_for_kind", "steps[1].fanout"),
        ("deps.unknown", "steps[2].deps[0]"),
        ("join.quorum_unreachable", "steps[3].fanout.join"),
        ("tournament.profile", "steps[6].tournament.profile"),
        # draft is no longer upstream of the human gate once review depends on a ghost
        ("gate.revise_not_ancestor", "steps[5].gate.on_revise"),
        ("step.kind_unknown", "steps[7].kind"),
    }


def test_one_bad_step_does_not_hide_the_rules_of_the_others() -> None:
    doc = base()
    step(doc, "draft")["idempotent"] = "maybe"  # draft fails to parse
    step(doc, "review")["fail_route"] = "ghost"
    result = check(doc)
    assert ("field.type", "steps[1].idempotent") in codes(result)
    assert ("gate.route", "steps[2].fail_route") in codes(result)
    # draft's id still counts: review's dep on it and its reference are not reported
    assert not any(e.code in ("deps.unknown", "ref.unknown_step") for e in result.errors)


def test_the_valid_base_and_the_loop_example_load() -> None:
    plan = load_plan(base())
    assert isinstance(plan.step("draft"), AgentStep)
    loop = load_plan(LOOP_EXAMPLE.read_text(), filename=LOOP_EXAMPLE.name)
    assert loop.loop_plan is not None and loop.loop_plan.trace_emit
    review = loop.step("review")
    assert isinstance(review, GateStep)
    assert (review.fail_route, review.max_redos, review.role) == ("code", 2, "qe")
    notes = loop.step("notes")
    assert isinstance(notes, FanoutStep)
    assert notes.fanout.over == ["changelog", "blog", "mailing-list"]
    assert (notes.fanout.max_fanout, notes.fanout.join, notes.fanout.chain) == (
        3,
        "quorum:2",
        ["notes.write"],
    )
    pause = loop.step("approval")
    assert pause.kind == "pause" and pause.pause.resume_arg == "approved_by"
    code = loop.step("code")
    assert isinstance(code, AgentStep)
    assert (code.retry.max_attempts, code.retry.on, code.budget.max_agents) == (
        2,
        ["timeout", "transport"],
        2,
    )
    assert code.vendor("x-phase") == "code"
    assert [s.id for s in loop.steps] == [
        "plan",
        "code",
        "review",
        "approval",
        "notes",
        "notes.write",
    ]


def test_a_join_step_folds_into_its_fanout_and_deps_on_it_follow() -> None:
    doc = _loop()
    doc["steps"].append(
        {
            "stepId": "publish",
            "kind": "agent",
            "deps": ["notes.join"],
            "prompt": "p",
            "model": "sonnet",
        }
    )
    plan = load_plan(doc)
    assert plan.step("publish").deps == ["notes"]


def test_a_loop_plan_without_trace_emit_validates_and_records_it() -> None:
    doc = _loop()
    del doc["trace"]
    plan = load_plan(doc)
    assert plan.loop_plan is not None and plan.loop_plan.trace_emit is False
    (note,) = validate_document(doc).notes
    assert "trace-emit-required" in note
    assert validate_document(_loop()).notes == []


def test_yaml_and_json_give_the_same_plan() -> None:
    import yaml

    doc = base()
    from_json = load_plan(json.dumps(doc), filename="p.json")
    from_yaml = load_plan(yaml.safe_dump(doc), filename="p.yaml")
    assert from_json == from_yaml


def test_vendor_keys_survive_and_round_trip_through_json() -> None:
    doc = base()
    step(doc, "draft")["x-sim"] = {"outputs": ['{"items": []}']}
    doc["x-owner"] = "team"
    plan = load_plan(doc)
    again = Plan.model_validate_json(plan.model_dump_json())
    assert again == plan
    assert again.step("draft").vendor("x-sim") == {"outputs": ['{"items": []}']}
    assert check_plan(again) == []  # a decoded workflow input passes the same rules


def test_load_plan_raises_with_every_error() -> None:
    doc = base()
    step(doc, "draft")["deps"] = ["ghost"]
    doc["extras"] = 1
    with pytest.raises(PlanInvalid) as info:
        load_plan(doc)
    assert {e.code for e in info.value.errors} == {"deps.unknown", "field.unknown"}


def test_messages_name_field_rule_and_fix() -> None:
    doc = base()
    step(doc, "review")["max_redos"] = 2
    step(doc, "review")["fail_route"] = "terminal:rejected"
    (error,) = check(doc).errors
    assert error.line() == (
        "steps[2].max_redos: [gate.redos_need_route] max_redos=2 has nothing to redo: "
        "fix: set fail_route to an earlier agent step, or max_redos: 0"
    )


def test_a_human_gate_round_trip_is_not_mistaken_for_a_model_gate() -> None:
    plan = load_plan(base())
    assert check_plan(Plan.model_validate(plan.model_dump())) == []


def test_examples_directory_plans_validate() -> None:
    files = sorted((ROOT / "examples" / "plans").glob("*.*"))
    assert len(files) >= 3
    for path in files:
        result = validate_text(path.read_text(), filename=path.name)
        assert result.ok, (path.name, [e.line() for e in result.errors])


def test_unmapped_pydantic_errors_are_field_invalid() -> None:
    from workflows.plan.shape import code_of

    assert code_of({"type": "value_error", "msg": "Value error, odd"}) == "field.invalid"
    assert code_of({"type": "int_type"}) == "field.type"
    assert code_of({"type": "greater_than_equal"}) == "field.range"


def test_strings_are_not_coerced_to_booleans_or_numbers() -> None:
    doc = base()
    step(doc, "draft")["idempotent"] = "yes"
    step(doc, "review")["max_redos"] = "1"
    assert {("field.type", "steps[1].idempotent"), ("field.type", "steps[2].max_redos")} <= set(
        codes(check(doc))
    )


def test_union_branch_names_stay_out_of_paths() -> None:
    doc = base()
    step(doc, "fan")["fanout"]["over"] = ["a", float("inf")]
    step(doc, "draft")["x-sim"] = {"outputs": [float("nan")]}
    assert set(codes(check(doc))) == {
        ("value.not_finite", "steps[3].fanout.over[1]"),
        ("value.not_finite", "steps[1].x-sim.outputs[0]"),
    }


def test_yaml_on_and_yes_stay_strings_so_retry_on_works() -> None:
    text = (
        "schema: ponder-plan/1\nname: y\nsteps:\n  - {id: a, kind: agent, prompt: p, "
        "idempotent: true, retry: {max_attempts: 2, on: [timeout]}}\n"
    )
    plan = load_plan(text, filename="p.yaml")
    first = plan.steps[0]
    assert isinstance(first, AgentStep) and first.retry.on == ["timeout"]
    assert (
        validate_text("a: yes\nschema: ponder-plan/1", filename="p.yaml").errors[0].code
        == "field.unknown"
    )
