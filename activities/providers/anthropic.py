"""Anthropic Messages API."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from activities.errors import PolicyRefusalError
from activities.providers.base import CallContext
from activities.providers.http import broken_envelope, post_json
from workflows.bounds import UsageTokens
from workflows.model_types import ModelRequest, ModelResponse, Usage

__all__ = ["AnthropicProvider"]

API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
# The Messages API has no JSON mode; this instruction is how ponder asks for one object.
JSON_INSTRUCTION = "Answer with exactly one JSON object and nothing else."


class _Block(BaseModel):
    type: str
    text: str | None = None


class _Usage(BaseModel):
    input_tokens: UsageTokens = 0
    output_tokens: UsageTokens = 0
    cache_read_input_tokens: UsageTokens | None = 0
    cache_creation_input_tokens: UsageTokens | None = 0


class _Message(BaseModel):
    model: str | None = None
    content: list[_Block]
    stop_reason: str | None = None
    usage: _Usage = _Usage()


class AnthropicProvider:
    kind = "anthropic"

    def wire_bodies(self, request: ModelRequest, ctx: CallContext) -> list[dict[str, Any]]:
        """The one body this call sends."""
        return [self._payload(request, ctx)]

    async def request(self, request: ModelRequest, ctx: CallContext) -> ModelResponse:
        payload = self._payload(request, ctx)
        headers = {"anthropic-version": API_VERSION}
        if ctx.api_key:
            headers["x-api-key"] = ctx.api_key
        body = await post_json(
            ctx, f"{ctx.base_url}/v1/messages", payload, headers, ctx.endpoint.timeout_s
        )
        return self.parse_response(body, request, ctx)

    def _payload(self, request: ModelRequest, ctx: CallContext) -> dict[str, Any]:
        system = request.system or ""
        if request.json_mode:
            system = f"{system}\n\n{JSON_INSTRUCTION}".strip()
        payload: dict[str, Any] = {
            "model": ctx.model_name,
            "max_tokens": request.max_output_tokens or DEFAULT_MAX_TOKENS,
            "messages": [{"role": "user", "content": request.prompt}],
        }
        if system:
            payload["system"] = system
        if request.temperature is not None:
            payload["temperature"] = request.temperature
        return payload

    def parse_response(self, body: Any, request: ModelRequest, ctx: CallContext) -> ModelResponse:
        try:
            message = _Message.model_validate(body)
        except ValidationError:
            raise broken_envelope(
                ctx, "a body that is not a Messages API message", str(body)
            ) from None
        if message.stop_reason == "refusal":
            raise PolicyRefusalError(f"{ctx.provider_name} refused", model=ctx.model_name)
        usage = message.usage
        hit = usage.cache_read_input_tokens or 0
        created = usage.cache_creation_input_tokens or 0
        return ModelResponse(
            text="".join(block.text or "" for block in message.content if block.type == "text"),
            model=message.model or ctx.model_name,
            provider=ctx.provider_name,
            usage=Usage(
                input_tokens=usage.input_tokens + hit + created,
                output_tokens=usage.output_tokens,
                cache_hit_tokens=hit,
                cache_miss_tokens=usage.input_tokens + created,
            ),
        )
