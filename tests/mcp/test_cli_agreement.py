"""The command line and the MCP server agree: one code per mistake on both, the MCP page lists
every tool, DeepThonk's tool names call ponder's, and what ponder prints keeps its
``[brackets]``, names a mutant after its parent and says ``sim`` of a simulated rank run.

The MCP server runs in this process (the SDK's in-memory transport) on this test's worker; the
command line runs as ``ponder`` processes against the same server and task queue.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from temporalio.client import Client as TemporalClient
from temporalio.client import WorkflowFailureError

from activities.config import Settings
from activities.errors import ConfigError
from activities.model_types import ModelRequest
from activities.providers.sim import SimOptions, simulate
from activities.sim_math import parse_trailers
from client.failures import describe
from client.mcp.backend import Backend
from client.mcp.sampling import SessionSampler
from client.mcp.server import build_server
from client.mcp.services import Services
from client.mcp.tools import ALIASES, TOOLS
from client.run_list import store_row
from client.session import Session
from tests.cli import Done, cli_env, ponder
from tests.mcp.helpers import structured, tool_failure
from workflows.names import TOURNAMENT
from workflows.tournament.types import TournamentInput

ROOT = Path(__file__).resolve().parents[2]


@asynccontextmanager
async def mcp_client(
    client: TemporalClient, settings: Settings, queue: str
) -> AsyncIterator[Client]:
    """``ponder mcp``'s server on a cluster (this test's server and worker), in this process."""
    on_queue = settings.model_copy(update={"task_queue": queue})

    @asynccontextmanager
    async def connect() -> AsyncIterator[tuple[Backend, SessionSampler]]:
        yield Backend(Session(client, on_queue, embedded=False)), SessionSampler()

    services = Services(on_queue, connect)
    try:
        async with Client(build_server(services), read_timeout_seconds=120) as mcp:
            yield mcp
    finally:
        await services.aclose()


def _env(settings: Settings, server_address: str, queue: str) -> dict[str, str]:
    return cli_env(settings.home, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE=queue)


def _code(done: Done) -> str:
    """The code of ``ponder``'s one-line refusal (``ponder: CODE: message``)."""
    line = done.err.strip().splitlines()[-1]
    shown = re.match(r"ponder: (\S+): ", line)
    assert shown, done.err
    return shown.group(1)


# -- the MCP page and DeepThonk's names ------------------------------------------------------


def _page_table(heading_row: str) -> dict[str, str]:
    """The rows of the docs/mcp.md table whose header is ``heading_row``: first cell -> second."""
    text = (ROOT / "docs" / "mcp.md").read_text()
    lines = text[text.index(heading_row) :].splitlines()[2:]
    rows = {}
    for line in lines:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0].strip("`")] = cells[1]
    return rows


def test_the_mcp_page_lists_every_tool_and_every_alias() -> None:
    assert set(_page_table("| tool | what it does |")) == set(TOOLS)
    aliases = {alias: tool.strip("`") for alias, tool in _page_table("| alias | tool |").items()}
    assert aliases == ALIASES
    assert aliases == {
        "think_status": "status",
        "profile_get": "profile_show",
        "runs_list": "list_runs",
        "run_export": "export",
        "estimate": "plan",
    }


async def test_tools_list_shows_each_alias_and_an_alias_calls_its_tool(
    client: TemporalClient, settings: Settings
) -> None:
    async with mcp_client(client, settings, "no-worker") as mcp:
        listed = {t.name: t for t in (await mcp.list_tools()).tools}
        assert set(listed) == set(TOOLS) | set(ALIASES)
        for alias, name in ALIASES.items():
            assert (listed[alias].description or "").startswith(f"Alias of {name} "), alias
            assert listed[alias].input_schema == listed[name].input_schema
        # No run needed: profiles and the estimate answer from this process.
        for alias, name, args in (
            ("profile_get", "profile_show", {"name": "balanced"}),
            ("estimate", "plan", {"task": "Sort a list", "provider": "sim"}),
        ):
            assert structured(await mcp.call_tool(alias, args)) == structured(
                await mcp.call_tool(name, args)
            )
        unknown = await mcp.call_tool("profile_get", {"name": "nope"})
        assert tool_failure(unknown)["code"] == "profile.not_found"


# -- one code per mistake --------------------------------------------------------------------


def test_a_fix_is_split_off_outside_brackets() -> None:
    failure = describe(
        ConfigError(
            "profile.not_found",
            "no saved profile 'x': see ponder profile list (built-in: quick, balanced, paper)",
        )
    )
    assert failure.problem == "no saved profile 'x'"
    assert failure.fix == "see ponder profile list (built-in: quick, balanced, paper)"
    bare = describe(ConfigError("x.y", "no fix here (a: list of things)"))
    assert bare.problem == "no fix here (a: list of things)" and bare.fix == "see the message"
    several = "n must be >= 2 (got 1): raise n; k must be < n (got 2): lower k"
    joined = describe(ConfigError("x.y", several))
    assert (joined.problem, joined.fix) == (several, "see the message")


