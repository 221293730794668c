"""Driving ``ponder mcp`` with the SDK's own client, over stdio or HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import sys
from collections.abc import AsyncIterator
from typing import Any

import mcp_types as types
from mcp import Client, StdioServerParameters

from tests.cli import finish, start_ponder


def stdio_client(env: dict[str, str], **options: Any) -> Client:
    """A client that starts ``ponder mcp`` as its subprocess and talks over its stdio."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "client", "mcp"], env=env)
    return Client(params, read_timeout_seconds=120, **options)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


PORT_TAKEN = "address already in use"


async def start_http(
    env: dict[str, str], *args: str, listen: str = "127.0.0.1:{port}"
) -> tuple[asyncio.subprocess.Process, int]:
    """``ponder mcp --http LISTEN ARGS`` once its port answers: the process and its port.

    A free port can be taken by another process between ``free_port`` and the server's bind
    (the suite runs in parallel): only that is tried again, on another port."""
    for _ in range(3):
        port = free_port()
        process = await start_ponder("mcp", "--http", listen.format(port=port), *args, env=env)
        try:
            await wait_for_port(port, process)
        except PortTaken:
            continue
        return process, port
    raise AssertionError("three free ports were each taken before ponder mcp could bind one")


class PortTaken(AssertionError):
    pass


async def wait_for_port(
    port: int, process: asyncio.subprocess.Process, timeout: float = 60
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        if process.returncode is not None:
            done = await finish(process, timeout=30)
            failure = PortTaken if PORT_TAKEN in done.err else AssertionError
            raise failure(f"ponder mcp exited with {done.code} before listening:\n{done.err}")
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.2)
            continue
        writer.close()
        return
    raise AssertionError(f"nothing listens on {port} after {timeout}s")


@contextlib.asynccontextmanager
async def serving(env: dict[str, str], *args: str) -> AsyncIterator[int]:
    """``ponder mcp --http`` (at ``args[0]``, ``{port}`` filled in, else loopback): its port."""
    listen = args[0] if args else "127.0.0.1:{port}"
    process, port = await start_http(env, *args[1:], listen=listen)
    try:
        yield port
    finally:
        if process.returncode is None:
            process.terminate()
        await finish(process, timeout=30)


def structured(result: types.CallToolResult) -> dict[str, Any]:
    """The tool's JSON answer; a tool error fails the test with its text."""
    assert not result.is_error, result.content
    data = result.structured_content
    assert isinstance(data, dict)
    text = result.content[0]
    assert isinstance(text, types.TextContent) and json.loads(text.text) == json.loads(
        json.dumps(data, default=str)
    )
    return data


def tool_failure(result: types.CallToolResult) -> dict[str, str]:
    assert result.is_error, result.structured_content
    data = result.structured_content
    assert isinstance(data, dict)
    error: dict[str, str] = data["error"]
    return error


async def raw_request(port: int, head: str) -> str:
    """Send only a request's head (no body, whatever Content-Length says); the status line."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head.encode())
    await writer.drain()
    line = await asyncio.wait_for(reader.readline(), 10)
    writer.close()
    return line.decode().strip()
