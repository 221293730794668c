"""OpenAI-compatible chat completions (OpenAI, vLLM, Ollama, llama.cpp, OpenRouter, ...)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from activities.errors import BadRequestError, PolicyRefusalError
from activities.providers.base import CallContext
from activities.providers.http import broken_envelope, post_json
from workflows.bounds import UsageTokens
from workflows.model_types import ModelRequest, ModelResponse, Usage

__all__ = ["OpenAIProvider"]


class _Message(BaseModel):
    content: str | None = None
    refusal: str | None = None


class _Choice(BaseModel):
    message: _Message
    finish_reason: str | None = None


class _PromptDetails(BaseModel):
    cached_tokens: UsageTokens = 0


class _Usage(BaseModel):
    prompt_tokens: UsageTokens = 0
    completion_tokens: UsageTokens = 0
    prompt_tokens_details: _PromptDetails | None = None


class _Completion(BaseModel):
    model: str | None = None
    choices: list[_Choice]
    usage: _Usage | None = None


def _rejects_response_format(error: BadRequestError) -> bool:
    return "response_format" in error.body or "json_object" in error.body


def _json_mode(request: ModelRequest, ctx: CallContext) -> bool:
    """Whether this call's first request carries ``response_format``: from the request and the
    endpoint's declared ``json_mode`` only, never from what this worker met before, so every
    worker sends the same requests for the same call (and the wire-replay key is stable)."""
    return request.json_mode and ctx.endpoint.json_mode


class OpenAIProvider:
    kind = "openai"

    def _payload(self, request: ModelRequest, ctx: CallContext) -> dict[str, Any]:
        messages = [{"role": "user", "content": request.prompt}]
        if request.system:
            messages.insert(0, {"role": "system", "content": request.system})
        payload: dict[str, Any] = {
            "model": ctx.model_name,
            "messages": messages,
            "seed": request.seed,
        }
        if request.temperature is not None:
            payload["temperature"] = request.temperature
        if request.max_output_tokens is not None:
            payload["max_tokens"] = request.max_output_tokens
        return payload

    def wire_bodies(self, request: ModelRequest, ctx: CallContext) -> list[dict[str, Any]]:
        """The bodies this call may send, in order (JSON mode first, then its fallback)."""
        payload = self._payload(request, ctx)
        if _json_mode(request, ctx):
            return [{**payload, "response_format": {"type": "json_object"}}, payload]
        return [payload]

    async def request(self, request: ModelRequest, ctx: CallContext) -> ModelResponse:
        payload = self._payload(request, ctx)
        headers = {"Authorization": f"Bearer {ctx.api_key}"} if ctx.api_key else {}
        url = f"{ctx.base_url}/chat/completions"
        if _json_mode(request, ctx):
            try:
                body = await post_json(
                    ctx,
                    url,
                    {**payload, "response_format": {"type": "json_object"}},
                    headers,
                    ctx.endpoint.timeout_s,
                )
                return self.parse_response(body, request, ctx)
            except BadRequestError as exc:
                if not _rejects_response_format(exc):
                    raise
                # This call falls back to a plain request; the next one tries JSON mode again
                # (declare `json_mode = false` for an endpoint that never accepts it).
                ctx.fallbacks += 1
        body = await post_json(ctx, url, payload, headers, ctx.endpoint.timeout_s)
        return self.parse_response(body, request, ctx)

    def parse_response(self, body: Any, request: ModelRequest, ctx: CallContext) -> ModelResponse:
        try:
            completion = _Completion.model_validate(body)
            choice = completion.choices[0]
        except (ValidationError, IndexError):
            raise broken_envelope(ctx, "a body that is not a chat completion", str(body)) from None
        if choice.message.refusal or choice.finish_reason == "content_filter":
            raise PolicyRefusalError(
                f"{ctx.provider_name} refused: {choice.message.refusal or 'content_filter'}",
                model=ctx.model_name,
            )
        usage = completion.usage or _Usage()
        cached = usage.prompt_tokens_details.cached_tokens if usage.prompt_tokens_details else 0
        return ModelResponse(
            text=choice.message.content or "",
            model=completion.model or ctx.model_name,
            provider=ctx.provider_name,
            usage=Usage(
                input_tokens=usage.prompt_tokens,
                output_tokens=usage.completion_tokens,
                cache_hit_tokens=cached,
                cache_miss_tokens=usage.prompt_tokens - cached,
            ),
        )
