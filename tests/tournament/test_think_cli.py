"""``ponder think`` and friends as a user drives them, on the embedded default."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from client.embedded import EmbeddedServer
from tests.cli import cli_env, one_server, ponder, ponder_here
from tests.test_embedded import server_pids, wait_until
from workflows.tournament.profiles import BUILTIN_PROFILES
from workflows.tournament.types import TournamentInput

pytestmark = [pytest.mark.usefixtures("no_leftover_processes"), pytest.mark.slow]


async def status_json(run_id: str, env: dict[str, str]) -> dict:
    """``ponder status RUN_ID --json``, which must succeed (else its message is the failure)."""
    shown = await ponder("status", run_id, "--json", env=env)
    assert shown.code == 0, shown.err
    parsed: dict = json.loads(shown.out)
    return parsed


async def test_an_ended_tournament_shows_its_stored_progress_while_the_server_is_up(
    tmp_path: Path,
) -> None:
    """``status`` of an ended run reads ``progress.json``: the server's own view, no query."""
    env = cli_env(tmp_path, PONDER_SERVER_IDLE_S="10")
    done = await ponder(
        "think", "Sort a list", "--profile", "quick", "--provider", "sim", "--run-id", "t1", env=env
    )
    assert done.code == 0, done.err
    server = EmbeddedServer(tmp_path)
    assert server.up()  # its last user left; it stays for its idle period
    shown = await ponder("status", "t1", env=env)
    assert shown.code == 0, shown.err
    assert "completed" in shown.out and shown.out.rstrip().endswith("source   run store")
    stored = await status_json("t1", env)
    live = await ponder("status", "t1", "--json", "--live", env=env)
    assert live.code == 0, live.err
    assert stored == json.loads(live.out)  # the same view, field for field
    assert (stored["status"], stored["spent"]["calls"]) == ("completed", 15)
    await wait_until(lambda: not server_pids(server.db) and not server.state_file.exists(), 90)


def test_dry_run_prints_the_plan_without_a_server(tmp_path: Path) -> None:
    # In this process: ponder_here fails on a command that connects.
    done = ponder_here(
        "think", "Sort a list", "--profile", "paper", "--dry-run", env=cli_env(tmp_path)
    )
    assert done.code == 0, done.err
    assert "calls: 285" in done.out
    assert "sequential rounds: 8" in done.out
    assert "warning" in done.out
    assert not (tmp_path / "server.json").exists()


def test_dry_run_estimates_usd_from_the_price_table(tmp_path: Path) -> None:
    (tmp_path / "ponder.toml").write_text(
        '[providers.local]\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
        '[providers.local.prices."m-1"]\ninput = 1.0\noutput = 2.0\n'
    )
    done = ponder_here(
        "think",
        "x",
        "--profile",
        "paper",
        "--model",
        "local:m-1",
        "--dry-run",
        env=cli_env(tmp_path),
    )
    assert done.code == 0, done.err
    assert "estimated USD: 1.14" in done.out  # 285 x (2k x $1 + 1k x $2) / 1M
    unpriced = ponder_here(
        "think", "x", "--model", "local:other", "--max-usd", "3", "--dry-run", env=cli_env(tmp_path)
    )
    assert unpriced.code == 2 and "budget.unpriced_model" in unpriced.err


async def test_think_on_the_sim_prints_winner_true_quality_and_report(tmp_path: Path) -> None:
    async with one_server(tmp_path):
        done = await ponder(
            "think",
            "Sort a list",
            "--profile",
            "quick",
            "--provider",
            "sim",
            "--seed",
            "3",
            "--run-id",
            "cli-think",
            env=cli_env(tmp_path),
        )
        assert done.code == 0, done.err
        summary = json.loads((tmp_path / "runs/cli-think/summary.json").read_text())
        assert f"winner: {summary['winner_id']} after 15 calls" in done.err
        assert "simulated: winner true quality" in done.err
        assert "report.html" in done.err
        confidence = summary["confidence"]
        assert f"runner-up {confidence['runner_up_id']}'s (tops " in done.err
        assert "of 1000 resamples)" in done.err
        assert "[sim q=" in done.out
        shown = await ponder("status", "cli-think", env=cli_env(tmp_path))
        assert shown.code == 0, shown.err
        assert "completed" in shown.out and summary["winner_id"] in shown.out
        progress = await status_json("cli-think", cli_env(tmp_path))
        assert progress["spent"]["calls"] == 15
        assert progress["leaderboard"][0]["candidate_id"] == summary["winner_id"]
        report = await ponder("report", "cli-think", env=cli_env(tmp_path))
        assert report.code == 0 and report.out.strip().endswith("report.html")


