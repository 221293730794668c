"""Streamable HTTP for ``ponder mcp --http HOST:PORT``, behind a guard.

The guard answers from the request line and headers alone, before the body is read: a
``Host`` that is not this server's (DNS rebinding), a foreign ``Origin`` (a web page in a
browser), a POST whose content type is not JSON, or a missing/wrong bearer token. A bind off
loopback needs ``--allow-remote`` and a token from ``PONDER_MCP_TOKEN``.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from activities.errors import ConfigError

__all__ = ["TOKEN_ENV", "Guard", "Listen", "is_loopback", "parse_listen"]

TOKEN_ENV = "PONDER_MCP_TOKEN"
PATH = "/mcp"


@dataclass(frozen=True)
class Listen:
    host: str
    port: int

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{PATH}"


def parse_listen(value: str) -> Listen:
    """``HOST:PORT``, ``[V6]:PORT``, ``:PORT`` or ``PORT``; the host defaults to 127.0.0.1."""
    text = value.strip()
    host, port = "127.0.0.1", text
    if text.startswith("["):
        inner, sep, rest = text[1:].partition("]")
        if not sep or not rest.startswith(":"):
            raise ConfigError(
                "option.invalid", f"--http {value!r}: write an IPv6 host as [::1]:8765"
            )
        host, port = inner, rest[1:]
    elif ":" in text:
        head, _, port = text.rpartition(":")
        host = head or host
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(
            "option.invalid",
            f"--http {value!r}: give HOST:PORT with a port 1-65535, e.g. 127.0.0.1:8765",
        )
    return Listen(host, int(port))


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def allowed_hosts(listen: Listen, extra: Iterable[str] = ()) -> set[str]:
    names = {listen.host, *extra}
    if is_loopback(listen.host):
        names |= {"127.0.0.1", "localhost", "::1"}
    out = set()
    for name in names:
        bracketed = f"[{name}]" if ":" in name and not name.startswith("[") else name
        out.add(f"{bracketed}:{listen.port}")
    return out


class Guard:
    """Refuse a request on its headers, before the app (or anyone) reads its body."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        hosts: set[str],
        origins: set[str] | None = None,
        token: str | None = None,
    ) -> None:
        self.app = app
        self.hosts = {h.lower() for h in hosts}
        self.origins = (
            {o.lower() for o in origins}
            if origins is not None
            else {f"{scheme}://{h}" for h in self.hosts for scheme in ("http", "https")}
        )
        self.token = token

    def _refusal(self, scope: Scope) -> PlainTextResponse | None:
        headers = Headers(scope=scope)
        host = headers.get("host", "").lower()
        if host not in self.hosts:
            return PlainTextResponse(
                f"host {host or '(none)'} is not this server's: refused (DNS rebinding guard)",
                status_code=421,
            )
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in self.origins:
            return PlainTextResponse(f"origin {origin} is not allowed", status_code=403)
        if scope.get("method") == "POST":
            content_type = headers.get("content-type", "").split(";")[0].strip().lower()
            if content_type != "application/json":
                return PlainTextResponse(
                    f"content type {content_type or '(none)'} refused: send application/json",
                    status_code=415,
                )
        if self.token is not None:
            given = headers.get("authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {self.token}".encode()):
                return PlainTextResponse(
                    "missing or wrong bearer token: send Authorization: Bearer $PONDER_MCP_TOKEN",
                    status_code=401,
                    headers={"www-authenticate": "Bearer"},
                )
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self._refusal(scope)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)
