"""``ponder mcp``: serve ponder to MCP clients over stdio (default) or streamable HTTP."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import click

from activities.errors import ConfigError
from client.mcp.http import PATH, TOKEN_ENV, Guard, allowed_hosts, is_loopback, parse_listen

if TYPE_CHECKING:
    from mcp.server import Server

    from client.mcp.backend import Backend
    from client.mcp.sampling import SessionSampler

__all__ = ["mcp"]


@click.command()
@click.option(
    "--http",
    "listen",
    default=None,
    metavar="HOST:PORT",
    help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (host default 127.0.0.1).",
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help=f"Allow a bind off loopback (needs a bearer token in ${TOKEN_ENV}).",
)
@click.option(
    "--allow-host",
    multiple=True,
    metavar="NAME",
    help="Another Host header name clients use to reach this server (e.g. a DNS name).",
)
@click.pass_context
def mcp(
    ctx: click.Context, listen: str | None, allow_remote: bool, allow_host: tuple[str, ...]
) -> None:
    """Serve ponder's tools and run resources to MCP clients (agents, chat clients).

    Runs started here belong to Temporal: they go on after this server exits (a background
    worker runs them in embedded mode) and can be followed with ponder watch.
    """
    from activities.config import load_settings, read_secret

    settings = load_settings(ctx.obj["config"])
    token = read_secret(TOKEN_ENV)  # the environment, else $PONDER_SECRETS_FILE
    where = parse_listen(listen) if listen is not None else None
    if where is not None and not is_loopback(where.host):
        if not allow_remote:
            raise ConfigError(
                "mcp.remote_refused",
                f"--http {listen}: {where.host} is not a loopback address: pass --allow-remote "
                f"(with a bearer token in ${TOKEN_ENV}) or bind 127.0.0.1",
            )
        if token is None or len(token) < 16:
            raise ConfigError(
                "mcp.token_missing",
                f"--allow-remote needs a bearer token of at least 16 characters in ${TOKEN_ENV}: "
                "set it (e.g. to the output of `openssl rand -hex 24`) and give it to clients",
            )

    # Imported here: the MCP SDK costs half a second to import, which neither `ponder mcp --help`
    # nor any other command should pay. The tools' own modules, the session and the sampling
    # worker come later, made while the server already answers (client.mcp.services).
    from client.mcp.server import build_server
    from client.mcp.services import Services
    from client.sigterm import on_sigterm, sigterm_through_the_loop, terminated

    stops: list[Callable[[], None]] = []
    """What SIGTERM does to the server, innermost last: cancel its task, or stop uvicorn."""

    @contextlib.asynccontextmanager
    async def connect() -> AsyncIterator[tuple[Backend, SessionSampler]]:
        from client.mcp.backend import Backend
        from client.mcp.sampling import SessionSampler, serving_sampling
        from client.session import open_session

        sampler = SessionSampler()
        async with (
            open_session(settings, worker=False) as session,
            # mcp: calls, to the host, on the session's (its configuration's) queue
            serving_sampling(session.client, session.settings, sampler),
        ):
            # The session routes SIGTERM to the task that opened it, a background one here:
            # SIGTERM still stops the server.
            with on_sigterm(stops[-1]):
                yield Backend(session), sampler

    async def go() -> None:
        with sigterm_through_the_loop():
            task = asyncio.current_task()
            assert task is not None

            def cancel() -> None:
                task.cancel()

            stops.append(cancel)
            # A server: it may answer for hours before a session makes it connect, so the
            # collector goes back on as it starts serving (see worker/startup.py).
            from worker.startup import imports_done

            imports_done()
            services = Services(settings, connect)
            try:
                if where is not None:
                    # Over HTTP the port opens once the tools can run, as a client that
                    # connects when it sees the port expects (a stdio client starts the
                    # process and waits for initialize instead).
                    await services.get()
                await serve(build_server(services))
            finally:
                await services.aclose()

    async def serve(server: Server[Any]) -> None:
        if where is None:
            from mcp.server.stdio import stdio_server

            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())
            return
        import uvicorn
        from mcp.server.transport_security import TransportSecuritySettings

        app = server.streamable_http_app(
            streamable_http_path=PATH,
            host=where.host,
            # The Guard checks Host, Origin, content type and token first, on every route.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        guarded = Guard(app, hosts=allowed_hosts(where, allow_host), token=token)
        click.echo(f"ponder MCP server at {where.url}", err=True)
        config = uvicorn.Config(
            guarded, host=where.host, port=where.port, log_level="warning", lifespan="on"
        )
        http_server = uvicorn.Server(config)
        # SIGTERM stops uvicorn its own way (should_exit); cancelling the task under it, as
        # other commands are stopped, makes its lifespan log a CancelledError traceback.
        stops.append(lambda: setattr(http_server, "should_exit", True))
        with on_sigterm(stops[-1]):
            await http_server.serve()
        if terminated():
            raise asyncio.CancelledError  # ends as every command SIGTERM ends: one line

    asyncio.run(go())
