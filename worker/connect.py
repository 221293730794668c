"""The one client factory: every client, worker and test connects through here (also as
``client.connect``)."""

from __future__ import annotations

import atexit
import dataclasses
import time
from collections.abc import Sequence
from typing import ClassVar

from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.common import RawValue
from temporalio.contrib.pydantic import PydanticPayloadConverter, pydantic_data_converter
from temporalio.converter import (
    CompositePayloadConverter,
    DataConverter,
    DefaultFailureConverterWithEncodedAttributes,
    EncodingPayloadConverter,
    ExternalStorage,
)

from activities.codec import EncryptionCodec, keyring_from_settings
from activities.config import Settings, read_secret
from activities.errors import ServerError
from activities.payload_store import FileSystemStorageDriver
from worker.logs import install_runtime
from worker.startup import imports_done
from worker.tracing import interceptors

__all__ = ["PonderPayloadConverter", "before_connect", "connect", "data_converter"]

# The SDK's Rust threads resolve a Python future through ``loop.call_soon_threadsafe``, which
# drops the GIL for the loop's self-pipe write and takes it back afterwards. A main thread that
# reaches interpreter finalization inside that gap aborts the process with "Fatal Python error:
# PyGILState_Release ... finalizing" (exit 134; temporalio/sdk-python#300): it hit 1 script in 5
# here. atexit handlers run before finalization starts, so giving the GIL away for a moment lets
# such a callback finish first. 50 ms was not enough on a loaded 2-core machine (1 fork in 20
# still aborted at load 15), so it is 200 ms, paid only by a process that connected: the first
# connect registers it, and commands that read the run store alone exit at once.
EXIT_GRACE_S = 0.2
_exit_hook: list[bool] = []


def _let_sdk_callbacks_finish() -> None:
    time.sleep(EXIT_GRACE_S)


def before_connect() -> None:
    """What a process needs once before its first ``Client.connect``: the SDK runtime with
    ponder's logging, the exit grace above, and garbage collection back on (``worker.startup``):
    a process that connects may run for hours."""
    install_runtime()
    imports_done()
    if not _exit_hook:
        _exit_hook.append(True)
        atexit.register(_let_sdk_callbacks_finish)


class _DecodeOrRaw(PydanticPayloadConverter):
    """Pydantic JSON; without a type hint, a payload that does not decode (an encoding no
    converter knows, bytes that are not JSON) is its ``RawValue`` instead of a decode error.

    Workflows take their arguments variadic and so decoded without type hints
    (workflows/raw_input.py): a start with ``--input-meta encoding=...`` or a client's broken
    JSON would otherwise fail the workflow task forever, where the raw value lets the workflow
    refuse it with a code.
    """

    def from_payloads(
        self, payloads: Sequence[Payload], type_hints: list[type] | None = None
    ) -> list[object]:
        if type_hints is not None:
            return super().from_payloads(payloads, type_hints)
        values: list[object] = []
        for payload in payloads:
            try:
                values.extend(super().from_payloads([payload]))
            except Exception:  # KeyError (unknown encoding) or RuntimeError (does not decode)
                values.append(RawValue(payload))
        return values


class PonderPayloadConverter(_DecodeOrRaw):
    """``_DecodeOrRaw`` sharing one set of encoding converters in the process.

    The SDK makes a new payload converter whenever it binds a payload to its workflow or
    activity for external storage (``DataConverter._with_store_context`` copies the data
    converter, which builds its payload converter anew): about 7 times a model call. A fresh
    pydantic converter starts with an empty type-adapter cache, so every typed decode built its
    ``TypeAdapter`` again. The encoding converters hold no per-context state (none takes a
    serialization context), so every instance shares the first one's, and with them its
    cache (an LRU, thread-safe: workflow activations decode in worker threads).
    """

    _shared: ClassVar[tuple[EncodingPayloadConverter, ...]] = ()

    def __init__(self) -> None:
        cls = PonderPayloadConverter
        if not cls._shared:
            super().__init__()
            cls._shared = tuple(self.converters.values())
        else:
            CompositePayloadConverter.__init__(self, *cls._shared)


def data_converter(settings: Settings) -> DataConverter:
    """Pydantic JSON, with payloads over the threshold kept in the shared payload directory.

    With a keyring configured every payload is encrypted (``activities.codec``) before it is
    stored or sent, and failures' messages and stack traces travel as an encrypted payload
    (their codes stay readable): a model's error text would otherwise land in plain history.
    """
    storage = ExternalStorage(
        drivers=[FileSystemStorageDriver(settings.payload_dir)],
        payload_size_threshold=settings.payload_threshold,
    )
    keyring = keyring_from_settings(settings)
    if keyring is None:
        return dataclasses.replace(
            pydantic_data_converter,
            payload_converter_class=PonderPayloadConverter,
            external_storage=storage,
        )
    return dataclasses.replace(
        pydantic_data_converter,
        payload_converter_class=PonderPayloadConverter,
        external_storage=storage,
        payload_codec=EncryptionCodec(keyring),
        failure_converter_class=DefaultFailureConverterWithEncodedAttributes,
    )


async def connect(settings: Settings, address: str | None = None) -> Client:
    """Connect to ``address`` (default: the settings' ``temporal_address``)."""
    target = address or settings.temporal_address
    if not target:
        raise ServerError(
            "server.unavailable",
            "no Temporal address: set TEMPORAL_ADDRESS or use the embedded server",
        )
    api_key = read_secret(settings.temporal_api_key_env)
    before_connect()
    try:
        return await Client.connect(
            target,
            namespace=settings.namespace,
            data_converter=data_converter(settings),
            interceptors=interceptors(settings),
            api_key=api_key,
            tls=bool(api_key) or settings.temporal_tls,
        )
    except RuntimeError as exc:
        raise ServerError(
            "server.unavailable",
            f"cannot reach Temporal at {target} ({exc}): check TEMPORAL_ADDRESS or unset it "
            "to use the embedded server",
        ) from exc
