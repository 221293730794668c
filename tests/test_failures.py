"""client.failures: the one mapping of every error to a code, a one-line message, a fix and an
exit code (the CLI prints it, the MCP server answers it)."""

from __future__ import annotations

import click
import pytest
from pydantic import ValidationError
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from activities.errors import AuthError, ConfigError
from client.failures import describe
from client.runs import RunFailed
from workflows.ask_types import AskInput
from workflows.run_ids import RunIdInvalid


def test_ponder_errors_keep_their_code_and_exit_2_except_a_failed_run() -> None:
    refused = describe(ConfigError("model.key_missing", "provider 'x' needs an API key: set X"))
    assert (refused.code, refused.exit_code) == ("model.key_missing", 2)
    assert refused.line() == "model.key_missing: provider 'x' needs an API key: set X"
    assert describe(RunIdInvalid("run id 'a/b' is bad: choose another")).code == "run.id_invalid"
    assert describe(AuthError("401 bad key", model="openai:x")).code == "provider.auth"
    failed = describe(RunFailed("gate-killed", "run r failed: the gate was killed"))
    assert (failed.code, failed.exit_code) == ("gate-killed", 1)


def test_foreign_errors_are_translated_once() -> None:
    missing = describe(RPCError("workflow not found for ID: x", RPCStatusCode.NOT_FOUND, b""))
    assert (missing.code, missing.exit_code) == ("run.not_found", 2)
    assert "ponder runs" in missing.message and "ponder runs" in missing.fix
    refused = describe(RPCError("bad", RPCStatusCode.INVALID_ARGUMENT, b""))
    assert refused.code == "server.refused"
    usage = describe(click.UsageError("Missing argument 'QUESTION'."))
    assert (usage.code, usage.exit_code) == ("usage.invalid", 2)
    with pytest.raises(ValidationError) as info:
        AskInput.model_validate({"question": 1, "api_key": "sk-secret"})
    invalid = describe(info.value)
    assert invalid.code == "input.invalid" and "sk-secret" not in invalid.message
    bug = describe(ZeroDivisionError("division by zero"))
    assert (bug.code, bug.exit_code) == ("internal.error", 1)


def test_a_refused_update_carries_the_refusal_s_type_as_its_code() -> None:
    reason = ApplicationError("stale-gate-token: the token is old", type="stale-gate-token")
    coded = describe(WorkflowUpdateFailedError(reason))
    assert coded.code == "stale-gate-token"
    assert coded.message == "refused: the token is old"  # the code is shown once
    bare = describe(WorkflowUpdateFailedError(ApplicationError("below spent", type="ValueError")))
    assert bare.code == "control.refused"


def test_every_message_is_one_line_and_a_fix_is_split_off_for_mcp() -> None:
    failure = describe(ConfigError("option.invalid", "--x 'y'\nis not a number: give e.g. 300"))
    assert "\n" not in failure.message
    assert (failure.problem, failure.fix) == ("--x 'y' is not a number", "give e.g. 300")
