"""Record a Tournament history under ``tournament-2026-12e``: a quick run whose input leaves
``rounds`` out, so it runs pipelined rounds with each provider's calls within its window; a
change to what such a run schedules fails its replay.

.venv/bin/python -m tests.histories.record_default_rounds
"""

from __future__ import annotations

import asyncio

from tests.histories import record_tournament
from workflows.tournament.types import Concurrency, RoleModels, TournamentInput

RUN = TournamentInput(
    task="Sort a list.",
    profile="quick",
    seed=21,
    model="sim:default,latency=lognormal:20,1",
    models=RoleModels(judge="sim:default"),
    concurrency=Concurrency(generate=2, judge=2, mutate=2),
)

if __name__ == "__main__":
    asyncio.run(record_tournament(RUN, "default-rounds-history", "tournament-default-rounds.json"))
