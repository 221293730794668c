"""Consumer steps (docs/plans.md, "Consumer steps"): agent steps an external client executes.

Pure. Each attempt of a ``dispatch: consumer`` step mints an *issuance* ``{step, item, attempt,
epoch, token}``; the run waits ``awaiting_consumer`` until the executor answers with the update
``step_done(step, token, result)``. This module holds what the update's validator, its signal
form and the workflow share:

- ``ConsumerDesk``: the live issuances (token -> issuance, with the prompt an executor gets) and
  the accepted answers not yet taken by the dispatch waiting for them;
- ``check_step_done``: the refusals, in order -- a step that is not a consumer step
  (``unknown-step``), a missing or superseded token or no live issuance
  (``stale-dispatch-token``), a malformed result (``invalid-result``);
- ``parse_result``: ``{output | failure, usage?: {tokens, usd, wall_ms}, telemetry?}``, each
  part bounded (the whole at most 4 MiB of JSON, ``telemetry`` 64 KiB, ``failure`` 10,000
  characters); ``usage.calls`` is refused: the engine counts invocations, never the executor.

Only a digest of a token enters the trace (``token_digest``); the token itself is in ``status``
and the ``issuance`` query, which are not history.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, Field

from workflows.bounds import MAX_BUDGET_TOKENS, MAX_BUDGET_USD, MAX_WALL_MS
from workflows.inputs import StrictModel
from workflows.model_types import CallModelInput, ModelResponse
from workflows.plan.control import Refusal
from workflows.plan.feature_rules import consumer_errors
from workflows.plan.flows import invocations
from workflows.plan.model import AgentStep, Plan
from workflows.plan.reasons import Reason
from workflows.plan.status import Issuance

__all__ = [
    "CONSUMER_MODEL",
    "MAX_FAILURE_CHARS",
    "MAX_RESULT_BYTES",
    "MAX_TELEMETRY_BYTES",
    "ConsumerAnswer",
    "ConsumerCall",
    "ConsumerDesk",
    "ConsumerFailure",
    "ConsumerHook",
    "Issuance",
    "IssuanceView",
    "StepDoneInput",
    "StepDoneResult",
    "check_step_done",
    "consumer_errors",
    "consumer_step",
    "consumer_step_ids",
    "parse_result",
    "plan_digest",
    "step_done_id",
    "token_digest",
]

CONSUMER_MODEL = "consumer"
"""What a consumer step "runs on" in the trace and the cost rows: no provider is called."""
MAX_RESULT_BYTES = 896 * 1024
"""A result's JSON: with its step and token it fits in one message (``MAX_MESSAGE_BYTES``)."""
MAX_TELEMETRY_BYTES = 64 * 1024
MAX_FAILURE_CHARS = 10_000
_RESULT_KEYS = ("output", "failure", "usage", "telemetry")
_USAGE_LIMITS: dict[str, tuple[type | tuple[type, ...], float]] = {
    "tokens": (int, MAX_BUDGET_TOKENS),
    "usd": ((int, float), MAX_BUDGET_USD),
    "wall_ms": (int, MAX_WALL_MS),
}


class IssuanceView(BaseModel):
    """The ``issuance(step)`` query: what an executor needs to do the work."""

    step: str
    issuances: list[Issuance] = []
    prompts: dict[str, str] = Field(
        default_factory=dict, description="token -> the prompt exactly as the executor gets it"
    )
    contract: dict[str, str] | None = Field(
        default=None, description="the output contract (field: type), when the step has one"
    )
    plan_digest: str = Field(description="sha256 of the plan document the run was started with")


class StepDoneInput(StrictModel):
    """``step_done``: ``{"step": "build", "token": "<from status>", "result": {"output": ...}}``.

    Every field has a default so any JSON object decodes and the validator names what is wrong
    (``unknown-step``, ``stale-dispatch-token``, ``invalid-result``) instead of a decode error."""

    step: str = ""
    token: str = ""
    result: Any = None


class StepDoneResult(BaseModel):
    step: str
    item: int | None = None
    attempt: int
    accepted: str = Field(description="output | failure")


