"""Input and result models of the check activities of a plan run: ``evaluate_cel`` (CEL
expressions, docs/plans.md, "Expressions, ensure, iterate and set") and ``probe_files`` (ensure
``file_exists`` / ``file_contains``).

Pure (pydantic only): the workflow and the activities both import these. An evaluation error
or a file that is not there is data (``ok: false`` / ``holds: false`` with a reason), never an
activity failure: a predicate that cannot be decided does not hold.
"""

from __future__ import annotations

from pydantic import BaseModel, Field, JsonValue

__all__ = [
    "MAX_BOUND_BYTES",
    "MAX_FILE_BYTES",
    "MAX_VALUES_BYTES",
    "MAX_VALUE_BYTES",
    "CelOutcome",
    "EvaluateCelInput",
    "EvaluateCelResult",
    "FileProbe",
    "ProbeFilesInput",
    "ProbeFilesResult",
    "ProbeOutcome",
]

MAX_BOUND_BYTES = 4 * 1024 * 1024
"""The bound JSON (``result``, ``input``, ``steps``, ...) of one evaluation, UTF-8 bytes."""
MAX_VALUE_BYTES = 256 * 1024
"""One evaluated value, as JSON (a ``set`` value lands in history and in later prompts)."""
MAX_VALUES_BYTES = 1024 * 1024
"""All values of one evaluation together (one local-activity marker in history)."""
MAX_FILE_BYTES = 16 * 1024 * 1024
"""``file_contains`` reads at most this much; a bigger file does not hold."""


class EvaluateCelInput(BaseModel):
    expressions: list[str]
    bindings: dict[str, JsonValue] = Field(default_factory=dict)


class CelOutcome(BaseModel):
    ok: bool
    value: JsonValue = None
    error: str | None = Field(default=None, description="why it has no value (<= 500 chars)")
    too_costly: bool = Field(
        default=False, description="not evaluated: the run has used its evaluation time"
    )


class EvaluateCelResult(BaseModel):
    outcomes: list[CelOutcome]


class FileProbe(BaseModel):
    path: str = Field(description="workspace-relative, rendered")
    text: str | None = Field(default=None, description="file_contains: the text; None: exists")


class ProbeFilesInput(BaseModel):
    workspace: str
    probes: list[FileProbe]


class ProbeOutcome(BaseModel):
    holds: bool
    reason: str
    escapes: bool = Field(default=False, description="the path leaves the workspace (run-fatal)")


class ProbeFilesResult(BaseModel):
    outcomes: list[ProbeOutcome]
