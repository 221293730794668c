"""The pure budget arithmetic (workflows/budget.py): reservations, spending, limits, extensions."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workflows.budget import Budget, BudgetLimits, BudgetSpent

LIMIT_FIELDS = ("max_calls", "max_input_tokens", "max_output_tokens", "max_usd")


def settle(budget: Budget, **spent: float) -> None:
    budget.settle(
        input_tokens=int(spent.get("input_tokens", 0)),
        output_tokens=int(spent.get("output_tokens", 0)),
        usd=spent.get("usd", 0.0),
        transport_retries=int(spent.get("transport_retries", 0)),
        failed=bool(spent.get("failed", False)),
    )


# -- reservations ---------------------------------------------------------------------------


def test_no_limits_never_block() -> None:
    budget = Budget()
    for _ in range(1000):
        assert budget.reserve()
        settle(budget, input_tokens=10**6, output_tokens=10**6, usd=1e6)
    assert budget.blocking_limit() is None
    assert budget.spent.calls == 1000


@pytest.mark.parametrize("cap", [0, 1, 7])
def test_max_calls_admits_exactly_the_cap(cap: int) -> None:
    budget = Budget(limits=BudgetLimits(max_calls=cap))
    admitted = [budget.reserve() for _ in range(cap + 3)]
    assert admitted == [True] * cap + [False] * 3
    assert budget.spent.calls == cap  # a refused reservation is not counted
    assert budget.blocking_limit() == "max_calls"


def test_a_reservation_counts_before_anything_is_settled() -> None:
    # The hard cap holds under concurrency only because a call is counted at dispatch.
    budget = Budget(limits=BudgetLimits(max_calls=2))
    assert budget.reserve() and budget.reserve()
    assert not budget.reserve()
    assert budget.spent.input_tokens == budget.spent.usd == 0


def test_failed_calls_stay_counted_and_transport_retries_are_separate() -> None:
    budget = Budget(limits=BudgetLimits(max_calls=3))
    assert budget.reserve()
    settle(budget, failed=True, transport_retries=4)
    assert budget.reserve()
    settle(budget, input_tokens=5, output_tokens=7, usd=0.25, transport_retries=1)
    assert budget.spent == BudgetSpent(
        calls=2, failed_calls=1, input_tokens=5, output_tokens=7, usd=0.25, transport_retries=5
    )
    assert budget.reserve()
    assert not budget.reserve()  # retries did not use up the cap, the failed call did


@pytest.mark.parametrize(
    ("field", "spent_field"),
    [
        ("max_input_tokens", "input_tokens"),
        ("max_output_tokens", "output_tokens"),
        ("max_usd", "usd"),
    ],
)
def test_known_after_response_limits_block_once_reached_not_before(
    field: str, spent_field: str
) -> None:
    budget = Budget(limits=BudgetLimits(**{field: 100}))
    assert budget.reserve()
    settle(budget, **{spent_field: 99})
    assert budget.blocking_limit() is None
    assert budget.reserve()
    settle(budget, **{spent_field: 1})  # exactly at the limit: reached
    assert budget.blocking_limit() == field
    assert not budget.reserve()
    assert budget.spent.calls == 2


def test_a_zero_usd_limit_blocks_the_first_call() -> None:
    budget = Budget(limits=BudgetLimits(max_usd=0.0))
    assert budget.blocking_limit() == "max_usd"
    assert not budget.reserve()


def test_the_first_reached_limit_is_named_in_a_fixed_order() -> None:
    budget = Budget(
        limits=BudgetLimits(max_calls=1, max_input_tokens=1, max_output_tokens=1, max_usd=0.5)
    )
    assert budget.reserve()
    settle(budget, input_tokens=1, output_tokens=1, usd=1.0)
    assert budget.blocking_limit() == "max_calls"
    budget.limits = budget.limits.model_copy(update={"max_calls": None})
    assert budget.blocking_limit() == "max_input_tokens"
    budget.limits = budget.limits.model_copy(update={"max_input_tokens": 10})
    assert budget.blocking_limit() == "max_output_tokens"
    budget.limits = budget.limits.model_copy(update={"max_output_tokens": 10})
    assert budget.blocking_limit() == "max_usd"
    budget.limits = budget.limits.model_copy(update={"max_usd": 1.5})
    assert budget.blocking_limit() is None


def test_the_budget_round_trips_through_json_as_history_carries_it() -> None:
    budget = Budget(limits=BudgetLimits(max_calls=4, max_usd=0.1))
    assert budget.reserve()
    settle(budget, input_tokens=3, usd=0.03, transport_retries=2)
    again = Budget.model_validate_json(budget.model_dump_json())
    assert again == budget
    assert again.reserve() and again.spent.calls == 2


# -- the in-flight window --------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    cap=st.integers(min_value=0, max_value=40),
    concurrency=st.integers(min_value=1, max_value=8),
    order=st.lists(st.booleans(), max_size=200),
)
def test_max_calls_holds_under_any_interleaving(
    cap: int, concurrency: int, order: list[bool]
) -> None:
    """``order`` interleaves dispatches (True) and completions (False) of up to c calls."""
    budget = Budget(limits=BudgetLimits(max_calls=cap))
    in_flight = attempts = 0
    for dispatch in order:
        if dispatch and in_flight < concurrency:
            attempts += 1
            if budget.reserve():
                in_flight += 1
        elif in_flight:
            in_flight -= 1
            settle(budget, usd=0.01, failed=in_flight % 2 == 0)
        assert budget.spent.calls <= cap
    assert budget.spent.calls == min(cap, attempts)  # and nothing below the cap is refused


@settings(max_examples=300, deadline=None)
@given(
    limit=st.floats(min_value=0.0, max_value=5.0, allow_nan=False),
    concurrency=st.integers(min_value=1, max_value=8),
    costs=st.lists(st.floats(min_value=0.0, max_value=1.0, allow_nan=False), max_size=120),
    order=st.lists(st.booleans(), max_size=400),
)
def test_usd_overshoots_by_at_most_the_in_flight_window(
    limit: float, concurrency: int, costs: list[float], order: list[bool]
) -> None:
    """Spend known only after a response stops new reservations once reached, so the most it
    can pass ``max_usd`` by is the calls in flight at that moment (c calls of at most M each)."""
    budget = Budget(limits=BudgetLimits(max_usd=limit))
    in_flight: list[float] = []
    pending = list(costs)
    most = max(costs, default=0.0)
    for dispatch in [*order, *[False] * concurrency]:  # finally drain what is in flight
        if dispatch and pending and len(in_flight) < concurrency:
            if budget.reserve():
                in_flight.append(pending.pop(0))
        elif in_flight:
            settle(budget, usd=in_flight.pop(0))
    assert not in_flight
    assert budget.spent.usd <= limit + concurrency * most + 1e-9
    if budget.spent.usd >= limit:
        assert budget.blocking_limit() == "max_usd"
        assert not budget.reserve()


# -- extensions ------------------------------------------------------------------------------


def paused_budget() -> Budget:
    budget = Budget(
        limits=BudgetLimits(max_calls=10, max_input_tokens=500, max_output_tokens=60, max_usd=1.5)
    )
    for _ in range(10):
        assert budget.reserve()
        settle(budget, input_tokens=40, output_tokens=5, usd=0.1)
    assert budget.blocking_limit() == "max_calls"
    return budget


def test_an_extension_above_what_is_spent_is_accepted_and_unblocks() -> None:
    budget = paused_budget()
    new, problems = budget.checked_extension({"max_calls": 20, "max_usd": 3})
    assert problems == []
    assert new == BudgetLimits(max_calls=20, max_usd=3.0)
    budget.limits = budget.limits.model_copy(update=new.model_dump(exclude_none=True))
    assert budget.limits == BudgetLimits(
        max_calls=20, max_input_tokens=500, max_output_tokens=60, max_usd=3.0
    )
    assert budget.reserve()


def test_an_empty_extension_changes_nothing() -> None:
    budget = paused_budget()
    assert budget.checked_extension({}) == (BudgetLimits(), [])
    assert budget.checked_extension(dict.fromkeys(LIMIT_FIELDS)) == (BudgetLimits(), [])


def test_every_limit_below_spent_is_refused_with_field_and_fix() -> None:
    budget = paused_budget()  # 10 calls, 400 input, 50 output tokens, 1.0 USD (floating sum)
    new, problems = budget.checked_extension(
        {"max_calls": 9, "max_input_tokens": 399, "max_output_tokens": 49, "max_usd": 0.5}
    )
    assert new is None
    assert problems == [
        "max_calls=9 is below what is already spent (10): give at least 10",
        "max_input_tokens=399 is below what is already spent (400): give at least 400",
        "max_output_tokens=49 is below what is already spent (50): give at least 50",
        "max_usd=0.5 is below what is already spent (1): give at least 1",
    ]


def test_one_bad_field_refuses_the_whole_extension() -> None:
    new, problems = paused_budget().checked_extension({"max_calls": 100, "max_usd": 0.2})
    assert new is None
    assert len(problems) == 1 and problems[0].startswith("max_usd=0.2 is below")


def test_an_extension_equal_to_what_is_spent_is_not_below_it() -> None:
    new, problems = paused_budget().checked_extension({"max_calls": 10, "max_output_tokens": 50})
    assert problems == [] and new == BudgetLimits(max_calls=10, max_output_tokens=50)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"max_calls": -1}, "max_calls: Input should be greater than or equal to 0"),
        ({"max_usd": -0.01}, "max_usd: Input should be greater than or equal to 0"),
        ({"max_usd": math.nan}, "max_usd: Input should be a finite number"),
        ({"max_calls": 2.5}, "max_calls: Input should be a valid integer"),
        ({"max_input_tokens": "many"}, "max_input_tokens: Input should be a valid integer"),
    ],
)
def test_malformed_values_are_refused_not_raised(values: dict[str, object], expected: str) -> None:
    # A signal handler that raised would leave the workflow task retrying forever.
    new, problems = paused_budget().checked_extension(values)
    assert new is None
    assert len(problems) == 1 and problems[0].startswith(expected), problems


def test_several_malformed_fields_are_all_named() -> None:
    new, problems = Budget().checked_extension({"max_calls": -1, "max_output_tokens": -2})
    assert new is None
    assert [p.split(":")[0] for p in problems] == ["max_calls", "max_output_tokens"]


@settings(max_examples=200, deadline=None)
@given(
    spent_calls=st.integers(min_value=0, max_value=50),
    spent_usd=st.floats(min_value=0, max_value=100, allow_nan=False),
    new_calls=st.none() | st.integers(min_value=0, max_value=100),
    new_usd=st.none() | st.floats(min_value=0, max_value=200, allow_nan=False),
)
def test_an_extension_is_accepted_exactly_when_nothing_is_below_spent(
    spent_calls: int, spent_usd: float, new_calls: int | None, new_usd: float | None
) -> None:
    budget = Budget(spent=BudgetSpent(calls=spent_calls, usd=spent_usd))
    new, problems = budget.checked_extension({"max_calls": new_calls, "max_usd": new_usd})
    below = (new_calls is not None and new_calls < spent_calls) + (
        new_usd is not None and new_usd < spent_usd
    )
    assert len(problems) == below
    assert (new is None) == bool(below)
    if new is not None:
        assert (new.max_calls, new.max_usd) == (new_calls, new_usd)


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"max_usd": math.inf}, "max_usd"),
        ({"max_calls": 10, "max_callz": 5}, "max_callz"),  # a typo must not pass as "no change"
    ],
)
def test_non_finite_limits_and_unknown_fields_are_refused(
    values: dict[str, object], field: str
) -> None:
    # Non-finite numbers and unknown fields are refused everywhere.
    new, problems = paused_budget().checked_extension(values)
    assert new is None
    assert len(problems) == 1 and problems[0].startswith(f"{field}: "), problems
