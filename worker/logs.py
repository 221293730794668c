"""A ``ponder`` process's Temporal runtime, and its logs: ``$PONDER_HOME/logs/worker.log``.

A command's in-process worker also runs other runs' tasks; their retries and tracebacks belong
in the log file. The terminal shows this run's progress and one-line errors. ``--debug`` (and a
standalone ``ponder worker``, whose output is its log) also copies warnings to stderr.
"""

from __future__ import annotations

import logging
import os
import sys
from datetime import timedelta
from pathlib import Path

__all__ = ["LOG_NAME", "WORKER_HEARTBEAT", "configure_logging", "install_runtime", "log_file"]

WORKER_HEARTBEAT = timedelta(seconds=5)
"""How often a ponder worker tells the server it is alive (the SDK's default is 60 s); a
client then knows within about two intervals that the last worker is gone."""

LOG_NAME = "worker.log"
_FORMAT = "%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"


def log_file(home: Path | None = None) -> Path:
    """``$PONDER_HOME/logs/worker.log`` (the home is known before any config is read)."""
    base = home or Path(os.environ.get("PONDER_HOME") or Path.home() / ".ponder")
    return base / "logs" / LOG_NAME


def _is_worker_command(argv: list[str]) -> bool:
    args = [a for a in argv[1:] if not a.startswith("-")]
    program = Path(argv[0]) if argv else Path()
    return (bool(args) and args[0] == "worker") or "worker" in (program.name, program.parent.name)


def configure_logging(*, debug: bool = False, argv: list[str] | None = None) -> Path:
    """Python and Temporal-core logs to the log file; returns its path."""
    path = log_file()
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler: logging.Handler = logging.FileHandler(path, encoding="utf-8", delay=True)
    except OSError:  # an unwritable home must not stop the command; its errors still print
        handler = logging.NullHandler()
    handler.setFormatter(logging.Formatter(_FORMAT))
    root.addHandler(handler)
    if debug or _is_worker_command(argv if argv is not None else sys.argv):
        stderr = logging.StreamHandler()
        stderr.setLevel(logging.WARNING)
        stderr.setFormatter(logging.Formatter(_FORMAT))
        root.addHandler(stderr)
    global _runtime_wanted
    _runtime_wanted = True  # installed by the first connect: a read of the run store needs none
    return path


_runtime_wanted = False
_runtime_installed = False


def install_runtime() -> None:
    """Before the first client connects: the Temporal runtime ``configure_logging`` asked for
    (core logs forwarded to the log file, ponder's worker heartbeat). Importing the SDK takes
    a few hundred ms, so a command that never connects never pays for it."""
    global _runtime_installed
    if not _runtime_wanted or _runtime_installed:
        return
    _runtime_installed = True
    from temporalio.runtime import (
        LogForwardingConfig,
        LoggingConfig,
        Runtime,
        TelemetryConfig,
        TelemetryFilter,
    )

    # Temporal core writes its own log lines to stderr unless they are forwarded to Python.
    core = logging.getLogger("temporalio.core")
    Runtime.set_default(
        Runtime(
            telemetry=TelemetryConfig(
                logging=LoggingConfig(
                    filter=TelemetryFilter(core_level="WARN", other_level="ERROR"),
                    forwarding=LogForwardingConfig(logger=core),
                )
            ),
            worker_heartbeat_interval=WORKER_HEARTBEAT,
        ),
        error_if_already_set=False,
    )
