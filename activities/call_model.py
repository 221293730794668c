"""The ``call_model`` activity: one logical model call through whichever provider the spec names."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities import metrics
from activities.config import (
    BASE_URL_NOT_ALLOWED,
    Settings,
    known_secrets,
    secret_env_values,
)
from activities.errors import (
    CONFIG_ERROR_TYPE,
    RETRY_LATER_TYPE,
    ConfigError,
    ProviderError,
)
from activities.heartbeats import heartbeating
from activities.ledger import LedgerDrawer
from activities.plan.roots import WORKSPACE_REFUSED, outside_roots, with_run_worktrees
from activities.pricing import cost_usd
from activities.providers import CallContext, ResolvedModel, resolve_model, resolves_in_memory
from activities.providers.registry import PROVIDER_UNKNOWN
from activities.providers.replay import source_run, store_holds
from activities.providers.sampling import Sampler
from activities.raw_events import RawEventLog, redact
from activities.run_file_crypto import run_file_cipher
from activities.run_store import REFUSED, RunStore, check_read_token, check_writer, refusal
from activities.wire_cache import WireCaches, replayed
from workflows.activity_contracts import CALL_MODEL
from workflows.call_options import NO_SESSION
from workflows.model_types import CallModelInput, ModelResponse

__all__ = ["CALL_MODEL", "ModelActivities"]


LONG_RETRY_AFTER_S = 300.0
"""A Retry-After beyond this waits on a durable workflow timer, not inside the activity."""
RUN_DIRS_REMEMBERED = 4096
"""Run directories one worker remembers having checked (the oldest is forgotten first)."""

_RunKey = tuple[str | None, str, str | None]
"""(workflow id, run id, chain) of a call: whose run directory it writes."""


def _remaining_s(info: activity.Info) -> float | None:
    """Seconds left of the activity's schedule-to-close, counted from its first schedule."""
    if not info.schedule_to_close_timeout:
        return None
    deadline = info.scheduled_time + info.schedule_to_close_timeout
    return (deadline - datetime.now(UTC)).total_seconds()


_OWN_CODES = frozenset({BASE_URL_NOT_ALLOWED, NO_SESSION, PROVIDER_UNKNOWN})
"""Refusals of what the run's input asked for (a host, an MCP session or a provider the worker
does not give it), not of the worker's configuration: the run fails with their own code, the one
the CLI gives the same mistake before a run starts."""


def _config_failure(exc: ConfigError) -> ApplicationError:
    """The worker's configuration refused the call: ``provider.config`` (or one of
    ``_OWN_CODES``), never retried."""
    code = exc.code if exc.code in _OWN_CODES else CONFIG_ERROR_TYPE
    return ApplicationError(exc.message, type=code, non_retryable=True)


def _application_error(
    error: ProviderError, secrets: list[str], *, attempt: int, transport_retries: int
) -> ApplicationError:
    """The error as history will hold it: a provider may echo the key back in its body.

    Its details carry how many transport retries the call took (so a failed call's usage row
    shows them); a Retry-After too long to wait here becomes ``provider.retry_later`` (the
    workflow sleeps on a durable timer, then calls again).
    """
    message = redact(error.message, secrets)
    details = {
        "status": error.status,
        "model": error.model,
        "attempt": attempt,
        "transport_retries": transport_retries,
    }
    wait = error.retry_after
    if error.retryable and wait is not None:
        remaining = _remaining_s(activity.info())
        if wait > LONG_RETRY_AFTER_S or (remaining is not None and wait >= remaining):
            return ApplicationError(
                f"{message}; the provider asks to retry in {wait:g}s, longer than this call "
                "may wait",
                {"retry_after_s": float(wait)} | details,
                type=RETRY_LATER_TYPE,
                non_retryable=True,
            )
    return ApplicationError(
        message,
        details,
        type=error.error_type,
        non_retryable=not error.retryable,
        next_retry_delay=timedelta(seconds=wait) if wait is not None else None,
    )


