"""Reading the tournament commands' option values: files, ``ROLE=VALUE`` pairs, model lists,
prompt files. Apart from ``client.tournament_options``'s option models, so a command that only
reads its options (``ponder think`` starting a run) builds none of them."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import ValidationError

from activities.errors import ConfigError
from workflows.tournament.prompts import PromptOverrides
from workflows.tournament.types import Concurrency

__all__ = [
    "CONCURRENCY_PHASES",
    "TEMPERATURE_ROLES",
    "TOKEN_ROLES",
    "TokenRole",
    "bare_and_keyed",
    "concurrency_values",
    "load_prompts",
    "model_list",
    "read_file",
    "read_task",
    "role_values",
]

T = TypeVar("T")

# CLI role name -> Profile field.
TEMPERATURE_ROLES: Mapping[str, str] = {
    "generate": "generate_temperature",
    "judge": "judge_temperature",
    "mutate": "mutate_temperature",
    "finalize": "finalize_temperature",
}
# CLI role name -> prompt role (the judge's prompt role is "compare").
TokenRole = Literal["generate", "judge", "compare", "mutate", "finalize"]
TOKEN_ROLES: Mapping[str, str] = {  # keyed by the TokenRole names
    "generate": "generate",
    "judge": "compare",
    "compare": "compare",
    "mutate": "mutate",
    "finalize": "finalize",
}
CONCURRENCY_PHASES = ("generate", "judge", "mutate")


def read_file(name: str, *, what: str = "candidate") -> str:
    try:
        return Path(name).read_text()
    except OSError as exc:
        raise ConfigError(
            "file.unreadable", f"{what} file {name} cannot be read ({exc.strerror})"
        ) from None


def read_task(value: str, *, what: str = "task") -> str:
    """``value`` itself, or the text of the file named after an ``@``."""
    return read_file(value[1:], what=what) if value.startswith("@") else value


def role_values(
    option: str,
    items: Iterable[str],
    roles: Iterable[str],
    cast: Callable[[str], T],
) -> dict[str, T]:
    """``ROLE=VALUE`` items as a dict; an unknown role or a bad value names the option."""
    known = list(roles)
    values: dict[str, T] = {}
    for item in items:
        role, sep, raw = item.partition("=")
        role = role.strip()
        if not sep or role not in known:
            raise ConfigError(
                "option.invalid",
                f"{option} {item!r} must be ROLE=VALUE with ROLE one of {', '.join(known)}",
            )
        try:
            values[role] = cast(raw.strip())
        except ValueError:
            raise ConfigError(
                "option.invalid",
                f"{option} {item!r}: {raw.strip()!r} is not a valid {cast.__name__}",
            ) from None
    return values


def bare_and_keyed(
    option: str, items: Iterable[str], *, key: str, bare: str = ""
) -> tuple[int | None, list[str]]:
    """An option that takes a bare N and KEY=N items: the last bare N (None without one) and
    the KEY=N items in order. A bare item that is not a number is refused; ``bare`` says what
    a bare N stands for, in the refusal."""
    number: int | None = None
    keyed: list[str] = []
    for item in items:
        if "=" in item:
            keyed.append(item)
            continue
        try:
            number = int(item)
        except ValueError:
            raise ConfigError(
                "option.invalid", f"{option} {item!r} is neither a number{bare} nor {key}=N"
            ) from None
    return number, keyed


def concurrency_values(items: Iterable[str]) -> Concurrency:
    """``--concurrency``: a bare N for every phase, PHASE=N for one (the phases given are the
    model's fields set, so a profile merges them phase by phase)."""
    every, per_phase = bare_and_keyed("--concurrency", items, key="PHASE")
    phases = {} if every is None else dict.fromkeys(CONCURRENCY_PHASES, every)
    return Concurrency(
        **(phases | role_values("--concurrency", per_phase, CONCURRENCY_PHASES, int))
    )


def _starts_a_spec(piece: str) -> bool:
    # "provider:model" starts a spec; "accuracy=0.9" or "latency=uniform:5-20" are
    # options of the spec before them (a sim spec's options are comma-separated too).
    colon, equals = piece.find(":"), piece.find("=")
    return colon > 0 and (equals == -1 or colon < equals)


def model_list(items: Iterable[str], *, option: str = "--judges") -> list[str]:
    """``a,b,c`` (and repeats of the option) as model specs; a sim spec keeps its options."""
    specs: list[str] = []
    for item in items:
        for piece in item.split(","):
            piece = piece.strip()
            if not piece:
                continue
            if _starts_a_spec(piece) or not specs:
                specs.append(piece)
            else:
                specs[-1] += f",{piece}"
    bad = [spec for spec in specs if not _starts_a_spec(spec)]
    if bad:
        raise ConfigError(
            "option.invalid",
            f"{option} {bad[0]!r} is not a provider:model spec: give PROVIDER:MODEL[,...]",
        )
    return specs


def load_prompts(path: str) -> PromptOverrides:
    """Per-role prompt overrides from a JSON or TOML file, validated field by field.

    Shape: ``{"generate": {"system": "...", "user": "..."}, "compare": {...}, ...}``; the
    ``{variables}`` each role may use are checked later, with the rest of the input.
    """
    import tomllib

    text = read_file(path, what="prompts")
    try:
        data = tomllib.loads(text) if path.endswith(".toml") else json.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        kind = "TOML" if path.endswith(".toml") else "JSON"
        raise ConfigError(
            "prompts.invalid", f"prompts file {path} is not valid {kind}: {exc}"
        ) from None
    try:
        return PromptOverrides.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'file'}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(
            "prompts.invalid",
            f"prompts file {path}: {problems} (roles: generate, compare, mutate, finalize; "
            "each with system and/or user)",
        ) from None
