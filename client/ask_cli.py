"""``ponder ask``: one question through Temporal, the answer printed. What runs it (providers,
the SDK) is imported in the command's body, so ``--help`` answers at once."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING

import click

from client.command_settings import command_settings
from client.ledger_cli import ledger_option
from workflows.model_names import DEFAULT_MODEL, MODEL_EXAMPLES
from workflows.names import ASK
from workflows.run_ids import check_run_id

if TYPE_CHECKING:
    from temporalio.client import Client, WorkflowHandle

    from client.ask_http import Handover

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
    from client.ask_http import ask_served, new_ask_id, resolves_here
    from client.ask_view import print_answer
    from workflows.ask_types import AskInput, AskResult

    settings = command_settings(ctx)
    if base_url:
        # Declared on the worker side this command starts (in process, or in the background
        # through its environment): a run's input may name only a URL its worker declares.
        # A worker elsewhere (TEMPORAL_ADDRESS) must declare it in its own ponder.toml.
        allowed = [*settings.allowed_base_urls, base_url]
        settings = settings.model_copy(update={"allowed_base_urls": allowed})

    def ask_input(run_id: str) -> AskInput:
        return AskInput(
            question=question,
            model=model,
            system=system,
            temperature=temperature,
            max_output_tokens=max_output_tokens,
            base_url=base_url,
            seed=seed,
            run_id=run_id,
        )

    payload: AskInput | None = None
    handover: Handover | None = None
    # Served (the embedded server and this configuration's background worker up): started and,
    # when it answers at once, awaited over the server's HTTP API, with no SDK to load.
    if not (base_url or detach or local_worker) and resolves_here(model, settings):
        payload = ask_input(check_run_id(run_id or new_ask_id()))
        served = ask_served(settings, payload)
        if isinstance(served, AskResult):
            print_answer(served)
            return
        handover = served

    from activities.providers import resolve_model
    from client.call_progress import retries_shown, to_stderr
    from client.runs import new_run_id, start_run, wait_or_detach
    from client.session import open_session, spawn_background_worker

    if payload is None:
        resolve_model(model, settings, base_url=base_url, require_key=not settings.temporal_address)
        payload = ask_input(check_run_id(run_id or new_run_id("ask")))

    async def go(payload: AskInput) -> AskResult | None:
        if handover is None:
            return await follow(payload)
        with _signals_detach(handover.run_id):
            return await follow(payload)

    async def follow(payload: AskInput) -> AskResult | None:
        async with open_session(
            settings, local_worker=local_worker, worker=not (detach and not local_worker)
        ) as session:
            if handover is not None and await _started_here(session.client, handover):
                handle = session.client.get_workflow_handle(
                    handover.run_id, run_id=handover.temporal_run_id, result_type=AskResult
                )
            else:
                handle = await start_run(session, ASK, payload, payload.run_id or "", AskResult)
            if detach:
                if session.embedded:
                    spawn_background_worker(settings)
                click.echo(payload.run_id)
                return None
            # A failed attempt shows as it happens (a refused connection among them), not only
            # once the last retry has failed too.
            shown = None if handover is None else handover.lines
            async with (
                retries_shown(handle, to_stderr, lines=shown),
                ledger_waits_shown(handle, to_stderr),
            ):
                return await wait_or_detach(session, handle)

    result = asyncio.run(go(payload))
    if result is not None:
        print_answer(result)


@contextlib.contextmanager
def _signals_detach(run_id: str) -> Iterator[None]:
    """From a hand-over until its follower waits (``client.runs.wait_or_detach``, which takes
    over): Ctrl-C or SIGTERM leaves the run going, as while it was awaited over HTTP, one that
    came since the hand-over (``client.ask_http.signalled``) included."""
    from client.ask_http import print_detached, signalled
    from client.sigterm import on_sigterm

    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    detached: list[bool] = []

    def detach() -> None:
        detached.append(True)
        if task is not None:
            task.cancel()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, detach)
    try:
        with on_sigterm(detach):  # the session's own SIGTERM handler calls it
            if signalled():
                detach()
            yield
    except asyncio.CancelledError:
        if not detached:
            raise
        print_detached(run_id)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


async def _started_here(client: Client, handover: Handover) -> bool:
    """Whether the run the HTTP path handed over is this command's: started (its answer said
    so), or, when the start's answer was lost, a run under its id whose start carries this
    command's identity and input."""
    if handover.temporal_run_id is not None:
        return True
    from temporalio.service import RPCError

    handle = client.get_workflow_handle(handover.run_id)
    try:
        async for event in handle.fetch_history_events():
            started = event.workflow_execution_started_event_attributes
            return started.identity == handover.identity and [
                p.data for p in started.input.payloads
            ] == [handover.input_data]
    except RPCError:  # no such run: it did not start
        return False
    return False
