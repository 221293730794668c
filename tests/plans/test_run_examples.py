"""Every plan in examples/plans/ (and the reference's loop-plan/1 example) runs to completion: each
found by glob runs through ``ponder plan run`` on the embedded default as its header says (the
last test), and the tests before it check what each one does.

Agents are a small command agent the test worker declares (``[providers.writer]``, the way a
user declares ``claude -p``): run in the workspace, it writes the files a step declares, answers a
model gate with a verdict and a contract with a matching JSON object. Plans that write no
files run on the simulated provider.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError

from activities.config import Endpoint, Settings
from client.run_list import store_row
from tests.conftest import with_endpoint
from tests.plans.helpers import LOOP_EXAMPLE_PATH
from tests.plans.run_helpers import events, failure, start, status, wait_state
from tests.plans.test_run_worktrees import git, make_repo
from worker.worker import WorkerOptions, running_worker
from workflows.names import UPDATE_RESOLVE_GATE, UPDATE_RESUME, UPDATE_REVERT, UPDATE_STEP_DONE
from workflows.plan.checkpoints import RevertInput
from workflows.plan.consumer import StepDoneInput
from workflows.plan.document import parse_text
from workflows.plan.run_types import PlanRunResult, ResolveGateInput, ResumeInput
from workflows.plan.training import safe_name

pytestmark = pytest.mark.slow  # started first: see tests/conftest.py

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "plans"
WRITER = EXAMPLES.parent / "agents" / "writer.py"  # the command agent the examples ship
WRITER_EXECUTORS = {"claude": "writer:agent", "openai": "writer:agent"}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "docs").mkdir(parents=True)
    return root


@pytest.fixture
async def queue(client: Client, settings: Settings) -> AsyncIterator[str]:
    writer = Endpoint(kind="command", argv=[sys.executable, str(WRITER)])
    name = f"test-{uuid.uuid4()}"
    async with running_worker(
        client, with_endpoint(settings, "writer", writer), WorkerOptions(task_queue=name)
    ):
        yield name


def example(name: str) -> dict[str, Any]:
    path = EXAMPLES / name if name != "loop-plan-1" else LOOP_EXAMPLE_PATH
    doc, errors = parse_text(path.read_text(), filename=str(path))
    assert not errors
    assert isinstance(doc, dict)
    return doc


async def test_code_change_with_a_cross_family_qe_gate(
    client: Client, queue: str, workspace: Path
) -> None:
    plan = example("code-change-qe.yaml")
    run = {"executors": WRITER_EXECUTORS, "workspace": str(workspace)}
    refused = await failure(client, queue, plan, coder_family="claude", **run)
    assert refused.type == "same-family-qe-refused"  # review (opus) is the coder's family
    handle = await start(client, queue, plan, coder_family="openai", **run)
    result: PlanRunResult = await handle.result()
    assert result.outputs["review"].rstrip().endswith("GATE: PASS")
    assert (workspace / "docs" / "plan.md").read_text() == "written for plan\n"


async def test_research_fanout_with_a_quorum(client: Client, queue: str, workspace: Path) -> None:
    plan = example("research-fanout.yaml")
    handle = await start(
        client, queue, plan, executors=WRITER_EXECUTORS, default_family="claude",
        workspace=str(workspace), args={"topic": "durable execution"},
    )  # fmt: skip
    result: PlanRunResult = await handle.result()
    answers = result.outputs["research"]
    assert len(answers) == 3 and all(json.loads(a)["answer"] == "a" for a in answers)
    assert result.outputs["summary"].startswith("done: Summarise these answers")


async def test_a_plan_with_a_tournament_step(client: Client, queue: str) -> None:
    plan = example("tournament-step.yaml")
    handle = await start(
        client, queue, plan, executors={"claude": "sim:default"}, default_family="claude",
        args={"problem": "a rate limiter"},
    )  # fmt: skip
    result: PlanRunResult = await handle.result()
    assert "[sim q=" in result.outputs["designs"] and result.simulated


async def test_release_with_approval_gate_and_a_typed_pause(
    client: Client, queue: str, workspace: Path
) -> None:
    plan = example("release-approval.yaml")
    handle = await start(
        client, queue, plan, executors=WRITER_EXECUTORS, default_family="claude",
        workspace=str(workspace), args={"approved_by": "ada"},
    )  # fmt: skip
    gate = await wait_state(handle, "awaiting_gate")
    assert (workspace / "RELEASE.md").exists()
    token = gate.pending_gates[0].token
    await handle.execute_update(
        UPDATE_RESOLVE_GATE, ResolveGateInput(step="approve", decision="approve", token=token)
    )
    paused = await wait_state(handle, "awaiting_input")
    assert paused.pending_pause and paused.pending_pause.resume_arg == "tag"
    with pytest.raises(WorkflowUpdateFailedError) as bad:
        await handle.execute_update(UPDATE_RESUME, ResumeInput(args={"tag": '"1.2"'}))
    assert "tag must match" in str(bad.value.cause)
    await handle.execute_update(UPDATE_RESUME, ResumeInput(args={"tag": '"v1.2.3"'}))
    result: PlanRunResult = await handle.result()
    assert result.outputs["tag"] == "v1.2.3"
    assert "release v1.2.3, approved by ada" in result.outputs["announce"]


@pytest.mark.parametrize("name", ["loop-plan-review.json", "loop-plan-1"])
async def test_loop_plan_examples(client: Client, queue: str, workspace: Path, name: str) -> None:
    plan = example(name)
    handle = await start(
        client, queue, plan, executors=WRITER_EXECUTORS, workspace=str(workspace),
        args={"approved_by": "ada"},
    )  # fmt: skip
    result: PlanRunResult = await handle.result()
    gate = "check" if name.startswith("loop-plan-review") else "review"
    assert result.outputs[gate].rstrip().endswith("GATE: PASS")
    fanout = "summaries" if gate == "check" else "notes"
    assert all(v and v.startswith("done: ") for v in result.outputs[fanout])


async def test_a_sub_flow_called_twice_with_its_own_inputs(client: Client, queue: str) -> None:
    plan = example("subflow-review.yaml")
    handle = await start(client, queue, plan, args={"product": "ponder"})
    result: PlanRunResult = await handle.result()
    out = {k: v.splitlines()[0] for k, v in result.outputs.items() if isinstance(v, str)}
    assert out["docs"] == (
        'Simulated answer to: Draft The ponder user guide with the sections ["Install", '
        '"First run", "Plans"].'
    )
    assert out["faq/draft"].startswith("Simulated answer to: Draft The ponder FAQ with the")
    assert out["docs/check"] == out["faq/check"] == "GATE: PASS"  # each body redid once
    assert result.calls == 10 and result.simulated


async def test_budgets_at_three_levels(client: Client, queue: str) -> None:
    handle = await start(client, queue, example("nested-budgets.yaml"))
    result: PlanRunResult = await handle.result()
    assert "fallback" not in result.outputs and len(result.outputs["angles"]) == 3
    assert result.outputs["polish/tighten"].startswith('Simulated answer to: Tighten: ["')
    final = await status(handle)
    spent = {ledger.owner: (ledger.scope, ledger.calls_spent) for ledger in final.ledgers}
    assert spent == {
        "brief": ("step", 1), "angles": ("step", 3), "polish": ("subflow", 2),
    }  # fmt: skip
    assert final.steps["fallback"] == "skipped"


async def test_a_gate_deadline_escalates_then_approves_by_default(
    client: Client, queue: str
) -> None:
    plan = example("gate-deadline.yaml")
    handle = await start(client, queue, plan, args={"version": "1.2"})
    waiting = await wait_state(handle, "awaiting_gate")
    assert waiting.pending_gates[0].default == "approve"
    result: PlanRunResult = await handle.result()
    assert result.outputs["approve"] == "approve" and result.simulated
    kinds = [e.type for e in await events(handle)]
    assert kinds.index("gate.escalated") < kinds.index("gate.defaulted")


async def test_a_worktree_fanout_lands_each_items_notes(
    client: Client, queue: str, tmp_path: Path
) -> None:
    plan = example("worktree-fanout.yaml")
    repo = make_repo(tmp_path / "repo")
    before = git(repo, "status", "--porcelain")
    handle = await start(
        client, queue, plan, executors=WRITER_EXECUTORS, default_family="claude",
        workspace=str(repo),
    )  # fmt: skip
    result: PlanRunResult = await handle.result()
    assert result.outputs["summary"].startswith("done: Summarise these reviews")
    for name in ("parser", "planner", "runner"):
        assert (repo / "notes" / f"{name}.md").read_text() == f"notes on {name}\n"
    assert git(repo, "diff", "--cached", "--name-only") == ""  # landed on the files only
    landed = sorted(git(repo, "status", "--porcelain").splitlines())
    assert landed == sorted([*before.splitlines(), "?? notes/"])
    # On the simulated provider the items change nothing: the region lands an empty merge.
    sim = await start(
        client, queue, plan, executors={"claude": "sim:default"}, default_family="claude",
        workspace=str(repo),
    )  # fmt: skip
    assert (await sim.result()).simulated
    assert sorted(git(repo, "status", "--porcelain").splitlines()) == landed


async def test_training_pairs_are_captured_once(
    client: Client, queue: str, settings: Settings
) -> None:
    plan = example("training-pairs.yaml")
    for _ in range(2):  # each run writes its own files
        handle = await start(client, queue, plan, args={"topic": "durable execution"})
        result: PlanRunResult = await handle.result()
        assert result.capture_failures == []
        run_dir = settings.training_dir / safe_name("training-pairs") / handle.id
        written = {p.name: p.read_text().splitlines() for p in run_dir.glob("*.jsonl")}
        assert sorted(map(len, written.values())) == [1, 2]  # outline; one per section item


async def test_a_set_step_computes_values_for_a_later_prompt(client: Client, queue: str) -> None:
    plan = example("set-values.yaml")
    handle = await start(client, queue, plan, args={"pages": "12", "audience": "engineers"})
    result: PlanRunResult = await handle.result()
    assert result.outputs["plan"] == {
        "sections": 4, "pages_each": 3, "long": True, "title": "A guide for engineers"
    }  # fmt: skip
    assert 'Write "A guide for engineers": 4 sections of about 3 pages' in result.outputs["write"]
    assert result.calls == 2 and result.simulated


async def test_ensure_checks_retry_then_a_judge_passes(
    client: Client, queue: str, workspace: Path
) -> None:
    (workspace / "CHANGELOG.md").write_text("## 1.2\n- Fixed a crash on start\n")
    plan = example("ensure-checks.yaml")
    handle = await start(
        client, queue, plan, workspace=str(workspace), args={"changelog": "CHANGELOG.md"}
    )
    result: PlanRunResult = await handle.result()
    assert json.loads(result.outputs["summarise"])["bullets"][0] == "Fixed a crash"
    assert result.calls == 3  # two dispatches (the first had two bullets) and one judge call


async def test_iterate_until_the_condition_holds(client: Client, queue: str) -> None:
    plan = example("iterate-until.yaml")
    handle = await start(client, queue, plan, args={"goal": "0.8"})
    result: PlanRunResult = await handle.result()
    assert json.loads(result.outputs["draft"])["score"] == 0.9
    assert "fallback" not in result.outputs
    assert "Long model work that survives anything." in result.outputs["publish"]


async def test_a_consumer_step_answered_with_step_done(client: Client, queue: str) -> None:
    plan = example("consumer-step.yaml")
    handle = await start(client, queue, plan, args={"change": "add retries"})
    issued = await wait_state(handle, "awaiting_consumer")
    token = issued.issuances[0].token
    patch = {"output": {"summary": "retries added", "files": ["client.py"]}}
    await handle.execute_update(
        UPDATE_STEP_DONE, StepDoneInput(step="implement", token=token, result=patch)
    )
    result: PlanRunResult = await handle.result()
    assert "Review the change retries added." in result.outputs["review"]


async def test_a_checkpoint_reverted_at_the_gate(client: Client, queue: str) -> None:
    plan = example("checkpoint-revert.yaml")
    handle = await start(client, queue, plan, args={"topic": "durable execution"})
    first = (await wait_state(handle, "awaiting_gate")).pending_gates[0].token
    await handle.execute_update(UPDATE_REVERT, RevertInput(label="outlined"))
    again = await wait_for_token(handle, first)
    await handle.execute_update(
        UPDATE_RESOLVE_GATE, ResolveGateInput(step="approve", decision="approve", token=again)
    )
    result: PlanRunResult = await handle.result()
    assert result.calls == 4  # outline, draft, draft again, publish
    assert (await status(handle)).checkpoints == ["outlined", "drafted"]


async def wait_for_token(handle: Any, old: str) -> str:
    """The gate's token once it has reopened with a new one."""
    for _ in range(400):
        gates = (await status(handle)).pending_gates
        if gates and gates[0].token != old:
            return gates[0].token
        await asyncio.sleep(0.05)
    raise AssertionError("the gate did not reopen")


