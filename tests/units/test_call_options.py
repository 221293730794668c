"""Direct tests of the run's call options: queue names, their refusals and the time limits."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError

from workflows.call_options import (
    DEFAULT_HEARTBEAT_TIMEOUT_S,
    FALLBACK_SCHEDULE_TO_CLOSE_S,
    NO_SESSION,
    CallOptions,
    provider_of,
    provider_task_queue,
    session_task_queue,
)

SECRET = "0123456789abcdef" * 2


def error_of(**fields: object) -> dict[str, object]:
    with pytest.raises(ValidationError) as caught:
        CallOptions.model_validate(fields)
    (error,) = caught.value.errors()
    return dict(error)


def test_queue_names_are_built_from_queue_provider_and_secret() -> None:
    assert provider_task_queue("ponder", "openai") == "ponder.provider.openai"
    assert session_task_queue("ponder", "mcp", SECRET) == f"ponder.session.{SECRET}.mcp"


@pytest.mark.parametrize(
    ("spec", "provider"),
    [("openai:gpt-4o", "openai"), (" sim :x:y", "sim"), ("bare", "bare"), (":m", "")],
)
def test_the_provider_is_what_comes_before_the_first_colon(spec: str, provider: str) -> None:
    assert provider_of(spec) == provider


def test_a_session_queue_of_the_right_form_is_kept_and_routes_its_provider() -> None:
    queue = session_task_queue("ponder", "mcp", SECRET)
    options = CallOptions(
        session_queues={"mcp": queue},
        provider_queues={"mcp": "ponder.provider.mcp", "openai": "ponder.provider.openai"},
    )
    assert options.session_queues == {"mcp": queue}
    # the session's queue wins over a rate-limit queue of the same provider
    assert options.task_queue_for("mcp:host") == queue
    assert options.task_queue_for("openai:gpt") == "ponder.provider.openai"
    assert options.task_queue_for("anthropic:claude") is None
    assert options.awaits_session("mcp:host") is True
    assert options.awaits_session("openai:gpt") is False


@pytest.mark.parametrize(
    ("provider", "queue"),
    [
        ("mcp", "ponder.session.mcp"),  # no secret
        ("mcp", f".session.{SECRET}.mcp"),  # no task queue before it
        ("mcp", f"ponder.session.{SECRET[:31]}.mcp"),  # a secret too short
        ("mcp", f"ponder.session.{SECRET.upper()}.mcp"),  # not lower-case hex
        ("mcp", f"ponder.session.{SECRET}.other"),  # another provider's queue
        ("mcp", f"ponder.provider.{SECRET}.mcp"),  # a rate-limit queue
        ("9mcp", f"ponder.session.{SECRET}.9mcp"),  # not a provider name
        ("mcp", f"pon der.session.{SECRET}.mcp"),  # not a queue name
        ("mcp", f"ponder.session.{SECRET}.mcp" + "x" * 200),
    ],
)
def test_a_session_queue_of_another_form_is_refused_with_its_own_code(
    provider: str, queue: str
) -> None:
    error = error_of(session_queues={provider: queue})
    assert error["type"] == NO_SESSION == "mcp.no_session"
    message = str(error["msg"])
    assert message.startswith(f"{provider}: {queue[:80]!r} is not the session queue of a ")
    assert f"'<task queue>.session.<secret>.{provider}'" in message
    assert "`ponder mcp`: a session queue is" in message
    assert "whose secret only the ponder home of that `ponder mcp` holds;" in message
    assert "start the run from an MCP client's tools (think, ask)" in message
    assert "or its user's `ponder` CLI, or leave calls.session_queues out" in message


def test_a_long_session_queue_is_quoted_cut_to_eighty_characters() -> None:
    queue = "q" * 150
    message = str(error_of(session_queues={"mcp": queue})["msg"])
    assert repr("q" * 80) in message
    assert repr("q" * 81) not in message


@pytest.mark.parametrize("secret", ["a" * 32, "f" * 64, "0123456789" * 4])
def test_a_secret_of_32_to_64_hex_characters_is_taken(secret: str) -> None:
    queue = f"ponder.session.{secret}.mcp"
    assert CallOptions(session_queues={"mcp": queue}).session_queues == {"mcp": queue}


def test_a_secret_of_65_characters_is_refused() -> None:
    assert error_of(session_queues={"mcp": f"p.session.{'a' * 65}.mcp"})["type"] == NO_SESSION


def test_a_provider_name_starts_with_a_letter_and_runs_to_64_characters() -> None:
    name = "a" + "b" * 63
    queue = f"ponder.provider.{name}"
    assert CallOptions(provider_queues={name: queue}).provider_queues == {name: queue}
    assert CallOptions(provider_queues={"A_b.c-9": "q.provider.A_b.c-9"}).provider_queues
    too_long = name + "c"
    error = error_of(provider_queues={too_long: f"ponder.provider.{too_long}"})
    assert error["type"] == "value_error"


@pytest.mark.parametrize(
    ("provider", "queue"),
    [
        ("openai", ".provider.openai"),  # the suffix alone: no task queue
        ("openai", "ponder.provider.anthropic"),
        ("openai", "ponder.session.openai"),
        ("openai", "ponder.provider.openai\n"),
        ("openai", "ponder provider.openai"),
        ("_openai", "ponder.provider._openai"),
        ("openai", "x" * 190 + ".provider.openai"),  # 206 characters: past 200
    ],
)
def test_a_rate_limit_queue_of_another_form_is_refused_naming_the_worker(
    provider: str, queue: str
) -> None:
    error = error_of(provider_queues={provider: queue})
    assert error["type"] == "value_error"
    assert str(error["msg"]) == (
        f"Value error, {provider}: {queue!r} is not a rate-limit queue of provider "
        f"{provider!r}: give '<task queue>.provider.{provider}' (what `ponder worker "
        f"--rate-limit {provider}=N/s` polls), or leave it out and let the client fill it "
        "from the workers that poll"
    )


def test_a_queue_name_runs_to_200_characters() -> None:
    queue = "x" * 184 + ".provider.openai"
    assert len(queue) == 200
    assert CallOptions(provider_queues={"openai": queue}).provider_queues == {"openai": queue}


def test_read_tokens_take_32_lower_case_hex_characters_per_valid_run_id() -> None:
    tokens = {"run-1": "0" * 32, "run.2": "abcdef0123456789" * 2}
    assert CallOptions(read_tokens=tokens).read_tokens == tokens


@pytest.mark.parametrize("token", ["0" * 31, "0" * 33, "A" * 32, "g" * 32])
def test_a_read_token_of_another_form_is_refused_naming_its_run(token: str) -> None:
    error = error_of(read_tokens={"run-1": token})
    assert str(error["msg"]) == (
        "Value error, run-1: a read token is 32 lower-case hex characters (the run "
        "directory's read-token file), not what was given"
    )


def test_a_read_token_for_an_invalid_run_id_is_refused_by_the_run_id_rule() -> None:
    error = error_of(read_tokens={"../etc": "0" * 32})
    assert "run id '../etc' must match" in str(error["msg"])


def test_the_heartbeat_timeout_defaults_to_thirty_seconds() -> None:
    assert DEFAULT_HEARTBEAT_TIMEOUT_S == 30.0
    assert CallOptions().heartbeat_timeout() == timedelta(seconds=30)
    assert CallOptions(heartbeat_timeout_s=7.5).heartbeat_timeout() == timedelta(seconds=7.5)


def test_a_judge_call_gets_twenty_minutes_and_every_other_role_an_hour() -> None:
    options = CallOptions()
    assert options.schedule_to_close("judge") == timedelta(minutes=20)
    assert FALLBACK_SCHEDULE_TO_CLOSE_S == 3600.0
    for role in ("ask", "generate", "mutate", "finalize"):
        assert options.schedule_to_close(role) == timedelta(hours=1)


def test_the_input_s_schedule_to_close_applies_to_every_role() -> None:
    options = CallOptions(schedule_to_close_s=90.0)
    assert options.schedule_to_close("judge") == timedelta(seconds=90)
    assert options.schedule_to_close("ask") == timedelta(seconds=90)
