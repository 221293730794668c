"""One shape for a document's validation errors (plans, campaigns): a code from a closed table,
a path into the document and a message, collected rather than raised one by one; and the one
error a document that did not validate raises (``DocumentInvalid``, a ``PonderError``).

Pure: standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from workflows.errors import PonderError

__all__ = ["CodedError", "DocumentInvalid"]


@dataclass(frozen=True)
class CodedError:
    code: str
    path: str
    message: str

    codes: ClassVar[Mapping[str, str]] = {}
    """The closed table of codes a subclass accepts."""
    kind: ClassVar[str] = "document"

    def __post_init__(self) -> None:
        if self.code not in self.codes:  # a typo in a validator must fail its tests, not ship
            raise ValueError(f"unknown {self.kind} error code {self.code!r}")

    def line(self) -> str:
        return f"{self.path or '(document)'}: [{self.code}] {self.message}"

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "path": self.path, "message": self.message}


class DocumentInvalid(PonderError, ValueError):
    """A document that did not validate: ``errors`` lists every problem, ``code`` is the first's.

    ``fix`` says to fix each path listed; the message is every error's ``line()``.
    """

    kind: ClassVar[str] = "document"

    def __init__(self, errors: Sequence[CodedError]) -> None:
        self.errors = list(errors)
        code = self.errors[0].code if self.errors else "field.invalid"
        count = f", {len(self.errors)} error(s)" if len(self.errors) > 1 else ""
        message = "; ".join(e.line() for e in self.errors) or f"invalid {self.kind}"
        super().__init__(code, f"invalid {self.kind}{count}: {message}", fix="fix each path listed")
