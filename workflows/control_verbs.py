"""A control verb's update, its validator and its signal form, built once for every workflow.

A verb such as ``extend_budget`` is reachable two ways: an update, whose caller gets the answer
or the refusal, and a signal (fire and forget: ``temporal workflow signal``, a script). Both
take one raw argument (``worker/arity.py`` refuses any other count) and apply one rule:

- the update's validator refuses input that does not decode with ``input.invalid`` (the field's
  path and rule) and what the rule refuses with a ``ValueError``, so nothing enters history;
- the update's handler applies what the validator let through and returns its result;
- the signal applies it too, or, refused, hands the reason to the workflow's ``refuse_signal``
  (recorded as ``control.refused``: a signal has no caller to tell).

A workflow declares the pair as class attributes, under the names the handlers had when they
were written by hand (the message names, not the attribute names, are what histories hold)::

    extend_budget, extend_budget_signal = control_verb(
        update=UPDATE_EXTEND_BUDGET,
        signal=SIGNAL_EXTEND_BUDGET,
        input=ExtendBudgetInput,
        check=_extension,   # (self, decoded input) -> (what to apply, or None; problems)
        apply=_extend,      # (self, what to apply) -> the update's result
    )
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel
from temporalio import workflow
from temporalio.common import RawValue

with workflow.unsafe.imports_passed_through():
    from workflows.inputs import InputInvalid
    from workflows.raw_input import NO_INPUT, decode_raw, input_failure

__all__ = ["RefusesSignals", "control_verb"]

W = TypeVar("W", bound="RefusesSignals")
In = TypeVar("In", bound=BaseModel)
A = TypeVar("A")
R = TypeVar("R")


class RefusesSignals(Protocol):
    def refuse_signal(self, signal: str, message: str) -> None:
        """Record a refused signal (its content, or its arguments: ``worker/arity.py``)."""


def control_verb(
    *,
    update: str,
    signal: str,
    input: type[In],
    check: Callable[[W, In], tuple[A | None, list[str]]],
    apply: Callable[[W, A], R],
) -> tuple[Any, Callable[..., None]]:
    """The update (its validator attached) and the signal of one control verb.

    ``check(workflow, decoded)`` says what the verb would apply, or why not (never raises: it
    runs in a validator and a signal); ``apply(workflow, value)`` applies it and returns the
    update's result."""

    def decided(self: Any, raw: RawValue) -> tuple[A | None, list[str]]:
        decoded = decode_raw(input, raw)
        if isinstance(decoded, InputInvalid):
            return None, [decoded.message]
        return check(self, decoded)

    # ``self`` is left unannotated: the SDK reads the handlers' annotations as the message's
    # argument types and skips only an unannotated ``self``.
    def handler(self, raw: RawValue = NO_INPUT) -> R:
        value, _ = decided(self, raw)
        assert value is not None  # the validator refused anything else
        return apply(self, value)

    def validator(self, raw: RawValue = NO_INPUT) -> None:
        if isinstance(decoded := decode_raw(input, raw), InputInvalid):
            raise input_failure(decoded)  # coded: input.invalid, with the field's path and rule
        _, problems = check(self, decoded)
        if problems:
            raise ValueError("; ".join(problems))

    def signal_handler(self, raw: RawValue = NO_INPUT) -> None:
        value, problems = decided(self, raw)
        if value is None:
            self.refuse_signal(signal, "; ".join(problems))
            return
        apply(self, value)

    # Named as the messages, for the SDK's errors and warnings about a handler.
    handler.__name__ = handler.__qualname__ = update
    validator.__name__ = validator.__qualname__ = f"validate_{update}"
    signal_handler.__name__ = signal_handler.__qualname__ = signal
    updated = workflow.update(name=update)(handler)
    updated.validator(validator)
    return updated, workflow.signal(name=signal)(signal_handler)
