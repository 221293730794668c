"""The one closed enum of plan-run reasons (docs/plans.md, "Failure reasons"); the only source of
the strings.

Pure. Grouped as docs/plans.md groups them; ``GROUPS`` lets tests walk every member.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["GROUPS", "RUN_FATAL", "RUN_LEVEL", "Reason"]


class Reason(StrEnum):
    # preflight failures
    TRACE_EMIT_REQUIRED = "trace-emit-required"
    PLAN_MODEL_UNROUTABLE = "plan-model-unroutable"
    ARTIFACT_PATH_ESCAPES_ROOT = "artifact-path-escapes-root"
    SAME_FAMILY_QE_REFUSED = "same-family-qe-refused"
    RESERVATION_UNSATISFIABLE = "reservation-unsatisfiable"
    ESCALATION_UNROUTABLE = "escalation-unroutable"
    WORKTREE_UNAVAILABLE = "worktree-unavailable"
    # run failures
    DISPATCH_TIMEOUT = "dispatch-timeout"
    DISPATCH_DEAD = "dispatch-dead"
    PROMPT_OVER_CEILING = "prompt-over-ceiling"
    POLICY_REFUSAL = "policy-refusal"
    MALFORMED_OUTPUT = "malformed-output"
    GATE_VERDICT_UNPARSEABLE = "gate-verdict-unparseable"
    GATE_FAILED = "gate-failed"
    GATE_KILLED = "gate-killed"
    GATE_ROUNDS_EXHAUSTED = "gate-rounds-exhausted"
    DELIVERABLE_NOT_LANDED = "deliverable-not-landed"
    JOIN_UNSATISFIED = "join-unsatisfied"
    BUDGET_INVARIANT_VIOLATED = "budget-invariant-violated"
    BUDGET_EXTENSION_EXHAUSTED = "budget-extension-exhausted"
    WALL_EXTENSION_EXHAUSTED = "wall-extension-exhausted"
    ENSURE_FAILED = "ensure-failed"
    ITERATE_EXHAUSTED = "iterate-exhausted"
    EXPR_FAILED = "expr-failed"
    EXPR_TOO_COSTLY = "expr-too-costly"
    STEP_BUDGET_EXHAUSTED = "step-budget-exhausted"
    SUBFLOW_BUDGET_EXHAUSTED = "subflow-budget-exhausted"
    GATE_DEADLINE_EXPIRED = "gate-deadline-expired"
    WORKTREE_MERGE_CONFLICT = "worktree-merge-conflict"
    STEPS_STRANDED = "steps-stranded"
    # pauses
    BUDGET_EXHAUSTED = "budget-exhausted"
    PLAN_PAUSE = "plan-pause"
    GATE_PENDING = "gate-pending"
    CONSUMER_PENDING = "consumer-pending"
    # control refusals (answers to updates and signals)
    STALE_INPUT_REFUSED = "stale-input-refused"
    STALE_GATE_TOKEN = "stale-gate-token"
    UNKNOWN_STEP = "unknown-step"
    INVALID_DECISION = "invalid-decision"
    EXTENSION_BELOW_SPENT = "extension-below-spent"
    STALE_DISPATCH_TOKEN = "stale-dispatch-token"
    INVALID_RESULT = "invalid-result"
    INVALID_LABEL = "invalid-label"
    CHECKPOINT_NOT_FOUND = "checkpoint-not-found"
    CHECKPOINT_BUSY = "checkpoint-busy"


R = Reason
GROUPS: dict[str, tuple[Reason, ...]] = {
    "preflight": (
        R.TRACE_EMIT_REQUIRED,
        R.PLAN_MODEL_UNROUTABLE,
        R.ARTIFACT_PATH_ESCAPES_ROOT,
        R.SAME_FAMILY_QE_REFUSED,
        R.RESERVATION_UNSATISFIABLE,
        R.ESCALATION_UNROUTABLE,
        R.WORKTREE_UNAVAILABLE,
    ),
    "failure": (
        R.DISPATCH_TIMEOUT,
        R.DISPATCH_DEAD,
        R.PROMPT_OVER_CEILING,
        R.POLICY_REFUSAL,
        R.MALFORMED_OUTPUT,
        R.GATE_VERDICT_UNPARSEABLE,
        R.GATE_FAILED,
        R.GATE_KILLED,
        R.GATE_ROUNDS_EXHAUSTED,
        R.DELIVERABLE_NOT_LANDED,
        R.JOIN_UNSATISFIED,
        R.BUDGET_INVARIANT_VIOLATED,
        R.BUDGET_EXTENSION_EXHAUSTED,
        R.WALL_EXTENSION_EXHAUSTED,
        R.ENSURE_FAILED,
        R.ITERATE_EXHAUSTED,
        R.EXPR_FAILED,
        R.EXPR_TOO_COSTLY,
        R.STEP_BUDGET_EXHAUSTED,
        R.SUBFLOW_BUDGET_EXHAUSTED,
        R.GATE_DEADLINE_EXPIRED,
        R.WORKTREE_MERGE_CONFLICT,
        R.STEPS_STRANDED,
    ),
    "pause": (R.BUDGET_EXHAUSTED, R.PLAN_PAUSE, R.GATE_PENDING, R.CONSUMER_PENDING),
    "control": (
        R.STALE_INPUT_REFUSED,
        R.STALE_GATE_TOKEN,
        R.UNKNOWN_STEP,
        R.INVALID_DECISION,
        R.EXTENSION_BELOW_SPENT,
        R.STALE_DISPATCH_TOKEN,
        R.INVALID_RESULT,
        R.INVALID_LABEL,
        R.CHECKPOINT_NOT_FOUND,
        R.CHECKPOINT_BUSY,
    ),
}

RUN_FATAL: frozenset[Reason] = frozenset(
    {
        R.BUDGET_INVARIANT_VIOLATED,
        R.ARTIFACT_PATH_ESCAPES_ROOT,
        R.EXPR_FAILED,
        R.EXPR_TOO_COSTLY,
        R.WORKTREE_UNAVAILABLE,
        R.WORKTREE_MERGE_CONFLICT,
    }
)
"""Failures about the run, not one step or item: no ``on_fail`` route or region branch absorbs
them."""

RUN_LEVEL: frozenset[str] = RUN_FATAL | {
    str(R.BUDGET_EXTENSION_EXHAUSTED),
    str(R.WALL_EXTENSION_EXHAUSTED),
}
"""Failures of the run's own ledger or arithmetic: a sub-flow child meeting one fails the whole
run, never only its ``run`` step (whose ``on_fail`` does not absorb them)."""
