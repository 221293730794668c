"""What a plan step's model is asked: prompt assembly, contract lines and retry feedback.

Pure. A dispatch prompt is the step's rendered prompt, then its contract lines (reads, writes,
deliverable, tools, output contract, the gate verdict line), then the fan-out item, then the
upstream value (only when the step has exactly one dep). Upstream text is defanged so a quoted
``GATE: PASS`` cannot become this step's verdict: the item, the upstream block, and every value
a ``${...}`` reference splices into the prompt (``refs.render(..., splice=defang)``). A retry
after a failed output contract shows the failure (``Your previous attempt failed: ...``); an
output identical to the previous attempt's is not retried at all (the same evidence cannot pass
the second time; the step is exhausted and goes to ``on_fail`` or fails ``malformed-output``, as
in the reference engine).
"""

from __future__ import annotations

import json
from typing import Any

from workflows.plan.gates import defang
from workflows.plan.model import AgentStep, GateStep

__all__ = ["assemble_prompt", "contract_lines", "count_key", "invocation_id", "retry_feedback"]


def contract_lines(step: AgentStep | GateStep, contract: dict[str, str] | None = None) -> list[str]:
    lines = []
    if step.artifacts.reads:
        lines.append("Files to read (workspace-relative): " + ", ".join(step.artifacts.reads))
    if step.artifacts.writes:
        lines.append("Files to write (workspace-relative): " + ", ".join(step.artifacts.writes))
    if isinstance(step, AgentStep) and step.deliverable == "file":
        lines.append("Deliverable: the files above, written to disk; they are checked after you.")
    if step.tools:
        lines.append("Tools you may use: " + ", ".join(step.tools))
    if contract is not None:
        lines.append(
            "Respond with ONLY a JSON object matching this contract (field: type): "
            + json.dumps(contract, separators=(",", ":"))
        )
    if isinstance(step, GateStep):
        lines.append("End your answer with exactly one line: GATE: PASS or GATE: FAIL")
    return lines


def assemble_prompt(
    step: AgentStep | GateStep,
    rendered: str,
    *,
    contract: dict[str, str] | None = None,
    item: Any = None,
    has_item: bool = False,
    upstream: Any = None,
    redo_of: str | None = None,
    routed_because: str | None = None,
) -> str:
    """``rendered`` is the step prompt with its references resolved (``refs.render``).
    ``redo_of``: a model gate re-runs this step (its fail route); ``upstream`` is then the
    step's own previous output, shown whatever its deps, as the reference does.
    ``routed_because``: the failure whose ``on_fail`` route led here, told as the reference
    tells it."""
    parts = [rendered, *contract_lines(step, contract)]
    if routed_because is not None:
        parts.append("You were routed here because " + defang(routed_because))
    if has_item:
        text = item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)
        parts.append("This branch handles the item: " + defang(text))
    if upstream is not None and (len(step.deps) == 1 or redo_of is not None):
        text = upstream if isinstance(upstream, str) else json.dumps(upstream, ensure_ascii=False)
        label = (
            "Upstream value:"
            if redo_of is None
            else (f"Upstream value (your previous output; gate {redo_of} asked for a redo):")
        )
        parts.append(label + "\n" + defang(text))
    return "\n".join(parts)


def retry_feedback(prompt: str, *, failure: str, output: str, previous: str | None) -> str | None:
    """The prompt for a retry after a contract ``failure``, or None when ``output`` repeats the
    previous attempt's (no retry: identical evidence)."""
    if previous is not None and output == previous:
        return None
    return (
        f"{prompt}\n\nYour previous attempt failed: {failure}\nCorrect the problem and try again."
    )


def invocation_id(step_id: str, n: int, item_index: int | None = None) -> str:
    """``step[:item]#n``: the item is its index in the activated list (stable, never ambiguous
    the way arbitrary item values could be); ``n`` counts the step's dispatches from 1."""
    return f"{step_id}#{n}" if item_index is None else f"{step_id}:{item_index}#{n}"


def count_key(step_id: str, item_index: int | None) -> str:
    """What a step's dispatches are counted under (its invocation numbers): ``step[:item]``."""
    return step_id if item_index is None else f"{step_id}:{item_index}"
