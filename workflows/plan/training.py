"""Training pairs (docs/plans.md, "Training pairs"): the ``ponder-trainpair/1`` record, built pure.

A plan with ``training_pairs: true`` captures, at each successful settle of an agent step, the
prompt as sent and the output as a supervised pair. The workflow builds the record here (so the
activity input is bounded: at most ``MAX_IO_CHARS`` of text plus small fields) and the activity
``append_training_pair`` (``activities.plan.training``) writes it at most once, keyed by
``pair_key``. Pure: hashlib, json and pydantic only.

- **File**: ``<training_dir>/<safe(plan name)>/<run id>/<safe(step id)>.jsonl``; ``safe``
  lower-cases, maps each run of characters outside ``[a-z0-9_-]`` to ``-`` and appends 8 hex of
  the name's sha256, so no name can hold ``..`` or ``/`` and two names never share a file. The
  run id is the writing workflow's own (the activity reads it from Temporal, never from input):
  a run appends to its own files only, whatever plan name it gives.
- **Key**: sha256 over (step id, full input, full output): no run id, no time, so a retried
  append or a repeated backfill in one run finds it.
- **Truncation**: past ``MAX_IO_CHARS`` of input + output, the shorter side is kept whole if it
  is within half, else each side keeps half; a cut side ends with
  ``…[TRUNCATED n chars — sha256=<full text's>]`` and ``truncated`` records both full lengths
  and digests.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Literal

from pydantic import BaseModel, Field

__all__ = [
    "DETAIL_CHARS",
    "MAX_IO_CHARS",
    "MAX_LINE_BYTES",
    "PAIR_SCHEMA",
    "PRIVACY_NOTE",
    "AppendTrainingPairInput",
    "AppendTrainingPairResult",
    "Evaluation",
    "Provenance",
    "TrainingPair",
    "Truncation",
    "Unserializable",
    "build_pair",
    "clip_detail",
    "is_key",
    "pair_key",
    "pair_line",
    "safe_name",
    "truncate_pair",
]

PAIR_SCHEMA = "ponder-trainpair/1"
MAX_IO_CHARS = 48_000
"""Characters of input + output a record keeps (the reference's cap)."""
MAX_LINE_BYTES = 512 * 1024
"""A record line's ceiling in bytes: 48,000 characters JSON-escaped at worst (``\\uXXXX``) plus
the small fields fit well under it; the writer refuses anything longer and repairs within it."""
DETAIL_CHARS = 500
"""``capture.failed`` detail is clipped to this many characters (plus an ellipsis)."""
PRIVACY_NOTE = """\
# ponder training pairs

Each plan run with `training_pairs: true` appends here, one JSONL file per plan step of each
run (`<plan>/<run id>/<step>.jsonl`: a run writes only its own files), records of schema
`ponder-trainpair/1`: the prompt the step was sent (`input`), what it answered (`output`), with
model and family provenance.

PRIVACY: the pairs hold full prompts and outputs. They may contain your workspace's code, the
run's arguments and whatever the models were shown. Review the files before you share, publish
or train on them; nothing here is filtered.

`ts` is the capture time; for `capture_mode: backfill` (a step restored from a checkpoint) it
is when the pair was reconstructed, not when the step first ran. Each `<step>.jsonl.keys` file
lists the keys of the pairs written, so a pair is written at most once in a run: delete a
line from a `.jsonl` file and its key from the `.keys` file together.
"""
_KEY = re.compile(r"^[0-9a-f]{64}$")
_UNSAFE = re.compile(r"[^a-z0-9_-]+")


class Unserializable(ValueError):
    """The record cannot be written as UTF-8 JSON (a lone surrogate in the text, say)."""


def safe_name(name: str) -> str:
    """A file-name-safe form of a plan name or step id; distinct names stay distinct."""
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    mapped = _UNSAFE.sub("-", name.lower())[:64]
    return f"{mapped}-{digest}" if mapped else digest


def pair_key(step: str, input: str, output: str) -> str:
    blob = json.dumps([step, input, output], ensure_ascii=True)
    return hashlib.sha256(blob.encode("ascii")).hexdigest()


def is_key(key: str) -> bool:
    return bool(_KEY.match(key))


class Truncation(BaseModel):
    input_chars: int
    output_chars: int
    input_sha256: str
    output_sha256: str


class Evaluation(BaseModel):
    """Empty at capture: a grade is given later, by a reviewer (the reference's shape)."""

    grade: str | None = None
    graded_by: str | None = None
    lessons_injected: list[str] = []


class Provenance(BaseModel):
    model: str
    family: str
    role: str
    """The step's ``role`` (``qe``) if set, else its id (the reference's stage)."""
    tokens: int | None = None
    minutes: float | None = None


class TrainingPair(BaseModel):
    schema_: Literal["ponder-trainpair/1"] = Field(default="ponder-trainpair/1", alias="schema")
    plan: str
    run_id: str
    step: str
    item: int | None = None
    """The fan-out item index; None outside a region."""
    ts: str
    input: str
    output: str
    evaluation: Evaluation = Evaluation()
    provenance: Provenance
    truncated: Truncation | None = None
    capture_mode: Literal["capture", "backfill"] = "capture"
    resumed: bool = False
    key: str


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _cut(text: str, keep: int) -> str:
    if keep >= len(text):
        return text
    dropped = len(text) - keep
    return f"{text[:keep]}\n…[TRUNCATED {dropped} chars — sha256={_sha(text)}]"


def truncate_pair(input: str, output: str) -> tuple[str, str, Truncation | None]:
    if len(input) + len(output) <= MAX_IO_CHARS:
        return input, output, None
    half = MAX_IO_CHARS // 2
    if len(output) <= half:
        keep_in, keep_out = MAX_IO_CHARS - len(output), len(output)
    elif len(input) <= half:
        keep_in, keep_out = len(input), MAX_IO_CHARS - len(input)
    else:
        keep_in, keep_out = half, MAX_IO_CHARS - half
    truncated = Truncation(
        input_chars=len(input),
        output_chars=len(output),
        input_sha256=_sha(input),
        output_sha256=_sha(output),
    )
    return _cut(input, keep_in), _cut(output, keep_out), truncated


def build_pair(
    *,
    plan: str,
    run_id: str,
    step: str,
    item: int | None,
    ts: str,
    input: str,
    output: str,
    provenance: Provenance,
    capture_mode: Literal["capture", "backfill"] = "capture",
    resumed: bool = False,
) -> TrainingPair:
    kept_in, kept_out, truncated = truncate_pair(input, output)
    return TrainingPair(
        plan=plan,
        run_id=run_id,
        step=step,
        item=item,
        ts=ts,
        input=kept_in,
        output=kept_out,
        provenance=provenance,
        truncated=truncated,
        capture_mode=capture_mode,
        resumed=resumed,
        key=pair_key(step, input, output),
    )


def pair_line(pair: TrainingPair) -> str:
    """The record as one JSON line (no newline); ``Unserializable`` if it cannot be UTF-8."""
    line = json.dumps(pair.model_dump(by_alias=True), ensure_ascii=False, separators=(",", ":"))
    try:
        size = len(line.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise Unserializable(f"the text is not valid Unicode ({exc.reason})") from None
    if size > MAX_LINE_BYTES:
        raise Unserializable(f"the record is {size} bytes, over {MAX_LINE_BYTES}")
    return line


def clip_detail(text: str) -> str:
    return text if len(text) <= DETAIL_CHARS else text[:DETAIL_CHARS] + "…"


class AppendTrainingPairInput(BaseModel):
    """One record for ``append_training_pair``: the activity derives the file from ``plan``,
    ``step`` (``safe_name``) and the calling workflow's id itself, so the input cannot name a
    path or another run's file."""

    plan: str
    step: str
    line: str
    key: str
    chain: str | None = None
    """The writing workflow's ``first_execution_run_id``: its run id is claimed for it."""


class AppendTrainingPairResult(BaseModel):
    outcome: Literal["written", "dup"]
    file: str
    """The step file, relative to the training directory (``<plan>/<run id>/<step>.jsonl``)."""
    repaired: list[str] = []
    """What the writer fixed first: a torn last line dropped, a missing key restored."""
