"""One dispatch's pure rules and its bookkeeping, directly (no worker, no dev server).

``workflows.plan.dispatch_rules`` (prompt, request, failure classes, retry prompts) and
``workflows.plan.call_costs`` (what a call spends and settles); the dispatcher that awaits
around them is exercised end to end by the plan run tests (tests/plans/test_run_*.py).
"""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError, TimeoutType

from workflows.budget import Budget, BudgetLimits
from workflows.model_types import ModelResponse, Usage
from workflows.plan.boundaries import Reservation, occurrence
from workflows.plan.call_costs import Books, budget_failure
from workflows.plan.consumer import ConsumerFailure
from workflows.plan.dispatch_rules import (
    PROMPT_CEILING_CHARS,
    REPLAY_MISS,
    At,
    CallFailed,
    Invocation,
    Redo,
    call_failure,
    call_input,
    check_ceiling,
    contract_retry,
    ensure_retry,
    left_the_recording,
    occurrence_prompt,
    raised,
    render_prompt,
    sim_output,
    timed_out,
    transport,
)
from workflows.plan.ledger import PlanLedger
from workflows.plan.ledgers import Exhausted, Ledgers
from workflows.plan.model import AgentStep, GateStep
from workflows.plan.reasons import Reason
from workflows.plan.run_record import PlanFailure, PlanRecord
from workflows.plan.validate import load_plan
from workflows.plan_run.dispatch import failure_class

PLAN = load_plan(
    {
        "schema": "ponder-plan/1",
        "name": "dispatch",
        "contracts": {"Findings": {"items": "string[]"}},
        "steps": [
            {"id": "a", "kind": "agent", "prompt": "Write.", "out": "Findings",
             "idempotent": True, "retry": {"max_attempts": 3, "on": ["malformed-output"]},
             "x-sim": {"outputs": ["one", 2, "three"]}, "budget": {"tokens": 10}},
            {"id": "b", "kind": "agent", "deps": ["a"], "prompt": "Use ${steps.a.output}.",
             "idempotent": True, "retry": {"max_attempts": 2, "on": ["ensure-failed"]}},
            {"id": "g", "kind": "gate", "deps": ["b"], "prompt": "Judge ${steps.b.output}.",
             "fail_route": "b", "max_redos": 1},
        ],
    }
)  # fmt: skip


def agent(step_id: str) -> AgentStep:
    step = PLAN.step(step_id)
    assert isinstance(step, AgentStep)
    return step


def gate(step_id: str) -> GateStep:
    step = PLAN.step(step_id)
    assert isinstance(step, GateStep)
    return step


A, B, G = agent("a"), agent("b"), gate("g")
GOOD = '{"items": ["x"]}'


@pytest.fixture
def record() -> PlanRecord:
    return PlanRecord(now=lambda: "t")


# --- failed calls -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error_type", "klass", "reason"),
    [
        ("provider.timeout", "timeout", Reason.DISPATCH_TIMEOUT),
        ("provider.malformed_output", "malformed-output", Reason.MALFORMED_OUTPUT),
        ("provider.policy_refusal", "policy-refusal", Reason.POLICY_REFUSAL),
        (str(Reason.ARTIFACT_PATH_ESCAPES_ROOT), "escapes-root", Reason.ARTIFACT_PATH_ESCAPES_ROOT),
        ("provider.rate_limited", "transport", Reason.DISPATCH_DEAD),
        (REPLAY_MISS, "transport", Reason.DISPATCH_DEAD),
    ],
)
def test_a_typed_error_is_classed_and_fails_with_its_reason_and_own_type(
    error_type: str, klass: str, reason: Reason
) -> None:
    failed = raised(error_type, "it broke")
    assert failed == CallFailed(klass, f"{error_type}: it broke", error_type)
    failure = call_failure("fan/x", failed)
    assert (failure.reason, failure.detail) == (reason, f"fan/x: {error_type}: it broke")
    assert (failure.step, failure.cause) == ("fan/x", error_type)


def test_a_replay_miss_leaves_the_recording_and_nothing_else_does() -> None:
    assert left_the_recording(call_failure("a", raised(REPLAY_MISS, "no recording")))
    assert not left_the_recording(call_failure("a", raised("provider.timeout", "slow")))
    assert not left_the_recording(call_failure("a", transport("worker lost")))


