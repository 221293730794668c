"""The pure parts of judging, tested directly: combining verdicts, the judge statistics (and
that they recover the sim judge's configured bias), bootstrap intervals, model families."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest

from activities.providers.sim import simulate
from activities.sim_math import trailer_families
from client.tournament_values import model_list
from workflows.families import model_family
from workflows.model_types import ModelRequest
from workflows.sim_options import SimOptions, SimOptionsError
from workflows.tournament.bootstrap import (
    MIN_RESAMPLES,
    Design,
    bootstrap,
    rank_intervals,
    refit_weighted,
    resamples_within_ceiling,
)
from workflows.tournament.bradley_terry import canonical_arrays, fit_arrays, leaderboard, zscore
from workflows.tournament.judge_parse import Outcome, parse_judge_output
from workflows.tournament.judge_stats import Rate, judge_summary, rate
from workflows.tournament.schedule import ScheduledPair
from workflows.tournament.verdicts import call_slots, combine, majority, merged_critiques


@dataclass(frozen=True)
class Call:
    judge: str
    presented_a: str
    presented_b: str
    winner: str


@dataclass(frozen=True)
class Row:
    id: str
    presented_a: str
    presented_b: str
    winner: str
    model: str
    verdicts: list[Call] | None = None


PAIR = ScheduledPair("x", "y", "x", "y")


def test_slots_spread_orders_over_the_panel() -> None:
    one = call_slots(PAIR, ["j"], "one")
    assert [(s.presented_a, s.presented_b) for s in one] == [("x", "y")]
    both = call_slots(PAIR, ["j"], "both")
    assert [(s.presented_a, s.presented_b) for s in both] == [("x", "y"), ("y", "x")]
    panel = call_slots(PAIR, ["j0", "j1", "j2"], "one")
    assert [(s.judge, s.presented_a) for s in panel] == [("j0", "x"), ("j1", "y"), ("j2", "x")]
    assert len(call_slots(PAIR, ["j0", "j1"], "both")) == 4


def _panel_first_share(biases: list[float], index: int) -> float:
    """Exact chance that a three-judge panel's majority names the scheduled first-shown
    candidate of two equal ones: judge ``j`` names whichever it sees first with probability
    ``biases[j]``, else tosses a coin."""
    slots = call_slots(PAIR, [f"j{j}" for j in range(3)], "one", index)
    picks_x = [
        (1 + p) / 2 if s.presented_a == "x" else (1 - p) / 2
        for p, s in zip(biases, slots, strict=True)
    ]
    a, b, c = picks_x
    return a * b + a * c + b * c - 2 * a * b * c


@pytest.mark.parametrize(
    "biases", [[0.0, 0.3, 0.6], [0.6, 0.0, 0.3], [0.3, 0.6, 0.0], [0.6, 0.3, 0.0]]
)
def test_a_panel_has_no_order_effect_over_pairs_however_its_judges_are_listed(
    biases: list[float],
) -> None:
    """Each pair alone leans to a side, so the side alternates: two pairs in a row balance.
    Listed [0, 0.3, 0.6] the panel used to name the first-shown 57.5% of the time, and
    [0.6, 0, 0.3] 72.5% (by hand: 0.5*0.35 + 0.5*0.8 + 0.35*0.8 - 2*0.14, and likewise)."""
    before = _panel_first_share(biases, 0)
    assert before != pytest.approx(0.5)
    assert (before + _panel_first_share(biases, 1)) / 2 == pytest.approx(0.5, abs=1e-12)
    if biases[:2] == [0.0, 0.3]:
        assert before == pytest.approx(0.575)
    if biases[:2] == [0.6, 0.0]:
        assert before == pytest.approx(0.725)


def test_an_even_panel_is_balanced_on_every_pair() -> None:
    for index in range(4):
        slots = call_slots(PAIR, ["a", "b", "c", "d"], "one", index)
        assert sum(s.presented_a == "x" for s in slots) == 2


def test_ties_are_counted_per_pair_and_the_panel_has_its_own_rate() -> None:
    flipped = [Call("j", "x", "y", "A"), Call("j", "y", "x", "A")]  # no call said tie
    summary = judge_summary(
        [Row("p#0", "x", "y", "tie", "m", flipped)], both_orders=True, panel=["j"]
    )
    assert (summary["ties"], summary["tied_pairs"]) == (0, 1)
    rows = [
        Row("p#0", "x", "y", "A", "m", [Call("a", "x", "y", "A"), Call("b", "y", "x", "B")]),
        Row("p#1", "u", "v", "B", "m", [Call("a", "v", "u", "A"), Call("b", "u", "v", "B")]),
        Row("p#2", "s", "t", "B", "m", [Call("a", "s", "t", "B"), Call("b", "t", "s", "A")]),
        Row("p#3", "q", "r", "tie", "m", [Call("a", "q", "r", "A"), Call("b", "r", "q", "A")]),
    ]
    summary = judge_summary(rows, both_orders=False, panel=["a", "b"])
    panel = summary["panel"]["first_position_win_rate"]
    assert (panel["count"], panel["total"]) == (1, 3)  # A, B, B decisive; the tie left out
    assert summary["tied_pairs"] == 1


@pytest.mark.parametrize(
    ("calls", "expected"),
    [
        ([("j", "x", "y", "A"), ("j", "y", "x", "B")], "A"),  # x both times: a win
        ([("j", "x", "y", "A"), ("j", "y", "x", "A")], "tie"),  # the first shown both times
        ([("j", "x", "y", "B"), ("j", "y", "x", "tie")], "tie"),  # a win and a tie
        ([("j", "x", "y", "tie"), ("j", "y", "x", "tie")], "tie"),
        # Panels: a majority of judges names x, or nobody has one.
        ([("a", "x", "y", "A"), ("b", "y", "x", "B"), ("c", "x", "y", "B")], "A"),
        ([("a", "x", "y", "A"), ("b", "y", "x", "A"), ("c", "x", "y", "tie")], "tie"),
        ([("a", "x", "y", "B"), ("b", "x", "y", "tie")], "tie"),  # 1 of 2 is no majority
        ([("a", "x", "y", "B"), ("b", "y", "x", "A")], "B"),
    ],
)
def test_agreement_wins_and_anything_else_ties(
    calls: list[tuple[str, str, str, str]], expected: str
) -> None:
    assert combine(PAIR, [Call(*c) for c in calls]) == expected


def test_majority_needs_more_than_half() -> None:
    assert majority(["x", "x", None]) == "x"
    assert majority(["x", "y", None]) is None
    assert majority(["x", None]) is None
    assert majority([]) is None


def test_critiques_of_a_swapped_call_are_read_in_the_pair_order() -> None:
    calls = [Call("j", "x", "y", "A"), Call("j", "y", "x", "B")]
    critiques = [
        ("Solution A is sound.", "Solution B misses n=0."),
        ("Worse than solution B.", "Good."),
    ]
    for_x, for_y = merged_critiques(PAIR, calls, critiques)
    # In the second call x was B: its critique ("Good.") is x's; letters swap with the sides.
    assert for_x == "Solution A is sound.\n\nGood."
    assert for_y == "Solution B misses n=0.\n\nWorse than solution A."


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 5000).flatmap(lambda total: st.tuples(st.integers(0, total), st.just(total))))
def test_rates_carry_scipys_wilson_intervals(counted: tuple[int, int]) -> None:
    """The closed form is scipy's interval, its ends at 0 and 1 included."""
    count, total = counted
    got = rate(count, total)
    expected = binomtest(count, total).proportion_ci(0.95, method="wilson")
    assert got.rate == count / total
    assert got.low == pytest.approx(float(expected.low), abs=1e-12)
    assert got.high == pytest.approx(float(expected.high), abs=1e-12)


