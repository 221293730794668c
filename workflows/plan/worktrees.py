"""Worktree-isolated fan-out (docs/plans.md, "Worktree fan-out"): names, ceilings, the landing rule,
and the models the workflow and the git activities (``activities.plan.worktrees``) exchange.

Pure (pydantic only). A region with ``fanout.isolation: worktree`` runs in five moves, each an
activity, so git never runs in workflow code:

1. **base**: a commit of the workspace at region start (untracked files too, ignored ones not),
   built through a temporary index, so HEAD, the index and every ref stay as they were;
2. **items**: each item's chain runs in its own ``git worktree add --detach`` at the base, under
   ``<run dir>/worktrees/<step>-<item>``; its patch (``diff --cached --binary`` against the base)
   is kept in the run directory, its sha256 in history, and the worktree removed;
3. the **join** decides first (part 1): unsatisfied, nothing is merged;
4. **merge**: the succeeded items' patches, in item order, by ``git apply --3way`` in a scratch
   worktree at the base; the first that fails is ``worktree-merge-conflict`` naming its item;
5. **land**, once: if the workspace still equals the base, the combined patch is applied to its
   files (never its index). After a crash (``land_decision``): equal to the merged tree, done;
   equal to the base, apply; anything else is a conflict.

Only the workspace's own subtree is compared, patched and landed: a workspace below the top of
its work tree (``prefix``) never has files outside it changed.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, Field, StringConstraints

from workflows.plan.feature_rules import isolated_fanouts

__all__ = [
    "EMPTY_TREE",
    "GIT_TIMEOUT_S",
    "MAX_GIT_OUTPUT",
    "MAX_PATCH_BYTES",
    "WORKTREES_DIR",
    "WORKTREE_TAMPERED",
    "ItemPatch",
    "LandDecision",
    "WorktreeAdded",
    "WorktreeBase",
    "WorktreeItemInput",
    "WorktreeLandInput",
    "WorktreeLanded",
    "WorktreeMergeInput",
    "WorktreeMerged",
    "WorktreePatch",
    "WorktreeProbeInput",
    "WorktreeRegionInput",
    "isolated_fanouts",
    "land_decision",
    "merge_name",
    "patch_file",
    "worktree_name",
]

WORKTREES_DIR = "worktrees"
"""Under the run directory: the items' worktrees, their patches and the scratch merge."""
MAX_PATCH_BYTES = 64 * 1024 * 1024
"""An item's patch, and the combined one, at most this many bytes (the reference's bound); a
larger one is refused as ``worktree-merge-conflict`` naming the item, so nothing lands."""
GIT_TIMEOUT_S = 120
"""One git command's wall clock; past it the command (and its process group) is killed."""
MAX_GIT_OUTPUT = 1024 * 1024
"""Bytes of a git command's output read back (ids, prefixes, conflict lists); more is cut."""
WORKTREE_TAMPERED = "worktree.tampered"
"""The cause of a run refused because a work tree's ``.git`` no longer points at the
repository ponder made it in (an agent replaced or redirected it): git would take its
configuration, and the programs that names, from wherever it points now."""
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
"""Git's empty tree: the subtree of a workspace that holds nothing git would add."""
_NAME = re.compile(r"^[a-z0-9_.:-]{1,64}-(merge|[0-9]{1,5})$")
_OID = r"^[0-9a-f]{40}([0-9a-f]{24})?$"

LandDecision = Literal["done", "apply", "conflict"]


def worktree_name(step_id: str, item_index: int) -> str:
    """``<step>-<item>``: a step id holds no ``/`` and the item suffix is digits, so the name
    is one path component that stays inside the worktrees directory."""
    return f"{step_id}-{item_index}"


def merge_name(step_id: str) -> str:
    """The scratch worktree the region's patches are merged in."""
    return f"{step_id}-merge"


def patch_file(name: str) -> str:
    """Run-dir-relative path of a worktree's patch (``merge_name``'s is the combined patch)."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not a worktree name (<step>-<item> or <step>-merge)")
    return f"{WORKTREES_DIR}/{name}.patch"


def land_decision(current: str, *, base: str, merged: str) -> LandDecision:
    """What landing does with the workspace's subtree as it is now: already the merged tree
    (a crash after the apply) is done; still the base, apply; else someone changed it."""
    if current == merged:
        return "done"
    if current == base:
        return "apply"
    return "conflict"


Oid = Annotated[str, StringConstraints(pattern=_OID)]


class WorktreeProbeInput(BaseModel):
    workspace: str


class WorktreeRegionInput(BaseModel):
    """What every move of a region names: the run (its directory), the workspace, the step."""

    run_id: str
    chain: str | None = None
    """The workflow's ``first_execution_run_id`` (the run store's writer claim)."""
    workspace: str
    step: str = Field(pattern=r"^[a-z0-9_.:-]{1,64}$")


class WorktreeBase(BaseModel):
    commit: Oid
    tree: Oid
    subtree: Oid
    """The workspace's own subtree of ``tree`` (the whole tree when it is the top)."""
    prefix: str
    """The workspace's path below the top of its work tree (``""``, or ``a/b/``)."""


class WorktreeItemInput(WorktreeRegionInput):
    item: int = Field(ge=0, le=99_999)
    base: WorktreeBase
    capture: bool = True
    """False (a failed item): remove the worktree, keep no patch."""


class WorktreeAdded(BaseModel):
    workspace: str
    """The item's workspace: the worktree's copy of the workspace directory."""


class WorktreePatch(BaseModel):
    item: int
    sha256: str | None = None
    bytes: int = 0
    files: int = 0
    over_ceiling: bool = False


class ItemPatch(BaseModel):
    item: int
    sha256: str


class WorktreeMergeInput(WorktreeRegionInput):
    base: WorktreeBase
    patches: list[ItemPatch] = Field(max_length=10_000)
    """The succeeded items' patches, merged in this order (item order)."""


class WorktreeMerged(BaseModel):
    ok: bool
    subtree: str | None = None
    """The merged workspace subtree."""
    sha256: str | None = None
    bytes: int = 0
    conflict_item: int | None = None
    detail: str = ""


class WorktreeLandInput(WorktreeRegionInput):
    base: WorktreeBase
    merged_subtree: Oid
    sha256: str


class WorktreeLanded(BaseModel):
    outcome: LandDecision
    detail: str = ""