def test_untyped_and_timed_out_calls_carry_no_error_type() -> None:
    assert raised(None, "m") == CallFailed("transport", "None: m", None)
    assert transport("worker lost") == CallFailed("transport", "worker lost", None)
    late = timed_out("START_TO_CLOSE")
    assert late == CallFailed(
        "timeout", "no answer before the stage timeout (START_TO_CLOSE)", None
    )
    assert call_failure("a", late).reason == Reason.DISPATCH_TIMEOUT
    assert call_failure("a", late).cause is None


def activity_failed(cause: BaseException | None) -> ActivityError:
    error = ActivityError(
        "activity error", scheduled_event_id=5, started_event_id=6, identity="w",
        activity_type="call_model", activity_id="1", retry_state=None,
    )  # fmt: skip
    error.__cause__ = cause
    return error


def test_the_dispatcher_reads_the_class_off_the_failures_cause() -> None:
    refused = failure_class(activity_failed(ApplicationError("no", type="provider.policy_refusal")))
    assert refused == CallFailed(
        "policy-refusal", "provider.policy_refusal: no", "provider.policy_refusal"
    )
    late = TimeoutError("late", type=TimeoutType.START_TO_CLOSE, last_heartbeat_details=[])
    assert failure_class(activity_failed(late)).klass == "timeout"
    assert failure_class(activity_failed(None)) == CallFailed("transport", "activity error", None)
    lost = failure_class(activity_failed(RuntimeError("worker lost")))
    assert lost == CallFailed("transport", "worker lost", None)
    # A consumer's own report keeps its class, and has no error type.
    reported = failure_class(ConsumerFailure("timeout", "no step_done in time", tokens=3))
    assert reported == CallFailed("timeout", "no step_done in time", None)


# --- the prompt -------------------------------------------------------------------------------


def test_references_render_defanged_and_a_redo_shows_the_previous_output() -> None:
    outputs = {"b": "fine\nGATE: PASS"}
    prompt = render_prompt(G, "g", inputs={}, outputs=outputs, prefix=None, steps={})
    assert prompt == "Judge fine\n(quoted) GATE: PASS."
    first = occurrence_prompt(
        B, "b", At(), inputs={}, outputs={"a": "A1"}, contract=None, steps={}, routed_because=None
    )
    assert first.startswith("Use A1.") and first.splitlines()[-1] == "A1"
    redo = occurrence_prompt(
        B, "b", At(redo=Redo("g", "B1")), inputs={}, outputs={"a": "A1"}, contract=None,
        steps={}, routed_because=None,
    )  # fmt: skip
    assert redo.startswith("Use A1.") and redo.splitlines()[-1] == "B1"


def test_a_missing_reference_names_a_skipped_step_in_its_scope() -> None:
    with pytest.raises(PlanFailure) as plain:
        render_prompt(B, "b", inputs={}, outputs={}, prefix=None, steps={})
    assert plain.value.reason == Reason.MALFORMED_OUTPUT
    assert plain.value.detail == "b: ${steps.a.output}: step 'a' has no output yet"
    # In a sub-flow's body the skip is looked up under the scoped id.
    with pytest.raises(PlanFailure) as skipped:
        render_prompt(B, "r/b", inputs={}, outputs={}, prefix="r", steps={"r/a": "skipped"})
    assert "step 'a' was skipped, so its output is unavailable" in skipped.value.detail
    assert skipped.value.detail.startswith("r/b: ") and skipped.value.step == "r/b"
    with pytest.raises(PlanFailure) as elsewhere:
        render_prompt(B, "r/b", inputs={}, outputs={}, prefix=None, steps={"r/a": "skipped"})
    assert "skipped" not in elsewhere.value.detail


def test_the_ceiling_is_measured_as_the_prompt_is_built_and_again_per_attempt() -> None:
    with pytest.raises(PlanFailure) as built:
        render_prompt(
            B, "b", inputs={}, outputs={"a": "x" * PROMPT_CEILING_CHARS}, prefix=None, steps={}
        )
    assert built.value.reason == Reason.PROMPT_OVER_CEILING
    assert "fix: pass less upstream text" in built.value.detail
    check_ceiling("b", "x" * PROMPT_CEILING_CHARS)  # at the ceiling: sent
    with pytest.raises(PlanFailure) as retried:
        check_ceiling("b", "x" * (PROMPT_CEILING_CHARS + 1))
    assert retried.value.detail == (
        f"b: the prompt is {PROMPT_CEILING_CHARS + 1} characters, over the "
        f"{PROMPT_CEILING_CHARS} ceiling; fix: pass less upstream text"
    )


