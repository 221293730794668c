"""What a call costs: USD from a price (USD per million tokens) and a usage record.

The arithmetic both sides share: a tournament's budget charges each call as it ends (in the
workflow), and the ``call_model`` activity reports the cost of the call it made. The price
table itself, and ``[prices]`` overrides, live with the worker's configuration
(``activities.pricing``).

Pure: standard library only (and the price and usage models).
"""

from __future__ import annotations

from workflows.bounds import MAX_USAGE_TOKENS
from workflows.model_types import Price, Usage

__all__ = ["cost_usd"]


def _tokens(count: int) -> int:
    """A token count as billing reads it: 0 to ``MAX_USAGE_TOKENS`` (providers' parsers refuse
    more; this keeps the arithmetic finite and non-negative whatever a caller passes)."""
    return min(max(count, 0), MAX_USAGE_TOKENS)


def cost_usd(price: Price, usage: Usage) -> float:
    """USD for ``usage`` at ``price``; the long-context tier applies above its threshold.

    Finite and non-negative: rates are bounded by ``Price`` and token counts by ``_tokens``, so a
    call costs at most a few million dollars and no sum of calls overflows."""
    input_tokens = _tokens(usage.input_tokens)
    output_tokens = _tokens(usage.output_tokens)
    input_rate, output_rate = price.input, price.output
    long_context = (
        price.long_context_threshold is not None and input_tokens > price.long_context_threshold
    )
    if long_context:
        if price.long_context_input is not None:
            input_rate = price.long_context_input
        if price.long_context_output is not None:
            output_rate = price.long_context_output
    cached = (
        min(_tokens(usage.cache_hit_tokens), input_tokens) if price.cache_hit is not None else 0
    )
    uncached = input_tokens - cached
    miss_rate = (
        price.cache_miss if price.cache_miss is not None and not long_context else input_rate
    )
    total = cached * (price.cache_hit or 0.0) + uncached * miss_rate + output_tokens * output_rate
    return total / 1_000_000
