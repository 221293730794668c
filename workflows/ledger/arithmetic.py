"""A shared ledger's book: holds, periods, expiry. Pure (no Temporal import), so every rule is
tested directly and the entity workflow only feeds it the time and its messages.

- A *hold* reserves a block of calls for one run (``draw``), counted as spent at once, so no
  number of runs or workers can reserve past ``calls``. Tokens and USD are known only after a
  call: they stop new holds once reached, and may overshoot by what the open holds' calls use.
- Reports (``settle``) say how many of a hold's calls were made so far and what they cost in
  all (totals, so a report repeated or overtaken by a later one changes nothing); the final one
  hands back the calls it did not use. A hold whose holder stops reporting (a killed
  worker) expires ``ttl_s`` after its last message and hands back what it never reported.
- Periods are aligned to the Unix epoch (``period_s`` 86400: UTC days). A new period starts
  with nothing spent but the calls open holds still reserve.
- Keys are idempotent: a draw repeated under a key answers what it first answered.
- A call is charged once however many workers attempt it: reports name the calls they count
  (``SettleInput.calls``, digests of the call ids), and a call another hold named first is not
  charged to the second one, which hands its reservation back when it closes. The book
  remembers the calls of open holds, and of closed ones for ``ttl_s`` after they close (at most
  ``CALLS_KEPT``): a retry named more than that after its first attempt's hold closed is charged
  again.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, PrivateAttr

from workflows.ledger.types import DrawResult, LedgerLimits, SettleInput

__all__ = ["CALLS_KEPT", "CLOSED_KEYS_KEPT", "Book", "Hold", "Spent"]

CLOSED_KEYS_KEPT = 4096
"""Closed holds remembered for idempotency and late reports (the oldest is forgotten first)."""
CALLS_KEPT = 16_384
"""Calls of closed holds remembered to charge a retry once (about 20 bytes each in the book a
continue-as-new carries); the oldest hold's are forgotten first."""


class Hold(BaseModel):
    holder: str
    calls: int
    """Calls reserved, counted in this period's ``spent.calls``."""
    used: int = 0
    """Calls reported made."""
    tokens: int = 0
    usd: float = 0.0
    """What the reported calls cost, in all."""
    expires_at: float
    calls_named: list[str] = []
    """Digests of the calls this hold named first (charged here)."""
    repeats: list[str] = []
    """Calls it named that another hold named first: counted in ``used``, charged there."""

    def charged(self) -> int:
        return max(self.used - len(self.repeats), 0)


class Closed(BaseModel):
    granted: int
    used: int
    tokens: int = 0
    usd: float = 0.0
    calls_named: list[str] = []
    repeats: list[str] = []
    closed_at: float = 0.0

    def charged(self) -> int:
        return max(self.used - len(self.repeats), 0)


class Spent(BaseModel):
    calls: int = 0
    tokens: int = 0
    usd: float = 0.0


