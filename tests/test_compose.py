"""The deployment files: docker-compose.yml wires the cluster as platform.md says, Prometheus
scrapes the workers' metrics, the codec server decrypts with the workers' keyring, and the
Dockerfile builds a worker without the embedded dev server. No Docker engine needed: the files
are parsed, and the commands compose gives the worker and the codec server run here as plain
processes (against the dev server) with the flags and environment the file gives them."""

from __future__ import annotations

import asyncio
import base64
import re
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from activities.config import Settings
from tests.cli import cli_env
from tests.test_metrics import MetricsWorker, free_port, samples, worker_env
from workflows.names import TASK_QUEUE

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, Any]:
    return compose["services"]


def _image(service: dict[str, Any]) -> str:
    return service["image"].split(":")[0]


def _depends_on(service: dict[str, Any]) -> dict[str, str]:
    """``depends_on`` as {service: condition}, for both the list and the long form."""
    deps = service.get("depends_on", {})
    if isinstance(deps, list):
        return dict.fromkeys(deps, "service_started")
    return {name: spec.get("condition", "service_started") for name, spec in deps.items()}


def _published(service: dict[str, Any]) -> set[int]:
    """Host ports of ``ports`` entries such as "7233:7233" or "127.0.0.1:8080:8080"."""
    published = set()
    for port in service["ports"]:
        parts = str(port).split(":")
        published.add(int(parts[-2] if len(parts) > 1 else parts[0]))
    return published


def test_services_exist(services: dict[str, Any]) -> None:
    assert {
        "postgresql",
        "temporal-admin-tools",
        "temporal",
        "temporal-create-namespace",
        "temporal-ui",
        "ponder-worker",
        "prometheus",
        "ponder-codec",
    } <= services.keys()


def test_images(services: dict[str, Any]) -> None:
    assert _image(services["postgresql"]) == "postgres"
    assert _image(services["temporal"]) == "temporalio/server"
    assert _image(services["temporal-admin-tools"]) == "temporalio/admin-tools"
    assert _image(services["temporal-create-namespace"]) == "temporalio/admin-tools"
    assert _image(services["temporal-ui"]) == "temporalio/ui"
    assert "build" in services["ponder-worker"]
    # The deprecated all-in-one image must not come back.
    assert not any("auto-setup" in s.get("image", "") for s in services.values())


def test_schema_setup_runs_sql_tool_for_both_databases(services: dict[str, Any]) -> None:
    script = "\n".join(services["temporal-admin-tools"]["command"])
    assert "temporal-sql-tool --plugin postgres12" in script
    for step in ("create", "setup-schema -v 0.0", "update-schema"):
        assert step in script
    assert "setup temporal temporal" in script
    assert "setup temporal_visibility visibility" in script


def test_server_is_configured_for_postgres(services: dict[str, Any]) -> None:
    env = services["temporal"]["environment"]
    assert env["DB"] == "postgres12"
    assert env["POSTGRES_SEEDS"] == "postgresql"
    assert {"DB_PORT", "POSTGRES_USER", "POSTGRES_PWD"} <= env.keys()


def test_depends_on(services: dict[str, Any]) -> None:
    assert _depends_on(services["temporal-admin-tools"]) == {"postgresql": "service_healthy"}
    assert _depends_on(services["temporal"]) == {
        "temporal-admin-tools": "service_completed_successfully"
    }
    assert "temporal" in _depends_on(services["temporal-create-namespace"])
    assert "temporal" in _depends_on(services["temporal-ui"])
    worker = _depends_on(services["ponder-worker"])
    assert "temporal" in worker
    assert worker["temporal-create-namespace"] == "service_completed_successfully"
    assert "pg_isready" in " ".join(services["postgresql"]["healthcheck"]["test"])


def test_namespace_is_created(services: dict[str, Any]) -> None:
    script = "\n".join(services["temporal-create-namespace"]["command"])
    assert "temporal operator namespace create --namespace default" in script