async def test_several_problems_keep_their_own_fixes_over_mcp(
    client: TemporalClient, settings: Settings
) -> None:
    async with mcp_client(client, settings, "no-worker") as mcp:
        failure = tool_failure(
            await mcp.call_tool("plan", {"task": "Hi", "provider": "sim", "n": 1})
        )
    assert failure["code"] == "profile.invalid"
    assert "use at least two candidates; " in failure["message"]
    assert failure["message"].endswith("lower m or raise n")


async def test_profile_show_splits_its_message_from_its_fix(
    client: TemporalClient, settings: Settings
) -> None:
    async with mcp_client(client, settings, "no-worker") as mcp:
        failure = tool_failure(await mcp.call_tool("profile_show", {"name": "nope"}))
    assert failure["code"] == "profile.not_found"
    assert failure["message"] == "no saved profile 'nope'"
    assert failure["fix"] == "see ponder profile list (built-in: quick, balanced, paper)"


async def test_a_mistake_has_one_code_on_the_command_line_and_over_mcp(
    client: TemporalClient, settings: Settings, server_address: str
) -> None:
    env = _env(settings, server_address, "no-worker")
    cases: list[tuple[tuple[str, ...], tuple[str, dict[str, Any]], str]] = [
        # (what the command line gives, what an MCP client gives, the one code)
        (("think", "Hi", "--provider", "sim", "--seed", "-1"),
         ("think", {"task": "Hi", "provider": "sim", "seed": -1}), "input.invalid"),
        (("think", "Hi", "--provider", "sim", "--bootstrap-resamples", "20000", "--dry-run"),
         ("plan", {"task": "Hi", "provider": "sim", "bootstrap_resamples": 20000}),
         "input.invalid"),
        (("think", "Hi", "--schedule", "bogus", "--dry-run"),
         ("plan", {"task": "Hi", "schedule": "bogus"}), "input.invalid"),
        (("ask",), ("ask", {}), "usage.invalid"),
        (("extend", "some-run"), ("extend", {"run_id": "some-run"}), "option.missing"),
        (("ask", "Hi", "--no-such-flag"), ("ask", {"question": "Hi", "no_such": 1}),
         "usage.invalid"),
    ]  # fmt: skip
    async with mcp_client(client, settings, "no-worker") as mcp:
        for argv, (tool, args), code in cases:
            done = await ponder(*argv, env=env)
            assert (done.code, _code(done)) == (2, code), (argv, done.err)
            assert tool_failure(await mcp.call_tool(tool, args))["code"] == code, (tool, args)


async def test_extend_of_an_ended_run_is_run_ended_on_both_surfaces(
    client: TemporalClient, settings: Settings, server_address: str, worker_queue: str
) -> None:
    run_id = f"ask-ended-{uuid.uuid4().hex[:8]}"
    async with mcp_client(client, settings, worker_queue) as mcp:
        done = structured(
            await mcp.call_tool("ask", {"question": "Hi", "run_id": run_id, "wait": True})
        )
        assert done["status"] == "completed"
        refused = tool_failure(await mcp.call_tool("extend", {"run_id": run_id, "max_calls": 5}))
    done_cli = await ponder(
        "extend", run_id, "--calls", "5", env=_env(settings, server_address, worker_queue)
    )
    assert done_cli.code == 2 and _code(done_cli) == "run.ended"
    assert refused["code"] == "run.ended"
    said = f"run {run_id} has already ended (completed)"
    assert refused["message"] == said and refused["fix"] == "nothing to extend"
    assert f"ponder: run.ended: {said}: nothing to extend" in done_cli.err


# -- what ponder prints ----------------------------------------------------------------------

HINT = "unknown provider 'myllm': add [providers.NAME] to ponder.toml, or [bold]x[/bold]"


