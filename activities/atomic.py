"""One atomic file write: the run store, the payload store and saved profiles all write here.

Readers see the old file or the new one, never half of one; a write that fails (a full disk, a
signal) leaves no temporary file behind.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["write_atomically"]


def write_atomically(target: Path, data: bytes) -> Path:
    """Replace ``target`` whole with ``data`` (its directory must exist)."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
