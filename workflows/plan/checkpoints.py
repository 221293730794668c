"""Checkpoints (docs/plans.md, "Checkpoints"): commit the decision state, revert to it, resume from
it.

Pure. A *snapshot* is the run's decision state at a commit: the settled steps' outputs (shared,
not copied: outputs are immutable values), step states, the consumed resume arguments, gate
rounds, armed ``on_fail`` routes, per-step epochs and each settled step's fingerprint. Ledgers and
the sim index are never part of it: spending is real, and a revert loop must not buy calls back.

- ``CheckpointBook``: labels in first-commit order, a re-commit replaces, at most 50;
- ``check_label`` / ``revert_refusal``: ``invalid-label``, ``checkpoint-not-found`` (listing the
  labels in commit order), ``checkpoint-busy`` (something is in flight);
- ``fingerprint``: sha256 of a step's id, model, contract, rendered prompt and deps' outputs --
  what ``plan run --from RUN:LABEL`` compares before it restores a step instead of running it;
- ``checkpoints_json`` / ``restore_point``: the run directory's ``checkpoints.json`` (each output
  stored once, by digest), and one label read back from it;
- ``checkpoint_errors``: the validation codes ``checkpoint.duplicate``,
  ``checkpoint.not_top_level``, ``checkpoint.too_many``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from workflows.inputs import StrictModel
from workflows.plan.control import Refusal
from workflows.plan.feature_rules import MAX_CHECKPOINTS, checkpoint_errors
from workflows.plan.reasons import Reason

__all__ = [
    "CHECKPOINTS_FILE",
    "CHECKPOINTS_SCHEMA",
    "LABEL_PATTERN",
    "MAX_CHECKPOINTS",
    "MAX_CHECKPOINTS_FILE_BYTES",
    "CheckpointBook",
    "CheckpointInput",
    "CheckpointResult",
    "RestorePoint",
    "RestoredStep",
    "RevertInput",
    "RevertResult",
    "Reverted",
    "Snapshot",
    "WalkControl",
    "check_label",
    "checkpoint_errors",
    "checkpoints_json",
    "fingerprint",
    "restore_point",
    "revert_refusal",
]

LABEL_PATTERN = r"^[A-Za-z0-9_.:-]{1,64}$"
CHECKPOINTS_FILE = "checkpoints.json"
CHECKPOINTS_SCHEMA = "ponder-checkpoints/1"
MAX_CHECKPOINTS_FILE_BYTES = 1024 * 1024
"""``--from`` reads at most this much (it enters history as an activity result)."""
_LABEL = re.compile(LABEL_PATTERN)


class Reverted(Exception):
    """Unwinds the walk from the wait a revert abandoned, to where it restores the snapshot."""

    def __init__(self, label: str) -> None:
        super().__init__(label)
        self.label = label


@dataclass
class WalkControl:
    """Shared by the message handlers, the dispatcher and the waits of one run."""

    engine_calls: int = 0
    """Engine invocations in flight (a revert is refused while any is)."""
    revert_to: str | None = None
    """A revert accepted and not yet applied: every wait ends, no new dispatch starts."""
    reverts: int = 0
    """Reverts applied so far (the update's handler waits for its own)."""
    route_activation: bool = False
    """Routes and deps, not the plan order, decide what runs (``workflows.plan.activation``);
    False only where a history from before the rule replays."""
    body_limit: int = 1
    """How many of a sub-flow body's independent children may be in flight at once (the plan's
    ``concurrency``); 1 walks a body one boundary at a time, as runs from before it replay."""
    judged: bool = False
    """Model gates and tournament steps may run beside other steps under ``concurrency``
    (False: they run alone, as runs from before it replay)."""
    routed_because: dict[str, str] = field(default_factory=dict)
    """An ``on_fail`` target's scoped id -> the failure that routed the walk to it, told to the
    target's prompt as the reference tells it."""


class Snapshot(BaseModel):
    label: str
    seq: int = Field(description="the trace seq of the commit")
    committed_at: str
    by: str = Field(description="step:<id> or operator")
    outputs: dict[str, Any] = {}
    states: dict[str, str] = {}
    args: dict[str, Any] = {}
    rounds: dict[str, int] = {}
    on_fail_armed: list[str] = []
    epochs: dict[str, int] = {}
    fingerprints: dict[str, str] = {}


class CheckpointBook:
    """Labels in first-commit order; a re-commit replaces the snapshot, keeping its place."""

    def __init__(self) -> None:
        self.snapshots: dict[str, Snapshot] = {}

    def labels(self) -> list[str]:
        return list(self.snapshots)

    def commit(self, snapshot: Snapshot) -> None:
        self.snapshots[snapshot.label] = snapshot

    def get(self, label: str) -> Snapshot | None:
        return self.snapshots.get(label)

    def room_for(self, label: str, reserved: Sequence[str] = ()) -> bool:
        """Whether ``label`` may be committed by an operator: a label already kept, or room left
        beside the plan's own labels (``reserved``), so a step's commit always fits."""
        if label in self.snapshots:
            return True
        taken = set(self.snapshots) | set(reserved)
        return len(taken | {label}) <= MAX_CHECKPOINTS


class CheckpointInput(StrictModel):
    """``checkpoint``: ``{"label": "before-ship"}``."""

    label: str = ""


class RevertInput(StrictModel):
    """``revert``: ``{"label": "before-ship"}``."""

    label: str = ""


class CheckpointResult(BaseModel):
    label: str
    settled: list[str]
    labels: list[str]


class RevertResult(BaseModel):
    label: str
    restored: list[str] = Field(description="steps settled in the snapshot")
    resumes_at: str | None = Field(description="the first unsettled step, where the walk goes on")
    rotated: int = Field(description="live gate and dispatch tokens made stale")


def check_label(label: str) -> Refusal | None:
    if not _LABEL.fullmatch(label):
        return Refusal(
            Reason.INVALID_LABEL,
            f"label {json.dumps(label)[:80]} must match {LABEL_PATTERN} (1-64 letters, digits, "
            "_ . : -); fix: rename it",
        )
    return None


def revert_refusal(book: CheckpointBook, label: str, *, busy: str | None) -> Refusal | None:
    """``busy``: why the run cannot revert now (something in flight), or None."""
    bad = check_label(label)
    if bad is not None:
        return bad
    if book.get(label) is None:
        labels = ", ".join(book.labels()) or "none committed yet"
        return Refusal(
            Reason.CHECKPOINT_NOT_FOUND,
            f"no checkpoint {label!r} (labels in commit order: {labels})",
        )
    if busy is not None:
        return Refusal(
            Reason.CHECKPOINT_BUSY,
            f"cannot revert while {busy}; a revert waits for a settled moment (a gate, a pause, "
            "a budget or consumer wait); fix: try again then",
        )
    return None


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def fingerprint(
    step_id: str,
    *,
    model: str | None,
    contract: Mapping[str, str] | None,
    rendered: str,
    deps_outputs: Sequence[Any],
) -> str:
    """What must be equal for a settled step to be reused instead of run: its id, the model it
    ran on, its output contract, its rendered prompt (or, for a step without one, its rendered
    definition) and the outputs of its deps, in order."""
    digest = hashlib.sha256()
    for part in (step_id, model, contract, rendered, list(deps_outputs)):
        body = _canonical(part)
        digest.update(len(body).to_bytes(8, "big"))
        digest.update(body)
    return "sha256:" + digest.hexdigest()


def _digest(value: Any) -> str:
    return hashlib.sha256(_canonical(value)).hexdigest()[:32]


def checkpoints_json(book: CheckpointBook, *, run_id: str, plan: str) -> str:
    """Every label with its settled steps; each distinct output stored once, by digest."""
    values: dict[str, Any] = {}
    labels = []
    for snap in book.snapshots.values():
        steps = {}
        for step_id, state in snap.states.items():
            if state != "settled" or step_id not in snap.outputs:
                continue
            key = _digest(snap.outputs[step_id])
            values.setdefault(key, snap.outputs[step_id])
            steps[step_id] = {"output": key, "fingerprint": snap.fingerprints.get(step_id)}
        labels.append(
            {
                "label": snap.label,
                "seq": snap.seq,
                "committed_at": snap.committed_at,
                "by": snap.by,
                "args": snap.args,
                "steps": steps,
            }
        )
    doc = {
        "schema": CHECKPOINTS_SCHEMA,
        "run_id": run_id,
        "plan": plan,
        "checkpoints": labels,
        "outputs": values,
    }
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


class RestoredStep(BaseModel):
    fingerprint: str | None
    output: Any


class RestorePoint(BaseModel):
    """One label of another run's ``checkpoints.json``: what ``--from`` may reuse."""

    run_id: str
    label: str
    plan: str
    args: dict[str, Any] = {}
    steps: dict[str, RestoredStep] = {}


def restore_point(text: str, *, run_id: str, label: str) -> tuple[RestorePoint | None, str]:
    """(the label's restore point, "") or (None, why not: the codes ``checkpoint-not-found``
    and ``input.invalid`` lead the message)."""
    try:
        doc = json.loads(text)
        if not isinstance(doc, dict) or doc.get("schema") != CHECKPOINTS_SCHEMA:
            raise ValueError(f"not a {CHECKPOINTS_SCHEMA} document")
        values = doc["outputs"]
        entries = doc["checkpoints"]
        if not isinstance(values, dict) or not isinstance(entries, list):
            raise ValueError("outputs and checkpoints are malformed")
    except (ValueError, KeyError, TypeError) as exc:
        return None, f"input.invalid: run {run_id}'s {CHECKPOINTS_FILE} is unreadable ({exc})"
    found = [e for e in entries if isinstance(e, dict) and e.get("label") == label]
    if not found:
        labels = ", ".join(str(e.get("label")) for e in entries if isinstance(e, dict)) or "none"
        return None, (
            f"checkpoint-not-found: run {run_id} has no checkpoint {label!r} (labels in commit "
            f"order: {labels})"
        )
    entry = found[0]
    try:
        steps = {
            step_id: RestoredStep(fingerprint=ref.get("fingerprint"), output=values[ref["output"]])
            for step_id, ref in dict(entry.get("steps") or {}).items()
        }
        point = RestorePoint(
            run_id=run_id,
            label=label,
            plan=str(doc.get("plan", "")),
            args=dict(entry.get("args") or {}),
            steps=steps,
        )
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        return None, f"input.invalid: checkpoint {label!r} of run {run_id} is malformed ({exc})"
    return point, ""
