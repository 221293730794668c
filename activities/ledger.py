"""The worker side of shared ledgers: ``[ledgers.NAME]``, draw tokens, and the drawer that
reserves a run's calls from the ``Ledger`` entity workflow in blocks.

Every paid call of a run whose input names a ledger (``calls.ledger``) takes one call out of a
*block* this worker holds for that run before it is made. When the block is used up the worker
draws the next one (one update-with-start on the ledger, which starts it with this worker's
limits if it is not running); when all its calls have answered, or none has been made for
``IDLE_S``, the worker reports what the block's calls used and hands back the rest. Meanwhile,
every ``REPORT_S``, one update reports what all of this worker's open blocks of a ledger made
since their last report. So the ledger sees about two updates per block plus one a second per
worker, not one per call: with ``block = 8``, a thousand calls a minute are about four updates
a second, well under what one entity workflow should take (tens a second). A call retried by
Temporal on the same worker takes nothing more (idempotent by call id); one retried on another
worker (its first worker was killed) takes a call of that worker's block, and the ledger charges
it once: every report names the calls it counts that the last one did not (``call_digest``), and
a call another hold named first is handed back when its second hold closes.

What a killed worker leaves: its holds expire ``hold_ttl_s`` after their last message and hand
back every call they had not reported, so no budget leaks. The calls it made and had not
reported are the ledger's in-flight window, the most it can be exceeded by: at most one block
per run it held a block for, in practice what it made in its last ``REPORT_S``. Tokens and USD
are known only after a call: they stop new draws once reached, and may be exceeded by what the
open blocks' calls use.
"""

from __future__ import annotations

import asyncio
import hmac
import os
import random
import secrets
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from temporalio import activity
from temporalio.client import WithStartWorkflowOperation
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from activities.ledger_config import LedgerConfig
from workflows.ledger.types import (
    LEDGER_SPENT,
    LEDGER_TOKEN_INVALID,
    LEDGER_UNKNOWN,
    MAX_BATCH,
    DrawInput,
    DrawResult,
    LedgerDraw,
    LedgerInput,
    SettleBatch,
    SettleInput,
    call_digest,
    ledger_workflow_id,
    spent_message,
    token_digest,
)
from workflows.names import LEDGER, UPDATE_LEDGER_DRAW, UPDATE_LEDGER_SETTLE

if TYPE_CHECKING:
    from temporalio.client import Client

    from activities.config import Settings

__all__ = ["IDLE_S", "LedgerDrawer", "draw_token", "ledger_start", "token_path"]

T = TypeVar("T")


def ledger_start(
    name: str, config: LedgerConfig, digest: str, task_queue: str
) -> WithStartWorkflowOperation[Any, Any]:
    """Start ledger ``name``'s entity with the configuration's limits, or reach the running one
    (the start half of every update-with-start on a ledger: a draw, an extend)."""
    return WithStartWorkflowOperation(
        LEDGER,
        LedgerInput(
            name=name, limits=config.limits(), hold_ttl_s=config.hold_ttl_s, token_sha256=digest
        ),
        id=ledger_workflow_id(name),
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        task_queue=task_queue,
    )


IDLE_S = 2.0
"""A block none of whose calls is in flight for this long is reported and closed."""
REPORT_S = 1.0
"""How often a worker reports its open blocks' calls (one update per ledger for them all)."""
CALLS_REMEMBERED = 65_536
UPDATES_IN_FLIGHT = 4
"""Updates one worker process sends one ledger at once: the server takes only a few in flight
per workflow (10 by default) and refuses the rest with RESOURCE_EXHAUSTED."""
BUSY_RETRIES = 8


def token_path(settings: Settings, name: str) -> Path:
    config = settings.ledgers.get(name)
    if config is not None and config.token_file:
        return Path(config.token_file).expanduser()
    return Path(settings.home) / "ledgers" / f"{name}.token"


def draw_token(settings: Settings, name: str) -> str:
    """Ledger ``name``'s draw token, made first (mode 0600) if its file does not exist."""
    path = token_path(settings, name)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".token.")  # 0600
        try:
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(16) + "\n")
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process made it meanwhile: read theirs
        finally:
            Path(tmp).unlink(missing_ok=True)
    return path.read_text(encoding="ascii").strip()


