"""The model-call vocabulary both sides share: requests, responses, usage, prices, the default
model id. Pure (pydantic only): workflows, activities and the client import it; it imports none of
them. ``activities.model_types`` and ``activities.config.Price`` re-export it for older imports.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from workflows.bounds import MAX_CONTEXT_TOKENS, UsdPerMTok
from workflows.inputs import StrictModel
from workflows.ledger.types import LedgerDraw
from workflows.model_names import DEFAULT_MODEL, MODEL_EXAMPLES
from workflows.wire_replay import WireReplay

__all__ = [
    "DEFAULT_MODEL",
    "MODEL_EXAMPLES",
    "CallModelInput",
    "ModelRequest",
    "ModelResponse",
    "Price",
    "Usage",
]


def _unset(value: object) -> bool:
    return value is None


class ModelRequest(BaseModel):
    """What a provider is asked: provider-neutral, no secrets.

    Serialized without its unset optional fields (``exclude_if``), so a call's scheduled event
    carries what the call sets: decoding fills in the same defaults, and histories that hold the
    nulls decode as before.
    """

    model: str = Field(description="provider:model, a provider the worker configures")
    prompt: str
    system: str | None = Field(default=None, exclude_if=_unset)
    role: str = Field(default="ask", description="ask | generate | judge | mutate | finalize")
    temperature: float | None = Field(default=None, exclude_if=_unset)
    max_output_tokens: int | None = Field(default=None, exclude_if=_unset)
    json_mode: bool = Field(default=False, exclude_if=lambda value: value is False)
    seed: int = 0
    tag: str | None = Field(
        default=None, exclude_if=_unset, description="opaque label, e.g. the candidate id"
    )
    base_url: str | None = Field(
        default=None,
        exclude_if=_unset,
        description="overrides the endpoint's base URL with one the worker declares (another "
        "endpoint's, or [ponder] allowed_base_urls)",
    )
    script: str | None = Field(
        default=None,
        exclude_if=_unset,
        description="sim only: the exact output (a plan step's x-sim.outputs[i])",
    )
    workspace: str | None = Field(
        default=None,
        exclude_if=_unset,
        description="command agents: the working directory (a plan's workspace)",
    )
    item: str | None = Field(
        default=None, exclude_if=_unset, description="command agents: PONDER_ITEM (fan-out)"
    )


class CallModelInput(BaseModel):
    """One logical model call. ``call_key`` stays the same across Temporal retries; serialized
    without its unset optional fields, as ``ModelRequest`` is."""

    run_id: str
    phase: str
    index: int
    attempt: int = 0
    request: ModelRequest
    replay: WireReplay | None = Field(
        default=None,
        exclude_if=_unset,
        description="the run's calls.replay, carried to the activity",
    )
    chain: str | None = Field(
        default=None,
        exclude_if=_unset,
        description="the calling workflow's first_execution_run_id (run store)",
    )
    read_tokens: dict[str, str] | None = Field(
        default=None,
        exclude_if=_unset,
        description="the read tokens of the runs this call reads (a replay model, calls.replay)",
    )
    ledger: LedgerDraw | None = Field(
        default=None,
        exclude_if=_unset,
        description="the run's calls.ledger: the shared ledger this call draws on first",
    )

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


class Price(StrictModel):
    """USD per million tokens for one provider+model: each rate finite, 0 to
    ``MAX_USD_PER_MTOK`` (input overrides and ponder.toml alike), so no spend is negative or
    infinite."""

    input: UsdPerMTok
    output: UsdPerMTok
    cache_hit: UsdPerMTok | None = None
    cache_miss: UsdPerMTok | None = None
    long_context_threshold: int | None = Field(
        default=None,
        ge=0,
        le=MAX_CONTEXT_TOKENS,
        description="input tokens above which the long_context rates apply",
    )
    long_context_input: UsdPerMTok | None = None
    long_context_output: UsdPerMTok | None = None
