"""Configuration: flags > environment > ``ponder.toml`` > defaults.

The file is found at ``--config``, ``$PONDER_CONFIG``, ``./ponder.toml`` or
``$PONDER_HOME/ponder.toml``, first hit wins. Secrets never live in it: an endpoint names the
environment variable that holds its key (``api_key_env``), read from the environment or from the
``KEY=VALUE`` file at ``$PONDER_SECRETS_FILE``.
"""

from __future__ import annotations

import json
import os
import re
import types
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from activities.errors import ConfigError
from activities.ledger_config import LedgerConfig
from activities.raw_events import MIN_REDACTED_CHARS, SECRET_KEY
from activities.run_file_crypto import read_with
from workflows.model_types import Price
from workflows.names import TASK_QUEUE

__all__ = [
    "BASE_URL_NOT_ALLOWED",
    "Endpoint",
    "Notifier",
    "Price",
    "Settings",
    "check_base_url",
    "check_declared_base_url",
    "known_secrets",
    "load_settings",
    "read_secret",
    "secret_env_values",
    "short_secret_names",
]

ProviderKind = Literal["openai", "anthropic", "command", "sim", "replay", "mcp"]


def check_base_url(url: str) -> str:
    """``url`` if it can be an endpoint's base URL (http or https, a host, no query or
    fragment), else a ConfigError naming the rule and the fix. Called for ``--base-url``,
    ``base_url`` in ponder.toml and ``base_url`` in workflow input alike."""
    try:
        parsed = urlsplit(url)
        parsed.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError as exc:
        raise ConfigError(
            "model.base_url_invalid", f"base URL {url!r} does not parse ({exc}): {_BASE_URL_FIX}"
        ) from None
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ConfigError(
            "model.base_url_invalid",
            f"base URL {url!r} needs http:// or https:// and a host: {_BASE_URL_FIX}",
        )
    if parsed.query or parsed.fragment or any(c.isspace() for c in url):
        raise ConfigError(
            "model.base_url_invalid",
            f"base URL {url!r} has a query, fragment or whitespace: {_BASE_URL_FIX}",
        )
    return url


BASE_URL_NOT_ALLOWED = "route.base_url_not_allowed"


def check_declared_base_url(url: str, settings: Settings) -> str:
    """``url`` if this worker declares it (an endpoint's ``base_url`` or ``[ponder]
    allowed_base_urls``, a trailing slash aside), else a ConfigError: a URL in workflow input
    names one of the worker's endpoints and never makes it reach a host of the input's choosing
    (a service on the worker's own network, a cloud metadata address)."""
    wanted = url.rstrip("/")
    declared = {e.base_url.rstrip("/") for e in settings.providers.values() if e.base_url}
    declared |= {u.rstrip("/") for u in settings.allowed_base_urls}
    if wanted not in declared:
        raise ConfigError(
            BASE_URL_NOT_ALLOWED,
            f"base_url {url[:200]!r} is not an endpoint this worker declares: declare it in "
            "the worker's ponder.toml, as [providers.NAME] base_url (then name the model "
            "NAME:...) or in [ponder] allowed_base_urls, and restart the worker",
        )
    return url


_BASE_URL_FIX = (
    "give the endpoint's root, e.g. http://127.0.0.1:8000/v1 or https://api.openai.com/v1"
)


