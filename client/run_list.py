"""Every run this home knows of, from the run store and the Temporal server (``ponder runs``
and the MCP ``list_runs`` tool print these rows).

The server knows each workflow's type, state and start time (also for runs whose artifacts a
remote worker wrote elsewhere); the run store knows what a run did (calls, USD, winner or
error). A row joins both by run id.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from activities.errors import ConfigError
from activities.run_file_crypto import open_run_bytes, read_run_text
from client.run_states import KINDS, STATUSES
from workflows.names import ASK, CAMPAIGN, PLAN_RUN, TOURNAMENT
from workflows.run_ids import RUN_ID, RunIdInvalid, run_id_problem
from workflows.sim_options import SIM_PROVIDER

__all__ = [
    "RunRow",
    "checked_run_dir",
    "http_server_rows",
    "is_campaign_dir",
    "kind_of",
    "list_runs",
    "parse_since",
    "run_ended",
    "server_rows",
    "state_name",
    "store_row",
    "store_rows",
]

if TYPE_CHECKING:  # the SDK is imported by the calls that reach a server, not to read the store
    from temporalio.client import Client, WorkflowExecutionStatus

    from activities.config import Settings
    from client.server_http import ServerHttp

_KIND_OF_TYPE = {ASK: "ask", TOURNAMENT: "tournament", PLAN_RUN: "plan", CAMPAIGN: "campaign"}
SERVER_LIST_LIMIT = 2_000


def state_name(status: WorkflowExecutionStatus | None) -> str:
    """A Temporal execution status in ponder's words (one spelling: ``cancelled``)."""
    return _state(status.name if status is not None else None)


def _state(name: str | None) -> str:
    if name is None:
        return "unknown"
    if name == "CANCELED":
        return "cancelled"
    return name.lower()


class RunRow(BaseModel):
    run_id: str
    kind: str
    status: str
    created: str | None = None
    calls: int | None = None
    usd: float | None = None
    outcome: str | None = None
    """The winner, the answer's path, the error: whatever says how the run ended."""
    simulated: bool = False
    on_server: bool = False
    in_store: bool = False
    parent: str | None = None
    """The campaign a cell run belongs to (cell ids are ``<campaign id>.<cell hash>``)."""


