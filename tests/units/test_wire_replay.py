"""Direct tests of wire replay's key: the canonical request and its hash, computed by hand."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

import pytest
from pydantic import ValidationError

from workflows.wire_replay import REPLAY_CLOSED_STATUS, WireReplay, canonical_request, wire_key


def by_hand(request: Mapping[str, object], seed: int) -> str:
    text = json.dumps({"request": request, "seed": seed}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def test_the_canonical_request_keeps_the_keyed_fields_and_nothing_else() -> None:
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "q"}],
        "temperature": 0.5,
        "max_tokens": 9,
        "response_format": {"type": "json_object"},
        "stream": False,
    }
    assert canonical_request(body) == {k: v for k, v in body.items() if k != "stream"}


def test_absent_fields_are_none_and_messages_an_empty_list() -> None:
    assert canonical_request({}) == {
        "model": None,
        "messages": [],
        "temperature": None,
        "max_tokens": None,
        "response_format": None,
    }


def test_a_system_field_becomes_the_first_message_without_changing_the_body() -> None:
    messages = [{"role": "user", "content": "q"}]
    body = {"model": "m", "system": "be brief", "messages": messages}
    assert canonical_request(body)["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "q"},
    ]
    assert messages == [{"role": "user", "content": "q"}]
    assert canonical_request({"system": "", "messages": messages})["messages"] == messages


def test_the_key_is_the_sha256_of_the_sorted_compact_request_and_seed() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "é"}], "max_tokens": 3}
    request = {
        "model": "m",
        "messages": [{"role": "user", "content": "é"}],
        "temperature": None,
        "max_tokens": 3,
        "response_format": None,
    }
    text = json.dumps(
        {"request": request, "seed": 7}, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    assert wire_key(body, 7) == hashlib.sha256(text.encode()).hexdigest()
    assert wire_key(body, 7) != by_hand(request, 7)  # the é is kept as UTF-8, not escaped
    assert wire_key(body, 8) != wire_key(body, 7)


def test_a_replay_names_a_valid_run_and_throws_on_a_miss_by_default() -> None:
    assert REPLAY_CLOSED_STATUS == 599
    replay = WireReplay(run_id="camp-1")
    assert (replay.run_id, replay.on_miss) == ("camp-1", "throw")
    with pytest.raises(ValidationError, match="must match"):
        WireReplay(run_id="../x")