class Endpoint(BaseModel):
    """A named provider endpoint: ``[providers.<name>]``."""

    model_config = ConfigDict(extra="forbid")

    kind: ProviderKind
    base_url: str | None = None
    api_key_env: str | None = None
    models: list[str] = []
    argv: list[str] = Field(default=[], description="command kind: the program and its arguments")
    env: list[str] = Field(
        default=[],
        description="command kind: variables passed on to the agent besides PATH, HOME and LANG",
    )
    timeout_s: float = 600.0
    json_mode: bool = Field(
        default=True,
        description="openai kind: a call that asks for JSON sends response_format; false for an "
        "endpoint that refuses it, so no request carries it (a refusal otherwise costs every "
        "such call one extra request, the same on every worker)",
    )
    ponder_headers: bool = Field(
        default=False,
        description="send X-Ponder-Role and X-Ponder-Tag (for test servers; real providers "
        "get only X-Ponder-Call-Id)",
    )

    @field_validator("base_url")
    @classmethod
    def _base_url_is_a_url(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                check_base_url(value)
            except ConfigError as exc:
                raise ValueError(str(exc)) from None
        return value

    @model_validator(mode="after")
    def _http_kinds_have_a_base_url(self) -> Endpoint:
        if self.kind in ("openai", "anthropic") and not self.base_url:
            raise ValueError(
                f'kind "{self.kind}" needs base_url (e.g. "http://127.0.0.1:8000/v1"): add it'
            )
        return self


NOTIFIER_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")


class Notifier(BaseModel):
    """``[notifiers.<name>]``: where a plan's gate escalation (``escalate.notify: <name>``) is
    posted. Declared here, on the worker, so a plan names a notifier and never a URL. A webhook
    URL often is a secret (it carries its own token): ``url_env`` names the variable that
    holds it instead, and the URL never enters a trace, an event or an error."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["webhook"]
    url: str | None = None
    url_env: str | None = Field(default=None, min_length=1)
    timeout_s: float = Field(default=10.0, gt=0, le=60, description="one post's timeout")

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None:
            check_webhook_url(value)
        return value

    @model_validator(mode="after")
    def _one_url(self) -> Notifier:
        if (self.url is None) == (self.url_env is None):
            raise ValueError('give exactly one of url = "https://..." or url_env = "VARIABLE"')
        return self

    def resolved_url(self) -> str:
        """The URL to post to; a ConfigError (naming the variable, never its value) if unset."""
        if self.url is not None:
            return self.url
        assert self.url_env is not None
        value = read_secret(self.url_env)
        if not value:
            raise ConfigError(
                "notifier.url_missing",
                f"the notifier's url_env {self.url_env} is not set on the worker",
            )
        try:
            return check_webhook_url(value)
        except ValueError:
            raise ConfigError(
                "notifier.url_invalid",
                f"the notifier's url_env {self.url_env} does not hold an http(s) URL",
            ) from None


def check_webhook_url(url: str) -> str:
    """An http(s) URL with a host (a query is allowed: many webhooks carry one)."""
    try:
        parsed = urlsplit(url)
        parsed.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError:
        raise ValueError("the webhook url does not parse: give http(s)://host/path") from None
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ValueError("the webhook url needs http:// or https:// and a host")
    if any(c.isspace() for c in url):
        raise ValueError("the webhook url has whitespace")
    return url


class PlansTable(BaseModel):
    """``[plans]`` in ponder.toml."""

    model_config = ConfigDict(extra="forbid")

    default_family: str | None = Field(default=None, min_length=1)
    workspace_roots: list[str] = []

    @field_validator("workspace_roots")
    @classmethod
    def _absolute(cls, roots: list[str]) -> list[str]:
        for i, root in enumerate(roots):
            if not os.path.isabs(os.path.expanduser(root)):
                raise ValueError(
                    f"[{i}] {root!r} is not an absolute path: give one such as "
                    '"/srv/ponder/work" or "~/projects"'
                )
        return roots


_NOT_FROM_ENV = frozenset(
    {
        "home",
        "providers",
        "prices",
        "config_file",
        "default_family",
        "workspace_roots",
        "notifiers",
        "ledgers",
    }
)
"""Fields that only ``load_settings`` fills (``PONDER_HOME`` is read there, before the file)."""

_ENV_PREFIX = "PONDER_"


SERVER_IDLE_S = 300.0
"""The embedded server's default idle period (``server_idle_s``, ``PONDER_SERVER_IDLE_S``)."""
MAX_SERVER_IDLE_S = 86_400.0


MAX_TASK_QUEUE_CHARS = 1000
"""Temporal's own limit on a task queue's name."""
_UNQUOTABLE = re.compile(r"[\"'\\\x00-\x1f\x7f]")


class Settings(BaseModel):
    """The worker's and CLI's settings: flags > environment > ``[ponder]`` in ponder.toml >
    defaults. Environment names are ``PONDER_<FIELD>`` except the Temporal connection's, which
    use the Temporal CLI's own names (``TEMPORAL_ADDRESS``, ``TEMPORAL_NAMESPACE``,
    ``TEMPORAL_TLS``)."""

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_default=True)

    home: Path
    runs_dir: Path
    payload_dir: Path
    payload_threshold: int = 16 * 1024
    task_queue: str = TASK_QUEUE
    namespace: str = Field(default="default", validation_alias="TEMPORAL_NAMESPACE")
    temporal_address: str | None = Field(default=None, validation_alias="TEMPORAL_ADDRESS")
    temporal_tls: bool = Field(default=False, validation_alias="TEMPORAL_TLS")
    temporal_api_key_env: str = Field(
        default="TEMPORAL_API_KEY", description="the variable holding a hosted cluster's key"
    )
    replay_dirs: list[Path] = Field(
        default=[], description="directories besides runs_dir that replay: may read recordings from"
    )
    providers: dict[str, Endpoint] = {}
    prices: dict[str, Price] = Field(default={}, description='keyed "provider:model"')
    executors: dict[str, str] = Field(
        default={}, description="plan step family -> provider:model ([executors] in ponder.toml)"
    )
    default_family: str | None = Field(
        default=None,
        description="[plans] default_family: the family of plan steps without a model (client "
        "side: resolved into each run's input, never read by a worker)",
    )
    allowed_base_urls: list[str] = Field(
        default=[],
        max_length=256,
        description="[ponder] allowed_base_urls: base URLs a run's input may name besides the "
        "endpoints' own (a run may send no request to any other host)",
    )
    workspace_roots: list[Path] = Field(
        default=[],
        description="[plans] workspace_roots: where a plan run's workspace may be on this worker "
        "(absolute; none declared: see activities/plan/roots.py)",
    )
    notifiers: dict[str, Notifier] = Field(
        default={},
        description="[notifiers.NAME]: where gate escalations are posted (plans name them)",
    )
    ledgers: dict[str, LedgerConfig] = Field(
        default={},
        description="[ledgers.NAME]: shared spend ledgers runs may draw on (docs/operating.md)",
    )
    training_dir: Path = Field(
        description="where plans with training_pairs: true append their pairs (default "
        "$PONDER_HOME/training); set on the worker, never by a plan"
    )
    server_idle_s: float = Field(
        default=SERVER_IDLE_S,
        ge=0,
        le=MAX_SERVER_IDLE_S,
        description="how long the embedded server stays up after its last user left, so a burst "
        "of commands pays for one start (0: stop at once)",
    )
    workflow_sandbox: bool = Field(
        default=False,
        description="run workflows in Temporal's sandbox, which refuses clock, random and I/O "
        "calls from workflow code (about 30 ms more worker CPU a tournament); the test suite "
        "turns it on",
    )
    metrics_bind: str | None = Field(
        default=None,
        description="IP:PORT where a long-lived worker serves Prometheus metrics "
        "(``ponder worker --metrics-bind``; docs/operating.md, Metrics); unset: none served",
    )
    otlp_endpoint: str | None = Field(
        default=None,
        description="an OTLP/HTTP traces URL (e.g. http://collector:4318/v1/traces): clients "
        "and workers trace every run there (needs ponder[otel]; docs/operating.md, Traces); "
        "unset: no tracing",
    )
    keyring_file: Path | None = Field(
        default=None,
        description="a file of KEY_ID=BASE64 lines (256-bit AES keys, newest last): payloads are "
        "encrypted with the newest key and decrypted with any listed (see docs/security.md)",
    )
    keyring_env: str = Field(
        default="PONDER_KEYRING",
        description="the variable holding the keyring when no keyring_file is set (no keyring: "
        "payloads stay plain)",
    )
    encrypt_run_files: bool = Field(
        default=False,
        description="a worker's setting: seal every file ponder writes under runs_dir with the "
        "keyring (needs one; see docs/security.md); readers open them with the same keyring",
    )
    codec_token_env: str = Field(
        default="PONDER_CODEC_TOKEN",
        description="the variable holding the bearer token `ponder codec-server` requires",
    )
    config_file: Path | None = None

    @field_validator("task_queue")
    @classmethod
    def _queue_is_quotable(cls, name: str) -> str:
        # Commands find a queue's runs and workers with visibility queries that quote the name;
        # a quote, a backslash or a control character could never be matched (or would end the
        # literal), so such a name is refused here rather than misread there.
        if not name or len(name) > MAX_TASK_QUEUE_CHARS or _UNQUOTABLE.search(name):
            raise ValueError(
                f"task_queue {name!r} (PONDER_TASK_QUEUE, or task_queue in ponder.toml): use "
                f"1-{MAX_TASK_QUEUE_CHARS} characters without quotes, backslashes or control "
                "characters (letters, digits, '.', '-', '_' are safe)"
            )
        return name

    @field_validator("allowed_base_urls")
    @classmethod
    def _allowed_are_urls(cls, urls: list[str]) -> list[str]:
        for url in urls:
            try:
                check_base_url(url)
            except ConfigError as exc:
                raise ValueError(str(exc)) from None
        return urls


