"""A shared spend ledger's vocabulary: its limits, the draw a run's input carries, and the
messages of the ``Ledger`` entity workflow.

A ledger is declared on the worker (``[ledgers.NAME]`` in ponder.toml) and drawn on only by input
that carries its *draw token*: 32 hex characters kept in a 0600 file on the worker's machine
(``$PONDER_HOME/ledgers/NAME.token`` unless ``token_file`` says otherwise). The CLI and the Python
client read it on their user's behalf, as they read a source run's read token
(``workflows/run_capabilities.py``); whoever may only start workflows cannot name the ledger and
spend from it.

Pure: pydantic and the standard library only. Names, codes and fields are in histories: never
rename one, add fields only with defaults.
"""

from __future__ import annotations

import hashlib
import re
from typing import Annotated

from pydantic import BaseModel, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from workflows.bounds import BudgetTokens, BudgetUsd, CallCount
from workflows.inputs import StrictModel

__all__ = [
    "DRAW_TOKEN_PATTERN",
    "LEDGER_NAME_PATTERN",
    "LEDGER_SPENT",
    "LEDGER_TOKEN_INVALID",
    "LEDGER_TOKEN_REQUIRED",
    "LEDGER_UNKNOWN",
    "MAX_BATCH",
    "MAX_BLOCK",
    "MESSAGES_PER_RUN",
    "DrawInput",
    "DrawResult",
    "ExtendLedgerInput",
    "LedgerDraw",
    "LedgerInput",
    "LedgerLimits",
    "LedgerView",
    "SettleBatch",
    "SettleInput",
    "call_digest",
    "ledger_wait",
    "ledger_workflow_id",
    "spent_message",
    "token_digest",
    "waiting_ledger",
]

LEDGER_NAME_PATTERN = r"^[a-z][a-z0-9_-]{0,63}$"
DRAW_TOKEN_PATTERN = r"^[0-9a-f]{32}$"
MAX_BLOCK = 1000
"""Calls one draw may reserve at most."""
MESSAGES_PER_RUN = 2000
MAX_BATCH = 500
"""Reports one settle update carries at most."""
MAX_PERIOD_S = 366 * 86_400
MAX_TTL_S = 86_400.0

LEDGER_SPENT = "ledger.spent"
"""A draw the ledger refused: a limit of its current period is reached (the run pauses
``awaiting_budget`` naming the ledger)."""
LEDGER_UNKNOWN = "ledger.unknown"
"""The input names a ledger the worker does not declare."""
LEDGER_TOKEN_REQUIRED = "ledger.token_required"
"""The input names a ledger without a well-formed draw token."""
LEDGER_TOKEN_INVALID = "ledger.token_invalid"
"""The draw token the input carries is not the ledger's."""

_NAME = re.compile(LEDGER_NAME_PATTERN)
_TOKEN = re.compile(DRAW_TOKEN_PATTERN)


def token_digest(token: str) -> str:
    """What the ledger keeps of its draw token (sha256, hex)."""
    return hashlib.sha256(token.encode()).hexdigest()


def call_digest(call_id: str) -> str:
    """What a report says of one call it counts (sha256, 16 hex): the same on every worker
    that attempts the call, so the ledger charges it once."""
    return hashlib.sha256(call_id.encode()).hexdigest()[:16]


def ledger_wait(ledger: str, limit: str) -> str:
    """How a run names the shared ledger its calls wait for (its progress's blocking limit, a
    plan's ``need``): ``ledger NAME: LIMIT``."""
    return f"ledger {ledger}: {limit}"


def waiting_ledger(blocking: str | None) -> str | None:
    """The ledger a :func:`ledger_wait` text names; None for a run's own limit (or none)."""
    if not blocking or not blocking.startswith("ledger "):
        return None
    return blocking.removeprefix("ledger ").partition(":")[0] or None


def ledger_workflow_id(name: str) -> str:
    """The entity workflow's id: one per ledger name and namespace, on every machine."""
    return f"ledger-{name}"


class LedgerLimits(StrictModel):
    """A ledger's limits over one period; None: unlimited (``period_s`` None: one period that
    never ends)."""

    calls: CallCount | None = Field(default=None, description="model calls per period")
    tokens: BudgetTokens | None = Field(
        default=None, description="input plus output tokens per period"
    )
    usd: BudgetUsd | None = Field(default=None, description="USD per period")
    period_s: int | None = Field(
        default=None,
        ge=60,
        le=MAX_PERIOD_S,
        description="period length in seconds, counted from the Unix epoch (86400: UTC days)",
    )


