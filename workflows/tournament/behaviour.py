"""Which behaviours a tournament run has: its ``workflow.patched`` answers, decided once per run.

Each behaviour below was added after runs had been recorded without it; a run started before it
replays without it. ``TournamentBehaviour.decide`` asks the patches in the run's first workflow
task, always in the same order, and the loop reads the answers as named fields instead of
threading booleans. Pure: it is handed ``workflow.patched`` (so a test can hand it a record of
the patches a history holds).

Every patch id is in a history somewhere: never rename one or change the order they are asked
in. The umbrella patches (``tournament-2026-12`` and its letters) each stand for every patch
before them, so a new run records one marker instead of one per behaviour; a later change
takes the next letter and is asked first (``docs/operating.md`` says when each can go).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from workflows.tournament.types import DEFAULT_ROUNDS, Rounds, TournamentInput

__all__ = [
    "ADAPTIVE_BUDGET_PATCH",
    "BALANCED_PANEL_PATCH",
    "BOOTSTRAP_PATCH",
    "CURRENT_PATCH",
    "DEFERRED_WRITES_PATCH",
    "INCREMENTAL_ARTIFACTS_PATCH",
    "LEAN_WRITES_PATCH",
    "LIKELIHOOD_INTERVALS_PATCH",
    "MIXTURE_LENGTH_PATCH",
    "PIPELINED_DEFAULT_PATCH",
    "PIPELINED_LANES_PATCH",
    "PIPELINED_PATCH",
    "SETTLED_PAUSE_WRITES_PATCH",
    "SPARSE_OPENING_PATCH",
    "THROTTLED_PATCH",
    "SlotWidths",
    "TournamentBehaviour",
]

SPARSE_OPENING_PATCH = "adaptive-sparse-opening"
"""An adaptive phase opens with a random matching, then champion pairs (before: a 2-regular
round, then Thompson sampling)."""
BOOTSTRAP_PATCH = "final-score-bootstrap"
"""Bootstrap intervals on the final scores."""
INCREMENTAL_ARTIFACTS_PATCH = "incremental-artifacts"
"""A run directory written phase by phase, each write adding what is new."""
DEFERRED_WRITES_PATCH = "deferred-artifact-writes"
"""A phase's write runs beside the next phase instead of in the task that ends it."""
PIPELINED_PATCH = "pipelined-rounds"
"""``rounds: "pipelined"`` is honoured (before it, every run was a barrier run)."""
PIPELINED_LANES_PATCH = "pipelined-lane-widths"
"""Pipelined: each role its own width, none run-wide."""
LEAN_WRITES_PATCH = "lean-artifact-writes"
"""Fewer artifact writes, none of them lost: a barrier run writes a population it commits with
the fit that ranks it (as a pipelined run does), and the final ranking's write is left to the
run's last one when no finalizer call comes between them. A quick run makes two writes instead
of five."""
CURRENT_PATCH = "tournament-2026-12"
"""Every patch above at once: each ``patched`` call records a marker and a search-attribute
upsert in the run's first task, and seven of them cost the server about 10 ms a run."""
THROTTLED_PATCH = "tournament-2026-12b"
"""``CURRENT_PATCH``, and writes at most one per ``write_interval_s`` of workflow time and one
when the run pauses (``artifact_writes``)."""
BALANCED_PANEL_PATCH = "tournament-2026-12c"
"""``THROTTLED_PATCH``, and an odd judge panel's presentation orders balanced across pairs
(``verdicts.call_slots``)."""
ADAPTIVE_BUDGET_PATCH = "tournament-2026-12d"
"""``BALANCED_PANEL_PATCH``, and an adaptive phase's default budget cut to
``profiles.ADAPTIVE_SHARE`` of its k-regular pairs (runs before it spent them all, as
``adaptive_share: 1`` does)."""
PIPELINED_DEFAULT_PATCH = "tournament-2026-12e"
"""``ADAPTIVE_BUDGET_PATCH``, and rounds pipelined unless the input says ``barrier`` (before
it, an input without ``rounds`` ran barrier rounds), a pipelined run's calls holding a slot of
their provider too (``slots``: a provider never gets more calls at once than the widest role
that calls it)."""

