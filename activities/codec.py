"""Payload encryption at rest: an AES-256-GCM ``PayloadCodec`` over a keyring.

Every client and worker builds its data converter with this codec when a keyring is configured
(``keyring_file`` or the variable named by ``keyring_env``; see docs/security.md): each payload
is encrypted with the keyring's newest key under a fresh random 96-bit nonce, and its metadata
names the key, so any key still listed decrypts it and keys rotate without re-encrypting
history. Payloads that are not ours (a history written before encryption was turned on) pass
through decode unchanged, which keeps old runs readable and replayable.

An unknown key id or a payload that does not authenticate raises a non-retryable
``ApplicationError`` carrying its code: the SDK fails the run with it instead of retrying the
workflow task for ever.

Outside ``workflows/``: the sandbox refuses ``cryptography``'s native module.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec
from temporalio.exceptions import ApplicationError

from activities.config import Settings, read_secret
from activities.errors import ConfigError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = [
    "ENCODING",
    "KEY_ID_METADATA",
    "EncryptionCodec",
    "Keyring",
    "keyring_from_settings",
    "parse_keyring",
]

ENCODING = b"binary/encrypted"
KEY_ID_METADATA = "encryption-key-id"
NONCE_BYTES = 12
KEY_BYTES = 32
KEY_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


@dataclass(frozen=True)
class Keyring:
    """Key ids to 32-byte keys, in the order listed: the last one is the newest."""

    keys: dict[str, bytes]

    @property
    def newest(self) -> str:
        return next(reversed(self.keys))


def parse_keyring(text: str, where: str) -> Keyring:
    """``KEY_ID=BASE64`` entries, one a line (or comma-separated), ``#`` comments, oldest
    first; each key 32 bytes (``openssl rand -base64 32``)."""
    keys: dict[str, bytes] = {}
    for number, raw in enumerate(re.split(r"[\n,]", text), start=1):
        entry = raw.strip()
        if not entry or entry.startswith("#"):
            continue
        key_id, sep, value = entry.partition("=")
        key_id = key_id.strip()
        if not sep or not KEY_ID.fullmatch(key_id):
            raise _invalid(
                where,
                f"entry {number} is not KEY_ID=BASE64 with a key id of letters, digits, "
                "'_', '.' or '-' (at most 64)",
            )
        try:
            key = base64.b64decode(value.strip(), validate=True)
        except binascii.Error:
            key = b""
        if len(key) != KEY_BYTES:
            raise _invalid(
                # Named by its place, not its id: a bare key pasted without one parses as the id.
                where,
                f"entry {number}'s key is not {KEY_BYTES} bytes of base64 (a 256-bit AES key)",
            )
        if key_id in keys:
            raise _invalid(where, f"entry {number}: key id {key_id!r} is listed twice")
        keys[key_id] = key
    if not keys:
        raise _invalid(where, "it lists no key")
    return Keyring(keys)


def _invalid(where: str, rule: str) -> ConfigError:
    return ConfigError(
        "encryption.keyring_invalid",
        f"keyring {where}: {rule}: write one KEY_ID=BASE64 line a key, newest last "
        "(a key: `openssl rand -base64 32`)",
    )


def keyring_from_settings(settings: Settings) -> Keyring | None:
    """The configured keyring, or None (encryption off): ``keyring_file``, else the variable
    ``keyring_env`` names (from the environment or ``$PONDER_SECRETS_FILE``)."""
    if settings.keyring_file is not None:
        path = Path(settings.keyring_file).expanduser()
        try:
            text = path.read_text()
        except OSError as exc:
            raise ConfigError(
                "encryption.keyring_invalid",
                f"keyring_file {path} cannot be read ({exc.strerror}): fix its path or permissions",
            ) from exc
        return parse_keyring(text, str(path))
    value = read_secret(settings.keyring_env)
    return parse_keyring(value, f"${settings.keyring_env}") if value else None


class EncryptionCodec(PayloadCodec):
    def __init__(self, keyring: Keyring) -> None:
        # Imported here: a process with encryption off never pays for loading the cipher.
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        self._ciphers: dict[str, AESGCM] = {
            key_id: AESGCM(key) for key_id, key in keyring.keys.items()
        }
        self._newest = keyring.newest

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self._encrypt(p) for p in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self._decrypt(p) for p in payloads]

    def _encrypt(self, payload: Payload) -> Payload:
        nonce = os.urandom(NONCE_BYTES)
        # The key id is authenticated too: a payload relabelled to another key fails to decrypt.
        sealed = self._ciphers[self._newest].encrypt(
            nonce, payload.SerializeToString(), self._newest.encode()
        )
        return Payload(
            metadata={"encoding": ENCODING, KEY_ID_METADATA: self._newest.encode()},
            data=nonce + sealed,
        )

    def _decrypt(self, payload: Payload) -> Payload:
        if payload.metadata.get("encoding") != ENCODING:
            return payload
        key_id = payload.metadata.get(KEY_ID_METADATA, b"").decode(errors="replace")
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            raise ApplicationError(
                f"payload encrypted with key {key_id[:64]!r}, which this keyring does not list "
                f"(it lists {', '.join(sorted(self._ciphers))}): add that key to the keyring "
                "of every worker and client (keep old keys listed until no history needs them)",
                type="encryption.key_unknown",
                non_retryable=True,
            )
        from cryptography.exceptions import InvalidTag
        from google.protobuf.message import DecodeError

        data = payload.data
        decoded = Payload()
        try:
            # Anyone who may start a workflow can send this encoding: a nonce too short for
            # AES-GCM (ValueError) must fail the run with a code like any other forgery.
            plain = cipher.decrypt(data[:NONCE_BYTES], data[NONCE_BYTES:], key_id.encode())
            decoded.ParseFromString(plain)
        except (InvalidTag, ValueError, DecodeError):
            raise ApplicationError(
                f"payload under key {key_id[:64]!r} does not authenticate: it was altered, or the "
                "keyring's key of that id is not the one that encrypted it: restore that key",
                type="encryption.payload_invalid",
                non_retryable=True,
            ) from None
        return decoded
