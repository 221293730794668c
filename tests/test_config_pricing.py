"""Settings, secrets, prices, the run store, the payload store and redaction: no server needed."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest
from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
)
from temporalio.testing import ActivityEnvironment

from activities.config import Endpoint, Price, load_settings, read_secret
from activities.errors import ConfigError
from activities.model_types import Usage
from activities.payload_store import FileSystemStorageDriver
from activities.pricing import cost_usd
from activities.providers import resolve_model
from activities.raw_events import REDACTED, RawEventLog, redact
from activities.run_files import RunFileActivities
from activities.run_store import RunStore, WriteRunFilesInput

NAMED = """
[providers.local]
kind = "openai"
base_url = "http://127.0.0.1:8000/v1"
api_key_env = "LOCAL_API_KEY"
models = ["coder", "qwen2.5-coder"]

[providers.local.prices.coder]
input = 0.2
output = 0.6
cache_hit = 0.05
long_context_threshold = 128000
long_context_input = 0.4
long_context_output = 1.2

[providers.local.prices."qwen2.5-coder"]
input = 0.1
output = 0.3

[providers.agent]
kind = "command"
argv = ["claude", "-p"]
timeout_s = 900

[prices."openai:gpt-4o-mini"]
input = 0.15
output = 0.6
cache_hit = 0.075
"""


@pytest.fixture
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No PONDER_/TEMPORAL_ variables and a cwd without ponder.toml; returns the cwd."""
    for name in list(os.environ):
        if name.startswith(("PONDER_", "TEMPORAL_")):
            monkeypatch.delenv(name)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return cwd


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# -- settings ---------------------------------------------------------------------------