def _keys() -> dict[str, str]:
    """Each setting's lower-cased name and alias -> the key its value is given under (the alias
    where there is one, as pydantic reads an alias first)."""
    keys: dict[str, str] = {}
    for name, field in Settings.model_fields.items():
        key = field.validation_alias if isinstance(field.validation_alias, str) else name
        keys[name.lower()] = keys[key.lower()] = key
    return keys


def _keyed(layer: dict[str, Any], keys: dict[str, str]) -> dict[str, Any]:
    """``layer`` with each setting under its key: a name or alias matches in any case, as the
    environment's names do; anything else stays as given (and is refused as unknown)."""
    return {keys.get(name.lower(), name): value for name, value in layer.items()}


def _complex(annotation: Any) -> bool | None:
    """True if a value for ``annotation`` comes from the environment as JSON, None if it may
    (a union with a list, table or model in it: a text that is not JSON stays text)."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        return None if any(_complex(arg) is not False for arg in get_args(annotation)) else False
    if (origin or annotation) in (list, dict, set, frozenset, tuple):
        return True
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _environment(keys: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The environment layer: each setting but ``_NOT_FROM_ENV`` from its alias (the Temporal
    CLI's own name) or else ``PONDER_<FIELD>``, names matched in any case, empty values ignored;
    a list or table is JSON, any other value stays text for pydantic to convert. Also returns
    the variable each value came from, for errors to name."""
    found = {name.lower(): (name, value) for name, value in os.environ.items() if value != ""}
    layer: dict[str, Any] = {}
    variables: dict[str, str] = {}
    for name, field in Settings.model_fields.items():
        if name in _NOT_FROM_ENV:
            continue
        alias = field.validation_alias if isinstance(field.validation_alias, str) else None
        for candidate in (alias, _ENV_PREFIX + name):
            if candidate is None or candidate.lower() not in found:
                continue
            variable, value = found[candidate.lower()]
            json_text = _complex(field.annotation)
            if json_text is not False:
                try:
                    value = json.loads(value)
                except ValueError as exc:
                    if json_text:
                        raise _json_error(variable, field.annotation, exc) from None
            layer[keys[name.lower()]] = value
            variables[keys[name.lower()]] = variable
            break
    return layer, variables


