"""Commands on a run that already exists: ``watch``, ``extend``, ``cancel`` (``status`` is
``client.status_cli``, ``report`` ``client.report_cli``).

This module declares them alone; what they do is ``client.run_control``, imported when one runs,
so their ``--help`` loads no Temporal SDK.
"""

from __future__ import annotations

import click

from client.command_settings import command_settings

__all__ = ["cancel", "extend", "watch"]


@click.command()
@click.argument("run_id")
@click.pass_context
def watch(ctx: click.Context, run_id: str) -> None:
    """Follow a run until it completes, fails or pauses (Ctrl-C detaches again)."""
    from client.run_control import watch_run

    watch_run(command_settings(ctx), run_id)


@click.command()
@click.argument("run_id")
@click.option("--calls", default=None, help="New max_calls (absolute, or +N).")
@click.option("--usd", default=None, help="New max_usd (absolute, or +X).")
@click.option("--input-tokens", default=None, help="New max_input_tokens (or +N).")
@click.option("--output-tokens", default=None, help="New max_output_tokens (or +N).")
@click.option("--tokens", default=None, help="Plan runs: new token limit, input + output (or +N).")
@click.option("--wall-ms", default=None, help="Plan runs: new wall-clock limit in ms (or +N).")
@click.option(
    "--follow",
    "keep_following",
    is_flag=True,
    help="Keep watching the run after the new limits are accepted.",
)
@click.option("--detach", is_flag=True, hidden=True, help="The default now: return once accepted.")
@click.pass_context
def extend(
    ctx: click.Context,
    run_id: str,
    calls: str | None,
    usd: str | None,
    input_tokens: str | None,
    output_tokens: str | None,
    tokens: str | None,
    wall_ms: str | None,
    keep_following: bool,
    detach: bool,
) -> None:
    """Raise a run's budget limits; a paused run continues where it stopped. Returns once the
    new limits are accepted (--follow keeps watching the run)."""
    from client.budget_extend import require_a_limit
    from client.run_control import extend_run

    require_a_limit(calls, usd, input_tokens, output_tokens, tokens, wall_ms)
    given = {
        "calls": calls,
        "usd": usd,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
    }
    extend_run(
        command_settings(ctx),
        run_id,
        given,
        tokens=tokens,
        wall_ms=wall_ms,
        returns=detach or not keep_following,
    )


@click.command()
@click.argument("run_id")
@click.pass_context
def cancel(ctx: click.Context, run_id: str) -> None:
    """Cancel a run: calls in flight finish and are recorded, artifacts are written."""
    from client.run_control import cancel_run

    cancel_run(command_settings(ctx), run_id)
