"""k-regular and all-pairs schedules."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workflows.tournament.errors import TournamentError
from workflows.tournament.profiles import RankBlock
from workflows.tournament.rng import phase_rng
from workflows.tournament.schedule import (
    ScheduledPair,
    all_pairs_schedule,
    check_regular,
    final_schedule,
    k_regular_pairs,
    k_regular_schedule,
)


def ids_of(n: int) -> list[str]:
    return [f"g0-c{i}" for i in range(n)]


def assert_regular(schedule: list[ScheduledPair], ids: list[str], k: int) -> None:
    assert len(schedule) == len(ids) * k // 2
    unordered = [frozenset((p.scheduled_a, p.scheduled_b)) for p in schedule]
    assert all(len(pair) == 2 for pair in unordered), "self pair"
    assert len(set(unordered)) == len(unordered), "duplicate pair"
    degree = Counter(c for pair in unordered for c in pair)
    assert all(degree[c] == k for c in ids)
    for p in schedule:
        assert {p.presented_a, p.presented_b} == {p.scheduled_a, p.scheduled_b}
        assert p.swapped == (p.presented_a == p.scheduled_b)


def test_every_n_up_to_64() -> None:
    # Every k for small n; for larger n the edges of the range, where offsets and the antipodal
    # matching are tightest, and the middle.
    for n in range(2, 65):
        ids = ids_of(n)
        ks = (
            range(1, n)
            if n <= 24
            else {1, 2, 3, 4, 5, n // 2 - 1, n // 2, n // 2 + 1, n - 3, n - 2, n - 1}
        )
        for k in ks:
            if n * k % 2 == 0:
                assert_regular(k_regular_schedule(ids, k, random.Random(n * 100 + k)), ids, k)


@given(n=st.integers(2, 64), k=st.integers(1, 63), seed=st.integers(0, 2**32))
@settings(derandomize=True, deadline=None, max_examples=200)
def test_k_regular_for_any_seed(n: int, k: int, seed: int) -> None:
    k = min(k, n - 1)
    if n * k % 2:
        k -= 1
    if k < 1:
        return
    assert_regular(k_regular_schedule(ids_of(n), k, phase_rng(seed, "x")), ids_of(n), k)


def test_same_seed_same_schedule_and_presentation() -> None:
    ids = ids_of(20)
    first = k_regular_schedule(ids, 4, phase_rng(9, "generation_judging:1"))
    assert first == k_regular_schedule(ids, 4, phase_rng(9, "generation_judging:1"))
    assert first != k_regular_schedule(ids, 4, phase_rng(9, "generation_judging:2"))


def test_presentation_coins_are_fair_enough() -> None:
    schedule = k_regular_schedule(ids_of(64), 10, phase_rng(1, "coins"))
    swapped = sum(p.swapped for p in schedule)
    assert 0.4 < swapped / len(schedule) < 0.6


def test_ids_then_pairs_are_shuffled() -> None:
    ids = ids_of(40)
    order = list(ids)
    rng = random.Random(3)
    rng.shuffle(order)
    built = [(order[i], order[(i + d) % 40]) for d in (1, 2) for i in range(40)]
    pairs = k_regular_pairs(ids, 4, random.Random(3))
    assert sorted(pairs) == sorted(built)
    assert pairs != built


@pytest.mark.parametrize(("n", "k"), [(4, 4), (4, 0), (5, 3), (3, 5), (1, 1)])
def test_impossible_degrees_are_a_programming_error(n: int, k: int) -> None:
    with pytest.raises(ValueError, match="regular schedule"):
        k_regular_pairs(ids_of(n), k, random.Random(0))


def test_duplicate_ids_are_refused() -> None:
    with pytest.raises(ValueError, match="unique: a repeat"):
        k_regular_pairs(["a", "b", "a", "c"], 2, random.Random(0))
    with pytest.raises(ValueError, match="unique"):
        all_pairs_schedule(["a", "a"], random.Random(0))


def test_check_regular_catches_each_fault() -> None:
    ids = ["a", "b", "c", "d"]
    check_regular([("a", "b"), ("c", "d")], ids, 1)
    with pytest.raises(ValueError, match="self pair"):
        check_regular([("a", "a"), ("c", "d")], ids, 1)
    with pytest.raises(ValueError, match="duplicate pair"):
        check_regular([("a", "b"), ("b", "a")], ids, 1)
    with pytest.raises(ValueError, match="degree"):
        check_regular([("a", "b")], ids, 1)
    with pytest.raises(ValueError, match="unknown"):
        check_regular([("a", "z")], ids, 1)


@pytest.mark.parametrize("n", range(2, 31))
def test_all_pairs_is_complete_and_balanced(n: int) -> None:
    ids = ids_of(n)
    schedule = all_pairs_schedule(ids, phase_rng(n, "rank"))
    unordered = {frozenset((p.presented_a, p.presented_b)) for p in schedule}
    assert len(schedule) == len(unordered) == n * (n - 1) // 2
    as_a = Counter(p.presented_a for p in schedule)
    for c in ids:
        assert as_a[c] in {(n - 1) // 2, n // 2}, (c, as_a[c])


def test_final_schedule_defaults_to_m_regular() -> None:
    ids = ids_of(10)
    schedule = final_schedule(ids, m=4, seed=5)
    assert_regular(schedule, ids, 4)
    assert schedule == k_regular_schedule(ids, 4, phase_rng(5, "final_judging"))


def test_final_schedule_with_rank_blocks() -> None:
    ids = ids_of(10)
    all_pairs = final_schedule(ids, m=4, seed=5, rank=RankBlock(mode="all-pairs"))
    assert len(all_pairs) == 45
    k6 = final_schedule(ids, m=4, seed=5, rank=RankBlock(mode="k-regular", k=6))
    assert_regular(k6, ids, 6)


def test_rank_seed_replaces_the_run_seed() -> None:
    ids = ids_of(10)
    rank = RankBlock(mode="k-regular", k=4, seed="fixed")
    assert final_schedule(ids, m=2, seed=1, rank=rank) == final_schedule(
        ids, m=2, seed=2, rank=rank
    )
    unseeded = RankBlock(mode="k-regular", k=4)
    assert final_schedule(ids, m=2, seed=1, rank=unseeded) != final_schedule(
        ids, m=2, seed=2, rank=unseeded
    )


def test_final_schedule_refuses_a_bad_rank_block() -> None:
    with pytest.raises(TournamentError) as info:
        final_schedule(ids_of(10), m=4, seed=1, rank=RankBlock(mode="k-regular"))
    assert info.value.code == "rank.k_required"
    with pytest.raises(TournamentError) as info:
        final_schedule(ids_of(15), m=4, seed=1, rank=RankBlock(mode="all-pairs"))
    assert info.value.code == "rank.max_calls_required"


def test_all_pairs_rows_name_both_candidates_in_their_scheduled_order() -> None:
    for n in (4, 5):  # the circle's pairs, and for even n the antipodal ones
        ids = [f"c{i}" for i in range(n)]
        pairs = all_pairs_schedule(ids, random.Random(n))
        assert all(
            p.presented_a == p.scheduled_a in ids and p.presented_b == p.scheduled_b in ids
            for p in pairs
        )
        assert len({frozenset((p.scheduled_a, p.scheduled_b)) for p in pairs}) == n * (n - 1) // 2
