"""One HTTP attempt: send, record the raw exchange, translate failures into the error tree."""

from __future__ import annotations

import email.utils
import time
from typing import Any

import httpx
import orjson

from activities.errors import (
    AuthError,
    BadRequestError,
    ModelTimeoutError,
    PolicyRefusalError,
    ProviderError,
    RateLimitedError,
    TransportError,
)
from activities.providers.base import CallContext

__all__ = [
    "broken_envelope",
    "error_for_status",
    "is_final_status",
    "post_json",
    "retry_after_seconds",
]

CALL_ID_HEADER = "X-Ponder-Call-Id"


def retry_after_seconds(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def is_final_status(status: int) -> bool:
    """An error status no retry changes (4xx but 408, 409, 429): the call's outcome."""
    return 400 <= status < 500 and status not in (408, 409, 429)


def error_for_status(response: httpx.Response, ctx: CallContext) -> ProviderError:
    status = response.status_code
    text = response.text
    kwargs: dict[str, Any] = {
        "model": f"{ctx.provider_name}:{ctx.model_name}",
        "status": status,
        "body": text,
        "headers": dict(response.headers),
    }
    where = f"{ctx.provider_name} answered HTTP {status}"
    # Servers send Retry-After with 503 as well as 429; either way it sets the next delay.
    retry_after = retry_after_seconds(response.headers.get("retry-after"))
    if status == 429:
        return RateLimitedError(f"{where}: rate limited", retry_after=retry_after, **kwargs)
    if status in (408, 409) or status >= 500:
        return TransportError(
            f"{where}: server trouble, will retry", retry_after=retry_after, **kwargs
        )
    if status in (401, 403):
        return AuthError(f"{where}: check the API key for this endpoint", **kwargs)
    if "content_policy" in text or "content_filter" in text:
        return PolicyRefusalError(f"{where}: refused by content policy", **kwargs)
    return BadRequestError(f"{where}: the request was rejected: {text[:300]}", **kwargs)


async def post_json(
    ctx: CallContext, url: str, payload: dict[str, Any], headers: dict[str, str], timeout: float
) -> Any:
    """POST ``payload`` and return the decoded JSON body, or raise a ProviderError."""
    headers = {**headers, CALL_ID_HEADER: ctx.call_id, "Content-Type": "application/json"}
    if ctx.endpoint.ponder_headers:  # opt-in: a real provider has no use for ponder's labels
        headers["X-Ponder-Role"] = ctx.role
        if ctx.tag:
            headers["X-Ponder-Tag"] = ctx.tag
    event: dict[str, Any] = {"url": url, "request": {"headers": headers, "body": payload}}
    started = time.monotonic()
    try:
        response = await ctx.http.post(
            url, content=orjson.dumps(payload), headers=headers, timeout=timeout
        )
    except httpx.TimeoutException as exc:
        await ctx.raw_events.record({**event, "error": f"timeout: {exc!r}"})
        raise ModelTimeoutError(
            f"{ctx.provider_name} did not answer within {timeout:g}s", model=ctx.model_name
        ) from exc
    except httpx.HTTPError as exc:
        await ctx.raw_events.record({**event, "error": f"transport: {exc!r}"})
        raise TransportError(
            f"{ctx.provider_name} at {url} unreachable: {exc!r}", model=ctx.model_name
        ) from exc
    event["latency_ms"] = round((time.monotonic() - started) * 1000, 3)
    event["response"] = {"status": response.status_code, "headers": dict(response.headers)}
    try:
        body = response.json()
    except ValueError:
        body = None
    event["response"]["body"] = body if body is not None else response.text[:20000]
    if response.status_code >= 400 and body is not None:
        # The text as sent: the error message quotes it, and a replay must quote it the same.
        event["response"]["text"] = response.text[:20000]
    await ctx.raw_events.record(event)
    if response.status_code >= 400:
        raise error_for_status(response, ctx)
    if body is None:
        # An HTML error page or a truncated body is the transport failing, not the model.
        raise broken_envelope(ctx, "a body that is not JSON", response.text, response.status_code)
    return body


def broken_envelope(
    ctx: CallContext, what: str, body: str, status: int | None = 200
) -> TransportError:
    """A response that is not the provider's envelope (HTML page, ``{}``, truncated JSON):
    retried like any transport fault. Only a well-formed answer whose *content* is unusable
    is ``malformed_output``."""
    return TransportError(
        f"{ctx.provider_name} answered HTTP {status} with {what}: will retry",
        model=f"{ctx.provider_name}:{ctx.model_name}",
        status=status,
        body=body,
    )
