"""Direct tests of the tournament's closed list of codes and its refusals of unlisted ones."""

from __future__ import annotations

import pytest

from workflows.tournament.errors import TournamentError, is_known_code, provider_code


@pytest.mark.parametrize(
    ("code", "known"),
    [
        ("profile.invalid", True),
        ("provider.auth", True),
        ("provider.rate_limited2", True),
        ("provider.", False),
        ("provider.Auth", False),
        ("provider.2x", False),
        ("provider.a b", False),
        ("xprovider.auth", False),
        ("profile.invalid2", False),
    ],
)
def test_known_codes_are_the_list_and_lower_case_provider_classes(code: str, known: bool) -> None:
    assert is_known_code(code) is known


def test_a_provider_class_becomes_its_code() -> None:
    assert provider_code("auth") == "provider.auth"
    assert provider_code("malformed_output") == "provider.malformed_output"


@pytest.mark.parametrize("failure_class", ["Auth", "", "a-b", "a.b"])
def test_a_provider_class_that_is_not_a_lower_case_word_is_refused(failure_class: str) -> None:
    with pytest.raises(ValueError) as caught:
        provider_code(failure_class)
    assert str(caught.value) == (
        f"provider failure class {failure_class!r} is not a lower-case word: "
        "use letters, digits and underscores"
    )


def test_a_tournament_error_takes_listed_codes_only() -> None:
    error = TournamentError("rank.k_invalid", "bad k")
    assert (error.code, error.message, str(error)) == (
        "rank.k_invalid",
        "bad k",
        "rank.k_invalid: bad k",
    )
    with pytest.raises(ValueError) as caught:
        TournamentError("rank.typo", "m")
    assert str(caught.value) == "unknown tournament error code 'rank.typo': add it to errors.CODES"
