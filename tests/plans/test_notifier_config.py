"""The worker's side of gate escalation and training pairs: ``[notifiers.NAME]`` and
``training_dir`` in ponder.toml.

A plan names a notifier and never a URL, and it never sets where training pairs go: both are
the worker's settings, read from its config file (and, for ``training_dir``, the environment).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from activities.config import Notifier, load_settings
from activities.errors import ConfigError
from client.plan_cli import plan
from tests.test_config_pricing import clean_env, write

__all__ = ["clean_env"]  # the fixture, re-used


def test_notifiers_and_training_dir_come_from_the_workers_file(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write(
        tmp_path / "ponder.toml",
        '[ponder]\ntraining_dir = "/srv/pairs"\n\n'
        '[notifiers.ops]\nkind = "webhook"\nurl = "https://hooks.example/ops?team=1"\n\n'
        '[notifiers.pager]\nkind = "webhook"\nurl_env = "PAGER_HOOK"\ntimeout_s = 3\n',
    )
    settings = load_settings(config, home=str(tmp_path / "home"))
    assert settings.training_dir == Path("/srv/pairs")
    assert settings.notifiers["ops"].resolved_url() == "https://hooks.example/ops?team=1"
    with pytest.raises(ConfigError, match="PAGER_HOOK is not set") as unset:
        settings.notifiers["pager"].resolved_url()
    assert "https://" not in str(unset.value)
    monkeypatch.setenv("PAGER_HOOK", "https://pager.example/secret-path")
    assert settings.notifiers["pager"].resolved_url() == "https://pager.example/secret-path"
    monkeypatch.setenv("PONDER_TRAINING_DIR", str(tmp_path / "env-pairs"))
    assert load_settings(config, home=str(tmp_path / "home")).training_dir == tmp_path / "env-pairs"


def test_training_dir_defaults_to_the_home(clean_env: Path, tmp_path: Path) -> None:
    settings = load_settings(home=str(tmp_path / "home"))
    assert settings.training_dir == tmp_path / "home" / "training"
    assert settings.notifiers == {}


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ('[notifiers.ops]\nkind = "webhook"\n', "exactly one of url"),
        (
            '[notifiers.ops]\nkind = "webhook"\nurl = "https://a.example"\nurl_env = "X"\n',
            "exactly one of url",
        ),
        ('[notifiers.ops]\nkind = "email"\nurl = "https://a.example"\n', "notifiers.ops.kind"),
        ('[notifiers.ops]\nkind = "webhook"\nurl = "file:///etc/passwd"\n', "http"),
        ('[notifiers.Ops]\nkind = "webhook"\nurl = "https://a.example"\n', "rename it"),
        ('[notifiers.ops]\nkind = "webhook"\nurl = "https://a.example"\nextra = 1\n', "extra"),
    ],
)
def test_a_bad_notifier_table_is_a_config_error(
    clean_env: Path, tmp_path: Path, table: str, expected: str
) -> None:
    config = write(tmp_path / "ponder.toml", table)
    with pytest.raises(ConfigError, match=expected):
        load_settings(config, home=str(tmp_path / "home"))


def test_notifiers_are_not_read_from_the_environment(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PONDER_NOTIFIERS", '{"evil": {"kind": "webhook", "url": "http://x"}}')
    assert load_settings(home=str(tmp_path / "home")).notifiers == {}


def test_a_notifier_needs_a_url_of_its_own_kind() -> None:
    assert Notifier(kind="webhook", url="http://127.0.0.1:8080/h").timeout_s == 10.0
    with pytest.raises(ValueError):
        Notifier(kind="webhook", url="https://a.example", timeout_s=600)


def test_plan_validate_refuses_a_bad_deadline(tmp_path: Path) -> None:
    path = tmp_path / "gate.yaml"
    path.write_text(
        "schema: ponder-plan/1\nname: x\nsteps:\n"
        "  - {id: ship, kind: gate, gate: {deadline: 500, default: revise}}\n"
    )
    result = CliRunner().invoke(plan, ["validate", str(path)])
    assert result.exit_code == 2
    assert "steps[0].gate.deadline: [gate.deadline]" in result.output
    assert "steps[0].gate.default: [gate.deadline]" in result.output


def test_the_readme_configuration_declares_a_notifier_and_training_dir(tmp_path: Path) -> None:
    from tests.test_readme import fenced, section

    (block,) = fenced(section("# Configuration", page="docs/configuration.md"), "toml")
    config = tmp_path / "ponder.toml"
    config.write_text(block)
    settings = load_settings(config, home=str(tmp_path / "home"))
    # The page leaves training_dir commented out, so the pasted file keeps the default.
    assert settings.training_dir == tmp_path / "home" / "training"
    assert settings.notifiers["ops"].url_env == "OPS_WEBHOOK_URL"
