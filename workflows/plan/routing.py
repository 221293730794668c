"""Which model runs a plan step, and which family it belongs to.

Pure. A step's model is a ``provider:model`` spec, or a ``loop-plan/1`` family name resolved as
in the reference (``sonnet``, ``opus``, ``haiku``, ``claude*`` -> claude; ``codex*``, ``gpt*``,
``openai*`` -> openai) through the run's executors (``--executor FAMILY=PROVIDER_SPEC``); a step
without a model runs on ``--default-family``'s executor. Routing comes from the run's input,
never from the worker that happens to run the task.
"""

from __future__ import annotations

from collections.abc import Mapping

from workflows.families import canonical_family

__all__ = ["canonical_family", "route", "step_family"]


def route(
    model: str | None,
    family: str | None,
    *,
    executors: Mapping[str, str],
    default_family: str | None,
) -> str | None:
    """The ``provider:model`` spec a step runs on, or None (``plan-model-unroutable``)."""
    if model is not None and ":" in model:
        return model
    chosen = family
    if chosen is None and model is not None:
        chosen = canonical_family(model) or model
    if chosen is None:
        chosen = default_family
    if chosen is None:
        return None
    # An empty spec (``--executor claude=``) unsets one from ponder.toml: unroutable.
    return executors.get(chosen) or executors.get(canonical_family(chosen) or "") or None


def step_family(model: str | None, spec: str, family: str | None) -> str:
    """A step's family: its explicit ``family``; else the family name it was given as its model
    (``opus`` is claude whichever executor runs it); else the family its spec names, or the
    spec's provider part."""
    if family is not None:
        return family
    if model is not None and ":" not in model:
        return canonical_family(model) or model
    provider, _, name = spec.partition(":")
    return canonical_family(name) or canonical_family(provider) or provider
