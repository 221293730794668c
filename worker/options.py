"""The flags every worker takes (``python -m worker`` and ``ponder worker``), declared once.

Click alone: ``ponder worker --help`` reads them without importing the worker or the SDK.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

__all__ = ["DEPLOYMENT", "worker_options"]

DEPLOYMENT = "ponder"
"""The Worker Deployment a ``--deployment`` worker joins when it names none."""

F = TypeVar("F", bound=Callable[..., Any])

_OPTIONS = (
    click.option(
        "--task-queue",
        envvar="PONDER_TASK_QUEUE",
        default=None,
        help="Task queue to poll  [default: ponder, or ponder.toml's task_queue; on the "
        "embedded server, that name and the configuration's digest, ponder.<digest>]",
    ),
    click.option(
        "--max-concurrent-activities", default=64, show_default=True, help="Activities run at once."
    ),
    click.option(
        "--rate-limit",
        "rate_limits",
        multiple=True,
        metavar="PROVIDER=N/s",
        help="Serve PROVIDER's calls on task queue QUEUE.provider.PROVIDER at most N per second; "
        "runs started while it polls send PROVIDER's calls there.",
    ),
    click.option("--heartbeat-timeout", hidden=True, default=None, help="Removed: set per run."),
    click.option(
        "--sticky-timeout",
        default=10.0,
        show_default=True,
        help="Seconds a workflow waits for this worker's cache before moving on.",
    ),
    click.option(
        "--exit-when-idle",
        type=float,
        default=None,
        metavar="SECONDS",
        help="Exit after SECONDS with no running workflow on the task queue.",
    ),
    click.option(
        "--namespace",
        envvar="TEMPORAL_NAMESPACE",
        default=None,
        help="Temporal namespace  [default: default, or ponder.toml's namespace]",
    ),
    click.option("--tls/--no-tls", default=None, help="TLS to the cluster (on with an API key)."),
    click.option(
        "--api-key-env",
        default=None,
        metavar="NAME",
        help="Environment variable holding a hosted cluster's API key [default: TEMPORAL_API_KEY].",
    ),
    click.option(
        "--workspace-root",
        "workspace_roots",
        multiple=True,
        metavar="DIR",
        help="A directory plan runs may use as their workspace (repeatable; replaces [plans] "
        "workspace_roots). None declared: the directory the worker starts in. Ponder's home "
        "and stores are never part of a workspace.",
    ),
    click.option(
        "--metrics-bind",
        default=None,
        metavar="IP:PORT",
        help="Serve Prometheus metrics (the SDK's temporal_* and ponder's ponder_*) at "
        "http://IP:PORT/metrics  [default: ponder.toml's metrics_bind, else none]",
    ),
    click.option(
        "--deployment",
        is_flag=False,
        flag_value=DEPLOYMENT,
        default=None,
        metavar="[NAME]",
        help="Serve a version of Worker Deployment NAME (default ponder), named by the build id: "
        "short runs stay on the version that started them, plans and campaigns move to the "
        "current one. Cluster workers only; see `ponder deploy`.",
    ),
    click.option(
        "--build-id",
        envvar="PONDER_BUILD_ID",
        default=None,
        metavar="ID",
        help="This worker's build id  [default: a digest of ponder's sources and the SDK's "
        "version]",
    ),
    click.option(
        "--encrypt-run-files",
        is_flag=True,
        default=None,
        help="Encrypt every file this worker writes under runs_dir with the keyring (needs one; "
        "readers decrypt with the same keyring)  [default: ponder.toml's encrypt_run_files, "
        "else off]",
    ),
    click.option("--config", type=click.Path(), default=None, help="Path to ponder.toml."),
)


def worker_options(command: F) -> F:
    """The flags every worker takes (``python -m worker`` and ``ponder worker``), declared once."""
    for option in reversed(_OPTIONS):
        command = option(command)
    return command
