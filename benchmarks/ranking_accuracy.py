"""Top-1 recovery of the final ranking: k-regular vs the adaptive schedule, with a simulated judge.

Pure algorithms, no Temporal. Per seed: n hidden qualities ``q ~ N(0, 1)``; the judge picks A with
``sigmoid(beta * (qA - qB))``, beta calibrated to a mean accuracy. Each arm spends its calls, the
final Bradley-Terry fit names the winner; top-1 is "the winner is the truly best", regret is
``q_best - q_winner``. All arms of a seed share the qualities (common random numbers) and draw
their own judge outcomes. "adaptive" is the schedule runs use (a random matching, then champion
pairs); "adaptive, before" the one runs started before it keep (a 2-regular round, then top-two
Thompson sampling). The last lines say, per accuracy, whether adaptive at 30% of the densest
k-regular arm's calls reaches that arm's top-1.

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

ACCURACIES = (0.75, 0.85, 0.95)
N = 20
LAMBDA = 0.01
BATCH_SIZE = 8


@dataclass(frozen=True)
class Arm:
    name: str
    kind: str  # "k-regular" | "adaptive" | "adaptive-before"
    calls: int


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
DENSEST = ARMS[0]
AT_30_PERCENT = next(a for a in ARMS if a.kind == "adaptive" and a.calls <= 0.3 * DENSEST.calls)

Judge = Callable[[Sequence[ScheduledPair]], list[Outcome]]


def make_judge(quality: dict[str, float], beta: float, rng: random.Random) -> Judge:
    def judge(pairs: Sequence[ScheduledPair]) -> list[Outcome]:
        outcomes = []
        for p in pairs:
            a_wins = rng.random() < p_a_wins(quality[p.presented_a], quality[p.presented_b], beta)
            outcomes.append(Outcome(p.presented_a, p.presented_b, "A" if a_wins else "B"))
        return outcomes

    return judge


def run_arm(arm: Arm, ids: list[str], judge: Judge, seed: int, max_repeats: int) -> list[Outcome]:
    """The outcomes one arm collects; the adaptive loop is what a workflow would run."""
    if arm.kind == "k-regular":
        m = 2 * arm.calls // len(ids)
        return judge(k_regular_schedule(ids, m, phase_rng(seed, "final_judging")))
    outcomes: list[Outcome] = []
    before = arm.kind == "adaptive-before"
    sizes = (batch_sizes if before else opening_sizes)(len(ids), arm.calls, BATCH_SIZE)
    choose = next_batch if before else champion_batch
    for round_no, size in enumerate(sizes):
        rng = round_rng(seed, "final_judging", round_no)
        if round_no == 0:
            pairs = (first_round if before else opening)(ids, rng, budget=size)
        else:
            pairs = choose(ids, outcomes, rng=rng, size=size, max_repeats=max_repeats)
        outcomes += judge(pairs)
    return outcomes


def one_seed(args: tuple[int, float, int]) -> list[tuple[bool, float, int]]:
    """(top-1 hit, regret, calls) per arm for one seed and accuracy."""
    seed, accuracy, max_repeats = args
    beta = beta_for_accuracy(accuracy)
    world = random.Random(seed)
    ids = [f"c{i:02d}" for i in range(N)]
    quality = {cid: draw_quality(world) for cid in ids}
    best = max(quality.values())
    results = []
    for arm_no, arm in enumerate(ARMS):
        judge_rng = random.Random(f"{seed}:{accuracy}:{arm_no}")
        outcomes = run_arm(arm, ids, make_judge(quality, beta, judge_rng), seed, max_repeats)
        winner = leaderboard(ids, outcomes, lambda_=LAMBDA)[0].candidate_id
        results.append((quality[winner] == best, best - quality[winner], len(outcomes)))
    return results


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
        (seed, accuracy, args.max_repeats) for accuracy in ACCURACIES for seed in range(args.seeds)
    ]
    with ProcessPoolExecutor(args.workers) as pool:
        rows = list(pool.map(one_seed, jobs, chunksize=16))
    print(
        f"n={N}, simulated judge, {args.seeds} seeds per accuracy, lambda={LAMBDA}, "
        f"adaptive batches of {BATCH_SIZE}, max_repeats={args.max_repeats}"
    )
    print(f"{'accuracy':>8}  {'arm':<16} {'calls':>5}  {'top-1':>12}  {'mean regret':>11}")
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
        for arm_no, arm in enumerate(ARMS):
            hits = [r[arm_no][0] for r in block]
            regret = statistics.fmean(r[arm_no][1] for r in block)
            calls = statistics.fmean(r[arm_no][2] for r in block)
            top1 = statistics.fmean(hits)
            se = math.sqrt(top1 * (1 - top1) / len(hits))
            print(
                f"{accuracy:>8.2f}  {arm.name:<16} {calls:>5.0f}  "
                f"{100 * top1:>5.1f}% ± {100 * se:3.1f}  {regret:>11.3f}"
            )
    for line in verdicts:
        print(line)
    print(f"({time.perf_counter() - started:.1f} s; ± is one standard error)")


if __name__ == "__main__":
    main()
