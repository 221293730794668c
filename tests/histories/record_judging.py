"""Record a Tournament history with the judging patches in: both orders, a judge panel,
the sparse adaptive opening with champion pairs, and the final scores' bootstrap. Run when
that part of the Tournament changes on purpose.

.venv/bin/python -m tests.histories.record_judging
"""

from __future__ import annotations

import asyncio

from tests.histories import record_tournament
from workflows.tournament.types import TournamentInput

RUN = TournamentInput(
    task="Sort a list.",
    profile="quick",
    seed=17,
    schedule="adaptive",
    judge_orders="both",
    judges=["sim:default,accuracy=0.9", "sim:default,position_bias=0.3"],
    bootstrap_resamples=200,
)

if __name__ == "__main__":
    asyncio.run(record_tournament(RUN, "judging-history", "tournament-judging.json"))
