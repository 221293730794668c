"""Seeded per-phase randomness and readable candidate ids.

Every phase builds its own ``random.Random`` from ``sha256(f"{seed}:{phase_key}")``, so the same
seed gives the same draws in any run, on any worker, and no phase needs RNG state from another.
``random.Random`` instances are allowed in workflow code (only the module-level functions are not).
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "CandidateIdParts",
    "CandidateKind",
    "elite_id",
    "initial_id",
    "mutant_id",
    "parse_candidate_id",
    "phase_rng",
    "phase_seed",
]

CandidateKind = Literal["initial", "mutation", "elite-copy"]

_KIND_LETTER: dict[CandidateKind, str] = {"initial": "c", "mutation": "m", "elite-copy": "e"}
_LETTER_KIND: dict[str, CandidateKind] = {v: k for k, v in _KIND_LETTER.items()}
_ID = re.compile(r"g(0|[1-9][0-9]*)-([cme])(0|[1-9][0-9]*)")


def phase_seed(seed: int | str, phase_key: str) -> int:
    """The integer seed of one phase: the whole sha256 of ``f"{seed}:{phase_key}"``."""
    digest = hashlib.sha256(f"{seed}:{phase_key}".encode()).digest()
    return int.from_bytes(digest, "big")


def phase_rng(seed: int | str, phase_key: str) -> random.Random:
    """A fresh generator for one phase, independent of every other phase."""
    return random.Random(phase_seed(seed, phase_key))


def _check_index(name: str, value: int, minimum: int) -> None:
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum} (got {value})")


def initial_id(index: int) -> str:
    """Id of the ``index``-th initial candidate: ``g0-c3``."""
    _check_index("index", index, 0)
    return f"g0-c{index}"


def mutant_id(generation: int, index: int) -> str:
    """Id of the ``index``-th mutant made in ``generation``: ``g2-m5`` (parent in ``parent_id``)."""
    _check_index("generation", generation, 1)
    _check_index("index", index, 0)
    return f"g{generation}-m{index}"


def elite_id(generation: int, index: int) -> str:
    """Id of the ``index``-th elite copy carried into ``generation``: ``g2-e0``."""
    _check_index("generation", generation, 1)
    _check_index("index", index, 0)
    return f"g{generation}-e{index}"


@dataclass(frozen=True, slots=True)
class CandidateIdParts:
    generation: int
    kind: CandidateKind
    index: int


def parse_candidate_id(candidate_id: str) -> CandidateIdParts | None:
    """The parts of a tournament id, or None for any other id (e.g. a ``rank`` service id)."""
    match = _ID.fullmatch(candidate_id)
    if match is None:
        return None
    generation, letter, index = int(match[1]), match[2], int(match[3])
    if (generation == 0) != (letter == "c"):
        return None
    return CandidateIdParts(generation=generation, kind=_LETTER_KIND[letter], index=index)
