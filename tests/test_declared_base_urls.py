"""A ``base_url`` in input names an endpoint its worker declares, never a new host: the rule on
its own, the allowlist in ponder.toml, and ``ponder ask --base-url``, which declares its URL on
the worker the command starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from activities.campaign.cells import route_check
from activities.config import (
    BASE_URL_NOT_ALLOWED,
    Endpoint,
    Settings,
    check_declared_base_url,
    load_settings,
)
from activities.errors import ConfigError
from activities.providers import resolve_model
from client.embedded import child_environment
from tests.cli import cli_env, ponder
from tests.conftest import with_endpoint
from tests.fakes import FakeProvider
from workflows.campaign.document import Route
from workflows.campaign.types import RoutedModel

LOCAL = "http://127.0.0.1:8000/v1"


def test_a_url_an_endpoint_or_the_allowlist_declares_is_taken(settings: Settings) -> None:
    declared = with_endpoint(settings, "local", Endpoint(kind="openai", base_url=LOCAL))
    assert check_declared_base_url(LOCAL + "/", declared) == LOCAL + "/"
    # Another endpoint's URL, without that endpoint's key.
    resolved = resolve_model("openai:gpt-4.1", declared, base_url=LOCAL)
    assert resolved.endpoint.base_url == LOCAL and resolved.api_key is None
    listed = settings.model_copy(update={"allowed_base_urls": ["http://10.0.0.5/v1/"]})
    assert check_declared_base_url("http://10.0.0.5/v1", listed)
    # An endpoint's own URL needs no declaration of its own.
    assert resolve_model(
        "openai:m", settings, base_url="https://api.openai.com/v1/", require_key=False
    )


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/v1/chat",  # a path under a declared URL is another endpoint
        "http://127.0.0.1:8001/v1",
        "https://127.0.0.1:8000/v1",
        "http://169.254.169.254/latest",
    ],
)
def test_any_other_url_is_refused_before_a_request(settings: Settings, url: str) -> None:
    declared = with_endpoint(settings, "local", Endpoint(kind="openai", base_url=LOCAL))
    with pytest.raises(ConfigError) as refused:
        resolve_model("openai:gpt-4.1", declared, base_url=url, require_key=False)
    assert refused.value.code == BASE_URL_NOT_ALLOWED
    assert url in refused.value.message and "allowed_base_urls" in refused.value.message


def test_the_allowlist_comes_from_ponder_toml_and_must_be_urls(tmp_path: Path) -> None:
    config = tmp_path / "ponder.toml"
    config.write_text(f'[ponder]\nallowed_base_urls = ["{LOCAL}"]\n')
    assert load_settings(config, home=tmp_path).allowed_base_urls == [LOCAL]
    config.write_text('[ponder]\nallowed_base_urls = ["localhost:8000"]\n')
    with pytest.raises(ConfigError) as refused:
        load_settings(config, home=tmp_path)
    assert "allowed_base_urls" in refused.value.message


def test_a_background_worker_inherits_the_allowlist(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "PONDER_ALLOWED_BASE_URLS" not in child_environment(settings, worker=True)
    listed = settings.model_copy(update={"allowed_base_urls": [LOCAL]})
    env = child_environment(listed, worker=True)
    monkeypatch.setenv("PONDER_ALLOWED_BASE_URLS", env["PONDER_ALLOWED_BASE_URLS"])
    assert load_settings(home=settings.home).allowed_base_urls == [LOCAL]


async def test_ask_with_base_url_declares_it_on_its_own_worker(
    tmp_path: Path, fake: FakeProvider
) -> None:
    done = await ponder(
        "ask", "hi", "--model", "openai:gpt-4.1", "--base-url", fake.url, env=cli_env(tmp_path)
    )
    assert done.code == 0, done.err
    (seen,) = fake.seen
    assert seen.path == "/chat/completions" and "authorization" not in seen.headers


def test_a_campaign_route_reports_an_undeclared_variant_url_after_its_own_rules(
    settings: Settings,
) -> None:
    models = [
        RoutedModel(variant="v", model="openai:m", base_url="http://10.9.9.9/v1"),
        RoutedModel(variant="w", model="openai:m", base_url=LOCAL),
    ]
    route = Route(require_auth=False)
    declared = settings.model_copy(update={"allowed_base_urls": [LOCAL]})
    (issue,) = route_check(route, models, declared).issues
    assert (issue.variant, issue.reason) == ("v", "base_url_not_allowed"), issue
    blocked = route_check(Route(require_auth=False, block=["http://10."]), models, declared)
    assert [i.reason for i in blocked.issues] == ["base_url_blocked", "base_url_not_allowed"]
