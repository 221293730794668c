"""A CLI agent as a subprocess: the prompt on stdin, the output on stdout.

Only agents the worker's own configuration declares can run: ``[providers.NAME]`` with
``kind = "command"`` and ``argv = [...]``, named from input as ``NAME:anything`` or
``command:NAME`` (see ``registry``). Input never supplies a path or a command line, so whoever
can start a workflow does not gain a shell on the worker.

The child gets an explicit environment (``PATH``, ``HOME``, ``LANG``, the names the endpoint's
``env`` lists, and the ``PONDER_*`` call variables), never the worker's, which holds the keys.
It runs in its own session so a timeout or a cancellation kills its whole process group.
Its output is read as it comes and bounded like an HTTP body: past ``MAX_RESPONSE_BYTES`` the
agent is killed and the call is ``provider.response_too_large``; only the tail of stderr is kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path
from typing import Any

from activities.errors import (
    ConfigError,
    DispatchError,
    ModelTimeoutError,
    ResponseTooLargeError,
)
from activities.providers.base import CallContext
from workflows.bounds import MAX_RESPONSE_BYTES
from workflows.model_types import ModelRequest, ModelResponse, Usage

__all__ = ["BASE_ENV", "CommandProvider", "command_env"]

BASE_ENV = ("PATH", "HOME", "LANG")
"""What every agent inherits from the worker; anything else must be listed in ``env``."""


def _argv(ctx: CallContext) -> list[str]:
    if ctx.endpoint.argv:
        return list(ctx.endpoint.argv)
    # The registry refuses this before dispatch; kept so no path can reach exec without argv.
    raise ConfigError(
        "model.command_undeclared",
        f"command provider {ctx.provider_name!r} has no argv: declare it in ponder.toml as "
        '[providers.NAME] kind = "command", argv = [...]',
    )


def command_env(ctx: CallContext) -> dict[str, str]:
    """The agent's whole environment: the base, the endpoint's allowlist, the call variables."""
    names = (*BASE_ENV, *ctx.endpoint.env)
    env = {name: value for name in names if (value := os.environ.get(name))}
    return env | {
        "PONDER_RUN_ID": ctx.run_id,
        "PONDER_STEP_ID": ctx.phase,
        # 1-based, as the plan trace's ``attempt`` (the call's own ``attempt`` counts from 0).
        "PONDER_ATTEMPT": str(ctx.attempt + 1),
        "PONDER_ITEM": ctx.extra_env.get("PONDER_ITEM", ""),
    }


def _kill_group(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


STDERR_TAIL = 8000
"""Bytes of an agent's stderr kept (the end: where its error is)."""


class _TooMuchOutput(Exception):
    pass


async def _exchange(process: asyncio.subprocess.Process, prompt: bytes) -> tuple[bytes, bytes]:
    """Feed ``prompt`` on stdin; stdout up to ``MAX_RESPONSE_BYTES`` (else ``_TooMuchOutput``)
    and the tail of stderr, both read as they come, so the worker never holds more."""
    assert process.stdin and process.stdout and process.stderr

    async def feed() -> None:
        stdin = process.stdin
        assert stdin is not None
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            stdin.write(prompt)
            await stdin.drain()
        stdin.close()

    async def out() -> bytes:
        assert process.stdout is not None
        chunks, size = [], 0
        while chunk := await process.stdout.read(64 * 1024):
            size += len(chunk)
            if size > MAX_RESPONSE_BYTES:
                # Read to EOF after the kill: a pipe left unread pauses its transport, and
                # then process.wait() never returns (the pipe never reports closed).
                _kill_group(process)
                while await process.stdout.read(64 * 1024):
                    pass
                raise _TooMuchOutput
            chunks.append(chunk)
        return b"".join(chunks)

    async def err() -> bytes:
        assert process.stderr is not None
        tail = b""
        while chunk := await process.stderr.read(64 * 1024):
            tail = (tail + chunk)[-STDERR_TAIL:]
        return tail

    _, stdout, stderr = await asyncio.gather(feed(), out(), err())
    await process.wait()
    return stdout, stderr


class CommandProvider:
    kind = "command"

    async def request(self, request: ModelRequest, ctx: CallContext) -> ModelResponse:
        argv = _argv(ctx)
        env = command_env(ctx)
        cwd = ctx.extra_env.get("PONDER_WORKSPACE") or os.getcwd()
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=cwd,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            raise ConfigError(
                "model.command_unstartable",
                f"command {argv[0]!r} cannot be started: {exc.strerror}",
            ) from exc
        try:
            stdout, stderr = await asyncio.wait_for(
                _exchange(process, request.prompt.encode()), ctx.endpoint.timeout_s
            )
        except _TooMuchOutput:
            await process.wait()
            error = f"{ResponseTooLargeError('').error_type}: over {MAX_RESPONSE_BYTES} bytes"
            await ctx.raw_events.record({"argv": argv, "exit_code": None, "error": error})
            raise ResponseTooLargeError(
                f"command {Path(argv[0]).name} printed more than {MAX_RESPONSE_BYTES} bytes "
                "(1 MiB), the most one call may return: have the agent write large results to "
                "files and print a summary",
                model=f"{ctx.provider_name}:{ctx.model_name}",
            ) from None
        except TimeoutError:
            _kill_group(process)
            raise ModelTimeoutError(
                f"command {Path(argv[0]).name} ran past {ctx.endpoint.timeout_s:g}s"
            ) from None
        except asyncio.CancelledError:
            _kill_group(process)
            raise
        await ctx.raw_events.record(
            {"argv": argv, "exit_code": process.returncode, "stderr": stderr.decode()[-4000:]}
        )
        if process.returncode != 0:
            raise DispatchError(
                f"command {Path(argv[0]).name} exited {process.returncode}: "
                f"{stderr.decode().strip()[-500:]}",
                body=stderr.decode(),
            )
        return self.parse_response({"text": stdout.decode()}, request, ctx)

    def parse_response(self, body: Any, request: ModelRequest, ctx: CallContext) -> ModelResponse:
        text = body["text"]
        return ModelResponse(
            text=text,
            model=ctx.model_name,
            provider=ctx.provider_name,
            usage=Usage(input_tokens=len(request.prompt) // 4, output_tokens=len(text) // 4),
        )