def test_defaults_come_from_the_home(clean_env: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    settings = load_settings(home=str(home))
    assert settings.home == home
    assert settings.runs_dir == home / "runs"
    assert settings.payload_dir == home / "payloads"
    assert settings.payload_threshold == 16 * 1024
    assert settings.task_queue == "ponder"
    assert settings.namespace == "default"
    assert settings.temporal_address is None
    assert settings.config_file is None
    assert {"openai", "anthropic", "sim", "command", "replay"} <= set(settings.providers)
    assert settings.prices == {}


def test_ponder_home_from_the_environment(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PONDER_HOME", str(tmp_path / "env-home"))
    assert load_settings().runs_dir == tmp_path / "env-home" / "runs"
    assert load_settings(home=str(tmp_path / "flag-home")).home == tmp_path / "flag-home"


def test_flags_beat_environment_beat_file_beat_defaults(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write(
        tmp_path / "conf" / "ponder.toml",
        '[ponder]\ntask_queue = "file-q"\npayload_threshold = 1000\nruns_dir = "/file/runs"\n',
    )
    monkeypatch.setenv("PONDER_CONFIG", str(config))
    home = str(tmp_path / "home")

    from_file = load_settings(home=home)
    assert from_file.config_file == config
    assert (from_file.task_queue, from_file.payload_threshold) == ("file-q", 1000)
    assert from_file.runs_dir == Path("/file/runs")
    assert from_file.payload_dir == tmp_path / "home" / "payloads"  # default, not in the file

    monkeypatch.setenv("PONDER_TASK_QUEUE", "env-q")
    monkeypatch.setenv("PONDER_PAYLOAD_THRESHOLD", "2000")
    monkeypatch.setenv("TEMPORAL_ADDRESS", "temporal.example:7233")
    from_env = load_settings(home=home)
    assert (from_env.task_queue, from_env.payload_threshold) == ("env-q", 2000)
    assert from_env.temporal_address == "temporal.example:7233"
    assert from_env.runs_dir == Path("/file/runs")  # the file still fills what env lacks

    from_flags = load_settings(home=home, task_queue="flag-q", payload_threshold=3000)
    assert (from_flags.task_queue, from_flags.payload_threshold) == ("flag-q", 3000)
    not_given = load_settings(home=home, task_queue=None)  # None means "flag not given"
    assert not_given.task_queue == "env-q"


def test_environment_layer_reads_only_its_own_names(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write(tmp_path / "ponder.toml", '[ponder]\nnamespace = "file-ns"\n')
    for name, value in {
        "NAMESPACE": "bare",  # not ponder's name for it
        "RUNS_DIR": "/bare/runs",
        "PONDER_DEBUG": "1",  # ponder variables that are not settings are no error
        "PONDER_PROVIDERS": '{"evil": {"kind": "command", "argv": ["sh"]}}',  # file only
        "PONDER_REPLAY_DIRS": '["/recordings"]',
    }.items():
        monkeypatch.setenv(name, value)
    settings = load_settings(config, home=str(tmp_path / "h"))
    assert settings.namespace == "file-ns"
    assert settings.runs_dir == tmp_path / "h" / "runs"
    assert "evil" not in settings.providers
    assert settings.replay_dirs == [Path("/recordings")]
    monkeypatch.setenv("TEMPORAL_NAMESPACE", "env-ns")
    monkeypatch.setenv("TEMPORAL_TLS", "maybe")
    with pytest.raises(ConfigError, match="TEMPORAL_TLS"):
        load_settings(config, home=str(tmp_path / "h"))
    monkeypatch.setenv("TEMPORAL_TLS", "true")
    settings = load_settings(config, home=str(tmp_path / "h"))
    assert (settings.namespace, settings.temporal_tls) == ("env-ns", True)
    assert load_settings(config, home=str(tmp_path / "h"), namespace="flag-ns").namespace == (
        "flag-ns"
    )


def test_config_file_lookup_order(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"

    def queue_of(path: Path, name: str) -> Path:
        return write(path, f'[ponder]\ntask_queue = "{name}"\n')

    queue_of(home / "ponder.toml", "home")
    assert load_settings(home=str(home)).task_queue == "home"
    queue_of(clean_env / "ponder.toml", "cwd")
    assert load_settings(home=str(home)).task_queue == "cwd"
    monkeypatch.setenv("PONDER_CONFIG", str(queue_of(tmp_path / "env.toml", "env")))
    assert load_settings(home=str(home)).task_queue == "env"
    explicit = queue_of(tmp_path / "explicit.toml", "explicit")
    assert load_settings(explicit, home=str(home)).task_queue == "explicit"


def test_named_endpoints_and_price_tables(clean_env: Path, tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path / "ponder.toml", NAMED), home=str(tmp_path / "h"))
    assert settings.providers["local"] == Endpoint(
        kind="openai",
        base_url="http://127.0.0.1:8000/v1",
        api_key_env="LOCAL_API_KEY",
        models=["coder", "qwen2.5-coder"],
    )
    assert settings.providers["agent"].argv == ["claude", "-p"]
    assert settings.providers["agent"].timeout_s == 900
    assert settings.providers["openai"].api_key_env == "OPENAI_API_KEY"  # builtins stay
    assert set(settings.prices) == {"local:coder", "local:qwen2.5-coder", "openai:gpt-4o-mini"}
    assert settings.prices["local:coder"] == Price(
        input=0.2,
        output=0.6,
        cache_hit=0.05,
        long_context_threshold=128000,
        long_context_input=0.4,
        long_context_output=1.2,
    )
    assert settings.prices["local:qwen2.5-coder"] == Price(input=0.1, output=0.3)
    assert settings.prices["openai:gpt-4o-mini"].cache_hit == 0.075


@pytest.mark.parametrize(
    ("toml", "field", "rule"),
    [
        ('[providers.bad]\nkind = "grpc"\n', "kind", "'openai'"),
        ('[providers.x]\nkind = "openai"\ntimeout_s = "soon"\n', "timeout_s", "number"),
        (
            '[providers.x]\nkind = "openai"\n[providers.x.prices.m]\ninput = "cheap"\noutput = 1\n',
            "input",
            "number",
        ),
        ('[prices."x:y"]\noutput = 1.0\n', "input", "Field required"),
        ('[ponder]\npayload_threshold = "lots"\n', "payload_threshold", "integer"),
        ('[providers.x]\nkind = "openai"\n', "providers.x", "needs base_url"),
        ('[providers.x]\nkind = "openai"\nbase_url = "localhost:8000"\n', "base_url", "http"),
    ],
)
def test_a_bad_entry_is_refused_naming_the_field(
    clean_env: Path, tmp_path: Path, toml: str, field: str, rule: str
) -> None:
    config = write(tmp_path / "ponder.toml", toml)
    with pytest.raises(ConfigError) as info:
        load_settings(config, home=str(tmp_path / "h"))
    message = str(info.value)
    assert str(config) in message
    assert f"{field}:" in message
    assert rule in message
    assert "fix" in message


def test_read_secret_from_environment_then_secrets_file(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = write(
        tmp_path / "secrets.env",
        "# a comment\n# COMMENTED=nope\nLOCAL_API_KEY = 'sk-from-file'\n"
        'OTHER="quoted value"\nnot a pair\n',
    )
    assert read_secret("LOCAL_API_KEY") is None
    monkeypatch.setenv("PONDER_SECRETS_FILE", str(secrets))
    assert read_secret("LOCAL_API_KEY") == "sk-from-file"
    assert read_secret("OTHER") == "quoted value"
    assert read_secret("COMMENTED") is None
    assert read_secret("MISSING") is None
    monkeypatch.setenv("LOCAL_API_KEY", "sk-from-env")
    assert read_secret("LOCAL_API_KEY") == "sk-from-env"
    monkeypatch.delenv("LOCAL_API_KEY")
    settings = load_settings(write(tmp_path / "ponder.toml", NAMED), home=str(tmp_path / "h"))
    assert resolve_model("local:coder", settings).api_key == "sk-from-file"
    monkeypatch.setenv("PONDER_SECRETS_FILE", str(tmp_path / "absent.env"))
    with pytest.raises(ConfigError, match="cannot be read"):
        read_secret("LOCAL_API_KEY")


# -- pricing ----------------------------------------------------------------------------


def test_cost_plain() -> None:
    price = Price(input=2.5, output=10.0)
    # 1000 * 2.5 + 500 * 10 = 7500 micro-USD
    assert cost_usd(price, Usage(input_tokens=1000, output_tokens=500)) == pytest.approx(0.0075)
    assert cost_usd(price, Usage()) == 0.0


def test_cost_with_cache_hit_and_miss_rates() -> None:
    usage = Usage(
        input_tokens=10_000, output_tokens=1_000, cache_hit_tokens=6_000, cache_miss_tokens=4_000
    )
    # 6000 * 0.5 + 4000 * 2.5 + 1000 * 8 = 3000 + 10000 + 8000 = 21000
    both = Price(input=2.0, output=8.0, cache_hit=0.5, cache_miss=2.5)
    assert cost_usd(both, usage) == pytest.approx(0.021)
    # without a miss rate the uncached tokens cost the input rate: 3000 + 8000 + 8000
    hit_only = Price(input=2.0, output=8.0, cache_hit=0.5)
    assert cost_usd(hit_only, usage) == pytest.approx(0.019)
    # without a hit rate every input token costs the input rate: 20000 + 8000
    assert cost_usd(Price(input=2.0, output=8.0), usage) == pytest.approx(0.028)


def test_cost_long_context_tier_applies_above_the_threshold() -> None:
    price = Price(
        input=1.0,
        output=2.0,
        long_context_threshold=100_000,
        long_context_input=2.0,
        long_context_output=4.0,
    )
    at = Usage(input_tokens=100_000, output_tokens=1_000)
    above = Usage(input_tokens=100_001, output_tokens=1_000)
    # at the threshold: 100000 * 1 + 1000 * 2 = 102000
    assert cost_usd(price, at) == pytest.approx(0.102)
    # above it: 100001 * 2 + 1000 * 4 = 204002
    assert cost_usd(price, above) == pytest.approx(0.204002)
    # a tier with only an input rate keeps the normal output rate: 100001 * 2 + 1000 * 2
    input_only = Price(input=1.0, output=2.0, long_context_threshold=0, long_context_input=2.0)
    assert cost_usd(input_only, above) == pytest.approx(0.202002)


def test_builtin_price_table_covers_major_models_and_is_dated() -> None:
    import datetime

    from activities.pricing import BUILTIN_PRICES, PRICES_AS_OF, builtin_price

    datetime.date.fromisoformat(PRICES_AS_OF)
    for spec in ("openai:gpt-4o", "openai:gpt-4o-mini", "anthropic:claude-sonnet-4-5"):
        assert spec in BUILTIN_PRICES
    # Dated snapshot ids and -latest aliases cost what their family does.
    assert builtin_price("openai:gpt-4o-mini-2024-07-18") == BUILTIN_PRICES["openai:gpt-4o-mini"]
    assert (
        builtin_price("anthropic:claude-sonnet-4-20250514")
        == BUILTIN_PRICES["anthropic:claude-sonnet-4"]
    )
    assert builtin_price("anthropic:claude-3-5-haiku-latest") is not None
    assert builtin_price("openai:no-such-model") is None
    assert builtin_price("local:gpt-4o") is None  # only the named provider's table


def test_price_table_uses_builtin_prices_and_the_file_overrides_them(
    clean_env: Path, tmp_path: Path
) -> None:
    from activities.pricing import BUILTIN_PRICES
    from activities.providers import price_table

    settings = load_settings(home=str(tmp_path / "home"))
    # --max-usd with OpenAI models no longer fails with budget.unpriced_model.
    table = price_table(
        ["openai:gpt-4o-mini", "openai:gpt-4o"], settings, require=True, require_key=False
    )
    assert table["openai:gpt-4o"] == BUILTIN_PRICES["openai:gpt-4o"]
    write(clean_env / "ponder.toml", '[prices."openai:gpt-4o"]\ninput = 1.0\noutput = 2.0\n')
    overridden = load_settings(home=str(tmp_path / "home"))
    assert price_table(["openai:gpt-4o"], overridden, require_key=False)["openai:gpt-4o"] == Price(
        input=1.0, output=2.0
    )
    with pytest.raises(ConfigError, match=r"budget\.unpriced_model"):
        price_table(["openai:not-a-model"], settings, require=True, require_key=False)


# -- run store --------------------------------------------------------------------------


def test_run_store_writes_whole_files(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs")
    big_a, big_b = b"a" * 1_000_000, b"b" * 1_000_000
    target = store.write("r1", "artifacts/answer.txt", big_a)
    assert target == (tmp_path / "runs/r1/artifacts/answer.txt").resolve()
    seen: set[bytes] = set()
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            seen.add(target.read_bytes())

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for i in range(40):
            store.write("r1", "artifacts/answer.txt", big_b if i % 2 else big_a)
    finally:
        stop.set()
        thread.join()
    assert seen <= {big_a, big_b}  # never a torn or empty file
    assert target.read_bytes() == big_b
    assert [p.name for p in target.parent.iterdir()] == ["answer.txt"]  # no temp files left


def test_run_store_failed_write_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = RunStore(tmp_path / "runs")
    target = store.write("r1", "summary.json", "old\n")

    def broken_replace(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="No space left"):
        store.write("r1", "summary.json", "new\n")
    monkeypatch.undo()
    assert target.read_text() == "old\n"
    assert [p.name for p in target.parent.iterdir()] == ["summary.json"]


async def test_write_run_files_reexecuted_writes_the_same_bytes(tmp_path: Path) -> None:
    activities = RunFileActivities(RunStore(tmp_path / "runs"))
    files = {"artifacts/answer.txt": "forty-two\n", "summary.json": '{"status": "completed"}\n'}
    payload = WriteRunFilesInput(run_id="r1", files=files)
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, workflow_id="r1")  # as run r1 schedules it
    first = await env.run(activities.write_run_files, payload)
    contents = {path: Path(path).read_bytes() for path in first}
    again = await env.run(activities.write_run_files, payload)
    assert again == first
    assert {path: Path(path).read_bytes() for path in again} == contents
    assert contents[str((tmp_path / "runs/r1/artifacts/answer.txt").resolve())] == b"forty-two\n"
    run_dir = tmp_path / "runs/r1"
    assert sorted(str(p.relative_to(run_dir)) for p in run_dir.rglob("*")) == [
        "artifacts",
        "artifacts/answer.txt",
        "summary.json",
    ]


@pytest.mark.parametrize("run_id", ["../escape", "a/b", "", ".hidden", "x" * 129, "/abs"])
def test_run_store_refuses_run_ids_leaving_the_runs_dir(tmp_path: Path, run_id: str) -> None:
    with pytest.raises(ValueError, match="run id"):
        RunStore(tmp_path / "runs").write(run_id, "f.txt", "x")
    assert not (tmp_path / "escape").exists()


@pytest.mark.parametrize("relative", ["../r2/f.txt", "/etc/passwd", "a/../../r2/f.txt", "link/f"])
def test_run_store_refuses_paths_leaving_the_run_dir(tmp_path: Path, relative: str) -> None:
    store = RunStore(tmp_path / "runs")
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "runs/r1").mkdir(parents=True)
    (tmp_path / "runs/r1/link").symlink_to(outside)
    with pytest.raises(ValueError, match="leaves the run directory"):
        store.write("r1", relative, "x")
    assert not (tmp_path / "runs/r2").exists()
    assert list(outside.iterdir()) == []
    assert store.path("r1", "inner/../ok.txt") == (tmp_path / "runs/r1/ok.txt").resolve()


# -- payload store ----------------------------------------------------------------------


def payload(data: bytes) -> Payload:
    return Payload(metadata={"encoding": b"json/plain"}, data=data)


async def test_payload_store_round_trip_is_content_addressed(tmp_path: Path) -> None:
    driver = FileSystemStorageDriver(tmp_path / "payloads")
    big, other = payload(b'"' + b"x" * 50_000 + b'"'), payload(b'"other"')
    claims = await driver.store(StorageDriverStoreContext(), [big, other, big])
    assert claims[0] == claims[2]
    assert claims[0] != claims[1]
    digest = hashlib.sha256(big.SerializeToString(deterministic=True)).hexdigest()
    assert claims[0].claim_data == {"sha256": digest}
    again = await driver.store(StorageDriverStoreContext(), [big])
    assert again == [claims[0]]
    files = sorted(p for p in (tmp_path / "payloads").rglob("*") if p.is_file())
    assert len(files) == 2  # one file per distinct payload, no temp files
    assert driver.path_for(digest) in files
    assert driver.path_for(digest).parent.name == digest[:2]
    back = await driver.retrieve(StorageDriverRetrieveContext(), claims)
    assert back == [big, other, big]


async def test_payload_store_detects_corruption(tmp_path: Path) -> None:
    driver = FileSystemStorageDriver(tmp_path / "payloads")
    (claim,) = await driver.store(StorageDriverStoreContext(), [payload(b'"precious"')])
    path = driver.path_for(claim.claim_data["sha256"])
    path.write_bytes(payload(b'"tampered"').SerializeToString())
    with pytest.raises(ValueError, match="corrupt"):
        await driver.retrieve(StorageDriverRetrieveContext(), [claim])


async def test_payload_store_refuses_a_claim_that_is_a_path(tmp_path: Path) -> None:
    driver = FileSystemStorageDriver(tmp_path / "payloads")
    secret = tmp_path / "secret.payload"
    secret.write_bytes(payload(b'"worker file"').SerializeToString())
    for digest in ["../../secret", str(secret.with_suffix("")), "AB" * 32]:
        with pytest.raises(ValueError, match="not a SHA-256 hex digest"):
            await driver.retrieve(
                StorageDriverRetrieveContext(), [StorageDriverClaim({"sha256": digest})]
            )


# -- redaction --------------------------------------------------------------------------


def test_redact_headers_and_secret_strings_nested() -> None:
    secret = "sk-live-123456"
    event: dict[str, Any] = {
        "request": {
            "headers": {
                "Authorization": f"Bearer {secret}",
                "X-API-Key": secret,
                "Cookie": "session=1",
                "Content-Type": "application/json",
            },
            "body": {"messages": [{"content": f"my key is {secret}!"}], "n": 3},
        },
        "response": {"headers": {"set-cookie": "a=b"}, "body": ["ok", (f"{secret}{secret}", 1)]},
        "latency_ms": 1.5,
        "flag": None,
    }
    clean = redact(event, [secret, ""])
    assert clean["request"]["headers"] == {
        "Authorization": REDACTED,
        "X-API-Key": REDACTED,
        "Cookie": REDACTED,
        "Content-Type": "application/json",
    }
    assert clean["request"]["body"] == {"messages": [{"content": f"my key is {REDACTED}!"}], "n": 3}
    assert clean["response"] == {
        "headers": {"set-cookie": REDACTED},
        "body": ["ok", [f"{REDACTED}{REDACTED}", 1]],
    }
    assert (clean["latency_ms"], clean["flag"]) == (1.5, None)
    assert secret not in repr(clean)
    assert redact("nothing secret", [""]) == "nothing secret"  # an empty secret is no secret
    assert secret in repr(event)  # the input is not mutated


def test_raw_event_log_appends_redacted_lines(tmp_path: Path) -> None:
    path = tmp_path / "run/raw-events.jsonl"
    log = RawEventLog(path, secrets=["s3cret-9", ""], base={"call_id": "r/ask/0/0"})
    log.append({"request": {"headers": {"authorization": "Bearer s3cret-9"}}, "note": "s3cret-9!"})
    log.append({"attempt": 2})
    first, second = (orjson.loads(line) for line in path.read_bytes().splitlines())
    assert first == {
        "call_id": "r/ask/0/0",
        "request": {"headers": {"authorization": REDACTED}},
        "note": f"{REDACTED}!",
    }
    assert second == {"call_id": "r/ask/0/0", "attempt": 2}
    RawEventLog(None, base={}).append({"x": 1})  # keeps nothing, raises nothing
