"""The codes of the notes ``ponder plan validate`` prints for a valid plan.

A note says, before anything runs, where a run will behave differently from the reference
interpreter in a way the plan's author should know. Each starts with its code (``runs-alone:
fan-out 'sections' runs alone: ...``), kebab-case like a plan run's reasons, so a script or a
reviewer can match on it; the rest of the line is for people. Codes are public: add codes,
never rename one.

Pure: standard library only.
"""

from __future__ import annotations

__all__ = ["NOTE_CODES", "note"]

NOTE_CODES: dict[str, str] = {
    "consumer-defaults": "a consumer step's reported failures or its timeout follow ponder's "
    "defaults, not the reference's",
    "runs-alone": "a step that runs alone in a concurrent plan, where the reference overlaps it",
    "limit-stops-at-reached": "a token or USD limit stops the next call once spending reaches "
    "it; the reference dispatches until spending passes it",
    "fanout-items-capped": "a translated fan-out over a flow input runs at most its first items",
    "trace-emit-required": "a loop-plan/1 plan without trace.emit: true, which a run refuses",
}
"""Each code and what a note of it tells."""


def note(code: str, text: str) -> str:
    """``code: text``; an unknown code is a bug here, never the plan's."""
    if code not in NOTE_CODES:
        raise KeyError(f"unknown note code {code!r}")
    return f"{code}: {text}"
