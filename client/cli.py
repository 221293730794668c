"""The ``ponder`` command line."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import traceback
from typing import Any, NoReturn

import click

from activities.config import Settings, load_settings
from activities.errors import ServerError
from activities.providers import DEFAULT_MODEL, MODEL_EXAMPLES, resolve_model
from client.campaign_cli import campaign as campaign_group
from client.embedded import EmbeddedServer
from client.export import export
from client.failures import EXIT_FAILED, INTERNAL_ERROR, describe
from client.mcp.cli import mcp as mcp_command
from client.plan_cli import plan as plan_group
from client.plan_run_cli import register_plan_run_commands
from client.plan_step_cli import register_plan_step_commands
from client.profile_cli import profile as profile_group
from client.runs import new_run_id, start_run, wait_or_detach
from client.runs_cli import runs as runs_command
from client.session import open_session, spawn_background_worker, terminated
from client.tournament_cli import register as register_tournament_commands
from client.worker_cli import worker_command
from worker.cli import leave
from worker.logs import configure_logging
from workflows.ask_types import AskInput, AskResult
from workflows.names import ASK
from workflows.run_ids import check_run_id

__all__ = ["cli", "main", "run_command"]

EXIT_TERMINATED = 128 + signal.SIGTERM


def _fail(message: str, code: int) -> NoReturn:
    click.echo(f"ponder: {message}", err=True)
    raise SystemExit(code)


def run_command(command: click.Command, **kwargs: Any) -> NoReturn:
    """Run a click command; a ponder error is one line and an exit code (``--debug``: traceback)."""
    try:
        _run(command, **kwargs)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            click.echo(str(exc.code), err=True)
    except KeyboardInterrupt:
        click.echo("ponder: process.interrupted: interrupted (Ctrl-C)", err=True)
        code = 128 + signal.SIGINT
    leave(code)


def _run(command: click.Command, **kwargs: Any) -> None:
    debug = "--debug" in sys.argv or os.environ.get("PONDER_DEBUG") == "1"
    configure_logging(debug=debug)
    try:
        command.main(standalone_mode=False, **kwargs)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        _fail("process.interrupted: aborted", EXIT_FAILED)
    except asyncio.CancelledError:
        if not terminated():
            raise
        _fail(
            "process.terminated: terminated (SIGTERM); open runs go on in a background worker",
            EXIT_TERMINATED,
        )
    except Exception as exc:  # ponder's, click's, Temporal's or a bug: one coded line
        if debug:
            traceback.print_exc()
        failure = describe(exc)
        line = failure.line()
        if failure.code == INTERNAL_ERROR and not debug:
            line += " (--debug shows the traceback)"
        _fail(line, failure.exit_code)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
@click.option("--config", type=click.Path(), default=None, help="Path to ponder.toml.")
@click.pass_context
def cli(ctx: click.Context, debug: bool, config: str | None) -> None:
    """ponder: durable LLM orchestration on Temporal.

    Without TEMPORAL_ADDRESS every command uses the embedded Temporal server under
    $PONDER_HOME (default ~/.ponder) and runs its own worker in-process.
    """
    ctx.obj = {"config": config}


def _settings(ctx: click.Context) -> Settings:
    return load_settings(ctx.obj["config"])


@cli.command()
@click.argument("question")
@click.option(
    "--model",
    default=DEFAULT_MODEL,
    show_default=True,
    help=f"provider:model, e.g. {MODEL_EXAMPLES}",
)
@click.option("--base-url", default=None, help="Endpoint base URL (OpenAI-compatible etc.).")
@click.option("--system", default=None, help="System prompt.")
@click.option("--temperature", type=float, default=None, help="Sampling temperature.")
@click.option("--max-output-tokens", type=int, default=None, help="Cap on the answer's tokens.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for sim draws.")
@click.option("--run-id", default=None, help="Workflow id (default: ask-<random>).")
@click.option("--detach", is_flag=True, help="Start the run, print its id and return.")
@click.option("--local-worker", is_flag=True, help="With TEMPORAL_ADDRESS: run a worker here.")
@click.pass_context
def ask(
    ctx: click.Context,
    question: str,
    model: str,
    base_url: str | None,
    system: str | None,
    temperature: float | None,
    max_output_tokens: int | None,
    seed: int,
    run_id: str | None,
    detach: bool,
    local_worker: bool,
) -> None:
    """Ask one question through Temporal and print the answer."""
    settings = _settings(ctx)
    resolve_model(model, settings, base_url=base_url, require_key=not settings.temporal_address)
    run_id = check_run_id(run_id or new_run_id("ask"))
    payload = AskInput(
        question=question,
        model=model,
        system=system,
        temperature=temperature,
        max_output_tokens=max_output_tokens,
        base_url=base_url,
        seed=seed,
        run_id=run_id,
    )

    async def go() -> AskResult | None:
        async with open_session(
            settings, local_worker=local_worker, worker=not (detach and not local_worker)
        ) as session:
            handle = await start_run(session, ASK, payload, run_id, AskResult)
            if detach:
                if session.embedded:
                    spawn_background_worker(settings)
                click.echo(run_id)
                return None
            return await wait_or_detach(session, handle)

    result = asyncio.run(go())
    if result is None:
        return
    click.echo(result.response.text)
    usage = result.response.usage
    label = " (simulated)" if result.response.simulated else ""
    click.echo(
        f"-- run {result.run_id}: {result.response.provider}:{result.response.model}{label}, "
        f"{usage.input_tokens} in / {usage.output_tokens} out tokens, "
        f"{result.response.latency_ms:.0f} ms; answer in {result.answer_path}",
        err=True,
    )


@cli.group(invoke_without_command=True)
@click.option(
    "--port",
    type=int,
    default=None,
    help="gRPC port (default: a free one; 7233 is the `temporal` CLI's default).",
)
@click.pass_context
def server(ctx: click.Context, port: int | None) -> None:
    """Run the embedded Temporal server in the foreground, with its Web UI.

    `ponder server address` prints the address of the one running.
    """
    if ctx.invoked_subcommand is not None:
        return
    settings = _settings(ctx)

    async def go() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        async with EmbeddedServer(settings.home).lease(port) as info:
            click.echo(f"Temporal server at {info.address} (pid {info.pid}, db {info.db})")
            click.echo(f"Web UI: {info.ui_url}")
            click.echo("Ctrl-C stops it once no other ponder process uses it.")
            sys.stdout.flush()
            await stop.wait()

    asyncio.run(go())


@server.command("address")
@click.option(
    "--wait",
    "wait_s",
    type=float,
    default=0.0,
    show_default=True,
    metavar="SECONDS",
    help="Wait this long for a server that is starting.",
)
@click.pass_context
def server_address(ctx: click.Context, wait_s: float) -> None:
    """Print the running embedded server's address (host:port), e.g. for TEMPORAL_ADDRESS."""
    settings = _settings(ctx)
    found = asyncio.run(EmbeddedServer(settings.home).running(wait_s))
    if found is None:
        raise ServerError(
            "server.not_running",
            f"no embedded server runs for {settings.home}: start one with `ponder server` "
            "(add --wait SECONDS if it is starting)",
        )
    click.echo(found.address)


