"""ponder's failures as MCP tool errors: a code, a one-line message and the fix, no traceback.

The mapping itself is ``client.failures.describe``, the one the CLI prints from; this module only
shapes its answer as MCP wants it (a tool result with ``isError``, or a JSON-RPC error).
"""

from __future__ import annotations

import mcp_types as types
from pydantic import BaseModel, ValidationError

from activities.errors import ConfigError
from client import failures

__all__ = ["ToolFailure", "arguments_refused", "describe", "tool_error"]

_SHAPE = frozenset({"missing", "extra_forbidden"})
"""pydantic's error types for an argument left out or not known: the call's shape, not a value."""


class ToolFailure(BaseModel):
    code: str
    message: str
    fix: str


def describe(exc: BaseException) -> ToolFailure:
    """The code, message and fix of any failure a tool may meet."""
    failure = failures.describe(exc)
    return ToolFailure(code=failure.code, message=failure.problem, fix=failure.fix)


def tool_error(exc: BaseException) -> types.CallToolResult:
    failure = describe(exc)
    return types.CallToolResult(
        content=[types.TextContent(text=f"{failure.code}: {failure.message} (fix: {failure.fix})")],
        structured_content={"error": failure.model_dump()},
        is_error=True,
    )


def arguments_refused(exc: ValidationError) -> ConfigError | None:
    """A tool's arguments that do not validate, coded as the command line codes the same
    mistake: only arguments missing or unknown is ``usage.invalid`` (a missing argument, an
    unknown flag); None when a value breaks its rule (``input.invalid``, as ``describe`` says)."""
    if any(error["type"] not in _SHAPE for error in exc.errors()):
        return None
    failure = failures.describe(exc)
    return ConfigError(
        failures.USAGE_INVALID,
        failure.message,
        fix="give the arguments the tool's inputSchema names (tools/list), the required ones too",
    )
