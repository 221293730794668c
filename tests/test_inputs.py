"""Workflow input that does not decode ends the run FAILED with ``input.invalid`` at once.

Driven through the real ``temporal`` binary (``temporal workflow start --input '...'``), the way
an operator or a script reaches a workflow without the Python models, and through the Python
client with a plain dict.
"""

from __future__ import annotations

import asyncio
import json
import math
import typing
import uuid
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

from activities.config import Price
from client.embedded import find_temporal_binary
from tests.cli import cli_env, ponder
from tests.tournament.helpers import start
from workflows.ask_types import AskInput
from workflows.budget import Budget, BudgetLimits
from workflows.campaign.document import CampaignDocument
from workflows.inputs import InputInvalid, StrictModel, decode_input, decode_json
from workflows.names import (
    ASK,
    CAMPAIGN,
    PLAN_RUN,
    QUERY_EVENTS,
    QUERY_PROGRESS,
    SIGNAL_EXTEND_BUDGET,
    TOURNAMENT,
    UPDATE_EXTEND_BUDGET,
)
from workflows.plan.run_types import (
    ExtendPlanBudgetInput,
    PlanRunInput,
    ResolveGateInput,
    ResumeInput,
)
from workflows.tournament.profiles import Profile
from workflows.tournament.types import Event, ExtendBudgetInput, Progress, TournamentInput

QUICK = {"task": "Sort a list in place.", "profile": "quick"}
QUICK_PROFILE = {"n": 4, "k": 2, "t": 1, "m": 2}