async def test_pause_exits_75_and_extend_finishes_the_same_run(tmp_path: Path) -> None:
    async with one_server(tmp_path) as server:
        env = cli_env(tmp_path)
        paused = await ponder(
            "think",
            "Sort a list",
            "--profile",
            "balanced",
            "--seed",
            "4",
            "--model",
            "sim:default,invalid_json_rate=0.25",
            "--invalid-json-retries",
            "3",
            "--max-calls",
            "60",
            "--run-id",
            "tight",
            env=env,
        )
        assert paused.code == 75, paused.err
        assert "ponder extend tight" in paused.err
        # Without a terminal the pause message still starts a line of its own.
        assert any(line.startswith("run tight is paused") for line in paused.err.splitlines())
        below = await ponder("extend", "tight", "--calls", "10", env=env)
        assert below.code == 2
        assert "below what is already spent" in below.err
        paused_status = await ponder("status", "tight", env=env)
        assert "continue with: ponder extend tight --calls +" in paused_status.out
        # extend returns once the new limits are accepted; a background worker goes on.
        resumed = await ponder("extend", "tight", "--calls", "+100", env=env)
        assert resumed.code == 0, resumed.err
        assert "budget now max_calls=160" in resumed.err  # not a Python dict
        assert "the run goes on: ponder watch tight" in resumed.err
        from tests.test_worker_cli import wait_until

        summary_path = tmp_path / "runs/tight/summary.json"

        def completed() -> bool:
            return json.loads(summary_path.read_text()).get("status") == "completed"

        await wait_until(completed, 90)  # a background worker finished it
        summary = json.loads(summary_path.read_text())
        assert summary["calls"]["used"] > 60
        # No call of the resumed run was left on the exiting command's worker to time out and
        # go again: every model call ran once, on its first attempt.
        history = (
            await (await Client.connect(server.address))
            .get_workflow_handle("tight")
            .fetch_history()
        )
        attempts = [
            e.activity_task_started_event_attributes.attempt
            for e in history.events
            if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
        ]
        assert len(attempts) > 60 and set(attempts) == {1}, sorted(attempts)[-5:]


def test_refusals_are_one_line_exit_2(tmp_path: Path) -> None:
    env = cli_env(tmp_path)
    done = ponder_here("think", "x", "--max-calls", "14", env=env)
    assert done.code == 2
    assert "budget.planned_calls_exceeded" in done.err
    done = ponder_here("think", "x", "--n", "3", "--k", "1", env=env)
    assert done.code == 2 and "profile.invalid" in done.err
    done = ponder_here("think", "@missing.md", env=env)
    assert done.code == 2 and "cannot be read" in done.err


async def test_rank_orders_given_candidates(tmp_path: Path) -> None:
    async with one_server(tmp_path):
        files = []
        for name, q in (("weak", -1.5), ("strong", 2.5), ("middling", 0.2)):
            path = tmp_path / f"{name}.txt"
            path.write_text(f"answer {name}\n[sim q={q} id={name}]")
            files.append(str(path))
        done = await ponder(
            "rank",
            *files,
            "--task",
            "Which is best?",
            "--seed",
            "1",
            "--model",
            "sim:default,accuracy=0.99",
            env=cli_env(tmp_path),
        )
        assert done.code == 0, done.err
        ranked = [line.split()[1] for line in done.out.splitlines() if line.strip()]
        assert ranked[0] == "strong"


async def test_ctrl_c_detaches_and_the_run_goes_on(tmp_path: Path) -> None:
    import asyncio
    import contextlib
    import os
    import signal

    from tests.cli import finish, start_ponder
    from tests.test_worker_cli import processes_using, wait_until

    env = cli_env(tmp_path)
    try:
        process = await start_ponder(
            "think",
            "Sort a list",
            "--profile",
            "balanced",
            "--run-id",
            "interrupted",
            "--model",
            "sim:default,latency=fixed:150",
            "--write-interval-s",
            "0",  # its files at every phase, so the first phase's show it has begun
            env=env,
        )
        usage = tmp_path / "runs/interrupted/usage.jsonl"
        await wait_until(usage.exists, 60)  # the first phase has been committed
        process.send_signal(signal.SIGINT)
        done = await finish(process)
        assert done.code == 0, done.err
        assert "ponder watch interrupted" in done.err
        summary = tmp_path / "runs/interrupted/summary.json"

        def completed() -> bool:
            return json.loads(summary.read_text()).get("status") == "completed"

        await wait_until(completed, 90)
    finally:
        for pid in processes_using(tmp_path):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        await asyncio.sleep(0)


