"""``evaluate_cel``: a plan's CEL expressions evaluated in a worker-owned child process.

The workflow calls it as a local activity (recorded once as a marker, never re-run on replay).
Bounds, each an error *as data* (``ok: false``), never an activity failure:

- the bound JSON is at most 4 MiB (the workflow checks it before calling; checked again here);
- the child meters every evaluation at 10,000 AST nodes plus comprehension iterations and
  limits its own memory (``activities.plan.cel_child``);
- each expression has 2 s of wall clock, and so has binding the values (a megabyte of tiny
  list items is slow to convert): past that the child is killed (a thread cannot be stopped)
  and the next evaluation starts a fresh one. The expression that overran fails, the ones
  after it in the same request are not evaluated;
- a value is at most 256 KiB of JSON, the request's values 1 MiB together (they land in history).

One child per worker, requests served one at a time over a pipe (4-byte length + JSON); the
time a request waits for the child, and the child's start-up, are not charged to its 2 s.
Anything unexpected on the pipe (the child died, garbage) kills the child too, so a request
never reads another's answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import struct
import sys
from pathlib import Path
from typing import Any

from temporalio import activity

from workflows.plan.check_types import (
    MAX_BOUND_BYTES,
    MAX_VALUE_BYTES,
    MAX_VALUES_BYTES,
    CelOutcome,
    EvaluateCelInput,
    EvaluateCelResult,
)

__all__ = ["EVALUATE_CEL", "CelActivities", "CelEvaluator"]

EVALUATE_CEL = "plan_evaluate_cel"
DEADLINE_SECONDS = 2.0
STARTUP_SECONDS = 60.0
"""A cold child imports cel-python and builds its parser (~1-2 s; more on a loaded machine)."""
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
    body = text.encode("utf-8", "backslashreplace")
    return _HEADER.pack(len(body)) + body


def _failed(error: str) -> CelOutcome:
    return CelOutcome(ok=False, error=error)


class CelEvaluator:
    """The worker's one child process, started on first use and replaced when it overruns."""

    def __init__(
        self,
        *,
        deadline_seconds: float = DEADLINE_SECONDS,
        startup_seconds: float = STARTUP_SECONDS,
    ) -> None:
        self.deadline_seconds = deadline_seconds
        self.startup_seconds = startup_seconds
        self._process: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()
        self.started = 0
        """Children started so far (the first, then one per overrun or death)."""

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    async def evaluate(self, expressions: list[str], bindings: dict[str, Any]) -> EvaluateCelResult:
        if not expressions:
            return EvaluateCelResult(outcomes=[])
        request = await asyncio.to_thread(
            _encode, {"expressions": expressions, "bindings": bindings}
        )
        if len(request) > MAX_BOUND_BYTES + 1024 * 1024:
            error = f"the bound JSON is over the {MAX_BOUND_BYTES >> 20} MiB bound"
            return EvaluateCelResult(outcomes=[_failed(error) for _ in expressions])
        async with self._lock:
            outcomes = await self._serve(request, len(expressions))
        return EvaluateCelResult(outcomes=_capped(outcomes))

    async def _serve(self, request: bytes, count: int) -> list[CelOutcome]:
        outcomes: list[CelOutcome] = []
        try:
            process = await self._child()
            try:
                accepted = await asyncio.wait_for(
                    self._send(process, request), self.deadline_seconds
                )
            except TimeoutError:
                await self._kill()
                error = (
                    f"binding the values took over the {self.deadline_seconds:g} s bound; "
                    "fix: bind less (fewer, larger values convert faster)"
                )
                return [_failed(error) for _ in range(count)]
            if not accepted.get("accepted"):
                error = str(accepted.get("error") or "the bindings were refused")
                return [_failed(error) for _ in range(count)]
            for _ in range(count):
                try:
                    message = await asyncio.wait_for(self._read(process), self.deadline_seconds)
                except TimeoutError:
                    await self._kill()
                    outcomes.append(
                        _failed(
                            f"over the {self.deadline_seconds:g} s evaluation bound; the "
                            "evaluator was stopped"
                        )
                    )
                    break
                outcomes.append(CelOutcome.model_validate(message))
        except (_ChildGone, OSError, TimeoutError, ValueError) as exc:
            await self._kill()
            why = str(exc) or type(exc).__name__
            outcomes.append(_failed(f"the evaluator stopped: {why}"))
        except BaseException:  # cancelled mid-request: its answers must not reach the next one
            await self._kill()
            raise
        while len(outcomes) < count:
            outcomes.append(_failed("not evaluated: an earlier expression stopped the evaluator"))
        return outcomes

    async def _send(self, process: asyncio.subprocess.Process, request: bytes) -> dict[str, Any]:
        """Write the request; the child answers once it has converted the bindings."""
        assert process.stdin is not None
        process.stdin.write(request)
        await process.stdin.drain()
        return await self._read(process)

    async def _child(self) -> asyncio.subprocess.Process:
        process = self._process
        if process is not None and process.returncode is None:
            return process
        self._process = None
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
        self._process = process
        self.started += 1
        ready = await asyncio.wait_for(self._read(process), self.startup_seconds)
        if not ready.get("ready"):
            raise _ChildGone("the evaluator did not start")
        return process

    async def _read(self, process: asyncio.subprocess.Process) -> dict[str, Any]:
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

    async def _kill(self) -> None:
        process, self._process = self._process, None
        if process is None or process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(process.wait(), 10)

    async def close(self) -> None:
        async with self._lock:
            await self._kill()


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
        return await self.evaluator.evaluate(input.expressions, dict(input.bindings))