def test_published_ports(services: dict[str, Any]) -> None:
    assert 7233 in _published(services["temporal"])
    assert 8080 in _published(services["temporal-ui"])
    assert services["temporal-ui"]["environment"]["TEMPORAL_ADDRESS"] == "temporal:7233"


def test_worker_environment(services: dict[str, Any]) -> None:
    env = services["ponder-worker"]["environment"]
    assert env["TEMPORAL_ADDRESS"] == "temporal:7233"
    assert env["PONDER_HOME"] == "/data/ponder"
    assert env["PONDER_PAYLOAD_DIR"] == "/data/payloads"
    # The compose default must be the queue the code uses, or the worker polls an empty queue.
    assert env["PONDER_TASK_QUEUE"] == f"${{PONDER_TASK_QUEUE:-{TASK_QUEUE}}}"


def test_worker_mounts_the_shared_volume(compose: dict[str, Any]) -> None:
    declared = compose["volumes"].keys()
    assert {"postgres-data", "ponder-data"} <= declared
    mounts = dict(m.split(":")[:2] for m in compose["services"]["ponder-worker"]["volumes"])
    assert mounts.get("ponder-data") == "/data"
    for path in compose["services"]["ponder-worker"]["environment"].values():
        if str(path).startswith("/"):
            assert str(path).startswith("/data/"), path


def test_dockerfile_runs_the_worker_without_embedded_extra() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim\b", text, re.M)
    assert re.search(r'^CMD \["python", "-m", "worker"\]$', text, re.M)
    installs = re.findall(r"pip install ([^\n&]+)", text)
    assert installs, "the Dockerfile must pip install the project"
    assert all("embedded" not in line for line in installs)
    assert any(line.split()[0] == "." and "--no-deps" in line for line in installs)
    # Reproducible: the dependencies come from the hashed worker lock, before the project.
    locked = "--require-hashes --no-deps -r requirements-worker.lock"
    assert installs[0].strip() == locked, installs
    assert re.search(r"^USER (?!root\b)\S+", text, re.M), "the worker must not run as root"


# --- images, metrics and the codec server ------------------------------------------------------

PONDER_BIN = str(Path(sys.executable).parent / "ponder")
# A tag after the last path component; `latest`, a moving tag, is no pin.
_PINNED = re.compile(r"[\w./-]+:(?!latest$)[\w][\w.-]*(@sha256:[0-9a-f]{64})?")
_OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
KEY = base64.b64encode(bytes(range(32))).decode()
TOKEN = "compose-token-" + "Zq8" * 6


def _command(service: dict[str, Any]) -> list[str]:
    command = service["command"]
    assert isinstance(command, list), "exec form: no shell between compose and the process"
    return [str(arg) for arg in command]


