"""ponder's failures as MCP tool errors: a code, a one-line message and the fix, no traceback."""

from __future__ import annotations

import re

import mcp_types as types
from pydantic import BaseModel, ValidationError
from temporalio.client import WorkflowFailureError
from temporalio.service import RPCError, RPCStatusCode

from activities.errors import ConfigError, NoWorkerError, PonderError, ServerError
from client.runs import failure_message
from workflows.tournament.errors import TournamentError

__all__ = ["ToolFailure", "describe", "tool_error"]

_CODED = re.compile(r"^([a-z][a-z_]*(?:\.[a-z_<>]+)+): (.*)$", re.DOTALL)

FIXES = {
    "input.invalid": "check the arguments against the tool's inputSchema",
    "run.not_found": "check the id with the list_runs tool",
    "run.id_invalid": "use a run id matching [A-Za-z0-9][A-Za-z0-9._-]* (no slashes)",
    "worker.missing": "start `ponder worker` on the same task queue",
    "server.unavailable": "check TEMPORAL_ADDRESS, or unset it to use the embedded server",
    "internal.error": "see the MCP server's log ($PONDER_HOME/logs) and report it",
}


class ToolFailure(BaseModel):
    code: str
    message: str
    fix: str


class CodedError(Exception):
    """A refusal raised by the MCP layer itself."""

    def __init__(self, code: str, message: str, fix: str | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.fix = code, message, fix


def _split(code: str, text: str) -> ToolFailure:
    """``problem: fix`` (ponder's one-line convention) into its parts."""
    text = " ".join(text.split())
    problem, sep, fix = text.rpartition(": ")
    if not sep or len(fix) < 8:
        problem, fix = text, FIXES.get(code, "see the message")
    return ToolFailure(code=code, message=problem, fix=fix)


def describe(exc: BaseException) -> ToolFailure:
    """The code, message and fix of any failure a tool may meet."""
    if isinstance(exc, CodedError):
        return ToolFailure(
            code=exc.code, message=exc.message, fix=exc.fix or FIXES.get(exc.code, "see message")
        )
    if isinstance(exc, TournamentError):
        return _split(exc.code, exc.message)
    if isinstance(exc, ValidationError):
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
        )
        return ToolFailure(code="input.invalid", message=problems, fix=FIXES["input.invalid"])
    if isinstance(exc, WorkflowFailureError):
        text = failure_message(exc)
        match = _CODED.match(text)
        if match:
            return _split(match[1], match[2])
        return ToolFailure(code="run.failed", message=text, fix="see the run's trace resource")
    if isinstance(exc, RPCError):
        if exc.status == RPCStatusCode.NOT_FOUND:
            return ToolFailure(
                code="run.not_found", message=exc.message, fix=FIXES["run.not_found"]
            )
        return ToolFailure(
            code="server.refused", message=exc.message, fix="check the run id and its state"
        )
    if isinstance(exc, PonderError):
        text = str(exc)
        match = _CODED.match(text)
        if match:
            return _split(match[1], match[2])
        if isinstance(exc, NoWorkerError):
            return _split("worker.missing", text)
        if isinstance(exc, ServerError):
            return _split("server.unavailable", text)
        code = "config.invalid" if isinstance(exc, ConfigError) else "ponder.error"
        return _split(code, text)
    return ToolFailure(
        code="internal.error", message=f"{type(exc).__name__}: {exc}", fix=FIXES["internal.error"]
    )


def tool_error(exc: BaseException) -> types.CallToolResult:
    failure = describe(exc)
    return types.CallToolResult(
        content=[types.TextContent(text=f"{failure.code}: {failure.message} (fix: {failure.fix})")],
        structured_content={"error": failure.model_dump()},
        is_error=True,
    )