def checked_run_dir(runs_dir: Path, run_id: str) -> Path:
    """The run's directory, refused (``run.id_invalid``) for a path-shaped id or a directory
    that is a symlink or leads outside the run store."""
    problem = run_id_problem(run_id)
    if problem is not None:
        raise RunIdInvalid(problem)
    run_dir = Path(runs_dir) / run_id
    if run_dir.is_symlink() or (
        run_dir.exists() and not run_dir.resolve().is_relative_to(Path(runs_dir).resolve())
    ):
        from activities.run_store import RunDirRefused  # its module imports the SDK

        raise RunDirRefused(
            f"{run_dir} is a symlink or leads outside the run store: ponder reads only inside it"
        )
    return run_dir


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(read_run_text(path))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _created(run_dir: Path) -> str | None:
    for events in ("events.jsonl", "trace.jsonl"):  # a tournament's, a plan run's
        try:
            with (run_dir / events).open("rb") as f:
                first = json.loads(open_run_bytes(f.readline(), run_dir / events))
            return str(first["ts"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
    times = [p.stat().st_mtime for p in run_dir.iterdir() if p.is_file()]
    if not times:
        return None
    return datetime.fromtimestamp(min(times), UTC).isoformat()


def is_campaign_dir(run_dir: Path) -> bool:
    """A campaign's run directory: its document beside its records."""
    return (run_dir / "campaign.json").is_file() and (run_dir / "records.jsonl").is_file()


def store_row(runs_dir: Path, run_id: str) -> RunRow | None:
    """What the run store says of one run; None when it has no artifacts."""
    run_dir = checked_run_dir(runs_dir, run_id)
    summary = _read_json(run_dir / "summary.json")
    config = _read_json(run_dir / "config.json")
    cost = _read_json(run_dir / "cost.json")  # a plan run's (its trace is trace.jsonl)
    if cost and not summary:
        return _plan_row(run_dir, run_id, cost)
    if "campaign_id" in summary:
        return _campaign_row(run_dir, run_id, summary)
    if not summary and not config:
        return None
    if "winner_id" in summary or config.get("task") is not None:
        kind = "rank" if config.get("candidates") else "tournament"
    else:
        kind = str(summary.get("kind") or ("mutate" if run_id.startswith("mutate-") else "ask"))
    usage: dict[str, Any] = u if isinstance(u := summary.get("usage"), dict) else {}
    calls = usage.get("calls")
    if calls is None and kind in ("ask", "mutate") and summary.get("status") == "completed":
        calls = 1
    usd = summary.get("usd") if kind in ("ask", "mutate") else usage.get("usd")
    if summary.get("usd_known") is False:
        usd = None
    outcome = summary.get("error") or (
        f"winner {summary['winner_id']}" if summary.get("winner_id") else None
    )
    if outcome is None and kind in ("ask", "mutate") and summary.get("status") == "completed":
        outcome = "answer in artifacts/answer.txt"
    return RunRow(
        run_id=run_id,
        kind=kind,
        status=str(summary.get("status") or "running"),
        created=_created(run_dir),
        calls=calls,
        usd=usd,
        outcome=outcome,
        simulated=bool(summary.get("simulated")) or _sim_models(config),
        in_store=True,
    )


def _sim_models(config: dict[str, Any]) -> bool:
    """Whether every model a tournament's input names (its default, a model per role, a judge
    panel) is the sim provider's: its summary says ``simulated`` only of sim candidates, which
    a rank run's given candidates never are."""
    models = config.get("models")
    judges = config.get("judges")
    named = [
        config.get("model"),
        *(models.values() if isinstance(models, dict) else ()),
        *(judges if isinstance(judges, list) else ()),
    ]
    named = [m for m in named if m is not None]
    return bool(named) and all(
        isinstance(m, str) and m.split(":")[0] == SIM_PROVIDER for m in named
    )


def _plan_row(run_dir: Path, run_id: str, cost: dict[str, Any]) -> RunRow:
    closed: dict[str, Any] = {}
    try:
        last = read_run_text(run_dir / "trace.jsonl").splitlines()[-1]
        event = json.loads(last)
        if event.get("type") == "run.closed":
            closed = event.get("data") or {}
    except (OSError, ValueError, IndexError):
        pass
    outcome = closed.get("error") or (f"route {closed['route']}" if closed.get("route") else None)
    return RunRow(
        run_id=run_id,
        kind="plan",
        status=str(cost.get("outcome") or "running"),
        created=_created(run_dir),
        calls=cost.get("calls", cost.get("invocations")),  # model calls (older: invocations)
        usd=cost.get("usd"),
        outcome=outcome or (f"plan {cost['plan']}" if cost.get("plan") else None),
        simulated=bool(cost.get("simulated")),
        in_store=True,
    )


def _campaign_row(run_dir: Path, run_id: str, summary: dict[str, Any]) -> RunRow:
    spent: dict[str, Any] = s if isinstance(s := summary.get("spent"), dict) else {}
    return RunRow(
        run_id=run_id,
        kind="campaign",
        status=str(summary.get("status") or "running"),
        created=summary.get("started_at") or _created(run_dir),
        calls=spent.get("calls"),
        usd=spent.get("usd"),
        outcome=summary.get("error") or summary.get("recommendation"),
        in_store=True,
    )


def store_rows(runs_dir: Path) -> list[RunRow]:
    root = Path(runs_dir)
    if not root.is_dir():
        return []
    rows = []
    for entry in sorted(root.iterdir()):
        if not RUN_ID.fullmatch(entry.name) or entry.is_symlink() or not entry.is_dir():
            continue
        row = store_row(root, entry.name)
        if row is not None:
            rows.append(row)
    return rows


def kind_of(workflow_type: str) -> str:
    """A workflow type in ponder's words: ask, tournament, plan, campaign."""
    return _KIND_OF_TYPE.get(workflow_type, workflow_type.lower())


_SERVER_QUERY = "WorkflowType IN ({})".format(", ".join(f'"{t}"' for t in _KIND_OF_TYPE))


def _server_row(run_id: str, workflow_type: str, state: str, created: datetime | None) -> RunRow:
    kind = kind_of(workflow_type)
    if kind == "ask" and run_id.startswith("mutate-"):
        kind = "mutate"
    created_at = created.isoformat() if created else None
    return RunRow(run_id=run_id, kind=kind, status=state, created=created_at, on_server=True)


async def server_rows(client: Client) -> list[RunRow]:
    """ponder's workflows the server knows (newest first, at most SERVER_LIST_LIMIT)."""
    return [
        _server_row(w.id, w.workflow_type, state_name(w.status), w.start_time)
        async for w in client.list_workflows(_SERVER_QUERY, limit=SERVER_LIST_LIMIT)
    ]


def http_server_rows(api: ServerHttp) -> list[RunRow]:
    """:func:`server_rows` read over the embedded server's HTTP API: the same rows without
    importing the SDK (a third of a second of a command's start). ``HttpUnanswered`` when the
    API does not answer."""
    rows = []
    for w in api.list_workflows(_SERVER_QUERY, limit=SERVER_LIST_LIMIT):
        status = str(w.get("status", "")).removeprefix("WORKFLOW_EXECUTION_STATUS_")
        started = w.get("startTime")
        created = None
        if started and not str(started).startswith("0001-"):  # the API's zero time: unset
            created = datetime.fromisoformat(str(started))
        rows.append(
            _server_row(
                str(w.get("execution", {}).get("workflowId", "")),
                str(w.get("type", {}).get("name", "")),
                _state(status or None),
                created,
            )
        )
    return rows


def merge(store: list[RunRow], server: list[RunRow]) -> list[RunRow]:
    """One row per run id: the server's state and start time, the store's numbers."""
    by_id = {row.run_id: row for row in store}
    for live in server:
        known = by_id.get(live.run_id)
        if known is None:
            by_id[live.run_id] = live
            continue
        status = live.status
        # A run paused on its budget is RUNNING to Temporal; its summary says why.
        if status == "running" and known.status in ("awaiting_budget", "paused"):
            status = known.status
        kind = known.kind if live.kind in ("tournament", "ask") else live.kind
        by_id[live.run_id] = known.model_copy(
            update={
                "status": status,
                "kind": kind,
                "created": live.created or known.created,
                "on_server": True,
            }
        )
    campaigns = {r.run_id for r in by_id.values() if r.kind == "campaign"}
    for row in by_id.values():
        head = row.run_id.rpartition(".")[0]
        if head in campaigns:
            row.parent = head
    return sorted(by_id.values(), key=lambda r: r.created or "", reverse=True)


_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smhdw])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_since(value: str, now: datetime | None = None) -> datetime:
    """``30m``, ``2h``, ``7d``, ``1w`` ago, or an ISO date/time (UTC unless it says)."""
    now = now or datetime.now(UTC)
    match = _DURATION.fullmatch(value.strip())
    if match:
        return now - timedelta(seconds=float(match[1]) * _UNIT_S[match[2]])
    try:
        when = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ConfigError(
            "option.invalid",
            f"--since {value!r} is neither a duration (30m, 2h, 7d, 1w) nor an ISO date "
            "(2026-11-30 or 2026-11-30T08:00): give one of those",
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _matches(row: RunRow, kind: str | None, status: str | None, since: datetime | None) -> bool:
    if kind and row.kind != kind:
        return False
    if status and row.status != status:
        return False
    if since is not None:
        if row.created is None:
            return False
        created = datetime.fromisoformat(row.created)
        if created.tzinfo is None:
            created = created.replace(tzinfo=UTC)
        if created < since:
            return False
    return True


async def list_runs(
    settings: Settings,
    client: Client | ServerHttp | None,
    *,
    kind: str | None = None,
    status: str | None = None,
    since: str | None = None,
    limit: int | None = None,
    cells: bool = False,
) -> list[RunRow]:
    """The runs of this home, newest first, filtered; ``client`` None: the run store only, a
    ``ServerHttp``: the server's rows read over its HTTP API. A campaign's cell runs are left
    out unless ``cells``."""
    if kind is not None and kind not in KINDS:
        raise ConfigError(
            "option.invalid", f"kind {kind!r} is not a run kind: use one of {', '.join(KINDS)}"
        )
    if status is not None and status not in STATUSES:
        raise ConfigError(
            "option.invalid",
            f"status {status!r} is not a run state: use one of {', '.join(STATUSES)}",
        )
    import asyncio  # here: a run's own status reads its row (``store_rows``) with no event loop

    after = parse_since(since) if since else None
    store = await asyncio.to_thread(store_rows, settings.runs_dir)
    from client.server_http import ServerHttp  # HTTP for a listing only, not for a run's rows

    if client is None:
        server = []
    elif isinstance(client, ServerHttp):
        server = await asyncio.to_thread(http_server_rows, client)
    else:
        server = await server_rows(client)
    rows = [
        r
        for r in merge(store, server)
        if _matches(r, kind, status, after) and (cells or r.parent is None)
    ]
    return rows[:limit] if limit is not None else rows


RUN_ENDED = "run.ended"


def run_ended(run_id: str, state: str, action: str) -> ConfigError:
    """The refusal of ``action`` (extend) on a run that has ended: Temporal would answer "workflow
    not found", which reads as a wrong id. ``ponder extend`` and the MCP tool say the same."""
    return ConfigError(RUN_ENDED, f"run {run_id} has already ended ({state}): nothing to {action}")
