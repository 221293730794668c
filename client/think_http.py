"""A served ``ponder think`` without the SDK: started and, when it ends soon, followed over the
embedded server's HTTP API.

With the embedded server up and the configuration's background worker serving its queue, the
command is a client only, and a quick tournament (well under a second of calls) spent as long
again importing and connecting the SDK client. As ``client.ask_http`` does for an Ask, the run
starts through the HTTP API with the request the SDK path sends (the same workflow type, id,
queue, id policies and identity; the input as the pydantic converter encodes it; one request
id for every try), and the command long-polls its close event. Meanwhile the status query
(over HTTP too) draws the progress panel on a terminal. A run that completes within ``WAIT_S``
ends with what the SDK path prints: its last progress frame, then
``client.tournament_outcome.print_outcome``.

Anything else goes to the SDK path's follower (``client.tournament_follow.follow``), on the
same run, never a second one: a configuration this path does not reproduce, a refused start,
a run paused on its budget, a failed call attempt (the follower shows every retry line), a
failed or cancelled run, a result kept in the payload store, and a run still going after
``WAIT_S``. Ctrl-C or SIGTERM detaches throughout, as on the SDK path.
"""

from __future__ import annotations

import json
import uuid
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

from client.ask_http import Handover, close_event_within, resolves_here, served_start
from client.retry_lines import RetryLines
from client.server_http import HttpUnanswered, ServerHttp, payload_data
from workflows.call_options import provider_of
from workflows.names import QUERY_PROGRESS, TOURNAMENT
from workflows.progress_file import PROGRESS_FILE

if TYPE_CHECKING:
    from rich.live import Live

    from activities.config import Settings
    from workflows.tournament.types import Progress, TournamentInput, TournamentResult

__all__ = [
    "WAIT_S",
    "Ended",
    "follow_handover",
    "new_think_id",
    "print_ended",
    "think_served",
]

WAIT_S = 5.0
"""How long the command follows over HTTP before the SDK path's follower takes the run."""
_COMPLETED = "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED"


def new_think_id() -> str:
    """``client.runs.new_run_id("think")``, without loading the SDK that module starts runs with."""
    return f"think-{uuid.uuid4().hex[:12]}"


@dataclass(frozen=True)
class Ended:
    """A run that completed while followed over HTTP: its result and last progress frame."""

    result: TournamentResult
    last: Progress
    started: datetime | None
    ended: datetime | None


def think_served(settings: Settings, input: TournamentInput) -> Ended | Handover | None:
    """Start ``input`` over the HTTP API and follow it for ``WAIT_S``: the ended run, a run for
    the SDK path to follow, or None when nothing started here (the SDK path starts it).

    Ctrl-C (or SIGTERM) while following detaches: the run goes on. After a hand-over one is held
    (``client.ask_http.signalled``) for the follower, which detaches then."""
    specs = [input.model, *(spec for spec in input.models.model_dump().values() if spec)]
    specs += input.judges or []
    # Every model resolves without a file or a provider module, so none is session-served.
    if not all(resolves_here(spec, settings) for spec in specs):
        return None
    providers = [provider_of(spec) for spec in specs]
    return served_start(
        settings, input, input.run_id, workflow=TOURNAMENT, providers=providers, wait=_follow
    )


def _follow(api: ServerHttp, run_id: str, temporal_run_id: str, _lines: RetryLines) -> Ended | None:
    """The run, once completed within ``WAIT_S``; None for anything the SDK follower shows or
    reports (a pause, a failed attempt, a failure, a result it must decode, time running out:
    so no retry line is shown here)."""
    from client.consoles import text_console

    # What the run's end prints with loads now, while the run goes on, not once it has closed.
    import_module("client.tournament_outcome")
    console = text_console(stderr=True)
    panel: AbstractContextManager[Live | None] = nullcontext()
    if console.is_terminal:
        from rich.live import Live

        # Transient: a hand-over's follower draws its own panel where this one was.
        panel = Live(console=console, refresh_per_second=4, transient=True)
    with panel as live:
        event = close_event_within(
            api, run_id, temporal_run_id, WAIT_S, between=lambda: _going_on(api, run_id, live)
        )
    return None if event is None else _ended(api, run_id, event)


