"""The one provider interface."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from activities.config import Endpoint
from activities.raw_events import RawEventLog
from workflows.model_types import ModelRequest, ModelResponse

if TYPE_CHECKING:
    import httpx  # an annotation only: resolving a model spec (the CLI) loads no httpx

    from activities.providers.sampling import Sampler

__all__ = ["CallContext", "Provider"]


@dataclass
class CallContext:
    """Everything a provider needs besides the request; secrets stay in here, out of history."""

    call_id: str
    call_key: str
    run_id: str
    phase: str
    attempt: int
    provider_name: str
    model_name: str
    endpoint: Endpoint
    api_key: str | None
    http: httpx.AsyncClient
    raw_events: RawEventLog
    role: str = "ask"
    tag: str | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    fallbacks: int = 0
    """Extra requests the provider made on its own (e.g. the JSON-mode fallback)."""
    sampler: Sampler | None = None
    """The MCP session(s) an ``mcp:`` call samples from; only ``ponder mcp``'s worker has one."""

    @property
    def base_url(self) -> str:
        return (self.endpoint.base_url or "").rstrip("/")


class Provider(Protocol):
    kind: str

    async def request(self, request: ModelRequest, ctx: CallContext) -> ModelResponse: ...

    def parse_response(self, body: Any, request: ModelRequest, ctx: CallContext) -> ModelResponse:
        """Normalize a recorded response body (used live and by the replay provider)."""
        ...
