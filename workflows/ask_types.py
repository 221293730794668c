"""Input and result of the ``Ask`` workflow."""

from __future__ import annotations

from pydantic import BaseModel, Field

from workflows.call_options import CallOptions
from workflows.model_types import DEFAULT_MODEL, ModelResponse

__all__ = ["AskInput", "AskResult"]


class AskInput(BaseModel):
    question: str = Field(min_length=1)
    model: str = DEFAULT_MODEL
    system: str | None = None
    temperature: float | None = None
    max_output_tokens: int | None = None
    base_url: str | None = None
    json_mode: bool = False
    role: str = Field(default="ask", description="ask | generate | mutate | finalize")
    seed: int = 0
    run_id: str | None = Field(default=None, description="defaults to the workflow id")
    calls: CallOptions = CallOptions()


class AskResult(BaseModel):
    run_id: str
    answer_path: str
    response: ModelResponse
