"""The one client factory, under the name scripts and tests use: its home is ``worker.connect``
(a worker connects as every client does, and ``python -m worker`` imports nothing of the client).
Its first connect registers the exit hook that lets a script exit normally."""

from worker.connect import PonderPayloadConverter, connect, data_converter

__all__ = ["PonderPayloadConverter", "connect", "data_converter"]
