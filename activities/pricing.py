"""What a call costs: USD from a per-million-token price table and a usage record.

``BUILTIN_PRICES`` is a dated table of the major OpenAI and Anthropic models, as published on
the providers' pricing pages on ``PRICES_AS_OF`` (standard tier, USD per million tokens; cached
input at the providers' cache-read rate). Prices change: ``[prices]`` or
``[providers.X.prices]`` in ``ponder.toml`` override any entry, and a model missing here is
"unpriced" (its cost is unknown, never shown as zero). The arithmetic, ``cost_usd``, is
``workflows.costs`` (a tournament's workflow charges its budget with it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from workflows.costs import cost_usd
from workflows.model_types import Price

__all__ = ["BUILTIN_PRICES", "PRICES_AS_OF", "builtin_price", "cost_usd"]

PRICES_AS_OF = "2025-10-15"


def _p(input: float, output: float, cache_hit: float, **long_context: float) -> Price:
    return Price(input=input, output=output, cache_hit=cache_hit, **long_context)  # type: ignore[arg-type]


# Sonnet 4 / 4.5 bill prompts above 200k input tokens at a higher rate.
_SONNET_LONG = {
    "long_context_threshold": 200_000,
    "long_context_input": 6.0,
    "long_context_output": 22.5,
}

BUILTIN_PRICES: Mapping[str, Price] = MappingProxyType(
    {
        # OpenAI
        "openai:gpt-5": _p(1.25, 10.0, 0.125),
        "openai:gpt-5-mini": _p(0.25, 2.0, 0.025),
        "openai:gpt-5-nano": _p(0.05, 0.40, 0.005),
        "openai:gpt-4.1": _p(2.0, 8.0, 0.50),
        "openai:gpt-4.1-mini": _p(0.40, 1.60, 0.10),
        "openai:gpt-4.1-nano": _p(0.10, 0.40, 0.025),
        "openai:gpt-4o": _p(2.50, 10.0, 1.25),
        "openai:gpt-4o-mini": _p(0.15, 0.60, 0.075),
        "openai:o3": _p(2.0, 8.0, 0.50),
        "openai:o4-mini": _p(1.10, 4.40, 0.275),
        "openai:o3-mini": _p(1.10, 4.40, 0.55),
        "openai:o1": _p(15.0, 60.0, 7.50),
        # Anthropic (aliases; dated ids resolve to these, see builtin_price)
        "anthropic:claude-opus-4-1": _p(15.0, 75.0, 1.50),
        "anthropic:claude-opus-4-0": _p(15.0, 75.0, 1.50),
        "anthropic:claude-opus-4": _p(15.0, 75.0, 1.50),
        "anthropic:claude-sonnet-4-5": _p(3.0, 15.0, 0.30, **_SONNET_LONG),
        "anthropic:claude-sonnet-4-0": _p(3.0, 15.0, 0.30, **_SONNET_LONG),
        "anthropic:claude-sonnet-4": _p(3.0, 15.0, 0.30, **_SONNET_LONG),
        "anthropic:claude-3-7-sonnet": _p(3.0, 15.0, 0.30),
        "anthropic:claude-haiku-4-5": _p(1.0, 5.0, 0.10),
        "anthropic:claude-3-5-haiku": _p(0.80, 4.0, 0.08),
    }
)

# A dated snapshot id ("gpt-4o-mini-2024-07-18", "claude-sonnet-4-20250514") or a "-latest"
# alias costs what its family does.
_SNAPSHOT = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$")


def builtin_price(spec: str) -> Price | None:
    """The built-in price of ``provider:model`` (dated snapshots included), or None."""
    if spec in BUILTIN_PRICES:
        return BUILTIN_PRICES[spec]
    return BUILTIN_PRICES.get(_SNAPSHOT.sub("", spec))
