"""Per-phase seeded generators and readable candidate ids."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import pytest

from workflows.tournament.rng import (
    CandidateIdParts,
    elite_id,
    initial_id,
    mutant_id,
    parse_candidate_id,
    phase_rng,
    phase_seed,
)


def test_phase_seed_is_the_sha256_of_seed_and_key() -> None:
    digest = hashlib.sha256(b"42:generation_judging:1").digest()
    assert phase_seed(42, "generation_judging:1") == int.from_bytes(digest, "big")


def test_same_seed_and_phase_give_the_same_draws() -> None:
    first = [phase_rng(7, "final_judging").random() for _ in range(3)]
    again = [phase_rng(7, "final_judging").random() for _ in range(3)]
    assert first == again
    rng = phase_rng(7, "final_judging")
    assert [rng.random(), rng.random()] != [rng.random(), rng.random()]


def test_phases_and_seeds_are_independent() -> None:
    draws = {
        (seed, key): phase_rng(seed, key).random()
        for seed in (1, 2, "run-a")
        for key in ("initial_generation", "generation_judging:1", "final_judging")
    }
    assert len(set(draws.values())) == len(draws)


def test_an_int_seed_and_its_string_are_the_same_seed() -> None:
    # The seed is hashed as text, so a seed read back from JSON as "5" or 5 draws the same.
    assert phase_rng(5, "x").random() == phase_rng("5", "x").random()


def test_ids_are_readable() -> None:
    assert initial_id(3) == "g0-c3"
    assert mutant_id(2, 5) == "g2-m5"
    assert elite_id(2, 0) == "g2-e0"


@pytest.mark.parametrize(
    ("make", "args"),
    [(initial_id, (-1,)), (mutant_id, (0, 1)), (mutant_id, (1, -1)), (elite_id, (0, 0))],
)
def test_impossible_ids_are_refused(make, args) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="must be >="):
        make(*args)


def test_ids_parse_back() -> None:
    assert parse_candidate_id("g0-c3") == CandidateIdParts(0, "initial", 3)
    assert parse_candidate_id("g12-m5") == CandidateIdParts(12, "mutation", 5)
    assert parse_candidate_id("g2-e0") == CandidateIdParts(2, "elite-copy", 0)
    for other in ("g0-m1", "g1-c1", "g01-c1", "c3", "g1-m", "essay.txt", "g1-m1x"):
        assert parse_candidate_id(other) is None


@pytest.mark.parametrize(
    ("make", "args", "message"),
    [
        (initial_id, (-1,), "index must be >= 0 (got -1)"),
        (mutant_id, (0, 1), "generation must be >= 1 (got 0)"),
        (mutant_id, (1, -2), "index must be >= 0 (got -2)"),
        (elite_id, (0, 0), "generation must be >= 1 (got 0)"),
        (elite_id, (3, -1), "index must be >= 0 (got -1)"),
    ],
)
def test_an_impossible_id_is_refused_naming_the_part_and_its_minimum(
    make: Callable[..., str], args: tuple[int, ...], message: str
) -> None:
    with pytest.raises(ValueError) as caught:
        make(*args)
    assert str(caught.value) == message


def test_the_smallest_ids_are_made() -> None:
    assert initial_id(0) == "g0-c0"
    assert mutant_id(1, 0) == "g1-m0"
    assert elite_id(1, 0) == "g1-e0"
