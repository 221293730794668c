"""``ponder``'s subcommands load on use: the table ``ponder --help`` lists from is the commands'
own help, and listing them imports none of them (issue 16: commands answer at once)."""

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
