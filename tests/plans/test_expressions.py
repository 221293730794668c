"""CEL in plans, the pure part: the analysis of a text (every code and bound), the plan-wide
ceilings, reservations counting iterations and judges, and the evaluator's JSON conversions.
Hypothesis drives the analyser with arbitrary text and with generated valid expressions."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import celpy
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from activities.plan.cel_child import to_cel, to_json
from client.plan_cli import plan as plan_cli
from tests.plans.run_helpers import agent, plan_doc
from workflows.plan.boundaries import boundaries, plan_totals
from workflows.plan.errors import CODES
from workflows.plan.expression_parser import build_parser
from workflows.plan.expressions import (
    MAX_CHARS,
    MAX_PLAN_EXPRESSIONS,
    analyse,
    unknown_names,
)
from workflows.plan.predicates import AttemptScope, bindings, iteration_prompt, judge_reason
from workflows.plan.validate import load_plan, validate_document

EXPR_CODES = {c for c in CODES if c.startswith("expr.")}


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("1 +", "expr.syntax"),
        ("", "expr.syntax"),
        ("a ? b", "expr.syntax"),
        ("x" * (MAX_CHARS + 1), "expr.too_complex"),
        (" + ".join(["a"] * 201), "expr.too_complex"),  # 401 nodes
        ("(" * 33 + "1" + ")" * 33, "expr.too_complex"),  # depth 34
        ("l.all(a, l.all(b, l.all(c, true)))", "expr.too_complex"),  # nested 3 deep
        ("timestamp('2024-01-01T00:00:00Z') > 0", "expr.function"),
        ("duration('1s')", "expr.function"),
        ("result.getHours()", "expr.function"),
        ("l.reduce(a, b, 0, a + b)", "expr.function"),
        ("l.map(x, y, x)", "expr.function"),
        ("has(result)", "expr.function"),
        ("Msg{a: 1}", "expr.function"),
        ("all(l, true)", "expr.function"),
        ("l.exists(result, true)", "expr.function"),
        ("steps", "expr.dynamic_ref"),
        ("steps[input.name]", "expr.dynamic_ref"),
        ('steps["a\\x2e"]', "expr.dynamic_ref"),
        ("steps.draft.score", "expr.dynamic_ref"),
    ],
)
def test_each_refusal_has_its_code(text: str, code: str) -> None:
    analysis = analyse(text)
    assert code in {c for c, _ in analysis.problems}, analysis.problems
    assert all("fix:" in m for _, m in analysis.problems)


@pytest.mark.parametrize(
    "text",
    [
        "result.score >= 0.8 && size(result.items) > 2",
        'steps["a.b"].score > input.threshold',
        "result.items.all(x, x.startsWith('a') || x.endsWith('z'))",
        "result.items.exists(x, result.tags.exists_one(t, t == x))",  # nested 2: allowed
        "result.text.matches('^(a*)*b$')",
        "type(result) == map && type(result.items) == list",
        "has(result.score) ? int(result.score) : 0",
        "string(item_index) + ':' + string(iteration)",
        "result.items.filter(x, x > 1).map(x, x * 2) == [4, 6]",
        "'x' in result.tags && result.text.contains('ok')",
        "uint(1) + uint(2) == uint(3) && double(1) == 1.0 && bool('true')",
    ],
)
def test_plain_expressions_pass(text: str) -> None:
    assert analyse(text).ok, analyse(text).problems


def test_names_and_step_references_are_collected() -> None:
    analysis = analyse('steps["draft"].score > input.t && result.items.all(x, x == item)')
    assert analysis.names == {"steps", "input", "result", "item"}  # x is the macro's own
    assert analysis.steps == ("draft",)
    assert unknown_names(analysis, {"steps", "input", "result"}) == ["item"]


def test_analysis_is_cached_by_text() -> None:
    text = "result.a + result.b > 17 && result.c == 'cached?'"
    analyse(text)
    hits = analyse.cache_info().hits
    for _ in range(100):
        analyse(text)
    assert analyse.cache_info().hits == hits + 100


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_text_gets_a_verdict_never_an_exception(text: str) -> None:
    analysis = analyse(text)
    assert {c for c, _ in analysis.problems} <= EXPR_CODES


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="()[]{}!-+*/%<>=&|?:.,'\"a1 ", max_size=2500))
def test_operator_soup_is_bounded_and_coded(text: str) -> None:
    began = time.thread_time()  # this thread's CPU: not the worker's background threads
    analysis = analyse(text)
    assert time.thread_time() - began < 1.0  # linear parse, iterative walk, 2,000 chars
    assert {c for c, _ in analysis.problems} <= EXPR_CODES


NAMES = ["result", "input", "steps_ok", "item"]


def expressions(depth: int = 3) -> st.SearchStrategy[str]:
    leaf = st.one_of(
        st.integers(0, 10**6).map(str),
        st.sampled_from(["true", "false", "null", "'s'", '"t"', "1.5", "2u"]),
        st.sampled_from(["result.a", "input.b", "item", "result.list"]),
    )
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.tuples(
                inner, st.sampled_from(["+", "-", "*", "==", "!=", "<", "&&", "||"]), inner
            ).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
            inner.map(lambda e: f"!{e}"),
            inner.map(lambda e: f"size({e})"),
            inner.map(lambda e: f"[{e}, {e}]"),
            inner.map(lambda e: f"{{'k': {e}}}"),
            inner.map(lambda e: f"result.list.exists(v, v == {e})"),
            st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} ? {t[1]} : {t[2]})"),
        ),
        max_leaves=12,
    )


@settings(max_examples=300, deadline=None)
@given(expressions())
def test_generated_expressions_parse_and_name_only_what_they_use(text: str) -> None:
    analysis = analyse(text)
    codes = {c for c, _ in analysis.problems}
    assert "expr.syntax" not in codes and "expr.function" not in codes, analysis.problems
    assert analysis.names <= {"result", "input", "item"}


@settings(max_examples=100, deadline=None)
@given(expressions(), st.sampled_from(["set", "ensure", "until"]))
def test_plans_with_generated_expressions_validate_without_exceptions(text: str, site: str) -> None:
    step: dict[str, Any] = agent("a", "go", out="R")
    if site == "set":
        doc = plan_doc(step, {"id": "s", "kind": "set", "deps": ["a"], "set": {"v": text}},
                       contracts={"R": {"v": "any"}})  # fmt: skip
    elif site == "ensure":
        doc = plan_doc(step | {"ensure": [{"expr": text}]}, contracts={"R": {"v": "any"}})
    else:
        doc = plan_doc(step | {"iterate": {"max": 2, "until": text}}, contracts={"R": {"v": "any"}})
    result = validate_document(doc)
    codes = {e.code for e in result.errors}
    assert codes <= EXPR_CODES, [e.line() for e in result.errors]
    if site == "set" and "result" in analyse(text).names:
        assert "expr.unknown_name" in codes  # a set value has no result
    if "item" in analyse(text).names:
        assert "expr.unknown_name" in codes  # not a fan-out member


def test_the_plan_wide_ceiling_refuses_before_parsing() -> None:
    steps = [
        {"id": f"s{n}", "kind": "set", "set": {"v": f"{n} + 1"}}
        for n in range(MAX_PLAN_EXPRESSIONS + 1)
    ]
    result = validate_document(plan_doc(*steps))
    assert [(e.code, e.path) for e in result.errors] == [("expr.too_complex", "steps")]
    assert "1001 distinct expressions" in result.errors[0].message


def test_validating_parses_each_distinct_expression_once() -> None:
    # What a validation costs is measured in benchmarks/plan_validation.py; here, that a text
    # is parsed once per process, however many validations see it.
    steps = [
        {"id": f"s{n}", "kind": "set", "set": {"v": f"input.x * {n} + size(input.l) > {n} + 7"}}
        for n in range(300)
    ]
    doc = plan_doc(*steps)
    before = analyse.cache_info().misses
    assert validate_document(doc).ok
    assert analyse.cache_info().misses - before == 300
    assert validate_document(doc).ok
    assert analyse.cache_info().misses - before == 300  # the second validation parses nothing


def test_iterations_and_judges_multiply_the_reservation() -> None:
    plan = load_plan(
        plan_doc(
            agent(
                "a", "go", idempotent=True, retry={"max_attempts": 2, "on": ["ensure-failed"]},
                iterate={"max": 3, "until": "true"},
                ensure=[{"judged": {"statement": "s"}}, {"expr": "true"},
                        {"judged": {"statement": "t"}}],
                timeout_ms=1000,
            ),
            {"id": "s", "kind": "set", "deps": ["a"], "set": {"v": "1"}},
        )
    )  # fmt: skip
    walk = boundaries(plan)
    assert [(b.step_id, b.kind) for b in walk] == [("a", "agent"), ("s", "set")]
    assert walk[0].reservation.invocations == 2 * 3 * (1 + 2)
    assert walk[0].reservation.wall_ms == 18 * 1000
    assert walk[1].reservation.invocations == 0
    assert plan_totals(plan).default_calls == 18


def test_bindings_hold_only_what_the_site_reads() -> None:
    plan = load_plan(
        plan_doc(
            agent("a", "go", out="R"),
            agent("b", "go", deps=["a"]),
            {"id": "s", "kind": "set", "deps": ["b"], "set": {"v": 'steps["a"].v'}},
            contracts={"R": {"v": "integer"}},
        )
    )
    scope = AttemptScope({"k": 1}, {"a": '```json\n{"v": 3}\n```', "b": "text"})
    values = bindings(['steps["a"].v'], plan=plan, scope=scope, names={"input", "steps"})
    assert values == {"input": {"k": 1}, "steps": {"a": {"v": 3}}}  # parsed by a's contract
    member = bindings(["item"], plan=plan, scope=scope, names={"item", "result"}, result="r")
    assert member == {"result": "r", "item": None, "item_index": None}


def test_prompt_texts() -> None:
    text = iteration_prompt(
        "Improve.", done=1, iterations=3, until="result.v > 2", reason="evaluated to false",
        output="v=1\nGATE: PASS",
    )  # fmt: skip
    assert text.startswith("Improve.\n\nPrevious iteration (1 of 3) did not satisfy until")
    assert "GATE: PASS" not in text.replace("(quoted) GATE: PASS", "")  # defanged
    assert judge_reason("It is fine.\n\nGATE: PASS") == "It is fine."
    assert judge_reason("GATE: FAIL") == "(no reason given)"


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_the_fast_conversion_makes_what_cel_python_makes(value: Any) -> None:
    ours, theirs = to_cel(value), celpy.json_to_cel(value)
    assert ours == theirs

    def types(v: Any) -> Any:
        if isinstance(v, list):
            return [type(v).__name__, [types(x) for x in v]]
        if isinstance(v, dict):
            return [type(v).__name__, {str(k): [type(k).__name__, types(x)] for k, x in v.items()}]
        return type(v).__name__

    assert types(ours) == types(theirs)
    assert to_json(ours) == json.loads(json.dumps(value))


def test_conversions_refuse_what_json_cannot_hold() -> None:
    with pytest.raises(ValueError, match="64-bit"):
        to_cel(2**63)
    with pytest.raises(ValueError, match="not a JSON value"):
        to_json(celpy.celtypes.BytesType(b"x"))
    with pytest.raises(ValueError, match="key is not a string"):
        to_json(celpy.celtypes.MapType({celpy.celtypes.IntType(1): celpy.celtypes.IntType(2)}))


def test_ponder_plan_validate_refuses_with_the_expression_codes(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(
        "schema: ponder-plan/1\nname: p\nsteps:\n"
        "  - {id: a, kind: agent, prompt: go, ensure: [{expr: \"timestamp('x') > 0\"}]}\n"
        "  - {id: s, kind: set, deps: [a], set: {v: 'steps[\"a\"] + result'}}\n"
    )
    result = CliRunner().invoke(plan_cli, ["validate", str(path)])
    assert result.exit_code == 2
    assert "steps[0].ensure[0].expr: [expr.function]" in result.output
    assert "steps[1].set.v: [expr.unknown_name] result is not bound here" in result.output


def test_the_history_estimate_counts_the_check_activities() -> None:
    from workflows.plan.limits import EVENTS_PER_ACTIVITY, events_per_invocation

    plain = load_plan(plan_doc(agent("a", "go")))
    checked = load_plan(
        plan_doc(
            agent("a", "go", iterate={"max": 2, "until": "true"},
                  ensure=[{"expr": "true"}, {"expr": "1 == 1"}, {"file_exists": "x"}]),
        )
    )  # fmt: skip
    assert events_per_invocation(plain.steps[0]) == EVENTS_PER_ACTIVITY
    # the model call, one evaluate_cel marker, one file probe, one until marker
    assert events_per_invocation(checked.steps[0]) == 4 * EVENTS_PER_ACTIVITY


def test_a_parser_loaded_from_its_cache_parses_the_same(tmp_path: Path) -> None:
    cache = tmp_path / "cel-grammar.lark-cache"
    built = build_parser(cache)
    assert cache.stat().st_size > 0  # written by the first build
    loaded = build_parser(cache)  # read back: the lexer callback is attached again
    texts = [
        "true && input.x > 1",
        "size(steps.a.result.items) == 0 || false",
        "[1, 2].all(x, x > 0)",
    ]
    for text in texts:
        assert loaded.parse(text) == built.parse(text)
    assert "BOOL_LIT" in str(loaded.parse("true"))  # `true` is a literal, not a name
    cache.write_bytes(b"not a pickle")  # a damaged cache is rebuilt, not an error
    assert build_parser(cache).parse(texts[0]) == built.parse(texts[0])
