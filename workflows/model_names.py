"""The default model id and the example specs errors and ``--help`` show. Plain strings in a
module of their own: ``ponder ask --help`` names them without building the pydantic models of
``workflows.model_types`` (which re-exports them)."""

from __future__ import annotations

__all__ = ["DEFAULT_MODEL", "MODEL_EXAMPLES"]

DEFAULT_MODEL = "sim:default"
"""The model a run uses when its input names none (data, not a branch on a provider)."""
MODEL_EXAMPLES = (
    "sim:default, openai:gpt-4o-mini, anthropic:claude-sonnet-4-5, command:NAME, mcp:HINT"
)
"""Model specs an error or a ``--help`` shows as examples."""
