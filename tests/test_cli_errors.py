"""Bad input: one line naming the problem and the fix, exit 2, no traceback.

Refusals made before anything connects run in this process (``ponder_here``); the rest, and
``--debug``'s traceback on the same refusal, run ``ponder`` as a process."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.cli import cli_env, ponder, ponder_here


def assert_one_line_refusal(err: str, *needles: str) -> None:
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.mark.parametrize(
    ("model", "needles"),
    [
        ("nosuch:model", ("unknown provider 'nosuch'", "ponder.toml")),
        ("no-colon", ("not of the form provider:model",)),
        ("openai:gpt-4o-mini", ("OPENAI_API_KEY",)),
        ("sim:default,accuracy=2", ("accuracy",)),
    ],
)
def test_bad_model_spec_is_refused_before_anything_starts(
    tmp_path: Path, model: str, needles: tuple[str, ...]
) -> None:
    done = ponder_here("ask", "hi", "--model", model, env=cli_env(tmp_path))
    assert done.code == 2
    assert_one_line_refusal(done.err, *needles)
    assert not (tmp_path / "server.json").exists()


async def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    done = await ponder("--debug", "ask", "hi", "--model", "nosuch:m", env=cli_env(tmp_path))
    assert done.code == 2
    assert "Traceback" in done.err


def test_unreadable_config_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "ponder.toml"
    config.write_text("[providers.x\nkind=")
    done = ponder_here("--config", str(config), "ask", "hi", env=cli_env(tmp_path))
    assert done.code == 2
    assert_one_line_refusal(done.err, "not valid TOML", str(config))
    missing = ponder_here(
        "--config", str(tmp_path / "nope.toml"), "ask", "hi", env=cli_env(tmp_path)
    )
    assert missing.code == 2
    assert_one_line_refusal(missing.err, "cannot be read")


async def test_unreachable_temporal_address(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = cli_env(tmp_path, TEMPORAL_ADDRESS=f"127.0.0.1:{port}")
    done = await ponder("ask", "hi", env=env)
    assert done.code == 2
    assert_one_line_refusal(done.err, "cannot reach Temporal", "TEMPORAL_ADDRESS")


async def test_no_worker_on_the_task_queue(tmp_path: Path, server_address: str) -> None:
    env = cli_env(tmp_path, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE="nobody-polls")
    done = await ponder("ask", "hi", env=env)
    assert done.code == 2
    assert_one_line_refusal(done.err, "no worker", "ponder worker")


async def test_port_held_by_another_program(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        done = await ponder("server", "--port", str(port), env=cli_env(tmp_path))
    assert done.code == 2
    assert_one_line_refusal(done.err, f"port {port} is taken", "--port")


async def test_help_explains_the_commands(tmp_path: Path) -> None:
    done = await ponder("--help", env=cli_env(tmp_path))
    assert done.code == 0
    for command in ("ask", "server", "worker"):
        assert command in done.out


async def test_a_provider_refusal_is_one_line_and_the_traceback_goes_to_the_log(
    tmp_path: Path,
) -> None:
    from tests.fakes import FakeProvider, Reply

    fake = FakeProvider(lambda seen: Reply(401, {"error": {"message": "bad key"}}))
    try:
        home = tmp_path / "home"
        home.mkdir()
        (home / "ponder.toml").write_text(
            f'[providers.local]\nkind = "openai"\nbase_url = "{fake.url}"\n'
        )
        done = await ponder("ask", "hi", "--model", "local:m", env=cli_env(home))
    finally:
        fake.close()
    assert done.code == 1
    lines = [line for line in done.err.splitlines() if line.strip()]
    assert len(lines) == 1, done.err
    assert "401" in lines[0] and "Traceback" not in done.err
    log = (home / "logs" / "worker.log").read_text()
    assert "Traceback" in log and "401" in log
