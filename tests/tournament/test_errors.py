"""The one tournament error type and its closed list of codes."""

from __future__ import annotations

import pickle

import pytest

from workflows.tournament import errors
from workflows.tournament.errors import TournamentError, is_known_code, provider_code

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


@pytest.mark.parametrize("code", sorted(SPEC_CODES))
def test_every_listed_code_makes_an_error(code: str) -> None:
    error = TournamentError(code, "field x breaks rule y: do z")
    assert error.code == code
    assert error.message == "field x breaks rule y: do z"
    assert str(error) == f"{code}: field x breaks rule y: do z"


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
