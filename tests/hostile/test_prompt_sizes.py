"""Prompt templates that multiply their variables, through the real ``temporal`` binary against a
real worker process: a 70 KB tournament input whose template names ``{task}`` ten thousand times
used to build 100 MB prompts in the workflow's thread, trip the deadlock detector and wedge the
worker. Every such run is refused when its input decodes (nothing called, nothing written), a
plan's step that splices a run argument ten thousand times fails ``prompt-over-ceiling`` before
its child or call starts (and a tournament step whose task the child's input refuses fails the
step, not the workflow task), a probe ``Ask`` on the same worker finishes meanwhile, and the
worker exits within 10 s of SIGTERM (``shared_worker`` asserts that on leaving the block).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from activities.call_model import CALL_MODEL
from activities.config import Settings
from tests.hostile.harness import SharedWorker, dumps, shared_worker, temporal
from workflows.names import PLAN_RUN, TOURNAMENT
from workflows.tournament.prompt_sizes import PROMPT_CEILING_CHARS
from workflows.tournament.prompts import builtin_template

TASK = "x" * 10_000
CEILING = f"over the ceiling of {PROMPT_CEILING_CHARS:,} characters per prompt"

# id: (Tournament input, what the refusal names)
TOURNAMENTS: dict[str, tuple[dict[str, Any], str]] = {
    "t-generate": (  # a hostile input, as it was once sent
        {
            "task": TASK,
            "model": "sim:default",
            "custom": {"n": 2, "k": 1, "t": 0, "m": 1},
            "prompts": {"generate": {"user": "{task}" * 10_000}},
            "budget": {"max_calls": 20},
        },
        "prompts.generate.user: the generate prompt can render up to "
        f"{10_000 * 10_000 + len(builtin_template('generate').system):,} characters "
        "({task} 10,000 times, at up to 10,000 characters each)",
    ),
    "t-rank": (  # rank's input: given candidates, the judge's template names one 10,000 times
        {
            "task": "Which is better?",
            "model": "sim:default",
            "custom": {"n": 2, "k": 1, "t": 0, "m": 1},
            "candidates": [{"id": "a", "text": TASK}, {"id": "b", "text": TASK}],
            "prompts": {"compare": {"user": "{candidateA}" * 10_000 + "{candidateB}"}},
        },
        "prompts.compare.user: the compare prompt can render up to "
        f"{10_001 * 10_000 + len(builtin_template('compare').system):,} characters "
        "({candidateA} 10,000 times, at up to 10,000 characters each)",
    ),
    "t-mutate": (  # the mutator's system prompt names the critique (16,000 by default)
        {
            "task": "Sort a list.",
            "model": "sim:default",
            "custom": {"n": 4, "k": 2, "t": 1, "m": 2},
            "prompts": {"mutate": {"system": "{critique}" * 10_000}},
        },
        "prompts.mutate.system: the mutate prompt can render up to",
    ),
}


def _plan(step: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    return {"plan": {"schema": "ponder-plan/1", "name": "sizes", "steps": [step]}, "args": args}


def _tournament_step(prompt: str) -> dict[str, Any]:
    return {
        "id": "best",
        "kind": "tournament",
        "prompt": prompt,
        "model": "sim:default",
        "tournament": {"profile": "quick"},
    }


OVER = "passes 1,000,000 characters"
# id: (PlanRun input, the failure type, a part of its message)
PLANS: dict[str, tuple[dict[str, Any], str, str]] = {
    "p-tournament": (
        _plan(_tournament_step("${input.t}" * 10_000), {"t": TASK}),
        "prompt-over-ceiling",
        "best: the tournament's task is over the 1,000,000-character prompt ceiling",
    ),
    "p-agent": (
        _plan(
            {"id": "a", "kind": "agent", "prompt": "${input.t}" * 10_000, "model": "sim:default"},
            {"t": TASK},
        ),
        "prompt-over-ceiling",
        "a: the prompt is over the 1000000 ceiling",
    ),
    # A task the child's input refuses (empty) fails the step; it once failed the workflow
    # task at every retry.
    "p-empty-task": (
        _plan(_tournament_step("${input.e}"), {"e": ""}),
        "malformed-output",
        "best: the tournament's input is refused: task: String should have at least 1 character",
    ),
}


async def _start(worker: SharedWorker, kind: str, workflow_id: str, file: Path) -> None:
    """``temporal workflow start --input-file``, as a stranger sends it: one input of over 128 KiB
    is more than one command-line argument may hold."""
    code, output = await temporal(
        "workflow", "start", "--address", worker.address, "--namespace", "default",
        "--task-queue", worker.queue, "--type", kind, "--workflow-id", workflow_id,
        "--input-file", str(file),
    )  # fmt: skip
    assert code == 0, output


async def test_multiplying_templates_are_refused_before_any_call(
    client: Client, settings: Settings, server_address: str, tmp_path: Path
) -> None:
    async with shared_worker(client, settings, server_address) as worker:
        started = [
            *((TOURNAMENT, i, value) for i, (value, _) in TOURNAMENTS.items()),
            *((PLAN_RUN, i, value) for i, (value, _, _) in PLANS.items()),
        ]
        for kind, workflow_id, value in started:
            file = tmp_path / f"{workflow_id}.json"
            file.write_text(dumps(value))
            await _start(worker, kind, workflow_id, file)
        began = time.monotonic()
        await worker.probe()  # while the hostile runs are processed
        ids = [*TOURNAMENTS, *PLANS]
        errors = dict(
            zip(
                ids,
                await asyncio.gather(*(worker.failure(i, within=15) for i in ids)),
                strict=True,
            )
        )
        assert time.monotonic() - began < 20  # each refused in its first workflow task
        for workflow_id, (_, needle) in TOURNAMENTS.items():
            error = errors[workflow_id]
            assert error.type == "input.invalid", (workflow_id, error)
            assert needle in error.message and CEILING in error.message, error.message
            assert not (settings.runs_dir / workflow_id).exists()  # refused at decode
            history = await worker.handle(workflow_id).fetch_history()
            kinds = {e.event_type for e in history.events}
            assert EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED not in kinds
            assert EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED not in kinds
        for workflow_id, (_, code, needle) in PLANS.items():
            error = errors[workflow_id]
            assert error.type == code, (workflow_id, error)
            assert needle in error.message, error.message
            if code == "prompt-over-ceiling":
                assert OVER in error.message, error.message
            history = await worker.handle(workflow_id).fetch_history()
            kinds = {e.event_type for e in history.events}
            assert EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED not in kinds
            assert EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED not in kinds
            scheduled = [
                e.activity_task_scheduled_event_attributes.activity_type.name
                for e in history.events
                if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
            ]
            assert CALL_MODEL not in scheduled, scheduled
        assert not list(settings.runs_dir.glob("p-*.best*"))  # no child tournament
        await worker.probe()
