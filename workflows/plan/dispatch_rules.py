"""The rules of one dispatch (an agent step or a model gate) that need no workflow to apply.

``workflows.plan_run.dispatch`` awaits the executor and the workspace checks; what it decides
with is here, so each rule is tested by calling it:

- the prompt: rendered with every spliced value defanged, measured against
  ``PROMPT_CEILING_CHARS`` as it is built, and a reference to a skipped step's output named as
  such (``render_prompt``);
- the request: one ``CallModelInput`` per opened invocation (``call_input``), with the sim
  executor's scripted output for that dispatch (``sim_output``);
- a failed call: its plan failure class (``timed_out``, ``raised``, ``transport``), and the
  ``PlanFailure`` it becomes once no retry follows (``call_failure``);
- a failed check: the prompt the next attempt sends after a broken contract or a failed ensure,
  or the ``PlanFailure`` when none may follow (``contract_retry``, ``ensure_retry``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from workflows.model_types import CallModelInput, ModelRequest
from workflows.plan.contracts import check_output
from workflows.plan.flows import scoped
from workflows.plan.gates import defang
from workflows.plan.model import AgentStep, GateStep
from workflows.plan.prompts import assemble_prompt, retry_feedback
from workflows.plan.reasons import Reason
from workflows.plan.refs import Ref, RefError, RenderTooLong, parse_template, render
from workflows.plan.run_record import PlanFailure, PlanRecord
from workflows.provider_errors import ReplayMissError

__all__ = [
    "PROMPT_CEILING_CHARS",
    "REPLAY_MISS",
    "At",
    "CallFailed",
    "EnsureFailed",
    "Invocation",
    "Redo",
    "call_failure",
    "call_input",
    "check_ceiling",
    "contract_retry",
    "ensure_retry",
    "left_the_recording",
    "occurrence_prompt",
    "raised",
    "render_prompt",
    "sim_output",
    "timed_out",
    "transport",
]

PROMPT_CEILING_CHARS = 1_000_000
"""A dispatch prompt past this (upstream values spliced in) fails ``prompt-over-ceiling``."""
REPLAY_MISS = ReplayMissError("").error_type
_CLASS_OF = {
    "provider.timeout": "timeout",
    "provider.malformed_output": "malformed-output",
    "provider.policy_refusal": "policy-refusal",
    str(Reason.ARTIFACT_PATH_ESCAPES_ROOT): "escapes-root",  # the worker refused the workspace
}
_REASON_OF = {
    "escapes-root": Reason.ARTIFACT_PATH_ESCAPES_ROOT,
    "timeout": Reason.DISPATCH_TIMEOUT,
    "malformed-output": Reason.MALFORMED_OUTPUT,
    "policy-refusal": Reason.POLICY_REFUSAL,
    "transport": Reason.DISPATCH_DEAD,
}


@dataclass(frozen=True)
class Redo:
    """A model gate re-runs its fail route: the route step's upstream is its own previous
    output (docs/plans.md; the reference interpreter does the same)."""

    gate: str
    """The gate's scoped id."""
    previous: Any


@dataclass(frozen=True)
class At:
    """Where one occurrence of a step runs: its fan-out item, a gate's redo, extra caused-by
    edges, and the run step whose body it is in (``prefix``)."""

    item: Any = None
    item_index: int | None = None
    redo: Redo | None = None
    causes: tuple[int, ...] = ()
    prefix: str | None = None


def left_the_recording(failure: PlanFailure) -> bool:
    """A call that a wire replay (``calls.replay``, ``on_miss: throw``) found no recording for.
    No ``on_fail`` route, join or sub-flow may absorb it: the run has left its recording, and
    going on would make a run the recording never was, so it fails the run (its ``cause`` tells
    a campaign cell it was a miss, as a single shot's or a tournament's own code does)."""
    return failure.cause == REPLAY_MISS


@dataclass(frozen=True)
class CallFailed:
    """A failed executor call: its plan failure class, what to show, the error's own type."""

    klass: str
    message: str
    code: str | None


def timed_out(timeout_type: object) -> CallFailed:
    """The call outlived its stage timeout (``timeout_type``: which of the activity's)."""
    return CallFailed("timeout", f"no answer before the stage timeout ({timeout_type})", None)


