"""``evaluate_cel``: a plan's CEL expressions evaluated in worker-owned child processes.

The workflow calls it as a local activity (recorded once as a marker, never re-run on replay).
Bounds, each an error *as data* (``ok: false``), never an activity failure:

- the bound JSON is at most 4 MiB (the workflow checks it before calling; checked again here);
- the child meters every evaluation at 10,000 AST nodes plus comprehension iterations and
  limits its own memory (``activities.plan.cel_child``);
- each expression has 2 s of wall clock, and so has binding the values (a megabyte of tiny
  list items is slow to convert): past that the child is killed (a thread cannot be stopped)
  and started again. The expression that overran fails, the ones after it in the same request
  are not evaluated;
- a value is at most 256 KiB of JSON, the request's values 1 MiB together (they land in history).

Sharing, so that one run's costly expressions cost that run and never another's
(``activities.plan.cel_share`` decides):

- ``POOL_SIZE`` children per worker, each serving one request at a time over a pipe (4-byte
  length + JSON). A request holds a child for a turn: its expressions one after another until
  ``QUANTUM_SECONDS`` have passed while another request waits (plus as long again as binding
  its values took, so binding never dominates); then the child goes to the waiting request of
  the run that has spent the least, and the rest of this one waits its turn again (the child
  keeps its values, so coming back to the same child binds nothing again);
- a child killed by an overrun takes over the spare process kept ready since the first
  overrun (one at most), and a new spare starts beside the others; without a spare ready, the
  child is started again beside the others and handed on only once it is ready. Either way no
  request waits for a start-up another child could spare it;
- each run may use ``RUN_BUDGET_SECONDS`` of evaluator time in all (binding, evaluating, and
  starting the replacement of a child its overrun killed); past it the run's expressions fail
  at once, marked ``too_costly`` (the run fails ``expr-too-costly``), without an evaluator. The
  expression running when the budget runs out finishes within its own 2 s;
- time spent waiting for a child, and a cold child's start-up, are charged to nobody and never
  count against the 2 s; a request that has waited ``QUEUE_SECONDS`` in all gives up (its
  remaining expressions fail, naming the busy worker).

Anything unexpected on the pipe (the child died, garbage) kills the child too, so a request
never reads another's answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import struct
import sys
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio import activity

from activities.plan.cel_share import MAX_RUNS, RUN_BUDGET_SECONDS, FairShare
from workflows.plan.activity_contracts import EVALUATE_CEL
from workflows.plan.check_types import (
    MAX_BOUND_BYTES,
    MAX_VALUE_BYTES,
    MAX_VALUES_BYTES,
    CelOutcome,
    EvaluateCelInput,
    EvaluateCelResult,
)

__all__ = ["EVALUATE_CEL", "CelActivities", "CelEvaluator"]

DEADLINE_SECONDS = 2.0
STARTUP_SECONDS = 60.0
"""A cold child imports cel-python and builds its parser (~1-2 s; more on a loaded machine)."""
POOL_SIZE = 2
"""Children per worker: each may hold up to 1 GiB (its own limit) and a core while it works."""
QUANTUM_SECONDS = 0.25
"""How long a request keeps its child while another waits (a cheap request finishes within)."""
QUEUE_SECONDS = 30.0
"""How long one request may wait for children in all (the workflow allows the call 60 s)."""
_HEADER = struct.Struct(">I")
_ROOT = str(Path(__file__).resolve().parents[2])
# -I: no PYTHON* variables, no user site, no cwd on sys.path; the project root is added alone.
_BOOT = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from activities.plan.cel_child import main; main()"
)


class _ChildGone(Exception):
    pass


def _encode(message: Any) -> bytes:
    # A lone surrogate (a model may send "\ud800") can only sit inside a JSON string, where
    # backslashreplace writes it as the JSON escape it came from: the child reads it back.
    text = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8", "backslashreplace")


def _failed(error: str, *, too_costly: bool = False) -> CelOutcome:
    return CelOutcome(ok=False, error=error, too_costly=too_costly)


@dataclass(eq=False)
class _Request:
    run: str
    expressions: list[str]
    bindings: bytes
    """The bindings as JSON, encoded once: sent again only to a child that lacks them."""
    key: int
    waited: float = 0.0


@dataclass
class _Step:
    outcome: CelOutcome
    seconds: float
    """Evaluator time used: binding (when the child lacked the values) and evaluating."""
    rest: CelOutcome | None = None
    """Set when the request's remaining expressions cannot be evaluated: what they get."""
    killed: bool = False
    bound: bool = False
    """The child converted the request's values first (they were not the ones it held)."""


