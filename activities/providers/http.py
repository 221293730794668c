"""One HTTP attempt: send, record the raw exchange, translate failures into the error tree.

A response body is read as a stream and refused past ``MAX_RESPONSE_BYTES`` (1 MiB,
``provider.response_too_large``): the worker never holds more than that of one answer, and a
misbehaving endpoint cannot make it parse megabytes per call.
"""

from __future__ import annotations

import email.utils
import ipaddress
import json
import time
import zlib
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import orjson

from activities.errors import (
    AuthError,
    BadRequestError,
    ModelTimeoutError,
    PolicyRefusalError,
    ProviderError,
    RateLimitedError,
    ResponseTooLargeError,
    TransportError,
)
from activities.providers.base import CallContext
from workflows.bounds import MAX_RESPONSE_BYTES

__all__ = [
    "broken_envelope",
    "connection_refused",
    "error_for_status",
    "is_final_status",
    "post_json",
    "retry_after_seconds",
    "transport_failure",
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


def error_for_status(response: httpx.Response, ctx: CallContext, text: str) -> ProviderError:
    status = response.status_code
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
    headers = {
        **headers,
        CALL_ID_HEADER: ctx.call_id,
        "Content-Type": "application/json",
        "Accept-Encoding": "identity",  # the size bound is on what we parse; see _bounded_body
    }
    if ctx.endpoint.ponder_headers:  # opt-in: a real provider has no use for ponder's labels
        headers["X-Ponder-Role"] = ctx.role
        if ctx.tag:
            headers["X-Ponder-Tag"] = ctx.tag
    event: dict[str, Any] = {"url": url, "request": {"headers": headers, "body": payload}}
    started = time.monotonic()
    try:
        async with ctx.http.stream(
            "POST", url, content=orjson.dumps(payload), headers=headers, timeout=timeout
        ) as response:
            content = await _bounded_body(response)
    except httpx.TimeoutException as exc:
        await ctx.raw_events.record({**event, "error": f"timeout: {exc!r}"})
        raise ModelTimeoutError(
            f"{ctx.provider_name} did not answer within {timeout:g}s", model=ctx.model_name
        ) from exc
    except httpx.HTTPError as exc:
        await ctx.raw_events.record({**event, "error": f"transport: {exc!r}"})
        raise transport_failure(ctx, url, exc) from exc
    event["latency_ms"] = round((time.monotonic() - started) * 1000, 3)
    event["response"] = {"status": response.status_code, "headers": dict(response.headers)}
    if content is None:
        event["response"]["body"] = None
        event["response"]["error"] = f"{TOO_LARGE}: over {MAX_RESPONSE_BYTES} bytes, not read"
        await ctx.raw_events.record(event)
        raise ResponseTooLargeError(
            f"{ctx.provider_name} answered HTTP {response.status_code} with a body over "
            f"{MAX_RESPONSE_BYTES} bytes (1 MiB), the most one call may return: lower "
            "max_output_tokens or fix the endpoint",
            model=f"{ctx.provider_name}:{ctx.model_name}",
            status=response.status_code,
        )
    text = content.decode(response.encoding or "utf-8", errors="replace")
    try:
        body = json.loads(content)  # what httpx's Response.json() does: UTF-8/16/32 detected
    except ValueError:
        body = None
    event["response"]["body"] = body if body is not None else text[:20000]
    if response.status_code >= 400 and body is not None:
        # The text as sent: the error message quotes it, and a replay must quote it the same.
        event["response"]["text"] = text[:20000]
    await ctx.raw_events.record(event)
    if response.status_code >= 400:
        raise error_for_status(response, ctx, text)
    if body is None:
        # An HTML error page or a truncated body is the transport failing, not the model.
        raise broken_envelope(ctx, "a body that is not JSON", text, response.status_code)
    return body


TOO_LARGE = ResponseTooLargeError("").error_type


async def _bounded_body(response: httpx.Response) -> bytes | None:
    """The whole body, decoded, or None once it passes ``MAX_RESPONSE_BYTES`` (nothing more is
    read: leaving the stream closes the connection).

    Requests ask for ``identity``; a server that compresses anyway is decoded here with the
    bound applied to the *decoded* size, chunk by chunk, so a small gzip bomb cannot expand to
    gigabytes inside one ``decompress`` call (httpx's own decoder has no output bound).
    """
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_RESPONSE_BYTES:
        return None
    encoding = response.headers.get("content-encoding", "").strip().lower()
    wbits = _WBITS.get(encoding)
    decoder = zlib.decompressobj(wbits) if wbits is not None else None
    chunks: list[bytes] = []
    size = 0
    async for raw in response.aiter_raw():
        if decoder is None:
            chunk = raw
        else:
            try:
                chunk = decoder.decompress(raw, MAX_RESPONSE_BYTES + 1 - size)
            except zlib.error:
                return b""  # not the encoding it claims: no JSON, a broken envelope
            if decoder.unconsumed_tail:
                return None
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


# Content encodings decoded with a bound (others arrive as they are, and do not parse as JSON).
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


def connection_refused(exc: BaseException) -> bool:
    """Whether connecting was refused at every address tried: nothing listens at the port.

    httpx wraps the socket's error (``ConnectError`` from httpcore's, from anyio's "All connection
    attempts failed", from ``ConnectionRefusedError``, or a group of them when a name resolves to
    several addresses); anything else on the way (a timeout, a reset) is not a refusal."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            return True
        if isinstance(current, BaseExceptionGroup):
            return all(connection_refused(inner) for inner in current.exceptions)
        current = current.__cause__ or current.__context__
    return False


def shown_url(url: str) -> str:
    """``url`` without user info: a ``user:password@`` in a base URL is a secret of its own."""
    parts = urlsplit(url)
    if parts.hostname is None or "@" not in parts.netloc:
        return url
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    return urlunsplit(parts._replace(netloc=netloc))


def is_loopback(url: str) -> bool:
    """Whether ``url`` names this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


LOCAL_SERVERS = "ollama serve, vllm serve, llama-server ..."
"""What usually listens on a local OpenAI-compatible port, named in the refusal's fix."""


def transport_failure(ctx: CallContext, url: str, exc: httpx.HTTPError) -> TransportError:
    """A request that got no HTTP answer. A refused connection says where nothing listens and
    what to start there; it stays a retried ``provider.transport``, so a server started (or
    restarted) while the call backs off serves the attempt after (see docs/models.md#failures)."""
    if not connection_refused(exc):
        return TransportError(
            f"{ctx.provider_name} at {shown_url(url)} unreachable: {exc!r}", model=ctx.model_name
        )
    base = shown_url(ctx.base_url or url)
    if is_loopback(base):
        fix = f"start your server ({LOCAL_SERVERS}) or fix base_url"
    else:
        fix = "check that the server is up and base_url is right"
    return TransportError(
        f"nothing listens at {base} (connection refused, provider {ctx.provider_name}): {fix}",
        model=ctx.model_name,
    )


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
