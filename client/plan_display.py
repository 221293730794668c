"""How ``ponder status`` and ``plan run`` show a plan run: its status table, each step's state,
pending gates and pauses, and the command that continues it.

No SDK import: ``status`` of a live run reads it over the server's HTTP API
(``client.status_http``) and should answer at once.
"""

from __future__ import annotations

import json

import click
from rich.table import Table

from activities.config import Settings
from client.consoles import text_console
from client.hints import ledger_extend, ponder_program
from workflows.plan.status import LedgerStatus, PlanBudgetStatus, PlanStatus

__all__ = [
    "blocking_limit",
    "continue_command",
    "ledger_line",
    "print_plan_status",
    "status_table",
    "steps_line",
]


def blocking_limit(b: PlanBudgetStatus) -> str | None:
    """The token or USD limit a budget pause waits on (the ledger's rule: spent at or over the
    limit), else None (calls or wall clock: the need says how much)."""
    if b.tokens_limit is not None and b.input_tokens + b.output_tokens >= b.tokens_limit:
        return "tokens"
    if b.usd_limit is not None and b.usd >= b.usd_limit:
        return "usd"
    return None


def status_table(s: PlanStatus) -> Table:
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_row("run", s.run_id + (" (simulated)" if s.simulated else ""))
    table.add_row("plan", s.plan)
    table.add_row("state", s.state + (f" ({s.reason})" if s.reason else ""))
    if s.step:
        table.add_row("step", s.step)
    table.add_row("steps", steps_line(s.steps))
    if s.budget:
        b = s.budget
        table.add_row(
            "calls",
            f"{b.calls_spent} spent, {b.calls_left} left of {b.calls_limit} (cap {b.calls_cap})",
        )
        table.add_row(
            "wall",
            f"{b.wall_spent_ms} ms spent, {b.wall_left_ms} ms left of {b.wall_limit_ms} ms "
            f"(cap {b.wall_cap_ms} ms)",
        )
        since = f", waiting since {s.waiting_since}" if s.waiting_since else ""
        table.add_row("waited", f"{b.waited_ms} ms for a person (not charged to wall){since}")
        table.add_row("tokens", f"{b.input_tokens} in, {b.output_tokens} out, {b.usd:.4f} USD")
        if b.need:
            table.add_row("needs", b.need)
    for ledger in s.ledgers:
        table.add_row("ledger", ledger_line(ledger))
    for waiver in s.waivers:
        table.add_row("waiver", waiver)
    for refusal in s.refused[-3:]:
        table.add_row("refused", refusal)
    return table


def steps_line(steps: dict[str, str]) -> str:
    """``3 / 7 settled, 2 skipped, 2 running``: skipped ones (a false ``when``, an untaken
    route) are done too, and more than one step runs at once when the plan allows it."""
    states = list(steps.values())
    shown = f"{states.count('settled')} / {len(states)} settled"
    for state in ("skipped", "running", "waiting"):
        if count := states.count(state):
            shown += f", {count} {state}"
    return shown


def ledger_line(ledger: LedgerStatus) -> str:
    """``OWNER (step|subflow): calls 2/3, tokens 40/100, usd 0.0000, wall 120/60000 ms``: spent
    of each limit the ledger has (a kind without a limit shows what was spent alone)."""

    def part(name: str, spent: float, limit: float | None, unit: str = "") -> str:
        shown = f"{spent:.4f}" if name == "usd" else f"{int(spent)}"
        return f"{name} {shown}" + ("" if limit is None else f"/{limit:g}") + unit

    parts = [
        part("calls", ledger.calls_spent, ledger.calls_limit),
        part("tokens", ledger.tokens_spent, ledger.tokens_limit),
        part("usd", ledger.usd_spent, ledger.usd_limit),
        part("wall", ledger.wall_spent_ms, ledger.wall_limit_ms, " ms"),
    ]
    return f"{ledger.owner} ({ledger.scope}): " + ", ".join(parts)


