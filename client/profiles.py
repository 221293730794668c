"""Saved profiles: a named set of ``ponder think`` settings under ``$PONDER_HOME/profiles/``.

A saved profile is YAML (``NAME.yaml``) holding what a person would otherwise retype: the
built-in base and its ``n, k, t, m, lambda`` and temperatures, a model per role, the prompt
style, the schedule, budget limits and concurrency. ``--profile NAME`` takes a built-in name or
a saved one; flags given on the command line beat the saved values.

Secrets never live in a profile: a secret-shaped key (``api_key``, ``token``, ``password``,
``authorization``...) at any depth is refused when saving and again when loading, so a
hand-edited file cannot smuggle one into a run's input, history or artifacts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from activities.atomic import write_atomically
from activities.errors import ConfigError
from activities.raw_events import SECRET_KEY
from client.option_fields import CliField, cli_fields, cli_marker, cli_values
from client.profile_names import (
    PROFILE_INVALID,
    PROFILE_NAME,
    PROFILE_NOT_FOUND,
    check_name,
    not_saved,
    profile_file,
)
from client.tournament_options import RunOptions, TournamentSettings, settings_values
from client.tournament_values import TEMPERATURE_ROLES as THINK_TEMPERATURE_ROLES
from workflows.budget import BudgetLimits
from workflows.tournament.profiles import BUILTIN_PROFILES
from workflows.tournament.types import RoleModels

__all__ = [
    "PROFILE_EXISTS",
    "PROFILE_INVALID",
    "PROFILE_MODELS",
    "PROFILE_NAME",
    "PROFILE_NOT_FOUND",
    "PROFILE_SECRET",
    "ProfileStore",
    "SavedProfile",
    "apply_profile",
    "expand_saved_profiles",
    "profile_options",
    "profile_run_fields",
    "saved_fields",
    "secret_keys",
]

PROFILE_SECRET = "profile.secret"
PROFILE_EXISTS = "profile.exists"

# Besides the run store's redaction pattern: names a credential goes by in other tools' configs.
_MORE_SECRET_KEYS = re.compile(
    r"(bearer|private[_-]?key|access[_-]?key|(^|_)auth$|(^|_)pat$|session[_-]?key)", re.IGNORECASE
)

TEMPERATURE_ROLES = tuple(THINK_TEMPERATURE_ROLES)  # the roles --temperature takes


class SavedProfile(TournamentSettings):
    """What a saved profile may hold: the think settings, a model per role and budget limits;
    every field is optional (unset: the think default)."""

    description: str | None = Field(default=None, max_length=500)
    base: str = Field(default="quick", description="the built-in profile it starts from")
    models: RoleModels = RoleModels()
    limits: BudgetLimits = BudgetLimits()

    def check(self) -> SavedProfile:
        if self.base not in BUILTIN_PROFILES:
            raise ConfigError(
                PROFILE_INVALID,
                f"base {self.base!r} is not a built-in profile: use one of "
                f"{', '.join(BUILTIN_PROFILES)}",
            )
        unknown = sorted(set(self.temperatures) - set(TEMPERATURE_ROLES))
        if unknown:
            raise ConfigError(
                PROFILE_INVALID,
                f"temperatures has unknown role(s) {', '.join(unknown)}: "
                f"use {', '.join(TEMPERATURE_ROLES)}",
            )
        return self

    def to_yaml(self) -> str:
        import yaml  # here, as in every use: `ponder profile --help` loads no YAML parser

        data = self.model_dump(mode="json", by_alias=True, exclude_defaults=True)
        return yaml.safe_dump(data, sort_keys=False)


def secret_keys(value: Any, path: str = "") -> Iterator[str]:
    """The dotted path of every secret-shaped key in ``value``, at any depth."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            here = f"{path}.{key}" if path else str(key)
            if SECRET_KEY.search(str(key)) or _MORE_SECRET_KEYS.search(str(key)):
                yield here
            yield from secret_keys(item, here)
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from secret_keys(item, f"{path}[{i}]")


def _refuse_secrets(data: Any, where: str) -> None:
    found = list(secret_keys(data))
    if found:
        # The values are never echoed: only where they are.
        raise ConfigError(
            PROFILE_SECRET,
            f"{where} has secret-shaped key(s) {', '.join(found)}: profiles "
            "never hold secrets; keep keys in the environment (ponder.toml api_key_env) "
            "and remove them from the profile",
        )