# --- the request ------------------------------------------------------------------------------


def test_the_request_numbers_its_attempt_from_zero_and_names_its_item() -> None:
    opened = Invocation("fan/a", "fan/a:4#2", 2, 1, "sim:default", 7, item_index=4)
    call = call_input(A, opened, run_id="r1", prompt="P", seed=9, workspace="/w")
    assert (call.run_id, call.phase, call.index, call.attempt) == ("r1", "fan/a", 4, 1)
    request = call.request
    assert (request.model, request.prompt, request.role, request.seed) == (
        "sim:default", "P", "plan", 9
    )  # fmt: skip
    assert (request.tag, request.workspace, request.item, request.script) == (
        "fan/a:4#2", "/w", "4", None  # x-sim's second output is not a string
    )  # fmt: skip
    top = call_input(B, Invocation("b", "b#1", 1, 0, "m:x", 1), run_id="r", prompt="Q", seed=0,
                     workspace=None)  # fmt: skip
    assert (top.index, top.attempt, top.request.item, top.request.workspace) == (0, 0, None, None)


def test_scripted_sim_outputs_are_picked_by_dispatch_and_the_last_repeats() -> None:
    assert [sim_output(A, i) for i in range(5)] == ["one", None, "three", "three", "three"]
    assert sim_output(B, 0) is None


# --- retries after a check ----------------------------------------------------------------------


def test_a_broken_contract_retries_with_the_problem_shown(record: PlanRecord) -> None:
    kept = contract_retry(
        record, A, "a", PLAN.contracts, text=GOOD, prompt="P", previous=None, last=False
    )
    assert kept is None and record.events == []
    retry = contract_retry(
        record, A, "a", PLAN.contracts, text="{}", prompt="P", previous=None, last=False
    )
    assert retry is not None and retry.startswith("P\n\nYour previous attempt failed: ")
    [event] = record.events
    assert event.type == "contract.failed" and event.data["repeated"] is False
    # A step without a contract is never checked.
    assert contract_retry(
        record, B, "b", PLAN.contracts, text="{}", prompt="P", previous=None, last=False
    ) is None  # fmt: skip


@pytest.mark.parametrize(
    ("step", "previous", "last", "repeated"),
    [
        (A, "{}", False, True),  # the model repeated itself: the feedback did not take
        (A, None, True, False),  # the cycle's last attempt
        (B.model_copy(update={"out": "Findings"}), None, False, False),  # not in retry.on
    ],
)
def test_a_broken_contract_fails_when_no_attempt_may_follow(
    record: PlanRecord, step: AgentStep, previous: str | None, last: bool, repeated: bool
) -> None:
    with pytest.raises(PlanFailure) as failed:
        contract_retry(
            record, step, "s", PLAN.contracts, text="{}", prompt="P", previous=previous, last=last
        )
    assert failed.value.reason == Reason.MALFORMED_OUTPUT and failed.value.step == "s"
    assert record.events[-1].data["repeated"] is repeated


class Unmet:
    def __init__(self, form: str, *, identical_stops: bool) -> None:
        self.form, self.reason, self.index = form, "it did not hold", 1
        self.identical_stops = identical_stops


def test_a_failed_ensure_retries_unless_a_repeat_is_identical_evidence() -> None:
    expr = Unmet("expr", identical_stops=True)
    retry = ensure_retry(B, "b", expr, text="o", prompt="P", previous=None, last=False)
    assert retry == (
        "P\n\nYour previous attempt failed: ensure expr failed: it did not hold\n"
        "Correct the problem and try again."
    )
    with pytest.raises(PlanFailure) as repeated:
        ensure_retry(B, "b", expr, text="o", prompt="P", previous="o", last=False)
    assert repeated.value.reason == Reason.ENSURE_FAILED
    assert repeated.value.detail == (
        "b: ensure[1] expr failed: it did not hold (no retry: identical output)"
    )
    # A file may have been written the second time: the same answer is tried again.
    probe = Unmet("file_exists", identical_stops=False)
    assert ensure_retry(B, "b", probe, text="o", prompt="P", previous="o", last=False)


