"""A local-filesystem ``StorageDriver`` for Temporal's external payload storage.

Payloads over the threshold are written once, content-addressed by their SHA-256, under one
directory every worker and client shares (a volume in docker-compose). History then holds a
small reference instead of the bytes.

With a keyring configured the data converter encrypts a payload before it reaches this driver
(``activities.codec``), so the files hold ciphertext and the digest is the ciphertext's: the
store needs no key of its own.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    StorageDriver,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
)

from activities.atomic import write_atomically

__all__ = ["FileSystemStorageDriver"]

_DIGEST = re.compile(r"[0-9a-f]{64}")


class FileSystemStorageDriver(StorageDriver):
    def __init__(self, root: Path, name: str = "ponder-fs") -> None:
        self.root = Path(root)
        self._name = name

    def name(self) -> str:
        return self._name

    def type(self) -> str:
        return "ponder.filesystem"

    def path_for(self, digest: str) -> Path:
        return self.root / digest[:2] / f"{digest}.payload"

    def _store_one(self, payload: Payload) -> StorageDriverClaim:
        data = payload.SerializeToString(deterministic=True)
        digest = hashlib.sha256(data).hexdigest()
        target = self.path_for(digest)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(target, data)
        return StorageDriverClaim({"sha256": digest})

    def _retrieve_one(self, claim: StorageDriverClaim) -> Payload:
        digest = claim.claim_data.get("sha256", "")
        # A claim arrives with workflow input too: only a digest may name a file, never a path.
        if not _DIGEST.fullmatch(digest):
            raise ValueError(f"payload claim {digest!r} is not a SHA-256 hex digest: refused")
        data = self.path_for(digest).read_bytes()
        if hashlib.sha256(data).hexdigest() != digest:
            raise ValueError(f"payload {digest} in {self.root} is corrupt")
        payload = Payload()
        payload.ParseFromString(data)
        return payload

    async def store(
        self, context: StorageDriverStoreContext, payloads: Sequence[Payload]
    ) -> list[StorageDriverClaim]:
        return await asyncio.to_thread(lambda: [self._store_one(p) for p in payloads])

    async def retrieve(
        self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]
    ) -> list[Payload]:
        return await asyncio.to_thread(lambda: [self._retrieve_one(c) for c in claims])