def continue_command(s: PlanStatus) -> str:
    """The exact command that continues a paused run."""
    if s.state == "awaiting_input" and s.pending_pause:
        value = "JSON" if s.pending_pause.json_schema else "VALUE"
        return f"{ponder_program()} resume {s.run_id} --arg {s.pending_pause.resume_arg}={value}"
    if s.state == "awaiting_gate" and s.pending_gates:
        # Runnable as printed; the other decisions are named beside it.
        step = s.pending_gates[0].step
        return f"{ponder_program()} gate approve {s.run_id} {step}  (or: revise, kill)"
    if s.state == "awaiting_consumer" and s.issuances:
        i = s.issuances[0]
        return f"{ponder_program()} step-done {s.run_id} {i.step} --token {i.token} --output @FILE"
    b = s.budget
    p = ponder_program()
    if b and (command := ledger_extend(b.need)) is not None:
        return command
    if b and s.state == "awaiting_wall_clock":
        return f"{p} extend {s.run_id} --wall-ms {max(b.wall_cap_ms, 1)}"
    if b and blocking_limit(b) == "tokens":
        return f"{p} extend {s.run_id} --tokens +{max(b.input_tokens + b.output_tokens, 1)}"
    if b and blocking_limit(b) == "usd":
        return f"{p} extend {s.run_id} --usd +{max(b.usd, 0.01):.2f}"
    if b:
        return f"{p} extend {s.run_id} --calls {b.calls_cap}"
    return f"{p} status {s.run_id}"


def print_plan_status(
    shown: PlanStatus, *, as_json: bool, settings: Settings | None = None
) -> None:
    if as_json:
        click.echo(json.dumps(shown.model_dump(mode="json"), indent=2))
        return
    out = text_console()
    out.print(status_table(shown))
    for step, state in shown.steps.items():
        out.print(f"  {step:<24} {state}")
    for pending in shown.pending_gates:
        out.print(f"gate     {pending.step} token {pending.token} (round {pending.round})")
        if pending.deadline_at is not None:
            out.print(f"deadline {pending.deadline_at}: then {pending.default}", markup=False)
        if pending.escalate_at is not None:
            done = "escalated" if pending.escalated else "escalates"
            to = f" to {pending.notify}" if pending.notify else ""
            out.print(f"         {done} at {pending.escalate_at}{to}", markup=False)
    for issued in shown.issuances:
        item = "" if issued.item is None else f" item {issued.item}"
        out.print(
            f"consumer {issued.step}{item} token {issued.token} (attempt {issued.attempt}, "
            f"until {issued.deadline_at})",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    if shown.checkpoints:
        out.print("checkpoints " + ", ".join(shown.checkpoints), markup=False, highlight=False)
    if shown.resumed:
        out.print("resumed  " + ", ".join(shown.resumed), markup=False, highlight=False)
    for failure in shown.capture_failures:
        detail = f": {failure.detail}" if failure.detail else ""
        out.print(
            f"capture  {failure.step} not captured ({failure.reason}){detail}",
            markup=False,
            highlight=False,
        )
    if (pause := shown.pending_pause) is not None:
        schema = json.dumps(pause.json_schema) if pause.json_schema else "none (a string)"
        out.print(
            f"pause    {pause.step} ({pause.state}) resume_arg {pause.resume_arg} schema {schema}",
            markup=False,
            highlight=False,
            soft_wrap=True,  # one line, so the schema can be copied whole
        )
    if shown.error:
        out.print(f"error    {shown.error}")
    report = settings.runs_dir / shown.run_id / "report.html" if settings else None
    if report is not None and report.exists():
        out.print(f"report   {report}", markup=False, highlight=False, soft_wrap=True)
    if shown.state.startswith("awaiting_"):
        out.print(f"continue with: {continue_command(shown)}")
