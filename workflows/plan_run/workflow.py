"""``PlanRun``: a plan interpreted as a durable workflow, in the order of plans.md "Run".

    decode input -> validate the plan -> preflight refusals (in the spec's order)
    -> walk the boundaries in plan order: reserve the worst case (pause ``awaiting_budget`` /
       ``awaiting_wall_clock`` until ``extend_budget`` makes it fit), then run the boundary:
       agent step | model gate (redo / terminal routes) | region (fan-out + join) |
       human gate (``awaiting_gate`` until ``resolve_gate``) | pause (``awaiting_input`` until
       ``resume``)
    -> outcome: completed (a result), failed (``ApplicationError`` typed with the reason)

Pauses wait in the same workflow run. One invocation's dispatch lives in ``dispatch``; the
arithmetic, grammar and rules are the pure modules beside this one.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RawValue, RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from activities.plan.workspace import CHECK_PATHS
    from activities.run_store import WRITE_RUN_FILES, WriteRunFilesInput
    from workflows.inputs import INPUT_INVALID
    from workflows.names import (
        PLAN_RUN,
    )
    from workflows.plan.boundaries import (
        Boundary,
        Reservation,
        activated_items,
        boundaries,
        downstream_of,
        region_reservation,
    )
    from workflows.plan.gates import gate_verdict
    from workflows.plan.joins import Branch, join, parse_join
    from workflows.plan.model import (
        AgentStep,
        FanoutStep,
        GateStep,
        PauseStep,
        Plan,
        TournamentStep,
    )
    from workflows.plan.preflight import (
        check_trace,
        declared_paths,
        open_ledger,
        qe_waivers,
        route_models,
    )
    from workflows.plan.reasons import Reason
    from workflows.plan.refs import RefError, extract_json, resolve, whole_reference
    from workflows.plan.run_record import PlanFailure, TerminalRoute
    from workflows.plan.run_types import (
        PathsInput,
        PendingGate,
        PendingPause,
        PlanRunResult,
        RunState,
    )
    from workflows.plan.validate import validate_document
    from workflows.plan_run.child import run_tournament
    from workflows.plan_run.dispatch import Dispatcher
    from workflows.plan_run.state import PlanRunState
    from workflows.raw_input import NO_INPUT, input_failure
    from workflows.run_ids import RUN_ID_INVALID, run_id_problem

__all__ = ["PLAN_INVALID", "PlanRunWorkflow"]

PLAN_INVALID = "plan-invalid"
WORKSPACE_ROOTS_PATCH = "plan-workspace-roots"
WRITE_RETRY = RetryPolicy(maximum_attempts=10, non_retryable_error_types=["ValueError"])
# Failures no branch of a region may absorb: they are about the run, not the item.
_RUN_FATAL = {str(Reason.BUDGET_INVARIANT_VIOLATED), str(Reason.ARTIFACT_PATH_ESCAPES_ROOT)}


@workflow.defn(name=PLAN_RUN)
class PlanRunWorkflow(PlanRunState):
    # -- the run ---------------------------------------------------------------------------

    @workflow.run
    async def run(self, raw: RawValue = NO_INPUT) -> PlanRunResult:
        if self.input_error is not None:
            self._fail_now(self.input_error.code, self.input_error.message)
            raise input_failure(self.input_error)
        if (problem := run_id_problem(self.run_id)) is not None:
            self._fail_now(RUN_ID_INVALID, problem)
            raise ApplicationError(problem, type=RUN_ID_INVALID, non_retryable=True)
        validation = validate_document(self.input.plan)
        if validation.plan is None or validation.errors:
            detail = "; ".join(e.line() for e in validation.errors[:20]) or "invalid plan"
            self._fail_now(PLAN_INVALID, detail)
            raise ApplicationError(detail, type=PLAN_INVALID, non_retryable=True)
        self.plan = plan = validation.plan
        self.wall_started = workflow.now()
        self.record.steps = {s.id: "pending" for s in plan.steps}
        try:
            self._check_start_args(plan)
            self.state = "running"
            self.record.event("run.opened", plan=plan.name, steps=len(plan.steps))
            await self._preflight(plan)
            await self._walk(plan)
        except TerminalRoute as exc:
            self.route_label = exc.label
            self.record.event("route.terminal", route=exc.label)
        except PlanFailure as exc:
            await self._end("failed", exc.reason, exc.detail)
            raise ApplicationError(exc.detail, type=exc.reason, non_retryable=True) from None
        except (asyncio.CancelledError, ActivityError) as exc:
            if not is_cancelled_exception(exc):
                raise
            await self._end("cancelled", None, None)
            raise asyncio.CancelledError() from None
        await self._end("completed", None, None)
        return PlanRunResult(
            run_id=self.run_id,
            route=self.route_label,
            outputs=self.outputs,
            calls=len(self.record.calls),
            usd=round(sum(c.usd for c in self.record.calls), 6),
            simulated=self._simulated(),
        )

    def _check_start_args(self, plan: Plan) -> None:
        for step in plan.steps:
            if isinstance(step, PauseStep):
                self.typed_args[step.pause.resume_arg] = step.pause.json_schema
        parsed, problem = self._parse_args(self.args)
        if problem is not None:
            raise PlanFailure(INPUT_INVALID, f"args: {problem}")
        self.args = parsed

    async def _preflight(self, plan: Plan) -> None:
        """The refusals of plans.md "Run" 1, in its order, before anything runs."""
        check_trace(plan)
        models = route_models(plan, self.input)
        workspace = plan.workspace or self.input.workspace
        declared = declared_paths(plan)
        # Any workspace the input names is held to the worker's declared roots (the patch keeps
        # histories from before that check replaying).
        if declared or (workspace is not None and workflow.patched(WORKSPACE_ROOTS_PATCH)):
            if workspace is None:
                raise PlanFailure(
                    Reason.ARTIFACT_PATH_ESCAPES_ROOT,
                    "steps declare artifacts but the run has no workspace; fix: --workspace DIR",
                )
            field = "plan.workspace" if plan.workspace else "workspace"
            problems: list[str] = await workflow.execute_activity(
                CHECK_PATHS,
                PathsInput(workspace=workspace, paths=declared, field=field),
                result_type=list[str],
                start_to_close_timeout=timedelta(seconds=60),
                retry_policy=WRITE_RETRY,
            )
            if problems:
                raise PlanFailure(Reason.ARTIFACT_PATH_ESCAPES_ROOT, "; ".join(problems))
        for step_id, waiver in qe_waivers(plan, models, self.input):
            self.record.waivers.append(waiver)
            self.record.event("waiver", step=step_id, message=waiver)
        self.ledger = open_ledger(plan, self.input)
        self.dispatcher = Dispatcher(
            run_id=self.run_id,
            seed=self.input.seed,
            plan=plan,
            models=models,
            ledger=self.ledger,
            record=self.record,
            workspace=workspace,
            options=self.input.calls,
            on_wait=self._provider_wait,
        )

    async def _walk(self, plan: Plan) -> None:
        walk = boundaries(plan)
        index = {b.step_id: b.index for b in walk}
        i = 0
        while i < len(walk):
            boundary = walk[i]
            if boundary.on_fail_target and boundary.step_id not in self.on_fail_armed:
                self.record.steps[boundary.step_id] = "skipped"
                i += 1
                continue
            jump = await self._boundary(plan, boundary)
            if jump is not None:
                self.record.event("route", frm=boundary.step_id, to=jump)
            i = index[jump] if jump is not None else i + 1

    async def _boundary(self, plan: Plan, boundary: Boundary) -> str | None:
        """Run one boundary; returns the step id the walk jumps to, or None to go on."""
        self.current = boundary.step_id
        step = plan.step(boundary.step_id)
        if isinstance(step, PauseStep):
            await self._pause(step)
            return None
        if isinstance(step, GateStep) and step.is_human():
            return await self._human_gate(plan, step)
        reservation = boundary.reservation
        items: list[Any] = []
        if isinstance(step, FanoutStep):
            items = self._items(step)
            chain = [plan.step(m) for m in step.fanout.chain]
            reservation = region_reservation(step, chain, len(items))  # type: ignore[arg-type]
        await self._reserve(step.id, reservation)
        ledger = self.ledger
        assert ledger is not None
        ledger.open(step.id, reservation)
        started = workflow.now()
        try:
            if isinstance(step, AgentStep):
                return await self._agent(step)
            if isinstance(step, GateStep):
                await self._model_gate(plan, step)
            elif isinstance(step, FanoutStep):
                await self._region(plan, step, items)
            elif isinstance(step, TournamentStep):
                assert self.dispatcher is not None
                output = await run_tournament(
                    self.dispatcher,
                    step,
                    max_calls=reservation.invocations,
                    inputs=self.args,
                    outputs=self.outputs,
                )
                self._settle(step.id, output)
            return None
        finally:
            elapsed = workflow.now() - started
            ledger.spend_wall(int(elapsed.total_seconds() * 1000))
            ledger.close()

    # -- boundaries --------------------------------------------------------------------------

    async def _agent(self, step: AgentStep) -> str | None:
        assert self.dispatcher is not None
        try:
            output = await self.dispatcher.invoke(step, inputs=self.args, outputs=self.outputs)
        except PlanFailure as exc:
            self.record.steps[step.id] = "failed"
            if step.on_fail is None or exc.reason in _RUN_FATAL:
                raise
            self.record.event("step.failed", step=step.id, reason=exc.reason, on_fail=step.on_fail)
            self.on_fail_armed.add(step.on_fail)
            return step.on_fail
        self._settle(step.id, output)
        return None

    async def _model_gate(self, plan: Plan, gate: GateStep) -> None:
        assert self.dispatcher is not None
        redos = 0
        while True:
            text = await self.dispatcher.invoke(gate, inputs=self.args, outputs=self.outputs)
            verdict = gate_verdict(text)
            self.record.event("gate.verdict", step=gate.id, verdict=verdict, redo=redos)
            self.outputs[gate.id] = text
            route_to = gate.fail_route
            if verdict == "pass":
                self._settle(gate.id, text)
                return
            if verdict == "fail" and route_to and route_to.startswith("terminal:"):
                self._settle(gate.id, text)
                raise TerminalRoute(route_to.removeprefix("terminal:"))
            if redos < gate.max_redos and route_to and not route_to.startswith("terminal:"):
                redos += 1
                self.record.event("gate.redo", step=gate.id, route=route_to, redo=redos)
                target = plan.step(route_to)
                assert isinstance(target, AgentStep)
                output = await self.dispatcher.invoke(
                    target, inputs=self.args, outputs=self.outputs
                )
                self._settle(target.id, output)
                continue
            self.record.steps[gate.id] = "failed"
            if verdict == "fail":
                raise PlanFailure(
                    Reason.GATE_FAILED, f"gate {gate.id!r} failed after {redos} redo(s)"
                )
            raise PlanFailure(
                Reason.GATE_VERDICT_UNPARSEABLE,
                f"gate {gate.id!r}: the output does not end with exactly one line "
                f"'GATE: PASS' or 'GATE: FAIL' (after {redos} redo(s))",
            )

    def _items(self, step: FanoutStep) -> list[Any]:
        over = step.fanout.over
        if isinstance(over, str):
            ref = whole_reference(over)
            try:
                if ref is None:
                    raise RefError(f"{over!r} is not one reference")
                value = resolve(ref, inputs=self.args, outputs=self.outputs)
                if isinstance(value, str):
                    value = extract_json(value)
            except (RefError, ValueError) as exc:
                raise PlanFailure(
                    Reason.MALFORMED_OUTPUT, f"{step.id}.fanout.over: {exc}", step=step.id
                ) from None
            if not isinstance(value, list):
                raise PlanFailure(
                    Reason.MALFORMED_OUTPUT,
                    f"{step.id}.fanout.over: {over} is a {type(value).__name__}, not a list",
                    step=step.id,
                )
            over = value
        return activated_items(over, dedup=step.fanout.dedup, max_fanout=step.fanout.max_fanout)

    async def _region(self, plan: Plan, step: FanoutStep, items: list[Any]) -> None:
        dispatcher = self.dispatcher
        assert dispatcher is not None
        chain = [plan.step(m) for m in step.fanout.chain]
        lanes = asyncio.Semaphore(
            step.fanout.concurrency or step.fanout.max_fanout or len(items) or 1
        )
        self.record.event("region.opened", step=step.id, items=len(items))

        async def branch(index: int, item: Any) -> Branch:
            async with lanes:
                local = dict(self.outputs)
                value: Any = None
                try:
                    for member in chain:
                        assert isinstance(member, AgentStep)
                        value = await dispatcher.invoke(
                            member, inputs=self.args, outputs=local, item=item, item_index=index
                        )
                        local[member.id] = value
                except PlanFailure as exc:
                    return Branch(False, None, exc.reason, exc.detail)
                return Branch(True, value)

        tasks = [asyncio.create_task(branch(i, item)) for i, item in enumerate(items)]
        branches = list(await asyncio.gather(*tasks))
        for b in branches:
            if not b.ok and b.reason in _RUN_FATAL:
                raise PlanFailure(b.reason or "", b.detail, step=step.id)
        outcome = join(parse_join(step.fanout.join), branches)
        self.record.event(
            "region.joined",
            step=step.id,
            ok=outcome.ok,
            settled=outcome.settled,
            first_failure=outcome.first_failure,
        )
        for member in step.fanout.chain:
            self.record.steps[member] = "settled" if outcome.settled else "failed"
        if not outcome.ok:
            self.record.steps[step.id] = "failed"
            raise PlanFailure(Reason.JOIN_UNSATISFIED, f"{step.id}: {outcome.detail}", step=step.id)
        self._settle(step.id, outcome.values)

    async def _human_gate(self, plan: Plan, step: GateStep) -> str | None:
        gate = step.gate
        assert gate is not None
        rounds = self.rounds.get(step.id, 0)
        token = f"{self.epoch}-{workflow.uuid4().hex[:12]}"
        self.gates[step.id] = PendingGate(step=step.id, token=token, round=rounds)
        self.record.steps[step.id] = "waiting"
        self._wait_state("awaiting_gate", Reason.GATE_PENDING)
        self.record.event("gate.opened", step=step.id, token=token, round=rounds)
        await self._write_trace()
        await workflow.wait_condition(lambda: step.id in self.decisions)
        decision = self.decisions.pop(step.id)
        self.gates.pop(step.id, None)
        self._running()
        self.record.event("gate.decided", step=step.id, decision=decision, round=rounds)
        self._settle(step.id, decision)
        self._settled_without_dispatch(step.id, step.deps, decision=decision)
        if decision == "approve":
            return gate.on_approve
        if decision == "kill":
            if gate.on_kill is not None:
                return gate.on_kill
            self.record.steps[step.id] = "failed"
            raise PlanFailure(Reason.GATE_KILLED, f"gate {step.id!r} was killed", step=step.id)
        max_rounds = gate.max_rounds or plan.max_rounds or 0
        target = gate.on_revise
        if rounds >= max_rounds or target is None:
            self.record.steps[step.id] = "failed"
            raise PlanFailure(
                Reason.GATE_ROUNDS_EXHAUSTED,
                f"gate {step.id!r}: revise asked after {rounds} of {max_rounds} round(s)",
                step=step.id,
            )
        self.rounds[step.id] = rounds + 1
        self.epoch += 1
        for reset in downstream_of(plan, target):
            self.outputs.pop(reset, None)
            self.record.steps[reset] = "pending"
        self.record.event("gate.revise", step=step.id, target=target, epoch=self.epoch)
        return target

    async def _pause(self, step: PauseStep) -> None:
        key = step.pause.resume_arg
        if key not in self.args:
            self.pending_pause = PendingPause(
                step=step.id,
                state=step.pause.state,
                resume_arg=key,
                json_schema=step.pause.json_schema,
            )
            self.record.steps[step.id] = "waiting"
            self._wait_state("awaiting_input", Reason.PLAN_PAUSE)
            self.record.event("paused", step=step.id, state=step.pause.state, resume_arg=key)
            await self._write_trace()
            await workflow.wait_condition(lambda: key in self.args)
            self.pending_pause = None
            self._running()
            self.record.event("resumed", step=step.id, resume_arg=key)
        self._settle(step.id, self.args[key])
        self._settled_without_dispatch(step.id, step.deps, resume_arg=key)

    async def _reserve(self, step_id: str, res: Reservation) -> None:
        ledger = self.ledger
        assert ledger is not None
        need = ledger.need(step_id, res)
        if need is None:
            return
        if ledger.budget.spent.calls + res.invocations > ledger.calls_cap:
            raise PlanFailure(
                Reason.BUDGET_EXTENSION_EXHAUSTED,
                f"step {step_id!r} needs {res.invocations} more invocation(s); no extension "
                f"may pass the cap of {ledger.calls_cap}",
            )
        if ledger.wall_spent_ms + res.wall_ms > ledger.wall_cap_ms:
            raise PlanFailure(
                Reason.WALL_EXTENSION_EXHAUSTED,
                f"step {step_id!r} needs {res.wall_ms} ms more; no extension may pass the cap "
                f"of {ledger.wall_cap_ms} ms",
            )
        self.need = need.detail
        self._wait_state(need.state, need.reason)
        self.record.event("paused", step=step_id, state=need.state, need=need.detail)
        await self._write_trace()
        await workflow.wait_condition(lambda: ledger.need(step_id, res) is None)
        self.need = None
        self._running()
        self.record.event("resumed", step=step_id, limits=self._budget_status().model_dump())

    def _provider_wait(self, until: Any) -> None:
        """A provider asked to wait longer than a call may: the run sleeps on a timer."""
        if until is not None:
            self.record.event("waiting_provider", until=until.isoformat())

    def _fail_now(self, code: str, message: str) -> None:
        """A run refused before it opened: queries still answer, nothing is written."""
        self.state = "failed"
        self.reason = code
        self.error = f"{code}: {message}"
        self.record.event("run.closed", outcome="failed", reason=code, error=message)

    async def _end(self, state: RunState, reason: str | None, detail: str | None) -> None:
        self.state = state
        self.reason = reason
        self.current = None
        self.error = f"{reason}: {detail}" if reason else None
        self.gates.clear()
        self.pending_pause = None
        self.record.event(
            "run.closed", outcome=state, reason=reason, error=detail, route=self.route_label
        )
        await self._write_trace(final=True)
        await workflow.wait_condition(workflow.all_handlers_finished)

    async def _write_trace(self, *, final: bool = False) -> None:
        wall_ms = 0
        if self.wall_started is not None:
            wall_ms = int((workflow.now() - self.wall_started).total_seconds() * 1000)
        files = {
            "trace.jsonl": self.record.trace_jsonl(),
            "cost.json": self.record.cost_json(
                run_id=self.run_id,
                plan=self.plan.name if self.plan else "",
                outcome=self.state,
                wall_ms=wall_ms,
            ),
        }
        await workflow.execute_activity(
            WRITE_RUN_FILES,
            WriteRunFilesInput(run_id=self.run_id, files=files),
            result_type=list[str],
            start_to_close_timeout=timedelta(minutes=2),
            retry_policy=WRITE_RETRY,
        )
