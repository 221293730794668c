"""Every plan run writes report.html beside its trace: at each wait and when it ends.

Real runs on the dev server; the report is parsed as a DOM (stdlib HTMLParser), and each step's
node and row are read: state, attempts, gate verdicts and decisions, waits, cost; then the run's
arguments, each wait with who decided it and when, and each step's output.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowFailureError

from activities.config import Endpoint, Settings
from tests.conftest import with_endpoint
from tests.fakes import FakeProvider
from tests.plans.run_helpers import agent, plan_doc, start, wait_state
from tests.tournament.test_report import Node, parse
from worker.worker import WorkerOptions, running_worker
from workflows.names import UPDATE_RESOLVE_GATE, UPDATE_RESUME
from workflows.plan.run_types import ResolveGateInput, ResumeInput

EVIL = "<script>alert('x')</script>"

PLAN = plan_doc(
    {
        "id": "owner",
        "kind": "pause",
        "pause": {"state": "AWAITING_OWNER", "resume_arg": "owner"},
    },
    agent("code", "Write it for ${input.owner}.", "first draft", "second draft", deps=["owner"]),
    {
        "id": "review",
        "kind": "gate",
        "deps": ["code"],
        "model": "sim:default",
        "prompt": "Review it. End with GATE: PASS or GATE: FAIL.",
        "fail_route": "code",
        "max_redos": 1,
        "x-sim": {"outputs": ["needs work\nGATE: FAIL", f"{EVIL}\nGATE: PASS"]},
    },
    {"id": "ship", "kind": "gate", "deps": ["review"], "gate": {}},
    agent("announce", "Announce it.", deps=["ship"]),
    name="reported",
)


def _report(settings: Settings, run_id: str) -> tuple[Node, dict[str, Node], dict[str, Node]]:
    page = (settings.runs_dir / run_id / "report.html").read_text()
    assert EVIL not in page  # model text is escaped
    root = parse(page).root
    rows = {r.attrs["data-step"] or "": r for r in root.find_all("tr", cls="step-row")}
    nodes = {n.attrs["data-step"] or "": n for n in root.find_all("div", cls="node")}
    return root, rows, nodes


async def _report_at(
    settings: Settings, run_id: str, status: str
) -> tuple[Node, dict[str, Node], dict[str, Node]]:
    """The report once it shows ``status`` (the run's state changes before its write lands)."""
    path = settings.runs_dir / run_id / "report.html"
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60  # not 200 polls (about 10 s): a loaded worker writes later
    while not (path.exists() and f'id="status">{status}<' in path.read_text()):
        assert loop.time() < deadline, f"report.html never showed {status}"
        await asyncio.sleep(0.05)
    return _report(settings, run_id)


def _cells(row: Node) -> list[str]:
    return [td.text() for td in row.find_all("td")]


def _fact(root: Node, fact_id: str) -> str:
    return root.one("dd", id=fact_id).text()


async def test_a_run_writes_its_report_at_each_wait_and_at_the_end(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    handle = await start(client, worker_queue, PLAN)
    run_id = handle.id
    await wait_state(handle, "awaiting_input")
    root, rows, nodes = await _report_at(settings, run_id, "awaiting_input")
    assert _fact(root, "status") == "awaiting_input"
    assert nodes["owner"].attrs["data-state"] == "waiting"
    assert "AWAITING_OWNER" in _cells(rows["owner"])[5]
    assert set(nodes) == {"owner", "code", "review", "ship", "announce"}
    assert rows["code"].attrs["data-state"] == "pending"

    await handle.execute_update(UPDATE_RESUME, ResumeInput(args={"owner": "ada"}))
    at_gate = await wait_state(handle, "awaiting_gate")
    _, rows, nodes = await _report_at(settings, run_id, "awaiting_gate")
    assert nodes["ship"].attrs["data-state"] == "waiting"
    assert _cells(rows["review"])[4] == "fail, pass"  # the redo shows as two verdicts
    token = at_gate.pending_gates[0].token
    decision = ResolveGateInput(step="ship", decision="approve", token=token, by="grace")
    await handle.execute_update(UPDATE_RESOLVE_GATE, decision)
    result = await handle.result()

    root, rows, nodes = _report(settings, run_id)
    assert _fact(root, "status") == "completed"
    assert {n.attrs["data-state"] for n in nodes.values()} == {"settled"}
    _, state, after, attempts, verdicts, _, calls, tokens, usd, models = _cells(rows["code"])
    assert (state, after, attempts, calls, models) == ("settled", "owner", "2", "2", "sim:default")
    assert verdicts == ""  # an agent step has none
    assert tokens.endswith(" out") and int(tokens.split()[0]) > 0 and usd
    assert _cells(rows["ship"])[4] == "approve" and _cells(rows["ship"])[5].startswith("gate ")
    assert _cells(rows["owner"])[5].startswith("AWAITING_OWNER ")  # with how long it waited
    assert _cells(rows["owner"])[5].endswith(" s")
    assert _cells(rows["announce"])[3] == "1"
    # The graph: one column per depth, each step right of what it runs after.
    levels = [
        [n.attrs["data-step"] for n in level.find_all("div", cls="node")]
        for level in root.one("section", id="graph").find_all("div", cls="level")
    ]
    assert levels == [["owner"], ["code"], ["review"], ["ship"], ["announce"]]
    assert "2 attempts" in nodes["code"].text() and "in, " in nodes["code"].text()
    assert "fail, pass" in nodes["review"].text()
    cost = json.loads((settings.runs_dir / run_id / "cost.json").read_text())
    assert cost["calls"] == sum(int(_cells(r)[6].split()[0]) for r in rows.values())
    assert _fact(root, "calls") == str(cost["calls"]) == str(result.calls)

    # The run's arguments: owner came by resume, at the moment it was accepted.
    (owner,) = root.one("table", id="args").find_all("tr", cls="arg-row")
    key, value, source = _cells(owner)
    assert (key, value) == ("owner", "ada") and source.startswith("resume at 20")
    # Every wait: what it was, when it opened and closed, how long, how it ended, who decided.
    waits = [_cells(w) for w in root.one("table", id="waits").find_all("tr", cls="wait-row")]
    assert [w[:2] for w in waits] == [["owner", "pause"], ["ship", "gate"]]
    _, _, what, opened, closed, waited, outcome, by = waits[1]
    assert (what, outcome, by) == ("round 0", "approve", "grace")
    assert opened.startswith("20") and closed > opened and waited.endswith(" s")
    assert waits[0][2] == "AWAITING_OWNER (resume_arg owner)" and waits[0][6] == "resumed"
    # Each step's output, escaped, in plan order; the whole of each in outputs.json.
    shown = {
        o.attrs["data-step"]: o.one("pre").text()
        for o in root.one("section", id="outputs").find_all("div", cls="output")
    }
    assert list(shown) == ["owner", "code", "review", "ship", "announce"]
    assert shown["code"] == "second draft" and shown["ship"] == "approve"
    assert shown["review"] == f"{EVIL}\nGATE: PASS"  # shown as text, never as markup
    assert root.one("a", id="outputs-file").attrs["href"] == "outputs.json"
    saved = json.loads((settings.runs_dir / run_id / "outputs.json").read_text())
    assert saved == result.outputs


async def test_failed_and_cancelled_runs_leave_a_report(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    killed = await start(client, worker_queue, PLAN, args={"owner": "ada"})
    gate = await wait_state(killed, "awaiting_gate")
    kill = ResolveGateInput(step="ship", decision="kill", token=gate.pending_gates[0].token)
    await killed.execute_update(UPDATE_RESOLVE_GATE, kill)
    with pytest.raises(WorkflowFailureError):
        await killed.result()
    root, rows, nodes = _report(settings, killed.id)
    assert _fact(root, "status") == "failed (gate-killed)"
    assert nodes["ship"].attrs["data-state"] == "failed" and "kill" in _cells(rows["ship"])[4]
    assert "gate-killed" in root.one("pre", id="error").text() or "killed" in root.text()
    assert nodes["announce"].attrs["data-state"] == "pending"

    cancelled = await start(client, worker_queue, PLAN)
    await wait_state(cancelled, "awaiting_input")
    await cancelled.cancel()
    with pytest.raises(WorkflowFailureError):
        await asyncio.wait_for(cancelled.result(), 60)
    root, _, nodes = _report(settings, cancelled.id)
    assert _fact(root, "status") == "cancelled"
    assert Path(settings.runs_dir / cancelled.id / "graph.json").exists()


async def test_an_unpriced_model_costs_unknown_not_zero(
    client: Client, settings: Settings, fake: FakeProvider
) -> None:
    """A model with no price is shown as unknown in the report (never as $0.0000)."""
    local = with_endpoint(settings, "local", Endpoint(kind="openai", base_url=fake.url))
    queue = f"unpriced-{uuid.uuid4().hex[:8]}"
    plan = plan_doc(agent("ask", "Hi."), agent("free", "Hi.", deps=["ask"]))
    plan["steps"][0]["model"] = "local:some-model"
    async with running_worker(client, local, WorkerOptions(task_queue=queue)):
        handle = await start(client, queue, plan)
        await handle.result()
    root, rows, nodes = _report(settings, handle.id)
    assert _cells(rows["ask"])[8] == "unknown (1 unpriced call; priced 0.0000)"
    assert "USD unknown" in nodes["ask"].text()
    assert _cells(rows["free"])[8] == "0.0000"  # sim: free, and known to be
    assert _fact(root, "usd").startswith("unknown (1 unpriced call")
