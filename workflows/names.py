"""Every name other processes use to reach ponder's workflows: one place, never repeated."""

from __future__ import annotations

TASK_QUEUE = "ponder"

ASK = "Ask"
TOURNAMENT = "Tournament"
PLAN_RUN = "PlanRun"
CAMPAIGN = "Campaign"

QUERY_PROGRESS = "progress"
QUERY_EVENTS = "events"
UPDATE_EXTEND_BUDGET = "extend_budget"
SIGNAL_EXTEND_BUDGET = "extend_budget_signal"

# PlanRun control (docs/plans.md, "Control through the `temporal` CLI and Python")
QUERY_STATUS = "status"
UPDATE_RESUME = "resume"
SIGNAL_RESUME = "resume_signal"
UPDATE_RESOLVE_GATE = "resolve_gate"
SIGNAL_RESOLVE_GATE = "resolve_gate_signal"
# Consumer steps and checkpoints (docs/plans.md, "Consumer steps" and "Checkpoints")
QUERY_ISSUANCE = "issuance"
UPDATE_STEP_DONE = "step_done"
SIGNAL_STEP_DONE = "step_done_signal"
UPDATE_CHECKPOINT = "checkpoint"
SIGNAL_CHECKPOINT = "checkpoint_signal"
UPDATE_REVERT = "revert"
SIGNAL_REVERT = "revert_signal"
# Shared ledgers (docs/operating.md, "Shared ledgers")
LEDGER = "Ledger"
UPDATE_LEDGER_DRAW = "ledger_draw"
UPDATE_LEDGER_SETTLE = "ledger_settle"
UPDATE_LEDGER_EXTEND = "ledger_extend"
QUERY_LEDGER = "ledger"
SIGNAL_LEDGER_ROOM = "ledger_room"
"""Sent by a ledger to each run it refused, once it has room again (the run's name argument)."""
