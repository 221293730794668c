"""The tournament's parts as services: ``ponder rank`` (judge given answers) and ``mutate``. Their
options are declared once, on ``client.tournament_options.RankOptions`` and ``MutateOptions``
(the MCP tools' arguments too), and read here from the generated ``client.option_table``; what
runs them is imported in each command's body, so ``--help`` loads no Temporal SDK nor pydantic."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from client.click_fields import settings_options
from client.command_settings import command_settings
from client.ledger_cli import ledger_option
from workflows.names import TOURNAMENT
from workflows.run_ids import check_run_id

if TYPE_CHECKING:
    from workflows.ask_types import AskResult
    from workflows.tournament.profiles import RankMode
    from workflows.tournament.types import Progress, TournamentResult
    from workflows.tournament.verdicts import JudgeOrders

__all__ = ["mutate", "rank"]


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--task", required=True, help="The task the candidates answer (or @file).")
@settings_options("RankOptions")  # rubric, model, judges, ..., rank mode, seed, run id
@ledger_option
@click.pass_context
def rank(
    ctx: click.Context,
    files: tuple[str, ...],
    task: str,
    rubric: str | None,
    model: str | None,
    judges: tuple[str, ...],
    judge_orders: JudgeOrders | None,
    length_control: bool,
    weight_by_confidence: bool,
    rank_mode: RankMode,
    rank_k: int | None,
    rank_seed: int | None,
    rank_max_calls: int | None,
    max_calls: int | None,
    seed: int | None,
    run_id: str | None,
) -> None:
    """Rank candidate answers (one per FILE, id = file name) by pairwise judging."""
    import asyncio

    from client.runs import new_run_id, start_run
    from client.session import open_session
    from client.tournament_follow import follow, print_outcome
    from client.tournament_inputs import build_rank_input
    from client.tournament_values import model_list
    from workflows.tournament.types import Progress, TournamentResult

    settings = command_settings(ctx)
    run_id = check_run_id(run_id or new_run_id("rank"))
    payload = build_rank_input(
        settings,
        files,
        task=task,
        rubric=rubric,
        model=model,
        judges=model_list(judges) or None,
        judge_orders=judge_orders,
        length_control=length_control,
        weight_by_confidence=weight_by_confidence,
        mode=rank_mode,
        rank_k=rank_k,
        rank_seed=rank_seed,
        rank_max_calls=rank_max_calls,
        max_calls=max_calls,
        seed=seed,
        run_id=run_id,
    )

    async def go() -> TournamentResult | Progress:
        async with open_session(settings) as session:
            handle = await start_run(session, TOURNAMENT, payload, run_id, TournamentResult)
            return await follow(session, handle)

    result = asyncio.run(go())
    if isinstance(result, Progress):
        print_outcome(run_id, result)
        return
    for row in result.leaderboard:
        click.echo(
            f"{row.rank:>3}  {row.candidate_id:<24} {row.score:+.3f}  "
            f"{row.wins}W {row.losses}L {row.ties}T"
        )
    click.echo(f"report: {Path(result.run_dir) / 'report.html'}", err=True)


@click.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--task", required=True, help="The task the candidate answers (or @file).")
@click.option("--critique", required=True, help="What to improve (or @file).")
@settings_options("MutateOptions")  # rubric, model, prompt style, seed, run id
@ledger_option
@click.pass_context
def mutate(
    ctx: click.Context,
    file: str,
    task: str,
    critique: str,
    rubric: str | None,
    model: str | None,
    prompt_style: str,
    seed: int,
    run_id: str | None,
) -> None:
    """Improve one candidate answer (FILE) from a critique (one mutate call)."""
    import asyncio

    from client.ask_cli import ledger_waits_shown
    from client.call_progress import to_stderr
    from client.runs import new_run_id, start_run, wait_or_detach
    from client.session import open_session
    from client.tournament_inputs import build_mutate_input
    from client.tournament_values import read_file, read_task
    from workflows.ask_types import AskResult
    from workflows.names import ASK

    settings = command_settings(ctx)
    run_id = check_run_id(run_id or new_run_id("mutate"))
    payload = build_mutate_input(
        settings,
        read_file(file),
        task=read_task(task),
        critique=read_task(critique, what="critique"),
        rubric=rubric,
        model=model,
        prompt_style=prompt_style,
        seed=seed,
        run_id=run_id,
    )

    async def go() -> AskResult:
        async with open_session(settings) as session:
            handle = await start_run(session, ASK, payload, run_id, AskResult)
            async with ledger_waits_shown(handle, to_stderr):
                return await wait_or_detach(session, handle)

    click.echo(asyncio.run(go()).response.text)
