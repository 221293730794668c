"""The Temporal side of input decoding: a workflow takes its arguments undecoded and refuses them.

Every workflow declares ``@workflow.init`` and ``@workflow.run`` as ``(self, raw: object =
NO_INPUT, *extra: object)``, decodes in ``__init__`` with :func:`decode_raw` (which never
raises: an exception there fails the workflow task, retried forever) and starts ``run`` with
``raise input_failure(error)`` when decoding failed.

Why ``*extra``: each ``--input`` of ``temporal workflow start`` is one more argument, and the
SDK calls ``__init__(*arguments)`` outside the run, so a signature that cannot take them all
raises ``TypeError`` there and the workflow task fails and retries forever. A variadic
signature also makes the SDK decode every argument without type hints (it only applies hints
whose count matches), so ``raw`` arrives as plain JSON values; :func:`decode_raw` turns them
back into JSON text and decodes that strictly, the same bytes-to-model path as before, so old
histories replay unchanged and Python callers that pass the model keep working.
"""

from __future__ import annotations

import json
from typing import TypeVar

from pydantic import BaseModel
from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

from workflows.bounds import MAX_MESSAGE_BYTES
from workflows.inputs import InputInvalid, decode_json
from workflows.run_capabilities import CAPABILITY_REQUIRED, missing_read_tokens, required_message
from workflows.run_ids import foreign_run_id_problem

__all__ = ["NO_INPUT", "decode_raw", "decode_run_input", "input_failure", "without_capability"]

M = TypeVar("M", bound=BaseModel)

NO_INPUT = RawValue(Payload())
"""The default when a workflow (or signal, update) gets no argument at all (refused as missing)."""


def decode_raw(model: type[M], raw: object, extra: tuple[object, ...] = ()) -> M | InputInvalid:
    """The decoded input, or the refusal to raise from ``run``. Never raises."""
    name = model.__name__
    if extra:
        return InputInvalid(f"{name}: {1 + len(extra)} inputs given: pass exactly one JSON object")
    if raw is None:  # a null argument (binary/null)
        return InputInvalid(f"{name}: no input given: pass one JSON object")
    if isinstance(raw, RawValue):  # the default, or a signal's or update's one argument
        return _decode_payload(model, raw.payload)
    if isinstance(raw, bytes | bytearray):  # binary/plain
        return InputInvalid(f"{name}: input is binary, not JSON: pass one JSON object")
    try:
        text = json.dumps(raw, allow_nan=True)
    except (TypeError, ValueError):  # e.g. a protobuf message: not JSON at all
        return InputInvalid(f"{name}: input is a {type(raw).__name__}: pass one JSON object")
    try:
        return decode_json(model, text)
    except InputInvalid as exc:
        return exc


def decode_run_input(
    model: type[M], raw: object, extra: tuple[object, ...] = ()
) -> M | InputInvalid:
    """:func:`decode_raw` for a workflow that writes a run directory: input whose ``run_id``
    names another run than this workflow is refused too (``workflows/run_ids.py``)."""
    decoded = decode_raw(model, raw, extra)
    if isinstance(decoded, InputInvalid):
        return decoded
    requested = getattr(decoded, "run_id", None)
    problem = foreign_run_id_problem(workflow.info().workflow_id, requested)
    if problem is not None:
        return InputInvalid(f"{model.__name__}: {problem}")
    return without_capability(decoded) or decoded


def without_capability(decoded: BaseModel) -> InputInvalid | None:
    """The refusal of input that names another run as a source (a ``replay`` model,
    ``from_checkpoint``) without that run's read token in ``calls.read_tokens``
    (``workflows/run_capabilities.py``), or None: refused before anything of it is read."""
    tokens = getattr(getattr(decoded, "calls", None), "read_tokens", {})
    missing = missing_read_tokens(decoded.model_dump(mode="json"), tokens)
    if not missing:
        return None
    message = f"{type(decoded).__name__}: {required_message(missing)}"
    return InputInvalid(message, code=CAPABILITY_REQUIRED)


def _decode_payload(model: type[M], payload: Payload) -> M | InputInvalid:
    encoding = payload.metadata.get("encoding", b"")
    if encoding in (b"", b"binary/null"):
        return InputInvalid(f"{model.__name__}: no input given: pass one JSON object")
    if encoding != b"json/plain":
        shown = encoding.decode(errors="replace")
        return InputInvalid(f"{model.__name__}: input encoded as {shown!r}: pass one JSON object")
    if len(payload.data) > MAX_MESSAGE_BYTES:  # only a signal's or an update's argument
        return InputInvalid(
            f"{model.__name__}: the message is {len(payload.data)} bytes, over the "
            f"{MAX_MESSAGE_BYTES}-byte limit for one update or signal; fix: send less (a large "
            "output belongs in a file the step names)"
        )
    try:
        return decode_json(model, payload.data)
    except InputInvalid as exc:
        return exc


def input_failure(error: InputInvalid) -> ApplicationError:
    """The run's failure: FAILED at once with ``input.invalid``, never retried."""
    return ApplicationError(error.message, type=error.code, non_retryable=True)
