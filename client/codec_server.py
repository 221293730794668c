"""``ponder codec-server``: the keyring's codec over HTTP, for ``temporal workflow show
--codec-endpoint`` and the Temporal Web UI.

Temporal's codec server protocol: ``POST /decode`` (and ``/encode``), also under a namespace
segment (``/NAMESPACE/decode``), with a body of ``{"payloads": [...]}`` in protobuf JSON (bytes
as base64), answered in the same shape. Every request needs ``Authorization: Bearer TOKEN``
(the token from the variable ``codec_token_env`` names); the browser's CORS preflight, which
carries no credentials, is answered for the allowed UI origins only.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import click

from activities.errors import ConfigError

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from activities.codec import EncryptionCodec

__all__ = ["MAX_BODY_BYTES", "codec_app", "codec_server"]

MAX_BODY_BYTES = 8 * 1024 * 1024
"""A history page the UI asks to decode stays far below this; a bigger body is refused unread."""
MIN_TOKEN_CHARS = 16
DEFAULT_UI_ORIGINS = ("http://localhost:8233", "http://127.0.0.1:8233")
"""Where ``temporal server start-dev`` serves its Web UI by default."""


def codec_app(codec: EncryptionCodec, *, token: str, ui_origins: list[str]) -> Starlette:
    """The ASGI app: ``/decode`` and ``/encode`` behind the bearer check, inside CORS."""
    from google.protobuf import json_format
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.cors import CORSMiddleware
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route
    from temporalio.api.common.v1 import Payloads
    from temporalio.exceptions import ApplicationError

    expected = f"Bearer {token}".encode()

    def refusal(request: Request) -> Response | None:
        given = request.headers.get("authorization", "").encode()
        if not hmac.compare_digest(given, expected):
            return JSONResponse(
                {"message": "missing or wrong bearer token: send Authorization: Bearer TOKEN"},
                status_code=401,
                headers={"www-authenticate": "Bearer"},
            )
        declared = request.headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY_BYTES):
            return JSONResponse(
                {"message": f"a body over {MAX_BODY_BYTES} bytes is refused: send fewer payloads"},
                status_code=413,
            )
        return None

    def route(encode: bool) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            refused = refusal(request)
            if refused is not None:
                return refused
            body = await request.body()
            if len(body) > MAX_BODY_BYTES:
                return JSONResponse({"message": "body too large"}, status_code=413)
            payloads = Payloads()
            try:
                json_format.Parse(body, payloads)
            except (json_format.ParseError, UnicodeDecodeError) as exc:
                return JSONResponse(
                    {"message": f'body is not {{"payloads": [...]}} in protobuf JSON ({exc})'},
                    status_code=400,
                )
            try:
                if encode:
                    done = await codec.encode(payloads.payloads)
                else:
                    done = await codec.decode(payloads.payloads)
            except ApplicationError as exc:
                return JSONResponse({"code": exc.type, "message": exc.message}, status_code=422)
            answer = json_format.MessageToJson(Payloads(payloads=done))
            return Response(answer, media_type="application/json")

        return endpoint

    routes = [
        Route(path, route(verb == "encode"), methods=["POST"])
        for verb in ("decode", "encode")
        for path in (f"/{verb}", f"/{{namespace}}/{verb}")
    ]
    cors = Middleware(
        CORSMiddleware,
        allow_origins=ui_origins,
        allow_methods=["POST"],
        allow_headers=["Authorization", "Content-Type", "X-Namespace"],
        allow_credentials=True,
    )
    return Starlette(routes=routes, middleware=[cors])


@click.command("codec-server")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=int, default=8081, show_default=True, help="Port to listen on.")
@click.option(
    "--ui-origin",
    "ui_origins",
    multiple=True,
    metavar="URL",
    help="A Web UI origin the browser may call from (repeatable; default: the dev server's "
    "UI at http://localhost:8233).",
)
@click.pass_context
def codec_server(ctx: click.Context, host: str, port: int, ui_origins: tuple[str, ...]) -> None:
    """Decrypt payloads for `temporal workflow show --codec-endpoint` and the Web UI."""
    from activities.codec import EncryptionCodec, keyring_from_settings
    from activities.config import read_secret
    from client.command_settings import command_settings

    settings = command_settings(ctx)
    keyring = keyring_from_settings(settings)
    if keyring is None:
        raise ConfigError(
            "encryption.keyring_invalid",
            f"no keyring configured: set keyring_file in [ponder] of ponder.toml or "
            f"${settings.keyring_env}, as the workers have it",
        )
    token = read_secret(settings.codec_token_env)
    if token is None or len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(
            "encryption.token_missing",
            f"${settings.codec_token_env}: the codec server needs a bearer token of at least "
            f"{MIN_TOKEN_CHARS} characters: set it (e.g. to `openssl rand -hex 24`) and give it "
            "to clients (`temporal ... --codec-auth 'Bearer TOKEN'`)",
        )
    if not 0 < port < 65536:
        raise ConfigError("option.invalid", f"--port {port}: give a port 1-65535")
    import uvicorn

    from worker.startup import imports_done

    imports_done()  # a server: it may answer for hours
    app = codec_app(
        EncryptionCodec(keyring), token=token, ui_origins=list(ui_origins or DEFAULT_UI_ORIGINS)
    )
    click.echo(f"ponder codec server at http://{host}:{port}", err=True)
    uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).run()
