"""What the client resolves into a plan run's input: its routing and its workspace.

One home for ``ponder plan run`` and the MCP ``plan_run`` tool. Routing (``executors``,
``default_family``) comes from ``ponder.toml`` (``[executors]``, ``[plans] default_family``)
overridden by flags or tool arguments, and goes into the workflow input: a worker never routes
by its own settings. The workspace is an explicit ``--workspace``, else the plan's own, else the
cwd when the plan declares or checks files or isolates a fan-out in worktrees; the worker holds
it to its declared roots.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from activities.config import Settings
from activities.errors import ConfigError
from activities.run_file_crypto import open_run_bytes
from workflows.inputs import INPUT_INVALID
from workflows.plan.model import Plan
from workflows.plan.predicates import file_predicates
from workflows.plan.preflight import declared_paths
from workflows.plan.reasons import Reason
from workflows.plan.run_types import FromCheckpoint
from workflows.plan.worktrees import isolated_fanouts
from workflows.run_ids import check_run_id

__all__ = ["check_source_checkpoint", "from_checkpoint", "routing", "run_workspace"]


def _check_executor(family: str, spec: str, where: str) -> None:
    if not family.strip():
        raise ConfigError(
            "plan.executor_invalid",
            f"{where} {family}={spec}: the family is empty; fix: FAMILY=PROVIDER:MODEL",
        )
    provider, sep, model = spec.partition(":")
    if spec and not (sep and provider and model):
        raise ConfigError(
            "plan.executor_invalid",
            f"{where} {family}={spec}: {spec!r} is not PROVIDER:MODEL; fix: give a provider "
            f"(built-in or [providers.NAME]) and a model, {family}=PROVIDER:MODEL "
            "(empty unsets it)",
        )


def routing(
    settings: Settings, executors: Mapping[str, str], default_family: str | None
) -> tuple[dict[str, str], str | None]:
    """(executors, default_family) for the run's input: ponder.toml's, then the given ones
    (flags or tool arguments) over them."""
    for family, spec in settings.executors.items():
        where = f"config {settings.config_file}: [executors]" if settings.config_file else ""
        _check_executor(family, spec, where or "[executors]")
    for family, spec in executors.items():
        _check_executor(family, spec, "--executor")
    if default_family is not None and not default_family.strip():
        raise ConfigError(
            "plan.executor_invalid", "--default-family is empty; fix: give a family such as claude"
        )
    return settings.executors | dict(executors), default_family or settings.default_family


def run_workspace(explicit: str | None, plan: Plan | None) -> str | None:
    """The workspace the input names: an explicit one (absolute), else the cwd when the plan
    needs one (declares or checks files, or runs a fan-out in git worktrees, and has no
    ``workspace`` of its own), else none (a command agent then runs in the worker's
    directory)."""
    if explicit:
        return os.path.abspath(explicit)
    if plan is None or plan.workspace:
        return None
    if not (declared_paths(plan) or file_predicates(plan) or isolated_fanouts(plan)):
        return None
    return os.getcwd()


def from_checkpoint(text: str | None, *, field: str = "--from") -> FromCheckpoint | None:
    """``--from RUN:LABEL`` (``field`` names it: the MCP argument is ``from_checkpoint``); a run
    id has no ``:``, a label may."""
    if text is None:
        return None
    run_id, sep, label = text.partition(":")
    if not sep or not label:
        raise ConfigError(
            INPUT_INVALID,
            f"{field} {text!r} must be RUN:LABEL (a run and one of its checkpoints)",
        )
    run_id = check_run_id(run_id)  # run.id_invalid, before the label's own rule
    try:
        return FromCheckpoint(run_id=run_id, label=label)
    except ValueError as exc:
        raise ConfigError(Reason.INVALID_LABEL, f"{field} {text!r}: {exc}") from None


def check_source_checkpoint(
    runs_dir: Path, point: FromCheckpoint, *, embedded: bool, field: str = "--from"
) -> None:
    """Refuse ``--from RUN:LABEL`` before a run opens when this machine's run store shows the
    run or the label is missing: ``checkpoint-not-found``, listing the labels in commit order.
    The CLI runs as the user who owns the store, so naming the labels tells nothing that user
    could not read. A run absent here is refused only with the embedded server (``embedded``:
    its worker writes this store); a cluster's worker may keep the run in a store of its own.
    Whatever this cannot decide (an unreadable or malformed file, a linked directory) is left
    to the workflow's own check, which refuses it the same way once the run opens."""
    from workflows.plan.checkpoints import (
        CHECKPOINTS_FILE,
        MAX_CHECKPOINTS_FILE_BYTES,
        restore_point,
    )

    run_dir = Path(runs_dir) / point.run_id
    if run_dir.is_symlink():
        return  # the worker refuses a linked run directory with its own code
    if not run_dir.is_dir():
        if embedded:
            raise ConfigError(
                Reason.CHECKPOINT_NOT_FOUND,
                f"{field} {point.run_id}:{point.label}: run {point.run_id} is not in the run "
                f"store {runs_dir}; fix: name a run that committed a checkpoint "
                "(ponder runs lists them)",
            )
        return
    try:
        # Bounded as the worker reads it: no link followed, no FIFO waited on, 1 MiB at most.
        fd = os.open(run_dir / CHECKPOINTS_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
            return
        raise ConfigError(
            Reason.CHECKPOINT_NOT_FOUND,
            f"{field} {point.run_id}:{point.label}: run {point.run_id} has no checkpoints (no "
            f"{CHECKPOINTS_FILE}); fix: name a run that committed a checkpoint",
        ) from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_CHECKPOINTS_FILE_BYTES:
            return
        data = open_run_bytes(f.read(MAX_CHECKPOINTS_FILE_BYTES + 1), run_dir / CHECKPOINTS_FILE)
        text = data.decode("utf-8", errors="replace")
    found, problem = restore_point(text, run_id=point.run_id, label=point.label)
    code = Reason.CHECKPOINT_NOT_FOUND
    if found is None and problem.startswith(f"{code}: "):
        raise ConfigError(
            code,
            f"{field} {point.run_id}:{point.label}: {problem.removeprefix(f'{code}: ')}; fix: "
            "name a label that run committed",
        )