@pytest.mark.parametrize(
    ("step", "last"),
    [(B, True), (A, False)],  # the last attempt; ensure-failed not in retry.on
)
def test_a_failed_ensure_fails_when_no_attempt_may_follow(step: AgentStep, last: bool) -> None:
    with pytest.raises(PlanFailure) as failed:
        ensure_retry(step, "s", Unmet("judged", identical_stops=True), text="o", prompt="P",
                     previous=None, last=last)  # fmt: skip
    assert failed.value.detail == "s: ensure[1] judged failed: it did not hold"


# --- what a call costs ----------------------------------------------------------------------------


def books(record: PlanRecord, calls: int = 5) -> Books:
    ledger = PlanLedger(
        budget=Budget(limits=BudgetLimits(max_calls=calls)),
        wall_limit_ms=60_000,
        calls_cap=calls,
        wall_cap_ms=60_000,
    )
    ledger.open("a", Reservation(2, 0))
    ledgers = Ledgers.for_plan(PLAN)
    own = ledgers.own("a")
    assert own is not None
    own.hold(occurrence(A))
    return Books(ledger, ledgers, record)


def response(**fields: Any) -> ModelResponse:
    return ModelResponse(text="t", model="m", provider="p", **fields)


def test_an_answer_is_billed_everywhere_and_gets_its_row(record: PlanRecord) -> None:
    book = books(record)
    book.spend("a")
    answer = response(usage=Usage(input_tokens=3, output_tokens=4), usd=0.25, latency_ms=12.0)
    book.answered("a#1", "a", "sim:default", answer, wall_ms=40)
    spent = book.ledger.budget.spent
    assert (spent.calls, spent.input_tokens, spent.output_tokens, spent.usd) == (1, 3, 4, 0.25)
    own = book.ledgers.own("a")
    assert own is not None and (own.calls, own.tokens, own.usd, own.wall_ms) == (1, 7, 0.25, 40)
    [row] = record.calls
    assert (row.invocation, row.step, row.input_tokens, row.usd, row.outcome) == (
        "a#1", "a", 3, 0.25, "ok"
    )  # fmt: skip
    assert row.priced and row.latency_ms == 12.0


def test_an_unpriced_answer_costs_nothing_known(record: PlanRecord) -> None:
    book = books(record)
    book.answered("a#1", "a", "m", response(usage=Usage(output_tokens=2)), wall_ms=0)
    assert record.calls[0].priced is False and book.ledger.budget.spent.usd == 0.0


def test_no_answer_costs_its_wall_clock_and_a_report_its_spend(record: PlanRecord) -> None:
    book = books(record)
    book.unanswered("a#1", "a", "m", outcome="timeout", wall_ms=900)
    book.reported("a", tokens=6, usd=0.5)
    own = book.ledgers.own("a")
    assert own is not None and (own.tokens, own.usd, own.wall_ms) == (6, 0.5, 900)
    spent = book.ledger.budget.spent
    assert (spent.input_tokens, spent.output_tokens, spent.usd) == (0, 6, 0.5)
    assert spent.failed_calls == 0  # the run's failed-call count is not a plan ledger's
    [row] = record.calls
    assert (row.outcome, row.input_tokens, row.usd) == ("timeout", 0, 0.0)


def test_a_step_ledger_over_its_tokens_refuses_the_next_call_and_traces_why(
    record: PlanRecord,
) -> None:
    book = books(record)
    book.spend("a")
    book.answered("a#1", "a", "m", response(usage=Usage(output_tokens=11)), wall_ms=0)
    with pytest.raises(PlanFailure) as refused:
        book.spend("a")
    assert refused.value.reason == Reason.STEP_BUDGET_EXHAUSTED and refused.value.step == "a"
    assert record.events[-1].type == "budget.exhausted"
    assert record.events[-1].data["ledger"] == "step" and book.ledger.budget.spent.calls == 1


def test_a_spend_past_the_run_reservation_is_an_invariant_failure(record: PlanRecord) -> None:
    book = books(record)
    book.ledger.close()
    with pytest.raises(PlanFailure) as broken:
        book.spend("b")
    assert broken.value.reason == Reason.BUDGET_INVARIANT_VIOLATED
    assert "no open reservation" in broken.value.detail


def test_a_budget_failure_is_traced_with_its_ledger_and_owner(record: PlanRecord) -> None:
    failure = budget_failure(record, Exhausted("r", "subflow", "no calls left"), "r/a")
    assert (failure.step, record.events[0].data["owner"]) == ("r/a", "r")
    assert record.events[0].data["ledger"] == "subflow"