async def temporal(*args: str) -> tuple[int, str]:
    """The real ``temporal`` binary (asyncio, so the in-process worker keeps going)."""
    process = await asyncio.create_subprocess_exec(
        find_temporal_binary(),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode is not None
    return process.returncode, out.decode() + err.decode()


async def temporal_start(
    address: str, queue: str, workflow_type: str, workflow_id: str, *inputs: str
) -> None:
    """``temporal workflow start`` with each of ``inputs`` as one ``--input`` JSON argument."""
    args = ["workflow", "start", "--address", address, "--namespace", "default"]
    args += ["--task-queue", queue, "--type", workflow_type, "--workflow-id", workflow_id]
    for value in inputs:
        args += ["--input", value]
    code, output = await temporal(*args)
    assert code == 0, output


async def refusal(client: Client, workflow_id: str, *, max_events: int = 6) -> ApplicationError:
    """The run's failure, which must come at once and without a single failed workflow task.

    ``max_events`` 6: started, one workflow task, failed; nothing was scheduled. "At once" is
    the history's shape; the 60 s ceiling is only for a loaded worker's first workflow task.
    """
    handle = client.get_workflow_handle(workflow_id)
    with pytest.raises(WorkflowFailureError) as info:
        await asyncio.wait_for(handle.result(), 60)
    history = await handle.fetch_history()
    types = [event.event_type for event in history.events]
    assert EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED not in types
    assert types[-1] == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED
    assert len(types) <= max_events
    cause = info.value.cause
    assert isinstance(cause, ApplicationError), cause
    assert cause.non_retryable
    return cause


ASK_CASES = [
    (json.dumps({"question": ""}), "question: String should have at least 1 character"),
    (json.dumps({"question": "hi", "temperature": "hot"}), "temperature: Input should be a valid"),
    (json.dumps({"question": "hi", "temperature": "nan"}), "temperature: Input should be a valid"),
    # Strict: a number in a string is not a number (JSON says what it means).
    (json.dumps({"question": "hi", "seed": "8"}), "seed: Input should be a valid integer"),
    (json.dumps({"question": "hi", "temperature": "0.5"}), "temperature: Input should be a valid"),
    (json.dumps({"question": "hi", "seed": "abc"}), "seed: Input should be a valid integer"),
    (json.dumps({"question": "hi", "bogus_field": 1}), "bogus_field: Extra inputs are not"),
    (json.dumps({"question": "hi", "max_output_tokens": 0}), "max_output_tokens: Input should be"),
    (json.dumps({"question": "hi", "role": "root"}), "role: Input should be 'ask'"),
    (json.dumps({}), "question: Field required"),
    (json.dumps([1, 2]), "(the input itself): Input should be an object"),
    (json.dumps("hi"), "(the input itself): Input should be an object"),
]


@pytest.mark.parametrize(("raw", "needle"), ASK_CASES, ids=[c[0][:40] for c in ASK_CASES])
async def test_ask_refuses_bad_input_from_the_temporal_cli(
    client: Client, server_address: str, worker_queue: str, raw: str, needle: str
) -> None:
    workflow_id = f"ask-bad-{uuid.uuid4().hex[:8]}"
    await temporal_start(server_address, worker_queue, ASK, workflow_id, raw)
    error = await refusal(client, workflow_id)
    assert error.type == "input.invalid"
    assert error.message.startswith("AskInput: ")
    assert needle in error.message


TOURNAMENT_CASES = [
    ({"schedule": "foo"}, "schedule: Input should be 'k-regular' or 'adaptive' (got 'foo')"),
    ({"on_budget_exhausted": "explode"}, "on_budget_exhausted: Input should be 'pause' or"),
    ({"seed": "abc"}, "seed: Input should be a valid integer"),
    ({"budget": {"max_calls": -5}}, "budget.max_calls: Input should be greater than or equal to 0"),
    ({"budget": {"max_usd": "inf"}}, "budget.max_usd: Input should be a valid number"),
    ({"seed": "8"}, "seed: Input should be a valid integer (got '8')"),
    ({"custom": {"n": "8", "k": 2, "t": 1, "m": 2}}, "custom.n: Input should be a valid integer"),
    ({"budget": {"max_calls": "5"}}, "budget.max_calls: Input should be a valid integer"),
    ({"include_prompts": "true"}, "include_prompts: Input should be a valid boolean"),
    ({"include_raw_outputs": 1}, "include_raw_outputs: Input should be a valid boolean"),
    ({"budget": {"max_call": 5}}, "budget.max_call: Extra inputs are not permitted"),
    ({"bogus_field": 1}, "bogus_field: Extra inputs are not permitted"),
    ({"models": {"judge": "sim:default", "critic": "x"}}, "models.critic: Extra inputs"),
    ({"concurrency": {"judge": 0}}, "concurrency.judge: Input should be greater than or equal"),
    ({"critique_chars": 10}, "critique_chars: Input should be greater than or equal to 256"),
    (
        {"custom": {"n": 4, "k": 2, "t": 1, "m": 2, "lambda": "nan"}},
        "custom.lambda: Input should be a valid number",
    ),
    (
        {"custom": {"n": 200000, "k": 2, "t": 0, "m": 2}},
        "custom.n: Input should be less than or equal to 2000",
    ),
    (
        {"custom": {"n": 4, "k": 2, "t": 1000000, "m": 2}},
        "custom.t: Input should be less than or equal to 100",
    ),
    (
        {"prices": {"openai:x": {"input": "nan", "output": 1}}},
        "prices.openai:x.input: Input should be a valid number",
    ),
    (
        {"candidates": [{"id": "../x", "text": "a"}]},
        "candidates.0.id: Value error, a candidate id must start with a letter or digit",
    ),
    ({"task": None}, "task: Input should be a valid string"),
]


@pytest.mark.parametrize(
    ("fields", "needle"), TOURNAMENT_CASES, ids=[json.dumps(c[0])[:40] for c in TOURNAMENT_CASES]
)
async def test_tournament_refuses_bad_input_from_the_temporal_cli(
    client: Client, server_address: str, worker_queue: str, fields: dict, needle: str
) -> None:
    workflow_id = f"t-bad-{uuid.uuid4().hex[:8]}"
    raw = json.dumps(QUICK | fields)
    await temporal_start(server_address, worker_queue, TOURNAMENT, workflow_id, raw)
    error = await refusal(client, workflow_id)
    assert error.type == "input.invalid"
    assert error.message.startswith("TournamentInput: ")
    assert needle in error.message


@pytest.mark.parametrize(
    ("inputs", "needle"),
    [
        ((), "no input given"),
        (("[1, 2]",), "(the input itself): Input should be an object"),
        (('{"profile": "quick"}',), "task: Field required"),
    ],
)
async def test_tournament_without_a_usable_input_fails_at_once(
    client: Client, server_address: str, worker_queue: str, inputs: tuple[str, ...], needle: str
) -> None:
    workflow_id = f"t-none-{uuid.uuid4().hex[:8]}"
    await temporal_start(server_address, worker_queue, TOURNAMENT, workflow_id, *inputs)
    error = await refusal(client, workflow_id)
    assert error.type == "input.invalid"
    assert needle in error.message


INPUT_MODELS = {
    ASK: "AskInput",
    TOURNAMENT: "TournamentInput",
    PLAN_RUN: "PlanRunInput",
    CAMPAIGN: "CampaignDocument",
}
COUNT_CASES = [
    ((), "no input given"),
    ((json.dumps(QUICK), json.dumps(QUICK)), "2 inputs given"),
    (('{"question": "hi"}', "[1]", '"x"'), "3 inputs given"),
]


@pytest.mark.parametrize("workflow_type", list(INPUT_MODELS))
@pytest.mark.parametrize(("inputs", "needle"), COUNT_CASES, ids=["none", "two", "three"])
async def test_every_workflow_refuses_other_than_one_input_at_once(
    client: Client,
    server_address: str,
    worker_queue: str,
    workflow_type: str,
    inputs: tuple[str, ...],
    needle: str,
) -> None:
    # Each extra --input is one more workflow argument; with more arguments than the run
    # declares the SDK used to fail the workflow task (retried forever) instead of the run.
    workflow_id = f"count-{uuid.uuid4().hex[:8]}"
    await temporal_start(server_address, worker_queue, workflow_type, workflow_id, *inputs)
    error = await refusal(client, workflow_id)
    assert error.type == "input.invalid"
    assert error.message.startswith(f"{INPUT_MODELS[workflow_type]}: ")
    assert needle in error.message


@pytest.mark.parametrize("workflow_type", [ASK, TOURNAMENT])
async def test_an_input_in_an_unknown_encoding_fails_at_once(
    client: Client, server_address: str, worker_queue: str, workflow_type: str
) -> None:
    # The SDK decodes a variadic run's arguments without type hints; an encoding no converter
    # knows must still reach the workflow (as a raw value) to be refused, not fail the task.
    workflow_id = f"enc-{uuid.uuid4().hex[:8]}"
    code, output = await temporal(
        "workflow", "start", "--address", server_address, "--namespace", "default",
        "--task-queue", worker_queue, "--type", workflow_type, "--workflow-id", workflow_id,
        "--input", json.dumps(QUICK), "--input-meta", "encoding=binary/made-up",
    )  # fmt: skip
    assert code == 0, output
    error = await refusal(client, workflow_id)
    assert error.type == "input.invalid"
    assert "input encoded as 'binary/made-up'" in error.message


async def test_bytes_that_are_not_json_from_a_client_fail_at_once(
    client: Client, worker_queue: str
) -> None:
    # The temporal CLI checks its JSON; another client may not.
    broken = RawValue(Payload(metadata={"encoding": b"json/plain"}, data=b'{"question": '))
    workflow_id = f"broken-{uuid.uuid4().hex[:8]}"
    await client.start_workflow(ASK, broken, id=workflow_id, task_queue=worker_queue)
    error = await refusal(client, workflow_id)
    assert error.type == "input.invalid"
    assert error.message.startswith("AskInput: (the input itself): Invalid JSON")


async def test_a_good_input_from_the_temporal_cli_still_runs(
    client: Client, server_address: str, worker_queue: str
) -> None:
    workflow_id = f"t-good-{uuid.uuid4().hex[:8]}"
    await temporal_start(server_address, worker_queue, TOURNAMENT, workflow_id, json.dumps(QUICK))
    result = await asyncio.wait_for(client.get_workflow_handle(workflow_id).result(), 60)
    assert result["status"] == "completed"
    assert result["simulated"] is True


async def test_an_input_kept_outside_history_still_decodes(
    client: Client, worker_queue: str
) -> None:
    # Over the payload store's threshold the input reaches the worker as a stored reference,
    # which the SDK resolves before the workflow sees the RawValue.
    task = "Sort a list in place. " + "x" * 40_000
    handle = await start(client, worker_queue, task=task, profile="quick")
    started = (await handle.fetch_history()).events[0]
    stored = started.workflow_execution_started_event_attributes.input.payloads[0]
    assert stored.ByteSize() < 10_000  # a reference, not the 40 KB task
    assert (await asyncio.wait_for(handle.result(), 60)).status == "completed"


@pytest.mark.parametrize("workflow_type", [ASK, TOURNAMENT])
async def test_python_client_with_a_plain_dict_is_refused_the_same_way(
    client: Client, worker_queue: str, workflow_type: str
) -> None:
    workflow_id = f"py-bad-{uuid.uuid4().hex[:8]}"
    payload = {"question": "hi", "task": "x", "bogus_field": 1}
    await client.start_workflow(workflow_type, payload, id=workflow_id, task_queue=worker_queue)
    error = await refusal(client, workflow_id)
    assert error.type == "input.invalid"
    assert "bogus_field: Extra inputs are not permitted" in error.message


async def test_status_and_cancel_answer_at_once_for_a_refused_run(
    client: Client, server_address: str, worker_queue: str, tmp_path: Path
) -> None:
    workflow_id = f"t-status-{uuid.uuid4().hex[:8]}"
    raw = json.dumps(QUICK | {"schedule": "foo"})
    await temporal_start(server_address, worker_queue, TOURNAMENT, workflow_id, raw)
    await refusal(client, workflow_id)
    env = cli_env(tmp_path, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE=worker_queue)
    shown = await ponder("status", workflow_id, "--json", env=env, timeout=30)
    assert shown.code == 0, shown.err
    progress = json.loads(shown.out)
    assert progress["status"] == "failed"
    assert progress["error"].startswith("input.invalid: TournamentInput: schedule:")
    cancelled = await ponder("cancel", workflow_id, env=env, timeout=30)
    assert cancelled.code == 1, cancelled.err
    assert f"run {workflow_id}: failed" in cancelled.err


async def test_cancel_answers_at_once_for_a_refused_ask(
    client: Client, server_address: str, worker_queue: str, tmp_path: Path
) -> None:
    workflow_id = f"ask-cancel-{uuid.uuid4().hex[:8]}"
    await temporal_start(server_address, worker_queue, ASK, workflow_id, '{"question": ""}')
    await refusal(client, workflow_id)
    env = cli_env(tmp_path, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE=worker_queue)
    cancelled = await ponder("cancel", workflow_id, env=env, timeout=30)
    assert cancelled.code == 1, cancelled.err
    assert f"run {workflow_id}: failed (it had already ended: nothing to cancel)" in cancelled.err


async def test_cancel_of_a_completed_run_exits_0(
    client: Client, server_address: str, worker_queue: str, tmp_path: Path
) -> None:
    """The exit code is the run's: a cancel finds it completed, so nothing failed."""
    workflow_id = f"ask-done-{uuid.uuid4().hex[:8]}"
    await temporal_start(server_address, worker_queue, ASK, workflow_id, '{"question": "hi"}')
    await asyncio.wait_for(client.get_workflow_handle(workflow_id).result(), 60)
    env = cli_env(tmp_path, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE=worker_queue)
    cancelled = await ponder("cancel", workflow_id, env=env, timeout=30)
    assert cancelled.code == 0, cancelled.err
    assert f"run {workflow_id}: completed (it had already ended: nothing to cancel)" in (
        cancelled.err
    )


async def paused_on_budget(client: Client, queue: str) -> tuple[WorkflowHandle, float]:
    """A tournament paused ``awaiting_budget`` (one output token pauses it after its first
    answers), and a deadline 90 s from its start for the test's own waits (the pause, then
    three ``temporal`` processes and the signals' workflow tasks: under load 30 s was tight)."""
    handle = await start(client, queue, budget=BudgetLimits(max_output_tokens=1))
    deadline = asyncio.get_running_loop().time() + 90
    while (await handle.query(QUERY_PROGRESS, result_type=Progress)).status != "awaiting_budget":
        assert asyncio.get_running_loop().time() < deadline, "the run did not pause"
        await asyncio.sleep(0.1)
    return handle, deadline


async def test_malformed_control_input_is_refused_not_dropped(
    client: Client, server_address: str, worker_queue: str
) -> None:
    # Control input arrives raw at a run paused on its budget.
    handle, deadline = await paused_on_budget(client, worker_queue)
    target = ["--address", server_address, "--workflow-id", handle.id]
    for value in ('{"max_output_token": 5}', "[5]"):
        code, output = await temporal(
            "workflow", "signal", *target, "--name", SIGNAL_EXTEND_BUDGET, "--input", value
        )
        assert code == 0, output
    code, output = await temporal(
        "workflow", "update", "execute", *target, "--name", UPDATE_EXTEND_BUDGET,
        "--input", '{"max_output_tokens": "many"}',
    )  # fmt: skip
    assert code != 0
    assert "max_output_tokens: Input should be a valid integer" in output
    refused: list[Event] = []
    while len(refused) < 2:
        assert asyncio.get_running_loop().time() < deadline, "the signals were not recorded"
        events = await handle.query(QUERY_EVENTS, 0, result_type=list[Event])
        refused = [e for e in events if e.type == "control.refused"]
        await asyncio.sleep(0.05)
    assert "max_output_token: Extra inputs are not permitted" in refused[0].data["reason"]
    assert "(the input itself): Input should be an object" in refused[1].data["reason"]
    await handle.signal(SIGNAL_EXTEND_BUDGET, ExtendBudgetInput(max_output_tokens=10**9))
    assert (await asyncio.wait_for(handle.result(), 60)).status == "completed"


async def test_a_signal_with_two_inputs_is_dropped_and_the_run_goes_on(
    client: Client, server_address: str, worker_queue: str
) -> None:
    # Two --input flags are two handler arguments: the handler's TypeError used to fail the
    # workflow task forever, and every later signal with it.
    handle, _ = await paused_on_budget(client, worker_queue)
    target = ["--address", server_address, "--workflow-id", handle.id]
    big = json.dumps({"max_output_tokens": 10**9})
    code, output = await temporal(
        "workflow", "signal", *target, "--name", SIGNAL_EXTEND_BUDGET, "--input", big,
        "--input", big,
    )  # fmt: skip
    assert code == 0, output
    await handle.signal(SIGNAL_EXTEND_BUDGET, ExtendBudgetInput(max_output_tokens=10**9))
    assert (await asyncio.wait_for(handle.result(), 60)).status == "completed"
    history = await handle.fetch_history()
    types = [event.event_type for event in history.events]
    assert types.count(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED) == 2
    assert EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED not in types


# -- the pure decoder --------------------------------------------------------------------------


class Point(StrictModel):
    x: float
    label: str = "p"


def test_strict_model_refuses_unknown_fields_and_non_finite_numbers() -> None:
    assert decode_input(Point, {"x": 1.5}).x == 1.5
    for bad in ({"x": math.nan}, {"x": math.inf}, {"x": "-inf"}, {"x": 1, "y": 2}):
        with pytest.raises(InputInvalid) as info:
            decode_input(Point, bad)
        assert info.value.code == "input.invalid"
    with pytest.raises(
        InputInvalid, match=r"^input\.invalid: Point: \(the input itself\): Invalid JSON"
    ):
        decode_json(Point, b'{"x": ')


def test_every_problem_is_named_with_its_path_up_to_a_limit() -> None:
    with pytest.raises(InputInvalid) as info:
        decode_json(Point, json.dumps({"x": "a", "label": 3, "q": 1}))
    message = info.value.message
    assert message.startswith("Point: x: Input should be a valid number")
    assert "label: Input should be a valid string (got 3)" in message
    assert "q: Extra inputs are not permitted (got 1)" in message
    many = {f"f{i}": i for i in range(8)} | {"x": 1}
    with pytest.raises(InputInvalid, match=r"and 3 more$"):
        decode_input(Point, many)


@pytest.mark.parametrize(
    ("model", "value"),
    [
        (BudgetLimits, {"max_usd": math.nan}),
        (Price, {"input": math.inf, "output": 1}),
        (Profile, QUICK_PROFILE | {"generate_temperature": math.nan}),
        (AskInput, {"question": "q", "temperature": math.inf}),
        (TournamentInput, {"task": "t", "custom": QUICK_PROFILE | {"lambda": 1e999}}),
    ],
)
def test_non_finite_numbers_are_refused_by_every_input_model(model: type, value: dict) -> None:
    with pytest.raises(ValidationError, match="finite number"):
        model.model_validate(value)


def test_models_from_python_callers_round_trip_through_the_strict_decoder() -> None:
    payload = TournamentInput(
        task="t", custom=Profile(n=4, k=2, t=1, m=2, lambda_=0.5), budget=BudgetLimits(max_usd=1)
    )
    assert decode_json(TournamentInput, payload.model_dump_json()) == payload
    ask = AskInput(question="q", temperature=0.2, role="judge")
    assert decode_json(AskInput, ask.model_dump_json()) == ask


def _nested_models(model: type[BaseModel], seen: set[type[BaseModel]]) -> set[type[BaseModel]]:
    seen.add(model)
    for field in model.model_fields.values():
        for arg in _type_args(field.annotation):
            if isinstance(arg, type) and issubclass(arg, BaseModel) and arg not in seen:
                _nested_models(arg, seen)
    return seen


def _type_args(annotation: object) -> list[object]:
    args = typing.get_args(annotation)
    return [annotation] if not args else [a for arg in args for a in _type_args(arg)]


@pytest.mark.parametrize(
    "root",
    [
        AskInput,
        TournamentInput,
        PlanRunInput,
        CampaignDocument,
        ExtendBudgetInput,
        ResumeInput,
        ResolveGateInput,
        ExtendPlanBudgetInput,
    ],
)
def test_every_model_inside_a_workflow_input_is_strict(root: type[BaseModel]) -> None:
    """Every workflow, update and signal input (and each model inside one) is strict:
    docs/errors.md says wrong types are refused, and "8" is not 8 in any of them."""
    models = _nested_models(root, set())
    assert len(models) >= (9 if root is TournamentInput else 1)
    loose = [
        m.__name__
        for m in models
        if m.model_config.get("extra") != "forbid"
        or m.model_config.get("allow_inf_nan", True)
        or m.model_config.get("strict") is not True
    ]
    assert loose == []


def test_a_non_finite_budget_extension_is_refused_not_fatal() -> None:
    # The update validator and the signal handler both go through checked_extension.
    limits, problems = Budget().checked_extension({"max_usd": math.nan})
    assert limits is None
    assert problems == ["max_usd: Input should be a finite number"]
