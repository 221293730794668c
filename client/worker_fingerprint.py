"""What a worker serves with, as one short digest, and the task queue that digest names.

Embedded runs go to a queue of their configuration's own (``configuration_queue``): only a
worker that loaded that configuration polls it, so a call never lands on a worker that lacks the
provider, key or allowed URL its command was given, whichever directory's command started
which worker. Workers of different configurations serve side by side, each on its own queue.
"""

from __future__ import annotations

import hashlib
import json

from activities.config import Settings, read_secret

__all__ = ["DIGEST_CHARS", "configuration_queue", "for_configuration", "worker_fingerprint"]

DIGEST_CHARS = 12
"""Hex digits of the fingerprint a configuration's queue carries: 48 bits, enough that two
configurations of one home never meet on a queue by chance."""


def worker_fingerprint(settings: Settings) -> str:
    """A digest of the effective configuration a worker loads (every setting, the file's path
    left out, so the same content anywhere is the same worker) and of the secrets it would read.

    Secrets enter only as a digest inside this digest: a rotated key is a new configuration (an
    old worker would send the old key), yet nothing of a key can be read back from the result.
    """
    # The server's idle period is the CLI's: it changes nothing a worker does. The task queue
    # is named after this digest, so it cannot be part of it.
    # Where a worker serves its metrics changes nothing it does to a run either.
    skipped = {"config_file", "temporal_address", "server_idle_s", "task_queue", "metrics_bind"}
    config = settings.model_dump(mode="json", exclude=skipped)
    names = {e.api_key_env for e in settings.providers.values() if e.api_key_env}
    names |= {name for e in settings.providers.values() for name in e.env}
    names |= {n.url_env for n in settings.notifiers.values() if n.url_env}
    names.add(settings.temporal_api_key_env)
    # A rotated keyring is a new configuration too: a lingering worker without the new key
    # would fail every run started with it (encryption.key_unknown).
    names.add(settings.keyring_env)
    secrets = {
        name: hashlib.sha256(value.encode()).hexdigest() if (value := read_secret(name)) else None
        for name in sorted(names)
    }
    if settings.keyring_file is not None:
        try:
            keyring = settings.keyring_file.expanduser().read_bytes()
        except OSError:
            keyring = b""  # the worker refuses to start with it, naming the file
        secrets["keyring_file"] = hashlib.sha256(keyring).hexdigest()
    text = json.dumps({"config": config, "secrets": secrets}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def configuration_queue(settings: Settings) -> str:
    """``<task queue>.<digest>``: the embedded task queue of ``settings``' configuration (the
    settings' own queue when it already is that one)."""
    suffix = f".{worker_fingerprint(settings)[:DIGEST_CHARS]}"
    if settings.task_queue.endswith(suffix):
        return settings.task_queue
    return f"{settings.task_queue}{suffix}"


def for_configuration(settings: Settings) -> Settings:
    """``settings`` on their configuration's queue, for the embedded server; a cluster's queue is
    the one configured (its workers are the operator's, started with that queue)."""
    if settings.temporal_address:
        return settings
    queue = configuration_queue(settings)
    if queue == settings.task_queue:
        return settings
    return settings.model_copy(update={"task_queue": queue})