def _going_on(api: ServerHttp, run_id: str, live: Live | None) -> bool:
    """Whether the run goes on as this follower can show it (its progress drawn on the panel);
    False when the SDK follower takes over from here: the run paused on its budget, a call
    attempt failed (the retry lines are the SDK follower's), or the server did not answer."""
    from pydantic import ValidationError

    from client.tournament_display import progress_table
    from workflows.tournament.types import Progress

    try:
        description = api.describe(run_id)
        if any(activity.get("lastFailure") for activity in description.pending_activities):
            return False
        progress = Progress.model_validate_json(api.query(run_id, QUERY_PROGRESS))
    except (HttpUnanswered, ValidationError):
        return False
    if progress.status == "awaiting_budget":
        return False
    if live is not None:
        live.update(progress_table(progress, description.start_time))
    return True


def _ended(api: ServerHttp, run_id: str, event: dict[str, Any]) -> Ended | None:
    """The completed run (its result and final progress, as the SDK follower's last frame
    shows them); None for any other close, or a result or progress this path cannot read."""
    from pydantic import ValidationError

    from workflows.tournament.types import Progress, TournamentResult

    if event.get("eventType") != _COMPLETED:
        return None
    attributes = event.get("workflowExecutionCompletedEventAttributes", {})
    try:
        result = TournamentResult.model_validate_json(payload_data(attributes.get("result")))
        description = api.describe(run_id)
        final = _stored_progress(Path(result.run_dir)) or Progress.model_validate_json(
            api.query(run_id, QUERY_PROGRESS)
        )
    except (HttpUnanswered, ValidationError):
        return None
    return Ended(result, final, description.start_time, description.close_time)


def _stored_progress(run_dir: Path) -> Progress | None:
    """The progress the run's last write left in its store (what the status query answers of
    an ended run, read in milliseconds: the query replays the whole history on a worker); None
    when there is none to read, or it is not a completed run's."""
    from activities.errors import ConfigError
    from activities.run_file_crypto import read_run_text
    from workflows.tournament.progress import Progress

    try:
        stored = json.loads(read_run_text(run_dir / PROGRESS_FILE))
        progress = Progress.model_validate(stored["progress"])
    # A sealed file this process holds no key for is a ConfigError; a ValidationError is a
    # ValueError: the server's answer is the one to show then.
    except (OSError, ConfigError, ValueError, KeyError, TypeError):
        return None
    return progress if progress.status == "completed" else None


def print_ended(run_id: str, ended: Ended) -> None:
    """What the SDK follower prints for a completed run: its last progress frame (on a terminal
    it stays as the live panel leaves it), then the outcome lines."""
    from client.consoles import text_console
    from client.tournament_display import progress_table
    from client.tournament_outcome import print_outcome

    last = progress_table(ended.last, ended.started, ended.ended)
    text_console(stderr=True).print(last)
    print_outcome(run_id, ended.result)


async def follow_handover(settings: Settings, input: TournamentInput, handover: Handover) -> Any:
    """The SDK path's follower on the run this command started over HTTP (or, when the start's
    answer was lost, on a run under its id carrying this command's start; else it starts it):
    the run's result, or its progress when it paused."""
    from client.ask_cli import _signals_detach, _started_here
    from client.runs import start_run
    from client.session import open_session
    from client.tournament_follow import follow
    from workflows.tournament.types import TournamentResult

    # Until the follower takes Ctrl-C and SIGTERM over (``client.runs.ctrl_c_detaches``).
    with _signals_detach(handover.run_id):
        async with open_session(settings) as session:
            if await _started_here(session.client, handover):
                handle = session.client.get_workflow_handle(
                    handover.run_id, run_id=handover.temporal_run_id, result_type=TournamentResult
                )
            else:
                handle = await start_run(
                    session, TOURNAMENT, input, handover.run_id, TournamentResult
                )
            return await follow(session, handle)
