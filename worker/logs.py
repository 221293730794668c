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

__all__ = [
    "LOG_NAME",
    "METRICS_BIND_IN_USE",
    "METRICS_BUCKETS",
    "WORKER_HEARTBEAT",
    "configure_logging",
    "install_runtime",
    "log_file",
    "serve_metrics",
]

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
_metrics_bind: str | None = None

METRICS_BUCKETS: dict[str, list[float]] = {
    # A model call takes from tens of ms (a simulated one) to minutes (an agent's step).
    "ponder_model_call_latency": [
        10,
        50,
        100,
        250,
        500,
        1_000,
        2_500,
        5_000,
        10_000,
        30_000,
        60_000,
        120_000,
        300_000,
    ],
}
"""Histogram buckets of ponder's own metrics (the SDK keeps its defaults for its own)."""


def serve_metrics(bind: str | None) -> None:
    """Serve this process's metrics in Prometheus' text format at ``bind`` (``IP:PORT``): the
    SDK's own (``temporal_*``) and ponder's (``ponder_*``, activities/metrics.py and
    workflows/metrics.py). Installs the runtime now, so a taken port refuses a worker before
    it takes a lease or connects. None: no metrics."""
    global _metrics_bind, _runtime_wanted
    if bind is None:
        return
    _metrics_bind = bind
    _runtime_wanted = True
    install_runtime()


def install_runtime() -> None:
    """Before the first client connects: the Temporal runtime ``configure_logging`` asked for
    (core logs forwarded to the log file, ponder's worker heartbeat, metrics if
    ``serve_metrics`` asked). Importing the SDK takes a few hundred ms, so a command that
    never connects never pays for it."""
    global _runtime_installed, _metrics_bind
    if not _runtime_wanted or _runtime_installed:
        return
    from temporalio.runtime import (
        LogForwardingConfig,
        LoggingConfig,
        PrometheusConfig,
        Runtime,
        TelemetryConfig,
        TelemetryFilter,
    )

    metrics = None
    if _metrics_bind is not None:
        metrics = PrometheusConfig(
            bind_address=_metrics_bind, histogram_bucket_overrides=METRICS_BUCKETS
        )
    # Temporal core writes its own log lines to stderr unless they are forwarded to Python.
    core = logging.getLogger("temporalio.core")
    try:
        runtime = Runtime(
            telemetry=TelemetryConfig(
                logging=LoggingConfig(
                    filter=TelemetryFilter(core_level="WARN", other_level="ERROR"),
                    forwarding=LogForwardingConfig(logger=core),
                ),
                metrics=metrics,
            ),
            worker_heartbeat_interval=WORKER_HEARTBEAT,
        )
    except ValueError as exc:  # the SDK's only report of an exporter that did not start
        bind, _metrics_bind = str(_metrics_bind), None  # a caller that goes on serves none
        raise _metrics_refusal(bind, exc) from None
    _runtime_installed = True
    Runtime.set_default(runtime, error_if_already_set=False)


METRICS_BIND_IN_USE = "worker.metrics_bind_in_use"


def _metrics_refusal(bind: str, exc: ValueError) -> Exception:
    from activities.errors import ConfigError

    if "address" in str(exc).lower() and "invalid" in str(exc).lower():
        return ConfigError(
            "worker.metrics_bind_invalid",
            f"--metrics-bind {bind!r} is not IP:PORT (a host name is not taken): give e.g. "
            "127.0.0.1:9464, or 0.0.0.0:9464 for every interface",
        )
    return ConfigError(
        METRICS_BIND_IN_USE,
        f"--metrics-bind {bind}: cannot serve metrics there ({exc}): another process (another "
        "worker?) listens on it; give each worker its own port",
    )
