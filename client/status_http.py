"""``ponder status`` of a live run on the embedded server, without the SDK.

The common case of a live read is a run the home's background worker is executing, with the
embedded server up. Then the server's HTTP API (``client.server_http``) answers the same
describe and query as the SDK, and the run's kind is shown by the same display module
(``client.tournament_display``, ``plan_display``, ``campaign_display``), so the output is the
one ``client.status_query`` prints, without importing the SDK client (under 0.5 s).

Anything else goes to ``client.status_query``: an Ask (its view reads the run's result), a
cluster, no live background worker on the run's task queue to answer the query (that path runs
one in the process, or names the configuration to run it with), or any answer the HTTP API does
not give. The run is found by its id: a run of another configuration (another directory's
ponder.toml) is read the same way, its query answered by that configuration's worker.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel, ValidationError

from client.embedded import EmbeddedServer
from client.server_http import HttpUnanswered, ServerHttp
from client.worker_record import queue_worker
from workflows.names import CAMPAIGN, PLAN_RUN, QUERY_PROGRESS, QUERY_STATUS, TOURNAMENT

if TYPE_CHECKING:
    from activities.config import Settings

__all__ = ["show_status_over_http"]

Shown = TypeVar("Shown", bound=BaseModel)


def show_status_over_http(settings: Settings, run_id: str, *, as_json: bool) -> bool:
    """Print the run's status and return True, or print nothing and return False."""
    if settings.temporal_address or not (settings.home / "workers").is_dir():
        return False
    server = EmbeddedServer(settings.home)
    info = server.read_state()
    if info is None or not server.up():
        return False
    api = ServerHttp(info.http_port, settings.namespace)
    try:
        described = api.describe(run_id)
        queue = described.task_queue
        if queue is None or queue_worker(settings.home, queue) is None:
            return False
        if not api.serves(queue, time.time()):
            return False
        if described.kind == TOURNAMENT:
            return _tournament(api, run_id, as_json=as_json)
        if described.kind == PLAN_RUN:
            return _plan(api, run_id, settings, as_json=as_json)
        if described.kind == CAMPAIGN:
            return _campaign(api, run_id, as_json=as_json)
    except HttpUnanswered:
        return False
    return False


def _validated(model: type[Shown], answer: bytes) -> Shown | None:
    """The query's answer as ``model``, decoded from JSON as the SDK's converter does; None when
    it does not decode (the SDK path then reports it)."""
    try:
        return model.model_validate_json(answer)
    except ValidationError:
        return None


def _tournament(api: ServerHttp, run_id: str, *, as_json: bool) -> bool:
    from client.tournament_display import print_progress, print_progress_json
    from workflows.tournament.progress import Progress

    progress = _validated(Progress, api.query(run_id, QUERY_PROGRESS))
    if progress is None:
        return False
    if as_json:
        print_progress_json(progress)
        return True
    times = api.describe(run_id)  # after the query: the close time of a run that just ended
    print_progress(run_id, progress, times.start_time, times.close_time)
    return True


def _plan(api: ServerHttp, run_id: str, settings: Settings, *, as_json: bool) -> bool:
    from client.plan_display import print_plan_status
    from workflows.plan.status import PlanStatus

    shown = _validated(PlanStatus, api.query(run_id, QUERY_STATUS))
    if shown is None:
        return False
    print_plan_status(shown, as_json=as_json, settings=settings)
    return True


def _campaign(api: ServerHttp, run_id: str, *, as_json: bool) -> bool:
    from client.campaign_display import print_status
    from workflows.campaign.progress import CampaignProgress

    progress = _validated(CampaignProgress, api.query(run_id, QUERY_PROGRESS))
    if progress is None:
        return False
    print_status(progress, as_json=as_json)
    return True
