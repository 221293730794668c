"""Artifact path containment: a declared read or write must stay inside the workspace root.

Pure: the file system is injected (``exists``, ``realpath``), so the same rule runs at
validation (lexical part only), at preflight and again at dispatch (an activity passes the real
``os.path`` functions; a symlink planted after preflight is caught there).

Refused: an empty path, an absolute one, a control character, a ``..`` segment, and any
*existing* component whose real location leaves the root (a symlinked ancestor is caught even
when the leaf does not exist yet, which is the normal case for a write).
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["escape_problem", "lexical_problem"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def lexical_problem(rel: str) -> str | None:
    """Why ``rel`` cannot be a workspace-relative path, from its text alone (None: fine)."""
    if rel == "":
        return "an empty path"
    if _CONTROL.search(rel):
        return "a path with a control character"
    if rel.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", rel):
        return "an absolute path"
    segments = [s for s in re.split(r"[/\\]", rel) if s not in ("", ".")]
    if ".." in segments:
        return 'a path with a ".." segment'
    if not segments:
        return "an empty path"
    return None


def escape_problem(
    rel: str,
    root: str,
    *,
    exists: Callable[[str], bool],
    realpath: Callable[[str], str | None],
) -> str | None:
    """Why ``rel`` leaves ``root`` on the file system as it is now (None: contained).

    Every existing component on the way down is resolved and must stay under the real root.
    ``exists`` must not follow a final symlink (``os.path.lexists``): a dangling link to a file
    outside the root would otherwise look like a leaf not written yet.
    """
    problem = lexical_problem(rel)
    if problem is not None:
        return problem
    base = root.rstrip("/") or "/"
    real_root = realpath(base) or base
    walked = base
    for segment in (s for s in re.split(r"[/\\]", rel) if s not in ("", ".")):
        walked = f"{walked.rstrip('/')}/{segment}"
        if not exists(walked):
            # Nothing more to resolve: a component that does not exist has no children yet.
            return None
        real = realpath(walked)
        if real is None:
            return "a path component that cannot be resolved"
        if real != real_root and not real.startswith(real_root.rstrip("/") + "/"):
            return "a path whose real location is outside the workspace (a symlinked component)"
    return None