def _json_error(variable: str, annotation: Any, exc: ValueError) -> ConfigError:
    table = get_origin(annotation) is dict
    example = 'a JSON object such as {"KEY": "VALUE"}' if table else 'a JSON list such as ["VALUE"]'
    return ConfigError(
        "config.invalid",
        f"environment variable {variable} is not JSON ({exc}): give {example}, or unset it",
    )


def _merged(lower: dict[str, Any], upper: dict[str, Any]) -> dict[str, Any]:
    """``upper`` over ``lower``; tables in both merge key by key, as the layers always have."""
    merged = dict(lower)
    for key, value in upper.items():
        below = merged.get(key)
        if isinstance(value, dict) and isinstance(below, dict):
            merged[key] = _merged(below, value)
        else:
            merged[key] = value
    return merged


_BUILTIN_ENDPOINTS: dict[str, Endpoint] = {
    "openai": Endpoint(
        kind="openai", base_url="https://api.openai.com/v1", api_key_env="OPENAI_API_KEY"
    ),
    "anthropic": Endpoint(
        kind="anthropic", base_url="https://api.anthropic.com", api_key_env="ANTHROPIC_API_KEY"
    ),
    "sim": Endpoint(kind="sim"),
    "command": Endpoint(kind="command"),
    "replay": Endpoint(kind="replay"),
    "mcp": Endpoint(kind="mcp"),  # sampled from a connected MCP session's host
}


