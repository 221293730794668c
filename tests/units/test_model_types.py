"""Direct tests of the model-call vocabulary: what a request and a call serialize, the call's
ids, and token sums."""

from __future__ import annotations

from workflows.ledger.types import LedgerDraw
from workflows.model_types import CallModelInput, ModelRequest, Usage


def test_a_request_serializes_only_the_fields_it_sets() -> None:
    assert ModelRequest(model="sim:a", prompt="p").model_dump() == {
        "model": "sim:a",
        "prompt": "p",
        "role": "ask",
        "seed": 0,
    }


def test_a_request_serializes_every_field_it_sets() -> None:
    fields = {
        "model": "sim:a",
        "prompt": "p",
        "system": "s",
        "role": "judge",
        "temperature": 0.0,
        "max_output_tokens": 0,
        "json_mode": True,
        "seed": 3,
        "tag": "",
        "base_url": "http://127.0.0.1:1",
        "script": "out",
        "workspace": "/w",
        "item": "i",
    }
    request = ModelRequest.model_validate(fields)
    assert request.model_dump() == fields
    assert ModelRequest.model_validate(request.model_dump(mode="json")) == request


def test_a_call_serializes_without_its_unset_fields_and_names_itself() -> None:
    call = CallModelInput(
        run_id="r", phase="judge", index=4, request=ModelRequest(model="sim:a", prompt="p")
    )
    dumped = call.model_dump()
    assert set(dumped) == {"run_id", "phase", "index", "attempt", "request"}
    assert call.call_id == "r/judge/4/0"
    assert call.call_key == "judge/4/0"
    retried = call.model_copy(update={"attempt": 2})
    assert retried.call_id == "r/judge/4/2"
    assert retried.call_key == "judge/4/2"


def test_a_call_serializes_the_optional_fields_it_sets() -> None:
    draw = LedgerDraw.model_validate({"name": "team", "token": "0" * 32})
    call = CallModelInput(
        run_id="r",
        phase="p",
        index=0,
        request=ModelRequest(model="sim:a", prompt="p"),
        chain="first",
        read_tokens={},
        ledger=draw,
    )
    dumped = call.model_dump()
    assert dumped["chain"] == "first"
    assert dumped["read_tokens"] == {}
    assert dumped["ledger"] == draw.model_dump()
    assert "replay" not in dumped


def test_usage_adds_field_by_field_and_totals_input_and_output() -> None:
    a = Usage(input_tokens=1, output_tokens=20, cache_hit_tokens=300, cache_miss_tokens=4000)
    b = Usage(input_tokens=50000, output_tokens=600000, cache_hit_tokens=7, cache_miss_tokens=8)
    assert a + b == Usage(
        input_tokens=50001,
        output_tokens=600020,
        cache_hit_tokens=307,
        cache_miss_tokens=4008,
    )
    assert a.total_tokens == 21
    assert Usage().total_tokens == 0
