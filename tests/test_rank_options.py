"""``ponder rank`` and ``ponder mutate`` take their options from one declaration each
(``RankOptions``, ``MutateOptions``), as the MCP ``rank`` and ``mutate`` tools do: the same
options, under the same names, with the same defaults and bounds on both surfaces."""

from __future__ import annotations

from typing import Any

import click
import pytest
from pydantic import BaseModel

from activities.config import Settings
from client.mcp.args import MutateArgs, RankArgs
from client.option_fields import cli_fields
from client.tournament_options import MutateOptions, RankOptions
from client.tournament_services import mutate, rank
from client.tournament_values import model_list

# What each surface takes beside the shared options: the command reads files and @files, the
# tool takes the texts themselves; only the tool waits. Both take a ledger, each its own way
# (a --ledger option, the tools' LedgerArgs). A new entry is a deliberate choice.
SURFACES = [
    pytest.param(
        rank, RankArgs, RankOptions, {"files", "task", "ledger"},
        {"task", "candidates", "wait", "timeout_s", "ledger"}, id="rank",
    ),
    pytest.param(
        mutate, MutateArgs, MutateOptions, {"file", "task", "critique", "ledger"},
        {"task", "candidate", "critique", "wait", "timeout_s", "ledger"}, id="mutate",
    ),
]  # fmt: skip


# The least each command takes: everything else left out.
LEAST = {
    "rank": ["a.md", "b.md", "--task", "t"],
    "mutate": ["a.md", "--task", "t", "--critique", "c"],
}


def _options(command: click.Command) -> dict[str, click.Parameter]:
    # --config is added when the group looks the command up (client.cli), not declared here.
    return {p.name: p for p in command.params if p.name and p.name != "config"}


@pytest.mark.parametrize(("command", "args", "declared", "command_only", "tool_only"), SURFACES)
def test_the_command_and_the_tool_take_the_same_options_by_the_same_names(
    command: click.Command,
    args: type[BaseModel],
    declared: type[BaseModel],
    command_only: set[str],
    tool_only: set[str],
) -> None:
    options = _options(command)
    properties = args.model_json_schema(by_alias=True)["properties"]
    shared = set(declared.model_fields)
    assert set(options) - command_only == shared
    assert set(properties) - tool_only == shared
    # One name: the option is the field, hyphenated, and the tool's property is the field.
    for field in cli_fields(declared):
        (name,) = field.path
        assert options[name].opts == ["--" + name.replace("_", "-")]
        assert options[name].help == " ".join(
            part
            for part in (
                field.info.description,
                field.marker.form,
                "Repeatable." if field.marker.multiple else None,
            )
            if part
        )
        assert properties[name]["description"] == field.info.description


