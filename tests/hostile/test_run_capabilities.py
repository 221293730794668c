"""A run reads another run only with that run's read token, through the real ``temporal`` binary.

Input that names another run as a source (``replay:RUN_ID`` or a ``replay:`` path into the run
store, ``from_checkpoint``, ``calls.replay``) without the read token in that run's directory is
refused at decode (``run.capability_required``), and with a wrong one before anything of the
source is read (``run.capability_invalid``): the hostile run's decoded history holds none of
the victim's arguments, outputs, answer, labels or token. The same reads through ponder's own
client, which reads the token from the run store, still work. A probe Ask answers within 10 s
meanwhile, and the worker exits within 10 s of SIGTERM (the harness).
"""

from __future__ import annotations

import asyncio
import os
import stat
import uuid
from typing import Any

from temporalio.client import Client

from activities.config import Settings
from client.api import Ponder
from client.runs import start_run
from client.session import open_session
from tests.history_search import decoded_history
from tests.hostile.harness import SharedWorker, dumps, shared_worker
from workflows.ask_types import AskInput
from workflows.names import ASK, PLAN_RUN
from workflows.plan.run_types import FromCheckpoint, PlanRunInput, PlanRunResult
from workflows.run_capabilities import READ_TOKEN_FILE

CODED_WITHIN = 15.0
WRONG = "0123456789abcdef" * 2


def _victim_plan(secret: str) -> dict[str, Any]:
    return {
        "schema": "ponder-plan/1",
        "name": "victim",
        "steps": [
            {
                "id": "draft",
                "kind": "agent",
                "prompt": "Draft ${input.topic}.",
                "model": "sim:default",
                "x-sim": {"outputs": [f"OUTPUT-{secret}"]},
                "checkpoint": "drafted",
            }
        ],
    }


async def _hostile_history(worker: SharedWorker, workflow_id: str, settings: Settings) -> str:
    return (await decoded_history(worker.handle(workflow_id), settings)).text


async def test_another_runs_files_need_its_read_token(
    client: Client, settings: Settings, server_address: str
) -> None:
    tag = uuid.uuid4().hex[:8]
    secret = f"S{uuid.uuid4().hex[:12]}"
    victim_ask, victim_plan = f"cap-victim-ask-{tag}", f"cap-victim-plan-{tag}"
    async with shared_worker(client, settings, server_address) as worker:
        ask_in = {"question": f"Q-{secret}", "model": "sim:default,chars=120", "seed": 91}
        await worker.start(ASK, victim_ask, dumps(ask_in))
        plan_in = {"plan": _victim_plan(secret), "args": {"topic": f"ARG-{secret}"}}
        await worker.start(PLAN_RUN, victim_plan, dumps(plan_in))
        answer = (await asyncio.wait_for(worker.handle(victim_ask).result(), 30))["response"]
        await asyncio.wait_for(worker.handle(victim_plan).result(), 30)
        tokens = {}
        for run_id in (victim_ask, victim_plan):
            path = settings.runs_dir / run_id / READ_TOKEN_FILE
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
            tokens[run_id] = path.read_text().strip()
            assert len(tokens[run_id]) == 32
        assert tokens[victim_ask] != tokens[victim_plan]
        for run_id, token in tokens.items():  # a run never sends its own token to history
            assert token not in await _hostile_history(worker, run_id, settings)

        recording = settings.runs_dir / victim_ask / "raw-events.jsonl"
        hello = {"id": "hi", "kind": "agent", "prompt": "Hi.", "model": "sim:default"}
        trivial = {"schema": "ponder-plan/1", "name": "other", "steps": [hello]}
        cases: dict[str, tuple[str, dict[str, Any], str]] = {
            "ask-none": (ASK, {"question": "q", "model": f"replay:{victim_ask}"}, "required"),
            "ask-wrong": (
                ASK,
                {
                    "question": "q",
                    "model": f"replay:{victim_ask}",
                    "calls": {"read_tokens": {victim_ask: WRONG}},
                },
                "invalid",
            ),
            "ask-other-runs-token": (
                ASK,
                {
                    "question": "q",
                    "model": f"replay:{victim_ask}",
                    "calls": {"read_tokens": {victim_ask: tokens[victim_plan]}},
                },
                "invalid",
            ),
            "ask-path": (ASK, {"question": "q", "model": f"replay:{recording}"}, "required"),
            "ask-wire": (
                ASK,
                {
                    "question": "q",
                    "model": "sim:default",
                    "calls": {"replay": {"run_id": victim_ask}},
                },
                "required",
            ),
            "plan-none": (
                PLAN_RUN,
                {"plan": trivial, "from_checkpoint": {"run_id": victim_plan, "label": "drafted"}},
                "required",
            ),
            "plan-wrong": (
                PLAN_RUN,
                {
                    "plan": trivial,
                    "from_checkpoint": {"run_id": victim_plan, "label": "drafted"},
                    "calls": {"read_tokens": {victim_plan: WRONG}},
                },
                "invalid",
            ),
            "plan-wrong-label": (  # the labels are listed only to a holder of the token
                PLAN_RUN,
                {
                    "plan": trivial,
                    "from_checkpoint": {"run_id": victim_plan, "label": "nope"},
                    "calls": {"read_tokens": {victim_plan: WRONG}},
                },
                "invalid",
            ),
        }
        ids = {name: f"cap-{name}-{tag}" for name in cases}
        for name, (kind, payload, _) in cases.items():
            await worker.start(kind, ids[name], dumps(payload))
        await worker.probe()
        victims = [
            f"ARG-{secret}",
            f"OUTPUT-{secret}",
            answer["text"],
            "drafted",
            *tokens.values(),
        ]
        for name, (_, payload, code) in cases.items():
            error = await worker.failure(ids[name], within=CODED_WITHIN)
            assert error.type == f"run.capability_{code}", (name, error)
            assert "drafted" not in error.message
            history = await _hostile_history(worker, ids[name], settings)
            given = dumps(payload)  # what the hostile input itself says is no leak
            leaked = [v for v in victims if v in history and v not in given]
            assert not leaked, (name, leaked)

        # The owner, through ponder's own client (which reads the tokens from the run store):
        # the same reads work.
        own = settings.model_copy(
            update={"temporal_address": server_address, "task_queue": worker.queue}
        )
        async with open_session(own) as session:
            ponder = Ponder(session)
            run = await ponder.ask(AskInput(question="again", model=f"replay:{victim_ask}"))
            replayed = await asyncio.wait_for(run.result(), 30)
            assert replayed.response.text == answer["text"]
            again = PlanRunInput(
                plan=_victim_plan(secret),
                args={"topic": f"ARG-{secret}"},
                from_checkpoint=FromCheckpoint(run_id=victim_plan, label="drafted"),
            )
            handle = await start_run(session, PLAN_RUN, again, f"cap-own-{tag}", PlanRunResult)
            restored = await asyncio.wait_for(handle.result(), 30)
            assert restored.outputs["draft"] == f"OUTPUT-{secret}"
            assert restored.calls == 0  # restored from the checkpoint, not run again
            # The search that found nothing above finds the victim's output here.
            assert f"OUTPUT-{secret}" in await _hostile_history(worker, handle.id, settings)
        await worker.probe()
