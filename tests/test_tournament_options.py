"""The tournament settings are declared once (``TournamentSettings``): ``ponder think``'s options,
the MCP ``think``/``plan`` schemas and a saved profile's fields all come from it, so a field
added there reaches all three, and anything one of them adds beside it is named here."""

from __future__ import annotations

import click
import pytest

from client.click_fields import field_option
from client.mcp.args import PlanArgs, ThinkArgs
from client.option_fields import cli_defaults, cli_values, option_dest, option_flag
from client.profiles import SavedProfile, profile_options
from client.tournament_cli import think
from client.tournament_options import TournamentSettings
from workflows.tournament.types import Concurrency

SETTINGS = TournamentSettings.model_fields

# What each place holds beside the shared settings; a new entry here is a deliberate choice.
THINK_ONLY = {
    "task", "profile", "judge_model", "mutator_model", "finalizer_model", "prompts",
    "include_prompts", "judge_orders", "judges", "bootstrap_resamples", "seed", "max_calls",
    "max_usd", "max_input_tokens", "max_output_tokens", "max_critique_chars",
    "include_raw_outputs", "run_id", "detach", "dry_run",
}  # fmt: skip
MCP_ONLY = {
    "task", "profile", "judge_model", "mutator_model", "finalizer_model", "seed", "budget",
    "run_id", "wait", "timeout_s",
}  # fmt: skip
PROFILE_ONLY = {"description", "base", "models", "judge_orders", "judges", "limits"}

# Every setting given: the values a person would type, and the same as a model holds them.
EVERY = TournamentSettings.model_validate(
    {
        "n": 6, "k": 3, "t": 1, "m": 2, "lambda": 0.05,
        "temperatures": {"judge": 0.2, "finalize": 0.0},
        "provider": "sim", "model": "sim:default", "rubric": "short",
        "prompt_style": "paper-programming", "schedule": "adaptive", "rounds": "pipelined",
        "concurrency": Concurrency(generate=2, judge=5, mutate=3),
        "on_budget_exhausted": "fail", "invalid_json_retries": 0,
    }
)  # fmt: skip


def test_every_setting_is_given_here() -> None:
    assert EVERY.model_fields_set == set(SETTINGS)  # so the tests below cover each field


def test_every_setting_is_a_think_option_and_every_think_option_is_placed() -> None:
    # --config is added when the group looks the command up (client.cli), not declared here.
    options = {p.name: p for p in think.params if p.name != "config"}
    settings = {option_dest(name, info): (name, info) for name, info in SETTINGS.items()}
    assert set(settings) <= set(options)
    for dest, (name, info) in settings.items():
        assert options[dest].opts == [option_flag(name, info)]
        assert options[dest].help
    assert set(options) - set(settings) == THINK_ONLY


def test_every_setting_is_an_mcp_property_and_a_profile_field() -> None:
    shared = {info.alias or name for name, info in SETTINGS.items()}
    for args in (ThinkArgs, PlanArgs):
        properties = set(args.model_json_schema(by_alias=True)["properties"])
        assert properties - shared == MCP_ONLY - ({"wait", "timeout_s"} - properties)
        assert shared <= properties
    assert set(SavedProfile.model_fields) - set(SETTINGS) == PROFILE_ONLY
    assert set(SETTINGS) <= set(SavedProfile.model_fields)


def test_the_command_line_the_mcp_arguments_and_a_profile_give_the_same_options() -> None:
    argv = [
        "x", "--n", "6", "--k", "3", "--t", "1", "--m", "2", "--lambda", "0.05",
        "--temperature", "judge=0.2", "--temperature", "finalize=0.0",
        "--provider", "sim", "--model", "sim:default", "--rubric", "short",
        "--prompt-style", "paper-programming", "--schedule", "adaptive", "--rounds", "pipelined",
        "--concurrency", "generate=2", "--concurrency", "judge=5", "--concurrency", "mutate=3",
        "--on-budget-exhausted", "fail", "--invalid-json-retries", "0",
    ]  # fmt: skip
    parsed = think.make_context("think", argv).params
    from_model = cli_values(EVERY, TournamentSettings)
    assert set(from_model) == {option_dest(n, i) for n, i in SETTINGS.items()}
    assert {dest: parsed[dest] for dest in from_model} == from_model
    saved = profile_options(SavedProfile.model_validate(EVERY.model_dump(by_alias=True)))
    assert {dest: saved[dest] for dest in from_model} == from_model
    # Left out, each option is what the command line leaves it (the MCP tool starts from this).
    bare = think.make_context("think", ["x"]).params
    assert {dest: bare[dest] for dest in cli_defaults(TournamentSettings)} == cli_defaults(
        TournamentSettings
    )


def test_a_field_without_a_description_has_no_option() -> None:
    class Undocumented(TournamentSettings):
        extra: int | None = None

    with pytest.raises(TypeError, match=r"Undocumented\.extra has no description"):
        field_option(Undocumented, "extra")(click.command()(lambda **_: None))
