"""One closed table of error codes: every code raised anywhere is in it and on the errors page,
every code in it is raised somewhere, and every code follows the one naming rule.

Pure: the source is read (``tests.code_scan``), nothing runs; a few milliseconds a test.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from client import exit_codes
from tests.code_scan import ROOT, raised_codes
from workflows import error_codes
from workflows.campaign.errors import CODES as CAMPAIGN_CODES
from workflows.campaign.workflow import GenuineError
from workflows.error_codes import (
    DOTTED,
    EXIT_FAILED,
    EXIT_PAUSED,
    EXIT_USAGE,
    KEBAB,
    codes,
    family_of,
    lookup,
    markdown_table,
)
from workflows.errors import PonderError
from workflows.plan.errors import CODES as PLAN_CODES
from workflows.plan.reasons import GROUPS, Reason
from workflows.provider_errors import CONFIG_ERROR_TYPE, RETRY_LATER_TYPE, ProviderError

PAGE = ROOT / "docs" / "errors.md"


def _subclasses(cls: type[ProviderError]) -> list[type[ProviderError]]:
    found: list[type[ProviderError]] = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


def _closed_lists() -> set[str]:
    """Codes whose own closed list its error type enforces at run time (a document's validation
    codes, plan reasons, a provider failure class's code): raised through their tables, often
    computed, so the scan cannot see each one at its raise."""
    providers = {cls("").code for cls in _subclasses(ProviderError)}
    return (
        set(PLAN_CODES)
        | set(CAMPAIGN_CODES)
        | {r.value for r in Reason}
        | providers
        | {CONFIG_ERROR_TYPE, RETRY_LATER_TYPE}
    )


def test_every_code_raised_anywhere_is_in_the_table() -> None:
    unlisted = [(r.code, r.where) for r in raised_codes() if r.code not in codes()]
    assert not unlisted, f"add these to workflows/error_codes.py: {unlisted}"


def test_every_code_in_the_table_is_raised_somewhere() -> None:
    raised = {r.code for r in raised_codes()} | _closed_lists()
    unused = sorted(codes().keys() - raised)
    assert not unused, f"codes nothing raises (remove them, or raise them): {unused}"


def test_the_scan_sees_the_codes_of_every_kind_of_error() -> None:
    """The scan is the check's eyes: it finds a code in each place one is raised from."""
    found = {r.code for r in raised_codes()}
    assert {
        "model.key_missing",  # ConfigError("...") with an inline literal
        "worker.missing",  # a subclass that sets its code in its own __init__
        "run.dir_invalid",  # a constant imported from a contract module
        "integrity.failed",  # the campaign's GenuineError
        "record.invalid",  # a class attribute ``code = ...``
        "run.cancelled",  # a (code, message) pair a function returns
        "usage.invalid",  # what the CLI and MCP show (Failure)
        "notify.transport",  # an ApplicationError's type=
        "provider.unroutable",  # a (code, message) pair from workflow code
        "stale-gate-token",  # Reason.X handed to a coded error
    } <= found


def test_the_scan_follows_constants_forwarders_and_constructors(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "names.py").write_text('GONE = "thing.gone"\nNOT_A_CODE = "other.value"\n')
    (package / "raising.py").write_text(
        textwrap.dedent(
            """
            from pkg.names import GONE
            from workflows.plan.reasons import Reason

            class PonderError(Exception): ...
            class ConfigError(PonderError): ...
            class MessageFirst(ConfigError):
                def __init__(self, message: str) -> None:
                    super().__init__("thing.set_in_init", message)
            class Fixed(ConfigError):
                code = "thing.fixed"
            class ApplicationError(Exception): ...

            def refuse(where: str, code: str) -> ConfigError:
                return ConfigError(code, where)

            def bounce(code: str) -> ConfigError:
                return refuse("here", code)

            def parts() -> tuple[str, str]:
                return "thing.pair", "a message"

            def raising() -> None:
                ConfigError("thing.literal", "m")
                ConfigError(GONE, "m")
                MessageFirst("not a code: a message")
                refuse("there", "thing.forwarded")
                bounce(code="thing.twice_forwarded")
                ApplicationError("not a code", type="thing.typed")
                ConfigError(Reason.GATE_KILLED, "m")
                print(NOT_A_CODE, "ignored.call")
            """
        )
    )
    found = {r.code for r in raised_codes(tmp_path, ("pkg",))}
    assert found == {
        "thing.literal",
        "thing.gone",
        "thing.set_in_init",
        "thing.fixed",
        "thing.forwarded",
        "thing.twice_forwarded",
        "thing.pair",
        "thing.typed",
        "gate-killed",
    }


def test_every_code_follows_the_naming_rule() -> None:
    """``family.name``; without a dot only a plan run's own codes (its reasons, plan-invalid)."""
    plan_run = {r.value for r in Reason} | {"plan-invalid"}
    wrong = [
        code
        for code in codes()
        if not (DOTTED.fullmatch(code) or (KEBAB.fullmatch(code) and code in plan_run))
    ]
    assert not wrong, wrong
    assert family_of("model.key_missing") == "model"
    assert family_of("gate-killed") == "plan"
    for bad in ("Model.Key", "model", "model.key.missing", "gate_killed", ""):
        with pytest.raises(ValueError):
            family_of(bad)


def test_the_table_takes_the_closed_lists_whole_and_lists_each_code_once() -> None:
    assert _closed_lists() <= codes().keys()
    assert all(entry.code == code for code, entry in codes().items())
    assert all(entry.meaning and "\n" not in entry.meaning for entry in codes().values())
    families = [entry.family for entry in codes().values()]
    assert families == sorted(families)  # the page groups the codes by family


def test_exit_statuses_are_defined_once_and_given_by_kind() -> None:
    assert (exit_codes.EXIT_FAILED, exit_codes.EXIT_USAGE, exit_codes.EXIT_PAUSED) == (1, 2, 75)
    assert exit_codes.EXIT_PAUSED is EXIT_PAUSED and exit_codes.EXIT_USAGE is EXIT_USAGE
    assert {entry.exit for entry in codes().values()} == {
        None,
        EXIT_FAILED,
        EXIT_USAGE,
        EXIT_PAUSED,
    }
    expected = {"preflight": EXIT_FAILED, "failure": EXIT_FAILED, "pause": EXIT_PAUSED}
    for group, reasons in GROUPS.items():
        for reason in reasons:
            assert lookup(reason.value).exit == expected.get(group, EXIT_USAGE), reason
    assert lookup("field.missing").exit == EXIT_USAGE
    assert lookup("provider.auth").exit == EXIT_FAILED
    for text in ("| 1 |", "| 2 |", "| 75 |"):  # the page's table of exit statuses
        assert text in PAGE.read_text()


def test_an_unlisted_code_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"unknown error code .model\.nosuch.: add it"):
        lookup("model.nosuch")