def _config_path(explicit: str | Path | None, home: Path) -> Path | None:
    for candidate in (explicit, os.environ.get("PONDER_CONFIG")):
        if candidate:
            return Path(candidate)
    for candidate in (Path("ponder.toml"), home / "ponder.toml"):
        if candidate.is_file():
            return candidate
    return None


def _read_toml(path: Path) -> dict[str, Any]:
    import tomllib  # here: a home without a ponder.toml (most commands' case) never parses one

    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except OSError as exc:
        raise ConfigError(
            "config.unreadable",
            f"config file {path} cannot be read ({exc.strerror}): fix its path or permissions",
        ) from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            "config.syntax", f"config file {path} is not valid TOML ({exc}): fix the syntax"
        ) from exc


def load_settings(config: str | Path | None = None, **flags: Any) -> Settings:
    """Build the settings; ``flags`` are command-line values (None means "not given")."""
    home = Path(flags.get("home") or os.environ.get("PONDER_HOME") or Path.home() / ".ponder")
    path = _config_path(config, home)
    data = _read_toml(path) if path else {}
    where = path or "(defaults)"
    providers = dict(_BUILTIN_ENDPOINTS)
    prices: dict[str, Price] = {}
    for name, table in data.get("providers", {}).items():
        table = dict(table)
        for model, price in table.pop("prices", {}).items():
            prices[f"{name}:{model}"] = _validated(
                Price, price, where, f"providers.{name}.prices.{model}"
            )
        providers[name] = _validated(Endpoint, table, where, f"providers.{name}")
    for key, price in data.get("prices", {}).items():
        prices[key] = _validated(Price, price, where, f"prices.{key}")
    executors = data.get("executors", {})
    if not isinstance(executors, dict) or not all(isinstance(v, str) for v in executors.values()):
        raise ConfigError(
            "config.invalid", f'config {where}: executors: give FAMILY = "provider:model" entries'
        )
    plans = _validated(PlansTable, data.get("plans", {}), where, "plans")
    notifiers = _notifiers(data.get("notifiers", {}), where)
    ledgers = _ledgers(data.get("ledgers", {}), where)
    given = {k: v for k, v in flags.items() if v is not None and k != "home"}
    fixed: dict[str, Any] = {
        "home": home,
        "providers": providers,
        "prices": prices,
        "executors": executors,
        "default_family": plans.default_family,
        "workspace_roots": [Path(r).expanduser() for r in plans.workspace_roots],
        "notifiers": notifiers,
        "ledgers": ledgers,
        "config_file": path,
    }
    fixed.update({k: given.pop(k) for k in ("default_family", "workspace_roots") if k in given})
    defaults = {
        "runs_dir": home / "runs",
        "payload_dir": home / "payloads",
        "training_dir": home / "training",
    }
    keys = _keys()
    environment, variables = _environment(keys)
    init = _keyed({**fixed, **given}, keys)
    values: dict[str, Any] = defaults
    for layer in (_keyed(dict(data.get("ponder", {})), keys), environment, init):  # lowest first
        values = _merged(values, layer)
    try:
        settings = Settings.model_validate(values)
    except ValidationError as exc:
        key = next(iter(exc.errors()[0]["loc"]), None)
        if isinstance(key, str) and key in variables and key not in init:
            raise _env_error(exc, variables[key]) from None
        raise _config_error(exc, where, "ponder") from None
    read_with(settings)  # run files sealed with its keyring open wherever it is loaded
    return settings


