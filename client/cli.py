"""The ``ponder`` command line.

Subcommands load when they are used (``LazyGroup``): ``ponder --help`` imports none of them and
``ponder ask`` only what ``ask`` needs, never the campaign statistics, plan validator or MCP SDK
of the others. Heavy imports stay out of this module for the same reason.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from typing import Any, NoReturn

import click

from client.lazy_group import LazyGroup
from worker.exits import leave
from worker.startup import start_process

__all__ = ["COMMANDS", "cli", "exit_code", "main", "run_command"]

EXIT_TERMINATED = 128 + signal.SIGTERM

COMMANDS: dict[str, tuple[str, str]] = {
    # name: ("module:attribute", the help `ponder --help` lists). The attribute is a command or a
    # function that builds one; tests/test_cli_lazy.py checks each help is the command's own.
    "ask": ("client.ask_cli:ask", "Ask one question through Temporal and print the answer."),
    "campaign": (
        "client.campaign_cli:campaign",
        "Campaigns: variants x scenarios x seeds, ending in a report that says what to promote.",
    ),
    "cancel": (
        "client.tournament_control:cancel",
        "Cancel a run: calls in flight finish and are recorded, artifacts are written.",
    ),
    "checkpoint": (
        "client.plan_step_cli:checkpoint",
        "Commit a plan run's settled state under LABEL (re-committing a label replaces it).",
    ),
    "codec-server": (
        "client.codec_server:codec_server",
        "Decrypt payloads for `temporal workflow show --codec-endpoint` and the Web UI.",
    ),
    "deploy": (
        "client.deploy_cli:deploy",
        "A cluster's Worker Deployment: which build takes new runs, which still drains.",
    ),
    "export": (
        "client.export:export",
        "Write one run as a portable bundle (json, jsonl or markdown); secrets never included.",
    ),
    "extend": (
        "client.tournament_control:extend",
        "Raise a run's budget limits; a paused run continues where it stopped.",
    ),
    "gate": (
        "client.plan_run_cli:gate",
        "Decide a plan run's pending human gate (the token is read from status).",
    ),
    "ledger": (
        "client.ledger_cli:ledger",
        "Shared spend ledgers: one budget every run started with --ledger NAME draws on.",
    ),
    "mcp": (
        "client.mcp.cli:mcp",
        "Serve ponder's tools and run resources to MCP clients (agents, chat clients).",
    ),
    "mutate": (
        "client.tournament_services:mutate",
        "Improve one candidate answer (FILE) from a critique (one mutate call).",
    ),
    "plan": (
        "client.plan_run_cli:plan_commands",
        "Plans: validate, run and extend ponder-plan/1, loop-plan/1 and stratum flow documents.",
    ),
    "profile": (
        "client.profile_cli:profile",
        "Saved profiles: reuse a configuration with ponder think --profile NAME.",
    ),
    "rank": (
        "client.tournament_services:rank",
        "Rank candidate answers (one per FILE, id = file name) by pairwise judging.",
    ),
    "report": (
        "client.report_cli:report",
        "Print the path of a run's report.html (re-rendered from its run directory).",
    ),
    "resume": (
        "client.plan_run_cli:resume",
        "Give a paused plan run the argument it waits for (first value wins).",
    ),
    "revert": (
        "client.plan_step_cli:revert",
        "Go back to checkpoint LABEL while the run waits (a gate, a pause, a budget, a consumer): "
        "live tokens rotate, the walk goes on at the first step unsettled in it.",
    ),
    "runs": (
        "client.runs_cli:runs",
        "List runs (kind, status, created, calls, USD, winner or outcome), newest first.",
    ),
    "server": (
        "client.server_cli:server",
        "Run the embedded Temporal server in the foreground, with its Web UI.",
    ),
    "status": (
        "client.status_cli:status",
        "Show a run's progress: status, phase, budget, leaderboard top 5 (or an Ask's answer).",
    ),
    "step-done": (
        "client.plan_step_cli:step_done",
        "Answer a consumer step's issuance (its prompt: the issuance query, or status).",
    ),
    "think": (
        "client.tournament_cli:think",
        "Run a tournament on TASK (or @file): generate, judge, rank, mutate, rank again.",
    ),
    "top": (
        "client.top_cli:top",
        "Watch a server: runs by state, calls and spend per provider, pauses, backlog.",
    ),
    "watch": (
        "client.tournament_control:watch",
        "Follow a run until it completes, fails or pauses (Ctrl-C detaches again).",
    ),
    "worker": (
        "client.worker_cli:worker_command",
        "Run a worker: TEMPORAL_ADDRESS for a cluster (TEMPORAL_API_KEY, TEMPORAL_TLS=1 for a "
        "hosted one), else the embedded server.",
    ),
}


def _fail(message: str, code: int) -> NoReturn:
    click.echo(f"ponder: {message}", err=True)
    raise SystemExit(code)


def run_command(command: click.Command, **kwargs: Any) -> NoReturn:
    """Run a click command and leave the process with its exit code (``exit_code``)."""
    leave(exit_code(command, **kwargs))


def exit_code(command: click.Command, **kwargs: Any) -> int:
    """Run a click command; a ponder error is one line and an exit code (``--debug``: traceback).

    Returns the code instead of leaving, so the suite can run a command that never connects (a
    dry run, a refusal) in its own process and check the same lines and codes."""
    try:
        _run(command, **kwargs)
        return 0
    except SystemExit as exc:
        if exc.code is not None and not isinstance(exc.code, int):
            click.echo(str(exc.code), err=True)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:
        click.echo("ponder: process.interrupted: interrupted (Ctrl-C)", err=True)
        return 128 + signal.SIGINT


def _debug() -> bool:
    return "--debug" in sys.argv or os.environ.get("PONDER_DEBUG") == "1"


class _ReaderGone(BaseException):
    """Stdout's reader left early (``| head``, ``| grep -q``). A ``BaseException``, so that no
    handler on the way mistakes it for the command's own failure."""


