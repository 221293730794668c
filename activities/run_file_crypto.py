"""Run files encrypted at rest: ``encrypt_run_files`` seals what ponder writes under ``runs_dir``
with the payload keyring (AES-256-GCM, ``activities/codec.py``; docs/security.md).

The format is one *record* a line, so the run store's line arithmetic holds unchanged::

    ponder-sealed/1 <key id> <base64 of a 96-bit nonce, then the ciphertext and its tag>

A ``.jsonl`` file (a trace, the events, the raw events) is sealed a line at a time: each line
of the plain file becomes one record, so an append still names how many lines came before, a
retried append cuts back to the same lines, and a torn last line stays the last line. Any other
file (a summary, a report) is one record. The key id is authenticated with the ciphertext
(relabelling a record to another key fails), the newest key seals, and any key the keyring
still lists opens: rotation re-encrypts nothing.

Readers never parse records themselves: they call :func:`read_run_bytes` / :func:`read_run_text`
(or :func:`open_run_bytes` on bytes they read), which return a plain file as it is and open a
sealed one with the keyrings this process knows. Those are the keyrings of the settings it
loaded (``load_settings`` and the worker name them with :func:`read_with`; a keyring is read
only when a sealed record is met, so a command over plain runs never loads one). A record no
known key opens is ``encryption.run_file_locked``; one that does not authenticate,
``encryption.run_file_invalid``: neither is a ValueError, which readers of a half-written run
skip, so a locked run is never mistaken for an empty one.

The module imports no Temporal SDK (``ponder report`` reads through it): the cipher and the
keyring's loader are imported when a sealed file first needs them.
"""

from __future__ import annotations

import base64
import binascii
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from activities.errors import ConfigError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    from activities.codec import Keyring
    from activities.config import Settings

__all__ = [
    "MAGIC",
    "RUN_FILES_NEED_KEYRING",
    "RUN_FILE_INVALID",
    "RUN_FILE_LOCKED",
    "RunFileCipher",
    "RunFileUnreadable",
    "is_sealed_run",
    "open_run_bytes",
    "read_run_bytes",
    "read_run_text",
    "read_with",
    "run_dir_cipher",
    "run_file_cipher",
]

MAGIC = b"ponder-sealed/1 "
RUN_FILES_NEED_KEYRING = "encryption.run_files_need_keyring"
RUN_FILE_LOCKED = "encryption.run_file_locked"
RUN_FILE_INVALID = "encryption.run_file_invalid"
NONCE_BYTES = 12
LINE_SEALED = (".jsonl",)
"""Files sealed a line at a time (appended to, counted in lines); any other is one record."""
SEALED_SAMPLES = ("summary.json", "trace.jsonl", "events.jsonl", "records.jsonl", "cost.json")
"""A run's files that say whether it is sealed: the first of them it holds."""


class RunFileUnreadable(ConfigError):
    """A sealed run file this process cannot open: its key is not known here (locked), or a
    record does not authenticate (invalid)."""


class RunFileCipher:
    """Seals run files with a keyring's newest key (the worker's, with ``encrypt_run_files``)."""

    def __init__(self, keyring: Keyring) -> None:
        self.key_id = keyring.newest
        self._cipher = _cipher(keyring.keys[self.key_id])
        read_keyring(keyring)  # what this process seals, it can read back

    def seal(self, name: str, data: bytes) -> bytes:
        """``data``, the plain content of run file ``name``, as records."""
        if name.endswith(LINE_SEALED):
            return self.seal_lines(data)
        return self._record(data) if data else b""

    def seal_lines(self, data: bytes) -> bytes:
        """``data`` sealed a line at a time: one record for each of its lines."""
        return b"".join(self._record(line) for line in data.splitlines(keepends=True))

    def _record(self, plain: bytes) -> bytes:
        nonce = os.urandom(NONCE_BYTES)
        sealed = self._cipher.encrypt(nonce, plain, self.key_id.encode())
        return b"%s%s %s\n" % (MAGIC, self.key_id.encode(), base64.b64encode(nonce + sealed))


def run_file_cipher(settings: Settings) -> RunFileCipher | None:
    """The cipher run files are written with: None unless ``encrypt_run_files``, which needs a
    keyring (refused at start, ``encryption.run_files_need_keyring``, without one)."""
    read_with(settings)
    if not settings.encrypt_run_files:
        return None
    from activities.codec import keyring_from_settings

    keyring = keyring_from_settings(settings)
    if keyring is None:
        raise ConfigError(
            RUN_FILES_NEED_KEYRING,
            "encrypt_run_files is on but no keyring is configured: set keyring_file (or the "
            f"variable {settings.keyring_env}) to a keyring (docs/security.md), or turn "
            "encrypt_run_files off",
        )
    return RunFileCipher(keyring)