def _notifiers(tables: Any, where: Path | str) -> dict[str, Notifier]:
    if not isinstance(tables, dict):
        raise ConfigError(
            "config.invalid", f"config {where}: notifiers: give [notifiers.NAME] tables: fix them"
        )
    out = {}
    for name, table in tables.items():
        if not NOTIFIER_NAME.match(name):
            raise ConfigError(
                "config.invalid",
                f"config {where}: notifiers.{name}: a notifier name is [a-z][a-z0-9_-]{{0,63}} "
                "(plans name it in escalate.notify): rename it",
            )
        out[name] = _validated(Notifier, table, where, f"notifiers.{name}")
    return out


def _ledgers(tables: Any, where: Path | str) -> dict[str, LedgerConfig]:
    if not isinstance(tables, dict):
        raise ConfigError(
            "config.invalid", f"config {where}: ledgers: give [ledgers.NAME] tables: fix them"
        )
    out = {}
    for name, table in tables.items():
        if not NOTIFIER_NAME.match(name):
            raise ConfigError(
                "config.invalid",
                f"config {where}: ledgers.{name}: a ledger name is [a-z][a-z0-9_-]{{0,63}} "
                "(runs name it with --ledger): rename it",
            )
        out[name] = _validated(LedgerConfig, table, where, f"ledgers.{name}")
    return out


_M = TypeVar("_M", bound=BaseModel)


def _validated(model: type[_M], data: Any, where: Path | str, entry: str) -> _M:
    """``model`` from ``data``, or a ConfigError naming the file, the entry and the field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _config_error(exc, where, entry) from None


def _env_error(exc: ValidationError, variable: str) -> ConfigError:
    error = exc.errors()[0]
    field = ".".join(str(p) for p in (variable, *error["loc"][1:]))
    return ConfigError(
        "config.invalid", f"environment variable {field}: {error['msg']}: fix or unset it"
    )


def _config_error(exc: ValidationError, where: Path | str, entry: str) -> ConfigError:
    error = exc.errors()[0]
    field = ".".join(str(p) for p in (entry, *error["loc"]))
    return ConfigError("config.invalid", f"config {where}: {field}: {error['msg']}: fix that entry")


def secrets_file_configured() -> bool:
    """Whether secrets may come from a file (``$PONDER_SECRETS_FILE``): reading one is I/O."""
    return bool(os.environ.get("PONDER_SECRETS_FILE"))


def _secrets_file() -> dict[str, str]:
    path = os.environ.get("PONDER_SECRETS_FILE")
    if not path:
        return {}
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as exc:
        raise ConfigError(
            "secrets.unreadable", f"secrets file {path} cannot be read ({exc.strerror})"
        ) from exc
    secrets = {}
    for line in lines:
        key, sep, value = line.strip().partition("=")
        if sep and not key.startswith("#"):
            secrets[key.strip()] = value.strip().strip("'\"")
    return secrets


def known_secrets(settings: Settings) -> list[str]:
    """Every configured endpoint's key: redacted from anything a call writes, returns or raises
    (a provider may echo a key, and a command agent may print one it was given)."""
    names = {e.api_key_env for e in settings.providers.values() if e.api_key_env}
    names.add(settings.temporal_api_key_env)  # the cluster's key is a worker secret too
    return [value for name in sorted(names) if (value := read_secret(name))]


def short_secret_names(settings: Settings) -> list[str]:
    """The variables among the configured keys whose value is too short to redact from text
    (``activities.raw_events.MIN_REDACTED_CHARS``): the worker warns about each at start."""
    names = {e.api_key_env for e in settings.providers.values() if e.api_key_env}
    names.add(settings.temporal_api_key_env)
    return [
        name
        for name in sorted(names)
        if (value := read_secret(name)) and len(value) < MIN_REDACTED_CHARS
    ]


def secret_env_values(names: list[str]) -> list[str]:
    """Values of the variables among ``names`` whose names look secret (a command agent's
    ``env`` allowlist may pass a token on; the agent must not print it back into a run)."""
    return [value for name in names if SECRET_KEY.search(name) and (value := read_secret(name))]


def read_secret(name: str) -> str | None:
    """The value of secret ``name`` from the environment, else the secrets file."""
    return os.environ.get(name) or _secrets_file().get(name)
