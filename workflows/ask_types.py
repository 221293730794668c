"""Input and result of the ``Ask`` workflow."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from workflows.bounds import OutputTokens, Seed, Temperature
from workflows.call_options import CallOptions
from workflows.inputs import StrictModel
from workflows.model_types import DEFAULT_MODEL, ModelResponse
from workflows.sim_options import ModelSpec

__all__ = ["AskInput", "AskResult", "AskRole"]

AskRole = Literal["ask", "generate", "judge", "mutate", "finalize"]


class AskInput(StrictModel):
    question: str = Field(min_length=1)
    model: ModelSpec = Field(default=DEFAULT_MODEL, min_length=1)
    system: str | None = None
    temperature: Temperature | None = None
    max_output_tokens: OutputTokens | None = None
    base_url: str | None = None
    json_mode: bool = False
    role: AskRole = "ask"
    seed: Seed = 0
    run_id: str | None = Field(default=None, description="defaults to the workflow id")
    calls: CallOptions = CallOptions()


class AskResult(BaseModel):
    run_id: str
    answer_path: str
    response: ModelResponse