class ConsumerFailure(Exception):
    """A consumer attempt that failed: the executor reported ``failure`` (class ``transport``,
    ``dispatch-dead``) or the timeout passed first (class ``timeout``, ``dispatch-timeout``)."""

    def __init__(self, klass: str, message: str, *, tokens: int = 0, usd: float = 0.0) -> None:
        super().__init__(message)
        self.klass = klass
        self.message = message
        self.tokens = tokens
        """What the executor reports it spent before failing (settled all the same)."""
        self.usd = usd


@dataclass(frozen=True)
class ConsumerCall:
    """One consumer attempt as the dispatcher hands it over (the prompt is ``call.request``)."""

    step: Any
    call: CallModelInput
    timeout: timedelta
    seq: int
    """The ``dispatched`` event the issuance is caused by."""


ConsumerHook = Callable[[ConsumerCall], Awaitable[ModelResponse]]


@dataclass(frozen=True)
class ConsumerAnswer:
    """A parsed result: exactly one of ``text`` (the output as text) and ``failure``."""

    text: str | None
    failure: str | None
    tokens: int = 0
    usd: float = 0.0
    wall_ms: int = 0
    telemetry: Any = None
    bytes: int = 0


@dataclass
class ConsumerDesk:
    live: dict[str, Issuance] = field(default_factory=dict)
    """token -> the live issuance it answers (removed once answered, timed out or rotated)."""
    prompts: dict[str, str] = field(default_factory=dict)
    answers: dict[str, ConsumerAnswer] = field(default_factory=dict)
    """token -> an accepted answer the waiting dispatch has not taken yet."""

    def issue(self, issuance: Issuance, prompt: str) -> None:
        self.live[issuance.token] = issuance
        self.prompts[issuance.token] = prompt

    def void(self, token: str) -> None:
        self.live.pop(token, None)
        self.prompts.pop(token, None)
        self.answers.pop(token, None)

    def accept(self, token: str, answer: ConsumerAnswer) -> Issuance:
        issuance = self.live.pop(token)
        self.prompts.pop(token, None)
        self.answers[token] = answer
        return issuance

    def rotate(self) -> list[str]:
        """Void every live token (a revert): returns them, so they can be refused as stale."""
        tokens = list(self.live)
        for token in tokens:
            self.void(token)
        self.answers.clear()
        return tokens

    def of_step(self, step: str) -> list[Issuance]:
        return [i for i in self.live.values() if i.step == step]


def token_digest(token: str) -> str:
    """What the trace records instead of a token: enough to match it, not to use it."""
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()[:16]


def step_done_id(answer: StepDoneInput) -> str:
    """The update id a client sends ``answer`` with: a digest of its step, token and what it
    answers (``output`` or ``failure``; ``usage`` and ``telemetry`` are about the answer, not
    it). Temporal answers a repeated id once, so the same answer sent again (a retried
    command) stays one answer; a *different* output for a token already used gets its own id,
    reaches the validator and is refused ``stale-dispatch-token`` (an id of the token alone
    deduplicated it into the first answer's success)."""
    said = answer.result
    if isinstance(said, dict):
        said = {k: said[k] for k in ("output", "failure") if k in said}
    body = json.dumps(
        [answer.step, answer.token, said],
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=str,
    )
    return "step_done:" + hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()


def check_step_done(
    desk: ConsumerDesk, consumer_steps: Collection[str], input: StepDoneInput
) -> tuple[ConsumerAnswer | None, Refusal | None]:
    """The answer ``input`` carries, or the refusal (the validator's and the signal's rule)."""
    if input.step not in consumer_steps:
        known = ", ".join(sorted(consumer_steps)) or "none"
        return None, Refusal(
            Reason.UNKNOWN_STEP,
            f"{input.step!r} is not a consumer step of this plan (consumer steps: {known})",
        )
    live = desk.live.get(input.token) if input.token else None
    if live is None or live.step != input.step:
        waiting = len(desk.of_step(input.step))
        what = "no token given" if not input.token else "the token is not a live issuance"
        return None, Refusal(
            Reason.STALE_DISPATCH_TOKEN,
            f"{what} of {input.step!r} ({waiting} live issuance(s); a token is void once "
            "answered, timed out, retried or reverted); read the current one from status",
        )
    answer, problem = parse_result(input.result)
    if problem is not None:
        return None, Refusal(Reason.INVALID_RESULT, problem)
    return answer, None