class Book(BaseModel):
    limits: LedgerLimits = LedgerLimits()
    ttl_s: float = 120.0
    window: int = 0
    """Index of the current period (seconds since the epoch // ``period_s``)."""
    spent: Spent = Field(default_factory=Spent)
    holds: dict[str, Hold] = {}
    closed: dict[str, Closed] = {}
    waiters: list[str] = []
    """Holders refused since the ledger last had room (told when it has room again)."""
    draws: int = 0
    reports: int = 0
    """Draws and reports taken since the ledger started (across continue-as-new)."""
    _namer: dict[str, str] = PrivateAttr(default_factory=dict)
    """Call digest -> the hold that named it first, over the calls the holds remember."""

    def model_post_init(self, context: Any, /) -> None:
        named: list[tuple[str, Hold | Closed]] = [*self.closed.items(), *self.holds.items()]
        for key, seen in named:
            for digest in seen.calls_named:
                self._namer.setdefault(digest, key)

    # -- time ----------------------------------------------------------------------------

    def window_of(self, now: float) -> int:
        period = self.limits.period_s
        return int(now // period) if period else 0

    def period_start(self) -> float | None:
        period = self.limits.period_s
        return self.window * period if period else None

    def advance(self, now: float) -> list[str]:
        """Roll into ``now``'s period and expire holds past their time; the expired keys."""
        window = self.window_of(now)
        if window != self.window:
            self.window = window
            # What open holds still reserve moves on; what they made stays in the old period.
            self.spent = Spent(calls=self.held_calls())
        expired = [key for key, hold in self.holds.items() if hold.expires_at <= now]
        for key in expired:
            self._close(key, now)
        self._forget(now)
        return expired

    def _forget(self, now: float) -> None:
        """Forget the calls of holds closed ``ttl_s`` ago (and the oldest past ``CALLS_KEPT``)."""
        kept = len(self._namer)
        for key, closed in self.closed.items():  # in the order they closed
            if not closed.calls_named:
                continue
            if closed.closed_at + self.ttl_s > now and kept <= CALLS_KEPT:
                break
            kept -= self._drop_calls(key, closed)

    def next_deadline(self) -> float | None:
        """When ``advance`` next changes something by itself: a hold's expiry, or the next
        period while runs wait for room."""
        times = [hold.expires_at for hold in self.holds.values()]
        period = self.limits.period_s
        if period and self.waiters:
            times.append((self.window + 1) * period)
        return min(times) if times else None

    # -- holds ---------------------------------------------------------------------------

    def blocking(self) -> str | None:
        """The limit that refuses a new hold, or None."""
        limits, spent = self.limits, self.spent
        for name, limit, used in (
            ("calls", limits.calls, spent.calls),
            ("tokens", limits.tokens, spent.tokens),
            ("usd", limits.usd, spent.usd),
        ):
            if limit is not None and used >= limit:
                return name
        return None

    def draw(self, key: str, holder: str, calls: int, now: float) -> DrawResult:
        """Reserve up to ``calls`` calls under ``key`` (fewer if the period has fewer left)."""
        self.draws += 1
        if key in self.holds:
            return DrawResult(granted=self.holds[key].calls)
        if key in self.closed:
            return DrawResult(granted=self.closed[key].granted)
        blocking = self.blocking()  # "calls" once none is left
        if blocking is not None:
            if holder not in self.waiters:
                self.waiters.append(holder)
            return DrawResult(granted=0, blocking=blocking)
        left = calls if self.limits.calls is None else self.limits.calls - self.spent.calls
        granted = min(calls, left)
        self.spent.calls += granted
        self.holds[key] = Hold(holder=holder, calls=granted, expires_at=now + self.ttl_s)
        return DrawResult(granted=granted)

    def settle(self, report: SettleInput, now: float) -> None:
        """Apply a report of hold ``report.key`` (an expired hold's late report too)."""
        self.reports += 1
        hold = self.holds.get(report.key)
        if hold is None:
            closed = self.closed.get(report.key)
            if closed is not None:  # reported after its hold expired: the calls were made
                charged = closed.charged()
                closed.used = max(closed.used, report.used)
                self._name(report.key, closed, report.calls)
                self.spent.calls += closed.charged() - charged
                self._spend(closed, report)
            return
        hold.used = min(max(hold.used, report.used), hold.calls)
        hold.expires_at = now + self.ttl_s
        self._name(report.key, hold, report.calls)
        self._spend(hold, report)
        if report.final:
            self._close(report.key, now)

    def _spend(self, seen: Hold | Closed, report: SettleInput) -> None:
        """Count what ``report``'s totals add to what ``seen`` had reported."""
        tokens, usd = max(seen.tokens, report.tokens), max(seen.usd, report.usd)
        self.spent.tokens += tokens - seen.tokens
        self.spent.usd += usd - seen.usd
        seen.tokens, seen.usd = tokens, usd

    def _name(self, key: str, seen: Hold | Closed, calls: list[str]) -> None:
        """Note the calls a report of hold ``key`` names: its own, or another hold's first."""
        for digest in calls:
            namer = self._namer.get(digest)
            if namer is None:
                self._namer[digest] = key
                seen.calls_named.append(digest)
            elif namer != key and digest not in seen.repeats:
                seen.repeats.append(digest)

    def _drop_calls(self, key: str, seen: Hold | Closed) -> int:
        """Forget the calls hold ``key`` named; how many were forgotten."""
        dropped = 0
        for digest in seen.calls_named:
            if self._namer.get(digest) == key:
                del self._namer[digest]
                dropped += 1
        seen.calls_named = []
        return dropped

    def _close(self, key: str, now: float) -> None:
        """Hand back what hold ``key`` did not report as made (and the calls another hold was
        charged for), and remember it closed."""
        hold = self.holds.pop(key)
        self.spent.calls -= hold.calls - hold.charged()
        self.closed[key] = Closed(
            granted=hold.calls,
            used=hold.used,
            tokens=hold.tokens,
            usd=hold.usd,
            calls_named=hold.calls_named,
            repeats=hold.repeats,
            closed_at=now,
        )
        while len(self.closed) > CLOSED_KEYS_KEPT:
            oldest = next(iter(self.closed))
            self._drop_calls(oldest, self.closed.pop(oldest))

    def held_calls(self) -> int:
        return sum(hold.calls - hold.charged() for hold in self.holds.values())

    # -- limits --------------------------------------------------------------------------

    def extend(self, calls: int | None, tokens: int | None, usd: float | None) -> list[str]:
        """Raise (or lower, not below what is spent) the limits; why not, if refused."""
        problems = []
        for field, value, used in (
            ("calls", calls, self.spent.calls),
            ("tokens", tokens, self.spent.tokens),
            ("usd", usd, self.spent.usd),
        ):
            if value is not None and value < used:
                problems.append(
                    f"{field}={value:g} is below what this period has spent ({used:g}): give "
                    f"at least {used:g}"
                )
        if not problems:
            update = {"calls": calls, "tokens": tokens, "usd": usd}
            self.limits = self.limits.model_copy(
                update={k: v for k, v in update.items() if v is not None}
            )
        return problems

    def take_waiters(self) -> list[str]:
        """The runs to tell that the ledger has room again (none while it has none)."""
        if self.blocking() is not None:
            return []
        waiters, self.waiters = self.waiters, []
        return waiters
