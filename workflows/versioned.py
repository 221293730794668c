"""The workflows as a versioned worker (``ponder worker --deployment``) registers them.

Short runs (an Ask, a tournament, and so a campaign's cells, which are these as children) are
pinned to the build that started them; a plan or a campaign, which can wait for days, moves to
the deployment's current build at its next workflow task, where the ``workflow.patched`` guards
in its code keep its history replaying. Temporal refuses a workflow task that declares a
behaviour from a worker without versioning, so the workflow classes themselves declare none and
every unversioned worker (the embedded server's, the in-process ones) registers them as they
are; each class here only adds its behaviour, under the same workflow type name. A workflow type
missing here takes the versioned worker's default, auto-upgrade.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import VersioningBehavior

from workflows.ask import AskWorkflow
from workflows.campaign.workflow import CampaignWorkflow
from workflows.plan_run.workflow import PlanRunWorkflow
from workflows.tournament.workflow import TournamentWorkflow

with workflow.unsafe.imports_passed_through():
    from workflows.ask_types import AskResult
    from workflows.campaign.types import CampaignResult
    from workflows.names import ASK, CAMPAIGN, PLAN_RUN, TOURNAMENT
    from workflows.plan.run_types import PlanRunResult
    from workflows.raw_input import NO_INPUT
    from workflows.tournament.types import TournamentResult

__all__ = ["VERSIONED", "PinnedAsk", "PinnedTournament", "UpgradingCampaign", "UpgradingPlanRun"]


@workflow.defn(name=ASK, versioning_behavior=VersioningBehavior.PINNED)
class PinnedAsk(AskWorkflow):
    @workflow.run
    async def run(self, raw: object = NO_INPUT, *extra: object) -> AskResult:
        return await super().run(raw, *extra)


@workflow.defn(name=TOURNAMENT, versioning_behavior=VersioningBehavior.PINNED)
class PinnedTournament(TournamentWorkflow):
    @workflow.run
    async def run(self, raw: object = NO_INPUT, *extra: object) -> TournamentResult:
        return await super().run(raw, *extra)


@workflow.defn(name=PLAN_RUN, versioning_behavior=VersioningBehavior.AUTO_UPGRADE)
class UpgradingPlanRun(PlanRunWorkflow):
    @workflow.run
    async def run(self, raw: object = NO_INPUT, *extra: object) -> PlanRunResult:
        return await super().run(raw, *extra)


@workflow.defn(name=CAMPAIGN, versioning_behavior=VersioningBehavior.AUTO_UPGRADE)
class UpgradingCampaign(CampaignWorkflow):
    @workflow.run
    async def run(self, raw: object = NO_INPUT, *extra: object) -> CampaignResult:
        return await super().run(raw, *extra)


VERSIONED: dict[type, type] = {
    AskWorkflow: PinnedAsk,
    TournamentWorkflow: PinnedTournament,
    PlanRunWorkflow: UpgradingPlanRun,
    CampaignWorkflow: UpgradingCampaign,
}
"""Each workflow class -> the class a versioned worker registers in its place."""
