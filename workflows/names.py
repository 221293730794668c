"""Every name other processes use to reach ponder's workflows: one place, never repeated."""

from __future__ import annotations

import re

TASK_QUEUE = "ponder"

ASK = "Ask"
TOURNAMENT = "Tournament"
PLAN_RUN = "PlanRun"
CAMPAIGN = "Campaign"

QUERY_PROGRESS = "progress"
QUERY_EVENTS = "events"
UPDATE_EXTEND_BUDGET = "extend_budget"
SIGNAL_EXTEND_BUDGET = "extend_budget_signal"

RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
"""A run id (= workflow id): also a directory name under the run store, so no ``/`` or ``..``."""
