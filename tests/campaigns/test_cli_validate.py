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


def test_dry_run_forecasts_cells_calls_usd_and_power(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    doc = document(seeds=list(range(10)))
    doc["variants"].append(
        {"id": "priced", "kind": "single", "config": {"model": "openai:gpt-4o-mini"}}
    )
    path.write_text(yaml.safe_dump(doc))
    result = CliRunner().invoke(campaign, ["run", str(path), "--dry-run", "--effect", "0.1"])
    assert result.exit_code == 0, result.output
    assert "3 variants x 3 scenarios x 10 seeds = 90 cells" in result.output
    assert "deep                 tournament worst case    690 calls" in result.output
    assert "priced               single     worst case     30 calls, USD 0.0" in result.output
    # 30 pairs, SD 0.25 (the stated default), effect 0.1 (d = 0.4): a paired t-test has 56%
    # power (normal approximation: Phi(0.4 * sqrt(30) - 1.96) = 59%, less for t).
    assert "30 pairs per variant against single" in result.output
    assert "(the stated default 0.25): 56% to detect an effect of 0.1" in result.output


def test_dry_run_power_of_a_large_effect_is_a_number(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(document()))
    result = CliRunner().invoke(campaign, ["run", str(path), "--dry-run", "--effect", "0.5"])
    assert result.exit_code == 0, result.output
    assert "nan" not in result.output
    # 9 pairs, d = 0.5 / 0.25 = 2: a paired t-test almost surely detects it.
    assert "(the stated default 0.25): 100% to detect an effect of 0.5" in result.output


def test_dry_run_uses_a_pilots_spread(tmp_path: Path) -> None:
    from tests.campaigns.test_stats import record

    pilot = tmp_path / "records.jsonl"
    rows = [record("single", "s0", seed, 0.5) for seed in range(10)]
    rows += [record("deep", "s0", seed, 0.5 + 0.1 * (seed % 2)) for seed in range(10)]
    pilot.write_text("".join(r.model_dump_json() + "\n" for r in rows))
    path = tmp_path / "c.json"
    path.write_text(json.dumps(document()))
    result = CliRunner().invoke(campaign, ["run", str(path), "--dry-run", "--pilot", str(pilot)])
    assert result.exit_code == 0, result.output
    # The differences alternate 0 and 0.1: SD 0.05270.
    assert f"SD of paired differences 0.0527 (pilot {pilot})" in result.output


def test_patterns_re2_refuses_exit_2_with_their_paths(tmp_path: Path) -> None:
    doc = document(route={"block": ["re:(?<=x)y"]})
    doc["scenarios"][0]["scorer"] = {"kind": "regex", "pattern": "("}
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc))
    result = CliRunner().invoke(campaign, ["validate", str(path)])
    assert result.exit_code == 2
    refusal = "[scorer.pattern] the pattern does not compile with RE2 (missing )"
    assert f"scenarios[0].scorer.pattern: {refusal}" in result.output
    assert "route.block[0]: [route.pattern] " in result.output


def test_validate_checks_the_route_first(tmp_path: Path) -> None:
    """What `run` would refuse at preflight, validate refuses too, before the other errors."""
    config = tmp_path / "ponder.toml"
    config.write_text(
        '[providers.corp]\nkind = "openai"\nbase_url = "http://10.1.2.3:8000/v1"\n'
        'api_key_env = "PONDER_TEST_UNSET_KEY"\n'
    )
    doc = document()
    doc["variants"][1] = {"id": "http", "kind": "single", "config": {"model": "corp:m"}}
    doc["route"] = {"block": ["http://10.1.2.3"]}
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc))
    env = {"PONDER_CONFIG": str(config), "PONDER_HOME": str(tmp_path / "home")}
    result = CliRunner().invoke(campaign, ["validate", str(path)], env=env)
    assert result.exit_code == 2, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith(f"{path}: route: [route.base_url_blocked] http (corp:m): ")
    assert lines[1].startswith(f"{path}: route: [route.no_auth] http (corp:m): no API key")
    assert lines[-1].endswith("invalid, 2 error(s)")
    # Allowed and keyed, the same document validates.
    doc["route"] = {"allow": ["http://10.1.2.3"]}
    path.write_text(json.dumps(doc))
    env["PONDER_TEST_UNSET_KEY"] = "k"
    result = CliRunner().invoke(campaign, ["validate", str(path), "--format", "json"], env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["valid"] is True
