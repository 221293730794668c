"""The payload converter every client and worker uses (worker/connect.py), as pure code."""

from __future__ import annotations

import dataclasses

from temporalio.api.common.v1 import Payload
from temporalio.common import RawValue

from activities.config import load_settings
from worker.connect import PonderPayloadConverter, data_converter
from workflows.model_types import ModelRequest

JSON = b"json/plain"


def test_every_instance_shares_one_json_converter_and_its_type_adapters(tmp_path) -> None:
    # The SDK builds a payload converter for each payload it binds to external storage (a copy
    # of the data converter, as dataclasses.replace makes here); each used to start with an
    # empty type-adapter cache and build the adapter of every typed decode again.
    converter = data_converter(load_settings(home=str(tmp_path)))
    first = PonderPayloadConverter()
    copy = dataclasses.replace(converter)
    assert copy.payload_converter is not converter.payload_converter
    assert PonderPayloadConverter().converters[JSON] is first.converters[JSON]
    assert list(PonderPayloadConverter().converters) == list(first.converters)

    request = ModelRequest(model="sim:default", prompt="hi")
    [payload] = first.to_payloads([request])
    json_converter = first.converters[JSON]
    adapters = json_converter._type_adapter  # type: ignore[attr-defined]
    assert PonderPayloadConverter().from_payloads([payload], [ModelRequest]) == [request]
    misses = adapters.cache_info().misses
    assert PonderPayloadConverter().from_payloads([payload], [ModelRequest]) == [request]
    assert adapters.cache_info().misses == misses  # the second instance reused the adapter


def test_a_shared_instance_still_turns_an_undecodable_untyped_payload_into_its_raw_value() -> None:
    PonderPayloadConverter()  # the first instance made the shared converters
    broken = Payload(metadata={"encoding": JSON}, data=b'{"question": ')
    unknown = Payload(metadata={"encoding": b"binary/rot13"}, data=b"x")
    good = Payload(metadata={"encoding": JSON}, data=b'{"a": 1}')
    values = PonderPayloadConverter().from_payloads([broken, unknown, good])
    assert [type(v) for v in values] == [RawValue, RawValue, dict]
    assert values[2] == {"a": 1}
