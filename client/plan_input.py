"""What the client resolves into a plan run's input: its routing and its workspace.

One home for ``ponder plan run`` and the MCP ``plan_run`` tool. Routing (``executors``,
``default_family``) comes from ``ponder.toml`` (``[executors]``, ``[plans] default_family``)
overridden by flags or tool arguments, and goes into the workflow input: a worker never routes
by its own settings. The workspace is an explicit ``--workspace``, else the plan's own, else the
cwd when the plan declares or checks files or isolates a fan-out in worktrees; the worker holds
it to its declared roots.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from activities.config import Settings
from activities.errors import ConfigError
from workflows.inputs import INPUT_INVALID
from workflows.plan.model import Plan
from workflows.plan.predicates import file_predicates
from workflows.plan.preflight import declared_paths
from workflows.plan.reasons import Reason
from workflows.plan.run_types import FromCheckpoint
from workflows.plan.worktrees import isolated_fanouts
from workflows.run_ids import check_run_id

__all__ = ["from_checkpoint", "routing", "run_workspace"]


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
