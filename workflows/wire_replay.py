"""Wire replay: what a run asks for (``WireReplay``) and the key a recorded exchange is found by.

A run whose ``calls.replay`` names a recorded run answers every model call from that run's raw
events instead of the provider (the cache lives in ``activities/wire_cache.py``). Pure: pydantic,
hashlib and json only, so the workflow side can carry the option and tests can hash by hand.

The key of one exchange is the sha256 of a canonical JSON of the wire request's
``(model, messages, temperature, max_tokens, response_format)`` plus the seed of the run that
made it (a campaign cell's seed). The seed is part of the key because the same prompt under two
seeds is two different samples: a simulated answer is drawn from the seed, and a real provider
sampled twice (or was sent the seed). Without it a replay of seed 1 would be answered with seed
0's recording, the cells of one scenario would collapse into copies of each other, and the
paired statistics of the report would change: a replay must reproduce the pairs, not merge them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, field_validator

from workflows.inputs import StrictModel
from workflows.run_ids import check_run_id

__all__ = [
    "KEY_FIELDS",
    "REPLAY_CLOSED_STATUS",
    "MissPolicy",
    "WireReplay",
    "canonical_request",
    "wire_key",
]

MissPolicy = Literal["throw", "fail-closed", "network"]
KEY_FIELDS = ("model", "messages", "temperature", "max_tokens", "response_format")
REPLAY_CLOSED_STATUS = 599
"""The synthetic HTTP status a ``fail-closed`` miss answers with (no real server sends it)."""


class WireReplay(StrictModel):
    """Answer this run's model calls from a recorded run (part of the input, never a worker
    setting, so every worker that runs or replays the workflow routes its calls the same way)."""

    run_id: str = Field(
        description="the recorded run: a campaign run id (all its cells) or any run's id; read "
        "from the worker's run store or a directory it declares in replay_dirs, never a path"
    )
    on_miss: MissPolicy = Field(
        default="throw",
        description="no recorded exchange for a call: throw (fail it, code provider.replay_miss), "
        "fail-closed (a synthetic HTTP 599 the run records as a failure), network (ask the "
        "provider)",
    )

    @field_validator("run_id")
    @classmethod
    def _run_id(cls, value: str) -> str:
        return check_run_id(value)


def canonical_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """The keyed fields of a wire request body, provider shapes folded into one.

    A separate ``system`` field (the Messages API) becomes the first message, as chat
    completions send it, so one rule fits every provider. Absent fields are ``None``.
    """
    messages = list(body.get("messages") or [])
    system = body.get("system")
    if system:
        messages.insert(0, {"role": "system", "content": system})
    return {
        "model": body.get("model"),
        "messages": messages,
        "temperature": body.get("temperature"),
        "max_tokens": body.get("max_tokens"),
        "response_format": body.get("response_format"),
    }


def wire_key(body: Mapping[str, Any], seed: int) -> str:
    """sha256 hex of the canonical request plus the run's seed (see the module docstring)."""
    text = json.dumps(
        {"request": canonical_request(body), "seed": seed},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(text.encode()).hexdigest()