cli.add_command(worker_command)
register_tournament_commands(cli)
cli.add_command(plan_group)
cli.add_command(profile_group)
cli.add_command(runs_command)
cli.add_command(export)
cli.add_command(mcp_command)
register_plan_run_commands(cli, plan_group)
register_plan_step_commands(cli)
cli.add_command(campaign_group)


def _remember_config(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value is not None:
        root = ctx.find_root()
        root.obj = root.obj if isinstance(root.obj, dict) else {}
        root.obj["config"] = value  # the dict every command's settings are loaded from


def accept_config_everywhere(group: click.Group) -> None:
    """``--config FILE`` after the subcommand too (``ponder ask --config F ...``), the same as
    before it (``ponder --config F ask ...``); after it wins. Added once here, to every command
    that does not declare its own (``ponder worker`` does, and falls back to the group's)."""
    for command in group.commands.values():
        if isinstance(command, click.Group):
            accept_config_everywhere(command)
        if any("--config" in param.opts for param in command.params):
            continue
        command.params.append(
            click.Option(
                ["--config"],
                type=click.Path(),
                expose_value=False,
                is_eager=True,
                callback=_remember_config,
                help="Path to ponder.toml (before or after the subcommand).",
            )
        )


accept_config_everywhere(cli)


def main() -> None:
    run_command(cli, prog_name="ponder")