def test_an_empty_count_has_no_rate() -> None:
    assert rate(0, 0) == Rate(0, 0, None, None, None)


def test_flips_and_panel_agreement_are_counted_per_pair() -> None:
    flipped = [Call("j", "x", "y", "A"), Call("j", "y", "x", "A")]
    steady = [Call("j", "x", "y", "A"), Call("j", "y", "x", "B")]
    rows = [Row("p#0", "x", "y", "tie", "m", flipped), Row("p#1", "x", "y", "A", "m", steady)]
    summary = judge_summary(rows, both_orders=True, panel=["j"])
    assert summary["flip_rate"]["count"] == 1 and summary["flip_rate"]["total"] == 2
    assert summary["first_position_win_rate"]["count"] == 3  # A, A, A of 4 decisive
    panel = [Call("a", "x", "y", "A"), Call("b", "y", "x", "B"), Call("c", "x", "y", "B")]
    summary = judge_summary(
        [Row("p#0", "x", "y", "A", "m", panel)], both_orders=False, panel=["a", "b", "c"]
    )
    agreement = {j: e["agreement_with_majority"]["count"] for j, e in summary["by_judge"].items()}
    assert agreement == {"a": 1, "b": 1, "c": 0}


def sim_judge_verdicts(options: str, calls: int, seed: int) -> tuple[list[Row], dict[str, str]]:
    """The real sim judge on random pairs, each shown in a coin's order (as schedules do), of
    candidates from two families; and each candidate's family."""
    rng = random.Random(seed)
    parsed = SimOptions.parse(f"default,{options}")
    rows, families = [], {}
    for i in range(calls):
        ids = (f"a{i}", f"b{i}")
        families |= dict(zip(ids, rng.sample(["claude", "openai"], 2), strict=True))
        prompt = "\n".join(
            f"[sim q={rng.gauss(0, 1):.3f} id={cid} family={families[cid]}]" for cid in ids
        )
        request = ModelRequest(model=f"sim:default,{options}", prompt=prompt, role="judge")
        verdict = parse_judge_output(simulate(request, seed, f"final_judging/{i}/0", parsed))
        rows.append(Row(f"final_judging#{i}", *ids, verdict.winner, "sim"))
    return rows, families


