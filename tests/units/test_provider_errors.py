"""Direct tests of the model-call error tree: codes, retryability, what each error keeps."""

from __future__ import annotations

import pytest

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

CODES = {
    ProviderError: ("provider.error", False),
    TransportError: ("provider.transport", True),
    RateLimitedError: ("provider.rate_limited", True),
    ModelTimeoutError: ("provider.timeout", True),
    MalformedOutputError: ("provider.malformed_output", False),
    ResponseTooLargeError: ("provider.response_too_large", False),
    PolicyRefusalError: ("provider.policy_refusal", False),
    DispatchError: ("provider.dispatch", False),
    AuthError: ("provider.auth", False),
    BadRequestError: ("provider.bad_request", False),
    SessionGoneError: ("provider.session_gone", False),
    ReplayMissError: ("provider.replay_miss", False),
    ReplayClosedError: ("provider.replay_closed", False),
}


@pytest.mark.parametrize("cls", list(CODES))
def test_each_error_s_code_and_retryability(cls: type[ProviderError]) -> None:
    code, retryable = CODES[cls]
    error = cls("went wrong")
    assert error.code == error.error_type == code
    assert error.retryable is retryable
    assert error.message == "went wrong"
    assert str(error) == f"{code}: went wrong"


def test_the_non_retryable_types_are_config_and_every_class_not_retried() -> None:
    assert CONFIG_ERROR_TYPE == "provider.config"
    assert RETRY_LATER_TYPE == "provider.retry_later"
    expected = [CONFIG_ERROR_TYPE] + [
        code
        for cls, (code, retryable) in CODES.items()
        if not retryable and cls is not ProviderError
    ]
    assert expected == NON_RETRYABLE_TYPES


def test_an_error_keeps_its_model_status_retry_after_and_lower_cased_headers() -> None:
    error = RateLimitedError(
        "slow down",
        model="openai:gpt",
        status=429,
        body="b" * 2001,
        headers={"Retry-After": "3", "X-Request-ID": "abc"},
        retry_after=3.0,
    )
    assert (error.model, error.status, error.retry_after) == ("openai:gpt", 429, 3.0)
    assert error.body == "b" * 2000
    assert error.headers == {"retry-after": "3", "x-request-id": "abc"}


def test_an_error_without_details_has_empty_ones() -> None:
    error = TransportError("down")
    assert (error.model, error.status, error.body, error.headers, error.retry_after) == (
        "",
        None,
        "",
        {},
        None,
    )
