"""Every failure a tool meets becomes a code, a one-line message and a fix."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from activities.errors import ConfigError, NoWorkerError
from client.mcp.args import ThinkArgs
from client.mcp.errors import describe, tool_error
from workflows.tournament.errors import PROFILE_INVALID, TournamentError


def test_codes_messages_and_fixes() -> None:
    coded = describe(
        ConfigError("run.id_invalid", "run id '../x' must match [A-Za-z0-9]: choose another")
    )
    assert (coded.code, coded.fix) == ("run.id_invalid", "choose another")
    assert coded.message.startswith("run id '../x' must match")

    tournament = describe(
        TournamentError(PROFILE_INVALID, "profile.n must be >= 2: use at least two")
    )
    assert tournament.code == "profile.invalid" and tournament.fix == "use at least two"

    with pytest.raises(ValidationError) as info:
        ThinkArgs.model_validate({"task": "", "n": "many", "api_key": "sk-x"})
    invalid = describe(info.value)
    assert invalid.code == "input.invalid"
    assert "task" in invalid.message and "n:" in invalid.message and "api_key" in invalid.message
    assert "sk-x" not in invalid.message  # values are never echoed

    worker = describe(NoWorkerError("no worker polls task queue 'q': start `ponder worker`"))
    assert worker.code == "worker.missing" and "ponder worker" in worker.fix

    bug = tool_error(ZeroDivisionError("division by zero"))
    assert bug.is_error
    assert bug.structured_content["error"]["code"] == "internal.error"  # type: ignore[index]
    assert "Traceback" not in bug.content[0].text  # type: ignore[union-attr]
