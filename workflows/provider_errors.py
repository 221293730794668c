"""The model-call branch of the one error tree: what a ``call_model`` activity fails with.

```
ProviderError                a model call failed; its code is ``provider.<failure_class>``
├── TransportError           connection trouble or 5xx             retryable
├── RateLimitedError         429; ``retry_after`` seconds if sent  retryable
├── ModelTimeoutError        no answer within the call timeout      retryable
├── MalformedOutputError     the provider answered something unparseable
├── ResponseTooLargeError    a response body over 1 MiB (read no further)
├── PolicyRefusalError       the provider refused on content policy
├── DispatchError            a command provider exited non-zero (stderr is the detail)
├── AuthError                401/403: key missing or wrong
├── BadRequestError          any other 4xx: the request itself is wrong
├── SessionGoneError         mcp: no MCP session is connected to answer (waited out)
├── ReplayMissError          wire replay: no recorded exchange (on_miss throw)
└── ReplayClosedError        wire replay: no recorded exchange, a synthetic 599 (fail-closed)
```

Activities raise these (``activities.errors`` re-exports them beside the rest of the worker's
errors); workflows branch on their codes, so the tree lives on the workflow side, where a
workflow module can read it without loading any I/O code.

Inside Temporal a ProviderError travels as ``ApplicationError(type="provider.<class>")`` with
details ``{"status", "model", "attempt", "transport_retries"}``; ``NON_RETRYABLE_TYPES`` is the
list the retry policies use. A retryable error whose ``Retry-After`` will not fit in the activity's
remaining schedule-to-close (or exceeds 300 s) travels as non-retryable ``provider.retry_later``
with ``details[0]["retry_after_s"]``: the workflow waits on a durable timer and calls again.
These codes are in saved histories: never rename one.

Pure: standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping

from workflows.errors import PonderError

__all__ = [
    "CONFIG_ERROR_TYPE",
    "NON_RETRYABLE_TYPES",
    "RETRY_LATER_TYPE",
    "AuthError",
    "BadRequestError",
    "DispatchError",
    "MalformedOutputError",
    "ModelTimeoutError",
    "PolicyRefusalError",
    "ProviderError",
    "RateLimitedError",
    "ReplayClosedError",
    "ReplayMissError",
    "ResponseTooLargeError",
    "SessionGoneError",
    "TransportError",
]


class ProviderError(PonderError):
    """A model call failed. Subclasses set ``failure_class`` and ``retryable``; the code is
    ``provider.<failure_class>``, the ``ApplicationError.type`` it travels under."""

    failure_class = "error"
    retryable = False

    def __init__(
        self,
        message: str,
        *,
        model: str = "",
        status: int | None = None,
        body: str = "",
        headers: Mapping[str, str] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"provider.{self.failure_class}", message)
        self.model = model
        self.status = status
        self.body = body[:2000]
        self.headers = {k.lower(): v for k, v in (headers or {}).items()}
        self.retry_after = retry_after

    @property
    def error_type(self) -> str:
        """The ``ApplicationError.type`` this error travels under (its code)."""
        return self.code


class TransportError(ProviderError):
    failure_class = "transport"
    retryable = True


class RateLimitedError(ProviderError):
    failure_class = "rate_limited"
    retryable = True


class ModelTimeoutError(ProviderError):
    failure_class = "timeout"
    retryable = True


class MalformedOutputError(ProviderError):
    failure_class = "malformed_output"


class ResponseTooLargeError(ProviderError):
    """A response body past ``MAX_RESPONSE_BYTES``: the rest is never read, nothing is parsed."""

    failure_class = "response_too_large"


class PolicyRefusalError(ProviderError):
    failure_class = "policy_refusal"


class DispatchError(ProviderError):
    failure_class = "dispatch"


class AuthError(ProviderError):
    failure_class = "auth"


class BadRequestError(ProviderError):
    failure_class = "bad_request"


class SessionGoneError(ProviderError):
    """An ``mcp:`` call found no connected MCP session to sample from. Not retried by the
    activity's policy: the workflow waits for a session on a durable timer and calls again
    (``workflows/model_calls.py``), as it does when nothing polls the session queue at all."""

    failure_class = "session_gone"


class ReplayMissError(ProviderError):
    """A replayed run asked for an exchange its recording does not hold."""

    failure_class = "replay_miss"


class ReplayClosedError(ProviderError):
    """The same miss under ``on_miss: fail-closed``: answered as a synthetic HTTP 599."""

    failure_class = "replay_closed"


RETRY_LATER_TYPE = "provider.retry_later"
"""A provider asked for a wait longer than the activity may take; see the module docstring."""

CONFIG_ERROR_TYPE = "provider.config"
"""The type a ConfigError found at call time travels under (the worker's config is wrong)."""

NON_RETRYABLE_TYPES: list[str] = [
    CONFIG_ERROR_TYPE,
    *(
        cls("").error_type
        for cls in (
            MalformedOutputError,
            ResponseTooLargeError,
            PolicyRefusalError,
            DispatchError,
            AuthError,
            BadRequestError,
            SessionGoneError,
            ReplayMissError,
            ReplayClosedError,
        )
    ),
]