class LedgerDraw(StrictModel):
    """``calls.ledger`` of a run's input: which ledger its paid calls draw on, and its token."""

    name: str = Field(description="a ledger the worker declares ([ledgers.NAME])")
    token: str | None = Field(
        default=None,
        description="the ledger's draw token (the client reads it from the token file)",
    )

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        if not _NAME.fullmatch(name):
            raise ValueError(
                f"{name[:80]!r} is not a ledger name: [a-z][a-z0-9_-]{{0,63}}, as in "
                "[ledgers.NAME] of the worker's ponder.toml"
            )
        return name

    @model_validator(mode="after")
    def _token(self) -> LedgerDraw:
        if self.token is None or not _TOKEN.fullmatch(self.token):
            raise PydanticCustomError(
                LEDGER_TOKEN_REQUIRED,
                f"ledger {self.name!r}: drawing on a ledger needs its draw token (32 lower-case "
                "hex characters) in calls.ledger.token; fix: start the run with ponder (the CLI "
                "and the Python client read it for you), or copy it from the ledger's token file "
                f"($PONDER_HOME/ledgers/{self.name}.token) if you can read it",
            )
        return self


class LedgerInput(BaseModel):
    """The entity's input: its name and first limits, the digest of its draw token, and what it
    carries over a continue-as-new (``book``, as ``workflows.ledger.arithmetic.Book`` dumps it).

    Whoever can start workflows can start ``ledger-NAME`` first; the digest is how the ledger
    knows its draws and extensions come from holders of the token (a ledger started without the
    right one refuses them all with ``ledger.token_invalid``, so it cannot be squatted with no
    limits)."""

    name: str = Field(pattern=LEDGER_NAME_PATTERN)
    limits: LedgerLimits = LedgerLimits()
    hold_ttl_s: float = Field(default=120.0, ge=1.0, le=MAX_TTL_S)
    token_sha256: str = Field(default="", max_length=64)
    messages_per_run: int = Field(default=MESSAGES_PER_RUN, ge=1, le=MESSAGES_PER_RUN)
    """Updates one execution takes before it continues as new (the server may suggest sooner)."""
    book: dict[str, object] | None = None


class DrawInput(BaseModel):
    """Reserve up to ``calls`` calls under ``key`` for ``holder`` (the run's workflow id):
    idempotent by key."""

    token_sha256: str = Field(default="", max_length=64)
    key: str = Field(min_length=1, max_length=512)
    holder: str = Field(min_length=1, max_length=1000)
    calls: int = Field(ge=1, le=MAX_BLOCK)


class DrawResult(BaseModel):
    granted: int
    """Calls reserved (fewer than asked when the period has fewer left); 0: refused."""
    blocking: str | None = None
    """The limit that refused it (``calls``, ``tokens`` or ``usd``), or ``token``: the draw's
    token is not the one the ledger was started with."""


class SettleInput(BaseModel):
    """What the calls of hold ``key`` have made and cost so far, in all: totals, so a report
    repeated or overtaken changes nothing. ``final`` hands back what the hold did not use."""

    key: str = Field(min_length=1, max_length=512)
    used: int = Field(ge=0, le=MAX_BLOCK, description="calls made so far under the hold")
    tokens: int = Field(default=0, ge=0)
    usd: float = Field(default=0.0, ge=0.0, allow_inf_nan=False)
    final: bool = False
    calls: list[Annotated[str, Field(max_length=64)]] = Field(
        default=[],
        max_length=MAX_BLOCK,
        description="call_digest of each call taken under the hold since its last report "
        "(a call another hold reported first is not charged again)",
    )


class SettleBatch(BaseModel):
    """Reports of one worker's holds, sent together (one update for many runs)."""

    token_sha256: str = Field(default="", max_length=64)
    reports: list[SettleInput] = Field(max_length=MAX_BATCH)


class ExtendLedgerInput(StrictModel):
    """New limits (absolute); a field left out keeps its value."""

    token_sha256: str = Field(default="", max_length=64)
    calls: CallCount | None = None
    tokens: BudgetTokens | None = None
    usd: BudgetUsd | None = None


class LedgerView(BaseModel):
    """What ``ponder ledger show`` prints."""

    name: str
    limits: LedgerLimits
    period_start: str | None
    calls: int
    """Calls made or reserved this period."""
    tokens: int
    usd: float
    holds: int
    held_calls: int
    """Calls reserved and not yet reported as made."""
    waiting: list[str]
    """Runs paused until the ledger has room again."""
    blocking: str | None
    draws: int = 0
    reports: int = 0
    """Draws and reports the ledger has taken since it started."""


def spent_message(name: str, blocking: str) -> str:
    """The refusal a paused run shows (field, rule, fix)."""
    return (
        f"ledger {name!r} is spent ({blocking} limit of its period reached): the run waits "
        f"awaiting_budget; fix: `ponder ledger extend {name} --{blocking} ...` resumes every "
        "run waiting on it (or wait for its next period)"
    )
