"""ponder's failures as MCP tool errors: a code, a one-line message and the fix, no traceback.

The mapping itself is ``client.failures.describe``, the one the CLI prints from; this module only
shapes its answer as MCP wants it (a tool result with ``isError``, or a JSON-RPC error).
"""

from __future__ import annotations

import mcp_types as types
from pydantic import BaseModel

from client import failures

__all__ = ["ToolFailure", "describe", "tool_error"]


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
