"""The Temporal side of input decoding: a workflow takes its input as a ``RawValue``.

Every workflow declares ``@workflow.init`` and ``@workflow.run`` as ``(self, input: RawValue =
NO_INPUT)``, decodes in ``__init__`` with :func:`decode_raw` (which never raises: an exception
there would fail the workflow task, retried forever) and starts ``run`` with
``raise input_failure(error)`` when decoding failed. The payload bytes are the same as when the
parameter was typed with the model, so old histories replay and Python callers that pass the
model keep working.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel
from temporalio.api.common.v1 import Payload
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

from workflows.inputs import InputInvalid, decode_json

__all__ = ["NO_INPUT", "decode_raw", "input_failure"]

M = TypeVar("M", bound=BaseModel)

NO_INPUT = RawValue(Payload())
"""The default when a workflow is started with no input at all (refused as missing)."""


def decode_raw(model: type[M], raw: RawValue) -> M | InputInvalid:
    """The decoded input, or the refusal to raise from ``run``. Never raises."""
    encoding = raw.payload.metadata.get("encoding", b"")
    if encoding in (b"", b"binary/null"):
        return InputInvalid(f"{model.__name__}: no input given: pass one JSON object")
    if encoding != b"json/plain":
        shown = encoding.decode(errors="replace")
        return InputInvalid(f"{model.__name__}: input encoded as {shown!r}: pass one JSON object")
    try:
        return decode_json(model, raw.payload.data)
    except InputInvalid as exc:
        return exc


def input_failure(error: InputInvalid) -> ApplicationError:
    """The run's failure: FAILED at once with ``input.invalid``, never retried."""
    return ApplicationError(error.message, type=error.code, non_retryable=True)
