"""Direct unit tests of the consumer-step core (workflows.plan.consumer): the desk of live
issuances, the ``step_done`` refusals in their order, result parsing with its bounds, update
ids, digests and the plan rules. Expected values are worked out here, not by the code."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from workflows.plan.consumer import (
    MAX_FAILURE_CHARS,
    MAX_RESULT_BYTES,
    MAX_TELEMETRY_BYTES,
    ConsumerAnswer,
    ConsumerDesk,
    ConsumerFailure,
    StepDoneInput,
    check_step_done,
    consumer_errors,
    consumer_step,
    consumer_step_ids,
    parse_result,
    plan_digest,
    step_done_id,
    token_digest,
)
from workflows.plan.model import AgentStep, Plan
from workflows.plan.reasons import Reason
from workflows.plan.status import Issuance


def issuance(step: str, token: str, attempt: int = 1) -> Issuance:
    return Issuance(
        step=step,
        attempt=attempt,
        epoch=0,
        token=token,
        invocation=f"{step}#{attempt}",
        issued_at="t0",
        deadline_at="t1",
    )


def answer(text: str = "x") -> ConsumerAnswer:
    return ConsumerAnswer(text=text, failure=None)


# -- the desk -------------------------------------------------------------------------------


def test_the_desk_issues_accepts_voids_and_rotates() -> None:
    desk = ConsumerDesk()
    first, second, other = issuance("a", "t1"), issuance("a", "t2", 2), issuance("b", "t3")
    desk.issue(first, "prompt one")
    desk.issue(second, "prompt two")
    desk.issue(other, "prompt three")
    assert desk.prompts == {"t1": "prompt one", "t2": "prompt two", "t3": "prompt three"}
    assert desk.of_step("a") == [first, second]
    assert desk.of_step("ghost") == []
    assert desk.accept("t1", answer("one")) == first
    assert "t1" not in desk.live and "t1" not in desk.prompts
    assert desk.answers == {"t1": answer("one")}
    desk.void("t1")
    assert desk.answers == {}
    desk.void("never")  # voiding an unknown token is a no-op
    desk.answers["t2"] = answer("held")
    assert desk.rotate() == ["t2", "t3"]
    assert desk.live == {} and desk.prompts == {} and desk.answers == {}
    desk.answers["late"] = answer()
    assert desk.rotate() == []
    assert desk.answers == {}  # a rotation drops held answers too


# -- step_done ------------------------------------------------------------------------------


def test_check_step_done_refuses_in_order() -> None:
    desk = ConsumerDesk()
    desk.issue(issuance("a", "tok"), "p")
    desk.issue(issuance("b", "other"), "p")
    steps = {"a", "b"}

    got, refusal = check_step_done(desk, steps, StepDoneInput(step="z", token="tok", result=1))
    assert got is None and refusal is not None
    assert refusal.reason == Reason.UNKNOWN_STEP
    assert refusal.message == "'z' is not a consumer step of this plan (consumer steps: a, b)"
    _, refusal = check_step_done(desk, set(), StepDoneInput(step="z"))
    assert refusal is not None and refusal.message.endswith("(consumer steps: none)")

    _, refusal = check_step_done(desk, steps, StepDoneInput(step="a", token=""))
    assert refusal is not None and refusal.reason == Reason.STALE_DISPATCH_TOKEN
    assert refusal.message == (
        "no token given of 'a' (1 live issuance(s); a token is void once answered, timed out, "
        "retried or reverted); read the current one from status"
    )
    _, refusal = check_step_done(desk, steps, StepDoneInput(step="a", token="old"))
    assert refusal is not None and refusal.reason == Reason.STALE_DISPATCH_TOKEN
    assert refusal.message.startswith("the token is not a live issuance of 'a' (1 live")
    # a live token of another step
    _, refusal = check_step_done(desk, steps, StepDoneInput(step="a", token="other"))
    assert refusal is not None and refusal.reason == Reason.STALE_DISPATCH_TOKEN

    _, refusal = check_step_done(desk, steps, StepDoneInput(step="a", token="tok", result=[]))
    assert refusal is not None and refusal.reason == Reason.INVALID_RESULT
    assert refusal.message.startswith("result must be an object")

    got, refusal = check_step_done(
        desk, steps, StepDoneInput(step="a", token="tok", result={"output": "done"})
    )
    assert refusal is None and got is not None and got.text == "done"
    assert "tok" in desk.live  # checking takes nothing off the desk


# -- results --------------------------------------------------------------------------------


def test_parse_result_reads_output_failure_usage_and_telemetry() -> None:
    got, problem = parse_result(
        {
            "output": {"k": "ü"},
            "usage": {"tokens": 12, "usd": 0.5, "wall_ms": 30},
            "telemetry": {"t": 1},
        }
    )
    assert problem is None
    size = len(
        json.dumps(
            {
                "output": {"k": "ü"},
                "usage": {"tokens": 12, "usd": 0.5, "wall_ms": 30},
                "telemetry": {"t": 1},
            },
            separators=(",", ":"),
            ensure_ascii=False,
        ).encode()
    )
    assert got == ConsumerAnswer(
        text='{"k": "ü"}',
        failure=None,
        tokens=12,
        usd=0.5,
        wall_ms=30,
        telemetry={"t": 1},
        bytes=size,
    )
    got, problem = parse_result({"output": "plain"})
    assert problem is None and got is not None
    assert (got.text, got.failure, got.tokens, got.usd, got.wall_ms) == ("plain", None, 0, 0.0, 0)
    assert got.telemetry is None and got.bytes == len(b'{"output":"plain"}')
    assert isinstance(got.tokens, int) and isinstance(got.usd, float)
    got, problem = parse_result({"failure": "it broke", "usage": {"usd": 2}})
    assert problem is None and got is not None
    assert (got.text, got.failure, got.usd) == (None, "it broke", 2.0)
    assert isinstance(got.usd, float)
    got, _ = parse_result({"output": 0})
    assert got is not None and got.text == "0"
    got, _ = parse_result({"output": "x", "failure": None})
    assert got is not None and got.text == "x" and got.failure is None
    got, _ = parse_result({"output": "x", "failure": None, "telemetry": None, "usage": None})
    assert got is not None and got.telemetry is None


NAN = "result holds NaN or an infinity; fix: send finite numbers only"


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (
            "text",
            'result must be an object {"output": ...} or {"failure": "..."}; fix: send one of them',
        ),
        (
            {"output": 1, "zz": 1, "aa": 2},
            "result has unknown field(s) aa, zz; fix: use only output, failure, usage, telemetry",
        ),
        (
            {"output": float("nan")},
            NAN,
        ),
        (
            {"output": float("inf")},
            NAN,
        ),
        ({}, "result gives neither of output and failure; fix: give exactly one"),
        ({"output": None}, "result gives neither of output and failure; fix: give exactly one"),
        (
            {"output": 1, "failure": "x"},
            "result gives both of output and failure; fix: give exactly one",
        ),
        ({"failure": 3}, "result.failure must be a non-empty string; fix: say what went wrong"),
        ({"failure": "  "}, "result.failure must be a non-empty string; fix: say what went wrong"),
        (
            {"failure": "f" * (MAX_FAILURE_CHARS + 1)},
            f"result.failure is {MAX_FAILURE_CHARS + 1} characters, over {MAX_FAILURE_CHARS}; "
            "fix: shorten it",
        ),
        (
            {"output": 1, "usage": []},
            "result.usage must be an object {tokens, usd, wall_ms}; fix: send one",
        ),
        (
            {"output": 1, "usage": {"tokens": 1, "calls": 1}},
            "result.usage.calls is not accepted: the engine counts invocations itself (one per "
            "issuance); fix: remove it",
        ),
        (
            {"output": 1, "usage": {"cost": 1}},
            "result.usage.cost is not a usage field; fix: use tokens, usd, wall_ms",
        ),
        (
            {"output": 1, "usage": {"tokens": 1.5}},
            "result.usage.tokens must be an integer from 0 to 1e+12 (got 1.5); fix: send a "
            "value in range",
        ),
        (
            {"output": 1, "usage": {"tokens": -1}},
            "result.usage.tokens must be an integer from 0 to 1e+12 (got -1); fix: send a value "
            "in range",
        ),
        (
            {"output": 1, "usage": {"tokens": 10**12 + 1}},
            "result.usage.tokens must be an integer from 0 to 1e+12 (got 1000000000001); fix: "
            "send a value in range",
        ),
        (
            {"output": 1, "usage": {"usd": True}},
            "result.usage.usd must be a number from 0 to 1e+06 (got true); fix: send a value in "
            "range",
        ),
        (
            {"output": 1, "usage": {"usd": "1"}},
            'result.usage.usd must be a number from 0 to 1e+06 (got "1"); fix: send a value in '
            "range",
        ),
        (
            {"output": 1, "usage": {"wall_ms": "x" * 100}},
            'result.usage.wall_ms must be an integer from 0 to 2.592e+09 (got "'
            + "x" * 39
            + "); fix: send a value in range",
        ),
        (
            {"output": 1, "telemetry": "t" * MAX_TELEMETRY_BYTES},
            f"result.telemetry is over {MAX_TELEMETRY_BYTES} bytes of JSON; fix: send less",
        ),
    ],
)
def test_parse_result_refusals(raw: Any, problem: str) -> None:
    assert parse_result(raw) == (None, problem)


def test_usage_bounds_are_inclusive() -> None:
    got, problem = parse_result(
        {"output": 1, "usage": {"tokens": 10**12, "usd": 1_000_000, "wall_ms": 0}}
    )
    assert problem is None and got is not None
    assert (got.tokens, got.usd, got.wall_ms) == (10**12, 1_000_000.0, 0)
    got, problem = parse_result({"output": 1, "usage": {"usd": 0.0, "tokens": 0}})
    assert problem is None
    _, problem = parse_result({"output": 1, "usage": {"usd": 1_000_000.5}})
    assert problem is not None and "usd must be a number" in problem
    _, problem = parse_result({"output": 1, "usage": {"wall_ms": 30 * 24 * 3600 * 1000 + 1}})
    assert problem is not None and "wall_ms must be an integer" in problem


def test_result_and_telemetry_size_ceilings() -> None:
    overhead = len(b'{"output":""}')
    at = {"output": "x" * (MAX_RESULT_BYTES - overhead)}
    got, problem = parse_result(at)
    assert problem is None and got is not None and got.bytes == MAX_RESULT_BYTES
    over = {"output": "x" * (MAX_RESULT_BYTES - overhead + 1)}
    assert parse_result(over) == (
        None,
        f"result is {MAX_RESULT_BYTES + 1} bytes of JSON, over the {MAX_RESULT_BYTES} byte "
        "ceiling; fix: write large output to a declared file and return a short value",
    )
    # multi-byte characters count as bytes
    wide = {"output": "é" * ((MAX_RESULT_BYTES - overhead) // 2 + 1)}
    _, problem = parse_result(wide)
    assert problem is not None and "byte ceiling" in problem
    # telemetry at its ceiling (a JSON string: two quote bytes) passes
    got, problem = parse_result({"output": 1, "telemetry": "t" * (MAX_TELEMETRY_BYTES - 2)})
    assert problem is None and got is not None
    # something json cannot write counts as over the ceiling
    _, problem = parse_result({"output": {1j}})
    assert problem is not None and "byte ceiling" in problem


def test_consumer_failure_carries_its_parts() -> None:
    failure = ConsumerFailure("timeout", "too slow", tokens=3, usd=0.25)
    assert (failure.klass, failure.message, failure.tokens, failure.usd) == (
        "timeout",
        "too slow",
        3,
        0.25,
    )
    assert str(failure) == "too slow"
    bare = ConsumerFailure("transport", "x")
    assert (bare.tokens, bare.usd) == (0, 0.0)


# -- ids and digests ------------------------------------------------------------------------


def test_token_digest() -> None:
    assert token_digest("abc") == "sha256:" + hashlib.sha256(b"abc").hexdigest()[:16]


def test_step_done_id_digests_step_token_and_what_it_answers() -> None:
    sent = StepDoneInput(step="a", token="t", result={"output": "é", "usage": {"tokens": 1}})
    body = json.dumps(["a", "t", {"output": "é"}], separators=(",", ":"), ensure_ascii=False)
    expected = "step_done:" + hashlib.sha256(body.encode()).hexdigest()
    assert step_done_id(sent) == expected
    # usage and telemetry are about the answer, not it
    same = StepDoneInput(step="a", token="t", result={"output": "é", "telemetry": {"x": 1}})
    assert step_done_id(same) == expected
    assert step_done_id(StepDoneInput(step="a", token="t", result={"output": "other"})) != expected
    failure = StepDoneInput(step="a", token="t", result={"failure": "f", "output": None})
    body = json.dumps(["a", "t", {"failure": "f", "output": None}], separators=(",", ":"))
    assert step_done_id(failure) == "step_done:" + hashlib.sha256(body.encode()).hexdigest()
    # keys are sorted, and a non-dict result is taken whole (unknown values as strings)
    odd = StepDoneInput(step="a", token="t", result=[{"b": 1, "a": 2}, {1j}])
    body = json.dumps(["a", "t", [{"a": 2, "b": 1}, str({1j})]], separators=(",", ":"))
    assert step_done_id(odd) == "step_done:" + hashlib.sha256(body.encode()).hexdigest()
    lone = StepDoneInput(step="a", token="t", result="\udc80")
    body = json.dumps(["a", "t", "\udc80"], separators=(",", ":"), ensure_ascii=False)
    assert step_done_id(lone) == (
        "step_done:" + hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()
    )


def test_plan_digest_is_of_canonical_json() -> None:
    body = '{"a":"é","b":[1,2]}'
    expected = "sha256:" + hashlib.sha256(body.encode()).hexdigest()
    assert plan_digest({"b": [1, 2], "a": "é"}) == expected


# -- plan rules -----------------------------------------------------------------------------


def plan_with_consumers() -> Plan:
    return Plan.model_validate(
        {
            "schema": "ponder-plan/1",
            "name": "p",
            "steps": [
                {"id": "c", "kind": "agent", "prompt": "x", "dispatch": "consumer"},
                {"id": "e", "kind": "agent", "prompt": "x"},
                {"id": "g", "kind": "gate", "prompt": "x"},
                {"id": "call", "kind": "run", "flow": "body"},
            ],
            "flows": {
                "body": {
                    "steps": [
                        {"id": "k", "kind": "agent", "prompt": "x", "dispatch": "consumer"},
                        {"id": "m", "kind": "agent", "prompt": "x"},
                    ]
                }
            },
        }
    )


def test_consumer_step_ids_and_lookup() -> None:
    p = plan_with_consumers()
    assert consumer_step_ids(p) == frozenset({"c", "call/k"})
    found = consumer_step(p, "call/k")
    assert isinstance(found, AgentStep) and found.id == "k"
    assert consumer_step(p, "c") is p.step("c")
    assert consumer_step(p, "e") is None
    assert consumer_step(p, "call/m") is None
    assert consumer_step(p, "ghost") is None


def test_consumer_errors_refuse_gates_and_worktree_chain_members() -> None:
    p = Plan.model_validate(
        {
            "schema": "ponder-plan/1",
            "name": "p",
            "steps": [
                {"id": "g", "kind": "gate", "prompt": "x", "dispatch": "consumer"},
                {
                    "id": "w",
                    "kind": "fanout",
                    "fanout": {"over": ["x"], "chain": ["one"], "isolation": "worktree"},
                },
                {"id": "one", "kind": "agent", "prompt": "x", "dispatch": "consumer"},
                {"id": "n", "kind": "fanout", "fanout": {"over": ["x"], "chain": ["two"]}},
                {"id": "two", "kind": "agent", "prompt": "x", "dispatch": "consumer"},
                {"id": "free", "kind": "agent", "prompt": "x", "dispatch": "consumer"},
                {"id": "eng", "kind": "agent", "prompt": "x"},
            ],
        }
    )
    steps: list[Any] = [*p.steps, None]
    errors = consumer_errors(steps, {"one": 1, "two": 3, "eng": 1})
    assert [(e.code, e.path) for e in errors] == [
        ("consumer.not_allowed", "steps[0].dispatch"),
        ("consumer.not_allowed", "steps[2].dispatch"),
    ]
    assert errors[0].message == (
        "a gate's verdict is parsed by the engine, so its invocation cannot be handed to an "
        "external executor; fix: remove dispatch: consumer (or make it an agent step before the "
        "gate)"
    )
    assert errors[1].message == (
        "'one' is a chain member of a worktree-isolated fan-out, whose items run in worktrees "
        "only the engine's executors see; fix: use isolation: none or dispatch: engine"
    )
    assert consumer_errors(steps, {}) == errors[:1]