@pytest.mark.parametrize("bias", [0.0, 0.3, 0.6])
def test_the_measured_position_bias_recovers_the_sim_judges(bias: float) -> None:
    # A 95% interval misses 1 run in 20 by design: ask it of most of ten seeded runs.
    covered, estimates = 0, []
    for seed in range(10):
        rows, _ = sim_judge_verdicts(f"position_bias={bias}", 1000, seed=seed)
        measured = judge_summary(rows, both_orders=False, panel=["sim"])["position_bias"]
        covered += measured["low"] <= bias <= measured["high"]
        estimates.append(measured["estimate"])
        assert measured["high"] - measured["low"] < 0.15  # and the interval is informative
        assert measured["significant"] == (bias > 0)
    assert covered >= 8
    assert abs(float(np.mean(estimates)) - bias) < 0.03


@pytest.mark.parametrize("preference", [0.0, 0.4])
def test_the_own_family_win_rate_recovers_the_sim_judges_self_preference(preference: float) -> None:
    judge = f"sim:default,family=claude,self_preference={preference}"
    rows, families = sim_judge_verdicts(judge.removeprefix("sim:default,"), 2000, seed=1)
    summary = judge_summary(rows, both_orders=False, panel=[judge], families=families)
    own = summary["own_family_win_rate"][judge]
    # Families are dealt at random, so only the preference moves the rate off one half.
    assert own["total"] == 2000 and own["low"] <= 0.5 + preference / 2 <= own["high"]
    # 2,000 verdicts: a 0.4 preference (0.70 expected) is far outside 0.5's interval.
    assert own["significant"] is (preference > 0)


def test_sim_bias_knobs_are_bounded_and_off_by_default() -> None:
    assert SimOptions.parse("default").position_bias == 0.0
    for bad in ("position_bias=1.5", "self_preference=-0.1", "family=Claude", "family=a b"):
        with pytest.raises(SimOptionsError):
            SimOptions.parse(f"default,{bad}")
    # Without the knobs the judge's verdicts are exactly what they were.
    request = ModelRequest(
        model="sim:default", prompt="[sim q=0.5 id=a]\n[sim q=0.1 id=b]", role="judge"
    )
    plain = simulate(request, 3, "k/0/0", SimOptions.parse("default"))
    assert plain == simulate(request, 3, "k/0/0", SimOptions.parse("default,family=x"))


def test_a_generator_with_a_family_names_it_in_its_trailer() -> None:
    request = ModelRequest(model="sim:default,family=claude", prompt="Task", role="generate")
    text = simulate(request, 1, "g/0/0", SimOptions.parse("default,family=claude"))
    assert trailer_families(text) == ["claude"]
    plain = simulate(request, 1, "g/0/0", SimOptions.parse("default"))
    assert trailer_families(plain) == [None]