async def _read(process: asyncio.subprocess.Process) -> dict[str, Any]:
    assert process.stdout is not None
    try:
        header = await process.stdout.readexactly(_HEADER.size)
        (size,) = _HEADER.unpack(header)
        if size > 2 * MAX_VALUE_BYTES + 4096:
            raise _ChildGone(f"an answer of {size} bytes")
        body = await process.stdout.readexactly(size)
    except asyncio.IncompleteReadError:
        raise _ChildGone("the evaluator process exited") from None
    message = json.loads(body)
    if not isinstance(message, dict):
        raise _ChildGone("a malformed answer")
    return message


async def _kill(process: asyncio.subprocess.Process | None) -> None:
    if process is None or process.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        process.kill()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(process.wait(), 10)


class _Child:
    """One evaluator process: started on first use, killed when it overruns or misbehaves."""

    def __init__(self, owner: CelEvaluator) -> None:
        self.owner = owner
        self.process: asyncio.subprocess.Process | None = None
        self.bound: int | None = None
        """The key of the request whose values the child holds."""

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.returncode is None

    async def step(self, request: _Request, index: int) -> _Step:
        """Evaluate ``request``'s expression ``index`` (binding its values first if needed)."""
        deadline = self.owner.deadline_seconds
        began: float | None = None  # a cold start is charged to nobody
        try:
            process = await self.ready()
            began = time.monotonic()
            fresh = self.bound != request.key
            self.bound = None  # until the child says it holds the new values
            try:
                accepted = await asyncio.wait_for(
                    self._send(process, request, index, fresh), deadline
                )
            except TimeoutError:
                await self.kill()
                error = (
                    f"binding the values took over the {deadline:g} s bound; "
                    "fix: bind less (fewer, larger values convert faster)"
                )
                return _Step(_failed(error), time.monotonic() - began, _failed(error), True)
            if not accepted.get("accepted"):
                refused = _failed(str(accepted.get("error") or "the bindings were refused"))
                return _Step(refused, time.monotonic() - began, refused)
            self.bound = request.key
            try:
                message = await asyncio.wait_for(_read(process), deadline)
            except TimeoutError:
                await self.kill()
                overrun = f"over the {deadline:g} s evaluation bound; the evaluator was stopped"
                rest = _failed("not evaluated: an earlier expression stopped the evaluator")
                return _Step(_failed(overrun), time.monotonic() - began, rest, True)
            outcome = CelOutcome.model_validate(message)
            return _Step(outcome, time.monotonic() - began, bound=fresh)
        except (_ChildGone, OSError, TimeoutError, ValueError) as exc:
            await self.kill()
            why = str(exc) or type(exc).__name__
            rest = _failed("not evaluated: an earlier expression stopped the evaluator")
            used = 0.0 if began is None else time.monotonic() - began
            return _Step(_failed(f"the evaluator stopped: {why}"), used, rest, True)
        except BaseException:  # cancelled mid-request: its answers must not reach the next one
            await self.kill()
            raise

    async def _send(
        self, process: asyncio.subprocess.Process, request: _Request, index: int, fresh: bool
    ) -> dict[str, Any]:
        """Write one expression (and the values, to a child that lacks them); the child
        answers once it has converted them."""
        assert process.stdin is not None
        head = _encode({"key": request.key, "expressions": [request.expressions[index]]})
        if fresh:
            size = len(head) + len(',"bindings":') + len(request.bindings)
            process.stdin.write(_HEADER.pack(size) + head[:-1] + b',"bindings":')
            process.stdin.write(request.bindings)
            process.stdin.write(b"}")
        else:
            process.stdin.write(_HEADER.pack(len(head)) + head)
        await process.stdin.drain()
        return await _read(process)

    async def ready(self) -> asyncio.subprocess.Process:
        process = self.process
        if process is not None and process.returncode is None:
            return process
        self.process, self.bound = None, None
        self.process = await self.owner.spawn()
        return self.process

    async def kill(self) -> None:
        process, self.process, self.bound = self.process, None, None
        await _kill(process)


