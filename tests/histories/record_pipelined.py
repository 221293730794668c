"""Record a pipelined Tournament history from before ``pipelined-lane-widths``: the run-wide
width (as wide as the widest role) binds while a judging phase overlaps the calls making its
candidates, so a replay that dropped the patch would schedule other calls. Recorded with the
code before the patch (a worktree of its parent commit); kept as it was.

.venv/bin/python -m tests.histories.record_pipelined
"""

from __future__ import annotations

import asyncio

from tests.histories import record_tournament
from workflows.tournament.types import Concurrency, TournamentInput

RUN = TournamentInput(
    task="Sort a list.",
    profile="quick",
    seed=21,
    model="sim:default,latency=lognormal:30,1",
    rounds="pipelined",
    concurrency=Concurrency(generate=1, judge=1, mutate=1),
    bootstrap_resamples=0,
)

if __name__ == "__main__":
    asyncio.run(record_tournament(RUN, "pipelined-history", "tournament-pipelined-shared.json"))