def _option(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def _help_options(*argv: str) -> set[str]:
    """The options a command's ``--help`` lists, from running it."""
    done = subprocess.run([*argv, "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return set(_OPTION.findall(done.stdout))


@pytest.fixture(scope="module")
def scrape_job() -> dict[str, Any]:
    (job,) = yaml.safe_load((ROOT / "deploy/prometheus.yml").read_text())["scrape_configs"]
    assert isinstance(job, dict)
    return job


def test_every_image_is_pinned_to_a_tag(services: dict[str, Any]) -> None:
    for name, service in services.items():
        if "build" in service:
            assert "image" not in service, f"{name}: built here, never pulled"
            continue
        assert _PINNED.fullmatch(service["image"]), f"{name}: {service['image']} is not pinned"
    assert _image(services["prometheus"]) == "prom/prometheus"


def test_the_pin_check_refuses_moving_tags() -> None:
    for image in ("prom/prometheus", "prom/prometheus:latest", "postgres:"):
        assert not _PINNED.fullmatch(image), image
    for image in ("postgres:16", "prom/prometheus:v3.13.1", "temporalio/ui:2.34.0"):
        assert _PINNED.fullmatch(image), image


def test_prometheus_scrapes_the_workers_metrics_port_and_path(
    services: dict[str, Any], scrape_job: dict[str, Any]
) -> None:
    prometheus = services["prometheus"]
    mounts = {m.split(":")[1]: m.split(":")[0] for m in prometheus["volumes"]}
    assert (ROOT / mounts["/etc/prometheus/prometheus.yml"]).resolve() == (
        ROOT / "deploy/prometheus.yml"
    )
    assert "ponder-worker" in _depends_on(prometheus)
    assert 9090 in _published(prometheus)
    bind = _option(_command(services["ponder-worker"]), "--metrics-bind")
    ip, port = bind.rsplit(":", 1)
    # Every interface: Prometheus reaches the worker from its own container.
    assert ip == "0.0.0.0"
    assert scrape_job["metrics_path"] == "/metrics"
    # The service name resolves to every replica, so `--scale` needs no config change.
    (discovery,) = scrape_job["dns_sd_configs"]
    assert discovery["names"] == ["ponder-worker"]
    assert discovery["type"] == "A"
    assert discovery["port"] == int(port)
    # Published, the port would collide between replicas on the host.
    assert "ports" not in services["ponder-worker"]


def test_the_worker_command_takes_only_flags_the_worker_accepts(
    services: dict[str, Any],
) -> None:
    command = _command(services["ponder-worker"])
    assert command[:3] == ["python", "-m", "worker"]
    flags = set(_OPTION.findall(" ".join(command[3:])))
    assert "--metrics-bind" in flags
    assert flags <= _help_options(sys.executable, "-m", "worker")
    assert flags <= _help_options(PONDER_BIN, "worker")


def test_the_codec_command_takes_only_flags_codec_server_accepts(
    services: dict[str, Any],
) -> None:
    codec = services["ponder-codec"]
    command = _command(codec)
    assert command[:2] == ["ponder", "codec-server"]
    flags = set(_OPTION.findall(" ".join(command[2:])))
    assert {"--host", "--port", "--ui-origin"} <= flags
    assert flags <= _help_options(PONDER_BIN, "codec-server")
    # Listening on the container's interfaces, published on the host's loopback only.
    assert _option(command, "--host") == "0.0.0.0"
    port = _option(command, "--port")
    assert codec["ports"] == [f"127.0.0.1:{port}:{port}"]
    assert _option(command, "--ui-origin") == "http://localhost:8080"
    assert 8080 in _published(services["temporal-ui"])


def test_the_codec_server_shares_the_workers_keyring_and_waits_for_its_profile(
    services: dict[str, Any],
) -> None:
    codec = services["ponder-codec"]
    # It refuses to start without a keyring and token the user provides: opt-in.
    assert codec["profiles"] == ["codec"]
    assert "build" in codec
    env = codec["environment"]
    assert env["PONDER_KEYRING"] == "${PONDER_KEYRING:-}"
    assert env["PONDER_CODEC_TOKEN"] == "${PONDER_CODEC_TOKEN:-}"
    assert services["ponder-worker"]["environment"]["PONDER_KEYRING"] == env["PONDER_KEYRING"]
    for name, service in services.items():
        assert "PONDER_CODEC_TOKEN" not in service.get("environment", {}) or name == "ponder-codec"


def _interpolate(value: str, host: dict[str, str]) -> str:
    """Compose's ``${NAME:-default}`` from ``host``'s variables."""
    return re.sub(r"\$\{(\w+):-([^}]*)\}", lambda m: host.get(m.group(1)) or m.group(2), str(value))


async def _codec_process(
    service: dict[str, Any], tmp_path: Path, host: dict[str, str]
) -> tuple[asyncio.subprocess.Process, int]:
    """The codec service's command as a process, on a free port, with the environment compose
    would give it from ``host``'s variables."""
    command = _command(service)
    port = free_port()
    command[command.index("--port") + 1] = str(port)
    env = {k: _interpolate(v, host) for k, v in service["environment"].items()}
    process = await asyncio.create_subprocess_exec(
        PONDER_BIN,
        *command[1:],
        env=cli_env(tmp_path, **env),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    return process, port


async def test_the_codec_service_refuses_without_the_keyring_it_is_given(
    services: dict[str, Any], tmp_path: Path
) -> None:
    """Why it sits behind a profile: with the compose defaults (nothing set) it stops."""
    for host, code in (
        ({}, "encryption.keyring_invalid"),
        ({"PONDER_KEYRING": f"k1={KEY}\n"}, "encryption.token_missing"),
    ):
        process, _ = await _codec_process(services["ponder-codec"], tmp_path, host)
        _, err = await asyncio.wait_for(process.communicate(), 60)
        assert process.returncode != 0
        assert code in err.decode(), err.decode()


async def test_the_codec_service_round_trips_with_the_keyring_from_its_environment(
    services: dict[str, Any], tmp_path: Path
) -> None:
    host = {"PONDER_KEYRING": f"k1={KEY}\n", "PONDER_CODEC_TOKEN": TOKEN}
    process, port = await _codec_process(services["ponder-codec"], tmp_path, host)
    url = f"http://127.0.0.1:{port}"
    auth = {"authorization": f"Bearer {TOKEN}"}
    plain = {
        "metadata": {"encoding": base64.b64encode(b"json/plain").decode()},
        "data": base64.b64encode(b'"compose"').decode(),
    }
    try:
        async with httpx.AsyncClient() as http, asyncio.timeout(60):
            while True:
                assert process.returncode is None, "the codec server exited"
                try:
                    encoded = await http.post(f"{url}/encode", json={"payloads": [plain]})
                    break
                except httpx.TransportError:
                    await asyncio.sleep(0.1)
            assert encoded.status_code == 401
            encoded = await http.post(f"{url}/encode", json={"payloads": [plain]}, headers=auth)
            assert encoded.status_code == 200
            (sealed,) = encoded.json()["payloads"]
            metadata = {k: base64.b64decode(v) for k, v in sealed["metadata"].items()}
            assert metadata["encoding"] == b"binary/encrypted"
            assert metadata["encryption-key-id"] == b"k1"
            decoded = await http.post(f"{url}/decode", json=encoded.json(), headers=auth)
            assert decoded.status_code == 200
            assert decoded.json()["payloads"] == [plain]
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        await process.wait()


async def test_the_worker_command_serves_what_prometheus_scrapes(
    services: dict[str, Any], scrape_job: dict[str, Any], settings: Settings, server_address: str
) -> None:
    """The worker's compose command (its port moved to a free one) against the dev server:
    the scrape job's path answers with the SDK's metrics in Prometheus' text format."""
    command = _command(services["ponder-worker"])
    ip, _ = _option(command, "--metrics-bind").rsplit(":", 1)
    port = free_port()
    command[command.index("--metrics-bind") + 1] = f"{ip}:{port}"
    (settings.home / "ponder.toml").parent.mkdir(parents=True, exist_ok=True)
    (settings.home / "ponder.toml").write_text("")
    # The service's environment with nothing set on the host (no keyring, no provider keys),
    # but this test's server, directories and a queue of its own.
    here = {"TEMPORAL_ADDRESS", "PONDER_HOME", "PONDER_PAYLOAD_DIR", "PONDER_TASK_QUEUE"}
    compose_env = {
        k: _interpolate(v, {})
        for k, v in services["ponder-worker"]["environment"].items()
        if k not in here
    }
    assert compose_env["PONDER_KEYRING"] == ""
    env = (
        worker_env(settings, server_address)
        | compose_env
        | {"PONDER_TASK_QUEUE": f"test-{uuid.uuid4()}"}
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *command[1:],
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    worker = MetricsWorker(process, f"http://127.0.0.1:{port}{scrape_job['metrics_path']}")
    try:
        await worker.serving()
        # The SDK's series appear once the worker polls the server.
        async with asyncio.timeout(60):
            while not any(n.startswith("temporal_") for n, _, _ in samples(await worker.scrape())):
                await asyncio.sleep(0.2)
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        await process.wait()
