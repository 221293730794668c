"""What a call costs: USD from a per-million-token price table and a usage record."""

from __future__ import annotations

from workflows.model_types import Price, Usage

__all__ = ["cost_usd"]


def cost_usd(price: Price, usage: Usage) -> float:
    """USD for ``usage`` at ``price``; the long-context tier applies above its threshold."""
    input_rate, output_rate = price.input, price.output
    long_context = (
        price.long_context_threshold is not None
        and usage.input_tokens > price.long_context_threshold
    )
    if long_context:
        if price.long_context_input is not None:
            input_rate = price.long_context_input
        if price.long_context_output is not None:
            output_rate = price.long_context_output
    cached = usage.cache_hit_tokens if price.cache_hit is not None else 0
    uncached = usage.input_tokens - cached
    miss_rate = (
        price.cache_miss if price.cache_miss is not None and not long_context else input_rate
    )
    total = (
        cached * (price.cache_hit or 0.0) + uncached * miss_rate + usage.output_tokens * output_rate
    )
    return total / 1_000_000
