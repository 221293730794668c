"""``ponder ask``: one question through Temporal, the answer printed. What runs it (providers,
the SDK) is imported in the command's body, so ``--help`` answers at once."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

import click

from client.command_settings import command_settings
from client.ledger_cli import ledger_option
from workflows.model_names import DEFAULT_MODEL, MODEL_EXAMPLES
from workflows.names import ASK
from workflows.run_ids import check_run_id

if TYPE_CHECKING:
    from temporalio.client import WorkflowHandle

    from workflows.ask_types import AskResult

__all__ = ["ask", "ledger_waits_shown"]

LEDGER_POLL_S = 0.5
"""How often a follower looks for a ledger wait: the line shows within a poll of the pause."""


async def _show_ledger_waits(
    handle: WorkflowHandle, echo: Callable[[str], None], poll_s: float
) -> None:
    from temporalio.service import RPCError

    from workflows.ask import LEDGER_WAIT_MEMO

    shown: object = None
    while True:
        await asyncio.sleep(poll_s)
        try:
            wait = await (await handle.describe()).memo_value(LEDGER_WAIT_MEMO, None)
        except RPCError:
            continue  # a restarting server: the next poll asks again
        if wait != shown and isinstance(wait, dict):
            name, limit = wait.get("ledger"), wait.get("limit")
            echo(f"waiting for ledger {name} ({limit}): ponder ledger extend {name}")
        shown = wait


@contextlib.asynccontextmanager
async def ledger_waits_shown(
    handle: WorkflowHandle, echo: Callable[[str], None], *, poll_s: float = LEDGER_POLL_S
) -> AsyncIterator[None]:
    """While the block runs, ``echo`` a line each time the Ask starts waiting for its shared
    ledger (the run's memo says so), naming the command that lets it go on."""
    task = asyncio.create_task(_show_ledger_waits(handle, echo, poll_s))
    try:
        yield
    finally:
        task.cancel()


@click.command()
@click.argument("question")
@click.option(
    "--model",
    default=DEFAULT_MODEL,
    show_default=True,
    help=f"provider:model, e.g. {MODEL_EXAMPLES}",
)
@click.option(
    "--base-url",
    default=None,
    help="Endpoint base URL (OpenAI-compatible etc.); the worker this command starts allows it, "
    "a worker elsewhere must declare it.",
)
@click.option("--system", default=None, help="System prompt.")
@click.option("--temperature", type=float, default=None, help="Sampling temperature.")
@click.option("--max-output-tokens", type=int, default=None, help="Cap on the answer's tokens.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for sim draws.")
@click.option("--run-id", default=None, help="Workflow id (default: ask-<random>).")
@click.option("--detach", is_flag=True, help="Start the run, print its id and return.")
@click.option("--local-worker", is_flag=True, help="With TEMPORAL_ADDRESS: run a worker here.")
@ledger_option
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
    from activities.providers import resolve_model
    from client.call_progress import retries_shown, to_stderr
    from client.runs import new_run_id, start_run, wait_or_detach
    from client.session import open_session, spawn_background_worker
    from workflows.ask_types import AskInput, AskResult

    settings = command_settings(ctx)
    if base_url:
        # Declared on the worker side this command starts (in process, or in the background
        # through its environment): a run's input may name only a URL its worker declares.
        # A worker elsewhere (TEMPORAL_ADDRESS) must declare it in its own ponder.toml.
        allowed = [*settings.allowed_base_urls, base_url]
        settings = settings.model_copy(update={"allowed_base_urls": allowed})
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
            # A failed attempt shows as it happens (a refused connection among them), not only
            # once the last retry has failed too.
            async with retries_shown(handle, to_stderr), ledger_waits_shown(handle, to_stderr):
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
