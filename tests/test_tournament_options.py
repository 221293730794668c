"""The tournament options are declared once: the settings (``TournamentSettings``) reach
``ponder think``'s options, the MCP ``think``/``plan`` schemas, a saved profile's fields and
``ponder profile save``'s options, what only a run takes (``RunOptions``) the options and the
schemas (and ``profile save`` the models and limits a profile holds); so a field added to either
reaches each place it belongs, and anything one place adds beside them is named here."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from activities.config import Settings
from client.mcp.args import PlanArgs, ProfileSaveArgs, ThinkArgs
from client.option_fields import cli_defaults, cli_fields, cli_values
from client.option_table import shipped_table
from client.option_table_gen import model_specs, render_table
from client.profile_cli import profile, save
from client.profiles import (
    PROFILE_MODELS,
    ProfileStore,
    SavedProfile,
    profile_options,
    profile_run_fields,
)
from client.tournament_cli import think, think_input
from client.tournament_options import RunOptions, TournamentSettings
from workflows.budget import BudgetLimits
from workflows.tournament.types import Concurrency, RoleModels, TournamentInput

SETTINGS = TournamentSettings.model_fields
SHARED = (TournamentSettings, RunOptions)

# What each place holds beside the shared models; a new entry here is a deliberate choice.
# The task is an argument of the command; --prompts names a file on the caller's machine (the
# MCP server must not read its own files for a caller); --dry-run is the MCP plan tool.
THINK_ONLY = {"task", "profile", "prompts", "detach", "dry_run", "ledger"}
MCP_ONLY = {"task", "profile", "wait", "timeout_s", "ledger"}
# Only the tools that start a run (think, not its plan) wait and draw on a ledger; the command
# takes its ledger too, as its own option.
STARTS_ONLY = {"wait", "timeout_s", "ledger"}
# A saved profile holds the run's models and budget under its own names (profile_options).
PROFILE_ONLY = {"description", "base", "models", "limits"}
# ponder profile save: the profile's name, a file to start from, its own fields, --force.
PROFILE_SAVE_ONLY = {"name", "from_file", "description", "base", "force"}

# Every setting given: the values a person would type, and the same as a model holds them.
EVERY = TournamentSettings.model_validate(
    {
        "n": 6, "k": 3, "t": 1, "m": 2, "lambda": 0.05,
        "temperatures": {"judge": 0.2, "finalize": 0.0},
        "provider": "sim", "model": "sim:default", "rubric": "short",
        "prompt_style": "paper-programming", "schedule": "adaptive", "rounds": "pipelined",
        "concurrency": Concurrency(generate=2, judge=5, mutate=3),
        "on_budget_exhausted": "fail", "invalid_json_retries": 0, "judge_orders": "both",
        "judges": ["sim:a,accuracy=0.9", "sim:b"],
    }
)  # fmt: skip
EVERY_RUN = RunOptions(
    judge_model="sim:judge", mutator_model="sim:mutator", finalizer_model="sim:final",
    bootstrap_resamples=0, seed=7, write_interval_s=2.5,
    budget=BudgetLimits(max_calls=40, max_input_tokens=9000, max_output_tokens=5000, max_usd=2.5),
    output_token_caps={"judge": 300}, critique_chars=900, include_raw_outputs=True,
    include_prompts=True, run_id="think-x",
    length_control=True, weight_by_confidence=True,
)  # fmt: skip
EVERY_ARGV = [
    "x", "--n", "6", "--k", "3", "--t", "1", "--m", "2", "--lambda", "0.05",
    "--temperature", "judge=0.2", "--temperature", "finalize=0.0",
    "--provider", "sim", "--model", "sim:default", "--rubric", "short",
    "--prompt-style", "paper-programming", "--schedule", "adaptive", "--rounds", "pipelined",
    "--concurrency", "generate=2", "--concurrency", "judge=5", "--concurrency", "mutate=3",
    "--on-budget-exhausted", "fail", "--invalid-json-retries", "0", "--judge-orders", "both",
    "--judges", "sim:a,accuracy=0.9", "--judges", "sim:b",
    "--judge-model", "sim:judge", "--mutator-model", "sim:mutator",
    "--finalizer-model", "sim:final", "--bootstrap-resamples", "0", "--seed", "7",
    "--write-interval-s", "2.5",
    "--max-calls", "40", "--max-input-tokens", "9000", "--max-output-tokens", "5000",
    "--max-usd", "2.5", "--output-token-caps", "judge=300", "--critique-chars", "900",
    "--include-raw-outputs",
    "--include-prompts", "--run-id", "think-x", "--length-control", "--weight-by-confidence",
]  # fmt: skip


def test_every_setting_is_given_here() -> None:
    # So the tests below cover each field (and each budget limit).
    assert EVERY.model_fields_set == set(SETTINGS)
    assert EVERY_RUN.model_fields_set == set(RunOptions.model_fields)
    assert EVERY_RUN.budget.model_fields_set == set(BudgetLimits.model_fields)


def test_every_shared_field_is_a_think_option_and_every_think_option_is_placed() -> None:
    # --config is added when the group looks the command up (client.cli), not declared here.
    options = {p.name: p for p in think.params if p.name != "config"}
    fields = {f.dest: f for model in SHARED for f in cli_fields(model)}
    assert set(fields) <= set(options)
    for dest, field in fields.items():
        assert options[dest].opts == [field.flag]
        assert options[dest].help
    assert set(options) - set(fields) == THINK_ONLY
    # The budget is flattened: each limit is its own option, named as the MCP budget's keys.
    assert {f.dest for f in cli_fields(RunOptions) if f.path[0] == "budget"} == set(
        BudgetLimits.model_fields
    )
    # A limit with its own form: --max-output-tokens also takes ROLE=N caps of each call.
    caps = think.make_context("think", ["x", "--max-output-tokens", "judge=300"]).params
    assert caps["max_output_tokens"] == ("judge=300",)


def test_every_shared_field_is_an_mcp_property_and_every_setting_a_profile_field() -> None:
    shared = {info.alias or name for model in SHARED for name, info in model.model_fields.items()}
    for args in (ThinkArgs, PlanArgs):
        properties = set(args.model_json_schema(by_alias=True)["properties"])
        assert properties - shared == MCP_ONLY - (STARTS_ONLY - properties)
        assert shared <= properties
    assert set(SavedProfile.model_fields) - set(SETTINGS) == PROFILE_ONLY
    assert set(SETTINGS) <= set(SavedProfile.model_fields)


def test_the_command_line_the_mcp_arguments_and_a_profile_give_the_same_options() -> None:
    parsed = think.make_context("think", list(EVERY_ARGV)).params
    from_model = cli_values(EVERY, TournamentSettings) | cli_values(EVERY_RUN, RunOptions)
    assert set(from_model) == {f.dest for model in SHARED for f in cli_fields(model)}
    assert {dest: parsed[dest] for dest in from_model} == from_model
    # An MCP argument object holding both: the same options.
    args = ThinkArgs.model_validate(
        {"task": "x", **EVERY.model_dump(by_alias=True), **EVERY_RUN.model_dump()}
    )
    assert cli_values(args, TournamentSettings) | cli_values(args, RunOptions) == from_model
    # A saved profile: the settings, and the run options it holds under its own names.
    saved = SavedProfile.model_validate(
        EVERY.model_dump(by_alias=True)
        | {
            "models": {"judge": "sim:judge", "mutate": "sim:mutator", "finalize": "sim:final"},
            "limits": EVERY_RUN.budget.model_dump(),
        }
    )
    held = profile_options(saved)
    profile_fields = {"judge_model", "mutator_model", "finalizer_model", *BudgetLimits.model_fields}
    for dest in cli_values(EVERY, TournamentSettings).keys() | profile_fields:
        assert held[dest] == from_model[dest], dest
    # Left out, each option is what the command line leaves it (the MCP tool starts from this).
    bare = think.make_context("think", ["x"]).params
    for model in SHARED:
        assert {dest: bare[dest] for dest in cli_defaults(model)} == cli_defaults(model)


def test_a_field_without_a_description_has_no_option() -> None:
    class Undocumented(TournamentSettings):
        extra: int | None = None

    with pytest.raises(TypeError, match=r"Undocumented\.extra has no description"):
        model_specs(Undocumented)


def test_the_shipped_option_table_is_what_the_models_declare_now() -> None:
    """``--help`` reads the options from ``client/cli-options.json`` (no pydantic): run
    ``python -m client.option_table_gen`` after changing a field of the models."""
    assert shipped_table() == render_table()


def test_every_setting_and_every_run_option_a_profile_holds_is_a_profile_save_option() -> None:
    options = {p.name: p for p in save.params if p.name != "config"}
    fields = {f.dest: f for f in [*cli_fields(TournamentSettings), *profile_run_fields()]}
    assert set(options) - set(fields) == PROFILE_SAVE_ONLY
    for dest, field in fields.items():
        assert options[dest].opts == [field.flag]
        assert options[dest].help
    # What a profile holds of the run options: a model per role (the generate role's is
    # --model, a setting) and each budget limit, a plain number (no ROLE=N caps).
    assert set(PROFILE_MODELS) | {"generate"} == set(RoleModels.model_fields)
    assert {f.path[0] for f in profile_run_fields()} == {*PROFILE_MODELS.values(), "budget"}
    assert {f.dest for f in profile_run_fields() if f.path[0] == "budget"} == set(
        BudgetLimits.model_fields
    )
    assert not any(f.marker.multiple for f in profile_run_fields() if f.path[0] == "budget")
    # Left out, an option sets nothing (think's defaults apply when the profile is used).
    bare = save.make_context("save", ["p"]).params
    assert {dest: bare[dest] for dest in fields} == {
        dest: () if field.marker.multiple else False if field.is_flag else None
        for dest, field in fields.items()
    }
    # The MCP profile_save tool saves the same model, and names each of its fields.
    described = ProfileSaveArgs.model_fields["settings"].description or ""
    for name, info in SavedProfile.model_fields.items():
        assert (info.alias or name) in described, name


# The flags of every field a saved profile holds (EVERY_ARGV but for what only a run takes).
RUN_ONLY_FLAGS = {
    "--bootstrap-resamples": "0", "--seed": "7", "--critique-chars": "900",
    "--output-token-caps": "judge=300",
    "--write-interval-s": "2.5",
    "--include-raw-outputs": None, "--include-prompts": None, "--run-id": "think-x",
    "--length-control": None, "--weight-by-confidence": None,
}  # fmt: skip


def _held_argv(drop: str) -> list[str]:
    """EVERY_ARGV's profile flags, without ``drop`` (and its value): think refuses a judge
    panel and a judge model together."""
    argv, items = [], iter(EVERY_ARGV[1:])
    for flag in items:
        if flag in RUN_ONLY_FLAGS:
            if RUN_ONLY_FLAGS[flag] is not None:
                next(items)
            continue
        value = next(items)  # every flag a profile holds takes a value
        if flag != drop:
            argv += [flag, value]
    return argv


@pytest.fixture
def home(settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """``settings``, and the commands run here load the same home (no ponder.toml)."""
    monkeypatch.setenv("PONDER_HOME", str(settings.home))
    monkeypatch.delenv("PONDER_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    return settings


def _save(*argv: str) -> None:
    profile.main(["save", *argv], obj={"config": None}, standalone_mode=False)


@pytest.mark.parametrize("drop", ["--judges", "--judge-model"])
def test_profile_save_then_think_profile_is_think_with_the_same_flags(
    home: Settings, drop: str
) -> None:
    held = _held_argv(drop)
    assert len(held) > 40  # every profile field, EVERY_ARGV's values
    held[held.index("--max-calls") + 1] = "500"  # a panel judging both orders: over 40 calls
    run = ["--seed", "7", "--bootstrap-resamples", "0"]

    def think_with(*argv: str) -> TournamentInput:
        return think_input(think.make_context("think", ["x", *argv, *run]), home, "think-rt")

    direct = think_with(*held)
    _save("rt", *held)
    used = think_with("--profile", "rt")
    assert used == direct
    bare = think_with()
    assert used != bare and used.custom is not None and used.custom.n == 6


def test_profile_save_flags_merge_over_a_from_file_role_by_role(
    home: Settings, tmp_path: Path
) -> None:
    source = tmp_path / "start.yaml"
    start = {
        "n": 8,
        "rubric": "from the file",
        "temperatures": {"generate": 0.5},
        "concurrency": {"mutate": 2},
        "models": {"mutate": "sim:m"},
        "limits": {"max_usd": 1.0},
    }
    source.write_text(yaml.safe_dump(start))
    flags = ["--n", "6", "--temperature", "judge=0.1", "--concurrency", "judge=3"]
    _save("merged", "--from", str(source), *flags, "--judge-model", "sim:j", "--max-calls", "5")
    saved = ProfileStore(home.home).load("merged")
    assert (saved.n, saved.rubric) == (6, "from the file")
    assert saved.temperatures == {"generate": 0.5, "judge": 0.1}
    assert saved.concurrency == Concurrency(mutate=2, judge=3)
    assert saved.models == RoleModels(mutate="sim:m", judge="sim:j")
    assert saved.limits == BudgetLimits(max_usd=1.0, max_calls=5)


def test_a_bare_number_and_keyed_numbers_share_one_reading() -> None:
    """``--concurrency`` and ``--max-output-tokens`` both take N and KEY=N: the last bare N
    counts, a keyed one sets its key, and a word is refused naming the option and both forms."""
    from activities.errors import ConfigError
    from client.tournament_inputs import _output_tokens
    from client.tournament_values import concurrency_values

    every = concurrency_values(["2", "3", "judge=5"]).model_dump(exclude_unset=True)
    assert every == {"generate": 3, "judge": 5, "mutate": 3}
    assert concurrency_values(["judge=5"]).model_dump(exclude_unset=True) == {"judge": 5}
    assert _output_tokens(("100", "judge=50")) == (100, {"compare": 50})
    assert _output_tokens(()) == (None, {})
    refusals = {
        "--concurrency 'x' is neither a number nor PHASE=N": lambda: concurrency_values(["x"]),
        "--max-output-tokens 'x' is neither a number (the run's output-token budget) nor ROLE=N":
            lambda: _output_tokens(("x",)),
    }  # fmt: skip
    for message, read in refusals.items():
        with pytest.raises(ConfigError) as refused:
            read()
        assert (refused.value.code, refused.value.message) == ("option.invalid", message)