class _StdoutGuard:
    """Stdout, raising ``_ReaderGone`` where a write meets a closed pipe. Click would turn that
    ``BrokenPipeError`` into a quiet exit 1, which fails a pipeline under ``set -o pipefail``."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except BrokenPipeError:
            raise _ReaderGone from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise _ReaderGone from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _run(command: click.Command, **kwargs: Any) -> None:
    real_stdout = sys.stdout
    sys.stdout = _StdoutGuard(real_stdout)  # type: ignore[assignment]
    try:
        _run_guarded(command, **kwargs)
    except _ReaderGone:
        # The reader took what it wanted: not a failure, so the pipeline goes on. Whatever is
        # still buffered goes nowhere.
        os.dup2(os.open(os.devnull, os.O_WRONLY), real_stdout.fileno())
        raise SystemExit(0) from None
    finally:
        sys.stdout = real_stdout  # the suite runs commands in its own process too


def _run_guarded(command: click.Command, **kwargs: Any) -> None:
    debug = _debug()
    try:
        command.main(standalone_mode=False, **kwargs)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        from client.exit_codes import EXIT_FAILED

        _fail("process.interrupted: aborted", EXIT_FAILED)
    except Exception as exc:  # ponder's, click's, Temporal's or a bug: one coded line
        from client.failures import INTERNAL_ERROR, describe

        if debug:
            traceback.print_exc()
        failure = describe(exc)
        line = failure.line()
        if failure.code == INTERNAL_ERROR and not debug:
            line += " (--debug shows the traceback)"
        _fail(line, failure.exit_code)
    except BaseException as exc:
        # A CancelledError can only come from asyncio, so it is not imported to recognise one.
        asyncio = sys.modules.get("asyncio")
        if asyncio is None or not isinstance(exc, asyncio.CancelledError):
            raise
        from client.sigterm import terminated

        if not terminated():
            raise
        _fail(
            "process.terminated: terminated (SIGTERM); open runs go on in a background worker",
            EXIT_TERMINATED,
        )


def _remember_config(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value is not None:
        root = ctx.find_root()
        root.obj = root.obj if isinstance(root.obj, dict) else {}
        root.obj["config"] = value  # the dict every command's settings are loaded from


def accept_config(command: click.Command) -> None:
    """``--config FILE`` after the subcommand too (``ponder ask --config F ...``), the same as
    before it (``ponder --config F ask ...``); after it wins. Added to every command as it loads,
    and to its subcommands, unless it declares its own (``ponder worker`` does, and falls back to
    the group's)."""
    if isinstance(command, click.Group):
        for subcommand in command.commands.values():
            accept_config(subcommand)
    if any("--config" in param.opts for param in command.params):
        return
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


@click.group(
    cls=LazyGroup,
    lazy_commands=COMMANDS,
    on_load=accept_config,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(package_name="ponder", message="%(prog)s %(version)s")
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
@click.option("--config", type=click.Path(), default=None, help="Path to ponder.toml.")
@click.pass_context
def cli(ctx: click.Context, debug: bool, config: str | None) -> None:
    """ponder: durable LLM orchestration on Temporal.

    Without TEMPORAL_ADDRESS every command uses the embedded Temporal server under
    $PONDER_HOME (default ~/.ponder) and runs its own worker in-process.
    """
    from worker.logs import configure_logging  # here, not at import: `ponder --help` skips it

    configure_logging(debug=debug or _debug())
    ctx.obj = {"config": config}


def main() -> None:
    start_process()  # before any command imports its modules
    run_command(cli, prog_name="ponder")