@pytest.mark.parametrize(
    ("spec", "family"),
    [
        ("openai:gpt-4o-mini", "openai"),
        ("anthropic:claude-sonnet-4-5", "claude"),
        ("openrouter:anthropic/claude-3.5-sonnet", "claude"),
        ("openrouter:meta-llama/llama-3-70b", "meta"),
        ("google:gemini-2.0-flash", "google"),
        ("local:qwen2.5", "qwen"),
        ("local:something", "local"),
        ("sim:default", "sim"),
        ("sim:default,family=claude", "claude"),
    ],
)
def test_model_families(spec: str, family: str) -> None:
    assert model_family(spec) == family


def test_judge_lists_keep_sim_options_with_their_spec() -> None:
    assert model_list(["sim:a,accuracy=0.9,latency=uniform:1-2,openai:gpt-4o"]) == [
        "sim:a,accuracy=0.9,latency=uniform:1-2",
        "openai:gpt-4o",
    ]
    assert model_list(["sim:a", "sim:b,latency=lognormal:100,0.5"]) == [
        "sim:a",
        "sim:b,latency=lognormal:100,0.5",
    ]


# -- bootstrap -----------------------------------------------------------------------------


def outcomes_of(n: int, calls: int, seed: int) -> tuple[list[str], list[Outcome]]:
    rng = random.Random(seed)
    ids = [f"c{i:02d}" for i in range(n)]
    strength = {c: rng.gauss(0, 1.5) for c in ids}
    outcomes = []
    for _ in range(calls):
        a, b = rng.sample(ids, 2)
        p = 1 / (1 + np.exp(strength[b] - strength[a]))
        outcomes.append(Outcome(a, b, "A" if rng.random() < p else "B"))
    return ids, outcomes


def test_batched_refits_equal_one_at_a_time_fits() -> None:
    ids, outcomes = outcomes_of(12, 60, seed=2)
    _, a, b, y = canonical_arrays(ids, outcomes)
    counts = np.random.default_rng(0).multinomial(60, np.full(60, 1 / 60), size=6)
    start = fit_arrays(12, a, b, y)
    batched = refit_weighted(Design(12, a, b, y), counts.astype(float), start, 0.01)
    for row, fitted in zip(counts, batched, strict=True):
        keep = np.repeat(np.arange(60), row)
        alone = fit_arrays(12, a[keep], b[keep], y[keep])
        assert np.max(np.abs(zscore(alone) - zscore(fitted))) < 1e-6


def test_a_candidate_without_comparisons_refits_like_one_at_a_time_fits() -> None:
    """Segment sums skip a candidate no comparison names (its gradient and Hessian row are the
    penalty's alone), here the first, the last and one between."""
    ids, outcomes = outcomes_of(12, 60, seed=7)
    idle = {"c00", "c05", "c11"}
    outcomes = [o for o in outcomes if not {o.presented_a, o.presented_b} & idle]
    _, a, b, y = canonical_arrays(ids, outcomes)
    m = len(a)
    counts = np.random.default_rng(3).multinomial(m, np.full(m, 1 / m), size=4)
    batched = refit_weighted(
        Design(12, a, b, y), counts.astype(float), fit_arrays(12, a, b, y), 0.01
    )
    for row, fitted in zip(counts, batched, strict=True):
        keep = np.repeat(np.arange(m), row)
        alone = fit_arrays(12, a[keep], b[keep], y[keep])
        assert np.max(np.abs(zscore(alone) - zscore(fitted))) < 1e-6
    assert np.all(batched[:, [0, 5, 11]] == 0.0)


def test_a_refit_row_is_the_same_bits_in_any_batch() -> None:
    """Rows that converge leave the batch (``refit_weighted``): that is safe only because a
    row's numbers do not depend on the rows beside it."""
    ids, outcomes = outcomes_of(20, 100, seed=3)
    _, a, b, y = canonical_arrays(ids, outcomes)
    design = Design(20, a, b, y)
    counts = np.random.default_rng(1).multinomial(100, np.full(100, 1 / 100), size=40)
    start = fit_arrays(20, a, b, y)
    batched = refit_weighted(design, counts.astype(float), start, 0.01)
    for i in (0, 7, 39):
        alone = refit_weighted(design, counts[i : i + 1].astype(float), start, 0.01)
        assert np.array_equal(alone[0], batched[i])
    pair = refit_weighted(design, counts[[39, 7]].astype(float), start, 0.01)
    assert np.array_equal(pair, batched[[39, 7]])


