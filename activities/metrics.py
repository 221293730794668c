"""Ponder's own metrics from activities: one model call's outcome, latency, tokens and spend.

Recorded through the activity's metric meter, so they go wherever the worker's runtime sends
the SDK's own (``ponder worker --metrics-bind``; docs/operating.md, "Metrics"); a process
without a metrics exporter records into nothing. Labels are bounded sets: the provider and
model as the worker resolved them and the outcome (``ok`` or the failure's code), never a run
or call id. Every attempt of the activity counts once: a retried call is several calls here.
"""

from __future__ import annotations

from temporalio import activity

from workflows.model_types import ModelResponse

__all__ = [
    "CALLS",
    "CALL_LATENCY",
    "INPUT_TOKENS",
    "OK",
    "OUTPUT_TOKENS",
    "SPEND_MICRO_USD",
    "micro_usd",
    "record_call",
]

CALLS = "ponder_model_calls"
CALL_LATENCY = "ponder_model_call_latency"
INPUT_TOKENS = "ponder_model_input_tokens"
OUTPUT_TOKENS = "ponder_model_output_tokens"
SPEND_MICRO_USD = "ponder_model_spend_micro_usd"
OK = "ok"


def micro_usd(usd: float | None) -> int:
    """Spend as whole micro-USD (counters take integers): a call's ``usd`` rounded to the
    nearest millionth; an unknown price counts nothing."""
    if usd is None or usd <= 0:
        return 0
    return round(usd * 1_000_000)


def record_call(
    *, provider: str, model: str, outcome: str, latency_ms: float, response: ModelResponse | None
) -> None:
    """One attempt of ``call_model``: ``response`` is None when it failed (``outcome`` is then
    the failure's code)."""
    meter = activity.metric_meter()
    labels = {"provider": provider, "model": model}
    meter.create_counter(CALLS, "Model call attempts, by outcome (ok or the error code)").add(
        1, labels | {"outcome": outcome}
    )
    meter.create_histogram(CALL_LATENCY, "Model call latency", "ms").record(
        max(0, round(latency_ms)), labels | {"outcome": outcome}
    )
    if response is None:
        return
    usage = response.usage
    meter.create_counter(INPUT_TOKENS, "Input tokens of answered calls").add(
        usage.input_tokens, labels
    )
    meter.create_counter(OUTPUT_TOKENS, "Output tokens of answered calls").add(
        usage.output_tokens, labels
    )
    meter.create_counter(SPEND_MICRO_USD, "Spend of answered calls, in micro-USD").add(
        micro_usd(response.usd), labels
    )
