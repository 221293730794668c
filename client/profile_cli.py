"""``ponder profile list | show NAME | save NAME [flags] | delete NAME``."""

from __future__ import annotations

import json
from typing import Any, get_args

import click
import yaml

from activities.config import load_settings
from activities.errors import ConfigError
from client.profiles import ProfileStore, SavedProfile, parse_profile
from client.tournament_options import model_list
from workflows.tournament.profiles import BUILTIN_PROFILES
from workflows.tournament.prompts import Style
from workflows.tournament.types import JudgeOrders, OnBudgetExhausted, Schedule

__all__ = ["profile"]


def _store(ctx: click.Context) -> ProfileStore:
    return ProfileStore(load_settings(ctx.obj["config"]).home)


@click.group()
def profile() -> None:
    """Saved profiles: reuse a configuration with ponder think --profile NAME."""


@profile.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def list_(ctx: click.Context, as_json: bool) -> None:
    """List the built-in and saved profiles."""
    store = _store(ctx)
    rows: list[dict[str, Any]] = [
        {"name": name, "kind": "built-in", "description": f"n={p.n} k={p.k} t={p.t} m={p.m}"}
        for name, p in BUILTIN_PROFILES.items()
    ]
    for name in store.names():
        try:
            description = store.load(name).description or ""
        except ConfigError as exc:  # listed, so a broken file can be found and fixed
            description = f"unusable: {exc.line()}"
        rows.append({"name": name, "kind": "saved", "description": description})
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        click.echo(f"{row['name']:<20} {row['kind']:<9} {row['description']}")


@profile.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of YAML.")
@click.pass_context
def show(ctx: click.Context, name: str, as_json: bool) -> None:
    """Print a saved (or built-in) profile."""
    if name in BUILTIN_PROFILES:
        data: dict[str, Any] = BUILTIN_PROFILES[name].model_dump(mode="json", by_alias=True)
    else:
        data = _store(ctx).load(name).model_dump(mode="json", by_alias=True, exclude_defaults=True)
    click.echo(json.dumps(data, indent=2) if as_json else yaml.safe_dump(data, sort_keys=False))


def _pairs(option: str, items: tuple[str, ...], cast: type) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep:
            raise ConfigError("option.invalid", f"{option} {item!r} must be ROLE=VALUE")
        try:
            out[key.strip()] = cast(raw.strip())
        except ValueError:
            raise ConfigError(
                "option.invalid", f"{option} {item!r}: {raw!r} is not a {cast.__name__}"
            ) from None
    return out