def test_the_refit_objective_is_the_penalised_log_likelihood() -> None:
    """``Design.objective`` computes ``log(1 + e^d)`` its own way (faster than numpy's
    ``logaddexp``): the same numbers, out to scores far past any fit's."""
    ids, outcomes = outcomes_of(8, 30, seed=4)
    _, a, b, y = canonical_arrays(ids, outcomes)
    rng = np.random.default_rng(2)
    for scale in (0.0, 1e-12, 1.0, 30.0, 400.0):
        s = rng.normal(size=(5, 8)) * scale
        w = rng.integers(0, 4, size=(5, 30)).astype(float)
        d = s[:, a] - s[:, b]
        expected = 0.5 * 0.01 * (s * s).sum(axis=1) + (w * (np.logaddexp(0.0, d) - y * d)).sum(1)
        assert np.allclose(Design(8, a, b, y).objective(s, w, 0.01), expected, rtol=1e-13, atol=0)


def test_intervals_are_seeded_and_bracket_the_scores() -> None:
    ids, outcomes = outcomes_of(10, 80, seed=5)
    first = bootstrap(ids, outcomes, resamples=400, seed=9)
    assert first == bootstrap(list(reversed(ids)), outcomes[::-1], resamples=400, seed=9)
    assert first != bootstrap(ids, outcomes, resamples=400, seed=10)
    board = {r.candidate_id: r.score for r in leaderboard(ids, outcomes)}
    inside = sum(first.low[c] <= board[c] <= first.high[c] for c in ids)
    assert inside >= 9
    assert sum(first.top_share.values()) == pytest.approx(1.0)
    # The leader tops most resamples of a clear ranking.
    leader = max(board, key=board.__getitem__)
    assert first.top_share[leader] == max(first.top_share.values())


def test_intervals_refitted_side_by_side_are_the_same_bits() -> None:
    """What the ``bootstrap_leaderboard`` activity does (chunks in two threads) changes nothing."""
    ids, outcomes = outcomes_of(20, 100, seed=6)
    alone = bootstrap(ids, outcomes, resamples=1000, seed=4)
    with ThreadPoolExecutor(max_workers=2) as pool:
        for lanes in (2, 3, 7):
            assert (
                bootstrap(ids, outcomes, resamples=1000, seed=4, lanes=lanes, map_chunks=pool.map)
                == alone
            )


def test_work_is_bounded() -> None:
    assert resamples_within_ceiling(1000, 20, 100) == 1000
    assert resamples_within_ceiling(10_000, 20, 100) < 10_000  # cut to the work ceiling
    assert resamples_within_ceiling(1000, 400, 80_000) == 0  # too big: no intervals
    assert resamples_within_ceiling(50, 20, 100) == 50  # a small request is not refused
    assert MIN_RESAMPLES == 100
    ids, _ = outcomes_of(4, 0, seed=1)
    assert bootstrap(ids, [], resamples=1000).resamples == 0


def _two_round_swiss(seed: int) -> tuple[list[str], list[Outcome]]:
    """Eight candidates, two random pairings: every candidate has two comparisons, so some win
    or lose both."""
    rng = random.Random(seed)
    ids = [f"c{i:02d}" for i in range(8)]
    strength = {c: rng.gauss(0, 1.5) for c in ids}
    outcomes = []
    for _ in range(2):
        order = ids[:]
        rng.shuffle(order)
        for a, b in zip(order[::2], order[1::2], strict=True):
            p = 1 / (1 + np.exp(strength[b] - strength[a]))
            outcomes.append(Outcome(a, b, "A" if rng.random() < p else "B"))
    return ids, outcomes