class CelEvaluator:
    """The worker's evaluator children and the fair share between the runs that use them."""

    def __init__(
        self,
        *,
        size: int = POOL_SIZE,
        deadline_seconds: float = DEADLINE_SECONDS,
        startup_seconds: float = STARTUP_SECONDS,
        budget_seconds: float = RUN_BUDGET_SECONDS,
        quantum_seconds: float = QUANTUM_SECONDS,
        queue_seconds: float = QUEUE_SECONDS,
        max_runs: int = MAX_RUNS,
    ) -> None:
        self.deadline_seconds = deadline_seconds
        self.startup_seconds = startup_seconds
        self.quantum_seconds = quantum_seconds
        self.queue_seconds = queue_seconds
        self.share: FairShare[asyncio.Future[_Child]] = FairShare(
            budget_seconds=budget_seconds, max_runs=max_runs
        )
        self._children = [_Child(self) for _ in range(max(size, 1))]
        self._idle = list(self._children)
        self._keys = itertools.count(1)
        self._reviving: set[asyncio.Task[None]] = set()
        self._spare: asyncio.Task[asyncio.subprocess.Process] | None = None
        self.closed = False
        self.started = 0
        """Processes started so far (the first of each child, then one per overrun or death)."""

    def _revive_later(self, child: _Child, run: str) -> None:
        """After a kill: the spare takes over at once if it is ready, else the child starts
        again beside the others and is handed on once ready; the run whose expression overran
        pays for the start-up either way."""
        spare = self._spare
        ready = spare is not None and spare.done() and not spare.cancelled()
        if spare is not None and ready and spare.exception() is None:
            process = spare.result()
            if process.returncode is None:
                self._spare = None
                child.process, child.bound = process, None
                self._spare_later(run)
                self._release(child)
                return
        if spare is None or ready:
            self._spare_later(run)
        self._background(self._revive(child, run))

    def _spare_later(self, run: str) -> None:
        self._spare = asyncio.create_task(self._charged_spawn(run))

    async def _charged_spawn(self, run: str) -> asyncio.subprocess.Process:
        began = time.monotonic()
        process = await self.spawn()
        self.share.charge(run, time.monotonic() - began)
        return process

    def _background(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._reviving.add(task)
        task.add_done_callback(self._reviving.discard)

    async def _revive(self, child: _Child, run: str) -> None:
        began = time.monotonic()
        try:
            await child.ready()
            self.share.charge(run, time.monotonic() - began)
        except (_ChildGone, OSError, TimeoutError, ValueError):
            pass  # the next request to hold the child starts one itself
        finally:
            if not self.closed:
                self._release(child)

    async def spawn(self) -> asyncio.subprocess.Process:
        if self.closed:
            raise _ChildGone("the worker is stopping")
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",
            "-c",
            _BOOT,
            _ROOT,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=_child_env(),
        )
        self.started += 1
        try:
            ready = await asyncio.wait_for(_read(process), self.startup_seconds)
            if not ready.get("ready"):
                raise _ChildGone("the evaluator did not start")
        except BaseException:
            await _kill(process)
            raise
        return process

    @property
    def pids(self) -> list[int]:
        """The running children's process ids."""
        return [c.process.pid for c in self._children if c.process is not None and c.alive]

    async def evaluate(
        self, expressions: list[str], bindings: dict[str, Any], *, run: str = ""
    ) -> EvaluateCelResult:
        """``expressions`` over ``bindings``, one outcome each, charged to ``run``."""
        if not expressions:
            return EvaluateCelResult(outcomes=[])
        if self.share.exhausted(run):
            return EvaluateCelResult(outcomes=[self._too_costly() for _ in expressions])
        body = await asyncio.to_thread(_encode, bindings)
        if len(body) > MAX_BOUND_BYTES + 1024 * 1024:
            error = f"the bound JSON is over the {MAX_BOUND_BYTES >> 20} MiB bound"
            return EvaluateCelResult(outcomes=[_failed(error) for _ in expressions])
        request = _Request(run, list(expressions), body, next(self._keys))
        return EvaluateCelResult(outcomes=_capped(await self._serve(request)))

    async def _serve(self, request: _Request) -> list[CelOutcome]:
        count = len(request.expressions)
        outcomes: list[CelOutcome] = []
        rest: CelOutcome | None = None
        child: _Child | None = None
        turn = length = 0.0
        try:
            while len(outcomes) < count:
                if self.share.exhausted(request.run):
                    rest = self._too_costly()
                    break
                if child is None:
                    child = await self._acquire(request)
                    if child is None:
                        rest = self._busy()
                        break
                    turn, length = time.monotonic(), self.quantum_seconds
                    continue  # the budget again: the run's other requests ran meanwhile
                step = await child.step(request, len(outcomes))
                self.share.charge(request.run, step.seconds)
                outcomes.append(step.outcome)
                if step.bound:  # a turn lasts at least as long again as binding took
                    length = max(length, self.quantum_seconds + step.seconds)
                if step.rest is not None:
                    rest = step.rest
                    if step.killed:
                        self._revive_later(child, request.run)
                        child = None
                    break
                if time.monotonic() - turn >= length and self.share.waiting:
                    self._release(child)
                    child = None
        finally:
            if child is not None:
                self._release(child)
        if rest is not None:
            outcomes += [rest] * (count - len(outcomes))
        return outcomes

    async def _acquire(self, request: _Request) -> _Child | None:
        """A child for ``request``'s next turn: an idle one at once, else when the fair share
        hands it one; None once the request has waited ``queue_seconds`` in all."""
        if self.closed:
            return None
        if self._idle:
            child = next((c for c in self._idle if c.bound == request.key), None)
            child = child or next((c for c in self._idle if c.alive), self._idle[0])
            self._idle.remove(child)
            return child
        future: asyncio.Future[_Child] = asyncio.get_running_loop().create_future()
        self.share.enqueue(request.run, future)
        began = time.monotonic()
        try:
            await asyncio.wait({future}, timeout=max(self.queue_seconds - request.waited, 0.0))
        except BaseException:
            if future.done() and not future.cancelled():
                self._release(future.result())
            else:
                future.cancel()
                self.share.remove(request.run, future)
            raise
        finally:
            request.waited += time.monotonic() - began
        if future.done():
            return None if future.cancelled() else future.result()
        future.cancel()
        self.share.remove(request.run, future)
        return None

    def _release(self, child: _Child) -> None:
        """Hand ``child`` to the next waiting request, or keep it idle."""
        while (future := self.share.pop()) is not None:
            if not future.done():
                future.set_result(child)
                return
        self._idle.append(child)

    def _too_costly(self) -> CelOutcome:
        budget = self.share.budget_seconds
        return _failed(
            f"not evaluated: this run has used its {budget:g} s of expression evaluation on "
            "this worker; fix: make the expressions cheaper (bind less, iterate over less)",
            too_costly=True,
        )

    def _busy(self) -> CelOutcome:
        if self.closed:
            return _failed("not evaluated: the worker is stopping")
        return _failed(
            f"not evaluated: no evaluator was free within {self.queue_seconds:g} s (other runs "
            "kept the worker's evaluators busy); fix: run it again later"
        )

    async def close(self) -> None:
        self.closed = True
        while (future := self.share.pop()) is not None:
            future.cancel()
        for task in list(self._reviving):
            task.cancel()
        await asyncio.gather(*self._reviving, return_exceptions=True)
        spare, self._spare = self._spare, None
        if spare is not None:
            spare.cancel()
            with contextlib.suppress(BaseException):
                await _kill(await spare)
        for child in self._children:
            await child.kill()


