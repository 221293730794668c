"""Which RPC failures a waiting command retries through (the server restarting), and which it
reports at once."""

from __future__ import annotations

import pytest
from temporalio.service import RPCError, RPCStatusCode

from client.runs import unavailable


@pytest.mark.parametrize(
    ("status", "message", "retried"),
    [
        (RPCStatusCode.UNAVAILABLE, "anything", True),
        (RPCStatusCode.DEADLINE_EXCEEDED, "anything", True),
        # A dropped connection (tonic) and a refused one (hyper), while the server is down.
        (RPCStatusCode.UNKNOWN, "transport error", True),
        (RPCStatusCode.UNKNOWN, "tcp connect error", True),
        (RPCStatusCode.UNKNOWN, "something else", False),
        (RPCStatusCode.NOT_FOUND, "tcp connect error", False),
        (RPCStatusCode.INVALID_ARGUMENT, "bad request", False),
    ],
)
def test_a_server_that_does_not_answer_is_waited_for(
    status: RPCStatusCode, message: str, retried: bool
) -> None:
    assert unavailable(RPCError(message, status, b"")) is retried