def raised(error_type: str | None, message: str) -> CallFailed:
    """The executor raised a typed error: a class ``retry.on`` can name, else ``transport``."""
    klass = _CLASS_OF.get(error_type or "", "transport")
    return CallFailed(klass, f"{error_type}: {message}", error_type)


def transport(text: str) -> CallFailed:
    """Anything else that ended the call (the worker lost, an untyped error)."""
    return CallFailed("transport", text, None)


def call_failure(sid: str, failed: CallFailed) -> PlanFailure:
    """What a failed call fails its step with once no retry follows."""
    return PlanFailure(
        _REASON_OF[failed.klass], f"{sid}: {failed.message}", step=sid, cause=failed.code
    )


def occurrence_prompt(
    step: AgentStep | GateStep,
    sid: str,
    at: At,
    *,
    inputs: Mapping[str, Any],
    outputs: Mapping[str, Any],
    contract: dict[str, str] | None,
    steps: Mapping[str, str],
    routed_because: str | None,
) -> str:
    """The prompt an occurrence's first attempt sends: rendered (``render_prompt``), then
    assembled with its contract lines, its item, and its upstream output (a redo's: the
    route step's own previous output)."""
    rendered = render_prompt(
        step, sid, inputs=inputs, outputs=outputs, prefix=at.prefix, steps=steps
    )
    upstream = outputs.get(step.deps[0]) if len(step.deps) == 1 else None
    return assemble_prompt(
        step,
        rendered,
        contract=contract,
        item=at.item,
        has_item=at.item_index is not None,
        upstream=upstream if at.redo is None else at.redo.previous,
        redo_of=None if at.redo is None else at.redo.gate,
        routed_because=routed_because,
    )


def render_prompt(
    step: AgentStep | GateStep,
    sid: str,
    *,
    inputs: Mapping[str, Any],
    outputs: Mapping[str, Any],
    prefix: str | None,
    steps: Mapping[str, str],
) -> str:
    """The step's prompt with its references resolved (``steps``: the run's step states, to
    name a skipped step a reference reads), or the ``PlanFailure`` it cannot be sent with."""
    try:
        # Every spliced value is defanged, a reference inside a gate's own prompt too, so
        # no upstream text can arrive as a verdict line.
        return render(
            step.prompt or "",
            inputs=inputs,
            outputs=outputs,
            splice=defang,
            max_chars=PROMPT_CEILING_CHARS,
        )
    except RenderTooLong as exc:  # measured as it is built, never built whole
        raise PlanFailure(
            Reason.PROMPT_OVER_CEILING,
            f"{sid}: the prompt is over the {PROMPT_CEILING_CHARS} ceiling ({exc}); "
            "fix: pass less upstream text",
            step=sid,
        ) from None
    except RefError as exc:
        detail = _unrendered(step.prompt or "", exc, prefix, steps)
        raise PlanFailure(Reason.MALFORMED_OUTPUT, f"{sid}: {detail}", step=sid) from None


def _unrendered(prompt: str, exc: RefError, prefix: str | None, steps: Mapping[str, str]) -> str:
    """Why a prompt did not render. A reference to a skipped step's output names the skip:
    a false ``when`` skips only its own step, so a step after it may run and read it."""
    try:
        segments = parse_template(prompt)
    except RefError:
        return str(exc)  # the template itself is what failed
    skipped = [
        s.name
        for s in segments
        if isinstance(s, Ref)
        and s.source == "steps"
        and steps.get(scoped(prefix, s.name)) == "skipped"
    ]
    if not skipped:
        return str(exc)
    name = skipped[0]
    return (
        f"{exc} (step {name!r} was skipped, so its output is unavailable); fix: give this "
        f"step a when that is false whenever {name!r} is skipped (its own condition, say), "
        "or an on_fail route"
    )


def check_ceiling(sid: str, prompt: str) -> None:
    """An attempt's whole prompt (retry feedback included) is refused past the ceiling."""
    if len(prompt) > PROMPT_CEILING_CHARS:
        raise PlanFailure(
            Reason.PROMPT_OVER_CEILING,
            f"{sid}: the prompt is {len(prompt)} characters, over the "
            f"{PROMPT_CEILING_CHARS} ceiling; fix: pass less upstream text",
            step=sid,
        )