async def test_unknown_run_id_is_one_line_exit_2(tmp_path: Path) -> None:
    async with one_server(tmp_path):
        for command in (["status"], ["watch"], ["extend", "--calls", "5"], ["cancel"]):
            done = await ponder(*command, "no-such-run", env=cli_env(tmp_path))
            assert done.code == 2, (command, done.err)
            assert "not found" in done.err and "Traceback" not in done.err


def _built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> TournamentInput:
    """The workflow input ``ponder think ARGS`` would start (parsed by the real command)."""
    from activities.config import load_settings
    from client.tournament_cli import think
    from client.tournament_inputs import build_input

    monkeypatch.setenv("PONDER_HOME", str(tmp_path))
    context = think.make_context("think", ["x", "--provider", "sim", "--dry-run", *args])
    return build_input(load_settings(None), **context.params)


def test_overrides_change_only_what_they_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paper = BUILTIN_PROFILES["paper"]
    bigger = _built(tmp_path, monkeypatch, "--profile", "paper", "--n", "30").custom
    assert bigger is not None and (bigger.n, bigger.k, bigger.t, bigger.m) == (30, 4, 3, 10)
    # Temperatures and lambda stay the paper's (1.0 / 1.0 / 0 and 0.01), not the custom 0.8/0.6.
    assert bigger.model_dump(exclude={"n"}) == paper.model_dump(exclude={"n"})
    tuned = _built(
        tmp_path,
        monkeypatch,
        "--profile",
        "paper",
        "--lambda",
        "0.1",
        "--temperature",
        "judge=0.3",
        "--temperature",
        "finalize=0",
    ).custom
    assert tuned is not None
    assert tuned.model_dump() == paper.model_dump() | {
        "lambda": 0.1,
        "judge_temperature": 0.3,
        "finalize_temperature": 0.0,
    }
    assert _built(tmp_path, monkeypatch, "--profile", "paper").custom is None


def test_every_input_option_has_a_flag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prompts = tmp_path / "prompts.json"
    prompts.write_text(json.dumps({"finalize": {"system": "Polish {task} gently."}}))
    built = _built(
        tmp_path,
        monkeypatch,
        "--critique-chars",
        "900",
        "--concurrency",
        "2",
        "--concurrency",
        "judge=5",
        "--max-output-tokens",
        "judge=300",
        "--max-output-tokens",
        "finalize=99",
        "--max-output-tokens",
        "5000",
        "--prompts",
        str(prompts),
        "--include-prompts",
        "--judge-orders",
        "both",
        "--judges",
        "sim:default,accuracy=0.9,sim:default,family=claude",
        "--bootstrap-resamples",
        "500",
    )
    assert built.judge_orders == "both"
    assert built.judges == ["sim:default,accuracy=0.9", "sim:default,family=claude"]
    assert built.models.judge is None  # the panel replaces the one judge
    assert built.bootstrap_resamples == 500
    assert built.critique_chars == 900
    assert built.concurrency.model_dump() == {"generate": 2, "judge": 5, "mutate": 2}
    assert built.output_token_caps == {"compare": 300, "finalize": 99}
    assert built.budget.max_output_tokens == 5000  # a bare number stays the run's budget
    assert built.prompts is not None and built.prompts.finalize is not None
    assert built.prompts.finalize.system == "Polish {task} gently."
    assert built.include_prompts is True


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ('{"judge": {"user": "x"}}', "judge: Extra inputs are not permitted"),
        ('{"generate": {"user": "{candidate}"}}', "prompts.unknown_variable"),
        ("not json", "is not valid JSON"),
    ],
)
def test_bad_prompts_file_is_refused_with_its_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str, fragment: str
) -> None:
    from workflows.errors import PonderError

    prompts = tmp_path / "prompts.json"
    prompts.write_text(content)
    with pytest.raises(PonderError, match=re.escape(fragment)):
        _built(tmp_path, monkeypatch, "--prompts", str(prompts))