@dataclass
class _Block:
    ledger: str
    holder: str
    key: str
    granted: int
    calls: set[str] = field(default_factory=set)
    """Calls that took one of the block's calls (by call id)."""
    named: list[str] = field(default_factory=list)
    """Their ``call_digest``s, in the order they were taken."""
    acked: int = 0
    """How many of ``named`` a report the ledger took has carried."""
    answered: set[str] = field(default_factory=set)
    tokens: int = 0
    usd: float = 0.0
    """What its calls cost, in all (reports carry totals)."""
    reported: tuple[int, int, float] = (0, 0, 0.0)
    """(used, tokens, usd) as last reported."""
    last: float = field(default_factory=time.monotonic)
    closed: bool = False

    @property
    def in_flight(self) -> int:
        return len(self.calls - self.answered)

    def take(self, call_id: str) -> None:
        self.calls.add(call_id)
        self.named.append(call_digest(call_id))

    def report(self, *, final: bool) -> _Report:
        self.reported = (len(self.calls), self.tokens, self.usd)
        settle = SettleInput(
            key=self.key,
            used=len(self.calls),
            tokens=self.tokens,
            usd=self.usd,
            final=final,
            calls=self.named[self.acked :],
        )
        return _Report(self, len(self.named), settle)

    @property
    def unnamed(self) -> bool:
        return self.acked < len(self.named)


@dataclass(frozen=True)
class _Report:
    block: _Block
    named: int
    """How many of the block's calls it names, from the first: once the ledger took it, later
    reports name only those after."""
    settle: SettleInput

    def taken(self) -> None:
        self.block.acked = max(self.block.acked, self.named)