def parse_result(raw: Any) -> tuple[ConsumerAnswer | None, str | None]:
    """``(answer, None)`` or ``(None, problem)``; the problem names the field and the fix."""
    if not isinstance(raw, dict):
        return None, (
            'result must be an object {"output": ...} or {"failure": "..."}; fix: send one of them'
        )
    unknown = sorted(set(raw) - set(_RESULT_KEYS))
    if unknown:
        return None, (
            f"result has unknown field(s) {', '.join(unknown)}; fix: use only "
            f"{', '.join(_RESULT_KEYS)}"
        )
    size = _json_size(raw)
    if size < 0:
        return None, "result holds NaN or an infinity; fix: send finite numbers only"
    if size > MAX_RESULT_BYTES:
        return None, (
            f"result is {size} bytes of JSON, over the {MAX_RESULT_BYTES} byte ceiling; fix: "
            "write large output to a declared file and return a short value"
        )
    has_output = raw.get("output") is not None
    has_failure = raw.get("failure") is not None
    if has_output == has_failure:
        given = "both" if has_output else "neither"
        return None, f"result gives {given} of output and failure; fix: give exactly one"
    failure = raw.get("failure")
    if has_failure and (not isinstance(failure, str) or not failure.strip()):
        return None, "result.failure must be a non-empty string; fix: say what went wrong"
    if isinstance(failure, str) and len(failure) > MAX_FAILURE_CHARS:
        return None, (
            f"result.failure is {len(failure)} characters, over {MAX_FAILURE_CHARS}; fix: "
            "shorten it"
        )
    usage, problem = _usage(raw.get("usage"))
    if problem is not None:
        return None, problem
    telemetry = raw.get("telemetry")
    if telemetry is not None and _json_size(telemetry) > MAX_TELEMETRY_BYTES:
        return None, (
            f"result.telemetry is over {MAX_TELEMETRY_BYTES} bytes of JSON; fix: send less"
        )
    output = raw.get("output")
    text = None
    if has_output:
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    return (
        ConsumerAnswer(
            text=text,
            failure=failure if has_failure else None,
            tokens=int(usage.get("tokens", 0)),
            usd=float(usage.get("usd", 0.0)),
            wall_ms=int(usage.get("wall_ms", 0)),
            telemetry=telemetry,
            bytes=size,
        ),
        None,
    )


def _usage(raw: Any) -> tuple[Mapping[str, Any], str | None]:
    if raw is None:
        return {}, None
    if not isinstance(raw, dict):
        return {}, "result.usage must be an object {tokens, usd, wall_ms}; fix: send one"
    if "calls" in raw:
        return {}, (
            "result.usage.calls is not accepted: the engine counts invocations itself (one per "
            "issuance); fix: remove it"
        )
    for key, value in raw.items():
        if key not in _USAGE_LIMITS:
            return {}, (f"result.usage.{key} is not a usage field; fix: use tokens, usd, wall_ms")
        kinds, ceiling = _USAGE_LIMITS[key]
        in_range = isinstance(value, int | float) and 0 <= value <= ceiling
        if isinstance(value, bool) or not isinstance(value, kinds) or not in_range:
            kind = "an integer" if kinds is int else "a number"
            return {}, (
                f"result.usage.{key} must be {kind} from 0 to {ceiling:g} (got "
                f"{json.dumps(value)[:40]}); fix: send a value in range"
            )
    return raw, None


def _json_size(value: Any) -> int:
    """Bytes of compact JSON; -1 when ``value`` holds NaN or an infinity (refused)."""
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError:
        return -1
    except (TypeError, RecursionError):
        return MAX_RESULT_BYTES + 1
    return len(text.encode())


def consumer_step_ids(plan: Plan) -> frozenset[str]:
    """The ids a ``step_done`` may name: every ``dispatch: consumer`` agent step, a flow child
    by its scoped id (``<run step>/<child>``), a chain member by its own."""
    return frozenset(
        sid
        for sid, step in invocations(plan)
        if isinstance(step, AgentStep) and step.dispatch == "consumer"
    )


def consumer_step(plan: Plan, sid: str) -> AgentStep | None:
    """The consumer step a (scoped) id names, or None."""
    for found, step in invocations(plan):
        if found == sid and isinstance(step, AgentStep) and step.dispatch == "consumer":
            return step
    return None


def plan_digest(document: Mapping[str, Any]) -> str:
    """sha256 of the plan document as started (canonical JSON): an executor can tell which plan
    an issuance belongs to."""
    body = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(body.encode()).hexdigest()
