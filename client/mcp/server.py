"""The MCP server: the tool table and resources on the official SDK's low-level ``Server``.

The low-level server, not ``MCPServer``'s decorators, because each tool's input schema is its
pydantic argument model's JSON Schema (``client.mcp.tools``), validated here with the same model
so a bad argument is refused with the field, the rule and the fix.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError

from client.mcp import prompts, resources
from client.mcp.backend import Backend
from client.mcp.errors import describe, tool_error
from client.mcp.follow import ProgressFn
from client.mcp.sampling import SessionSampler
from client.mcp.tools import TOOLS

__all__ = ["build_server"]

log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "ponder runs durable LLM jobs on Temporal. Start one with think, rank, mutate or ask "
    "(wait: false returns the run id at once and the run goes on without this server); "
    "follow it with status or result; read ponder://runs/{run_id}/summary|leaderboard|"
    "comparisons|trace|report. Use provider 'sim' for a free simulated run, or model "
    "'mcp:<hint>' to run on your own model through sampling. plan estimates a "
    "tournament's calls and USD before think starts it; the prompts walk the common jobs."
)


def build_server(backend: Backend, sampler: SessionSampler | None = None) -> Server[Any]:
    """The server; with ``sampler``, each session that allows sampling joins it (``mcp:``)."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(name=t.name, description=t.description, input_schema=t.input_schema())
                for t in TOOLS.values()
            ]
        )

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        tool = TOOLS.get(params.name)
        if tool is None:
            raise MCPError(
                types.INVALID_PARAMS, f"unknown tool {params.name!r}: use one of {', '.join(TOOLS)}"
            )
        try:
            if params.request_state is not None and sampler is not None:
                # A later round of a call that carries mcp: calls (client/mcp/carriers.py).
                return await sampler.carriers.resume(
                    ctx, params.request_state, params.input_responses
                )
            args = tool.args.model_validate(params.arguments or {})
        except Exception as exc:
            return _failed(params.name, exc)

        async def work(progress: ProgressFn) -> types.CallToolResult:
            try:
                out = await tool.run(backend, args, progress)
            except Exception as exc:  # every failure is a coded tool error, never a traceback
                return _failed(params.name, exc)
            return types.CallToolResult(
                content=[types.TextContent(text=json.dumps(out, indent=1, default=str))],
                structured_content=out,
            )

        if sampler is not None and sampler.carries(ctx, getattr(args, "wait", False) is True):
            return await sampler.carriers.carry(ctx, work)

        async def progress(done: float, total: float | None, message: str) -> None:
            await ctx.session.report_progress(done, total, message)

        return await work(progress)

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=resources.list_resources(backend.settings))

    async def list_templates(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=resources.templates())

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        try:
            contents = resources.read(backend.settings, str(params.uri))
        except Exception as exc:
            failure = describe(exc)
            raise MCPError(
                types.INVALID_PARAMS,
                f"{failure.code}: {failure.message} (fix: {failure.fix})",
                failure.model_dump(),
            ) from None
        return types.ReadResourceResult(contents=[contents])

    async def list_prompts(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=prompts.list_prompts())

    async def get_prompt(
        ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        return prompts.get_prompt(params.name, params.arguments)

    server = Server(
        "ponder",
        version=_version(),
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )
    if sampler is not None:
        server.add_notification_handler(
            "notifications/initialized", types.NotificationParams, sampler.on_initialized
        )
    return server


def _failed(tool: str, exc: Exception) -> types.CallToolResult:
    log.info("tool %s refused or failed: %s", tool, describe(exc).code)
    log.debug("tool %s", tool, exc_info=True)
    return tool_error(exc)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ponder")
    except PackageNotFoundError:
        return "0"
