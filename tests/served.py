"""What the served-command tests share: a ``ponder`` process whose imports are listed on stderr
(``-X importtime``), whether it loaded the SDK client, and a run's start event made comparable
across runs (``tests/test_served_http.py``, ``tests/test_served_think.py``)."""

from __future__ import annotations

import asyncio
import base64
import json
import sys
from typing import Any

from temporalio.client import Client

from tests.cli import Done

IMPORT_LINE = "import time:"


async def ponder_importing(*args: str, env: dict[str, str]) -> Done:
    """``ponder ARGS`` as a process, its imports listed on stderr (``-X importtime``)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-X", "importtime", "-m", "client", *args, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode is not None
    return Done(process.returncode, out.decode(), err.decode())


def loaded(done: Done, module: str) -> bool:
    """Whether the process imported ``module``."""
    return any(
        line.startswith(IMPORT_LINE) and line.rsplit("|", 1)[1].strip() == module
        for line in done.err.splitlines()
    )


def loaded_sdk(done: Done) -> bool:
    return loaded(done, "temporalio.client")


async def start_attributes(client: Client, run_id: str) -> dict[str, Any]:
    """The run's start event without what differs between any two starts (its ids, the
    starting process's identity), its input decoded with the run id made neutral."""
    history = await client.get_workflow_handle(run_id).fetch_history()
    started = json.loads(history.to_json())["events"][0]
    attributes: dict[str, Any] = started["workflowExecutionStartedEventAttributes"]
    for key in ("originalExecutionRunId", "firstExecutionRunId", "identity", "workflowId"):
        attributes.pop(key)
    payload = attributes["input"]["payloads"][0]
    payload["data"] = json.loads(base64.b64decode(payload["data"]))
    payload["data"]["run_id"] = "RUN"
    return attributes