def parse_profile(data: Any, where: str) -> SavedProfile:
    """A SavedProfile from parsed YAML/JSON; secrets refused before anything else is read."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(PROFILE_INVALID, f"{where} must be a mapping of settings")
    _refuse_secrets(data, where)
    try:
        return SavedProfile.model_validate(dict(data)).check()
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'profile'}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(
            PROFILE_INVALID, f"{where}: {problems} (see ponder profile save --help)"
        ) from None


class ProfileStore:
    """``<home>/profiles/<name>.yaml``; names are plain words, never paths."""

    def __init__(self, home: Path) -> None:
        self.root = Path(home) / "profiles"

    check_name = staticmethod(check_name)

    def path(self, name: str) -> Path:
        return profile_file(self.root.parent, name)

    def names(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(
            p.stem
            for p in self.root.glob("*.yaml")
            if PROFILE_NAME.fullmatch(p.stem) and p.is_file()
        )

    def exists(self, name: str) -> bool:
        return PROFILE_NAME.fullmatch(name) is not None and (self.root / f"{name}.yaml").is_file()

    def load(self, name: str) -> SavedProfile:
        import yaml

        path = self.path(name)
        try:
            text = path.read_text()
        except FileNotFoundError:
            raise not_saved(name) from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(PROFILE_INVALID, f"{path} is not valid YAML ({exc})") from None
        return parse_profile(data, str(path))

    def save(self, name: str, profile: SavedProfile) -> Path:
        import yaml

        path = self.path(name)
        text = profile.to_yaml()
        # The same check as on load, on exactly what is written.
        _refuse_secrets(yaml.safe_load(text), f"profile {name!r}")
        self.root.mkdir(parents=True, exist_ok=True)
        return write_atomically(path, text.encode())

    def delete(self, name: str) -> None:
        path = self.path(name)
        try:
            path.unlink()
        except FileNotFoundError:
            raise ConfigError(
                PROFILE_NOT_FOUND, f"no saved profile {name!r}: see ponder profile list"
            ) from None


# -- onto ``ponder think`` options ----------------------------------------------------------


# A saved profile's own names for the run options it holds: ``models.<role>`` is the
# RunOptions field here, ``limits`` is its ``budget`` (the generate role's model is ``model``).
PROFILE_MODELS: Mapping[str, str] = {
    "judge": "judge_model",
    "mutate": "mutator_model",
    "finalize": "finalizer_model",
}


def profile_run_fields() -> list[CliField]:
    """The ``RunOptions`` options a saved profile holds (``ponder profile save`` takes them):
    the models of ``PROFILE_MODELS`` and each budget limit in its plain form (a limit is a
    number; think's ``--max-output-tokens ROLE=N`` caps each call and no profile holds caps)."""
    held = []
    for field in cli_fields(RunOptions):
        if field.path[0] == "budget":
            held.append(CliField(field.path, field.info, cli_marker(field.info)))
        elif field.path[0] in PROFILE_MODELS.values():
            held.append(field)
    return held


def saved_fields(options: Mapping[str, Any]) -> dict[str, Any]:
    """The profile fields ``ponder profile save``'s options set (only those): the settings
    read as think reads them, ``models`` and ``limits`` from the run options they map to."""
    data = settings_values(options)
    models = {role: options[dest] for role, dest in PROFILE_MODELS.items()}
    limits = {name: options[name] for name in BudgetLimits.model_fields}
    for key, held in (("models", models), ("limits", limits)):
        given = {name: value for name, value in held.items() if value is not None}
        if given:
            data[key] = given
    return data


def profile_options(saved: SavedProfile) -> dict[str, Any]:
    """The saved profile in ``ponder think``'s option vocabulary (only what it sets)."""
    roles = saved.models
    run = RunOptions.model_validate(
        {dest: getattr(roles, role) for role, dest in PROFILE_MODELS.items()}
        | {"budget": saved.limits}
    )
    o: dict[str, Any] = {
        "profile": saved.base,
        **cli_values(saved, TournamentSettings),
        **cli_values(run, RunOptions),
    }
    if roles.generate is not None and "model" not in o:
        o["model"] = roles.generate
    return o


def apply_profile(
    options: dict[str, Any], given: set[str], home: Path
) -> tuple[dict[str, Any], str | None]:
    """``options`` with a saved ``--profile`` filled in beneath the options in ``given``.

    Returns the options (``profile`` then names the saved profile's built-in base) and the
    saved profile's name, or None when ``--profile`` named a built-in profile.
    """
    name = options.get("profile") or "quick"
    if name in BUILTIN_PROFILES:
        return options, None
    store = ProfileStore(home)
    if not store.exists(name):
        raise ConfigError(
            PROFILE_NOT_FOUND,
            f"--profile {name!r} is neither built-in "
            f"({', '.join(BUILTIN_PROFILES)}) nor saved: see ponder profile list",
        )
    saved = store.load(name)
    merged = dict(options)
    for option, value in profile_options(saved).items():
        if option == "profile" or option not in given:
            merged[option] = value
    return merged, name


# -- into campaign and plan documents ------------------------------------------------------


def tournament_fields(saved: SavedProfile, model_for: Callable[[str], str]) -> dict[str, Any]:
    """The saved profile as explicit ``TournamentInput`` fields (only what it sets)."""
    out: dict[str, Any] = {"profile": saved.base}
    updates: dict[str, Any] = {f: getattr(saved, f) for f in ("n", "k", "t", "m")}
    updates["lambda"] = saved.lambda_
    for role, value in saved.temperatures.items():
        updates[f"{role}_temperature"] = value
    updates = {key: value for key, value in updates.items() if value is not None}
    if updates:
        base = BUILTIN_PROFILES[saved.base].model_dump(mode="json", by_alias=True)
        out["custom"] = base | updates
    model = saved.model or saved.models.generate
    if model is None and saved.provider is not None:
        model = model_for(saved.provider)
    if model is not None:
        out["model"] = model
    models = saved.models.model_dump(mode="json", exclude_none=True)
    if models:
        out["models"] = models
    for field in (
        "rubric",
        "prompt_style",
        "schedule",
        "judge_orders",
        "judges",
        "invalid_json_retries",
    ):
        if getattr(saved, field) is not None:
            out[field] = getattr(saved, field)
    budget = saved.limits.model_dump(mode="json", exclude_none=True)
    if budget:
        out["budget"] = budget
    if saved.concurrency is not None:
        out["concurrency"] = saved.concurrency.model_dump(mode="json")
    return out


def _under(explicit: dict[str, Any], fields: Mapping[str, Any]) -> None:
    """Fill ``explicit`` from ``fields`` in place; explicit keys win (mappings key by key)."""
    for key, value in fields.items():
        if key == "profile" or key not in explicit:
            explicit[key] = value
        elif isinstance(value, dict) and isinstance(explicit[key], dict) and key != "custom":
            explicit[key] = value | explicit[key]


def _saved(name: Any, store: ProfileStore) -> SavedProfile | None:
    if not isinstance(name, str) or name in BUILTIN_PROFILES or not store.exists(name):
        return None  # built-in, or unknown: the document's own validation refuses it
    return store.load(name)  # refuses a secret (profile.secret) or a broken file


def expand_saved_profiles(
    value: Any, home: Path, model_for: Callable[[str], str], path: str = ""
) -> list[tuple[str, ConfigError]]:
    """Expand, in place, every saved ``profile`` a campaign or plan document names.

    A campaign's tournament variant (``config.profile``) gets the profile's explicit
    ``TournamentInput`` fields; a plan's tournament step (``tournament.profile``) the fields its
    spec accepts (custom sizes and temperatures, rubric, judge model, max calls; and the step's
    ``model``). Fields the document sets win. Built-in and unknown
    names are left for the document's validation; returns ``(path, error)`` for each saved
    profile that cannot be used (a secret, a broken file).
    """
    store = ProfileStore(home)
    errors: list[tuple[str, ConfigError]] = []
    if isinstance(value, list):
        for i, item in enumerate(value):
            errors += expand_saved_profiles(item, home, model_for, f"{path}[{i}]")
        return errors
    if not isinstance(value, dict):
        return errors
    config, spec = value.get("config"), value.get("tournament")
    try:
        if value.get("kind") == "tournament" and isinstance(config, dict):
            saved = _saved(config.get("profile"), store)
            if saved is not None:
                _under(config, tournament_fields(saved, model_for))
        elif value.get("kind") == "tournament" and isinstance(spec, dict):
            saved = _saved(spec.get("profile"), store)
            if saved is not None:
                fields = tournament_fields(saved, model_for)
                mapped = {
                    "profile": fields["profile"],
                    "custom": fields.get("custom"),
                    "rubric": fields.get("rubric"),
                    "judge_model": fields.get("models", {}).get("judge"),
                    "max_calls": fields.get("budget", {}).get("max_calls"),
                }
                _under(spec, {k: v for k, v in mapped.items() if v is not None})
                if "model" in fields and value.get("model") is None:
                    value["model"] = fields["model"]
    except ConfigError as exc:
        where = "config" if isinstance(config, dict) else "tournament"
        errors.append((f"{path}.{where}.profile" if path else f"{where}.profile", exc))
    for key, item in value.items():
        if isinstance(item, dict | list):
            errors += expand_saved_profiles(item, home, model_for, f"{path}.{key}" if path else key)
    return errors
