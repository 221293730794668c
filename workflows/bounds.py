"""Ceilings on the sizes, counts, prices and times that workflow input sets: one home.

A worker is shared by every run, so nothing input can set may make it do unbounded work or hold
unbounded data; each number below is the documented ceiling of one kind of value (the README's
Security section lists them). Input models use the annotated types, so a value beyond its ceiling
is ``input.invalid`` at decode, naming the field; activities use the same constants for what a
provider sends back. Pure: pydantic only.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

__all__ = [
    "MAX_BUDGET_TOKENS",
    "MAX_BUDGET_USD",
    "MAX_CALLS",
    "MAX_CONTEXT_TOKENS",
    "MAX_DECIDER_CHARS",
    "MAX_HEARTBEAT_TIMEOUT_S",
    "MAX_INT",
    "MAX_JSON_CHARS",
    "MAX_LAMBDA",
    "MAX_MESSAGE_BYTES",
    "MAX_OUTPUT_TOKENS",
    "MAX_RECORDING_BYTES",
    "MAX_RESPONSE_BYTES",
    "MAX_SCHEDULE_TO_CLOSE_S",
    "MAX_SEED",
    "MAX_TEMPERATURE",
    "MAX_USAGE_TOKENS",
    "MAX_USD_PER_MTOK",
    "MAX_WALL_MS",
    "MIN_INT",
    "SESSION_START_S",
    "SESSION_WAIT_S",
    "UNROUTABLE_AFTER_S",
    "BudgetTokens",
    "BudgetUsd",
    "CallCount",
    "OutputTokens",
    "Seed",
    "Temperature",
    "UsageTokens",
    "UsdPerMTok",
    "WallMs",
]

MAX_SEED = 2**63 - 1
"""Seeds are 0 <= seed < 2**63 (what every provider's seed field and a 64-bit history take)."""
MAX_OUTPUT_TOKENS = 1_000_000
"""One call's ``max_output_tokens`` (the largest models answer at most a few hundred thousand)."""
MAX_CALLS = 10_000_000
"""A run's call limit (``max_calls``, a plan's ``calls``)."""
MAX_BUDGET_TOKENS = 10**12
"""A run's token limit (``max_input_tokens``, ``max_output_tokens`` of a budget, ``tokens``)."""
MAX_BUDGET_USD = 1_000_000.0
"""A run's USD limit."""
MAX_USD_PER_MTOK = 1_000.0
"""A price: USD per million tokens (the dearest published model costs well under $200)."""
MAX_CONTEXT_TOKENS = 100_000_000
"""A price's ``long_context_threshold`` (no model reads 100M tokens)."""
MAX_USAGE_TOKENS = 1_000_000_000
"""Tokens one response may report per field; a provider reporting more is a broken envelope, so
one call costs at most ``3 * MAX_USAGE_TOKENS * MAX_USD_PER_MTOK / 1e6`` = $3M and spend stays
finite for any count of calls."""
MAX_WALL_MS = 30 * 24 * 3600 * 1000
"""A plan's wall-clock budget: 30 days of agent time."""
MAX_SCHEDULE_TO_CLOSE_S = 7 * 24 * 3600.0
"""One model call's whole time, retries included (``calls.schedule_to_close_s``)."""
MAX_HEARTBEAT_TIMEOUT_S = 600.0
"""``calls.heartbeat_timeout_s``."""
UNROUTABLE_AFTER_S = 30.0
"""A call routed to a provider queue no worker polls fails after this: ``provider.unroutable``."""
SESSION_START_S = 5.0
"""A call on a session queue (``mcp:``) not started within this asks whether a session serves."""
SESSION_WAIT_S = (5.0, 300.0)
"""A call waiting for an MCP session tries again after the first figure, doubling to the second;
it waits no longer in all than its own schedule-to-close (``calls.schedule_to_close_s``)."""
MAX_RESPONSE_BYTES = 1024 * 1024
"""A provider's response body; more is ``provider.response_too_large``, read no further."""
MAX_JSON_CHARS = 131_072
"""Model output that is parsed as JSON (a judge verdict, a plan step's JSON output): longer text
is not parsed, it is invalid output."""
MAX_TEMPERATURE = 2.0
"""A sampling temperature (OpenAI's range is 0-2, Anthropic's 0-1: the provider refuses more)."""
MAX_LAMBDA = 1_000.0
"""Bradley-Terry's ridge ``lambda`` (0.01 by default; past a few units every score is ~0)."""
MAX_RECORDING_BYTES = 256 * 1024 * 1024
"""One ``raw-events.jsonl`` a replay reads (``replay:``, ``calls.replay``): larger is refused."""
MAX_MESSAGE_BYTES = 1024 * 1024
"""One update's or signal's argument as the workflow receives it: half of Temporal's own 2 MiB
payload limit, so an accepted message always fits in the history event that records it (a
larger one would fail every workflow task that tries to accept it)."""
MAX_DECIDER_CHARS = 128
"""Who decided a plan's human gate (``resolve_gate``'s ``by``): a name, not a document."""
MIN_INT, MAX_INT = -(2**63), 2**63 - 1
"""The backstop for every integer anywhere in workflow input (``workflows/inputs.py``)."""

Seed = Annotated[int, Field(ge=0, le=MAX_SEED)]
OutputTokens = Annotated[int, Field(ge=1, le=MAX_OUTPUT_TOKENS)]
CallCount = Annotated[int, Field(ge=0, le=MAX_CALLS)]
BudgetTokens = Annotated[int, Field(ge=0, le=MAX_BUDGET_TOKENS)]
BudgetUsd = Annotated[float, Field(ge=0, le=MAX_BUDGET_USD)]
UsdPerMTok = Annotated[float, Field(ge=0, le=MAX_USD_PER_MTOK, allow_inf_nan=False)]
UsageTokens = Annotated[int, Field(ge=0, le=MAX_USAGE_TOKENS)]
WallMs = Annotated[int, Field(ge=0, le=MAX_WALL_MS)]
Temperature = Annotated[float, Field(ge=0, le=MAX_TEMPERATURE)]
