"""A campaign's effects per cell: the route assertion, and settling a cell (capture, spend, score).

Settling reads the cell's own run directory (written by its ``Ask`` or ``Tournament`` child),
so the answer and the raw provider events stay out of the campaign's history. Scorers that need
the worker run here: ``sim_truth`` (the sim trailer of the answer) and ``command`` (a command
the worker's configuration declares by name, run in a fresh temp dir with an explicit
environment and the answer on stdin). The judge scorer's model call is made by the workflow.
"""

from __future__ import annotations

import asyncio
import glob
import json
import os
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.config import _BUILTIN_ENDPOINTS, Settings, check_declared_base_url, read_secret
from activities.errors import ConfigError
from activities.heartbeats import in_thread
from activities.providers.registry import resolve_model
from activities.run_file_crypto import RunFileUnreadable, read_run_text
from activities.sim_math import true_quality
from workflows.campaign.activity_contracts import CHECK_CAMPAIGN_ROUTE, SETTLE_CAMPAIGN_CELL
from workflows.campaign.document import (
    CommandScorer,
    ExactScorer,
    NumericScorer,
    RegexScorer,
    Route,
    SimTruthScorer,
)
from workflows.campaign.scoring import last_number, score_exact, score_numeric, score_regex
from workflows.campaign.types import (
    CellOutcome,
    CheckRouteInput,
    RouteCheck,
    RoutedModel,
    RouteIssue,
    SettleCellInput,
)
from workflows.patterns import search
from workflows.run_ids import check_run_id

__all__ = [
    "CHECK_CAMPAIGN_ROUTE",
    "SCORER_FAILED",
    "SETTLE_CAMPAIGN_CELL",
    "CampaignCellActivities",
    "ScorerFailed",
    "route_check",
]

HTTP_KINDS = ("openai", "anthropic")
BASE_ENV = ("PATH", "LANG")
SCORER_FAILED = "scorer.failed"


def _matches(url: str, rules: list[str]) -> bool:
    for rule in rules:
        if rule.startswith("re:"):
            if search(rule[3:], url):  # RE2: compiled at validation, linear here
                return True
        elif url.startswith(rule):
            return True
    return False


def route_check(
    route: Route, models: list[RoutedModel], settings: Settings, *, offline: bool = False
) -> RouteCheck:
    """Every way a variant's HTTP provider breaks the route (sim, replay and command pass),
    and which variants speak HTTP (their cells must leave raw events)."""
    issues: list[RouteIssue] = []
    http: set[str] = set()
    for item in models:

        def issue(reason: str, message: str, item: RoutedModel = item) -> None:
            issues.append(
                RouteIssue(variant=item.variant, model=item.model, reason=reason, message=message)  # type: ignore[arg-type]
            )

        try:
            resolved = resolve_model(
                item.model,
                settings,
                base_url=item.base_url,
                require_key=False,
                declared_only=False,
            )
        except ConfigError as exc:
            issue("unknown_model", exc.message)
            continue
        kind = resolved.endpoint.kind
        if kind not in HTTP_KINDS:
            continue
        http.add(item.variant)
        if route.provider is not None and kind != route.provider:
            issue("wrong_provider", f"provider kind {kind!r}, the route expects {route.provider!r}")
        url = (resolved.endpoint.base_url or "").rstrip("/")
        # Explicit: the variant names the URL or the worker's ponder.toml declares the
        # endpoint; a built-in default endpoint is the silent public fallback the check stops.
        implicit = item.base_url is None and resolved.endpoint == _BUILTIN_ENDPOINTS.get(
            resolved.provider_name
        )
        if (not url or implicit) and route.require_explicit_base_url:
            issue(
                "no_explicit_base_url",
                f"{resolved.provider_name} uses its built-in default base URL {url or '-'}: "
                "declare [providers.NAME] base_url in the worker's ponder.toml (or give the "
                "variant a base_url) so the campaign cannot fall back to a public endpoint",
            )
        if url and _matches(url, route.block):
            issue("base_url_blocked", f"base URL {url} is on the route's block list")
        elif url and route.allow and not _matches(url, route.allow):
            issue("base_url_not_allowed", f"base URL {url} is not on the route's allow list")
        env = resolved.endpoint.api_key_env
        # An offline wire replay sends no request, so it needs no key (the other rules hold).
        if route.require_auth and not offline and (env is None or read_secret(env) is None):
            issue(
                "no_auth",
                f"no API key for provider {resolved.provider_name!r}: set api_key_env and its "
                "variable on the worker",
            )
        if item.base_url is not None:
            try:  # last: the route's own rules above still report first
                check_declared_base_url(item.base_url, settings)
            except ConfigError as exc:
                issue("base_url_not_allowed", exc.message)
    return RouteCheck(issues=issues, http_variants=sorted(http))