class LedgerDrawer:
    """One worker process's blocks, by (ledger, run)."""

    def __init__(self, settings: Settings, task_queue: str) -> None:
        self.settings = settings
        self.task_queue = task_queue
        self.blocks: dict[tuple[str, str], _Block] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._tokens: dict[str, str] = {}
        self._instance = uuid.uuid4().hex[:12]
        self._drawn = 0
        self._tending: dict[str, asyncio.Task[None]] = {}
        """Ledger -> the task reporting this worker's open blocks of it."""
        self._sent = 0
        self._gates: dict[str, asyncio.Semaphore] = {}
        self._taken: dict[tuple[str, str], _Block] = {}
        """(ledger, call id) -> the block the call took its call from, the newest
        ``CALLS_REMEMBERED``: a retried attempt takes nothing more, even once its block closed."""

    def check(self, draw: LedgerDraw) -> LedgerConfig:
        """The ledger's configuration, or a coded refusal (no call is made)."""
        config = self.settings.ledgers.get(draw.name)
        if config is None:
            raise ApplicationError(
                f"calls.ledger: this worker declares no ledger {draw.name!r}: add "
                f"[ledgers.{draw.name}] to its ponder.toml, or name one it declares "
                f"({', '.join(sorted(self.settings.ledgers)) or 'none'})",
                type=LEDGER_UNKNOWN,
                non_retryable=True,
            )
        token = self._tokens.get(draw.name)
        if token is None:
            token = self._tokens[draw.name] = draw_token(self.settings, draw.name)
        if not hmac.compare_digest(token.encode(), (draw.token or "").encode()):
            raise ApplicationError(
                f"calls.ledger.token: not the draw token of ledger {draw.name!r}: start the run "
                "with ponder on a machine that holds the ledger's token file, or copy it from "
                "there",
                type=LEDGER_TOKEN_INVALID,
                non_retryable=True,
            )
        return config

    async def take(self, draw: LedgerDraw, holder: str, call_id: str) -> _Block:
        """One call out of this run's block, drawing a new block when it is used up; a
        ``ledger.spent`` refusal when the ledger has no room."""
        config = self.check(draw)
        where = (draw.name, holder)
        lock = self._locks.setdefault(where, asyncio.Lock())
        async with lock:
            taken = self._taken.get((draw.name, call_id))
            if taken is not None:
                return taken  # a retried attempt: drawn already
            block = self.blocks.get(where)
            if block is None or block.closed or len(block.calls) >= block.granted:
                block = await self._draw(draw.name, config, holder)
                self.blocks[where] = block
            block.take(call_id)
            block.last = time.monotonic()
            self._taken[(draw.name, call_id)] = block
            if len(self._taken) > CALLS_REMEMBERED:
                del self._taken[next(iter(self._taken))]
            return block

    async def _draw(self, name: str, config: LedgerConfig, holder: str) -> _Block:
        self._drawn += 1
        key = f"{holder}/{self._instance}/{self._drawn}"
        digest = token_digest(self._tokens[name])

        result: DrawResult = await self._busy_retried(
            name,
            lambda: _client().execute_update_with_start_workflow(
                UPDATE_LEDGER_DRAW,
                DrawInput(token_sha256=digest, key=key, holder=holder, calls=config.block),
                # One per request: the SDK uses each operation once.
                start_workflow_operation=ledger_start(name, config, digest, self.task_queue),
                id=f"draw-{key}",
                result_type=DrawResult,
            ),
        )
        if result.blocking == "token":
            raise ApplicationError(
                f"ledger {name!r}: its workflow {ledger_workflow_id(name)} was started without "
                "this ledger's draw token (by someone else): an operator who can read the token "
                f"file terminates it (`temporal workflow terminate -w {ledger_workflow_id(name)}`) "
                "and the next call starts it again",
                type=LEDGER_TOKEN_INVALID,
                non_retryable=True,
            )
        if result.granted <= 0:
            blocking = result.blocking or "calls"
            raise ApplicationError(
                spent_message(name, blocking),
                {"ledger": name, "blocking": blocking},
                type=LEDGER_SPENT,
                non_retryable=True,
            )
        block = _Block(ledger=name, holder=holder, key=key, granted=result.granted)
        if name not in self._tending:
            task = asyncio.create_task(self._tend(name))
            self._tending[name] = task
            task.add_done_callback(lambda _: self._tending.pop(name, None))
        return block

    async def answered(self, block: _Block, call_id: str, *, tokens: int, usd: float) -> None:
        """After a call (answered or failed): what it spent; the block is reported and
        closed once every call it granted has answered."""
        block.tokens += tokens
        block.usd += usd
        block.answered.add(call_id)
        block.last = time.monotonic()
        if len(block.answered) >= block.granted or block.closed:
            self._close(block)
            await self._send(block.ledger, [block.report(final=True)])

    def _close(self, block: _Block) -> None:
        block.closed = True
        if self.blocks.get((block.ledger, block.holder)) is block:
            del self.blocks[(block.ledger, block.holder)]

    async def _tend(self, ledger: str) -> None:
        """Every ``REPORT_S``, one update with what this worker's open blocks of ``ledger``
        made since their last report (so a killed worker leaves about that much unreported),
        closing those nobody used for ``IDLE_S`` (their run ended or waits)."""
        while True:
            await asyncio.sleep(REPORT_S)
            now = time.monotonic()
            open_blocks = [b for b in self.blocks.values() if b.ledger == ledger]
            if not open_blocks:
                return
            reports = []
            for block in open_blocks:
                idle = block.in_flight == 0 and now - block.last >= IDLE_S
                if idle:
                    self._close(block)
                changed = block.reported != (len(block.calls), block.tokens, block.usd)
                if idle or changed or block.unnamed:
                    reports.append(block.report(final=idle))
            for start in range(0, len(reports), MAX_BATCH):
                await self._send(ledger, reports[start : start + MAX_BATCH])

    async def _send(self, ledger: str, reports: list[_Report]) -> None:
        if not reports:
            return
        self._sent += 1
        update_id = f"settle-{self._instance}-{self._sent}"
        try:
            handle = _client().get_workflow_handle(ledger_workflow_id(ledger))
            await self._busy_retried(
                ledger,
                lambda: handle.execute_update(
                    UPDATE_LEDGER_SETTLE,
                    SettleBatch(
                        token_sha256=token_digest(self._tokens[ledger]),
                        reports=[report.settle for report in reports],
                    ),
                    id=update_id,
                ),
            )
        except Exception as exc:
            activity.logger.warning("ledger %s: report failed: %s", ledger, exc)
            return  # the next report names its calls again
        for report in reports:
            report.taken()

    async def _busy_retried(self, ledger: str, send: Callable[[], Awaitable[T]]) -> T:
        """``send()``, at most ``UPDATES_IN_FLIGHT`` at once, sent again (same update id, so
        applied once) while the server says the ledger has too many updates in flight."""
        gate = self._gates.setdefault(ledger, asyncio.Semaphore(UPDATES_IN_FLIGHT))
        for attempt in range(BUSY_RETRIES):
            async with gate:
                try:
                    return await send()
                except RPCError as exc:
                    if exc.status != RPCStatusCode.RESOURCE_EXHAUSTED:
                        raise
                    if attempt == BUSY_RETRIES - 1:
                        raise
            await asyncio.sleep(min(0.05 * 2**attempt, 2.0) * (0.5 + random.random()))
        raise AssertionError("unreachable")


def _client() -> Client:
    """The worker's client: the drawer runs inside call activities (and their tend tasks,
    which keep the context they were started in)."""
    return activity.client()