def test_dry_run_shows_the_adaptive_rounds(tmp_path: Path) -> None:
    args = ("think", "x", "--profile", "balanced", "--dry-run")
    regular = ponder_here(*args, env=cli_env(tmp_path))
    adaptive = ponder_here(*args, "--schedule", "adaptive", env=cli_env(tmp_path))
    assert regular.code == adaptive.code == 0, adaptive.err
    assert "adaptive" not in regular.out and "sequential rounds: 6" in regular.out
    # The default budget: 30% of the 12 (3-regular) and 16 (4-regular) pairs over 8
    # candidates, raised to n = 8: an opening matching of 4, then one batch of 4.
    assert "generation_judging:1     8  (adaptive: 2 rounds of 4 + 4)" in adaptive.out
    assert "final_judging            8  (adaptive: 2 rounds of 4 + 4)" in adaptive.out
    assert "sequential rounds: 9" in adaptive.out
    # --m sizes the phases by hand: all of the k-regular pairs.
    sized = ponder_here(*args, "--schedule", "adaptive", "--m", "4", env=cli_env(tmp_path))
    assert sized.code == 0, sized.err
    assert "generation_judging:1     12  (adaptive: 2 rounds of 4 + 8)" in sized.out
    assert "final_judging            16  (adaptive: 3 rounds of 4 + 8 + 4)" in sized.out
    assert "sequential rounds: 10" in sized.out
    # Both orders: twice the calls, the same rounds of pairs.
    both = ponder_here(
        *args, "--schedule", "adaptive", "--judge-orders", "both", env=cli_env(tmp_path)
    )
    assert both.code == 0, both.err
    assert "generation_judging:1     16  (adaptive: 2 rounds of 4 + 4)" in both.out
    assert "judge calls per pair: 2 (1 judge, both orders)" in both.out


def test_openai_models_are_priced_and_the_table_is_dated(tmp_path: Path) -> None:
    from activities.pricing import PRICES_AS_OF

    done = ponder_here(
        "think",
        "x",
        "--model",
        "openai:gpt-4o-mini",
        "--judge-model",
        "openai:gpt-4o",
        "--max-usd",
        "5",
        "--dry-run",
        env=cli_env(tmp_path),
    )
    assert done.code == 0, done.err
    # 15 calls x (2k x $2.50 + 1k x $10) / 1M at gpt-4o, the dearer model: 0.225.
    assert "estimated USD: 0.22" in done.out
    assert f"as of {PRICES_AS_OF}" in done.out
    (tmp_path / "ponder.toml").write_text('[prices."openai:gpt-4o"]\ninput = 100.0\noutput = 0\n')
    overridden = ponder_here(
        "think", "x", "--model", "openai:gpt-4o", "--dry-run", env=cli_env(tmp_path)
    )
    assert "estimated USD: 3.00" in overridden.out  # 15 x 2k x $100 / 1M


def candidate_files(tmp_path: Path, count: int) -> list[str]:
    """``count`` answers for ``ponder rank``, sim-labelled with rising true quality."""
    files = []
    for i in range(count):
        path = tmp_path / f"c{i}.txt"
        path.write_text(f"answer {i}\n[sim q={i / 2} id=c{i}]")
        files.append(str(path))
    return files


async def test_rank_plans_only_the_judge_calls_and_has_modes(tmp_path: Path) -> None:
    async with one_server(tmp_path):
        files = candidate_files(tmp_path, 5)
        env = cli_env(tmp_path)
        done = await ponder(
            "rank", *files, "--task", "x", "--max-calls", "10", "--run-id", "r5", env=env
        )
        assert done.code == 0, done.err  # 10 pairs, no generation calls: 10 is enough
        usage = (tmp_path / "runs/r5/usage.jsonl").read_text().splitlines()
        assert len(usage) == 10
        progress = await status_json("r5", env)
        assert progress["calls_planned"] == 10
        regular = await ponder(
            "rank", *files[:4], "--task", "x", "--rank-mode", "k-regular", "--rank-k", "1",
            "--rank-seed", "3", "--run-id", "r4", env=env,
        )  # fmt: skip
        assert regular.code == 0, regular.err
        assert len((tmp_path / "runs/r4/usage.jsonl").read_text().splitlines()) == 2


def test_rank_refusals_name_the_rule(tmp_path: Path) -> None:
    files = candidate_files(tmp_path, 5)
    env = cli_env(tmp_path)
    over = ponder_here(
        "rank", *files, "--task", "x", "--rank-mode", "all-pairs", "--rank-max-calls", "9",
        env=env,
    )  # fmt: skip
    assert over.code == 2 and "rank.max_calls_exceeded" in over.err
    one = ponder_here("rank", files[0], "--task", "x", env=env)
    assert one.code == 2 and "rank needs at least two candidate files" in one.err
    assert "profile.k" not in one.err
    duplicate = ponder_here("rank", files[0], files[0], "--task", "x", env=env)
    assert duplicate.code == 2 and "unique" in duplicate.err
    assert not (tmp_path / "server.json").exists()