SlotWidths = Literal["run", "lane", "provider"]
"""Pipelined call slots: a run-wide width as wide as the widest role (runs before
``pipelined-lane-widths``), each role its own (runs before ``tournament-2026-12e``), or each
role its own within each provider's (``slots``)."""
LIKELIHOOD_INTERVALS_PATCH = "tournament-2026-12f"
"""``PIPELINED_DEFAULT_PATCH``, and the final scores' 95% intervals made by profile likelihood
(``likelihood_intervals``) instead of the bootstrap's percentiles, which left undefeated and
winless candidates' intervals short of their true quality."""
SETTLED_PAUSE_WRITES_PATCH = "tournament-2026-12g"
"""``LIKELIHOOD_INTERVALS_PATCH``, and a pause's write taken once the calls in flight at the
pause have landed (before, it was taken at the pause and a call landing after it reached the
files only when the run went on)."""
MIXTURE_LENGTH_PATCH = "tournament-2026-12h"
"""``SETTLED_PAUSE_WRITES_PATCH``, and ``length_control`` fitting the judge's mixture
(``length_mixture``: a share of verdicts go to the longer whatever the quality) instead of the
additive log-odds term."""


@dataclass(frozen=True)
class TournamentBehaviour:
    """One run's answers to its patches. The defaults are a run from before any of them (what
    the queries of a run refused at decode see)."""

    rounds: Rounds = "barrier"
    """What the run does, its input's ``rounds`` or, unset, the default of its day."""
    pipelined: bool = False
    """Pipelined rounds: asked for, and the run's version can run them."""
    slot_widths: SlotWidths = "run"
    sparse_opening: bool = False
    bootstrap: bool = False
    incremental_writes: bool = False
    deferred_writes: bool = False
    lean_writes: bool = False
    throttled_writes: bool = False
    balanced_panel: bool = False
    adaptive_budget: bool = False
    """An adaptive phase's default share is ``profiles.ADAPTIVE_SHARE``, not all its pairs."""
    likelihood_intervals: bool = False
    """The final scores' intervals by profile likelihood, not the resamples' percentiles."""
    settled_pause_writes: bool = False
    """A pause's write waits for the calls in flight and then takes its snapshot."""
    mixture_length: bool = False
    """``length_control`` fits the mixture, not the additive log-odds term."""

    @classmethod
    def decide(cls, patched: Callable[[str], bool], input: TournamentInput) -> TournamentBehaviour:
        """Ask ``patched`` (``workflow.patched``) in the order every recorded run asked it: a
        new run asks the newest umbrella patch only; one recorded before it replays through
        the older ones, down to the patches one by one."""
        mixture_length = patched(MIXTURE_LENGTH_PATCH)
        settled_pause_writes = mixture_length or patched(SETTLED_PAUSE_WRITES_PATCH)
        likelihood_intervals = settled_pause_writes or patched(LIKELIHOOD_INTERVALS_PATCH)
        pipelined_default = likelihood_intervals or patched(PIPELINED_DEFAULT_PATCH)
        rounds = input.rounds or (DEFAULT_ROUNDS if pipelined_default else "barrier")
        wants_pipelined = rounds == "pipelined"
        adaptive_budget = pipelined_default or patched(ADAPTIVE_BUDGET_PATCH)
        balanced_panel = adaptive_budget or patched(BALANCED_PANEL_PATCH)
        throttled = balanced_panel or patched(THROTTLED_PATCH)
        if throttled or patched(CURRENT_PATCH):
            return cls(
                rounds=rounds,
                pipelined=wants_pipelined,
                slot_widths="provider" if pipelined_default else "lane",
                sparse_opening=True,
                bootstrap=True,
                incremental_writes=True,
                deferred_writes=True,
                lean_writes=True,
                throttled_writes=throttled,
                balanced_panel=balanced_panel,
                adaptive_budget=adaptive_budget,
                likelihood_intervals=likelihood_intervals,
                settled_pause_writes=settled_pause_writes,
                mixture_length=mixture_length,
            )
        sparse_opening = patched(SPARSE_OPENING_PATCH)
        bootstrap = patched(BOOTSTRAP_PATCH)
        incremental_writes = patched(INCREMENTAL_ARTIFACTS_PATCH)
        lean_writes = patched(LEAN_WRITES_PATCH)
        deferred_writes = patched(DEFERRED_WRITES_PATCH)
        pipelined = wants_pipelined and patched(PIPELINED_PATCH)
        lanes = pipelined and patched(PIPELINED_LANES_PATCH)
        return cls(
            rounds=rounds,
            pipelined=pipelined,
            slot_widths="lane" if lanes else "run",
            sparse_opening=sparse_opening,
            bootstrap=bootstrap,
            incremental_writes=incremental_writes,
            deferred_writes=deferred_writes,
            lean_writes=lean_writes,
        )

    def resolve(self, input: TournamentInput) -> TournamentInput:
        """``input`` with the defaults this run's version gives what it leaves unset."""
        update: dict[str, object] = {}
        if input.rounds is None:
            update["rounds"] = self.rounds
        if (
            not self.adaptive_budget
            and input.schedule == "adaptive"
            and input.adaptive_share is None
        ):
            update["adaptive_share"] = 1.0
        return input.model_copy(update=update) if update else input
