"""Consumer dispatch from workflow code: issue an attempt to an external executor, wait for it.

    mint a token -> ``consumer.issued`` (a digest of the token) -> ``awaiting_consumer``
    (``consumer-pending``) -> wait for ``step_done`` (``consumer_control``), the timeout (a
    durable timer) or a revert -> ``consumer.done`` -> the answer, as a provider's would be

The invocation was spent and the writes snapshotted by the dispatcher before the issuance, so an
accepted output goes through the same barrier, contract, ensures and retries as an engine's. A
reported failure is class ``transport`` (``dispatch-dead``); the timeout voids the token, class
``timeout`` (``dispatch-timeout``). The consumer's time is agent time: the boundary's wall clock
counts it, unlike a person's wait.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workflows.model_types import ModelResponse, Usage
    from workflows.plan.checkpoints import Reverted
    from workflows.plan.consumer import (
        CONSUMER_MODEL,
        ConsumerCall,
        ConsumerFailure,
        ConsumerHook,
        Issuance,
        token_digest,
    )
    from workflows.plan.reasons import Reason
    from workflows.plan.run_record import CallRow
    from workflows.plan_run.finish import write_trace
    from workflows.plan_run.state import PlanRunState

__all__ = ["consumer_hook"]

MAX_FAILURE_SHOWN = 500


def consumer_hook(run: PlanRunState) -> ConsumerHook:
    """The dispatcher's ``consumer`` hook for this run."""

    async def hook(consumer: ConsumerCall) -> ModelResponse:
        return await _issue_and_wait(run, consumer)

    return hook


async def _issue_and_wait(run: PlanRunState, consumer: ConsumerCall) -> ModelResponse:
    call = consumer.call
    sid = call.phase
    item = None if call.request.item is None else int(call.request.item)
    epoch = run.epochs.get(sid, 0)
    token = f"{epoch}-{workflow.uuid4().hex}"
    now = workflow.now()
    issuance = Issuance(
        step=sid,
        item=item,
        attempt=call.attempt + 1,
        epoch=epoch,
        token=token,
        invocation=call.request.tag or sid,
        issued_at=now.isoformat(),
        deadline_at=(now + consumer.timeout).isoformat(),
    )
    run.desk.issue(issuance, call.request.prompt)
    digest = token_digest(token)
    run.record.event(
        "consumer.issued",
        caused_by=[consumer.seq],
        step=sid,
        item=item,
        attempt=issuance.attempt,
        epoch=epoch,
        token=digest,
        invocation=issuance.invocation,
        deadline_at=issuance.deadline_at,
    )
    if run.state == "running":
        run.wait_state("awaiting_consumer", Reason.CONSUMER_PENDING)
        await write_trace(run)  # the run directory shows what the run waits for
    control = run.control
    try:
        await workflow.wait_condition(
            lambda: token in run.desk.answers or control.revert_to is not None,
            timeout=consumer.timeout,
        )
    except TimeoutError:
        run.desk.void(token)
        _stop_waiting(run)
        run.record.event("consumer.timeout", step=sid, item=item, token=digest)
        raise ConsumerFailure(
            "timeout",
            f"no step_done within the stage timeout ({consumer.timeout.total_seconds():g} s); "
            "the token is void",
        ) from None
    answer = run.desk.answers.pop(token, None)
    if answer is None:  # a revert abandoned the wait: applying it rotates the token
        assert control.revert_to is not None
        # The invocation was spent: its row keeps calls.jsonl, cost.json and the closing line
        # counting what the ledger counts.
        run.record.calls.append(
            CallRow(issuance.invocation, sid, call.request.model, outcome="reverted")
        )
        run.record.event(
            "settled",
            caused_by=[consumer.seq],
            step=sid,
            invocation=issuance.invocation,
            ok=False,
            failure="reverted",
        )
        raise Reverted(control.revert_to)
    _stop_waiting(run)
    run.record.event(
        "consumer.done",
        step=sid,
        item=item,
        attempt=issuance.attempt,
        token=digest,
        outcome="failure" if answer.failure is not None else "output",
        chars=len(answer.text or ""),
        tokens=answer.tokens,
        usd=answer.usd,
        wall_ms=answer.wall_ms,
        telemetry=answer.telemetry,
    )
    usage = Usage(output_tokens=answer.tokens)
    if answer.failure is not None:
        # The executor worked (and may have spent) before it failed: the dispatcher settles it.
        shown = answer.failure[:MAX_FAILURE_SHOWN]
        raise ConsumerFailure(
            "transport",
            f"the consumer reported a failure: {shown}",
            tokens=answer.tokens,
            usd=answer.usd,
        )
    assert answer.text is not None
    return ModelResponse(
        text=answer.text,
        model=CONSUMER_MODEL,
        provider=CONSUMER_MODEL,
        usage=usage,
        usd=answer.usd,
        latency_ms=float(answer.wall_ms),
    )


def _stop_waiting(run: PlanRunState) -> None:
    """Back to running once no issuance is live (a region's other items may still wait)."""
    if run.state == "awaiting_consumer" and not run.desk.live:
        run.running()
