"""``ponder``'s subcommands load on use: the table ``ponder --help`` lists from is the commands'
own help, and listing them imports none of them (commands answer at once)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from client.cli import COMMANDS, cli
from client.lazy_group import load_command


def run_probe(code: str, env: dict[str, str] | None = None) -> str:
    """The stdout of ``code`` run by a fresh interpreter: only it shows what an import loads."""
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120,
        env=env,
    ).stdout  # fmt: skip


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_listed_help_is_the_commands_own(name: str) -> None:
    target, listed = COMMANDS[name]
    command = load_command(target)
    assert command.name == name
    assert command.get_short_help_str(limit=1000) == listed


def test_every_command_resolves_with_config_after_the_subcommand() -> None:
    with click.Context(cli) as ctx:
        for name in COMMANDS:
            command = cli.get_command(ctx, name)
            assert command is not None
            assert any("--config" in param.opts for param in command.params), name


def test_ponder_help_imports_no_command_and_no_temporal() -> None:
    probe = (
        "import sys\n"
        "from client.cli import cli\n"
        "sys.argv = ['ponder', '--help']\n"
        "try:\n"
        "    cli.main(['--help'], standalone_mode=False)\n"
        "finally:\n"
        "    loaded = sorted(m for m in sys.modules if m.startswith(('client.', 'temporalio', "
        "'workflows', 'activities', 'numpy', 'mcp')))\n"
        "    print('LOADED', loaded)\n"
    )
    out = run_probe(probe)
    assert "Commands:" in out and "think" in out
    loaded = out.split("LOADED", 1)[1]
    assert loaded.strip() == "['client.cli', 'client.lazy_group']", loaded


def test_ponder_version_prints_the_installed_version_and_loads_no_command() -> None:
    from importlib.metadata import version

    probe = (
        "import sys\n"
        "from client.cli import cli\n"
        "sys.argv = ['ponder', '--version']\n"
        "try:\n"
        "    cli.main(['--version'], standalone_mode=False)\n"
        "finally:\n"
        "    loaded = sorted(m for m in sys.modules if m.startswith(('client.', 'temporalio', "
        "'workflows', 'activities', 'numpy', 'mcp', 'pydantic')))\n"
        "    print('LOADED', loaded)\n"
    )
    out = run_probe(probe)
    assert out.startswith(f"ponder {version('ponder')}\n"), out
    assert out.split("LOADED", 1)[1].strip() == "['client.cli', 'client.lazy_group']"


def test_the_campaign_workflow_loads_no_activity_code_numpy_or_jinja2() -> None:
    # The workflow names its activities (workflows.campaign.activity_contracts); the activity
    # modules, the report's jinja2 and its statistics' numpy stay out of a process until
    # something uses them.
    probe = (
        "import sys\n"
        "import workflows.campaign.workflow\n"
        "heavy = ('numpy', 'jinja2', 'activities.campaign.cells', 'activities.campaign.report', "
        "'workflows.campaign.stats')\n"
        "print('LOADED', sorted(m for m in heavy if m in sys.modules))\n"
    )
    out = run_probe(probe)
    assert out.split("LOADED", 1)[1].strip() == "[]", out


def test_the_report_of_an_ended_ask_run_loads_no_sdk_and_no_tournament_or_campaign_code(
    tmp_path: Path,
) -> None:
    # ponder report reads the run store alone: what renders another kind of run stays out.
    run = tmp_path / "runs" / "ask-1"
    (run / "artifacts").mkdir(parents=True)
    summary = {"run_id": "ask-1", "status": "completed", "model": "sim:default", "usage": {}}
    (run / "summary.json").write_text(json.dumps(summary))
    (run / "artifacts" / "answer.txt").write_text("forty-two")
    probe = (
        "import sys\n"
        "from client.cli import cli\n"
        "try:\n"
        "    cli.main(['report', 'ask-1'], standalone_mode=False)\n"
        "finally:\n"
        "    heavy = ('temporalio', 'httpx', 'numpy', 'client.campaign_control', "
        "'activities.tournament', 'workflows.tournament', 'workflows.plan')\n"
        "    print('LOADED', sorted({m.split('.')[0] if m.startswith(('temporalio', 'httpx', "
        "'numpy')) else m for m in sys.modules if m.startswith(heavy)}))\n"
    )
    env = {**os.environ, "PONDER_HOME": str(tmp_path), "PONDER_RUNS_DIR": str(tmp_path / "runs")}
    out = run_probe(probe, env)
    assert out.splitlines()[0] == str(run / "report.html")
    assert "forty-two" in (run / "report.html").read_text()
    assert out.split("LOADED", 1)[1].strip() == "[]", out


def test_plan_validate_loads_no_sdk_campaign_provider_or_profile_code(tmp_path: Path) -> None:
    # A plan's validation is the validator's alone: the campaign document and its route check
    # (which bring the Temporal SDK), the provider registry with its HTTP client and the saved
    # profile machinery load only for a document that names a tournament.
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "schema: ponder-plan/1\nname: tiny\nsteps:\n"
        "  - {id: a, kind: agent, prompt: Hi., model: 'sim:default'}\n"
    )
    probe = (
        "import sys\n"
        "from client.cli import cli\n"
        "try:\n"
        f"    cli.main(['plan', 'validate', {str(plan)!r}], standalone_mode=False)\n"
        "finally:\n"
        "    heavy = ('temporalio', 'httpx', 'numpy', 'activities.campaign', 'workflows.campaign', "
        "'activities.providers', 'client.profiles', 'client.tournament_options', "
        "'client.session')\n"
        "    print('LOADED', sorted({m.split('.')[0] if m.startswith(('temporalio', 'httpx', "
        "'numpy')) else m for m in sys.modules if m.startswith(heavy)}))\n"
    )
    env = {**os.environ, "PONDER_HOME": str(tmp_path / "home")}
    env.pop("PONDER_CONFIG", None)
    out = run_probe(probe, env)
    assert "valid ponder-plan/1 plan 'tiny'" in out, out
    assert out.split("LOADED", 1)[1].strip() == "[]", out


def _heavy_loaded(out: str) -> list[str]:
    """The ``LOADED [...]`` list a probe printed last."""
    loaded: list[str] = json.loads(out.rsplit("LOADED", 1)[1])
    return loaded


HEAVY = (
    *("temporalio", "httpx", "numpy", "scipy", "jsonschema", "mcp", "client.runs"),
    *("client.session", "client.profiles", "client.mcp.tools", "client.campaign_control"),
    *("activities.campaign.report", "workflows.campaign.stats", "workflows.tournament.types"),
    "workflows.tournament.preflight",
)
"""The SDK, HTTP, the statistics, the schema validator, the MCP SDK, the run commands, the
profile machinery, the MCP tool table, the campaign's activity and statistics, the tournament's
types: what a read or a refusal that does not need them should not pay for."""


def heavy_probe(*, allowed: tuple[str, ...] = (), stream: str = "sys.stdout") -> str:
    """Probe code that prints ``LOADED [...]``: the ``HEAVY`` modules (a package as its top
    name) the probe's process loaded, but ``allowed``."""
    watched = tuple(m for m in HEAVY if m not in allowed)
    return (
        f"watched = {watched!r}\n"
        "loaded = {m.split('.')[0] if '.' not in w else m for m in sys.modules for w in watched "
        "if m == w or m.startswith(w + '.')}\n"
        f"print('LOADED', json.dumps(sorted(loaded)), file={stream})\n"
    )


