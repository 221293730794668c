"""``TournamentBehaviour.decide``: the patches a run asks, in the order every recorded run asked
them, and what each kind of history gets (pure: ``patched`` is a record of the markers a
history holds, as ``workflow.patched`` answers on replay; a new run's answers are all True)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from workflows.tournament.behaviour import (
    ADAPTIVE_BUDGET_PATCH,
    BALANCED_PANEL_PATCH,
    BOOTSTRAP_PATCH,
    CURRENT_PATCH,
    DEFERRED_WRITES_PATCH,
    INCREMENTAL_ARTIFACTS_PATCH,
    LEAN_WRITES_PATCH,
    LIKELIHOOD_INTERVALS_PATCH,
    MIXTURE_LENGTH_PATCH,
    PIPELINED_DEFAULT_PATCH,
    PIPELINED_LANES_PATCH,
    PIPELINED_PATCH,
    SETTLED_PAUSE_WRITES_PATCH,
    SPARSE_OPENING_PATCH,
    THROTTLED_PATCH,
    TournamentBehaviour,
)
from workflows.tournament.types import TournamentInput

UMBRELLAS = [MIXTURE_LENGTH_PATCH, SETTLED_PAUSE_WRITES_PATCH, LIKELIHOOD_INTERVALS_PATCH,
             PIPELINED_DEFAULT_PATCH, ADAPTIVE_BUDGET_PATCH, BALANCED_PANEL_PATCH,
             THROTTLED_PATCH, CURRENT_PATCH]  # fmt: skip
ONE_BY_ONE = [SPARSE_OPENING_PATCH, BOOTSTRAP_PATCH, INCREMENTAL_ARTIFACTS_PATCH,
              LEAN_WRITES_PATCH, DEFERRED_WRITES_PATCH]  # fmt: skip


def history(*markers: str) -> tuple[Callable[[str], bool], list[str]]:
    """``patched`` as replay answers it for a history holding ``markers``, and the ids asked."""
    asked: list[str] = []

    def patched(patch_id: str) -> bool:
        asked.append(patch_id)
        return patch_id in markers

    return patched, asked


def new_run() -> tuple[Callable[[str], bool], list[str]]:
    """``patched`` as a run started now answers it: every patch is True."""
    asked: list[str] = []

    def patched(patch_id: str) -> bool:
        asked.append(patch_id)
        return True

    return patched, asked


def task(**fields: object) -> TournamentInput:
    return TournamentInput.model_validate({"task": "Sort a list."} | fields)


def test_the_patch_ids_are_the_recorded_ones() -> None:
    """Histories hold these strings: a renamed id fails every run recorded under it."""
    assert UMBRELLAS == ["tournament-2026-12h", "tournament-2026-12g", "tournament-2026-12f",
                         "tournament-2026-12e", "tournament-2026-12d", "tournament-2026-12c",
                         "tournament-2026-12b", "tournament-2026-12"]  # fmt: skip
    assert ONE_BY_ONE == ["adaptive-sparse-opening", "final-score-bootstrap",
                          "incremental-artifacts", "lean-artifact-writes",
                          "deferred-artifact-writes"]  # fmt: skip
    assert (PIPELINED_PATCH, PIPELINED_LANES_PATCH) == ("pipelined-rounds", "pipelined-lane-widths")


def test_a_new_run_asks_the_newest_umbrella_only_and_pipelines_by_default() -> None:
    patched, asked = new_run()
    behaviour = TournamentBehaviour.decide(patched, task())
    assert asked == [MIXTURE_LENGTH_PATCH]  # one marker in its first task
    assert behaviour == TournamentBehaviour(
        rounds="pipelined",
        pipelined=True,
        slot_widths="provider",
        sparse_opening=True,
        bootstrap=True,
        incremental_writes=True,
        deferred_writes=True,
        lean_writes=True,
        throttled_writes=True,
        balanced_panel=True,
        adaptive_budget=True,
        likelihood_intervals=True,
        settled_pause_writes=True,
        mixture_length=True,
    )
    assert behaviour.resolve(task()).rounds == "pipelined"


def test_a_new_run_keeps_barrier_rounds_when_asked() -> None:
    patched, _ = new_run()
    behaviour = TournamentBehaviour.decide(patched, task(rounds="barrier"))
    assert (behaviour.rounds, behaviour.pipelined) == ("barrier", False)
    assert behaviour.resolve(task(rounds="barrier")).rounds == "barrier"


@pytest.mark.parametrize("rounds", [None, "barrier"])
def test_a_run_recorded_before_the_default_replays_as_a_barrier_run(rounds: str | None) -> None:
    """An input without ``rounds`` meant barrier rounds then (raw ``temporal workflow start``
    input as much as the CLI's)."""
    patched, asked = history(ADAPTIVE_BUDGET_PATCH)
    fields = {} if rounds is None else {"rounds": rounds}
    behaviour = TournamentBehaviour.decide(patched, task(**fields))
    assert asked == UMBRELLAS[:5]
    assert (behaviour.rounds, behaviour.pipelined) == ("barrier", False)
    assert behaviour.adaptive_budget and behaviour.balanced_panel and behaviour.throttled_writes
    assert behaviour.resolve(task(**fields)).rounds == "barrier"


def test_a_pipelined_run_recorded_before_the_default_keeps_its_lane_widths() -> None:
    patched, _ = history(ADAPTIVE_BUDGET_PATCH)
    behaviour = TournamentBehaviour.decide(patched, task(rounds="pipelined"))
    assert behaviour.pipelined and behaviour.slot_widths == "lane"


@pytest.mark.parametrize(
    ("marker", "asked", "throttled", "balanced"),
    [
        (BALANCED_PANEL_PATCH, UMBRELLAS[:6], True, True),
        (THROTTLED_PATCH, UMBRELLAS[:7], True, False),
        (CURRENT_PATCH, UMBRELLAS, False, False),
    ],
)
def test_an_older_umbrella_is_asked_after_every_newer_one(
    marker: str, asked: list[str], throttled: bool, balanced: bool
) -> None:
    patched, seen = history(marker)
    behaviour = TournamentBehaviour.decide(patched, task(rounds="pipelined"))
    assert seen == asked
    assert (behaviour.throttled_writes, behaviour.balanced_panel) == (throttled, balanced)
    assert behaviour.pipelined and behaviour.slot_widths == "lane"
    assert behaviour.lean_writes and behaviour.bootstrap and behaviour.sparse_opening
    assert not behaviour.adaptive_budget


def test_a_run_from_before_the_umbrellas_asks_each_patch_in_its_order() -> None:
    """The barrier run asks no pipelining patch; the pipelined one asks both, the lane widths
    only once pipelining is known."""
    patched, asked = history(*ONE_BY_ONE)
    barrier = TournamentBehaviour.decide(patched, task(rounds="barrier"))
    assert asked == UMBRELLAS + ONE_BY_ONE
    assert barrier == TournamentBehaviour(
        sparse_opening=True,
        bootstrap=True,
        incremental_writes=True,
        deferred_writes=True,
        lean_writes=True,
    )

    patched, asked = history(*ONE_BY_ONE, PIPELINED_PATCH)
    shared = TournamentBehaviour.decide(patched, task(rounds="pipelined"))
    assert asked == [*UMBRELLAS, *ONE_BY_ONE, PIPELINED_PATCH, PIPELINED_LANES_PATCH]
    assert shared.pipelined and shared.slot_widths == "run"

    patched, asked = history(PIPELINED_PATCH, PIPELINED_LANES_PATCH)
    lanes = TournamentBehaviour.decide(patched, task(rounds="pipelined"))
    assert asked[-2:] == [PIPELINED_PATCH, PIPELINED_LANES_PATCH]
    assert lanes.pipelined and lanes.slot_widths == "lane" and not lanes.lean_writes

    patched, asked = history()
    first = TournamentBehaviour.decide(patched, task(rounds="pipelined"))
    assert asked == [*UMBRELLAS, *ONE_BY_ONE, PIPELINED_PATCH]  # never pipelined: no lanes
    assert first == TournamentBehaviour(rounds="pipelined")  # asked for, never run


def test_a_run_recorded_before_likelihood_intervals_keeps_the_percentile_ones() -> None:
    patched, asked = history(PIPELINED_DEFAULT_PATCH)
    behaviour = TournamentBehaviour.decide(patched, task())
    assert asked == UMBRELLAS[:4]
    assert not behaviour.likelihood_intervals
    assert behaviour.pipelined and behaviour.slot_widths == "provider"


def test_an_adaptive_run_from_before_its_budget_share_judges_every_pair() -> None:
    adaptive = task(schedule="adaptive")
    old, _ = history(BALANCED_PANEL_PATCH)
    assert TournamentBehaviour.decide(old, adaptive).resolve(adaptive).adaptive_share == 1.0
    new, _ = new_run()
    assert TournamentBehaviour.decide(new, adaptive).resolve(adaptive).adaptive_share is None
    given = task(schedule="adaptive", adaptive_share=0.5)
    old, _ = history(BALANCED_PANEL_PATCH)
    assert TournamentBehaviour.decide(old, given).resolve(given).adaptive_share == 0.5


def test_resolve_changes_nothing_an_input_sets() -> None:
    patched, _ = new_run()
    given = task(rounds="barrier")
    assert TournamentBehaviour.decide(patched, given).resolve(given) is given


def test_a_run_recorded_before_settled_pause_writes_writes_its_pause_at_once() -> None:
    patched, asked = history(LIKELIHOOD_INTERVALS_PATCH)
    behaviour = TournamentBehaviour.decide(patched, task())
    assert asked == UMBRELLAS[:3]
    assert behaviour.likelihood_intervals and not behaviour.settled_pause_writes


def test_a_run_recorded_before_the_mixture_fits_the_additive_length_term() -> None:
    patched, asked = history(SETTLED_PAUSE_WRITES_PATCH)
    behaviour = TournamentBehaviour.decide(patched, task(length_control=True))
    assert asked == UMBRELLAS[:2]
    assert behaviour.settled_pause_writes and not behaviour.mixture_length
