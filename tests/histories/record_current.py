"""Record a Tournament history under ``tournament-2026-12`` (CURRENT_PATCH: every earlier
patch at once, one marker): a pipelined quick run with its bootstrap, so a change to what such a
run schedules fails its replay.

.venv/bin/python -m tests.histories.record_current
"""

from __future__ import annotations

import asyncio

from tests.histories import record_tournament
from workflows.tournament.types import TournamentInput

RUN = TournamentInput(
    task="Sort a list.", profile="quick", seed=21, model="sim:default", rounds="pipelined"
)

if __name__ == "__main__":
    asyncio.run(record_tournament(RUN, "current-history", "tournament-current.json"))
