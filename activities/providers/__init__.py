"""Model providers behind one interface; see ``registry`` for how a spec is resolved."""

from activities.providers.base import CallContext, Provider
from activities.providers.registry import (
    DEFAULT_MODEL,
    MODEL_EXAMPLES,
    PROVIDERS,
    ResolvedModel,
    default_model_for,
    parse_model_spec,
    price_table,
    resolve_model,
    resolves_in_memory,
)

__all__ = [
    "DEFAULT_MODEL",
    "MODEL_EXAMPLES",
    "PROVIDERS",
    "CallContext",
    "Provider",
    "ResolvedModel",
    "default_model_for",
    "parse_model_spec",
    "price_table",
    "resolve_model",
    "resolves_in_memory",
]