def _child_env() -> dict[str, str]:
    """Nothing of the worker's environment (keys, tokens) reaches the child; PONDER_HOME only
    names it, so a test's leftover-process sweep finds it."""
    env = {"LANG": "C.UTF-8"}
    if "PONDER_HOME" in os.environ:
        env["PONDER_HOME"] = os.environ["PONDER_HOME"]
    return env


def _capped(outcomes: list[CelOutcome]) -> list[CelOutcome]:
    """Values over 256 KiB each, or past 1 MiB together, become errors."""
    total = 0
    out = []
    for outcome in outcomes:
        if outcome.ok:
            size = len(json.dumps(outcome.value, separators=(",", ":")).encode())
            total += size
            if size > MAX_VALUE_BYTES:
                outcome = _failed(f"the value is {size} bytes, over {MAX_VALUE_BYTES >> 10} KiB")
            elif total > MAX_VALUES_BYTES:
                outcome = _failed(
                    f"the values are over {MAX_VALUES_BYTES >> 20} MiB together; fix: keep "
                    "set values small (they land in history and in prompts)"
                )
        out.append(outcome)
    return out


class CelActivities:
    def __init__(self, evaluator: CelEvaluator) -> None:
        self.evaluator = evaluator

    @activity.defn(name=EVALUATE_CEL)
    async def evaluate_cel(self, input: EvaluateCelInput) -> EvaluateCelResult:
        info = activity.info()
        run = f"{info.workflow_id or ''}/{info.workflow_run_id or ''}"
        return await self.evaluator.evaluate(input.expressions, dict(input.bindings), run=run)
