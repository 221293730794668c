"""The one tournament error type, its closed list of codes, and how each reaches the caller."""

from __future__ import annotations

import pickle
import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from activities.config import Settings
from activities.errors import ConfigError
from tests.fakes import FakeProvider, Reply
from tests.tournament.helpers import failure
from workflows.budget import BudgetLimits
from workflows.names import TOURNAMENT
from workflows.tournament import errors
from workflows.tournament.errors import TournamentError, is_known_code, provider_code
from workflows.tournament.profiles import Profile, RankBlock
from workflows.tournament.prompts import PromptOverride, PromptOverrides
from workflows.tournament.types import RoleModels, TournamentInput

SPEC_CODES = {
    "profile.invalid",
    "profile.too_large",
    "rank.k_required",
    "rank.k_invalid",
    "rank.max_calls_required",
    "rank.max_calls_exceeded",
    "budget.planned_calls_exceeded",
    "budget.unpriced_model",
    "budget.exhausted",
    "prompts.unknown_variable",
    "judge.persistent_invalid_json",
    "run.id_invalid",
    "run.id_in_use",
}


def test_the_closed_list_is_the_spec_list() -> None:
    assert errors.CODES == SPEC_CODES


# One input per code that makes the Tournament workflow fail with it. ``run.id_in_use`` is the
# caller's refusal (Temporal's id policy), checked below through the client's start path.
WORKFLOW_TRIGGERS: dict[str, dict[str, Any]] = {
    "profile.invalid": {"custom": Profile(n=3, k=1, t=0, m=2)},
    "profile.too_large": {"custom": Profile(n=2000, k=2, t=1, m=2)},
    "rank.k_required": {"rank": RankBlock(mode="k-regular")},
    "rank.k_invalid": {"rank": RankBlock(mode="k-regular", k=4)},
    "rank.max_calls_required": {
        "custom": Profile(n=16, k=2, t=0, m=2),
        "rank": RankBlock(mode="all-pairs"),
    },
    "rank.max_calls_exceeded": {"rank": RankBlock(mode="k-regular", k=2, max_calls=3)},
    "budget.planned_calls_exceeded": {"budget": BudgetLimits(max_calls=14)},
    "budget.unpriced_model": {"model": "local:default", "budget": BudgetLimits(max_usd=1.0)},
    "budget.exhausted": {
        "on_budget_exhausted": "fail",
        "budget": BudgetLimits(max_output_tokens=50),
    },
    "prompts.unknown_variable": {
        "prompts": PromptOverrides(generate=PromptOverride(user="{task} {nonsense}"))
    },
    "judge.persistent_invalid_json": {
        "models": RoleModels(judge="sim:default,invalid_json_rate=1"),
    },
    "run.id_invalid": {"run_id": "bad id!"},  # made unique per test below
    "provider.auth": {"model": "local:default"},  # the fake answers 401 below
}


def test_every_code_has_a_trigger() -> None:
    # A code added to the list without a way to reach it fails here, not silently.
    workflow_codes = {code for code in WORKFLOW_TRIGGERS if not code.startswith("provider.")}
    assert workflow_codes | {"run.id_in_use"} == errors.CODES


@pytest.mark.parametrize("code", sorted(WORKFLOW_TRIGGERS))
async def test_every_code_reaches_the_caller_as_the_failure_type(
    client: Client, queue: str, fake: FakeProvider, code: str
) -> None:
    if code == "provider.auth":
        fake.replies = [Reply(401, {"error": "bad key"})] * 4
    fields = {"profile": "quick", "concurrency": {"generate": 1}, **WORKFLOW_TRIGGERS[code]}
    unique = uuid.uuid4().hex[:8]  # the session's server keeps every id; no clash with others
    fields["run_id"] = f"{fields['run_id']}-{unique}" if "run_id" in fields else f"code-{unique}"
    error = await failure(client, queue, **fields)
    assert error.type == code
    assert error.non_retryable
    # The code travels once, as the type; the message is one line that names what to change.
    assert code not in error.message
    assert error.message.strip() and "\n" not in error.message
    assert is_known_code(error.type)


async def test_a_used_run_id_is_refused_with_its_code(
    client: Client, queue: str, settings: Settings
) -> None:
    from client.runs import start_run
    from client.session import Session

    session = Session(client, settings.model_copy(update={"task_queue": queue}), False)
    run_id = f"dup-{uuid.uuid4().hex[:8]}"
    first = await start_run(session, TOURNAMENT, TournamentInput(task="x", profile="quick"), run_id)
    await first.result()
    with pytest.raises(ConfigError, match=r"^run\.id_in_use: run id 'dup-") as refused:
        await start_run(session, TOURNAMENT, TournamentInput(task="x"), run_id)
    assert "pick another --run-id" in str(refused.value)


def test_the_errors_page_documents_exactly_the_closed_list() -> None:
    page = (Path(__file__).parents[2] / "docs" / "errors.md").read_text()
    start = page.index("## Tournament error codes")
    paragraph = page[start : page.index("\n\n", page.index("\n\n", start) + 2)]
    documented = set(re.findall(r"`([a-z_]+\.[a-z_<>]+)`", paragraph))
    assert documented == errors.CODES | {"provider.<class>"}


def test_the_module_docstring_lists_every_code() -> None:
    table = (errors.__doc__ or "").split("```")[1]
    listed = {line.split()[0] for line in table.splitlines()[2:] if line.strip()}
    assert listed == errors.CODES | {"provider.<failure"}


def test_provider_codes_are_a_prefix_family() -> None:
    assert provider_code("rate_limited") == "provider.rate_limited"
    assert is_known_code("provider.auth")
    assert TournamentError("provider.timeout", "no answer").code == "provider.timeout"
    for bad in ("provider.", "provider.Auth", "provider.a-b", "providers.auth"):
        assert not is_known_code(bad)
    with pytest.raises(ValueError, match="lower-case word"):
        provider_code("Bad Class")


def test_an_unlisted_code_is_a_bug_not_a_refusal() -> None:
    with pytest.raises(ValueError, match=r"unknown tournament error code 'budget\.oops'"):
        TournamentError("budget.oops", "x")


def test_errors_survive_pickling() -> None:
    error = pickle.loads(pickle.dumps(TournamentError("run.id_in_use", "run r1 is live")))
    assert (error.code, error.message) == ("run.id_in_use", "run r1 is live")