class ModelActivities:
    """Holds the shared HTTP client and settings of one worker."""

    def __init__(
        self,
        settings: Settings,
        http: httpx.AsyncClient,
        *,
        workspace_roots: list[str] | None = None,
        sampler: Sampler | None = None,
        ledger_queue: str | None = None,
    ) -> None:
        self.settings = settings
        self.ledgers = LedgerDrawer(settings, ledger_queue or settings.task_queue)
        """Blocks of shared-ledger calls this worker holds (``calls.ledger``)."""
        self.sampler = sampler
        """The MCP session(s) ``mcp:`` calls sample from (``ponder mcp``'s worker only)."""
        self.http = http
        self.workspace_roots = workspace_roots
        """Real paths a plan step's workspace (a command agent's cwd) must lie in; None: none
        checked. Checked at every call: the run's preflight may have run on another worker."""
        self.store = RunStore(settings.runs_dir, cipher=run_file_cipher(settings))
        self.replays = WireCaches(settings)
        self._run_dirs: dict[_RunKey, Path] = {}
        """Run directories an earlier call checked (``writable_dir``), by ``_RunKey``."""
        self._run_dirs_lock = threading.Lock()

    def _in_memory(self, input: CallModelInput) -> Path | None:
        """The run directory, if preparing ``input`` reads no file: an earlier call of this
        worker checked the directory and claimed the run, the call names no workspace (whose
        check resolves paths) and its model resolves from memory. Such a call is prepared on
        the event loop: microseconds, where a thread hop costs far more on a busy machine."""
        workflow_id = activity.info().workflow_id
        known = self._run_dirs.get((workflow_id, input.run_id, input.chain))
        if (
            known is None
            or input.request.workspace is not None
            or input.replay is not None  # its read token is checked on disk
            or not self.store.remembers(workflow_id, input.chain)
            or not resolves_in_memory(input.request.model, self.settings)
        ):
            return None
        return known

    def _prepare(
        self, input: CallModelInput, run_dir: Path | None = None
    ) -> tuple[ResolvedModel, list[str], Path]:
        """The endpoint, the values to redact and the run directory (``run_dir``, if an
        earlier call checked it), or a coded refusal."""
        request = input.request
        try:  # raw events go only to this workflow's run directory (or its child's)
            check_writer(input.run_id, self.store, input.chain)
        except REFUSED as exc:
            raise refusal(exc) from None
        if request.workspace is not None and self.workspace_roots is not None:
            # An isolated fan-out item runs in a worktree of this run's own directory.
            roots = with_run_worktrees(
                self.workspace_roots, self.store.root, activity.info().workflow_id
            )
            problem = outside_roots(request.workspace, roots)
            if problem is not None:
                raise ApplicationError(problem, type=WORKSPACE_REFUSED, non_retryable=True)
        # A replay that may not reach the network needs no key (a CI box replays without one).
        offline = input.replay is not None and input.replay.on_miss != "network"
        try:
            resolved = resolve_model(
                request.model, self.settings, base_url=request.base_url, require_key=not offline
            )
        except ConfigError as exc:
            raise _config_failure(exc) from None
        self._check_sources(input, resolved)  # before anything of another run is read
        secrets = [
            resolved.api_key or "",
            *known_secrets(self.settings),
            *secret_env_values(resolved.endpoint.env),
        ]
        if run_dir is None:
            try:
                run_dir = self.store.writable_dir(input.run_id)
            except REFUSED as exc:
                raise refusal(exc) from None
            self._remember_run_dir(
                (activity.info().workflow_id, input.run_id, input.chain), run_dir
            )
        return resolved, secrets, run_dir

    def _check_sources(self, input: CallModelInput, resolved: ResolvedModel) -> None:
        """Refuse (``run.capability_required`` / ``run.capability_invalid``) a call that reads
        another run's recording without that run's read token."""
        root = Path(self.settings.runs_dir)
        sources = []
        if resolved.endpoint.kind == "replay":
            sources.append(source_run(Path(resolved.model_name), root))
        if input.replay is not None and store_holds(input.replay.run_id, root):
            sources.append(input.replay.run_id)
        tokens = input.read_tokens or {}
        for run_id in sources:
            if run_id is None:
                continue
            try:
                check_read_token(root, run_id, tokens.get(run_id))
            except REFUSED as exc:
                raise refusal(exc) from None

    def _remember_run_dir(self, key: _RunKey, run_dir: Path) -> None:
        with self._run_dirs_lock:  # prepared in worker threads
            self._run_dirs[key] = run_dir
            if len(self._run_dirs) > RUN_DIRS_REMEMBERED:
                del self._run_dirs[next(iter(self._run_dirs))]

    @activity.defn(name=CALL_MODEL)
    async def call_model(self, input: CallModelInput) -> ModelResponse:
        info = activity.info()
        request = input.request
        # Secrets files and the run directory are read in a thread (never block the loop),
        # once a run: its later calls, with nothing to read, are prepared in place.
        known = self._in_memory(input)
        if known is not None:
            resolved, secrets, run_dir = self._prepare(input, known)
        else:
            resolved, secrets, run_dir = await asyncio.to_thread(self._prepare, input)
        raw_events = RawEventLog(
            run_dir / "raw-events.jsonl",
            secrets=secrets,
            cipher=self.store.cipher,
            base={
                "call_id": input.call_id,
                "call_key": input.call_key,
                "activity_attempt": info.attempt,
                "provider": resolved.provider_name,
                "provider_kind": resolved.endpoint.kind,
                "model": resolved.model_name,
                "seed": request.seed,  # part of the wire-replay key (workflows/wire_replay.py)
            },
        )
        ctx = CallContext(
            call_id=input.call_id,
            call_key=input.call_key,
            run_id=input.run_id,
            phase=input.phase,
            attempt=input.attempt,
            provider_name=resolved.provider_name,
            model_name=resolved.model_name,
            endpoint=resolved.endpoint,
            api_key=resolved.api_key,
            http=self.http,
            raw_events=raw_events,
            role=request.role,
            tag=request.tag,
            extra_env={  # a plan step's workspace (the agent's cwd) and fan-out item
                key: value
                for key, value in (
                    ("PONDER_WORKSPACE", request.workspace),
                    ("PONDER_ITEM", request.item),
                )
                if value is not None
            },
            sampler=self.sampler,
        )
        # Reserved before the call is made: a refusal (or an unknown ledger) makes no call.
        block = (
            None
            if input.ledger is None
            else await self.ledgers.take(input.ledger, info.workflow_id or "", input.call_id)
        )
        started = time.monotonic()
        response: ModelResponse | None = None
        try:
            async with heartbeating():  # a dead worker is noticed quickly
                if input.replay is not None:
                    response = await replayed(self.replays, input, resolved, ctx)
                else:
                    response = await resolved.implementation.request(request, ctx)
        except ProviderError as exc:
            failure = _application_error(
                exc,
                secrets,
                attempt=info.attempt,
                transport_retries=info.attempt - 1 + ctx.fallbacks,
            )
            _record(resolved, str(failure.type), started, None)
            raise failure from None
        except ConfigError as exc:
            failure = _config_failure(exc)
            _record(resolved, str(failure.type), started, None)
            raise failure from None
        finally:
            if block is not None and response is None:  # failed or cancelled: still counted
                await self.ledgers.answered(block, input.call_id, tokens=0, usd=0.0)
        price = self.settings.prices.get(f"{resolved.provider_name}:{resolved.model_name}")
        answered = response.model_copy(
            update={
                # Redacted here, before the result enters history: a provider may echo a key
                # in a well-formed answer and a command agent may print one it was given.
                "text": redact(response.text, secrets),
                "latency_ms": round((time.monotonic() - started) * 1000, 3),
                "transport_retries": info.attempt - 1 + ctx.fallbacks,
                "usd": cost_usd(price, response.usage) if price else response.usd,
            }
        )
        _record(resolved, metrics.OK, started, answered)
        if block is not None:
            usage = answered.usage
            await self.ledgers.answered(
                block,
                input.call_id,
                tokens=usage.input_tokens + usage.output_tokens,
                usd=answered.usd or 0.0,
            )
        return answered


def _record(
    resolved: ResolvedModel, outcome: str, started: float, response: ModelResponse | None
) -> None:
    metrics.record_call(
        provider=resolved.provider_name,
        model=resolved.model_name,
        outcome=outcome,
        latency_ms=(time.monotonic() - started) * 1000,
        response=response,
    )
