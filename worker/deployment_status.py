"""What ``ponder deploy status`` shows: a deployment's routing and, per version, its status,
drainage, task queues and pollers (``worker.deployment`` for the rest)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from temporalio.api.deployment.v1 import WorkerDeploymentVersion as VersionProto
from temporalio.api.enums.v1 import (
    TaskQueueType,
    VersionDrainageStatus,
    WorkerDeploymentVersionStatus,
)
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import (
    DescribeTaskQueueRequest,
    DescribeWorkerDeploymentVersionRequest,
)
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from worker.deployment import (
    DEPLOYMENT_NOT_FOUND,
    DeployError,
    current_build,
    describe_deployment,
    unless_busy,
)

__all__ = ["DeploymentState", "VersionState", "deployment_state"]


@dataclass
class VersionState:
    build_id: str
    status: str
    """current, ramping, draining, drained or inactive"""
    drainage: str
    """draining or drained once the version has stopped being current; else empty"""
    created: datetime
    task_queues: list[str] = field(default_factory=list)
    """The queues whose workflow tasks this version takes."""
    activity_queues: list[str] = field(default_factory=list)
    """The queues whose activity tasks it takes (``--rate-limit`` adds provider queues). The
    server lists a queue once a worker of the version has polled it: a version missing a queue
    the current one has cannot be promoted until it has."""
    pollers: int = 0
    """Distinct workers seen polling this version's queues in the server's recent window."""
    last_poll: datetime | None = None


@dataclass
class DeploymentState:
    name: str
    current: str | None
    ramping: str | None
    ramping_percent: float
    versions: list[VersionState]


def _word(value: str, prefix: str) -> str:
    return value.removeprefix(prefix).lower()


async def deployment_state(client: Client, name: str) -> DeploymentState:
    """The deployment's routing and each version's status, drainage, queues and pollers."""
    described = await describe_deployment(client, name)
    if described is None:
        raise DeployError(
            DEPLOYMENT_NOT_FOUND,
            f"no deployment {name!r} in namespace {client.namespace!r}: no worker with "
            f"--deployment {name} has polled it; start one (`ponder worker --deployment "
            f"{name}`)",
        )
    info = described[0]
    routing = info.routing_config
    versions = []
    for summary in info.version_summaries:
        build = summary.deployment_version.build_id
        status = WorkerDeploymentVersionStatus.Name(summary.status)
        drained = summary.drainage_status
        unknown = drained == VersionDrainageStatus.VERSION_DRAINAGE_STATUS_UNSPECIFIED
        drainage = (
            ""
            if unknown
            else _word(VersionDrainageStatus.Name(drained), "VERSION_DRAINAGE_STATUS_")
        )
        version = VersionState(
            build_id=build,
            status=_word(status, "WORKER_DEPLOYMENT_VERSION_STATUS_"),
            drainage=drainage,
            created=summary.create_time.ToDatetime(tzinfo=UTC),
        )
        await _add_pollers(client, name, version)
        versions.append(version)
    versions.sort(key=lambda v: v.created, reverse=True)
    ramping = routing.ramping_deployment_version.build_id or None
    return DeploymentState(
        name=name,
        current=current_build(info),
        ramping=ramping,
        ramping_percent=routing.ramping_version_percentage if ramping else 0.0,
        versions=versions,
    )


async def _add_pollers(client: Client, name: str, version: VersionState) -> None:
    request = DescribeWorkerDeploymentVersionRequest(
        namespace=client.namespace,
        deployment_version=VersionProto(deployment_name=name, build_id=version.build_id),
    )
    try:
        answer = await unless_busy(
            lambda: client.workflow_service.describe_worker_deployment_version(request)
        )
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:  # listed, but still being registered
            return
        raise
    queues = answer.worker_deployment_version_info.task_queue_infos
    version.task_queues = sorted(
        {q.name for q in queues if q.type == TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW}
    )
    version.activity_queues = sorted(
        {q.name for q in queues if q.type == TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY}
    )
    identities: set[str] = set()
    for queue in version.task_queues:
        pollers = await client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=client.namespace,
                task_queue=TaskQueue(name=queue),
                task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
            )
        )
        for poller in pollers.pollers:
            options = poller.deployment_options
            if options.deployment_name != name or options.build_id != version.build_id:
                continue
            identities.add(poller.identity)
            seen = poller.last_access_time.ToDatetime(tzinfo=UTC)
            version.last_poll = max(version.last_poll or seen, seen)
    version.pollers = len(identities)
