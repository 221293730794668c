"""The shipped JSON Schema equals the model's, and `ponder plan validate|schema` behave."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
from click.testing import CliRunner

from client.plan_cli import plan
from tests.cli import cli_env
from tests.plans.helpers import base
from workflows.plan.schema import SCHEMA_FILE, generate_schema, render_schema, shipped_schema
from workflows.plan.validate import parse_text

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "plans"


def test_the_shipped_schema_is_the_models_current_schema() -> None:
    # On failure: python -m workflows.plan.schema rewrites the shipped file.
    assert shipped_schema() == render_schema()
    assert (ROOT / "workflows" / "plan" / SCHEMA_FILE).read_text() == render_schema()


def test_the_schema_accepts_valid_plans_and_refuses_shape_errors() -> None:
    schema = generate_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for path in sorted(EXAMPLES.glob("*.yaml")):
        # parse_text, not yaml.safe_load: plans read YAML 1.2 booleans (`on:` is a key)
        doc, problems = parse_text(path.read_text(), filename=path.name)
        assert problems == [] and list(validator.iter_errors(doc)) == [], path.name
    doc = base()
    validator.validate(doc)
    doc["steps"][1]["surprise"] = 1
    doc["steps"][1]["x-fine"] = 1
    errors = list(validator.iter_errors(doc))
    assert errors and all("surprise" in e.message or "surprise" in str(e.path) for e in errors)
    assert "loop_plan" not in json.dumps(schema)  # the origin marker is not part of the form


def test_validate_valid_file_exits_0_with_a_summary(tmp_path: Path) -> None:
    result = CliRunner().invoke(plan, ["validate", str(EXAMPLES / "research-fanout.yaml")])
    assert result.exit_code == 0, result.output
    assert "valid ponder-plan/1 plan 'research-fanout'" in result.output
    assert "worst case 9 invocations" in result.output


def test_validate_invalid_file_exits_2_listing_every_error(tmp_path: Path) -> None:
    doc = base()
    doc["steps"][1]["deps"] = ["ghost"]
    doc["steps"][2]["fail_route"] = "nowhere"
    doc["extras"] = True
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    result = CliRunner().invoke(plan, ["validate", str(path)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert lines == [
        f"{path}: extras: [field.unknown] " + lines[0].split("[field.unknown] ", 1)[1],
        f"{path}: steps[1].deps[0]: [deps.unknown] dep 'ghost' names no step; "
        "fix: use one of the ids above this step",
        f"{path}: steps[2].fail_route: [gate.route] " + lines[2].split("[gate.route] ", 1)[1],
        f"{path}: invalid, 3 error(s)",
    ]


def test_validate_json_format_lists_codes(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("schema: ponder-plan/1\nname: x\nsteps: [{id: a, kind: run, flow: ghost}]\n")
    result = CliRunner().invoke(plan, ["validate", "--format", "json", str(path)])
    assert result.exit_code == 2
    report = json.loads(result.output)
    assert report["valid"] is False and report["form"] == "ponder-plan/1"
    assert report["errors"] == [
        {
            "code": "flow.unknown",
            "path": "steps[0].flow",
            "message": report["errors"][0]["message"],
        }
    ]
    assert "'ghost'" in report["errors"][0]["message"]


def test_validate_json_format_summarises_a_valid_plan() -> None:
    path = EXAMPLES / "research-fanout.yaml"
    result = CliRunner().invoke(plan, ["validate", "--format", "json", str(path)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert (report["valid"], report["errors"]) == (True, [])
    assert [n.split(": ")[0] for n in report["notes"]] == ["limit-stops-at-reached"]  # usd: 2.5
    assert report["summary"]["reserved_calls"] == 9 and report["summary"]["calls"] == 40


def test_unreadable_file(tmp_path: Path) -> None:
    result = CliRunner().invoke(plan, ["validate", str(tmp_path / "missing.yaml")])
    assert result.exit_code == 2
    assert "[document.unreadable] cannot read" in result.output


def test_validate_reads_stdin() -> None:
    result = CliRunner().invoke(plan, ["validate", "-"], input=json.dumps(base()))
    assert result.exit_code == 0, result.output


def test_the_real_ponder_command_is_registered_and_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema: ponder-plan/1\nname: x\nsteps: [{id: a, kind: agent}]\n")
    ponder = Path(sys.executable).with_name("ponder")
    env = cli_env(tmp_path / "home")  # its log goes there, not to the real ~/.ponder
    invalid = subprocess.run(
        [ponder, "plan", "validate", str(bad)], capture_output=True, text=True, timeout=60, env=env
    )
    assert invalid.returncode == 2, invalid.stderr
    assert "steps[0].prompt: [field.missing]" in invalid.stderr
    schema = subprocess.run(
        [ponder, "plan", "schema"], capture_output=True, text=True, timeout=60, env=env
    )
    assert schema.returncode == 0
    assert json.loads(schema.stdout) == generate_schema()


def test_validate_refuses_a_pause_schema_with_a_pattern_re2_refuses(tmp_path: Path) -> None:
    pause = {"state": "S", "resume_arg": "v", "schema": {"type": "string", "pattern": r"(a)\1"}}
    doc = {
        "schema": "ponder-plan/1",
        "name": "p",
        "steps": [{"id": "v", "kind": "pause", "pause": pause}],
    }
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    result = CliRunner().invoke(plan, ["validate", str(path)])
    assert result.exit_code == 2
    assert (
        "steps[0].pause.schema.pattern: [pause.schema] the pattern does not compile with RE2"
        in result.output
    )
