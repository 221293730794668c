"""``ponder profile list | show NAME | save NAME [flags] | delete NAME``."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from activities.errors import ConfigError
from client.click_fields import settings_options
from client.command_settings import command_settings
from client.option_table import help_constant

if TYPE_CHECKING:
    from client.profiles import ProfileStore

__all__ = ["profile"]


def _store(ctx: click.Context) -> ProfileStore:
    from client.profiles import ProfileStore

    return ProfileStore(command_settings(ctx).home)


@click.group()
def profile() -> None:
    """Saved profiles: reuse a configuration with ponder think --profile NAME."""


@profile.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def list_(ctx: click.Context, as_json: bool) -> None:
    """List the built-in and saved profiles."""
    from workflows.tournament.profiles import BUILTIN_PROFILES

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
    from client.profile_names import builtin_names, not_saved, profile_file

    if name not in builtin_names() and not profile_file(command_settings(ctx).home, name).exists():
        raise not_saved(name)  # before the profile machinery loads: the refusal answers at once
    import yaml  # here, not at the top: the group's --help loads no YAML parser

    from workflows.tournament.profiles import BUILTIN_PROFILES

    if name in BUILTIN_PROFILES:
        data: dict[str, Any] = BUILTIN_PROFILES[name].model_dump(mode="json", by_alias=True)
    else:
        data = _store(ctx).load(name).model_dump(mode="json", by_alias=True, exclude_defaults=True)
    click.echo(json.dumps(data, indent=2) if as_json else yaml.safe_dump(data, sort_keys=False))


# Maps merged key by key over a --from file's (a flag sets one role, phase or limit).
_MERGED = ("temperatures", "concurrency", "models", "limits")


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
    "--base",
    type=click.Choice(help_constant("builtin_profiles")),
    default=None,
    help="Built-in base.",
)
# think's settings and the run options a profile holds, read as think reads them; left out,
# a field stays unset (think's default applies when the profile is used).
@settings_options("TournamentSettings", command_defaults=False)
@settings_options("ProfileRun", command_defaults=False)
@click.option("--force", is_flag=True, help="Replace a saved profile of the same name.")
@click.pass_context
def save(ctx: click.Context, name: str, from_file: str | None, force: bool, **o: Any) -> None:
    """Save flags (and/or a YAML file) as profile NAME; secrets are refused."""
    import yaml

    from client.profiles import PROFILE_EXISTS, SavedProfile, parse_profile, saved_fields

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
    given = {"description": o["description"], "base": o["base"], **saved_fields(o)}
    for key, value in given.items():
        if value is None:
            continue
        if key in _MERGED:
            value = {**(data.get(key) or {}), **value}
        data[key] = value
    saved: SavedProfile = parse_profile(data, f"profile {name!r}")
    if store.exists(name) and not force:
        raise ConfigError(
            PROFILE_EXISTS,
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
