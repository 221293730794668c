"""What a worker serves with, as one short digest: two embedded workers on one task queue must
agree on it, or a call may land on a worker that lacks the provider its command was given."""

from __future__ import annotations

import hashlib
import json

from activities.config import Settings, read_secret

__all__ = ["worker_fingerprint"]


def worker_fingerprint(settings: Settings) -> str:
    """A digest of the effective configuration a worker loads (every setting, the file's path
    left out, so the same content anywhere is the same worker) and of the secrets it would read.

    Secrets enter only as a digest inside this digest: a rotated key is a new configuration (an
    old worker would send the old key), yet nothing of a key can be read back from the result.
    """
    # The server's idle period is the CLI's: it changes nothing a worker does.
    skipped = {"config_file", "temporal_address", "server_idle_s"}
    config = settings.model_dump(mode="json", exclude=skipped)
    names = {e.api_key_env for e in settings.providers.values() if e.api_key_env}
    names |= {name for e in settings.providers.values() for name in e.env}
    names |= {n.url_env for n in settings.notifiers.values() if n.url_env}
    names.add(settings.temporal_api_key_env)
    secrets = {
        name: hashlib.sha256(value.encode()).hexdigest() if (value := read_secret(name)) else None
        for name in sorted(names)
    }
    text = json.dumps({"config": config, "secrets": secrets}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
