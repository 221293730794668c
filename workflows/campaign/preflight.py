"""Everything refused before a campaign's first cell, in a fixed order.

The run id first (its cells' ids extend it), then the document's own rules (unique, non-empty
variants and scenarios, comparator, commit sha) and the variants' configs; only a document
that passes those reaches the route assertion, which needs its models. A refusal is a
non-retryable ``ApplicationError`` whose type is the first problem's code.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from workflows.campaign.activity_calls import check_route
    from workflows.campaign.configs import config_errors, variant_models
    from workflows.campaign.document import CampaignDocument, semantic_errors
    from workflows.campaign.matrix import MAX_CAMPAIGN_RUN_ID
    from workflows.campaign.types import CheckRouteInput, RoutedModel
    from workflows.run_ids import RUN_ID_INVALID, run_id_problem

__all__ = ["preflight"]


def _refuse(code: str, message: str) -> ApplicationError:
    return ApplicationError(message, type=code, non_retryable=True)


async def preflight(doc: CampaignDocument, run_id: str) -> set[str]:
    """The ids of the variants whose models speak HTTP (their cells must capture raw events)."""
    if len(run_id) > MAX_CAMPAIGN_RUN_ID or run_id_problem(run_id) is not None:
        raise _refuse(
            RUN_ID_INVALID,
            f"campaign run id {run_id!r} must be a valid run id of at most "
            f"{MAX_CAMPAIGN_RUN_ID} characters (its cells add a suffix): choose another",
        )
    errors = semantic_errors(doc)
    errors += [] if errors else config_errors(doc)
    if errors:
        raise _refuse(errors[0].code, "; ".join(e.line() for e in errors))
    check = await check_route(
        CheckRouteInput(
            route=doc.route,
            models=[RoutedModel(variant=v, model=m, base_url=u) for v, m, u in variant_models(doc)],
            offline=doc.calls.replay is not None and doc.calls.replay.on_miss != "network",
        )
    )
    if check.issues:
        raise _refuse(
            f"route.{check.issues[0].reason}",
            "; ".join(f"{i.variant} ({i.model}): {i.reason}: {i.message}" for i in check.issues),
        )
    return set(check.http_variants)
