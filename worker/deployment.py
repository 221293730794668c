"""Worker Deployment Versioning: a versioned worker, its deployment's state, and promotion.

A worker started with ``--deployment`` serves one version of a deployment (``ponder`` unless
named): the deployment's name and the worker's build id (``worker.worker.build_id``: a digest of
ponder's sources and the SDK's version, or ``--build-id``). Temporal then routes by version:
short runs (Ask, tournaments, the cells of a campaign) stay on the version that started them,
plans and campaigns move to the deployment's current version at their next workflow task,
guarded by the ``workflow.patched`` markers their code carries (``workflows.versioned`` declares
which is which). A version takes new runs only once it is current: the first version of a
deployment makes itself current; any later one waits for ``ponder deploy promote``.
docs/operating.md ("Deploying new code") tells the whole story.

Nothing here runs for a worker without ``--deployment``: the embedded server's workers and the
test suite's in-process workers are unversioned, as before.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from temporalio.api.deployment.v1 import WorkerDeploymentInfo
from temporalio.api.workflowservice.v1 import (
    DescribeWorkerDeploymentRequest,
    SetWorkerDeploymentCurrentVersionRequest,
)
from temporalio.client import Client
from temporalio.common import VersioningBehavior, WorkerDeploymentVersion
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import WorkerDeploymentConfig

from activities.errors import ConfigError
from worker.options import DEPLOYMENT
from workflows.errors import PonderError

__all__ = [
    "DEPLOYMENT",
    "DEPLOYMENT_EMBEDDED",
    "DEPLOYMENT_NOT_FOUND",
    "PROMOTE_REFUSED",
    "VERSION_UNKNOWN",
    "DeployError",
    "check_build_id",
    "check_deployment_name",
    "current_build",
    "deployment_config",
    "describe_deployment",
    "promote",
    "take_first_version",
    "unless_busy",
]

DEPLOYMENT_EMBEDDED = "deploy.embedded"
DEPLOYMENT_NOT_FOUND = "deploy.not_found"
VERSION_UNKNOWN = "deploy.version_unknown"
PROMOTE_REFUSED = "deploy.promote_refused"

BUSY_RETRIES = 5
"""The server serves a deployment's requests through one entity, and refuses a burst of them
(``RESOURCE_EXHAUSTED``, "too many requests issued to Worker Deployment"), as when several
workers start at once: asked again after 0.2, 0.4, ... 3.2 s."""
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")
"""Temporal joins a version as ``NAME.BUILD_ID``: a deployment's name may hold no dot."""
_BUILD_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,199}")
FIRST_VERSION_WAIT_S = 30.0
"""How long a new worker waits for the server to list its version (its first poll registers
it) before deciding whether it is the deployment's first."""


class DeployError(PonderError):
    """A deployment refusal (``deploy.*``): the embedded server, a deployment no versioned
    worker has joined, or a build id none of its versions has."""


def check_deployment_name(name: str) -> str:
    if not _NAME.fullmatch(name):
        raise ConfigError(
            "option.invalid",
            f"--deployment {name!r}: a deployment name is letters, digits, '_' and '-' (no "
            "dot), at most 100 characters; e.g. --deployment ponder",
        )
    return name


def check_build_id(build_id: str) -> str:
    if not _BUILD_ID.fullmatch(build_id):
        raise ConfigError(
            "option.invalid",
            f"--build-id {build_id!r}: a build id is letters, digits and '.', '_', '+', '-', "
            "starting with a letter or digit, at most 200 characters; e.g. --build-id v2.1",
        )
    return build_id


def deployment_config(name: str, build_id: str) -> WorkerDeploymentConfig:
    """A versioned worker's configuration. A workflow type that declares no behaviour upgrades
    with the deployment (its ``workflow.patched`` guards keep old histories replaying)."""
    return WorkerDeploymentConfig(
        version=WorkerDeploymentVersion(deployment_name=name, build_id=build_id),
        use_worker_versioning=True,
        default_versioning_behavior=VersioningBehavior.AUTO_UPGRADE,
    )


_T = TypeVar("_T")


async def unless_busy(call: Callable[[], Awaitable[_T]]) -> _T:
    """``call()``, asked again while the server says the deployment is busy (``BUSY_RETRIES``)."""
    for attempt in range(BUSY_RETRIES):
        try:
            return await call()
        except RPCError as exc:
            if exc.status != RPCStatusCode.RESOURCE_EXHAUSTED:
                raise
        await asyncio.sleep(0.2 * 2**attempt)
    return await call()


async def describe_deployment(
    client: Client, name: str
) -> tuple[WorkerDeploymentInfo, bytes] | None:
    """The deployment and the conflict token a change of its routing needs; None if no worker
    of it has polled yet."""
    request = DescribeWorkerDeploymentRequest(namespace=client.namespace, deployment_name=name)
    try:
        answer = await unless_busy(
            lambda: client.workflow_service.describe_worker_deployment(request)
        )
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return None
        raise
    return answer.worker_deployment_info, answer.conflict_token


