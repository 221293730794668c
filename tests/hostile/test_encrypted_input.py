"""Forged encrypted input (docs/security.md, "Encryption at rest"), sent through the real
``temporal`` binary to a worker process that holds a keyring: a payload that claims the
``binary/encrypted`` encoding with a key id the keyring lacks, a nonce too short for AES-GCM, or
bytes that do not authenticate. Anyone allowed to start a workflow can send these without any
key; each run fails with its code at once (never a workflow task retried for ever) while a probe
``Ask`` on the same worker completes, and the worker still stops within 10 s of SIGTERM.
"""

from __future__ import annotations

import asyncio
import base64
import time
from pathlib import Path

from temporalio.client import Client

from activities.config import Settings
from client.connect import connect
from tests.hostile.harness import shared_worker, temporal
from workflows.names import ASK

KEY = base64.b64encode(bytes(range(32))).decode()
FORGED: dict[str, tuple[str, bytes, str]] = {
    # id: (key id, payload bytes, the failure type)
    "enc-unknown-key": ("k9", bytes(64), "encryption.key_unknown"),
    "enc-short-nonce": ("k1", b"abc", "encryption.payload_invalid"),
    "enc-no-nonce": ("k1", b"", "encryption.payload_invalid"),
    "enc-forged-tag": ("k1", bytes(60), "encryption.payload_invalid"),
}


async def test_forged_encrypted_input_ends_coded_while_the_worker_serves(
    settings: Settings, server_address: str, tmp_path: Path
) -> None:
    keyring = tmp_path / "keyring"
    keyring.write_text(f"k1={KEY}\n")
    settings = settings.model_copy(update={"keyring_file": keyring})
    # The test's client holds the keyring too: the worker encrypts the failures it records.
    client: Client = await connect(settings, server_address)
    toml = f'[ponder]\nkeyring_file = "{keyring}"\n'
    async with shared_worker(client, settings, server_address, toml=toml) as worker:
        target = ["--address", server_address, "--namespace", "default"]
        for run_id, (key_id, data, _) in FORGED.items():
            # The CLI sends --input as the payload's data, bytes as given (base64 here).
            code, output = await temporal(
                "workflow", "start", *target, "--task-queue", worker.queue, "--type", ASK,
                "--workflow-id", run_id, "--input-base64",
                "--input", base64.b64encode(data).decode() if data else "",
                "--input-meta", "encoding=binary/encrypted",
                "--input-meta", f"encryption-key-id={key_id}",
            )  # fmt: skip
            assert code == 0, output
        probe = asyncio.create_task(worker.probe())
        began = time.monotonic()
        for run_id, (_, _, reason) in FORGED.items():
            error = await worker.failure(run_id, within=30)
            assert error.type == reason, (run_id, error)
        assert time.monotonic() - began < 30
        assert await probe < 10
        history = await worker.handle("enc-forged-tag").fetch_history()
        assert not any(e.HasField("workflow_task_failed_event_attributes") for e in history.events)