@dataclass(frozen=True)
class Invocation:
    """One opened dispatch: what numbers it and what its ``dispatched`` event is."""

    sid: str
    """The step's scoped id."""
    id: str
    """``step[:item]#n`` (``prompts.invocation_id``)."""
    attempt: int
    """``n``: the step's dispatches under its count key so far, this one included (from 1)."""
    sim_index: int
    """The step's dispatches in the run before this one (``x-sim.outputs`` picks by it)."""
    model: str
    seq: int
    """The seq of its ``dispatched`` event (what its ``settled`` is caused by)."""
    item_index: int | None = None


def call_input(
    step: AgentStep | GateStep,
    invocation: Invocation,
    *,
    run_id: str,
    prompt: str,
    seed: int,
    workspace: str | None,
) -> CallModelInput:
    """The executor's input for one invocation: the ``call_model`` activity's, or what a
    consumer is issued."""
    index = invocation.item_index
    request = ModelRequest(
        model=invocation.model,
        prompt=prompt,
        role="plan",
        seed=seed,
        tag=invocation.id,
        script=sim_output(step, invocation.sim_index),
        workspace=workspace,
        item=None if index is None else str(index),
    )
    return CallModelInput(
        run_id=run_id,
        phase=invocation.sid,
        index=index or 0,
        attempt=invocation.attempt - 1,
        request=request,
    )


def sim_output(step: AgentStep | GateStep, index: int) -> str | None:
    """``x-sim: {outputs: [...]}``: the i-th dispatch of the step returns ``outputs[i]`` (the last
    repeats). Only the sim executor reads ``script``; other providers build their requests
    without it."""
    spec = step.vendor("x-sim")
    outputs = spec.get("outputs") if isinstance(spec, dict) else None
    if not isinstance(outputs, list) or not outputs:
        return None
    chosen = outputs[min(index, len(outputs) - 1)]
    return chosen if isinstance(chosen, str) else None


def contract_retry(
    record: PlanRecord,
    step: AgentStep | GateStep,
    sid: str,
    contracts: Mapping[str, Mapping[str, str]],
    *,
    text: str,
    prompt: str,
    previous: str | None,
    last: bool,
) -> str | None:
    """None when the output keeps its contract (or the step has none); else the next attempt's
    prompt, with the problem shown to the model. ``PlanFailure`` when no attempt may follow:
    the last one, ``malformed-output`` not in ``retry.on``, or the output repeating the
    previous attempt's (the model did not take the feedback)."""
    if not isinstance(step, AgentStep) or not step.out or contracts.get(step.out) is None:
        return None
    _, problem = check_output(text, step.out, contracts)
    if problem is None:
        return None
    retry = retry_feedback(prompt, failure=problem, output=text, previous=previous)
    record.event("contract.failed", step=sid, problem=problem, repeated=retry is None)
    if retry is None or last or "malformed-output" not in step.retry.on:
        raise PlanFailure(Reason.MALFORMED_OUTPUT, f"{sid}: {problem}", step=sid)
    return retry


class EnsureFailed(Protocol):
    """The first ensure predicate an output failed (``plan_run.checks.CheckFailure``)."""

    @property
    def form(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def index(self) -> int: ...
    @property
    def identical_stops(self) -> bool: ...


def ensure_retry(
    step: AgentStep,
    sid: str,
    failed: EnsureFailed,
    *,
    text: str,
    prompt: str,
    previous: str | None,
    last: bool,
) -> str:
    """The next attempt's prompt after ``failed``, or ``PlanFailure`` when no attempt may
    follow (as ``contract_retry``; a repeated output ends the retries only for the forms that
    say so: a file may have been written the second time)."""
    problem = f"ensure {failed.form} failed: {failed.reason}"
    retry = retry_feedback(
        prompt,
        failure=problem,
        output=text,
        previous=previous if failed.identical_stops else None,
    )
    if retry is None or last or "ensure-failed" not in step.retry.on:
        repeated = " (no retry: identical output)" if retry is None else ""
        raise PlanFailure(
            Reason.ENSURE_FAILED,
            f"{sid}: ensure[{failed.index}] {failed.form} failed: {failed.reason}{repeated}",
            step=sid,
        )
    return retry
