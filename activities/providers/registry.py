"""The one provider registry: model spec -> endpoint, key and provider implementation."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from activities.config import (
    Endpoint,
    Settings,
    check_base_url,
    check_declared_base_url,
    read_secret,
    secrets_file_configured,
)
from activities.errors import ConfigError
from activities.pricing import builtin_price
from activities.providers.sampling import SESSION_KIND, check_hint
from activities.providers.sim import sim_options
from workflows.model_types import DEFAULT_MODEL, MODEL_EXAMPLES, Price
from workflows.run_ids import run_id_problem

if TYPE_CHECKING:
    from activities.providers.base import Provider

    PROVIDERS: dict[str, Provider]  # built at first use (``__getattr__``)

__all__ = [
    "DEFAULT_MODEL",
    "MODEL_EXAMPLES",
    "PROVIDERS",
    "PROVIDER_UNKNOWN",
    "ResolvedModel",
    "default_model_for",
    "parse_model_spec",
    "price_table",
    "replay_source",
    "resolve_model",
    "resolves_in_memory",
]

_SPEC = re.compile(r"^(?P<provider>[A-Za-z][A-Za-z0-9_.-]*):(?P<model>\S.*)$")


@functools.cache
def _implementations() -> dict[str, Provider]:
    """Every endpoint kind's implementation, built at the first call a process makes.

    Resolving a spec and pricing it need only the settings' names, kinds and tables, so a
    command that only starts runs never loads the HTTP providers (httpx with them)."""
    from activities.providers.anthropic import AnthropicProvider
    from activities.providers.command import CommandProvider
    from activities.providers.openai import OpenAIProvider
    from activities.providers.replay import ReplayProvider
    from activities.providers.sampling import SamplingProvider
    from activities.providers.sim import SimProvider

    base: dict[str, Provider] = {
        "openai": OpenAIProvider(),
        "anthropic": AnthropicProvider(),
        "command": CommandProvider(),
        "sim": SimProvider(),
        SESSION_KIND: SamplingProvider(),
    }
    return {**base, "replay": ReplayProvider(base)}


def __getattr__(name: str) -> dict[str, Provider]:
    if name == "PROVIDERS":  # kind -> implementation, as when it was built at import
        return _implementations()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class ResolvedModel:
    provider_name: str
    model_name: str
    endpoint: Endpoint
    api_key: str | None

    @property
    def implementation(self) -> Provider:
        return _implementations()[self.endpoint.kind]


PROVIDER_UNKNOWN = "model.provider_unknown"
"""A model spec names a provider the configuration does not declare: the same code from the CLI
before a run starts and from the worker that resolves the call."""


def parse_model_spec(spec: str) -> tuple[str, str]:
    """``"provider:model"`` -> ``(provider, model)``, or a ConfigError saying what is wrong."""
    match = _SPEC.fullmatch(spec.strip())
    if not match:
        raise ConfigError(
            "model.invalid",
            f"model {spec!r} is not of the form provider:model (e.g. {MODEL_EXAMPLES})",
        )
    return match["provider"], match["model"]


def resolve_model(
    spec: str,
    settings: Settings,
    *,
    base_url: str | None = None,
    require_key: bool = True,
    declared_only: bool = True,
) -> ResolvedModel:
    """Look up the endpoint and key for ``spec``; refuses unknown providers and missing keys.

    A key stays bound to its endpoint's configured URL: with another ``base_url`` none is sent
    (workflow input must not be able to send a worker's key elsewhere); give such a server
    its own ``[providers.NAME]`` with ``api_key_env`` instead. Another ``base_url`` must be one
    the settings declare (``route.base_url_not_allowed``): input never adds a host;
    ``declared_only=False`` is for a check that reports that refusal itself, among others.
    ``require_key=False`` is for processes that only start runs (the workers hold the keys).
    """
    provider, model = parse_model_spec(spec)
    if provider == "command":
        provider = _declared_command(model, spec, settings)
    endpoint = settings.providers.get(provider)
    if endpoint is None:
        known = ", ".join(sorted(settings.providers))
        raise ConfigError(
            PROVIDER_UNKNOWN,
            f"unknown provider {provider!r} in model {spec!r}: use one of {known} "
            "or add [providers.NAME] to ponder.toml",
        )
    if base_url:
        check_base_url(base_url)
    if base_url and base_url.rstrip("/") != (endpoint.base_url or "").rstrip("/"):
        if declared_only:
            check_declared_base_url(base_url, settings)
        endpoint = endpoint.model_copy(update={"base_url": base_url, "api_key_env": None})
    if endpoint.kind == "command" and not endpoint.argv:
        raise _command_refused(spec)
    if endpoint.kind == "sim":
        sim_options(model)
    if endpoint.kind == SESSION_KIND:
        check_hint(model, spec)
    if endpoint.kind == "replay":
        model = str(replay_source(model, settings))
    api_key = read_secret(endpoint.api_key_env) if endpoint.api_key_env else None
    if require_key and api_key is None and endpoint.api_key_env:
        raise ConfigError(
            "model.key_missing",
            f"provider {provider!r} needs an API key: set {endpoint.api_key_env} in the "
            "environment or in the file named by PONDER_SECRETS_FILE",
        )
    return ResolvedModel(provider, model, endpoint, api_key)


def resolves_in_memory(spec: str, settings: Settings) -> bool:
    """Whether ``resolve_model(spec)`` and the worker's known secrets read no file: no secrets
    file is configured (keys come from the environment) and the endpoint is not a replay (which
    finds its recording on disk). False for a spec that does not resolve, so whoever resolves
    it in a thread raises its error."""
    if secrets_file_configured():
        return False
    try:
        provider, _ = parse_model_spec(spec)
    except ConfigError:
        return False
    endpoint = settings.providers.get(provider)
    return endpoint is not None and endpoint.kind != "replay"


RAW_EVENTS = "raw-events.jsonl"


def replay_source(source: str, settings: Settings) -> Path:
    """The recording ``replay:SOURCE`` reads: a run id in the run store, or a
    ``raw-events.jsonl`` inside the run store or a directory the worker declares
    (``replay_dirs``); anything else is refused (a ConfigError: at once, never retried), so
    workflow input cannot read arbitrary files on the worker, follow a link out of the run
    store, or feed the replayer a file that is not a recording."""
    if run_id_problem(source) is None:
        return _run_recording(source, settings)
    path = Path(source).resolve()  # symlinks followed first, so a link cannot lead out
    allowed = [settings.runs_dir, *settings.replay_dirs]
    if not any(path.is_relative_to(Path(root).resolve()) for root in allowed):
        raise ConfigError(
            "replay.source_invalid",
            f"replay source {source!r} is outside the run store {settings.runs_dir}: name a "
            "recorded run id (replay:RUN_ID) or add its directory to replay_dirs in [ponder] "
            "of the worker's ponder.toml",
        )
    if path.name != RAW_EVENTS:
        raise ConfigError(
            "replay.source_invalid",
            f"replay source {source!r} is not a recording: replay: reads a run's {RAW_EVENTS} "
            "(name the run id, replay:RUN_ID, or the path of its raw-events.jsonl)",
        )
    return path


def _run_recording(run_id: str, settings: Settings) -> Path:
    """``<runs_dir>/<run_id>/raw-events.jsonl``, refused if the run directory or the file is a
    link or leads out of the run store (as the run store refuses to write through one)."""
    root = Path(settings.runs_dir).resolve()
    run_dir = Path(settings.runs_dir) / run_id
    path = run_dir / RAW_EVENTS
    if (
        run_dir.is_symlink()
        or path.is_symlink()
        or (run_dir.exists() and not run_dir.resolve().is_relative_to(root))
    ):
        raise ConfigError(
            "replay.source_invalid",
            f"replay source {run_id!r}: its run directory or {RAW_EVENTS} is a symlink or "
            f"leads outside the run store {settings.runs_dir}: replay reads only recordings "
            "inside the run store; name another run",
        )
    return path


def _command_refused(spec: str) -> ConfigError:
    return ConfigError(
        "model.command_undeclared",
        f"model {spec!r}: a command agent must be declared by the worker, never given by input "
        '(no paths or command lines): add [providers.NAME] with kind = "command" and '
        "argv = [...] to the worker's ponder.toml, then use NAME:MODEL or command:NAME",
    )


def _declared_command(name: str, spec: str, settings: Settings) -> str:
    """``command:NAME`` -> ``NAME``, if the worker declares such a command endpoint."""
    endpoint = settings.providers.get(name)
    if endpoint is None or endpoint.kind != "command" or not endpoint.argv:
        raise _command_refused(spec)
    return name


def default_model_for(provider: str, settings: Settings) -> str:
    """``provider``'s first configured model, else ``provider:default``."""
    endpoint = settings.providers.get(provider)
    model = endpoint.models[0] if endpoint and endpoint.models else "default"
    return f"{provider}:{model}"


def price_table(
    specs: list[str], settings: Settings, *, require: bool = False, require_key: bool = True
) -> dict[str, Price]:
    """Prices for ``specs`` from the settings; simulated models are free.

    With ``require`` (a USD limit is set) an unpriced model is refused up front.
    """
    table: dict[str, Price] = {}
    for spec in dict.fromkeys(specs):
        resolved = resolve_model(spec, settings, require_key=require_key)
        price = settings.prices.get(spec) or builtin_price(spec)  # ponder.toml wins
        if resolved.endpoint.kind in ("sim", SESSION_KIND):  # the host pays for mcp: calls
            price = price or Price(input=0.0, output=0.0)
        if price is not None:
            table[spec] = price
        elif require:
            raise ConfigError(
                "budget.unpriced_model",
                f"{spec} has no price and --max-usd is set: add "
                f'[providers.{resolved.provider_name}.prices."{resolved.model_name}"] to '
                "ponder.toml or drop --max-usd",
            )
    return table