def run_dir_cipher(settings: Settings, run_dir: Path) -> RunFileCipher | None:
    """The cipher a command rewriting files of ``run_dir`` (``ponder report``) writes with:
    the settings' (``encrypt_run_files``), else the keyring's when the run's files are sealed,
    so re-rendering a sealed run never leaves its report plain."""
    cipher = run_file_cipher(settings)
    if cipher is not None or not is_sealed_run(run_dir):
        return cipher
    from activities.codec import keyring_from_settings

    keyring = keyring_from_settings(settings)
    if keyring is None:
        raise RunFileUnreadable(
            RUN_FILE_LOCKED,
            f"run {run_dir.name}'s files are encrypted and no keyring is configured here: "
            "configure the keyring that wrote them (keyring_file or $PONDER_KEYRING)",
        )
    return RunFileCipher(keyring)


def is_sealed_run(run_dir: Path) -> bool:
    """Whether ``run_dir``'s main record (summary, trace or events) is sealed."""
    for name in SEALED_SAMPLES:
        try:
            with (run_dir / name).open("rb") as f:
                return f.read(len(MAGIC)) == MAGIC
        except OSError:
            continue
    return False


_lock = threading.Lock()
_sources: dict[tuple[str | None, str], Settings | None] = {}
"""Where this process's keyrings come from (``keyring_file``, ``keyring_env``) -> the settings
to read it with, None once read."""
_keys: dict[str, list[AESGCM]] = {}
"""Key id -> the ciphers of every known key of that id (two keyrings may reuse an id)."""
_known: set[tuple[str, bytes]] = set()


def read_with(settings: Settings) -> None:
    """Let this process open run files sealed with ``settings``' keyring (read only when a
    sealed record needs it: no file read, no import now)."""
    source = (str(settings.keyring_file) if settings.keyring_file else None, settings.keyring_env)
    with _lock:
        if source not in _sources:
            _sources[source] = settings


def read_keyring(keyring: Keyring) -> None:
    """Let this process open run files sealed with any key of ``keyring``."""
    with _lock:
        for key_id, key in keyring.keys.items():
            if (key_id, key) not in _known:
                _known.add((key_id, key))
                _keys.setdefault(key_id, []).append(_cipher(key))


def _load_sources() -> None:
    """Read every keyring named by ``read_with`` and not read yet."""
    from activities.codec import keyring_from_settings

    with _lock:
        pending = [settings for settings in _sources.values() if settings is not None]
        _sources.update(dict.fromkeys(_sources))
    for settings in pending:
        keyring = keyring_from_settings(settings)
        if keyring is not None:
            read_keyring(keyring)


def read_run_bytes(path: Path) -> bytes:
    """Run file ``path``'s plain content (opened if sealed)."""
    return open_run_bytes(Path(path).read_bytes(), path)


def read_run_text(path: Path) -> str:
    """Run file ``path``'s plain content as UTF-8 text (opened if sealed)."""
    return read_run_bytes(path).decode("utf-8")


def open_run_bytes(data: bytes, where: object) -> bytes:
    """``data``, read from run file ``where``, plain: returned as it is unless it holds sealed
    records, which are opened (lines written before the option was turned on stay as they
    were). A last record cut short (a writer stopped mid-line) is left as it is, so readers
    that skip a torn last line still do."""
    if not data.startswith(MAGIC) and b"\n" + MAGIC not in data:
        return data
    lines = data.splitlines(keepends=True)
    out = []
    for number, line in enumerate(lines, start=1):
        if not line.startswith(MAGIC) or (not line.endswith(b"\n") and number == len(lines)):
            out.append(line)
        else:
            out.append(_open(line, where, number))
    return b"".join(out)


def _open(line: bytes, where: object, number: int) -> bytes:
    key_id, _, body = line[len(MAGIC) :].strip().partition(b" ")
    name = key_id.decode("ascii", errors="replace")[:64]
    ciphers = _keys.get(name)
    if ciphers is None:
        _load_sources()
        ciphers = _keys.get(name)
    if ciphers is None:
        known = ", ".join(sorted(_keys)) or "none: no keyring is configured"
        raise RunFileUnreadable(
            RUN_FILE_LOCKED,
            f"run file {where} is encrypted with key {name!r}, which this process's keyring "
            f"does not list (it lists {known}): configure the keyring that wrote it "
            "(keyring_file or $PONDER_KEYRING, keeping old keys listed) where you read it",
        )
    from cryptography.exceptions import InvalidTag

    try:
        sealed = base64.b64decode(body, validate=True)
    except binascii.Error:
        sealed = b""
    for cipher in ciphers:
        try:
            return cipher.decrypt(sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], key_id)
        except (InvalidTag, ValueError):
            continue
    raise RunFileUnreadable(
        RUN_FILE_INVALID,
        f"run file {where}, line {number}, does not authenticate under key {name!r}: it was "
        "altered, or the keyring's key of that id is not the one that wrote it: restore that key",
    )


def _cipher(key: bytes) -> AESGCM:
    # Imported here: a process whose run files are plain never loads the cipher.
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    return AESGCM(key)
