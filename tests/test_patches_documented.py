"""Every patch id a workflow asks for is on the Patches section of the operating page: an
operator deciding which can be retired finds each one there."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PATCH_ID = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)+")


def _patch_ids() -> set[str]:
    """String constants passed to ``workflow.patched`` or named ``*_PATCH`` / in ``*_PATCHES``."""
    found: set[str] = set()
    for path in (ROOT / "workflows").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "patched":
                found.update(
                    a.value
                    for a in node.args
                    if isinstance(a, ast.Constant) and isinstance(a.value, str)
                )
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and re.search(r"PATCH(ES)?$", t.id) for t in node.targets
            ):
                found.update(
                    c.value
                    for c in ast.walk(node.value)
                    if isinstance(c, ast.Constant) and isinstance(c.value, str)
                )
    return {p for p in found if PATCH_ID.fullmatch(p)}


def test_every_patch_is_on_the_operating_page() -> None:
    page = (ROOT / "docs" / "operating.md").read_text()
    section = page.split("## Patches", 1)[1].split("\n## ", 1)[0]
    ids = _patch_ids()
    assert {"ask-ledger-waits", "plan-concurrent-bodies", "tournament-2026-12g"} <= ids
    missing = sorted(p for p in ids if f"`{p}`" not in section)
    assert not missing, f"patch ids not on docs/operating.md's Patches section: {missing}"
