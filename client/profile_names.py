"""Saved profiles' names and files: what a command checks before it loads a profile.

``client.profiles`` reads and builds a profile (its models and the tournament's cost a fifth of a
second to import); a name it would refuse (a bad name, a profile that is not saved) is refused
here first, so the refusal answers at once. The built-in names come from the generated option
table (``client.option_table``), which holds ``BUILTIN_PROFILES``' names in their order.
"""

from __future__ import annotations

import re
from pathlib import Path

from activities.errors import ConfigError
from client.option_table import help_constant

__all__ = [
    "PROFILE_INVALID",
    "PROFILE_NAME",
    "PROFILE_NOT_FOUND",
    "builtin_names",
    "check_name",
    "not_saved",
    "profile_file",
]

PROFILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
PROFILE_INVALID = "profile.invalid"
PROFILE_NOT_FOUND = "profile.not_found"


def builtin_names() -> list[str]:
    names: list[str] = help_constant("builtin_profiles")
    return names


def check_name(name: str) -> str:
    """``name`` as a saved profile's name, or ``profile.invalid``."""
    if not PROFILE_NAME.fullmatch(name):
        raise ConfigError(
            PROFILE_INVALID,
            f"profile name {name!r} must match [A-Za-z0-9][A-Za-z0-9._-]* "
            "(at most 64 characters, no slashes): choose another",
        )
    if name in builtin_names():
        raise ConfigError(
            PROFILE_INVALID, f"{name!r} is a built-in profile: save under another name"
        )
    return name


def profile_file(home: Path, name: str) -> Path:
    """``<home>/profiles/<name>.yaml``, the name checked."""
    return Path(home) / "profiles" / f"{check_name(name)}.yaml"


def not_saved(name: str) -> ConfigError:
    """The refusal of a profile that is neither built-in nor saved."""
    return ConfigError(
        PROFILE_NOT_FOUND,
        f"no saved profile {name!r}: see ponder profile list "
        f"(built-in: {', '.join(builtin_names())})",
    )
