"""The campaign's own activities as the workflow calls them, timeouts and retries stated here.

Workflow-side (Temporal imports): the route check in preflight, a cell's settle step (capture
check, spend, score) and the artifact write (records, report, summary).
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from workflows.activity_contracts import HEARTBEAT_TIMEOUT
    from workflows.campaign.activity_contracts import (
        CHECK_CAMPAIGN_ROUTE,
        SETTLE_CAMPAIGN_CELL,
        WRITE_CAMPAIGN_ARTIFACTS,
    )
    from workflows.campaign.types import (
        CampaignArtifactsInput,
        CampaignArtifactsResult,
        CellOutcome,
        CheckRouteInput,
        RouteCheck,
        SettleCellInput,
    )

__all__ = ["ACTIVITY_RETRY", "check_route", "settle_cell", "write_artifacts"]

# A ValueError is a bad input the activity refuses: retrying cannot help.
ACTIVITY_RETRY = RetryPolicy(maximum_attempts=5, non_retryable_error_types=["ValueError"])


async def check_route(input: CheckRouteInput) -> RouteCheck:
    return await workflow.execute_activity(
        CHECK_CAMPAIGN_ROUTE,
        input,
        result_type=RouteCheck,
        start_to_close_timeout=timedelta(seconds=30),
        retry_policy=ACTIVITY_RETRY,
    )


async def settle_cell(input: SettleCellInput) -> CellOutcome:
    # A command scorer runs a worker-declared subprocess over the answer: allow it minutes,
    # and heartbeat, so a worker killed meanwhile delays the cell by seconds, not 15 minutes.
    return await workflow.execute_activity(
        SETTLE_CAMPAIGN_CELL,
        input,
        result_type=CellOutcome,
        start_to_close_timeout=timedelta(minutes=15),
        heartbeat_timeout=HEARTBEAT_TIMEOUT,
        retry_policy=ACTIVITY_RETRY,
    )


async def write_artifacts(input: CampaignArtifactsInput) -> CampaignArtifactsResult:
    return await workflow.execute_activity(
        WRITE_CAMPAIGN_ARTIFACTS,
        input,
        result_type=CampaignArtifactsResult,
        start_to_close_timeout=timedelta(minutes=5),
        heartbeat_timeout=HEARTBEAT_TIMEOUT,
        retry_policy=ACTIVITY_RETRY,
    )