def test_the_plan_and_tournament_views_print_brackets_as_they_are(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from client.plan_display import print_plan_status
    from client.tournament_display import print_progress
    from workflows.budget import BudgetLimits, BudgetSpent
    from workflows.plan.status import PlanStatus
    from workflows.tournament.progress import Progress

    failed = Progress(
        run_id="r",
        status="failed",
        phase="generation",
        generation=0,
        calls_planned=4,
        budget=BudgetLimits(),
        spent=BudgetSpent(),
        error=HINT,
        refused=["[x] refused"],
    )
    print_progress("r", failed, None, None)
    plan = PlanStatus(run_id="p", plan="p", state="failed", error=HINT, refused=["[y] no"])
    print_plan_status(plan, as_json=False)
    out = " ".join(capsys.readouterr().out.split())
    assert out.count(HINT) == 2 and "[x] refused" in out and "[y] no" in out


async def test_status_of_a_failed_run_keeps_the_bracketed_hint(
    client: TemporalClient, settings: Settings, server_address: str, worker_queue: str
) -> None:
    # A model whose provider this worker's configuration lacks.
    run_id = f"think-bad-provider-{uuid.uuid4().hex[:8]}"
    payload = TournamentInput(task="Name a prime", model="myllm:foo", run_id=run_id)
    handle = await client.start_workflow(TOURNAMENT, payload, id=run_id, task_queue=worker_queue)
    with pytest.raises(WorkflowFailureError):
        await handle.result()
    env = _env(settings, server_address, worker_queue)
    shown = await ponder("status", run_id, env=env)
    as_json = await ponder("status", run_id, "--json", env=env)
    error = json.loads(as_json.out)["error"]
    assert "[providers.NAME]" in error  # what the hint says: what to add to ponder.toml
    assert error in " ".join(shown.out.split()), shown.out  # printed whole, brackets and all


async def test_rank_rows_say_sim_and_a_mutant_names_its_parent(
    client: TemporalClient, settings: Settings, server_address: str, worker_queue: str
) -> None:
    rank_id = f"rank-sim-{uuid.uuid4().hex[:8]}"
    candidates = [
        {"id": "a", "text": "Use a heap."},
        {"id": "b", "text": "Sort, then scan."},
        {"id": "c", "text": "Binary search the answer."},
    ]
    async with mcp_client(client, settings, worker_queue) as mcp:
        ranked = structured(
            await mcp.call_tool(
                "rank",
                {"task": "Sort", "candidates": candidates, "run_id": rank_id, "wait": True},
            )
        )
        assert ranked["status"] == "completed"
        mutated = structured(
            await mcp.call_tool(
                "mutate",
                {"task": "Sort", "candidate": "Use a heap.", "critique": "say why", "wait": True},
            )
        )
        # DeepThonk's names for the run tools answer as ponder's do.
        listed = structured(await mcp.call_tool("runs_list", {"kind": "rank"}))
        assert listed == structured(await mcp.call_tool("list_runs", {"kind": "rank"}))
        shown = structured(await mcp.call_tool("think_status", {"run_id": rank_id}))
        assert shown["status"] == "completed" and shown["kind"] == "tournament"
        exported = structured(await mcp.call_tool("run_export", {"run_id": rank_id}))
        assert exported == structured(await mcp.call_tool("export", {"run_id": rank_id}))
        # A completed tournament: Temporal alone would say "workflow not found".
        ended = tool_failure(await mcp.call_tool("extend", {"run_id": rank_id, "max_calls": 9}))
        assert ended["code"] == "run.ended" and "(completed)" in ended["message"]

    ((_, tag),) = parse_trailers(mutated["answer"])
    assert tag == "mutated"  # not the Ask's call key, ask-0-0
    row = store_row(settings.runs_dir, rank_id)
    assert row is not None and row.simulated and row.usd == 0.0
    (rank_row,) = [r for r in listed["runs"] if r["run_id"] == rank_id]
    assert rank_row["simulated"] is True
    table = await ponder("runs", env=_env(settings, server_address, worker_queue))
    header = table.out.splitlines()[0]
    (line,) = [line for line in table.out.splitlines() if line.startswith(rank_id)]
    end = header.index("usd") + len("usd")  # the column is right-aligned under its name
    assert line[:end].split()[-1] == "sim", table.out


def test_a_sim_mutant_of_a_sim_candidate_is_named_after_it() -> None:
    prompt = "Improve this.\n\nSimulated answer.\nwords\n[sim q=0.250 id=g0-c3]\n\nCritique: x"
    request = ModelRequest(model="sim:default", prompt=prompt, role="mutate")
    ((quality, tag),) = parse_trailers(simulate(request, 1, "ask/0/0", SimOptions()))
    assert tag == "g0-c3-mutated" and quality > 0.25  # a mutant gains
    # In a tournament the workflow names the candidate: that name stays.
    tagged = ModelRequest(model="sim:default", prompt=prompt, role="mutate", tag="g1-c0")
    assert parse_trailers(simulate(tagged, 1, "m/0/0", SimOptions()))[0][1] == "g1-c0"
    asked = ModelRequest(model="sim:default", prompt="Hi", role="ask")
    assert parse_trailers(simulate(asked, 1, "ask/0/0", SimOptions()))[0][1] == "ask-0-0"
