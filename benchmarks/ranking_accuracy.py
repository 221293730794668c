"""Top-1 recovery of the final ranking: k-regular vs the adaptive schedule, with a simulated judge.

Pure algorithms, no Temporal. Per seed: n hidden qualities ``q ~ N(0, 1)``; the judge picks A with
``sigmoid(beta * (qA - qB))``, beta calibrated to a mean accuracy. Each arm spends its calls, the
final Bradley-Terry fit names the winner; top-1 is "the winner is the truly best", regret is
``q_best - q_winner``. All arms of a seed share the qualities (common random numbers) and draw
their own judge outcomes. "adaptive" is the schedule runs use (a random matching, then champion
pairs); "adaptive, before" the one runs started before it keep (a 2-regular round, then top-two
Thompson sampling). The last lines say, per accuracy, whether adaptive at 30% of the densest
k-regular arm's calls reaches that arm's top-1. A second table gives the judge a position bias
(``position_bias=0.3``: that share of verdicts goes to the first-shown candidate whatever the
qualities) and compares one order with ``judge_orders: both`` (each pair judged A/B and B/A,
agreement a win, else a tie) at equal judge calls.

    python -m benchmarks.ranking_accuracy --seeds 200
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from activities.sim_math import beta_for_accuracy, draw_quality, p_a_wins
from workflows.tournament.adaptive import (
    batch_sizes,
    champion_batch,
    first_round,
    next_batch,
    opening,
    opening_sizes,
    round_rng,
)
from workflows.tournament.bradley_terry import leaderboard
from workflows.tournament.judge_parse import Outcome
from workflows.tournament.rng import phase_rng
from workflows.tournament.schedule import ScheduledPair, k_regular_schedule
from workflows.tournament.verdicts import JudgeOrders, Slot, call_slots, combine

ACCURACIES = (0.75, 0.85, 0.95)
N = 20
LAMBDA = 0.01
BATCH_SIZE = 8


@dataclass(frozen=True)
class Arm:
    name: str
    kind: str  # "k-regular" | "adaptive" | "adaptive-before"
    calls: int
    """Judge calls; with both orders a pair costs two."""
    orders: JudgeOrders = "one"

    @property
    def pairs(self) -> int:
        return self.calls // 2 if self.orders == "both" else self.calls


ARMS = (
    Arm("k-regular m=10", "k-regular", 100),
    Arm("k-regular m=5", "k-regular", 50),
    Arm("k-regular m=3", "k-regular", 30),
    Arm("adaptive", "adaptive", 100),
    Arm("adaptive", "adaptive", 50),
    Arm("adaptive", "adaptive", 30),
    Arm("adaptive", "adaptive", 20),
    Arm("adaptive, before", "adaptive-before", 50),
    Arm("adaptive, before", "adaptive-before", 30),
)
BIAS = 0.3
BIASED_ACCURACY = 0.85
BIASED_ARMS = (
    Arm("k-regular m=10", "k-regular", 100),
    Arm("k-regular m=5, both", "k-regular", 100, "both"),
    Arm("adaptive", "adaptive", 60),
    Arm("adaptive, both", "adaptive", 60, "both"),
    Arm("adaptive", "adaptive", 30),
    Arm("adaptive, both", "adaptive", 30, "both"),
)
DENSEST = ARMS[0]
AT_30_PERCENT = next(a for a in ARMS if a.kind == "adaptive" and a.calls <= 0.3 * DENSEST.calls)

Judge = Callable[[Sequence[ScheduledPair]], list[Outcome]]


def make_judge(
    quality: dict[str, float], beta: float, rng: random.Random, bias: float, orders: JudgeOrders
) -> Judge:
    def verdict(slot: Slot) -> Slot:
        if bias and rng.random() < bias:
            return slot  # presented_a wins whatever the qualities
        a_wins = rng.random() < p_a_wins(quality[slot.presented_a], quality[slot.presented_b], beta)
        return slot if a_wins else Slot(slot.judge, slot.presented_b, slot.presented_a)

    def judge(pairs: Sequence[ScheduledPair]) -> list[Outcome]:
        outcomes = []
        for p in pairs:
            calls = [
                _Call(s.presented_a, s.presented_b, "A" if verdict(s) == s else "B")
                for s in call_slots(p, ["judge"], orders)
            ]
            outcomes.append(Outcome(p.presented_a, p.presented_b, combine(p, calls)))
        return outcomes

    return judge


@dataclass(frozen=True)
class _Call:
    presented_a: str
    presented_b: str
    winner: str
    judge: str = "judge"


def run_arm(arm: Arm, ids: list[str], judge: Judge, seed: int, max_repeats: int) -> list[Outcome]:
    """The outcomes one arm collects; the adaptive loop is what a workflow would run."""
    if arm.kind == "k-regular":
        m = 2 * arm.pairs // len(ids)
        return judge(k_regular_schedule(ids, m, phase_rng(seed, "final_judging")))
    outcomes: list[Outcome] = []
    before = arm.kind == "adaptive-before"
    sizes = (batch_sizes if before else opening_sizes)(len(ids), arm.pairs, BATCH_SIZE)
    choose = next_batch if before else champion_batch
    for round_no, size in enumerate(sizes):
        rng = round_rng(seed, "final_judging", round_no)
        if round_no == 0:
            pairs = (first_round if before else opening)(ids, rng, budget=size)
        else:
            pairs = choose(ids, outcomes, rng=rng, size=size, max_repeats=max_repeats)
        outcomes += judge(pairs)
    return outcomes


def one_seed(args: tuple[int, float, int, float]) -> list[tuple[bool, float, int]]:
    """(top-1 hit, regret, calls) per arm for one seed, accuracy and position bias."""
    seed, accuracy, max_repeats, bias = args
    beta = beta_for_accuracy(accuracy)
    world = random.Random(seed)
    ids = [f"c{i:02d}" for i in range(N)]
    quality = {cid: draw_quality(world) for cid in ids}
    best = max(quality.values())
    results = []
    for arm_no, arm in enumerate(BIASED_ARMS if bias else ARMS):
        tag = f"{seed}:{accuracy}:{arm_no}" + (f":{bias}" if bias else "")
        judge = make_judge(quality, beta, random.Random(tag), bias, arm.orders)
        outcomes = run_arm(arm, ids, judge, seed, max_repeats)
        winner = leaderboard(ids, outcomes, lambda_=LAMBDA)[0].candidate_id
        calls = len(outcomes) * (2 if arm.orders == "both" else 1)
        results.append((quality[winner] == best, best - quality[winner], calls))
    return results


def print_arms(label: str, arms: Sequence[Arm], block: list[list[tuple[bool, float, int]]]) -> None:
    for arm_no, arm in enumerate(arms):
        hits = [r[arm_no][0] for r in block]
        regret = statistics.fmean(r[arm_no][1] for r in block)
        calls = statistics.fmean(r[arm_no][2] for r in block)
        top1 = statistics.fmean(hits)
        se = math.sqrt(top1 * (1 - top1) / len(hits))
        print(
            f"{label:>8}  {arm.name:<20} {calls:>5.0f}  "
            f"{100 * top1:>5.1f}% ± {100 * se:3.1f}  {regret:>11.3f}"
        )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200, help="worlds per accuracy (default 200)")
    parser.add_argument(
        "--max-repeats",
        type=int,
        default=2,
        help="adaptive: times one pair may be judged (default 2, once per presentation order; "
        "the simulated judge is independent per call, a real one at temperature 0 is not)",
    )
    parser.add_argument("--workers", type=int, default=None, help="processes (default: CPUs)")
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes: a few seconds, for the test suite"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.seeds, args.workers = 2, 1
    started = time.perf_counter()
    jobs = [
        (seed, accuracy, args.max_repeats, 0.0)
        for accuracy in ACCURACIES
        for seed in range(args.seeds)
    ]
    jobs += [(seed, BIASED_ACCURACY, args.max_repeats, BIAS) for seed in range(args.seeds)]
    with ProcessPoolExecutor(args.workers) as pool:
        rows = list(pool.map(one_seed, jobs, chunksize=16))
    print(
        f"n={N}, simulated judge, {args.seeds} seeds per accuracy, lambda={LAMBDA}, "
        f"adaptive batches of {BATCH_SIZE}, max_repeats={args.max_repeats}"
    )
    print(f"{'accuracy':>8}  {'arm':<20} {'calls':>5}  {'top-1':>12}  {'mean regret':>11}")
    verdicts = []
    for a_no, accuracy in enumerate(ACCURACIES):
        block = rows[a_no * args.seeds : (a_no + 1) * args.seeds]
        top1s = [statistics.fmean(r[arm_no][0] for r in block) for arm_no in range(len(ARMS))]
        dense, sparse = top1s[ARMS.index(DENSEST)], top1s[ARMS.index(AT_30_PERCENT)]
        verdicts.append(
            f"accuracy {accuracy:.2f}: adaptive with {AT_30_PERCENT.calls} calls "
            f"{100 * sparse:.1f}% vs {DENSEST.name} with {DENSEST.calls} calls {100 * dense:.1f}%: "
            + ("reaches it" if sparse >= dense else "falls short")
        )
        print_arms(f"{accuracy:.2f}", ARMS, block)
    print(f"\nposition_bias={BIAS}, accuracy {BIASED_ACCURACY}; both: each pair A/B and B/A")
    print(f"{'accuracy':>8}  {'arm':<20} {'calls':>5}  {'top-1':>12}  {'mean regret':>11}")
    print_arms(f"{BIASED_ACCURACY:.2f}", BIASED_ARMS, rows[len(ACCURACIES) * args.seeds :])
    for line in verdicts:
        print(line)
    print(f"({time.perf_counter() - started:.1f} s; ± is one standard error)")


if __name__ == "__main__":
    main()