class CampaignCellActivities:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @activity.defn(name=CHECK_CAMPAIGN_ROUTE)
    async def check_campaign_route(self, input: CheckRouteInput) -> RouteCheck:
        return await asyncio.to_thread(
            route_check, input.route, input.models, self.settings, offline=input.offline
        )

    @activity.defn(name=SETTLE_CAMPAIGN_CELL)
    async def settle_campaign_cell(self, input: SettleCellInput) -> CellOutcome:
        # It may run a command scorer for minutes: it heartbeats, so a killed worker delays
        # the cell by the heartbeat timeout, not by the 15-minute start-to-close.
        try:
            return await in_thread(self.settle, input)
        except RunFileUnreadable as exc:  # a cell run sealed with a key this worker lacks
            raise ApplicationError(exc.message, type=exc.code, non_retryable=True) from None

    def settle(self, input: SettleCellInput) -> CellOutcome:
        run_dir = self.settings.runs_dir / check_run_id(input.run_id)
        # A plan run keeps cost.json (its answer comes back in the run's result); the others
        # keep summary.json and their answer under artifacts/.
        summary_path = run_dir / ("cost.json" if input.kind == "plan" else "summary.json")
        if not summary_path.is_file():
            return CellOutcome(exists=False, completed=False, integrity_issues=["no_run"])
        summary: dict[str, Any] = json.loads(read_run_text(summary_path))
        outcome = _spend(input.kind, summary)
        if input.kind == "plan":
            answer = input.answer
        else:
            answer_file = run_dir / (
                "artifacts/final.txt" if input.kind == "tournament" else "artifacts/answer.txt"
            )
            answer = read_run_text(answer_file) if answer_file.is_file() else None
        issues = []
        if (outcome.completed and answer is None) or (
            not input.child_failed and not outcome.completed
        ):
            issues.append("missing_outcome")
        if outcome.completed and outcome.calls < 1:
            issues.append("missing_llm_spans")
        issues += _raw_event_issues(run_dir, outcome, input.http)
        outcome.integrity_issues = issues
        if answer is None or not outcome.completed:
            return outcome
        if input.return_answer:
            outcome.answer = answer
            return outcome
        try:
            outcome.score = self.score(input, answer)
        except ScorerFailed as exc:
            outcome.score_error = str(exc)
        return outcome

    def score(self, input: SettleCellInput, answer: str) -> float:
        scorer = input.scorer
        if isinstance(scorer, ExactScorer):
            return score_exact(scorer, answer)
        if isinstance(scorer, NumericScorer):
            return score_numeric(scorer, answer)
        if isinstance(scorer, RegexScorer):
            return score_regex(scorer, answer)
        if isinstance(scorer, SimTruthScorer):
            q = true_quality(answer)
            if q is None:
                raise ScorerFailed(
                    "sim_truth: the answer carries no simulated quality; sim_truth scores only "
                    "variants whose models are simulated"
                )
            return q
        if isinstance(scorer, CommandScorer):
            return self.command_score(scorer.name, answer)
        raise ScorerFailed(f"{scorer.kind}: scored by the workflow, not here")

    def command_score(self, name: str, answer: str) -> float:
        endpoint = self.settings.providers.get(name)
        if endpoint is None or endpoint.kind != "command" or not endpoint.argv:
            raise ScorerFailed(
                f"command scorer {name!r}: the worker declares no such command; add "
                f'[providers.{name}] kind = "command" with argv to its ponder.toml'
            )
        with tempfile.TemporaryDirectory(prefix="ponder-scorer-") as workdir:
            env = {k: os.environ[k] for k in BASE_ENV if k in os.environ}
            env["HOME"] = workdir
            env |= {k: os.environ[k] for k in endpoint.env if k in os.environ}
            try:
                done = subprocess.run(
                    endpoint.argv,
                    input=answer,
                    capture_output=True,
                    text=True,
                    cwd=workdir,
                    env=env,
                    timeout=endpoint.timeout_s,
                    start_new_session=True,
                    check=False,
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise ScorerFailed(f"command scorer {name!r} did not run: {exc}") from None
        lines = done.stdout.strip().splitlines()
        if lines and re.fullmatch(r"\s*[-+]?[\d.]+(?:[eE][-+]?\d+)?\s*", lines[-1]):
            value = last_number(lines[-1])
            if value is not None:
                return value
        return 1.0 if done.returncode == 0 else 0.0


class ScorerFailed(Exception):
    pass


def _spend(kind: str, summary: dict[str, Any]) -> CellOutcome:
    if kind == "plan":  # cost.json
        return CellOutcome(
            exists=True,
            completed=summary.get("outcome") == "completed",
            # Model calls (a tournament step is one invocation of many), else invocations.
            calls=int(summary.get("calls", summary.get("invocations", 0))),
            input_tokens=int(summary.get("input_tokens", 0)),
            output_tokens=int(summary.get("output_tokens", 0)),
            usd=float(summary.get("usd") or 0.0),
            model="plan:" + str(summary.get("plan", "")),
            simulated=bool(summary.get("simulated", False)),
        )
    completed = summary.get("status") == "completed"
    usage = summary.get("usage") or {}
    if kind == "tournament":
        models = summary.get("models") or {}
        return CellOutcome(
            exists=True,
            completed=completed,
            calls=int(usage.get("calls", 0)),
            failed_calls=int(usage.get("failed_calls", 0)),
            input_tokens=int(usage.get("input_tokens", 0)),
            output_tokens=int(usage.get("output_tokens", 0)),
            usd=float(usage.get("usd") or 0.0),
            model=str(models.get("default", "")),
            simulated=bool(summary.get("simulated", False)),
        )
    provider, model = summary.get("provider"), str(summary.get("model", ""))
    # An Ask's summary names the model as given (`sim:default`): prefixing its provider again
    # would label the cell `sim:sim:default`.
    if provider and not model.startswith(f"{provider}:"):
        model = f"{provider}:{model}"
    return CellOutcome(
        exists=True,
        completed=completed,
        calls=1,  # an Ask is one logical call, answered or failed
        failed_calls=0 if completed else 1,
        input_tokens=int(usage.get("input_tokens", 0)),
        output_tokens=int(usage.get("output_tokens", 0)),
        usd=float(summary.get("usd") or 0.0),
        model=model,
        simulated=bool(summary.get("simulated", False)),
    )


def _raw_event_issues(run_dir: Path, outcome: CellOutcome, http: bool) -> list[str]:
    """Raw HTTP events of a cell whose models speak HTTP: present, each request answered by
    exactly one response or error, and every logical call (span) covered by a request.

    A simulated or command cell makes no HTTP request, so it has nothing to check here. A sim
    call's synthetic exchange (``synthetic: true``) counts like an HTTP one: it covers its own
    call's span only, so a variant mixing HTTP and sim roles is checked call by call.

    Only a request event covers a span. A command agent's run record (argv, exit code, no
    request) is no HTTP attempt: it is not a broken exchange (no ``missing_raw_events``), and
    it covers nothing, so a command step in an HTTP variant is an ``orphan_llm_span``: its
    model call left no wire exchange to audit or replay.
    """
    if not http:
        return []
    # A plan's tournament step runs as a child run ``<run id>.<step>.<n>`` that keeps its own
    # raw events; its calls are the plan's, so they count here.
    children = run_dir.parent.glob(f"{glob.escape(run_dir.name)}.*/raw-events.jsonl")
    paths = [p for p in (run_dir / "raw-events.jsonl", *sorted(children)) if p.is_file()]
    if not paths:
        return ["no_raw_sink"] if outcome.calls else []
    issues: set[str] = set()
    spans = set()
    for line in (line for path in paths for line in read_run_text(path).splitlines()):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:  # a line cut short (a worker killed mid-append, a full disk)
            issues.add("missing_raw_events")
            continue
        if "request" not in event and event.get("provider_kind") == "command":
            continue
        if "request" not in event or ("response" in event) == ("error" in event):
            issues.add("missing_raw_events")
        if "request" in event:  # the call id is stable across Temporal retries of one call
            spans.add(str(event.get("call_id", "")))
    if len(spans) < outcome.calls:
        issues.add("orphan_llm_span")
    return sorted(issues)
