"""The saved histories of a versioned worker's runs (``tests/histories/record_versioned.py``) are
what they stand for, replaying them catches a change to the versioned classes' commands, and
their recorder still records."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.api.enums.v1 import EventType, VersioningBehavior
from temporalio.client import WorkflowHistory
from temporalio.common import VersioningBehavior as Behaviour
from temporalio.worker import Replayer, UnsandboxedWorkflowRunner

from activities.config import Settings
from client.connect import data_converter
from tests.histories import record_versioned
from worker.worker import WORKFLOWS
from workflows.ask_types import AskResult
from workflows.names import ASK, PLAN_RUN
from workflows.plan.run_types import PlanRunResult
from workflows.raw_input import NO_INPUT
from workflows.versioned import VERSIONED, PinnedAsk, UpgradingPlanRun

HISTORIES = Path(__file__).parent / "histories"
STEMS = ("versioned-ask", "versioned-plan-gate")


def history(stem: str, where: Path = HISTORIES) -> WorkflowHistory:
    return WorkflowHistory.from_json(stem, (where / f"{stem}.json").read_text())


def marks(stem: str) -> list[tuple[str, int]]:
    """Each completed workflow task's build id and versioning behaviour, in history order."""
    return [
        (attrs.deployment_version.build_id, attrs.versioning_behavior)
        for attrs in (
            event.workflow_task_completed_event_attributes
            for event in history(stem).events
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
        )
    ]


def test_the_ask_ran_pinned_to_its_build() -> None:
    assert set(marks("versioned-ask")) == {("rec-a", VersioningBehavior.VERSIONING_BEHAVIOR_PINNED)}


def test_the_plan_waited_at_its_gate_on_one_build_and_finished_on_the_next() -> None:
    found = marks("versioned-plan-gate")
    upgrading = VersioningBehavior.VERSIONING_BEHAVIOR_AUTO_UPGRADE
    assert {behaviour for _, behaviour in found} == {upgrading}
    builds = [build for build, _ in found]
    switch = builds.index("rec-b")
    assert switch > 0 and set(builds[:switch]) == {"rec-a"} and set(builds[switch:]) == {"rec-b"}
    kinds = [e.event_type for e in history("versioned-plan-gate").events]
    assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED in kinds  # the gate's approval
    assert kinds[-1] == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED


# The same classes with one more command first: what a change made without a patch does.
@workflow.defn(name=ASK, versioning_behavior=Behaviour.PINNED)
class ChangedAsk(PinnedAsk):
    @workflow.run
    async def run(self, raw: object = NO_INPUT, *extra: object) -> AskResult:
        await workflow.sleep(timedelta(seconds=1))
        return await super().run(raw, *extra)


@workflow.defn(name=PLAN_RUN, versioning_behavior=Behaviour.AUTO_UPGRADE)
class ChangedPlanRun(UpgradingPlanRun):
    @workflow.run
    async def run(self, raw: object = NO_INPUT, *extra: object) -> PlanRunResult:
        await workflow.sleep(timedelta(seconds=1))
        return await super().run(raw, *extra)


@pytest.mark.parametrize(
    ("stem", "original", "changed"),
    [
        ("versioned-ask", PinnedAsk, ChangedAsk),
        ("versioned-plan-gate", UpgradingPlanRun, ChangedPlanRun),
    ],
)
async def test_a_change_to_the_versioned_class_fails_its_replay(
    stem: str, original: type, changed: type, settings: Settings
) -> None:
    versioned = [VERSIONED.get(c, c) for c in WORKFLOWS]

    async def replay(workflows: list[type]) -> Exception | None:
        replayer = Replayer(
            workflows=workflows,
            data_converter=data_converter(settings),
            workflow_runner=UnsandboxedWorkflowRunner(),
        )
        replayed = await replayer.replay_workflow(history(stem), raise_on_replay_failure=False)
        return replayed.replay_failure

    assert await replay(versioned) is None
    failure = await replay([changed if c is original else c for c in versioned])
    assert failure is not None and "Nondeterminism" in str(failure), failure


@pytest.mark.slow
async def test_the_recorder_records_histories_that_replay(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, settings: Settings
) -> None:
    monkeypatch.setenv("PONDER_HISTORY_OUT", str(tmp_path))
    committed = {stem: (HISTORIES / f"{stem}.json").read_text() for stem in STEMS}
    await record_versioned.main()  # it checks the plan moved to the promoted build
    assert {stem: (HISTORIES / f"{stem}.json").read_text() for stem in STEMS} == committed
    replayer = Replayer(
        workflows=[VERSIONED.get(c, c) for c in WORKFLOWS], data_converter=data_converter(settings)
    )
    for stem in STEMS:
        replayed = await replayer.replay_workflow(history(stem, tmp_path))
        assert replayed.replay_failure is None
