"""``ponder step-done | checkpoint | revert``: consumer answers and checkpoints of a plan run.

``step-done ID STEP --token T --output @FILE`` (or ``--failure TEXT``) answers a consumer
step's issuance with the ``step_done`` update, sent with an update id that digests the
answer (``step_done_id``): a retried command is answered once by Temporal, and a different
answer to a used token is refused ``stale-dispatch-token``; then follows the run like
``ponder gate``.
``checkpoint ID LABEL`` commits the run's settled state; ``revert ID LABEL`` goes back to a
checkpoint while the run waits (then follows it). A refusal is one line, exit 2.

What runs them (``client.plan_follow``, the SDK) is imported when one runs, not for ``--help``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from activities.errors import ConfigError
from client.command_settings import command_settings
from workflows.names import PLAN_RUN, UPDATE_CHECKPOINT, UPDATE_REVERT, UPDATE_STEP_DONE
from workflows.plan.reasons import Reason
from workflows.run_ids import check_run_id

if TYPE_CHECKING:
    from workflows.plan.checkpoints import CheckpointResult
    from workflows.plan.consumer import StepDoneInput
    from workflows.plan.run_types import PlanStatus

__all__ = ["checkpoint", "revert", "step_done", "usage_of"]


def usage_of(text: str | None) -> dict[str, Any] | None:
    """``--usage tokens=N,usd=X,wall_ms=M``; the workflow checks the ranges."""
    from client.plan_follow import _pairs

    if text is None:
        return None
    usage: dict[str, Any] = {}
    for key, value in _pairs(tuple(p for p in text.split(",") if p), "--usage").items():
        if key not in ("tokens", "usd", "wall_ms"):
            raise ConfigError(
                "option.invalid", f"--usage {key}= is not one of tokens, usd, wall_ms"
            )
        try:
            usage[key] = float(value) if key == "usd" else int(value)
        except ValueError:
            raise ConfigError("option.invalid", f"--usage {key}={value!r} needs a number") from None
    return usage


def _output(value: str) -> str:
    if not value.startswith("@"):
        return value
    path = value[1:]
    try:
        return sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            "file.unreadable", f"--output {value}: cannot read it ({exc}); fix: check the path"
        ) from None


@click.command("step-done")
@click.argument("run_id")
@click.argument("step")
@click.option("--token", default=None, help="The issuance's token (default: the step's only one).")
@click.option("--output", default=None, metavar="@FILE|TEXT", help="The output (@- reads stdin).")
@click.option("--failure", default=None, metavar="TEXT", help="Report that the work failed.")
@click.option("--usage", default=None, metavar="tokens=N,usd=X,wall_ms=M", help="What it cost.")
@click.option("--detach", is_flag=True, help="Answer and return without following the run.")
@click.pass_context
def step_done(
    ctx: click.Context,
    run_id: str,
    step: str,
    token: str | None,
    output: str | None,
    failure: str | None,
    usage: str | None,
    detach: bool,
) -> None:
    """Answer a consumer step's issuance (its prompt: the issuance query, or status)."""
    from client.plan_follow import _answer, finish
    from workflows.plan.consumer import StepDoneInput, step_done_id

    if (output is None) == (failure is None):
        raise ConfigError(
            Reason.INVALID_RESULT, "give exactly one of --output @FILE and --failure TEXT"
        )
    result: dict[str, Any] = {"output": _output(output)} if output is not None else {}
    if failure is not None:
        result["failure"] = failure
    if (spent := usage_of(usage)) is not None:
        result["usage"] = spent

    def make(status: PlanStatus) -> StepDoneInput:
        if token is not None:
            return StepDoneInput(step=step, token=token, result=result)
        live = [i for i in status.issuances if i.step == step]
        if len(live) != 1:
            tokens = ", ".join(f"item {i.item}: {i.token}" for i in live) or "none live"
            raise ConfigError(
                Reason.STALE_DISPATCH_TOKEN,
                f"{step!r} has {len(live)} live issuance(s) ({tokens}); fix: give --token",
            )
        return StepDoneInput(step=step, token=live[0].token, result=result)

    finish(
        asyncio.run(
            _answer(
                command_settings(ctx),
                run_id,
                UPDATE_STEP_DONE,
                make,
                detach_after=detach,
                update_id=step_done_id,
                # A retried answer (its issuance already gone) answers no wait shown now.
                answers=lambda status, arg: any(i.token == arg.token for i in status.issuances),
            )
        )
    )


@click.command()
@click.argument("run_id")
@click.argument("label")
@click.pass_context
def checkpoint(ctx: click.Context, run_id: str, label: str) -> None:
    """Commit a plan run's settled state under LABEL (re-committing a label replaces it)."""
    from client.session import open_session
    from workflows.plan.checkpoints import CheckpointInput, CheckpointResult

    async def send() -> CheckpointResult:
        async with open_session(command_settings(ctx), worker=True) as session:
            handle = session.client.get_workflow_handle(check_run_id(run_id))
            if (await handle.describe()).workflow_type != PLAN_RUN:
                raise ConfigError("run.kind_invalid", f"run {run_id} is not a plan run")
            # A refusal is typed with its plan reason: coded by client.failures.
            done: CheckpointResult = await handle.execute_update(
                UPDATE_CHECKPOINT,
                CheckpointInput(label=label),
                result_type=CheckpointResult,
            )
            return done

    done = asyncio.run(send())
    click.echo(json.dumps(done.model_dump(), indent=2))
    click.echo(
        f"checkpoint {done.label} committed: {len(done.settled)} settled step(s); labels "
        f"{', '.join(done.labels)}",
        err=True,
    )


@click.command()
@click.argument("run_id")
@click.argument("label")
@click.option("--detach", is_flag=True, help="Revert and return without following the run.")
@click.pass_context
def revert(ctx: click.Context, run_id: str, label: str, detach: bool) -> None:
    """Go back to checkpoint LABEL while the run waits (a gate, a pause, a budget, a consumer):
    live tokens rotate, the walk goes on at the first step unsettled in it."""
    from client.plan_follow import _answer, finish
    from workflows.plan.checkpoints import RevertInput

    finish(
        asyncio.run(
            _answer(
                command_settings(ctx),
                run_id,
                UPDATE_REVERT,
                lambda _: RevertInput(label=label),
                detach_after=detach,
            )
        )
    )
