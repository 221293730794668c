"""The environment layer of the settings: which variables it reads, how it reads them, and where
it sits between the flags and ``ponder.toml``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from activities.config import load_settings
from activities.errors import ConfigError


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home with a ponder.toml, a cwd without one, and no ponder or Temporal variable (in any
    case: the layer matches names regardless of it)."""
    for name in list(os.environ):
        if name.upper().startswith(("PONDER_", "TEMPORAL_")):
            monkeypatch.delenv(name)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    home = tmp_path / "home"
    home.mkdir()
    (home / "ponder.toml").write_text(
        '[ponder]\ntask_queue = "file-q"\nnamespace = "file-ns"\npayload_threshold = 100\n'
        '[executors]\nwriter = "sim:file"\n'
    )
    return home


def refusal(home: Path) -> str:
    """The message of the ``config.invalid`` refusal that loading ``home``'s settings meets."""
    with pytest.raises(ConfigError) as refused:
        load_settings(home=home)
    assert refused.value.code == "config.invalid"
    return refused.value.message


def test_flags_over_environment_over_file_over_defaults(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from_file = load_settings(home=home)
    assert (from_file.task_queue, from_file.payload_threshold) == ("file-q", 100)
    assert from_file.runs_dir == home / "runs"  # a default: neither the file nor env give it
    monkeypatch.setenv("PONDER_TASK_QUEUE", "env-q")
    monkeypatch.setenv("PONDER_RUNS_DIR", "/env/runs")
    from_env = load_settings(home=home)
    assert (from_env.task_queue, from_env.payload_threshold) == ("env-q", 100)
    assert from_env.runs_dir == Path("/env/runs")
    from_flags = load_settings(home=home, task_queue="flag-q", runs_dir=None)
    assert (from_flags.task_queue, from_flags.runs_dir) == ("flag-q", Path("/env/runs"))


def test_the_temporal_names_come_first_and_ponder_names_also_work(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PONDER_NAMESPACE", "ponder-ns")
    assert load_settings(home=home).namespace == "ponder-ns"
    monkeypatch.setenv("TEMPORAL_NAMESPACE", "temporal-ns")
    monkeypatch.setenv("TEMPORAL_ADDRESS", "temporal.example:7233")
    monkeypatch.setenv("TEMPORAL_TLS", "true")
    settings = load_settings(home=home)
    assert settings.namespace == "temporal-ns"
    assert (settings.temporal_address, settings.temporal_tls) == ("temporal.example:7233", True)
    assert load_settings(home=home, namespace="flag-ns").namespace == "flag-ns"


def test_names_match_in_any_case_and_empty_values_are_not_given(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ponder_task_queue", "lower-q")
    monkeypatch.setenv("Temporal_Tls", "1")
    settings = load_settings(home=home)
    assert (settings.task_queue, settings.temporal_tls) == ("lower-q", True)
    monkeypatch.delenv("ponder_task_queue")
    monkeypatch.setenv("PONDER_TASK_QUEUE", "")
    monkeypatch.setenv("TEMPORAL_NAMESPACE", "")
    monkeypatch.setenv("PONDER_REPLAY_DIRS", "")  # not even decoded
    settings = load_settings(home=home)
    assert (settings.task_queue, settings.namespace, settings.replay_dirs) == (
        "file-q",
        "file-ns",
        [],
    )


def test_file_keys_match_in_any_case_and_unknown_ones_are_refused(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (home / "ponder.toml").write_text('[ponder]\nTASK_QUEUE = "upper-q"\ntemporal_tls = true\n')
    settings = load_settings(home=home)
    assert (settings.task_queue, settings.temporal_tls) == ("upper-q", True)
    (home / "ponder.toml").write_text('[ponder]\ntask_queu = "typo"\n')
    assert "ponder.task_queu: Extra inputs are not permitted" in refusal(home)


def test_lists_and_tables_are_json_and_other_values_stay_text(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PONDER_REPLAY_DIRS", '["/a", "/b"]')
    monkeypatch.setenv("PONDER_ALLOWED_BASE_URLS", '["http://127.0.0.1:8000/v1"]')
    monkeypatch.setenv("PONDER_EXECUTORS", '{"critic": "sim:env", "writer": "sim:env"}')
    monkeypatch.setenv("PONDER_METRICS_BIND", "123")  # JSON would make it a number, refused
    monkeypatch.setenv("PONDER_SERVER_IDLE_S", "7.5")
    settings = load_settings(home=home)
    assert settings.replay_dirs == [Path("/a"), Path("/b")]
    assert settings.allowed_base_urls == ["http://127.0.0.1:8000/v1"]
    # [executors] of the file is given with the flags: it wins entry by entry, and the
    # environment's other entries stay.
    assert settings.executors == {"critic": "sim:env", "writer": "sim:file"}
    assert (settings.metrics_bind, settings.server_idle_s) == ("123", 7.5)


def test_a_variable_that_is_not_json_is_refused_by_name(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ponder_replay_dirs", "/recordings")
    message = refusal(home)
    assert message.startswith(
        "environment variable ponder_replay_dirs is not JSON (Expecting value"
    )
    assert 'give a JSON list such as ["VALUE"], or unset it' in message
    monkeypatch.delenv("ponder_replay_dirs")
    monkeypatch.setenv("PONDER_EXECUTORS", "writer=sim:default")
    assert re.search(r'PONDER_EXECUTORS .* object such as \{"KEY"', refusal(home))


def test_a_bad_value_names_its_variable_unless_a_flag_replaces_it(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PONDER_SERVER_IDLE_S", "-1")
    assert refusal(home) == (
        "environment variable PONDER_SERVER_IDLE_S: Input should be greater than or equal to 0: "
        "fix or unset it"
    )
    assert load_settings(home=home, server_idle_s=5).server_idle_s == 5
    monkeypatch.setenv("PONDER_REPLAY_DIRS", "[1]")  # an element: the variable and its index
    monkeypatch.delenv("PONDER_SERVER_IDLE_S")
    assert re.search(r"variable PONDER_REPLAY_DIRS\.0: Input is not a valid", refusal(home))


def test_settings_only_the_file_gives_are_not_read_from_the_environment(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PONDER_PROVIDERS", '{"evil": {"kind": "command", "argv": ["sh"]}}')
    monkeypatch.setenv("PONDER_WORKSPACE_ROOTS", '["/"]')
    monkeypatch.setenv("PONDER_CONFIG_FILE", "/elsewhere.toml")
    monkeypatch.setenv("PONDER_NOTIFIERS", "not json either")  # never read, so never decoded
    settings = load_settings(home=home)
    assert "evil" not in settings.providers
    assert settings.workspace_roots == []
    assert settings.config_file == home / "ponder.toml"
    assert settings.notifiers == {}


def test_loading_the_settings_module_loads_no_settings_library() -> None:
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, activities.config; print(sorted(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    assert "'pydantic'" in loaded
    assert "pydantic_settings" not in loaded and "dotenv" not in loaded
