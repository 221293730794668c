"""The deployment files: docker-compose.yml wires the cluster as platform.md says, and the
Dockerfile builds a worker without the embedded dev server. No Docker needed: the files are
parsed, not run."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

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
