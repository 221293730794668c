"""Direct tests of the error-code table's helpers: families and the docs table's rows."""

from __future__ import annotations

import pytest

from workflows import error_codes
from workflows.error_codes import ErrorCode, family_of, markdown_table


@pytest.mark.parametrize(
    ("code", "family"),
    [("model.key_missing", "model"), ("a1_b.c", "a1_b"), ("gate-killed", "plan")],
)
def test_a_code_s_family(code: str, family: str) -> None:
    assert family_of(code) == family
    assert ErrorCode(code, "m", None).family == family


@pytest.mark.parametrize("code", ["Model.x", "model", "a.b.c", "gate_killed", "-a-b", ""])
def test_a_code_of_neither_form_is_refused_by_name(code: str) -> None:
    with pytest.raises(ValueError) as caught:
        family_of(code)
    assert str(caught.value) == f"{code!r} is neither family.name nor a kebab-case plan code"


def test_the_table_escapes_pipes_and_shows_a_dash_for_no_exit_status(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    table = {
        "x.a": ErrorCode("x.a", "either | or", 2),
        "x.b": ErrorCode("x.b", "traced only", None),
    }
    monkeypatch.setattr(error_codes, "codes", lambda: table)
    assert markdown_table() == (
        "| code | family | exit | meaning |\n"
        "| --- | --- | --- | --- |\n"
        "| `x.a` | x | 2 | either \\| or |\n"
        "| `x.b` | x | - | traced only |\n"
    )


def test_an_unlisted_code_is_refused_naming_the_table() -> None:
    assert error_codes.lookup("model.key_missing").code == "model.key_missing"
    with pytest.raises(ValueError) as caught:
        error_codes.lookup("no.such_code")
    assert str(caught.value) == (
        "unknown error code 'no.such_code': add it to workflows.error_codes"
    )
