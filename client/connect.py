"""The one client factory: every client, worker and test connects through here."""

from __future__ import annotations

import dataclasses

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter, ExternalStorage

from activities.config import Settings, read_secret
from activities.errors import ServerError
from activities.payload_store import FileSystemStorageDriver

__all__ = ["connect", "data_converter"]


def data_converter(settings: Settings) -> DataConverter:
    """Pydantic JSON, with payloads over the threshold kept in the shared payload directory."""
    storage = ExternalStorage(
        drivers=[FileSystemStorageDriver(settings.payload_dir)],
        payload_size_threshold=settings.payload_threshold,
    )
    return dataclasses.replace(pydantic_data_converter, external_storage=storage)


async def connect(settings: Settings, address: str | None = None) -> Client:
    """Connect to ``address`` (default: the settings' ``temporal_address``)."""
    target = address or settings.temporal_address
    if not target:
        raise ServerError("no Temporal address: set TEMPORAL_ADDRESS or use the embedded server")
    api_key = read_secret(settings.temporal_api_key_env)
    try:
        return await Client.connect(
            target,
            namespace=settings.namespace,
            data_converter=data_converter(settings),
            api_key=api_key,
            tls=bool(api_key) or settings.temporal_tls,
        )
    except RuntimeError as exc:
        raise ServerError(
            f"cannot reach Temporal at {target} ({exc}): check TEMPORAL_ADDRESS or unset it "
            "to use the embedded server"
        ) from exc
