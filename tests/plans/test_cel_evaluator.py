"""The worker's CEL evaluator process and the file probes, as units (real processes, real files).

The evaluator: errors are outcomes, the meter and the 2 s bound stop an evaluation, the child is
replaced after an overrun or a death (never reusing a pipe with someone else's answers), and a
cancelled request does not leak its answers into the next one. The probes: regular files only,
jailed to the workspace, no hang on a FIFO, a 16 MiB cap, strict UTF-8.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest

from activities.plan.cel import CelEvaluator
from activities.plan.probes import probe
from workflows.plan.check_types import MAX_FILE_BYTES, FileProbe


async def test_values_and_errors_come_back_in_order(evaluator: CelEvaluator) -> None:
    result = await evaluator.evaluate(
        ["result.n * 2", "result.__class__", "1 / 0", "result.l.map(x, x + 1)", "type(1)"],
        {"result": {"n": 21, "l": [1, 2]}},
    )
    ok = [(o.ok, o.value) for o in result.outcomes]
    assert ok[0] == (True, 42) and ok[3] == (True, [2, 3])
    errors = [o.error or "" for o in result.outcomes]
    assert "no such member" in errors[1] and "divide by zero" in errors[2]
    assert "not a JSON value" in errors[4]


async def test_refused_texts_are_refused_again_in_the_evaluator(evaluator: CelEvaluator) -> None:
    # Input that skipped validation (or a future validator bug) still cannot reach timestamps.
    result = await evaluator.evaluate(["timestamp('2024-01-01T00:00:00Z')", "ghost"], {})
    assert [o.ok for o in result.outcomes] == [False, False]
    assert "refused" in (result.outcomes[0].error or "")
    assert "ghost not bound" in (result.outcomes[1].error or "")


async def test_the_meter_and_the_clock_stop_an_evaluation_and_the_child_is_replaced(
    evaluator: CelEvaluator,
) -> None:
    big = {"l": list(range(3000))}
    metered = await evaluator.evaluate(["input.l.all(x, input.l.all(y, true))"], {"input": big})
    assert "10,000 step meter" in (metered.outcomes[0].error or "")
    (first,) = evaluator.pids
    slow = {"a": [1] * 20_000, "b": [1] * 19_999 + [2], "l": list(range(300))}
    overrun = await evaluator.evaluate(
        ["input.l.exists(x, input.a == input.b)", "true"], {"input": slow}
    )
    # Only the evaluator's own timer gives this error (no wall-clock bound here, which load
    # could break): the child was stopped at the bound, not waited out.
    assert "over the 2 s evaluation bound" in (overrun.outcomes[0].error or "")
    assert "not evaluated" in (overrun.outcomes[1].error or "")
    with pytest.raises(ProcessLookupError):
        os.kill(first, 0)  # killed; its replacement starts at once
    assert first not in evaluator.pids
    again = await evaluator.evaluate(["1 + 1"], {})
    assert again.outcomes[0].value == 2 and evaluator.started >= 2


async def _exited(evaluator: CelEvaluator, pid: int) -> None:
    """Until the evaluator has reaped child ``pid`` (it is no longer among the live ones)."""
    deadline = time.monotonic() + 30
    while pid in evaluator.pids:
        assert time.monotonic() < deadline, f"child {pid} was never reaped"
        await asyncio.sleep(0.01)


async def _evaluating(evaluator: CelEvaluator) -> None:
    """Until a child has taken a request's values, so it is evaluating its expression."""
    deadline = time.monotonic() + 30
    while not any(child.bound is not None for child in evaluator._children):
        assert time.monotonic() < deadline, "no child took the request"
        await asyncio.sleep(0.01)


async def test_a_dead_child_is_replaced(evaluator: CelEvaluator) -> None:
    await evaluator.evaluate(["true"], {})
    (pid,) = evaluator.pids
    os.kill(pid, signal.SIGKILL)
    await _exited(evaluator, pid)  # the death is seen before the next request, not mid-way
    result = await evaluator.evaluate(["2 * 3"], {})
    assert result.outcomes[0].value == 6 and evaluator.started == 2


async def test_a_cancelled_request_does_not_leak_into_the_next(evaluator: CelEvaluator) -> None:
    slow = {"a": [1] * 20_000, "b": [1] * 19_999 + [2], "l": list(range(300))}
    task = asyncio.create_task(
        evaluator.evaluate(["input.l.exists(x, input.a == input.b)"], {"input": slow})
    )
    await _evaluating(evaluator)  # cancelled while the child works: its answer comes later
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    result = await evaluator.evaluate(["'fresh'"], {})
    assert result.outcomes[0].value == "fresh"


async def test_values_over_their_bounds_are_errors(evaluator: CelEvaluator) -> None:
    text = "x" * 220_000
    result = await evaluator.evaluate(
        ["input.t + input.t", "input.t", "input.t", "input.t", "input.t", "input.t"],
        {"input": {"t": text}},
    )
    errors = [o.error or "" for o in result.outcomes]
    assert "over 256 KiB" in errors[0]
    assert [o.ok for o in result.outcomes[1:]] == [True, True, True, True, False]
    assert "over 1 MiB together" in errors[5]


def test_probes(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.md").write_text("hello wörld\n")
    (root / "bin").write_bytes(b"\xff\xfe\x00")
    (root / "inner").symlink_to(root / "docs" / "a.md")
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    (root / "out").symlink_to(outside)
    os.mkfifo(root / "pipe")
    with (root / "huge").open("wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)

    def check(path: str, text: str | None = None) -> tuple[bool, bool, str]:
        outcome = probe(str(root), FileProbe(path=path, text=text))
        return outcome.holds, outcome.escapes, outcome.reason

    assert check("docs/a.md")[:2] == (True, False)
    assert check("docs/a.md", "wörld")[:2] == (True, False)
    assert check("docs/a.md", "mars") == (False, False, "docs/a.md does not contain 'mars'")
    assert check("inner", "hello")[:2] == (True, False)  # a link that stays inside is followed
    assert check("docs/missing.md") == (False, False, "docs/missing.md does not exist")
    assert check("nodir/x.md")[:2] == (False, False)
    assert check("docs")[2] == "docs is not a regular file"
    # Opening the FIFO would block for ever (the per-test timeout fails that): answering at all
    # shows it was never opened, with no wall-clock bound for load to break.
    assert check("pipe", "x")[2] == "pipe is not a regular file"
    assert check("huge", "x")[0] is False and "over the 16 MiB" in check("huge", "x")[2]
    assert check("bin", "x")[2] == "bin is not UTF-8 text"
    assert check("out")[:2] == (False, True)
    assert check("../outside.txt")[:2] == (False, True)
    assert check("/etc/passwd")[:2] == (False, True)


async def test_a_lone_surrogate_is_carried_not_a_crash(evaluator: CelEvaluator) -> None:
    from workflows.plan.predicates import bound_bytes

    values = {"result": {"t": "a\ud800b"}}
    assert bound_bytes(values) == len('{"result":{"t":"a\\ud800b"}}')
    result = await evaluator.evaluate(["size(result.t)", "result.t.startsWith('a')"], values)
    assert [(o.ok, o.value) for o in result.outcomes] == [(True, 3), (True, True)]
