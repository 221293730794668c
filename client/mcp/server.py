"""The MCP server: the tool table and resources on the official SDK's low-level ``Server``.

The low-level server, not ``MCPServer``'s decorators, because each tool's input schema is its
pydantic argument model's JSON Schema (``client.mcp.tools``), validated here with the same model
so a bad argument is refused with the field, the rule and the fix.

It answers ``initialize`` and ``tools/list`` (from ``client.mcp.tool_list``) without importing
the tools' modules or the Temporal SDK: a tool call waits for them (``client.mcp.services``).
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from client.mcp import prompts, resources
from client.mcp.errors import arguments_refused, describe, tool_error
from client.mcp.services import Services
from client.mcp.tool_list import tool_entries

if TYPE_CHECKING:
    from client.mcp.follow import ProgressFn

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


def build_server(services: Services) -> Server[Any]:
    """The server; each session that allows sampling joins the services' sampler (``mcp:``)."""
    listed = tool_entries()

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=t["name"], description=t["description"], input_schema=t["input_schema"]
                )
                for t in listed
            ]
        )

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        if params.name not in {t["name"] for t in listed}:
            names = ", ".join(t["name"] for t in listed)
            raise MCPError(
                types.INVALID_PARAMS, f"unknown tool {params.name!r}: use one of {names}"
            )
        try:
            backend, sampler = await services.get()
            from client.mcp.tools import find_tool  # loaded by services.get()

            tool = find_tool(params.name)
            assert tool is not None  # listed, so in the table
            if params.request_state is not None:
                # A later round of a call that carries mcp: calls (client/mcp/carriers.py).
                return await sampler.carriers.resume(
                    ctx, params.request_state, params.input_responses
                )
            try:
                args = tool.args.model_validate(params.arguments or {})
            except ValidationError as exc:
                raise arguments_refused(exc) or exc from None
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

        if sampler.carries(ctx, getattr(args, "wait", False) is True):
            return await sampler.carriers.carry(ctx, work)

        async def progress(done: float, total: float | None, message: str) -> None:
            await ctx.session.report_progress(done, total, message)

        return await work(progress)

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=resources.list_resources(services.settings))

    async def list_templates(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=resources.templates())

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        try:
            contents = resources.read(services.settings, str(params.uri))
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
    server.add_notification_handler(
        "notifications/initialized", types.NotificationParams, services.on_initialized
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