async def _set_current(client: Client, name: str, build_id: str, token: bytes) -> None:
    request = SetWorkerDeploymentCurrentVersionRequest(
        namespace=client.namespace,
        deployment_name=name,
        build_id=build_id,
        conflict_token=token,
        identity=client.identity,
    )
    await unless_busy(
        lambda: client.workflow_service.set_worker_deployment_current_version(request)
    )


def current_build(info: WorkerDeploymentInfo) -> str | None:
    """The current version's build id; None when unversioned workers are current."""
    current = info.routing_config.current_deployment_version.build_id
    return current or None


async def take_first_version(
    client: Client, name: str, build_id: str, *, wait_s: float = FIRST_VERSION_WAIT_S
) -> str:
    """Make this worker's version current when its deployment has never had one, and say
    where the version stands (one line for the worker's log). A server that cannot answer
    (one without deployments, say) is reported on that line too: the worker goes on polling."""
    try:
        return await _take_first_version(client, name, build_id, wait_s)
    except RPCError as exc:
        return (
            f"deployment {name!r}: the server did not say where version {build_id!r} stands "
            f"({exc.message}); see `ponder deploy status`"
        )


async def _take_first_version(client: Client, name: str, build_id: str, wait_s: float) -> str:
    """A versioned worker takes no run until its version is current or ramping, so the first
    version of a deployment would otherwise leave every run waiting in silence. A deployment
    whose current version was set to unversioned on purpose (``temporal worker deployment
    set-current-version --unversioned``) is left as it is. Two first workers that race settle
    it through the conflict token: one wins, the other is told who did."""
    deadline = time.monotonic() + wait_s
    while True:
        described = await describe_deployment(client, name)
        if described is not None:
            info, token = described
            if any(s.deployment_version.build_id == build_id for s in info.version_summaries):
                break
        if time.monotonic() > deadline:
            return (
                f"deployment {name!r}: the server has not listed version {build_id!r} after "
                f"{wait_s:.0f} s; see `ponder deploy status`"
            )
        await asyncio.sleep(0.5)
    current = current_build(info)
    never_routed = not info.routing_config.HasField("current_version_changed_time")
    if current is None and never_routed:
        try:
            await _set_current(client, name, build_id, token)
        except RPCError as exc:
            if exc.status not in (RPCStatusCode.FAILED_PRECONDITION, RPCStatusCode.ABORTED):
                raise
            described = await describe_deployment(client, name)
            current = current_build(described[0]) if described is not None else None
        else:
            return (
                f"deployment {name!r}: version {build_id!r} is current (the deployment's "
                "first): new runs start here"
            )
    if current == build_id:
        return f"deployment {name!r}: version {build_id!r} is current: new runs start here"
    where = f"current is {current!r}" if current else "current is unversioned workers"
    return (
        f"deployment {name!r}: version {build_id!r} waits ({where}); `ponder deploy promote "
        f"{build_id}` sends new runs and upgrading plans and campaigns here"
    )


async def promote(client: Client, name: str, build_id: str | None) -> tuple[str, str | None]:
    """Make ``build_id`` (by default the newest version) the deployment's current version;
    returns it and the version that was current before (itself: nothing changed; None:
    unversioned workers were)."""
    described = await describe_deployment(client, name)
    if described is None:
        raise DeployError(
            DEPLOYMENT_NOT_FOUND,
            f"no deployment {name!r} in namespace {client.namespace!r}: start a worker with "
            f"--deployment {name} first",
        )
    info, token = described
    known = sorted(info.version_summaries, key=lambda s: s.create_time.ToDatetime())
    builds = [s.deployment_version.build_id for s in known]
    if build_id is None:
        if not builds:
            raise DeployError(VERSION_UNKNOWN, f"deployment {name!r} has no versions yet")
        build_id = builds[-1]
    elif build_id not in builds:
        raise DeployError(
            VERSION_UNKNOWN,
            f"BUILD_ID {build_id!r} is not a version of deployment {name!r}: its versions are "
            f"{', '.join(builds) or 'none'}; start a worker with --build-id {build_id}, or see "
            "`ponder deploy status`",
        )
    previous = current_build(info)
    if previous == build_id:
        return build_id, previous
    try:
        await _set_current(client, name, build_id, token)
    except RPCError as exc:
        if exc.status != RPCStatusCode.FAILED_PRECONDITION:
            raise
        raise DeployError(
            PROMOTE_REFUSED,
            f"the server refused to make {build_id!r} current: {exc.message}; start its workers "
            "on every task queue the current version serves (the same --task-queue and "
            "--rate-limit), wait for `ponder deploy status` to list them, then promote again",
        ) from None
    # The conflict token held the routing as described, so what was current is what the
    # description said. The answer's own "previous" is not used: under load the server may
    # apply the change twice and answer the second time with the new version itself.
    return build_id, previous
