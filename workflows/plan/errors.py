"""Plan validation errors: a stable code, a path into the document and a message.

Pure (pydantic only). A validator collects every error it finds instead of stopping at the
first one, so one ``ponder plan validate`` run shows the author everything to fix. Codes are
part of the public surface (tests and tools match on them); add codes, never rename them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from workflows.coded_errors import CodedError, DocumentInvalid

__all__ = ["CODES", "PlanError", "PlanInvalid", "format_path", "join_path"]

# Every code a validator may produce, with the rule it stands for (the README and the tests use
# this table; a code outside it is a bug).
CODES: dict[str, str] = {
    "document.unreadable": "the file cannot be read",
    "document.syntax": "the text is not valid JSON or YAML",
    "document.duplicate_key": "a mapping repeats a key",
    "document.not_object": "the document (or a nested part) must be a mapping",
    "document.too_large": "the document is over the size limit",
    "value.not_finite": "NaN and infinities are not allowed",
    "value.not_json": "only JSON values (no dates, sets, binary or tags) are allowed",
    "schema.unknown": "`schema` must be ponder-plan/1 or loop-plan/1",
    "field.unknown": "a key the form does not define (x-* keys are allowed on plan and step)",
    "field.missing": "a required field is absent",
    "field.type": "a value has the wrong type",
    "field.range": "a number or length is out of range",
    "field.pattern": "a string does not match its pattern",
    "field.choice": "a value is not one of the allowed values",
    "field.invalid": "a value is invalid",
    "feature.not_available": "a plan kind or field that this version refuses",
    "step.kind_unknown": "`kind` names no step kind",
    "step.field_not_for_kind": "a field that belongs to another step kind",
    "step.id_duplicate": "two steps share an id",
    "deps.unknown": "a dep names no step",
    "deps.not_earlier": "a dep must point to an earlier step",
    "deps.cycle": "deps form a cycle",
    "deps.duplicate": "a dep is listed twice",
    "ref.syntax": "a ${...} reference is malformed",
    "ref.unknown_step": "a reference names no step",
    "ref.not_earlier": "a reference must name an earlier step",
    "ref.chain_member": "a fan-out member's output is only visible inside its chain",
    "retry.needs_idempotent": "max_attempts > 1 needs idempotent: true",
    "deliverable.needs_writes": "a file deliverable must declare artifacts.writes",
    "path.escapes_root": "an artifact path is empty, absolute, has control characters or `..`",
    "gate.mode": "a gate is either a model gate (prompt) or a human gate (gate: {...})",
    "gate.route": "fail_route must name an earlier agent step or terminal:<label>",
    "gate.redos_need_route": "max_redos > 0 needs a non-terminal fail_route",
    "gate.target": "a human-gate target must name another top-level step",
    "gate.revise_needs_rounds": "on_revise needs max_rounds (on the gate or the plan)",
    "gate.revise_not_ancestor": "on_revise must target an ancestor of the gate",
    "gate.deadline": "a gate deadline is 1 s to 90 days with a default of approve or kill, "
    "and escalate.after_ms comes before it",
    "fanout.chain": "a chain must list agent steps that belong to this fan-out only",
    "fanout.member_deps": "a chain member depends only on earlier members or pre-fan-out steps",
    "fanout.member_referenced": "a step outside a chain depends on a chain member",
    "fanout.max_required": "a fan-out over a reference needs max_fanout",
    "fanout.concurrency": "concurrency must not exceed max_fanout, nor the ceiling (256)",
    "fanout.over": "`over` must be a list or one ${...} reference",
    "fanout.isolation": "isolation: worktree takes only chain members the engine dispatches",
    "join.quorum_unreachable": "quorum:N needs at least N activated items",
    "on_fail.target": "on_fail must name a later top-level agent step",
    "contract.unknown": "`out` names no contract",
    "contract.type": "a contract field type is malformed or names no contract",
    "pause.arg_duplicate": "two pauses share a resume_arg",
    "pause.schema": "a pause's JSON Schema is malformed",
    "tournament.profile": "a tournament step names an unknown profile",
    "budget.unsatisfiable": "a plan, step, fan-out or sub-flow budget is below the worst single "
    "boundary (or occurrence) it covers",
    "budget.chain_member": "a fan-out chain member's ledger is its fan-out's: budget it there",
    "flow.unknown": "a run step's flow names no flow",
    "flow.step_kind": "a flow body takes agent steps and model gates only",
    "flow.with": "a with key (or body ${input.x}) the flow's input contract lacks, or a field "
    "it requires that with does not give",
    "flow.with_too_deep": "a with value is nested more than 32 lists or mappings deep",
    "flow.output": "a flow's output must be one ${steps.<id>.output[.path]} of its own steps",
    "flow.too_large": "the walk (each run step counting its flow's children) is over 10,000 steps",
    "expr.syntax": "a CEL expression does not parse",
    "expr.too_complex": "a CEL expression is over a bound (characters, nodes, depth, nesting)",
    "expr.unknown_name": "a CEL expression names something its site does not bind",
    "expr.function": "a CEL expression calls a function or macro plans do not offer",
    "expr.dynamic_ref": 'a CEL expression reads steps other than as steps["<literal id>"]',
    "when.chain_member": "a fan-out's chain member has a when (put it on the fan-out)",
    "ensure.form": "an ensure entry is not exactly one of expr, file_exists, file_contains, judged",
    "plan.too_large": "the worst-case history passes half of Temporal's 50,000-event limit",
    "consumer.not_allowed": "dispatch: consumer on a gate, or under worktree isolation",
    "checkpoint.duplicate": "two steps commit the same checkpoint label",
    "checkpoint.not_top_level": "a checkpoint on a chain member (put it on the fan-out)",
    "checkpoint.too_many": "a plan declares at most 50 checkpoint labels",
    "loop.unsupported": "a loop-plan/1 value outside the subset ponder accepts",
    "loop.fold_unknown": "a gates/pauses/fanouts/joins entry names no matching step",
    "loop.fold_duplicate": "two gates/pauses/fanouts/joins entries fold into one step",
    "loop.fold_missing": "a gate, pause, fanout or join step has no matching entry",
    "stratum.version": "a stratum flow document must say version: 1",
    "stratum.entry": "flows.entry must name one of the document's flows",
    "stratum.construct": "a stratum step has exactly one of do, set, gate, fanout, run, evaluate",
    "stratum.unsupported": "a stratum flow key or value ponder does not run (the message names it)",
    "stratum.expression": "a stratum expression with no exact CEL translation",
    "stratum.reference": "a stratum ${...} reference with no ponder translation",
}

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


@dataclass(frozen=True)
class PlanError(CodedError):
    codes = CODES
    kind = "plan"


class PlanInvalid(DocumentInvalid):
    """A plan that did not validate; ``errors`` lists every problem found."""

    kind = "plan"


def join_path(base: str, *parts: str | int) -> str:
    """``join_path("steps[3]", "fanout", "over")`` -> ``steps[3].fanout.over``."""
    out = base
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENTIFIER.fullmatch(part):
            out += f".{part}" if out else part
        else:
            out += f"[{part!r}]"
    return out


def format_path(loc: Sequence[str | int]) -> str:
    return join_path("", *loc)
