"""Re-exports of the shared model-call types, which live in the pure ``workflows.model_types``."""

from workflows.model_types import CallModelInput, ModelRequest, ModelResponse, Usage

__all__ = ["CallModelInput", "ModelRequest", "ModelResponse", "Usage"]
