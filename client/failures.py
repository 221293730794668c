"""Every error a person can meet, mapped once: a code, a one-line message, the fix, an exit code.

The CLI (``client.cli``) prints ``ponder: CODE: MESSAGE`` and exits with the exit code; the MCP
server (``client.mcp.errors``) answers the same code, message and fix as a tool error. Neither
maps an exception itself.

| what was raised                         | code                                  | exit |
| --------------------------------------- | ------------------------------------- | ---- |
| ``RunFailed`` (a run ended badly)       | its failure type (``provider.auth``,  | 1    |
|                                         | ``gate-killed``, ``run.cancelled``)   |      |
| any other ``PonderError``               | its own code (``workflows.errors``)   | 2    |
| a click value out of its rule (a range) | ``input.invalid``                     | 2    |
| any other click usage error (a flag)    | ``usage.invalid``                     | 2    |
| pydantic ``ValidationError``            | ``input.invalid``                     | 2    |
| Temporal: no such workflow (NOT_FOUND)  | ``run.not_found``                     | 2    |
| Temporal: any other RPC refusal         | ``server.refused``                    | 2    |
| a run that cannot answer a query        | ``run.query_failed``                  | 2    |
| a refused update (validator or handler) | the refusal's type (a plan reason),   | 2    |
|                                         | else ``control.refused``              |      |
| a workflow failure met directly         | as ``RunFailed``                      | 1    |
| anything else (a bug)                   | ``internal.error``                    | 1    |
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import click

from client.exit_codes import EXIT_FAILED, EXIT_USAGE
from workflows.errors import PonderError
from workflows.run_ids import RUN_NOT_FOUND

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = [
    "CONTROL_REFUSED",
    "EXIT_FAILED",
    "EXIT_USAGE",
    "INTERNAL_ERROR",
    "USAGE_INVALID",
    "Failure",
    "describe",
]


USAGE_INVALID = "usage.invalid"
CONTROL_REFUSED = "control.refused"
SERVER_REFUSED = "server.refused"
QUERY_FAILED = "run.query_failed"
INTERNAL_ERROR = "internal.error"

INPUT_INVALID = "input.invalid"
"""``workflows.inputs.INPUT_INVALID`` (a test holds them equal): that module brings pydantic,
which a refusal that is not pydantic's has no use for."""

FIXES = {
    INPUT_INVALID: "check the values against the command's --help (or the tool's inputSchema)",
    RUN_NOT_FOUND: "check the id with `ponder runs` (or the list_runs tool)",
    "run.id_invalid": "use a run id matching [A-Za-z0-9][A-Za-z0-9._-]* (no slashes)",
    "worker.missing": "start `ponder worker` on the same task queue",
    "server.unavailable": "check TEMPORAL_ADDRESS, or unset it to use the embedded server",
    USAGE_INVALID: "see the command's --help",
    INTERNAL_ERROR: "see $PONDER_HOME/logs (--debug shows the traceback) and report it",
}
"""The fix of a code whose error does not say its own."""


@dataclass(frozen=True)
class Failure:
    code: str
    message: str
    """The whole one-line message (the CLI prints it after the code)."""
    fix: str
    exit_code: int
    problem: str
    """The message without the fix it ends with, when it ends with one (MCP shows them apart)."""

    def line(self) -> str:
        return f"{self.code}: {self.message}"


def describe(exc: BaseException) -> Failure:
    """The one mapping of an exception to what a person is shown (the table above).

    An instance of a class can exist only once its module is loaded, so the classes of the run
    commands (``client.runs``), pydantic and the Temporal SDK are looked up among the modules
    already loaded, never imported: a refusal made before any of them loaded (a flag, a missing
    profile) answers without their import time (a third of a second for the SDK)."""
    if isinstance(exc, PonderError):
        run_failed = _loaded_class("client.runs", "RunFailed")
        ended = run_failed is not None and isinstance(exc, run_failed)
        return _failure(exc.code, exc.message, exc.fix, EXIT_FAILED if ended else EXIT_USAGE)
    if isinstance(exc, click.BadParameter) and not isinstance(exc, click.MissingParameter):
        # A value that breaks its option's rule (a type, a range, a choice) is input.invalid,
        # the code the same value gets over MCP; usage.invalid is the command line's own shape.
        where = exc.ctx.command_path if exc.ctx is not None else "ponder"
        message = f"{where}: {exc.format_message()}"
        return _failure(INPUT_INVALID, message, f"see {where} --help", EXIT_USAGE)
    if isinstance(exc, click.UsageError):
        where = exc.ctx.command_path if exc.ctx is not None else "ponder"
        message = f"{where}: {exc.format_message()}"
        return _failure(USAGE_INVALID, message, f"see {where} --help", EXIT_USAGE)
    if isinstance(exc, click.ClickException):  # e.g. a file click could not open
        return _failure(USAGE_INVALID, exc.format_message(), FIXES[USAGE_INVALID], EXIT_USAGE)
    validation_error = _loaded_class("pydantic_core", "ValidationError")
    if validation_error is not None and isinstance(exc, validation_error):
        invalid = cast("ValidationError", exc)
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or invalid.title}: {e['msg']}"
            for e in invalid.errors()
        )
        message = f"invalid {invalid.title}: {problems}"
        return _failure(INPUT_INVALID, message, FIXES[INPUT_INVALID], EXIT_USAGE)
    if any(cls.__module__.startswith("temporalio.") for cls in type(exc).__mro__):
        sdk = _sdk_failure(exc)
        if sdk is not None:
            return sdk
    message = f"{type(exc).__name__}: {exc}"
    return _failure(INTERNAL_ERROR, message, FIXES[INTERNAL_ERROR], EXIT_FAILED)