@profile.command()
@click.argument("name")
@click.option(
    "--from",
    "from_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Start from this YAML file (flags override its values).",
)
@click.option("--description", default=None, help="One line saying what the profile is for.")
@click.option(
    "--base", type=click.Choice(list(BUILTIN_PROFILES)), default=None, help="Built-in base."
)
@click.option("--n", type=int, default=None, help="Population size.")
@click.option("--k", type=int, default=None, help="Judge degree per generation.")
@click.option("--t", type=int, default=None, help="Number of generations.")
@click.option("--m", type=int, default=None, help="Final judging degree.")
@click.option("--lambda", "lambda_", type=float, default=None, help="Bradley-Terry L2.")
@click.option("--temperature", multiple=True, metavar="ROLE=X", help="Temperature of a role.")
@click.option("--provider", default=None, help="Provider for every role (e.g. sim).")
@click.option("--model", default=None, help="provider:model for every role.")
@click.option("--judge-model", default=None, help="provider:model of the judge.")
@click.option("--mutator-model", default=None, help="provider:model of the mutator.")
@click.option("--finalizer-model", default=None, help="provider:model of the finalizer.")
@click.option("--rubric", default=None, help="What makes an answer better.")
@click.option("--prompt-style", type=click.Choice(get_args(Style)), default=None, help="Prompts.")
@click.option(
    "--schedule", type=click.Choice(get_args(Schedule)), default=None, help="Pair schedule."
)
@click.option(
    "--judge-orders", type=click.Choice(get_args(JudgeOrders)), default=None, help="one or both."
)
@click.option("--judges", multiple=True, metavar="A,B,...", help="A judge panel (2-9 models).")
@click.option("--max-calls", type=click.IntRange(min=0), default=None, help="Budget: calls.")
@click.option("--max-usd", type=click.FloatRange(min=0), default=None, help="Budget: USD.")
@click.option(
    "--max-input-tokens", type=click.IntRange(min=0), default=None, help="Budget: input tokens."
)
@click.option(
    "--max-output-tokens", type=click.IntRange(min=0), default=None, help="Budget: output tokens."
)
@click.option("--concurrency", multiple=True, metavar="PHASE=N", help="generate|judge|mutate=N.")
@click.option(
    "--on-budget-exhausted",
    type=click.Choice(get_args(OnBudgetExhausted)),
    default=None,
    help="pause (wait for ponder extend) or fail.",
)
@click.option(
    "--invalid-json-retries",
    type=click.IntRange(min=0),
    default=None,
    help="Extra judge calls on an invalid verdict.",
)
@click.option("--force", is_flag=True, help="Replace a saved profile of the same name.")
@click.pass_context
def save(ctx: click.Context, name: str, from_file: str | None, force: bool, **o: Any) -> None:
    """Save flags (and/or a YAML file) as profile NAME; secrets are refused."""
    store = _store(ctx)
    store.check_name(name)
    data: dict[str, Any] = {}
    if from_file:
        try:
            with open(from_file) as f:
                loaded = yaml.safe_load(f)
        except OSError as exc:
            raise ConfigError(
                "file.unreadable", f"profile file {from_file} cannot be read ({exc.strerror})"
            ) from None
        except yaml.YAMLError as exc:
            raise ConfigError(
                "profile.invalid", f"profile file {from_file} is not valid YAML ({exc})"
            ) from None
        data = dict(parse_profile(loaded, from_file).model_dump(by_alias=True, exclude_unset=True))
    flat = {
        "description": o["description"],
        "base": o["base"],
        "n": o["n"],
        "k": o["k"],
        "t": o["t"],
        "m": o["m"],
        "lambda": o["lambda_"],
        "provider": o["provider"],
        "model": o["model"],
        "rubric": o["rubric"],
        "prompt_style": o["prompt_style"],
        "schedule": o["schedule"],
        "judge_orders": o["judge_orders"],
        "judges": model_list(o["judges"]) or None,
        "on_budget_exhausted": o["on_budget_exhausted"],
        "invalid_json_retries": o["invalid_json_retries"],
    }
    data.update({k: v for k, v in flat.items() if v is not None})
    roles = {
        "judge": o["judge_model"],
        "mutate": o["mutator_model"],
        "finalize": o["finalizer_model"],
    }
    if any(v is not None for v in roles.values()):
        models = dict(data.get("models") or {})
        models.update({k: v for k, v in roles.items() if v is not None})
        data["models"] = models
    if o["temperature"]:
        data["temperatures"] = {
            **(data.get("temperatures") or {}),
            **_pairs("--temperature", o["temperature"], float),
        }
    limits = {
        key: o[key]
        for key in ("max_calls", "max_usd", "max_input_tokens", "max_output_tokens")
        if o[key] is not None
    }
    if limits:
        data["limits"] = {**(data.get("limits") or {}), **limits}
    if o["concurrency"]:
        data["concurrency"] = {
            **(data.get("concurrency") or {}),
            **_pairs("--concurrency", o["concurrency"], int),
        }
    saved: SavedProfile = parse_profile(data, f"profile {name!r}")
    if store.exists(name) and not force:
        raise ConfigError(
            "profile.exists",
            f"profile {name!r} is already saved: pass --force to replace it, or pick another name",
        )
    click.echo(str(store.save(name, saved)))


@profile.command()
@click.argument("name")
@click.pass_context
def delete(ctx: click.Context, name: str) -> None:
    """Delete a saved profile."""
    _store(ctx).delete(name)
    click.echo(f"deleted profile {name}", err=True)
