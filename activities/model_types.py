"""Input and result models of the ``call_model`` activity, shared by workflows and activities."""

from __future__ import annotations

from pydantic import BaseModel, Field

__all__ = ["CallModelInput", "ModelRequest", "ModelResponse", "Usage"]


class ModelRequest(BaseModel):
    """What a provider is asked: provider-neutral, no secrets."""

    model: str = Field(description="provider:model, e.g. sim:default or openai:gpt-4o-mini")
    prompt: str
    system: str | None = None
    role: str = Field(default="ask", description="ask | generate | judge | mutate | finalize")
    temperature: float | None = None
    max_output_tokens: int | None = None
    json_mode: bool = False
    seed: int = 0
    tag: str | None = Field(default=None, description="opaque label, e.g. the candidate id")
    base_url: str | None = Field(default=None, description="overrides the endpoint's base URL")
    script: str | None = Field(
        default=None, description="sim only: the exact output (a plan step's x-sim.outputs[i])"
    )


class CallModelInput(BaseModel):
    """One logical model call. ``call_key`` stays the same across Temporal retries."""

    run_id: str
    phase: str
    index: int
    attempt: int = 0
    request: ModelRequest

    @property
    def call_id(self) -> str:
        return f"{self.run_id}/{self.phase}/{self.index}/{self.attempt}"

    @property
    def call_key(self) -> str:
        """The call id without the run id: what simulated draws depend on."""
        return f"{self.phase}/{self.index}/{self.attempt}"


class Usage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_hit_tokens: int = 0
    cache_miss_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_hit_tokens=self.cache_hit_tokens + other.cache_hit_tokens,
            cache_miss_tokens=self.cache_miss_tokens + other.cache_miss_tokens,
        )


class ModelResponse(BaseModel):
    """The one normalized result of every provider."""

    text: str
    model: str = Field(description="the model that answered, as the provider names it")
    provider: str
    usage: Usage = Usage()
    usd: float | None = None
    latency_ms: float = 0.0
    transport_retries: int = 0
    simulated: bool = False
