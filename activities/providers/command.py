"""A CLI agent as a subprocess: the prompt on stdin, the output on stdout.

``command:NAME`` names an ``argv`` list in ``[providers.NAME]`` (kind ``command``);
``command:./path`` runs an executable directly. The child runs in its own session so a
timeout or a cancellation kills its whole process group.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
from pathlib import Path
from typing import Any

from activities.errors import ConfigError, DispatchError, ModelTimeoutError
from activities.providers.base import CallContext
from workflows.model_types import ModelRequest, ModelResponse, Usage

__all__ = ["CommandProvider"]


def _argv(ctx: CallContext) -> list[str]:
    if ctx.endpoint.argv:
        return list(ctx.endpoint.argv)
    if "/" in ctx.model_name:
        return shlex.split(ctx.model_name)
    raise ConfigError(
        f"command:{ctx.model_name} is neither a path (./agent.sh) nor a [providers.NAME] "
        'table with kind = "command" and argv = [...]: add one to ponder.toml'
    )


def _kill_group(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


class CommandProvider:
    kind = "command"

    async def request(self, request: ModelRequest, ctx: CallContext) -> ModelResponse:
        argv = _argv(ctx)
        env = {
            **os.environ,
            "PONDER_RUN_ID": ctx.run_id,
            "PONDER_STEP_ID": ctx.phase,
            "PONDER_ATTEMPT": str(ctx.attempt),
            "PONDER_ITEM": ctx.extra_env.get("PONDER_ITEM", ""),
        }
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
            raise ConfigError(f"command {argv[0]!r} cannot be started: {exc.strerror}") from exc
        try:
            stdout, stderr = await asyncio.wait_for(
                process.communicate(request.prompt.encode()), ctx.endpoint.timeout_s
            )
        except TimeoutError:
            _kill_group(process)
            raise ModelTimeoutError(
                f"command {Path(argv[0]).name} ran past {ctx.endpoint.timeout_s:g}s"
            ) from None
        except asyncio.CancelledError:
            _kill_group(process)
            raise
        ctx.raw_events.append(
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
