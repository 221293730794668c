"""The MCP sampling provider: ``mcp:<hint>`` calls answered by the host of a connected MCP session.

A host agent connected to ``ponder mcp`` lends its own model through ``sampling/createMessage``
(no API key anywhere). Only the ``ponder mcp`` process can reach that session, so it runs a small
worker on the session queue (``session_task_queue``) whose ``ModelActivities`` holds a
``Sampler``; this provider hands the prompt to it. The hint goes to the host as
``modelPreferences.hints[0].name`` (``mcp:any`` sends none), advisory as MCP says.

A worker with no sampler (an ordinary ``ponder worker``) refuses the call at once
(``mcp.no_session``: the run was not routed to a session, so it has none); a sampler with no
session connected raises ``provider.session_gone``, which the workflow waits out on a durable
timer until a session serves the queue again (``workflows/model_calls.py``). The reply is capped
like an HTTP body (``MAX_RESPONSE_BYTES``); its tokens are estimated (a host reports none) and it
costs 0 USD here: the host pays.

Pure of the MCP SDK: the ``Sampler`` protocol speaks plain data; ``client/mcp/sampling.py``
speaks MCP.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from typing import Any, Protocol

from activities.errors import (
    ConfigError,
    DispatchError,
    MalformedOutputError,
    ResponseTooLargeError,
    SessionGoneError,
)
from activities.providers.base import CallContext
from workflows.bounds import MAX_RESPONSE_BYTES
from workflows.call_options import NO_SESSION
from workflows.model_types import ModelRequest, ModelResponse, Usage

__all__ = [
    "ANY_HINT",
    "DEFAULT_MAX_TOKENS",
    "HINT_PATTERN",
    "MAX_HINT_CHARS",
    "SESSION_KIND",
    "Sample",
    "SampleRequest",
    "Sampler",
    "SamplingProvider",
    "check_hint",
]

SESSION_KIND = "mcp"
"""The endpoint kind whose calls only a connected MCP session can answer."""
MAX_HINT_CHARS = 64
HINT_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
ANY_HINT = "any"
"""``mcp:any``: no model preference, the host picks."""
DEFAULT_MAX_TOKENS = 4096
"""``maxTokens`` (which MCP requires) when the request sets no output cap."""
HINT_INVALID = "model.mcp_hint_invalid"


def check_hint(hint: str, spec: str) -> str:
    """The model hint of ``mcp:<hint>``, or a ConfigError naming the rule."""
    if not HINT_PATTERN.fullmatch(hint):
        raise ConfigError(
            HINT_INVALID,
            f"model {spec!r}: the hint after mcp: must be 1-{MAX_HINT_CHARS} letters, digits, "
            f"'.', '_' or '-' starting with a letter or digit (e.g. mcp:sonnet, or mcp:{ANY_HINT} "
            "to let the host pick)",
        )
    return hint


@dataclass(frozen=True)
class SampleRequest:
    """One ``sampling/createMessage``, as plain data."""

    prompt: str
    system: str | None
    hint: str | None
    max_tokens: int
    temperature: float | None
    timeout_s: float = 600.0
    """How long the host may take to answer (the endpoint's ``timeout_s``)."""

    def wire(self) -> dict[str, Any]:
        """The request params as MCP spells them (also what the raw events record)."""
        params: dict[str, Any] = {
            "messages": [{"role": "user", "content": {"type": "text", "text": self.prompt}}],
            "maxTokens": self.max_tokens,
        }
        if self.system is not None:
            params["systemPrompt"] = self.system
        if self.temperature is not None:
            params["temperature"] = self.temperature
        if self.hint is not None:
            params["modelPreferences"] = {"hints": [{"name": self.hint}]}
        return params


@dataclass(frozen=True)
class Sample:
    """The host's answer: its text content (None: it answered something else) and model."""

    text: str | None
    model: str
    stop_reason: str | None = None
    content_type: str = "text"


class Sampler(Protocol):
    """Reaches the connected MCP session(s); raises ``SessionGoneError`` when none is there and
    ``DispatchError`` when the host answers with an error (it refused, or its model failed)."""

    async def sample(self, request: SampleRequest) -> Sample: ...


def _tokens(text: str) -> int:
    """A host reports no usage: a quarter of the characters, as the sim provider counts."""
    return math.ceil(len(text) / 4)


class SamplingProvider:
    kind = SESSION_KIND

    async def request(self, request: ModelRequest, ctx: CallContext) -> ModelResponse:
        if ctx.sampler is None:
            raise ConfigError(
                NO_SESSION,
                f"model {ctx.provider_name}:{ctx.model_name} reached a worker with no MCP "
                "session: such calls are served only by a `ponder mcp` on the session queue "
                "its tools route the run to; start the run from an MCP client's tools (think, "
                "ask) or its user's `ponder` CLI, or use another model",
            )
        sample_request = SampleRequest(
            prompt=request.prompt,
            system=request.system,
            hint=None if ctx.model_name == ANY_HINT else ctx.model_name,
            max_tokens=request.max_output_tokens or DEFAULT_MAX_TOKENS,
            temperature=request.temperature,
            timeout_s=ctx.endpoint.timeout_s,
        )
        event: dict[str, Any] = {"request": {"body": sample_request.wire()}}
        started = time.monotonic()
        try:
            sample = await ctx.sampler.sample(sample_request)
        except (SessionGoneError, DispatchError) as exc:
            await ctx.raw_events.record({**event, "error": f"{exc.code}: {exc.message}"})
            raise
        body = {
            "role": "assistant",
            "model": sample.model,
            "stopReason": sample.stop_reason,
            "content": {"type": sample.content_type, "text": sample.text},
        }
        size = len((sample.text or "").encode())
        event["latency_ms"] = round((time.monotonic() - started) * 1000, 3)
        event["response"] = {"status": 200, "body": body if size <= MAX_RESPONSE_BYTES else None}
        await ctx.raw_events.record(event)
        if size > MAX_RESPONSE_BYTES:
            raise ResponseTooLargeError(
                f"the MCP host answered {size} bytes, over {MAX_RESPONSE_BYTES} (1 MiB), the "
                "most one call may return: lower max_output_tokens",
                model=f"{ctx.provider_name}:{ctx.model_name}",
            )
        return self.parse_response(body, request, ctx)

    def parse_response(self, body: Any, request: ModelRequest, ctx: CallContext) -> ModelResponse:
        content = body.get("content") if isinstance(body, dict) else None
        kind = content.get("type") if isinstance(content, dict) else type(content).__name__
        text = content.get("text") if isinstance(content, dict) else None
        if kind != "text" or not isinstance(text, str):
            raise MalformedOutputError(
                f"the MCP host answered {kind!r} content, not text: ponder's prompts need a "
                "text reply",
                model=f"{ctx.provider_name}:{ctx.model_name}",
            )
        prompt = (request.system or "") + request.prompt
        return ModelResponse(
            text=text,
            model=str(body.get("model") or ctx.model_name),
            provider=ctx.provider_name,
            usage=Usage(input_tokens=_tokens(prompt), output_tokens=_tokens(text)),
            usd=0.0,
        )
