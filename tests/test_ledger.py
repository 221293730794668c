"""Shared ledgers' pure rules: holds, reports, expiry, periods, limits, and the draw token that
input must carry (fast: no server)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from activities.config import load_settings
from activities.errors import ConfigError
from activities.ledger import draw_token, token_path
from activities.ledger_config import LedgerConfig
from client.campaign_cli import run as campaign_run
from client.ledger_cli import ledger
from client.ledgers import COMMAND_LEDGER, attach_ledger
from client.plan_run_cli import run as plan_run
from client.tournament_cli import think
from client.tournament_services import mutate, rank
from tests.test_readme import fenced, section
from workflows.call_options import CallOptions
from workflows.inputs import InputInvalid, decode_input
from workflows.ledger.arithmetic import CALLS_KEPT, CLOSED_KEYS_KEPT, Book
from workflows.ledger.types import (
    LEDGER_TOKEN_REQUIRED,
    LedgerDraw,
    LedgerLimits,
    SettleInput,
    call_digest,
    spent_message,
)
from workflows.tournament.types import TournamentInput

T0 = 1_800_000_000.0  # a period boundary for period_s 3600 (and 86400)
TOKEN = "0123456789abcdef0123456789abcdef"


def book(**limits: object) -> Book:
    return Book(limits=LedgerLimits.model_validate(limits), ttl_s=60.0, window=0)


def report(key: str, used: int, **more: object) -> SettleInput:
    return SettleInput.model_validate({"key": key, "used": used, **more})


def test_a_draw_reserves_its_block_and_the_last_one_gets_what_is_left() -> None:
    b = book(calls=10)
    assert b.draw("a", "run-1", 8, T0).granted == 8
    assert b.spent.calls == 8
    second = b.draw("b", "run-2", 8, T0)
    assert (second.granted, second.blocking) == (2, None)
    refused = b.draw("c", "run-3", 8, T0)
    assert (refused.granted, refused.blocking) == (0, "calls")
    assert b.waiters == ["run-3"]
    assert b.held_calls() == 10


def test_a_draw_is_idempotent_by_key_open_or_closed() -> None:
    b = book(calls=10)
    assert b.draw("a", "run-1", 4, T0).granted == 4
    assert b.draw("a", "run-1", 4, T0).granted == 4
    assert b.spent.calls == 4
    b.settle(report("a", 1, final=True), T0)
    assert b.draw("a", "run-1", 4, T0).granted == 4  # the same answer, nothing reserved again
    assert b.spent.calls == 1


def test_a_final_report_hands_back_what_the_hold_did_not_use() -> None:
    b = book(calls=10)
    b.draw("a", "run-1", 8, T0)
    b.settle(report("a", 3, tokens=30, usd=0.25, final=True), T0)
    assert (b.spent.calls, b.spent.tokens, b.spent.usd) == (3, 30, 0.25)
    assert b.holds == {}
    assert b.closed["a"].used == 3


def test_reports_carry_totals_so_a_repeated_or_overtaken_one_changes_nothing() -> None:
    b = book(calls=10)
    b.draw("a", "run-1", 8, T0)
    b.settle(report("a", 4, tokens=10, usd=0.5), T0)
    b.settle(report("a", 4, tokens=10, usd=0.5), T0)
    b.settle(report("a", 2, tokens=6, usd=0.25), T0)  # an older report, arriving late
    assert (b.holds["a"].used, b.spent.tokens, b.spent.usd) == (4, 10, 0.5)
    b.settle(report("a", 5, tokens=15, usd=0.75), T0)
    assert (b.holds["a"].used, b.spent.tokens, b.spent.usd) == (5, 15, 0.75)
    b.settle(report("a", 99, tokens=15), T0)  # never more than the hold granted
    assert b.holds["a"].used == 8 and b.spent.calls == 8
    assert (b.draws, b.reports) == (1, 5)


def test_a_hold_nobody_reports_on_expires_and_hands_back_the_rest() -> None:
    b = book(calls=10)
    b.draw("a", "run-1", 8, T0)
    b.settle(report("a", 2), T0 + 30)  # a report keeps it alive for ttl_s more
    assert b.advance(T0 + 80) == []
    assert b.next_deadline() == T0 + 90
    assert b.advance(T0 + 90) == ["a"]
    assert b.spent.calls == 2
    assert b.draw("b", "run-2", 8, T0 + 90).granted == 8


def test_a_late_report_of_an_expired_hold_is_still_counted() -> None:
    b = book(calls=10)
    b.draw("a", "run-1", 8, T0)
    b.advance(T0 + 60)
    assert b.spent.calls == 0
    b.settle(report("a", 5, tokens=7, usd=0.5), T0 + 61)
    assert (b.spent.calls, b.spent.tokens, b.spent.usd) == (5, 7, 0.5)
    b.settle(report("a", 5, tokens=7, usd=0.5), T0 + 62)  # applied once
    assert (b.spent.calls, b.spent.tokens) == (5, 7)
    b.settle(report("a", 6, tokens=9), T0 + 62)
    assert (b.spent.calls, b.spent.tokens) == (6, 9)
    b.settle(report("unknown", 5, tokens=7), T0 + 62)
    assert b.spent.tokens == 9


def test_tokens_and_usd_stop_new_draws_once_reached() -> None:
    b = book(tokens=100, usd=1.0)
    b.draw("a", "run-1", 2, T0)
    b.settle(report("a", 2, tokens=100), T0)
    assert b.blocking() == "tokens"
    assert b.draw("b", "run-1", 2, T0).blocking == "tokens"
    assert b.extend(None, 1000, None) == []
    b.settle(report("a", 2, tokens=100, usd=1.0), T0)
    assert b.draw("c", "run-1", 2, T0).blocking == "usd"


def test_a_new_period_starts_with_only_what_open_holds_still_reserve() -> None:
    b = book(calls=10, period_s=3600)
    b.advance(T0)
    assert b.period_start() == T0
    b.draw("a", "run-1", 8, T0)
    b.settle(report("a", 5, tokens=9), T0 + 10)
    b.draw("b", "run-2", 8, T0 + 10)  # 2 left
    assert b.draw("c", "run-3", 1, T0 + 20).granted == 0
    assert b.next_deadline() == pytest.approx(T0 + 70)  # the holds' expiry comes first
    b.settle(report("a", 5), T0 + 3599)
    b.settle(report("b", 0), T0 + 3599)
    assert b.next_deadline() == T0 + 3600  # the next period, while run-3 waits
    b.advance(T0 + 3600)
    assert (b.spent.calls, b.spent.tokens) == (3 + 2, 0)  # a's 3 and b's 2 still reserved
    assert b.take_waiters() == ["run-3"]
    assert b.take_waiters() == []
    b.settle(report("a", 6, tokens=9), T0 + 3601)  # one more call; the tokens were last period's
    assert (b.spent.calls, b.spent.tokens) == (5, 0)
    b.settle(report("a", 6, tokens=12, final=True), T0 + 3601)
    assert (b.spent.calls, b.spent.tokens) == (2 + 1, 3)  # a handed back its 2 unused


def test_no_period_never_rolls() -> None:
    b = book(calls=1)
    b.draw("a", "run-1", 1, T0)
    b.advance(T0 + 10**7)
    assert b.window == 0 and b.period_start() is None


def test_waiters_are_told_only_once_there_is_room() -> None:
    b = book(calls=2)
    b.draw("a", "run-1", 2, T0)
    b.draw("b", "run-2", 1, T0)
    b.draw("c", "run-2", 1, T0)
    assert b.waiters == ["run-2"]
    assert b.take_waiters() == []
    b.settle(report("a", 1, final=True), T0)
    assert b.take_waiters() == ["run-2"]


def test_extend_refuses_below_what_is_spent_and_keeps_unnamed_limits() -> None:
    b = book(calls=10, usd=2.0, tokens=50)
    b.draw("a", "run-1", 8, T0)
    b.settle(report("a", 2, tokens=40, usd=1.5), T0)
    problems = b.extend(5, 30, 1.0)
    assert len(problems) == 3
    assert "calls=5" in problems[0] and "at least 8" in problems[0]
    assert "tokens=30" in problems[1] and "at least 40" in problems[1]
    assert "usd=1" in problems[2] and "at least 1.5" in problems[2]
    assert (b.limits.calls, b.limits.tokens, b.limits.usd) == (10, 50, 2.0)  # nothing applied
    assert b.extend(8, 40, 1.5) == []  # exactly what is spent: allowed
    assert (b.limits.calls, b.limits.tokens, b.limits.usd) == (8, 40, 1.5)
    assert b.extend(20, None, None) == []
    assert (b.limits.calls, b.limits.tokens, b.limits.usd) == (20, 40, 1.5)
    assert b.extend(None, None, 3.0) == []
    assert (b.limits.calls, b.limits.usd) == (20, 3.0)


def test_closed_keys_are_bounded() -> None:
    b = book()
    for i in range(CLOSED_KEYS_KEPT + 5):
        b.draw(f"k{i}", "run", 1, T0)
        b.settle(report(f"k{i}", 1, final=True), T0)
    assert len(b.closed) == CLOSED_KEYS_KEPT
    assert "k0" not in b.closed and f"k{CLOSED_KEYS_KEPT + 4}" in b.closed


def test_the_book_survives_a_continue_as_new_dump() -> None:
    b = book(calls=10, period_s=3600)
    b.draw("a", "run-1", 4, T0)
    b.draw("b", "run-2", 9, T0)
    again = Book.model_validate(b.model_dump(mode="json"))
    assert again == b


# -- input ---------------------------------------------------------------------------------


def test_input_naming_a_ledger_without_its_token_is_refused_at_decode() -> None:
    with pytest.raises(InputInvalid) as caught:
        decode_input(CallOptions, {"ledger": {"name": "team"}})
    assert caught.value.code == LEDGER_TOKEN_REQUIRED
    assert "calls.ledger.token" in caught.value.message or "draw token" in caught.value.message
    with pytest.raises(InputInvalid) as caught:
        decode_input(CallOptions, {"ledger": {"name": "team", "token": "XYZ"}})
    assert caught.value.code == LEDGER_TOKEN_REQUIRED
    with pytest.raises(InputInvalid) as caught:
        decode_input(CallOptions, {"ledger": {"name": "Team!", "token": TOKEN}})
    assert "not a ledger name" in caught.value.message
    ok = decode_input(CallOptions, {"ledger": {"name": "team", "token": TOKEN}})
    assert ok.ledger is not None and ok.ledger.name == "team"


def test_the_spent_message_names_the_ledger_the_limit_and_the_fix() -> None:
    message = spent_message("team", "usd")
    assert "'team'" in message and "usd" in message and "ponder ledger extend team" in message


# -- configuration -------------------------------------------------------------------------


def test_ledgers_table_is_read_with_named_periods(tmp_path) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / "ponder.toml"
    config.write_text('[ledgers.team]\ncalls = 100\nusd = 2.5\nperiod = "day"\nblock = 4\n')
    settings = load_settings(config, home=str(tmp_path))
    team = settings.ledgers["team"]
    assert team.block == 4
    assert team.limits() == LedgerLimits(calls=100, usd=2.5, period_s=86_400)
    assert LedgerConfig(period=3600).limits().period_s == 3600


@pytest.mark.parametrize(
    ("table", "fragment"),
    [
        ('[ledgers.team]\nperiod = "fortnight"\n', "period"),
        ("[ledgers.team]\nperiod = 5\n", "period"),
        ("[ledgers.team]\nblock = 0\n", "block"),
        ("[ledgers.team]\ncolour = 1\n", "colour"),
        ("[ledgers.Team]\ncalls = 1\n", "ledger name"),
    ],
)
def test_a_bad_ledgers_table_is_refused_naming_the_entry(tmp_path, table, fragment) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / "ponder.toml"
    config.write_text(table)
    with pytest.raises(ConfigError) as caught:
        load_settings(config, home=str(tmp_path))
    assert caught.value.code == "config.invalid"
    assert "ledgers." in caught.value.message and fragment in caught.value.message


def test_the_draw_token_is_made_once_in_a_private_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / "ponder.toml"
    config.write_text("[ledgers.team]\ncalls = 1\n")
    settings = load_settings(config, home=str(tmp_path))
    token = draw_token(settings, "team")
    path = token_path(settings, "team")
    assert path == tmp_path / "ledgers" / "team.token"
    assert len(token) == 32 and int(token, 16) >= 0
    assert path.stat().st_mode & 0o777 == 0o600
    assert draw_token(settings, "team") == token


def test_the_documented_ledger_loads(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (block,) = fenced(section("## Shared ledgers", page="docs/operating.md"), "toml")
    config = tmp_path / "ponder.toml"
    config.write_text(block)
    team = load_settings(config, home=str(tmp_path)).ledgers["team"]
    assert team.limits() == LedgerLimits(calls=5000, tokens=20_000_000, usd=50.0, period_s=86_400)
    assert (team.block, team.hold_ttl_s, team.token_file) == (8, 120.0, None)


# -- the client ----------------------------------------------------------------------------


def test_the_client_puts_the_ledger_and_its_token_in_the_input(tmp_path) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / "ponder.toml"
    config.write_text("[ledgers.team]\ncalls = 1\n")
    settings = load_settings(config, home=str(tmp_path))
    token = draw_token(settings, "team")
    assert attach_ledger({"task": "x"}, settings) == {"task": "x"}  # no --ledger: untouched
    document = attach_ledger({"task": "x", "calls": {"heartbeat_timeout_s": 9}}, settings, "team")
    assert document["calls"] == {
        "heartbeat_timeout_s": 9,
        "ledger": {"name": "team", "token": token},
    }
    model = attach_ledger(TournamentInput(task="x"), settings, "team")
    assert model.calls.ledger == LedgerDraw(name="team", token=token)
    reset = COMMAND_LEDGER.set("team")  # what --ledger team sets for the command
    try:
        assert attach_ledger(TournamentInput(task="x"), settings).calls.ledger is not None
    finally:
        COMMAND_LEDGER.reset(reset)
    with pytest.raises(ConfigError) as unknown:
        attach_ledger({"task": "x"}, settings, "other")
    assert unknown.value.code == "ledger.unknown" and "[ledgers.other]" in unknown.value.message
    token_path(settings, "team").write_text("not a token\n")
    with pytest.raises(ConfigError) as bad:
        attach_ledger({"task": "x"}, settings, "team")
    assert bad.value.code == LEDGER_TOKEN_REQUIRED


def test_the_run_commands_take_ledger() -> None:
    runner = CliRunner()
    for command in (think, rank, mutate, plan_run, campaign_run):
        result = runner.invoke(command, ["--help"])
        assert result.exit_code == 0 and "--ledger NAME" in result.output, command.name
    result = runner.invoke(ledger, ["extend", "--help"])
    assert result.exit_code == 0 and "--calls" in result.output


def test_deadlines_are_the_holds_expiry_and_the_next_period_only_while_runs_wait() -> None:
    assert book(calls=1).next_deadline() is None  # nothing held, nobody waits
    periodic = book(calls=1, period_s=3600)
    periodic.advance(T0)
    assert periodic.next_deadline() is None  # a period ends, but nobody waits for it
    b = book(calls=1)
    b.draw("a", "run-1", 1, T0)
    assert b.advance(T0 + 59) == []  # a fresh hold lives ttl_s
    assert b.draw("b", "run-2", 1, T0).granted == 0
    assert b.next_deadline() == T0 + 60  # no period: only the hold's expiry
    assert b.draws == 2


def test_a_late_report_counts_only_what_the_expired_holds_reports_did_not() -> None:
    b = book(calls=10)
    b.draw("a", "run-1", 4, T0)
    b.settle(report("a", 2, tokens=7, usd=0.5), T0)
    b.advance(T0 + 60)  # expired: its 2 unreported calls handed back
    assert (b.spent.calls, b.spent.tokens, b.spent.usd) == (2, 7, 0.5)
    b.settle(report("a", 3, tokens=9, usd=0.75), T0 + 61)
    assert (b.spent.calls, b.spent.tokens, b.spent.usd) == (3, 9, 0.75)


# -- a call attempted on two workers --------------------------------------------------------

X, Y, Z = (call_digest(f"run-1/phase/{i}/0") for i in range(3))


@pytest.mark.parametrize("first", ["a", "b"])
def test_a_call_two_holds_name_is_charged_once_whichever_reports_first(first: str) -> None:
    b = book(calls=10)
    b.draw("a", "w1", 4, T0)  # the worker killed with call X in flight
    b.draw("b", "w2", 4, T0)  # the worker its retry ran on
    second = "b" if first == "a" else "a"
    b.settle(report(first, 2, calls=[X, Y]), T0)
    b.settle(report(second, 2, calls=[X, Z]), T0 + 1)
    b.settle(report(second, 2, calls=[X, Z]), T0 + 1)  # a report repeated changes nothing
    b.settle(report(first, 2, final=True), T0 + 2)
    b.settle(report(second, 2, final=True), T0 + 2)
    assert b.spent.calls == 3 and b.holds == {}  # X, Y and Z, each once


def test_a_retry_after_its_first_hold_expired_is_charged_once_within_the_window() -> None:
    b = book(calls=10)
    b.draw("a", "w1", 4, T0)
    b.settle(report("a", 1, calls=[X]), T0)
    b.advance(T0 + 60)  # the killed worker's hold expires: X stays charged to it
    assert b.spent.calls == 1
    b.draw("b", "w2", 4, T0 + 70)
    b.settle(report("b", 1, calls=[X], final=True), T0 + 71)
    assert b.spent.calls == 1
    # Remembered ttl_s after its hold closed, then forgotten: a retry that late is charged.
    b.advance(T0 + 121)
    b.draw("c", "w3", 4, T0 + 121)
    b.settle(report("c", 1, calls=[X], final=True), T0 + 121)
    assert b.spent.calls == 2


def test_a_late_report_naming_another_holds_call_charges_nothing_more() -> None:
    b = book(calls=10)
    b.draw("a", "w1", 4, T0)
    b.draw("b", "w2", 4, T0)
    b.settle(report("b", 1, calls=[X], final=True), T0 + 30)
    b.advance(T0 + 60)  # a expired unreported: all its calls handed back
    assert b.spent.calls == 1
    b.settle(report("a", 2, calls=[X, Y]), T0 + 61)  # late: X was b's, Y is new
    assert b.spent.calls == 2


def test_reports_without_call_names_count_as_before() -> None:
    b = book(calls=10)
    b.draw("a", "w1", 4, T0)
    b.draw("b", "w2", 4, T0)
    b.settle(report("a", 1, final=True), T0)
    b.settle(report("b", 1, final=True), T0)
    assert b.spent.calls == 2


def test_the_calls_named_survive_a_continue_as_new_dump() -> None:
    b = book(calls=10)
    b.draw("a", "w1", 4, T0)
    b.settle(report("a", 1, calls=[X]), T0)
    again = Book.model_validate(b.model_dump(mode="json"))
    again.draw("b", "w2", 4, T0)
    again.settle(report("b", 1, calls=[X], final=True), T0)
    again.settle(report("a", 1, final=True), T0)
    assert again.spent.calls == 1


def test_the_calls_remembered_are_bounded() -> None:
    b = book()
    for i in range(CALLS_KEPT // 1000 + 2):
        b.draw(f"k{i}", "w1", 1000, T0)
        names = [call_digest(f"r/{i}/{n}") for n in range(1000)]
        b.settle(report(f"k{i}", 1000, calls=names, final=True), T0)
    b.advance(T0)
    assert CALLS_KEPT - 1000 < sum(len(c.calls_named) for c in b.closed.values()) <= CALLS_KEPT
    assert b.closed["k0"].calls_named == []  # the oldest forgotten first


def test_the_documented_window_of_remembered_calls_is_the_books() -> None:
    text = " ".join(section("## Shared ledgers", page="docs/operating.md").split())
    assert f"(the newest {CALLS_KEPT:,})" in text
    assert "for `hold_ttl_s` after a block closes" in text


def test_a_block_names_each_call_until_a_report_of_it_was_taken() -> None:
    from activities.ledger import _Block

    block = _Block(ledger="team", holder="run-1", key="run-1/w/1", granted=4)
    for i in range(2):
        block.take(f"run-1/phase/{i}/0")
    first = block.report(final=False)
    assert first.settle.calls == [X, Y] and first.settle.used == 2
    block.take("run-1/phase/2/0")
    lost = block.report(final=False)  # never taken by the ledger: named again next time
    assert lost.settle.calls == [X, Y, Z]
    first.taken()
    assert block.unnamed
    again = block.report(final=True)
    assert again.settle.calls == [Z] and again.settle.used == 3
    again.taken()
    lost.taken()  # an older report taken late names no call anew
    assert not block.unnamed and block.report(final=True).settle.calls == []
