"""Direct tests of the one error model and the coded errors of documents."""

from __future__ import annotations

import pickle
from typing import ClassVar

import pytest

from workflows.coded_errors import CodedError, DocumentInvalid
from workflows.errors import PonderError


class ToyError(CodedError):
    codes: ClassVar[dict[str, str]] = {"toy.bad": "bad", "toy.worse": "worse"}
    kind: ClassVar[str] = "toy"


class ToyInvalid(DocumentInvalid):
    kind: ClassVar[str] = "toy"


def test_a_ponder_error_reads_code_colon_message_and_keeps_its_parts() -> None:
    error = PonderError("model.key_missing", "no key", fix="set it")
    assert str(error) == error.line() == "model.key_missing: no key"
    assert (error.code, error.message, error.fix) == ("model.key_missing", "no key", "set it")
    assert error.args == ("model.key_missing", "no key")
    assert PonderError("a.b", "m").fix is None


def test_a_str_enum_code_is_kept_as_its_plain_value() -> None:
    from workflows.plan.reasons import Reason

    reason = next(iter(Reason))
    error = PonderError(reason, "m")
    assert type(error.code) is str
    assert error.code == reason.value


def test_a_ponder_error_pickles_with_its_code_message_fix_and_extra_state() -> None:
    error = PonderError("a.b", "m", fix="f")
    error.extra = 3  # type: ignore[attr-defined]
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is PonderError
    assert (copy.code, copy.message, copy.fix) == ("a.b", "m", "f")
    assert copy.extra == 3  # type: ignore[attr-defined]
    assert copy.args == ("a.b", "m")
    assert str(copy) == "a.b: m"


class Refused(PonderError):
    def __init__(self, what: str) -> None:
        super().__init__("x.refused", f"{what} refused")


def test_a_subclass_with_its_own_constructor_pickles_from_its_state() -> None:
    copy = pickle.loads(pickle.dumps(Refused("thing")))
    assert type(copy) is Refused
    assert copy.line() == "x.refused: thing refused"


def test_a_coded_error_takes_only_its_table_s_codes_naming_its_kind() -> None:
    error = ToyError("toy.bad", "steps.a", "no")
    assert error.line() == "steps.a: [toy.bad] no"
    assert error.as_dict() == {"code": "toy.bad", "path": "steps.a", "message": "no"}
    assert ToyError("toy.bad", "", "no").line() == "(document): [toy.bad] no"
    with pytest.raises(ValueError) as caught:
        ToyError("toy.typo", "p", "m")
    assert str(caught.value) == "unknown toy error code 'toy.typo'"


def test_the_base_coded_error_has_no_codes_and_calls_itself_a_document() -> None:
    with pytest.raises(ValueError) as caught:
        CodedError("any.code", "p", "m")
    assert str(caught.value) == "unknown document error code 'any.code'"


def test_one_error_is_the_message_and_its_code_is_the_code() -> None:
    error = ToyInvalid([ToyError("toy.worse", "a", "m1")])
    assert error.code == "toy.worse"
    assert error.message == "invalid toy: a: [toy.worse] m1"
    assert error.fix == "fix each path listed"
    assert isinstance(error, ValueError)


def test_several_errors_are_counted_and_joined_the_first_giving_the_code() -> None:
    errors = [ToyError("toy.bad", "a", "m1"), ToyError("toy.worse", "b", "m2")]
    error = ToyInvalid(errors)
    assert error.errors == errors
    assert error.code == "toy.bad"
    assert error.message == "invalid toy, 2 error(s): a: [toy.bad] m1; b: [toy.worse] m2"


def test_no_errors_is_still_an_invalid_document() -> None:
    error = DocumentInvalid([])
    assert error.code == "field.invalid"
    assert error.message == "invalid document: invalid document"
    assert error.errors == []
