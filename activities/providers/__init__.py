"""Model providers behind one interface; see ``registry`` for how a spec is resolved.

Importing the package loads no provider implementation (``PROVIDERS`` builds them when first
read): the CLI resolves and prices model specs without httpx."""

from __future__ import annotations

from typing import TYPE_CHECKING

from activities.providers.base import CallContext, Provider
from activities.providers.registry import (
    DEFAULT_MODEL,
    MODEL_EXAMPLES,
    ResolvedModel,
    default_model_for,
    parse_model_spec,
    price_table,
    resolve_model,
    resolves_in_memory,
)

if TYPE_CHECKING:
    from activities.providers.registry import PROVIDERS

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


def __getattr__(name: str) -> object:
    if name == "PROVIDERS":
        from activities.providers import registry

        return registry.PROVIDERS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
