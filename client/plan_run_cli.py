"""Running plans: ``ponder plan run | extend``, ``ponder resume``, ``ponder gate``.

``plan run`` validates the file (exit 2 with every error), starts a ``PlanRun`` and follows it
until it completes (0), fails (1) or pauses (75, printing the exact command that continues it).
``resume``, ``gate`` and ``plan extend`` answer a paused run through the workflow's updates (a
refusal is one line, exit 2) and then follow it the same way, unless ``--detach``.

This module declares the commands alone; what they do is ``client.plan_follow``, imported when
one runs, so their ``--help`` loads no Temporal SDK.
"""

from __future__ import annotations

from typing import Any

import click

from client.command_settings import command_settings
from client.ledger_cli import ledger_option

__all__ = ["extend_plan", "gate", "plan_commands", "resume", "run"]

EXECUTOR_HELP = (
    "FAMILY=PROVIDER:MODEL: which provider (a built-in or a [providers.NAME] of ponder.toml) "
    "and model run a family's steps (repeatable; over [executors] in ponder.toml; FAMILY= "
    "unsets one)."
)
WORKSPACE_HELP = (
    "Directory on the worker the plan's files live in (default: the plan's workspace, else the "
    "cwd when the plan declares files). It must lie inside a root the worker declares: "
    "[plans] workspace_roots in ponder.toml or ponder worker --workspace-root DIR (none "
    "declared: the directory the worker started in, for ponder's own worker the directory the "
    "command ran from); ponder's home and stores never are. Symlinks are resolved first. "
    "Outside them the run fails at once: artifact-path-escapes-root."
)


@click.command("run")
@click.argument("file")
@click.option("--arg", "args", multiple=True, help="A run argument KEY=VALUE (${input.KEY}).")
@click.option("--budget", default=None, help="Run limits: calls=N,wall_ms=M[,tokens=T,usd=X].")
@click.option("--workspace", default=None, metavar="DIR", help=WORKSPACE_HELP)
@click.option("--executor", "executors", multiple=True, metavar="FAMILY=SPEC", help=EXECUTOR_HELP)
@click.option(
    "--default-family",
    default=None,
    help="The family of steps without a model (over [plans] default_family in ponder.toml).",
)
@click.option("--coder-family", default=None, help="A role: qe step in this family is refused.")
@click.option("--allow-same-family-qe", is_flag=True, help="Waive it (recorded loudly).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of simulated calls.")
@click.option("--run-id", default=None, help="Workflow id (default: plan-<random>).")
@click.option(
    "--from",
    "from_",
    default=None,
    metavar="RUN:LABEL",
    help="Restore the settled steps of RUN's checkpoint LABEL whose fingerprint matches.",
)
@click.option("--detach", is_flag=True, help="Start the run, print its id and return.")
@ledger_option
@click.pass_context
def run(ctx: click.Context, file: str, **options: Any) -> None:
    """Run a plan (ponder-plan/1 or loop-plan/1, JSON or YAML) and follow it.

    Exit 0 completed, 1 failed, 2 invalid, 75 paused (the command that continues it is printed).
    The workspace must lie inside a root the worker declares (see --workspace).
    """
    from client.plan_follow import start_plan

    start_plan(command_settings(ctx), file, options)


@click.command()
@click.argument("run_id")
@click.option("--arg", "args", multiple=True, required=True, help="KEY=VALUE (repeatable).")
@click.option("--detach", is_flag=True, help="Resume and return without following the run.")
@click.pass_context
def resume(ctx: click.Context, run_id: str, args: tuple[str, ...], detach: bool) -> None:
    """Give a paused plan run the argument it waits for (first value wins)."""
    from client.plan_follow import resume_run

    resume_run(command_settings(ctx), run_id, args, detach)


@click.command()
@click.argument("decision", type=click.Choice(["approve", "revise", "kill"]))
@click.argument("run_id")
@click.argument("step")
@click.option("--detach", is_flag=True, help="Decide and return without following the run.")
@click.pass_context
def gate(ctx: click.Context, decision: str, run_id: str, step: str, detach: bool) -> None:
    """Decide a plan run's pending human gate (the token is read from status)."""
    from client.plan_follow import gate_decision

    gate_decision(command_settings(ctx), decision, run_id, step, detach)


@click.command("extend")
@click.argument("run_id")
@click.option("--calls", default=None, help="New call limit (absolute, or +N).")
@click.option("--wall-ms", default=None, help="New wall-clock limit in ms (or +N).")
@click.option("--tokens", default=None, help="New token limit, input + output (or +N).")
@click.option("--usd", default=None, help="New USD limit (or +X).")
@click.option(
    "--follow",
    "keep_following",
    is_flag=True,
    help="Keep watching the run after the extension is accepted.",
)
@click.option("--detach", is_flag=True, hidden=True, help="The default now: return once accepted.")
@click.pass_context
def extend_plan(
    ctx: click.Context, run_id: str, keep_following: bool, detach: bool, **flags: str | None
) -> None:
    """Raise a plan run's limits (calls and wall within the cap) so a budget pause continues;
    returns once the extension is accepted (--follow keeps watching the run)."""
    from client.plan_follow import extend_plan_command

    extend_plan_command(command_settings(ctx), run_id, detach or not keep_following, flags)


def plan_commands() -> click.Group:
    """``ponder plan``: validate (client.plan_cli) with run and extend added (``ponder resume`` and
    ``ponder gate`` are top-level commands of their own)."""
    from client.plan_cli import plan

    plan.add_command(run)
    plan.add_command(extend_plan)
    return plan
