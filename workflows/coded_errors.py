"""One shape for a document's validation errors (plans, campaigns): a code from a closed table,
a path into the document and a message, collected rather than raised one by one.

Pure: standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

__all__ = ["CodedError"]


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