def test_a_score_lies_inside_its_own_interval_on_one_scale_for_every_resample() -> None:
    """Refitted here one resample at a time: z-scoring each resample by its own spread (the old
    construction) puts the undefeated c07's 2.0 outside [0, 1.94]; one divisor for every
    resample (the full fit's spread) and a widening to the point keep every score inside."""
    ids, outcomes = _two_round_swiss(164)
    _, a, b, y = canonical_arrays(ids, outcomes)
    n, m = len(ids), len(a)
    full = fit_arrays(n, a, b, y)
    point = zscore(full)
    counts = np.random.default_rng(0).multinomial(m, np.full(m, 1 / m), size=200)
    fits = np.array(
        [fit_arrays(n, *(v[np.repeat(np.arange(m), row)] for v in (a, b, y))) for row in counts]
    )
    own = np.percentile([zscore(f) for f in fits], [2.5, 97.5], axis=0)
    assert not own[0][7] <= point[7] <= own[1][7]  # the old construction excludes c07's point
    centred = fits - fits.mean(axis=1, keepdims=True)
    low, high = np.percentile(centred / (full - full.mean()).std(), [2.5, 97.5], axis=0)
    low, high = np.minimum(low, point), np.maximum(high, point)
    intervals = bootstrap(ids, outcomes, resamples=200, seed=0)
    for i, cid in enumerate(ids):
        assert intervals.low[cid] <= point[i] <= intervals.high[cid]
        assert intervals.low[cid] == pytest.approx(low[i], abs=1e-6)
        assert intervals.high[cid] == pytest.approx(high[i], abs=1e-6)


def test_every_score_lies_inside_its_interval_over_many_small_tournaments() -> None:
    for seed in range(60):
        ids, outcomes = _two_round_swiss(seed)
        board = {r.candidate_id: r.score for r in leaderboard(ids, outcomes)}
        intervals = bootstrap(ids, outcomes, resamples=200, seed=seed)
        for cid in ids:
            assert intervals.low[cid] <= board[cid] <= intervals.high[cid], (seed, cid)


def test_rank_intervals_count_who_is_surely_above_and_below() -> None:
    # a [2, 3] clears c and d; b [1, 2.5] overlaps a and clears d; c [0, 1.5]; d [-1, -0.5].
    low = {"a": 2.0, "b": 1.0, "c": 0.0, "d": -1.0}
    high = {"a": 3.0, "b": 2.5, "c": 1.5, "d": -0.5}
    assert rank_intervals(low, high) == {"a": (1, 2), "b": (1, 3), "c": (2, 3), "d": (4, 4)}
    # one clear leader: its worst rank is 1
    assert rank_intervals({"x": 5.0, "y": 0.0}, {"x": 6.0, "y": 1.0}) == {"x": (1, 1), "y": (2, 2)}


@pytest.mark.parametrize("bias", [0.0, 0.5])
def test_the_longer_win_rate_recovers_the_sim_judges_length_bias(bias: float) -> None:
    """Equal qualities (so only the bias picks by length): the longer one wins
    ``P + (1 - P) / 2`` of the decisive verdicts, 0.5 and 0.75 here."""
    rng = random.Random(11)
    options = SimOptions.parse(f"default,length_bias={bias}")
    rows, lengths = [], {}
    for i in range(1500):
        ids = (f"a{i}", f"b{i}")
        texts = [
            f"Simulated answer to: x\n{'w ' * rng.randint(20, 400)}\n[sim q=0.000 id={cid}]"
            for cid in ids
        ]
        lengths |= {cid: len(t) for cid, t in zip(ids, texts, strict=True)}
        prompt = "Task\nSolution A:\n" + texts[0] + "\nSolution B:\n" + texts[1]
        request = ModelRequest(model="sim:default", prompt=prompt, role="judge")
        verdict = parse_judge_output(simulate(request, 5, f"final_judging/{i}/0", options))
        rows.append(Row(f"final_judging#{i}", *ids, verdict.winner, "sim"))
    longer = judge_summary(rows, both_orders=False, panel=["sim"], lengths=lengths)[
        "longer_win_rate"
    ]
    expected = bias + (1 - bias) / 2
    assert longer["low"] <= expected <= longer["high"]
    assert longer["significant"] is (bias > 0)


def test_ranged_chars_give_candidates_of_varying_length_and_fixed_ones_stay_put() -> None:
    ranged = SimOptions.parse("default,chars=100-2000")
    request = ModelRequest(model="sim:default", prompt="Task: sort", role="generate")
    sizes = {len(simulate(request, 1, f"g/{i}", ranged)) for i in range(20)}
    assert max(sizes) - min(sizes) > 1000
    fixed = SimOptions.parse("default")
    assert SimOptions.parse("default,chars=400-400").chars == fixed.chars == 400
    with pytest.raises(SimOptionsError):
        SimOptions.parse("default,chars=900-100")
