"""Elites, mutation parents and discards, for every population size from 2 to 64."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workflows.tournament.selection import Discarded, select


@pytest.mark.parametrize("n", range(2, 65))
def test_sizes_for_every_n(n: int) -> None:
    ranked = [f"c{i:02d}" for i in range(n)]
    chosen = select(ranked)
    elites, parents = chosen.elites, chosen.parents
    assert len(elites) == math.ceil(n / 4)
    assert len(parents) == n - math.ceil(n / 4)
    assert len(elites) + len(parents) == n  # elite copies + mutants keep the population at n
    assert elites == ranked[: len(elites)]
    assert parents == ranked[: len(parents)]  # best first; the elites are parents too
    discarded = [d.candidate_id for d in chosen.discarded]
    assert discarded == ranked[len(parents) :]
    reasons = [d.reason for d in chosen.discarded]
    assert reasons.count("bottom_quartile") == n // 4
    assert reasons.count("rounding_trim") == math.ceil(n / 4) - n // 4
    assert set(discarded).isdisjoint(parents)


@given(st.integers(2, 64).flatmap(lambda n: st.permutations([f"g1-m{i}" for i in range(n)])))
@settings(derandomize=True, deadline=None, max_examples=100)
def test_any_ranking_splits_the_same_way(ranked: list[str]) -> None:
    n = len(ranked)
    chosen = select(ranked)
    kept = chosen.elites + chosen.parents + [d.candidate_id for d in chosen.discarded]
    assert set(kept) == set(ranked)
    assert len(chosen.elites) == -(-n // 4) and len(chosen.parents) == n - -(-n // 4)
    bottom = {d.candidate_id for d in chosen.discarded if d.reason == "bottom_quartile"}
    assert bottom == set(ranked[n - n // 4 :])


def test_reasons_on_a_small_population() -> None:
    chosen = select(["a", "b", "c", "d", "e"])
    assert chosen.elites == ["a", "b"]
    assert chosen.parents == ["a", "b", "c"]
    assert chosen.discarded == [Discarded("d", "rounding_trim"), Discarded("e", "bottom_quartile")]


def test_two_candidates() -> None:
    chosen = select(["best", "worst"])
    assert (chosen.elites, chosen.parents) == (["best"], ["best"])
    assert chosen.discarded == [Discarded("worst", "rounding_trim")]


def test_eight_candidates_have_no_rounding_trim() -> None:
    chosen = select(list("abcdefgh"))
    assert chosen.parents == list("abcdef")
    assert [d.reason for d in chosen.discarded] == ["bottom_quartile", "bottom_quartile"]


def test_duplicate_ids_are_refused() -> None:
    with pytest.raises(ValueError, match="unique"):
        select(["a", "a", "b"])