# -- every example, as its own header says to run it on the embedded default ------------------


def recipe(path: Path) -> list[str]:
    """The command lines of an example's leading comment, each ``#`` and three spaces before it
    (a JSON example, which has no comments: the ``ponder ...`` commands its description ends
    with, three spaces before each): how it runs as is, from a fresh clone's root. A line may
    prepare what the run needs (``git init``) or answer it while it waits (``ponder revert``,
    ``ponder step-done``); a trailing ``  # ...`` is a remark."""
    if path.suffix == ".json":
        description = json.loads(path.read_text()).get("description", "")
        return [c.strip() for c in description.split("   ") if c.startswith("ponder ")]
    found = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        if line.startswith("#   "):
            found.append(line[1:].split("  #")[0].strip())
    return found


ALL_EXAMPLES = sorted(p.name for p in EXAMPLES.glob("*") if p.suffix in {".yaml", ".json"})


@pytest.fixture(scope="module")
async def example_shell(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Any]:
    from tests.readme_shell import readme_shell

    async with readme_shell(tmp_path_factory.mktemp("examples")) as shell:
        yield shell


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", ALL_EXAMPLES)
async def test_every_example_runs_on_the_embedded_default_as_its_header_says(
    name: str, example_shell: Any
) -> None:
    """Found by glob, so an example added later is covered: its leading comment gives the
    lines that run it on the embedded default (sim, a family mapped to sim with
    ``--executor``, or the command agent ``examples/agents.toml`` declares), the first
    ``ponder plan run`` with ``--run-id``; after them the run completes."""
    lines = recipe(EXAMPLES / name)
    runs = [line for line in lines if re.match(r"ponder (--config \S+ )?plan run ", line)]
    assert runs, f"examples/plans/{name}: give its header a `#   ponder plan run ...` line"
    start = re.match(r"ponder (--config \S+ )?plan run ", runs[0])
    run = re.search(r"--run-id (\S+)", runs[0])
    assert start and run, runs[0]
    config = start.group(1) or ""  # each line names the worker's configuration alike
    for line in lines:
        # Each line succeeds, or (a ponder line) leaves the run waiting for the next: exit 75.
        await example_shell.run(line, expect=None, timeout=200)
        ran = example_shell.log[-1]
        code = re.search(r"\(exit (\d+),", ran)
        ok = {"0", "75"} if line.startswith("ponder ") else {"0"}
        assert code and code.group(1) in ok and "Traceback" not in ran, ran
    # The run store's record of the run (what `ponder runs` lists), read here: a `ponder status`
    # every half second cost 1-2 s of CPU each on a loaded machine. A gate's deadline decides
    # within seconds, in the background worker the paused command left the run to.
    for _ in range(600):
        row = store_row(example_shell.home / "runs", run.group(1))
        if row is not None and row.status == "completed":
            return
        if row is not None and row.status in ("failed", "cancelled"):
            break
        await asyncio.sleep(0.2)
    shown = await example_shell.run(f"ponder {config}status {run.group(1)}", expect=None)
    raise AssertionError("\n".join(example_shell.log)[-4000:] + shown)