def test_small_refusals_name_what_is_wrong(tmp_path: Path) -> None:
    env = cli_env(tmp_path)
    nothing = ponder_here("extend", "some-run", env=env)
    assert nothing.code == 2 and "at least one new limit" in nothing.err
    missing = ponder_here(
        "mutate", str(tmp_path / "gone.txt"), "--task", "x", "--critique", "y", env=env
    )
    assert missing.code == 2 and f"candidate file {tmp_path / 'gone.txt'}" in missing.err


def test_every_option_has_help_text() -> None:
    from client.cli import COMMANDS, cli

    with click.Context(cli) as ctx:
        commands = {name: cli.get_command(ctx, name) for name in COMMANDS}
    missing = [
        f"{name} {param.opts[0]}"
        for name, command in commands.items()
        for param in (command.params if command else [])
        if isinstance(param, click.Option) and not param.help
    ]
    assert missing == []


def test_progress_table_counts_from_the_start_and_names_limits() -> None:
    from datetime import UTC, datetime, timedelta

    from rich.console import Console
    from temporalio.client import WorkflowExecutionStatus

    from client.run_list import state_name
    from client.tournament_display import progress_table
    from workflows.budget import BudgetLimits, BudgetSpent
    from workflows.tournament.types import Progress

    done = Progress(
        run_id="r", status="completed", phase="final_judging", generation=1, calls_planned=15,
        budget=BudgetLimits(max_calls=16, max_output_tokens=100),
        spent=BudgetSpent(calls=15, output_tokens=100), blocking_limit="max_output_tokens",
    )  # fmt: skip
    started = datetime.now(UTC) - timedelta(seconds=100)
    console = Console(record=True, width=120)
    console.print(progress_table(done, started, started + timedelta(seconds=42)))
    text = console.export_text()
    assert "completed" in text and "(max_output_tokens)" not in text
    assert "max_calls=16, max_output_tokens=100" in text
    assert "42.0s" in text
    console.print(progress_table(done.model_copy(update={"status": "awaiting_budget"}), started))
    text = console.export_text()
    assert "awaiting_budget (max_output_tokens)" in text
    assert "100." in text  # still running: elapsed since the run's start, not since this view
    assert state_name(WorkflowExecutionStatus.CANCELED) == "cancelled"
    unknown = done.model_copy(update={"usd_known": False})
    console.print(progress_table(unknown))
    assert "unknown" in console.export_text() and "$0.0000" not in console.export_text()


async def test_status_and_report_on_an_ask_run_give_an_ask_view(tmp_path: Path) -> None:
    async with one_server(tmp_path):
        env = cli_env(tmp_path)
        asked = await ponder("ask", "hello", "--model", "sim:default", "--run-id", "a1", env=env)
        assert asked.code == 0, asked.err
        shown = await ponder("status", "a1", env=env)
        assert shown.code == 0, shown.err
        assert "ask" in shown.out and "completed" in shown.out and "sim:default" in shown.out
        as_json = await status_json("a1", env)
        assert as_json["kind"] == "ask" and as_json["answer_path"].endswith("answer.txt")
        report = await ponder("report", "a1", env=env)
        assert report.code == 0, report.err
        page = Path(report.out.strip()).read_text()
        assert 'id="answer"' in page and "leaderboard" not in page


def test_dry_run_flags_a_judge_of_a_generators_family(tmp_path: Path) -> None:
    args = ("think", "x", "--profile", "quick", "--dry-run")
    families = (
        "--model",
        "sim:default,family=claude",
        "--mutator-model",
        "sim:default,family=openai",
    )
    flagged = ponder_here(*args, *families, env=cli_env(tmp_path))
    assert flagged.code == 0, flagged.err
    assert "warning: judge sim:default,family=claude is of the claude family" in flagged.out
    # A judge of neither family, or one family for all generators: nothing to flag.
    neutral = ponder_here(
        *args, *families, "--judge-model", "sim:default,family=qwen", env=cli_env(tmp_path)
    )
    assert neutral.code == 0 and "family" not in neutral.out
    same = ponder_here(*args, "--model", "sim:default,family=claude", env=cli_env(tmp_path))
    assert same.code == 0 and "family" not in same.out
    both = ponder_here(
        *args,
        *families,
        "--judges",
        "sim:a,family=claude",
        "--judge-model",
        "sim:b",
        env=cli_env(tmp_path),
    )
    assert both.code == 2 and "not both" in both.err