def _typed(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema of an ``X | None`` property's X."""
    return next((s for s in schema.get("anyOf", []) if s.get("type") != "null"), schema)


@pytest.mark.parametrize(("command", "args", "declared", "command_only", "tool_only"), SURFACES)
def test_the_command_and_the_tool_have_the_same_defaults_and_bounds(
    command: click.Command,
    args: type[BaseModel],
    declared: type[BaseModel],
    command_only: set[str],
    tool_only: set[str],
) -> None:
    options = _options(command)
    assert command.name
    left_out = command.make_context(command.name, list(LEAST[command.name])).params
    properties = args.model_json_schema()["properties"]
    for field in cli_fields(declared):
        (name,) = field.path
        option, tool_default = options[name], args.model_fields[name].get_default()
        if field.marker.multiple:
            assert (left_out[name], tool_default) == ((), None), name
            continue
        # A value the tool leaves unset is one the run fills in: the command shows it.
        expected = field.command_default if tool_default is None else tool_default
        assert left_out[name] == expected, name
        schema = _typed(properties[name])
        if isinstance(option.type, click.Choice):
            assert list(option.type.choices) == schema["enum"], name
        if schema.get("type") == "integer" and {"minimum", "maximum"} & set(schema):
            assert isinstance(option.type, click.IntRange), f"{name}: only the tool bounds it"
            bounds = (option.type.min, option.type.max)
            assert bounds == (schema.get("minimum"), schema.get("maximum")), name


RANK_ARGV = [
    "a.md", "b.md", "--task", "t", "--rubric", "short", "--model", "sim:j",
    "--judges", "sim:a,accuracy=0.9", "--judges", "sim:b", "--judge-orders", "both",
    "--length-control", "--weight-by-confidence", "--rank-mode", "k-regular", "--rank-k", "3",
    "--rank-seed", "7", "--rank-max-calls", "40", "--max-calls", "50", "--seed", "9",
    "--run-id", "rank-x",
]  # fmt: skip


def test_every_rank_option_given_reads_as_the_tool_reads_it() -> None:
    params = rank.make_context("rank", list(RANK_ARGV)).params
    given = {name: params[name] for name in RankOptions.model_fields}
    given["judges"] = model_list(given["judges"])
    assert given.keys() == RankOptions.model_fields.keys()
    tool = RankArgs.model_validate(
        {**given, "task": "t", "candidates": [{"id": "a", "text": "x"}, {"id": "b", "text": "y"}]}
    )
    assert tool.model_dump(include=set(RankOptions.model_fields)) == given
    # Every option was given a value other than its default (so each is covered above).
    assert all(given[name] != info.get_default() for name, info in RankOptions.model_fields.items())


def test_mutate_takes_a_run_id_as_the_tool_does() -> None:
    argv = ["a.md", "--task", "t", "--critique", "c", "--run-id", "mutate-x", "--seed", "4"]
    params = mutate.make_context("mutate", argv).params
    assert (params["run_id"], params["seed"], params["prompt_style"]) == ("mutate-x", 4, "general")
    tool = MutateArgs(task="t", candidate="x", critique="c", run_id="mutate-x", seed=4)
    assert tool.model_dump(include={"run_id", "seed", "prompt_style"}) == {
        name: params[name] for name in ("run_id", "seed", "prompt_style")
    }


@pytest.mark.parametrize(
    ("argv", "field"),
    [(["--rank-seed", "-1"], "--rank-seed"), (["--max-calls", "10000001"], "--max-calls")],
)
def test_the_command_refuses_what_the_tool_refuses(argv: list[str], field: str) -> None:
    with pytest.raises(click.BadParameter) as refused:
        rank.make_context("rank", ["a.md", "b.md", "--task", "t", *argv])
    assert refused.value.param is not None and field in refused.value.param.opts
    with pytest.raises(ValueError):
        RankArgs.model_validate(
            {
                "task": "t",
                "candidates": [{"id": "a", "text": "x"}, {"id": "b", "text": "y"}],
                field.removeprefix("--").replace("-", "_"): int(argv[1]),
            }
        )


def test_think_takes_the_critique_cap_by_the_inputs_name_and_its_earlier_one() -> None:
    """One name across the command line, the MCP arguments and the workflow input
    (``critique_chars``); the earlier ``--max-critique-chars`` / ``max_critique_chars`` is still
    taken, hidden from ``--help``, so scripts and callers written for it go on working."""
    from client.mcp.args import ThinkArgs
    from client.tournament_cli import think
    from workflows.tournament.types import TournamentInput

    assert "critique_chars" in TournamentInput.model_fields
    for flag in ("--critique-chars", "--max-critique-chars"):
        context = think.make_context("think", ["x", flag, "900"])
        assert context.params["critique_chars"] == 900, flag
    left_out = think.make_context("think", ["x"]).params["critique_chars"]
    assert left_out == TournamentInput.model_fields["critique_chars"].default
    shown = [p for p in think.params if isinstance(p, click.Option) and not p.hidden]
    assert [p.opts for p in shown if p.name == "critique_chars"] == [["--critique-chars"]]
    for key in ("critique_chars", "max_critique_chars"):
        assert ThinkArgs.model_validate({"task": "t", key: 900}).critique_chars == 900, key
    properties = ThinkArgs.model_json_schema(by_alias=True)["properties"]
    assert "critique_chars" in properties and "max_critique_chars" not in properties


def test_per_call_output_caps_have_one_name_and_the_earlier_form_still_works(
    settings: Settings,
) -> None:
    """``output_token_caps`` on the command line, the MCP arguments and the workflow input; the
    earlier ``--max-output-tokens ROLE=N`` still caps a role, beside a bare N (the budget)."""
    import typing

    from client.mcp.args import ThinkArgs
    from client.tournament_cli import think
    from client.tournament_inputs import build_input
    from client.tournament_values import TOKEN_ROLES, TokenRole

    assert set(typing.get_args(TokenRole)) == set(TOKEN_ROLES)
    dry = ["x", "--provider", "sim", "--dry-run"]

    def built(*argv: str) -> Any:
        return build_input(settings, **think.make_context("think", [*dry, *argv]).params)

    new = built("--output-token-caps", "judge=300", "--output-token-caps", "finalize=99")
    old = built("--max-output-tokens", "judge=300", "--max-output-tokens", "finalize=99")
    assert new.output_token_caps == old.output_token_caps == {"compare": 300, "finalize": 99}
    both = built("--max-output-tokens", "5000", "--output-token-caps", "mutate=7")
    assert both.budget.max_output_tokens == 5000 and both.output_token_caps == {"mutate": 7}
    tool = ThinkArgs.model_validate({"task": "t", "output_token_caps": {"judge": 300}})
    assert tool.output_token_caps == {"judge": 300}
    with pytest.raises(ValueError, match="output_token_caps"):
        ThinkArgs.model_validate({"task": "t", "output_token_caps": {"critic": 300}})