def test_a_refusal_loads_no_sdk_and_no_profile_machinery(tmp_path: Path) -> None:
    # A refusal is described without importing the SDK's exception classes (client.failures looks
    # them up among the loaded modules), and `profile show` refuses a name that is neither
    # built-in nor saved before the profile models load.
    probe = (
        "import json, sys\n"
        "from client.cli import cli, exit_code\n"
        "code = exit_code(cli, args=['profile', 'show', 'no-such-profile'], prog_name='ponder')\n"
        "print('CODE', code)\n" + heavy_probe()
    )
    env = {**os.environ, "PONDER_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120,
        env=env,
    )  # fmt: skip
    assert "CODE 2" in done.stdout, done.stdout
    assert done.stderr.strip() == (
        "ponder: profile.not_found: no saved profile 'no-such-profile': see ponder profile list "
        "(built-in: quick, balanced, paper)"
    ), done.stderr
    assert _heavy_loaded(done.stdout) == [], done.stdout


def test_a_saved_profile_is_still_shown_after_the_early_refusal_check(tmp_path: Path) -> None:
    # The early check looks for the file only: a saved profile goes on to the profile machinery.
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "mine.yaml").write_text("base: quick\ndescription: mine\n")
    env = {**os.environ, "PONDER_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "client", "profile", "show", "mine", "--json"],
        capture_output=True, text=True, check=False, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["description"] == "mine"


def test_describing_a_failure_imports_no_sdk() -> None:
    # The mapping of the SDK's errors is reached only for an exception whose class is the SDK's.
    probe = (
        "import json, sys\n"
        "import click\n"
        "from client.failures import describe\n"
        "from workflows.errors import PonderError\n"
        "shown = [describe(e).line() for e in (PonderError('x.y', 'bad: do this instead'), "
        "click.UsageError('no such option'), ValueError('boom'))]\n"
        "print('SHOWN', json.dumps(shown))\n" + heavy_probe()
    )
    out = run_probe(probe)
    shown = json.loads(out.split("SHOWN", 1)[1].split("\n", 1)[0])
    assert shown == [
        "x.y: bad: do this instead",
        "usage.invalid: ponder: no such option",
        "internal.error: ValueError: boom",
    ]
    assert _heavy_loaded(out) == [], out


MCP_HANDSHAKE = (
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    '"capabilities":{},"clientInfo":{"name":"probe","version":"0"}}}\n'
    '{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n'
)


def test_mcp_answers_initialize_and_tools_list_before_loading_the_tools_or_the_sdk(
    tmp_path: Path,
) -> None:
    # `ponder mcp` lists its tools from client/mcp/tools.json: the tool table's modules, the
    # Temporal SDK and the session load in the background once a session finishes its handshake
    # (never here: the probe's client sends no `initialized`), or at the first tool call.
    probe = (
        "import json, sys\n"
        "from client.cli import cli, exit_code\n"
        "code = exit_code(cli, args=['mcp'], prog_name='ponder')\n"
        "sys.stdout.flush()\n"
        "print('CODE', code, file=sys.stderr)\n"
        + heavy_probe(allowed=("mcp",), stream="sys.stderr")
    )
    env = {**os.environ, "PONDER_HOME": str(tmp_path)}
    env.pop("TEMPORAL_ADDRESS", None)
    process = subprocess.Popen(
        [sys.executable, "-c", probe], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(MCP_HANDSHAKE)
    process.stdin.flush()
    lines = [process.stdout.readline(), process.stdout.readline()]  # the two answers
    process.stdin.close()  # the client leaves: the server ends
    out, err = process.stdout.read(), process.stderr.read() if process.stderr else ""
    process.wait(timeout=120)
    done = subprocess.CompletedProcess(process.args, process.returncode, "".join(lines) + out, err)
    answers = {m["id"]: m for m in map(json.loads, done.stdout.splitlines())}
    assert answers[1]["result"]["serverInfo"]["name"] == "ponder", done.stdout
    from client.mcp.tool_list import tool_entries

    listed = answers[2]["result"]["tools"]
    assert [t["name"] for t in listed] == [t["name"] for t in tool_entries()]
    assert all(
        t["inputSchema"] == e["input_schema"] for t, e in zip(listed, tool_entries(), strict=True)
    )
    assert "CODE 0" in done.stderr, done.stderr
    assert _heavy_loaded(done.stderr) == [], done.stderr
    assert not (tmp_path / "server.json").exists()  # no server was started for the handshake


def test_the_mcp_tool_list_file_is_the_tool_tables() -> None:
    """``tools/list`` answers from ``client/mcp/tools.json``: after changing a tool (its
    description, its argument model, an alias), run ``python -m client.mcp.tool_list``."""
    from client.mcp.tool_list import TOOL_LIST_FILE, render

    assert TOOL_LIST_FILE.read_text(encoding="utf-8") == render(), (
        "client/mcp/tools.json is stale: run python -m client.mcp.tool_list"
    )


def _campaign_run_dir(runs: Path, run_id: str) -> tuple[Path, dict[str, str]]:
    """A campaign's run directory as its artifacts activity writes it (the same summary fields
    ``ponder report`` reads) and the report files it wrote."""
    from activities.campaign.render import ReportDesign, render_report
    from tests.campaigns.helpers import document
    from tests.campaigns.test_report import record

    doc = document()
    records = [
        record(variant, f"s{i}", seed, 0.3 + 0.1 * i + (0.25 if variant == "deep" else seed / 10))
        for variant in ("single", "deep")
        for i in range(3)
        for seed in (0, 1, 2)
    ]
    design = ReportDesign.from_document(
        run_id, doc, fingerprint="f" * 64, status="completed", planned_cells=len(records)
    )
    analysis, files = render_report(design, records)
    run_dir = runs / run_id
    run_dir.mkdir(parents=True)
    summary = {
        "fingerprint": "f" * 64,
        "status": "completed",
        "cells": {"planned": len(records), "recorded": len(records)},
        "analysis": analysis.model_dump(mode="json"),
    }
    (run_dir / "summary.json").write_text(json.dumps(summary))
    (run_dir / "campaign.json").write_text(json.dumps(doc))
    (run_dir / "records.jsonl").write_text(files["records.jsonl"])
    return run_dir, files


def test_the_report_of_a_campaign_takes_its_stored_analysis_without_numpy_or_scipy(
    tmp_path: Path,
) -> None:
    # The campaign stored the analysis of its records in summary.json: the re-rendered report
    # takes it from there (the same bytes as the campaign's own) and loads no statistics.
    run_dir, files = _campaign_run_dir(tmp_path / "runs", "camp-1")
    probe = (
        "import json, sys\n"
        "from client.cli import cli\n"
        "cli.main(['report', 'camp-1'], standalone_mode=False)\n" + heavy_probe()
    )
    env = {**os.environ, "PONDER_HOME": str(tmp_path), "PONDER_RUNS_DIR": str(tmp_path / "runs")}
    out = run_probe(probe, env)
    assert out.splitlines()[0] == str(run_dir / "report.html")
    assert (run_dir / "report.html").read_text() == files["report.html"]
    assert (run_dir / "report.md").read_text() == files["report.md"]
    assert _heavy_loaded(out) == [], out


def test_a_campaign_report_computes_the_analysis_again_for_records_its_summary_did_not_count(
    tmp_path: Path,
) -> None:
    # A summary that counted other records (or holds no analysis) is not taken: the statistics
    # run again over the records there are, as the campaign's own report would.
    from activities.config import load_settings
    from client.campaign_report import rerender_report, stored_analysis

    run_dir, files = _campaign_run_dir(tmp_path / "runs", "camp-2")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert stored_analysis(summary, 18) is not None
    assert stored_analysis(summary, 17) is None
    assert stored_analysis({**summary, "analysis": None}, 18) is None
    assert stored_analysis({**summary, "analysis": {"comparator": 1}}, 18) is None

    summary["analysis"]["recommendation"] = "stale"  # what a summary of other records would say
    summary["cells"]["recorded"] = 17
    (run_dir / "summary.json").write_text(json.dumps(summary))
    settings = load_settings(home=str(tmp_path)).model_copy(update={"runs_dir": tmp_path / "runs"})
    _, written = rerender_report(settings, "camp-2")
    assert written["report.html"] == files["report.html"] and "stale" not in written["report.md"]


def test_plan_validate_loads_no_tournament_types_and_no_settings(tmp_path: Path) -> None:
    # The history budget the validator states is not the tournament preflight's to import, and
    # the settings load for a plan that names a tournament (its saved profile) only.
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "schema: ponder-plan/1\nname: tiny\nsteps:\n"
        "  - {id: a, kind: agent, prompt: Hi., model: 'sim:default'}\n"
    )
    probe = (
        "import json, sys\n"
        "from client.cli import cli\n"
        f"cli.main(['plan', 'validate', {str(plan)!r}], standalone_mode=False)\n"
        "print('SETTINGS', 'activities.config' in sys.modules)\n"
        # The rules check a pause's JSON Schema with it, also inside the workflow's sandbox,
        # where a module imported only when first needed would be imported afresh (and refused).
        + heavy_probe(allowed=("jsonschema",))
    )
    env = {**os.environ, "PONDER_HOME": str(tmp_path / "home")}
    env.pop("PONDER_CONFIG", None)
    out = run_probe(probe, env)
    assert "valid ponder-plan/1 plan 'tiny'" in out, out
    assert "SETTINGS False" in out, out
    assert _heavy_loaded(out) == [], out
