"""``ponder campaign validate``: exit 0 with a summary, exit 2 with every coded error."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from client.campaign_cli import campaign
from tests.campaigns.helpers import document

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "campaigns" / "deep-vs-single.yaml"


def test_valid_file_exits_0_with_a_summary(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(document()))
    result = CliRunner().invoke(campaign, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    assert "2 variants x 3 scenarios x 3 seeds = 18 cells" in result.output
    assert "worst case 216 model calls" in result.output  # 9 x 1 + 9 x 23 (quick, worst case)


def test_the_example_validates() -> None:
    result = CliRunner().invoke(campaign, ["validate", str(EXAMPLE)])
    assert result.exit_code == 0, result.output


def test_invalid_file_exits_2_listing_every_error(tmp_path: Path) -> None:
    doc = document(comparator="ghost", commit_sha=None)
    doc["scenarios"][0]["scorer"] = {"kind": "command", "name": "t", "argv": ["sh"]}
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc))
    result = CliRunner().invoke(campaign, ["validate", str(path)])
    assert result.exit_code == 2
    lines = result.output.splitlines()
    assert f"{path}: comparator: [comparator.unknown] " in "\n".join(lines)
    assert any("[commit_sha.missing]" in line for line in lines)
    assert any("scenarios[0].scorer.argv: [scorer.argv_not_allowed]" in line for line in lines)
    assert lines[-1].endswith("invalid, 3 error(s)")


def test_tournament_configs_are_checked_against_the_tournament(tmp_path: Path) -> None:
    doc = document()
    doc["variants"][1]["config"] = {"profile": "enormous", "modle": "x"}
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc))
    result = CliRunner().invoke(campaign, ["validate", "--format", "json", str(path)])
    assert result.exit_code == 2
    errors = json.loads(result.output)["errors"]
    assert [(e["code"], e["path"]) for e in errors] == [
        ("field.unknown", "variants[1].config.modle")
    ]
    doc["variants"][1]["config"] = {"profile": "enormous"}
    path.write_text(json.dumps(doc))
    result = CliRunner().invoke(campaign, ["validate", "--format", "json", str(path)])
    errors = json.loads(result.output)["errors"]
    assert [(e["code"], e["path"]) for e in errors] == [("variant.config", "variants[1].config")]
    assert "enormous" in errors[0]["message"]


def test_unreadable_file(tmp_path: Path) -> None:
    result = CliRunner().invoke(campaign, ["validate", str(tmp_path / "missing.yaml")])
    assert result.exit_code == 2 and "[document.unreadable]" in result.output
