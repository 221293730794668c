"""Every phase name a run uses: the workflows, the records, the report and the CLI read them here.

A phase names a stretch of a run and keys its seeded randomness (``rng.phase_rng(seed, phase)``)
and its call ids (``run/phase/index/attempt``), so these strings are part of recorded histories and
artifacts: never change one. Per-generation phases carry the generation: ``generation_judging:2``.
Pure: no imports beyond the standard library.
"""

from __future__ import annotations

__all__ = [
    "ASK",
    "FINALIZING",
    "FINAL_JUDGING",
    "GENERATION_JUDGING",
    "GENERATION_MUTATION",
    "INITIAL_GENERATION",
    "STARTING",
    "generation_judging",
    "generation_mutation",
    "label",
    "order_key",
    "split",
]

ASK = "ask"
"""The one call of an ``Ask`` run."""

STARTING = "starting"
INITIAL_GENERATION = "initial_generation"
GENERATION_JUDGING = "generation_judging"
GENERATION_MUTATION = "generation_mutation"
FINAL_JUDGING = "final_judging"
FINALIZING = "finalizing"

_STAGE = {
    STARTING: 0,
    INITIAL_GENERATION: 1,
    GENERATION_JUDGING: 2,
    GENERATION_MUTATION: 2,
    FINAL_JUDGING: 3,
    FINALIZING: 4,
}


def generation_judging(generation: int) -> str:
    return f"{GENERATION_JUDGING}:{generation}"


def generation_mutation(generation: int) -> str:
    return f"{GENERATION_MUTATION}:{generation}"


def split(phase: str) -> tuple[str, int | None]:
    """``generation_judging:2`` -> ``("generation_judging", 2)``; no generation -> None."""
    name, _, generation = phase.partition(":")
    return name, int(generation) if generation.isdigit() else None


def order_key(phase: str) -> tuple[int, int, int]:
    """Schedule order: per generation judging, then mutation; unknown phases first."""
    name, generation = split(phase)
    return (_STAGE.get(name, -1), generation or 0, int(name == GENERATION_MUTATION))


def label(phase: str) -> str:
    """A short label for tables and charts: ``gen 2``, ``final``."""
    name, generation = split(phase)
    if name == GENERATION_JUDGING and generation is not None:
        return f"gen {generation}"
    if name == FINAL_JUDGING:
        return "final"
    return phase