def test_the_errors_page_lists_every_code_from_the_table() -> None:
    text = PAGE.read_text()
    start, end = "<!-- codes:start -->\n", "<!-- codes:end -->"
    assert start in text and end in text
    shown = text.split(start, 1)[1].split(end, 1)[0]
    assert shown == markdown_table(), "run `python -m workflows.error_codes` to rewrite the table"
    listed = re.findall(r"^\| `([^`]+)` \| (\w+) \| ([-\d]+) \|", shown, re.MULTILINE)
    assert [code for code, _, _ in listed] == list(codes())
    assert all(family == family_of(code) for code, family, _ in listed)


def test_the_campaigns_stopping_error_is_a_coded_error() -> None:
    """What stops a campaign is a ``PonderError``: the code and message it fails the run with
    are the ones it was raised with, as before."""
    error = GenuineError("integrity.failed", "cell c1: capture integrity failed (gap)")
    assert isinstance(error, PonderError)
    assert (error.code, error.message) == (
        "integrity.failed",
        "cell c1: capture integrity failed (gap)",
    )
    assert lookup(error.code).exit == EXIT_FAILED


def test_the_table_module_loads_no_document_table_until_asked() -> None:
    """The CLI's exit statuses come from the table's module: importing it stays cheap."""
    import subprocess
    import sys

    probe = (
        "import sys, client.exit_codes\n"
        "print(sorted(m for m in sys.modules if m.startswith(('workflows.plan', "
        "'workflows.campaign'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]"
    assert error_codes.codes.cache_info().maxsize is None  # built once, then reused