def _loaded_class(module: str, name: str) -> type | None:
    loaded = sys.modules.get(module)
    found = getattr(loaded, name, None) if loaded is not None else None
    return found if isinstance(found, type) else None


def _sdk_failure(exc: BaseException) -> Failure | None:
    """The Temporal SDK's errors (the table above), for an exception whose class is the SDK's:
    the SDK is loaded already, so these imports cost nothing."""
    from temporalio.client import (
        WorkflowFailureError,
        WorkflowQueryFailedError,
        WorkflowUpdateFailedError,
    )
    from temporalio.service import RPCError, RPCStatusCode

    from client.runs import failure_parts

    if isinstance(exc, WorkflowFailureError):
        code, message = failure_parts(exc)
        return _failure(code, message, "see the run's trace (ponder status ID)", EXIT_FAILED)
    if isinstance(exc, WorkflowUpdateFailedError):
        cause = exc.cause
        code = _refusal_code(cause)
        said = str(getattr(cause, "message", None) or cause)
        message = f"refused: {said.removeprefix(f'{code}: ')}"  # the code is shown once
        fix = "see ponder status ID for what the run waits for"
        return _failure(code, message, fix, EXIT_USAGE)
    from temporalio.exceptions import ApplicationError

    if isinstance(exc, ApplicationError) and (exc.type or "").startswith("encryption."):
        # This process's own codec refused a payload it read (activities.codec).
        return _failure(str(exc.type), exc.message, None, EXIT_FAILED)
    if isinstance(exc, WorkflowQueryFailedError):
        return _failure(
            QUERY_FAILED,
            f"the run cannot answer that ({exc.message})",
            "check that the id names a run of the command's kind (ponder runs)",
            EXIT_USAGE,
        )
    if isinstance(exc, RPCError):
        if exc.status == RPCStatusCode.NOT_FOUND:
            message = f"no such run ({exc.message}): check the id with ponder runs"
            return _failure(RUN_NOT_FOUND, message, FIXES[RUN_NOT_FOUND], EXIT_USAGE)
        message = f"the Temporal server refused: {exc.message}"
        return _failure(SERVER_REFUSED, message, "check the run id and its state", EXIT_USAGE)
    return None


def _refusal_code(cause: BaseException | None) -> str:
    """A refused update's code: the ``ApplicationError`` type ponder gave it (a plan reason,
    ``control.refused``); a bare validator ``ValueError`` arrives typed by its class name."""
    from temporalio.exceptions import ApplicationError

    if isinstance(cause, ApplicationError) and cause.type and cause.type[0].islower():
        return cause.type
    return CONTROL_REFUSED


def _failure(code: str, message: str, fix: str | None, exit_code: int) -> Failure:
    message = " ".join(message.split())  # one line, whatever the message held
    problem, tail = _split_fix(message)
    fix = fix or tail or FIXES.get(code) or "see the message"
    return Failure(code, message, fix, exit_code, problem if tail and fix == tail else message)


def _split_fix(message: str) -> tuple[str, str | None]:
    """``problem: fix`` (ponder's one-line convention) into its parts, at the last ``": "``
    outside brackets (a fix may end in a list such as ``(built-in: quick, paper)``); no fix if
    too short, or if the message holds several problems (``p1: fix1; p2: fix2``), whose last
    fix is not the fix of the whole."""
    depth, cut = 0, -1
    for i, char in enumerate(message):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(depth - 1, 0)
        elif depth == 0 and message.startswith("; ", i):
            return message, None
        elif depth == 0 and message.startswith(": ", i):
            cut = i
    fix = message[cut + 2 :] if cut >= 0 else ""
    return (message[:cut], fix) if len(fix) >= 8 else (message, None)
