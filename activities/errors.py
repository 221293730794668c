"""The worker-side branches of the one error tree (``workflows.errors`` draws all of it).

```
PonderError(code, message)       base of everything ponder raises on purpose (workflows.errors)
├── ConfigError                  bad flag, config file, model spec or missing secret (exit 2)
├── ServerError                  the Temporal server cannot be reached, started or shared (exit 2)
│   └── NoWorkerError            nothing polls the task queue (worker.missing)
└── ProviderError                a model call failed (its subtree: workflows.provider_errors)
```

Third-party exceptions (httpx, subprocess, JSON) are translated into this tree in
``activities.providers.http`` and ``activities.call_model``, the only places that catch them.
``ProviderError`` and its subtree are defined in ``workflows.provider_errors`` (workflows
branch on their codes and never import activities, so the codes live on their side) and
re-exported here with the rest of what the worker raises.
"""

from __future__ import annotations

from workflows.errors import PonderError
from workflows.provider_errors import (
    CONFIG_ERROR_TYPE,
    NON_RETRYABLE_TYPES,
    RETRY_LATER_TYPE,
    AuthError,
    BadRequestError,
    DispatchError,
    MalformedOutputError,
    ModelTimeoutError,
    PolicyRefusalError,
    ProviderError,
    RateLimitedError,
    ReplayClosedError,
    ReplayMissError,
    ResponseTooLargeError,
    SessionGoneError,
    TransportError,
)

__all__ = [
    "CONFIG_ERROR_TYPE",
    "NON_RETRYABLE_TYPES",
    "RETRY_LATER_TYPE",
    "WORKER_MISSING",
    "AuthError",
    "BadRequestError",
    "ConfigError",
    "DispatchError",
    "MalformedOutputError",
    "ModelTimeoutError",
    "NoWorkerError",
    "PolicyRefusalError",
    "PonderError",
    "ProviderError",
    "RateLimitedError",
    "ReplayClosedError",
    "ReplayMissError",
    "ResponseTooLargeError",
    "ServerError",
    "SessionGoneError",
    "TransportError",
]


class ConfigError(PonderError):
    """A flag, config file, model spec or secret is wrong; the message says how to fix it."""


class ServerError(PonderError):
    """The Temporal server cannot be reached, started or shared (codes ``server.*``)."""


class NoWorkerError(ServerError):
    """No worker polls the task queue."""

    def __init__(self, message: str) -> None:
        super().__init__(WORKER_MISSING, message)


WORKER_MISSING = "worker.missing"
