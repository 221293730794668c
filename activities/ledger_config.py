"""``[ledgers.NAME]`` of the worker's ponder.toml: a shared ledger's limits and how runs draw on
it (``activities/ledger.py``). Pydantic only, so loading the settings stays light."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from workflows.ledger.types import MAX_BLOCK, MAX_PERIOD_S, MAX_TTL_S, LedgerLimits

__all__ = ["PERIODS", "LedgerConfig"]

PERIODS = {"hour": 3600, "day": 86_400, "week": 7 * 86_400}


class LedgerConfig(BaseModel):
    """``[ledgers.NAME]`` in the worker's ponder.toml."""

    model_config = ConfigDict(extra="forbid")

    calls: int | None = Field(default=None, ge=0, description="model calls per period")
    tokens: int | None = Field(default=None, ge=0, description="input + output tokens per period")
    usd: float | None = Field(default=None, ge=0, allow_inf_nan=False, description="USD per period")
    period: str | int | None = Field(
        default=None,
        description='"hour", "day", "week" (UTC) or seconds; unset: one period that never ends',
    )
    block: int = Field(default=8, ge=1, le=MAX_BLOCK, description="calls one draw reserves")
    hold_ttl_s: float = Field(
        default=120.0,
        ge=5.0,
        le=MAX_TTL_S,
        description="a block no report refreshes for this long hands back its unreported calls",
    )
    token_file: str | None = Field(
        default=None, description="the draw token's file (default $PONDER_HOME/ledgers/NAME.token)"
    )

    @model_validator(mode="after")
    def _limits_hold(self) -> LedgerConfig:
        try:
            self.limits()
        except ValidationError as exc:
            raise ValueError(exc.errors()[0]["msg"]) from None
        return self

    def limits(self) -> LedgerLimits:
        period = self.period
        if isinstance(period, str):
            if period not in PERIODS:
                raise ValueError(f'period {period!r}: give "hour", "day", "week" or seconds')
            period = PERIODS[period]
        if period is not None and not 60 <= period <= MAX_PERIOD_S:
            raise ValueError(f"period {period}: give 60 to {MAX_PERIOD_S} seconds")
        return LedgerLimits(calls=self.calls, tokens=self.tokens, usd=self.usd, period_s=period)
