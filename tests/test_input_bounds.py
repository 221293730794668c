"""Every number workflow input sets has a documented ceiling and is refused beyond it at decode
(``input.invalid``, naming the field), and an integer anywhere in an input must fit in 64 bits.

Pure: the decoders the workflows call, run directly (microseconds). The hostile reproductions
through the real ``temporal`` binary are in ``tests/hostile/test_sizes.py``.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from activities.config import Endpoint, Settings, load_settings
from activities.errors import ConfigError, TransportError
from activities.pricing import cost_usd
from activities.providers.base import CallContext
from activities.providers.openai import OpenAIProvider
from activities.providers.registry import resolve_model
from tests.fakes import openai_completion
from workflows import bounds
from workflows import sim_options as bounds_sim
from workflows.ask_types import AskInput
from workflows.campaign.document import CampaignDocument
from workflows.campaign.document import validate_value as validate_campaign
from workflows.inputs import InputInvalid, decode_json, out_of_range_integer
from workflows.model_types import ModelRequest, Price, Usage
from workflows.plan.run_types import ExtendPlanBudgetInput, PlanRunInput, ResolveGateInput
from workflows.plan.validate import validate_text as validate_plan
from workflows.sim_options import SimOptions
from workflows.tournament.profiles import Profile
from workflows.tournament.types import ExtendBudgetInput, TournamentInput

ASK = {"question": "q"}
TOURNAMENT = {"task": "t", "profile": "quick"}
PLAN = {"plan": {"schema": "ponder-plan/1", "steps": []}}
CAMPAIGN = {
    "schema": "ponder-campaign/1",
    "campaign_id": "c",
    "variants": [{"id": "v", "kind": "single", "config": {"model": "sim:default"}}],
    "scenarios": [{"id": "s", "task": "t", "scorer": {"kind": "exact", "expected": "x"}}],
}

# (model, base input, the field's path, its ceiling): the ceiling decodes, one more is refused.
CEILINGS: list[tuple[type[BaseModel], dict[str, Any], tuple[str, ...], int | float]] = [
    (AskInput, ASK, ("seed",), bounds.MAX_SEED),
    (AskInput, ASK, ("max_output_tokens",), bounds.MAX_OUTPUT_TOKENS),
    (TournamentInput, TOURNAMENT, ("seed",), bounds.MAX_SEED),
    (TournamentInput, TOURNAMENT, ("rank", "max_calls"), bounds.MAX_CALLS),
    (TournamentInput, TOURNAMENT, ("output_token_caps", "judge"), bounds.MAX_OUTPUT_TOKENS),
    (TournamentInput, TOURNAMENT, ("budget", "max_calls"), bounds.MAX_CALLS),
    (TournamentInput, TOURNAMENT, ("budget", "max_input_tokens"), bounds.MAX_BUDGET_TOKENS),
    (TournamentInput, TOURNAMENT, ("budget", "max_output_tokens"), bounds.MAX_BUDGET_TOKENS),
    (TournamentInput, TOURNAMENT, ("budget", "max_usd"), bounds.MAX_BUDGET_USD),
    (ExtendBudgetInput, {}, ("max_calls",), bounds.MAX_CALLS),
    (ExtendBudgetInput, {}, ("max_input_tokens",), bounds.MAX_BUDGET_TOKENS),
    (ExtendBudgetInput, {}, ("max_output_tokens",), bounds.MAX_BUDGET_TOKENS),
    (ExtendBudgetInput, {}, ("max_usd",), bounds.MAX_BUDGET_USD),
    (PlanRunInput, PLAN, ("seed",), bounds.MAX_SEED),
    (PlanRunInput, PLAN, ("budget", "calls"), bounds.MAX_CALLS),
    (PlanRunInput, PLAN, ("budget", "wall_ms"), bounds.MAX_WALL_MS),
    (PlanRunInput, PLAN, ("budget", "tokens"), bounds.MAX_BUDGET_TOKENS),
    (PlanRunInput, PLAN, ("budget", "usd"), bounds.MAX_BUDGET_USD),
    (ExtendPlanBudgetInput, {}, ("calls",), bounds.MAX_CALLS),
    (ExtendPlanBudgetInput, {}, ("wall_ms",), bounds.MAX_WALL_MS),
    (CampaignDocument, CAMPAIGN, ("budget", "max_calls"), bounds.MAX_CALLS),
    (CampaignDocument, CAMPAIGN, ("min_pairs",), 1_000_000),
]


def with_value(base: dict[str, Any], path: tuple[str, ...], value: object) -> str:
    doc = json.loads(json.dumps(base))
    target = doc
    for key in path[:-1]:
        target = target.setdefault(key, {})
    target[path[-1]] = value
    return json.dumps(doc)


@pytest.mark.parametrize(
    ("model", "base", "path", "ceiling"),
    CEILINGS,
    ids=[f"{m.__name__}.{'.'.join(p)}" for m, _, p, _ in CEILINGS],
)
def test_each_number_decodes_up_to_its_ceiling_and_is_refused_beyond(
    model: type[BaseModel], base: dict[str, Any], path: tuple[str, ...], ceiling: float
) -> None:
    decode_json(model, with_value(base, path, ceiling))
    beyond = ceiling * 2 if isinstance(ceiling, float) else ceiling + 1
    with pytest.raises(InputInvalid) as info:
        decode_json(model, with_value(base, path, beyond))
    assert info.value.code == "input.invalid"
    assert f"{'.'.join(path)}: Input should be less than or equal to" in info.value.message


@pytest.mark.parametrize(
    ("model", "raw", "needle"),
    [
        # Each of these once started, then failed 32 s later in an activity.
        (AskInput, '{"question":"q","seed":1e38}', "seed: "),
        (AskInput, '{"question":"q","seed":100000000000000000000000000000000000000}', "seed: "),
        (AskInput, '{"question":"q","max_output_tokens":1e30}', "max_output_tokens: "),
        (TournamentInput, json.dumps(TOURNAMENT | {"seed": 2**70}), "seed: "),
        (AskInput, '{"question":"q","seed":-1}', "seed: Input should be greater than or equal"),
    ],
)
def test_the_issues_integers_are_refused_at_decode(
    model: type[BaseModel], raw: str, needle: str
) -> None:
    with pytest.raises(InputInvalid) as info:
        decode_json(model, raw)
    assert needle in info.value.message


def test_an_integer_anywhere_must_fit_in_64_bits() -> None:
    # Plan arguments are free JSON: no field ceiling applies, the backstop does.
    raw = json.dumps(PLAN | {"args": {"n": [1, {"deep": 2**64}]}})
    with pytest.raises(InputInvalid) as info:
        decode_json(PlanRunInput, raw)
    assert info.value.message == (
        "PlanRunInput: args.n.1.deep: integer out of range: give one from -2**63 to "
        "2**63 - 1 (got 18446744073709551616)"
    )
    assert decode_json(PlanRunInput, json.dumps(PLAN | {"args": {"n": 2**63 - 1}}))
    with pytest.raises(InputInvalid, match=r"args\.n: integer out of range"):
        decode_json(PlanRunInput, json.dumps(PLAN | {"args": {"n": -(2**63) - 1}}))


def test_the_backstop_walks_deep_nesting_without_recursion() -> None:
    value: object = 2**80
    for _ in range(50_000):
        value = [value]
    assert out_of_range_integer({"a": value}) == ("a" + ".0" * 50_000, 2**80)
    assert out_of_range_integer({"a": [True, 3, "x", None, 1.5]}) is None


# -- prices ------------------------------------------------------------------------------------


@pytest.mark.parametrize("rate", [1e308, -1e308, -5.0, bounds.MAX_USD_PER_MTOK * 1.001])
@pytest.mark.parametrize("field", ["input", "output", "cache_hit", "long_context_output"])
def test_a_price_is_finite_non_negative_and_below_its_ceiling(rate: float, field: str) -> None:
    prices = {"openai:x": {"input": 1.0, "output": 1.0} | {field: rate}}
    with pytest.raises(InputInvalid) as info:
        decode_json(TournamentInput, json.dumps(TOURNAMENT | {"prices": prices}))
    assert f"prices.openai:x.{field}: Input should be" in info.value.message


def test_a_price_in_ponder_toml_is_held_to_the_same_rule(tmp_path: Path) -> None:
    config = tmp_path / "ponder.toml"
    config.write_text('[prices."openai:x"]\ninput = 1e308\noutput = 1.0\n')
    with pytest.raises(ConfigError, match=r"prices\.openai:x\.input: Input should be less than"):
        load_settings(config, home=str(tmp_path))
    config.write_text('[providers.openai.prices."x"]\ninput = -1.0\noutput = 1.0\n')
    with pytest.raises(ConfigError, match=r"providers\.openai\.prices\.x\.input: Input should"):
        load_settings(config, home=str(tmp_path))


def test_spend_stays_finite_and_non_negative_at_every_ceiling() -> None:
    dearest = Price(
        input=bounds.MAX_USD_PER_MTOK,
        output=bounds.MAX_USD_PER_MTOK,
        cache_hit=bounds.MAX_USD_PER_MTOK,
        long_context_threshold=0,
        long_context_input=bounds.MAX_USD_PER_MTOK,
        long_context_output=bounds.MAX_USD_PER_MTOK,
    )
    # A caller's usage beyond what providers may report is read at the ceiling, never beyond.
    huge = Usage(input_tokens=10**400, output_tokens=10**400, cache_hit_tokens=10**400)
    one_call = cost_usd(dearest, huge)
    assert one_call == 2 * bounds.MAX_USAGE_TOKENS * bounds.MAX_USD_PER_MTOK / 1e6
    assert math.isfinite(one_call * bounds.MAX_CALLS)
    odd = Usage(input_tokens=-10, output_tokens=-10, cache_hit_tokens=50)
    assert cost_usd(dearest, odd) == 0.0
    assert (
        cost_usd(Price(input=2.0, output=4.0), Usage(input_tokens=10**6, output_tokens=10**6)) == 6
    )


def test_a_provider_reporting_more_tokens_than_the_ceiling_is_a_broken_envelope() -> None:
    ctx = CallContext(
        call_id="r/p/0/0",
        call_key="p/0/0",
        run_id="r",
        phase="p",
        attempt=0,
        provider_name="local",
        model_name="m",
        endpoint=Endpoint(kind="openai", base_url="http://127.0.0.1:9/v1"),
        api_key=None,
        http=None,  # type: ignore[arg-type]  (parsing sends nothing)
        raw_events=None,  # type: ignore[arg-type]
    )
    body = openai_completion("hi") | {"usage": {"prompt_tokens": 10**30, "completion_tokens": 1}}
    with pytest.raises(TransportError, match="not a chat completion"):
        OpenAIProvider().parse_response(body, ModelRequest(model="local:m", prompt="p"), ctx)


# -- sim options -------------------------------------------------------------------------------

SIM_REFUSALS = [
    ("chars=100000000000", "sim chars=100000000000 must be between 0 and 100000 characters"),
    ("chars=100001", "must be between 0 and 100000 characters"),
    ("chars=-1", "must be between 0 and 100000 characters"),
    ("chars=1e11", "sim chars '1e11' needs a whole number"),
    ("latency=fixed:600001", "sim latency fixed 600001 ms must be between 0 and 600000 ms"),
    ("latency=fixed:1e308", "must be between 0 and 600000 ms"),
    ("latency=fixed:inf", "must be a finite number"),
    ("latency=uniform:5-9999999", "sim latency uniform bound 9999999 ms must be between"),
    ("latency=uniform:20-5", "give the lower bound first"),
    ("latency=lognormal:9999999,1", "sim latency lognormal median 9999999 ms must be between"),
    ("latency=lognormal:50,40", "sim lognormal sigma 40 must be between 0 and 3"),
    ("latency=sometimes", "is not 0, fixed:MS, uniform:A-B or lognormal:MEDIAN_MS,SIGMA"),
    ("accuracy=0.9999", "sim accuracy=0.9999 must be above 0.5 and at most 0.999"),
    ("accuracy=nan", "must be a finite number"),
    ("invalid_json_rate=2", "sim invalid_json_rate=2 must be between 0 and 1"),
    ("position_bias=1.5", "sim position_bias=1.5 must be between 0 and 1"),
    ("self_preference=-0.1", "sim self_preference=-0.1 must be between 0 and 1"),
    ("position_bias=nan", "must be a finite number"),
    ("family=Claude", "sim family='Claude' must be a lower-case name"),
    ("family=" + "a" * 33, "at most 32 characters"),
    ("color=blue", "is not one of accuracy=, latency=, invalid_json_rate=, chars="),
]


@pytest.mark.parametrize(("option", "needle"), SIM_REFUSALS, ids=[c[0] for c in SIM_REFUSALS])
def test_a_sim_option_past_its_bound_is_refused_at_decode(option: str, needle: str) -> None:
    with pytest.raises(InputInvalid) as info:
        decode_json(AskInput, json.dumps({"question": "q", "model": f"sim:default,{option}"}))
    assert info.value.message.startswith("AskInput: model: Value error, ")
    assert needle in info.value.message


@pytest.mark.parametrize(
    ("model", "base", "path"),
    [
        (TournamentInput, TOURNAMENT, ("model",)),
        (TournamentInput, TOURNAMENT, ("models", "judge")),
        (TournamentInput, TOURNAMENT, ("judges",)),
        (PlanRunInput, PLAN, ("executors", "claude")),
        (CampaignDocument, CAMPAIGN, ("variants",)),
    ],
)
def test_every_input_that_names_a_model_checks_sim_options(
    model: type[BaseModel], base: dict[str, Any], path: tuple[str, ...]
) -> None:
    spec = "sim:default,chars=100000000000"
    value: object = spec
    if path == ("judges",):  # a panel: the bad spec among good ones
        value = ["sim:default", spec]
    if path == ("variants",):  # a single-shot variant's model
        value = [{"id": "v", "kind": "single", "config": {"model": spec}}]
        raw = with_value(base, path, value)
        problems = validate_campaign(json.loads(raw)).errors
        assert any("chars=100000000000 must be between" in p.message for p in problems)
        return
    with pytest.raises(InputInvalid, match="chars=100000000000 must be between 0 and 100000"):
        decode_json(model, with_value(base, path, value))


def test_a_plan_step_model_checks_sim_options() -> None:
    document = {
        "schema": "ponder-plan/1",
        "name": "p",
        "steps": [
            {
                "id": "a",
                "kind": "agent",
                "prompt": "p",
                "model": "sim:default,latency=fixed:99999999",
            }
        ],
    }
    problems = validate_plan(json.dumps(document)).errors
    assert any("fixed 99999999 ms must be between 0 and 600000" in p.message for p in problems)


def test_sim_options_at_their_ceilings_parse_and_lognormal_takes_its_comma() -> None:
    spec = "sim:default,chars=100000,accuracy=0.999,invalid_json_rate=1,latency=uniform:0-600000"
    assert decode_json(AskInput, json.dumps({"question": "q", "model": spec})).model == spec
    options = SimOptions.parse("default,latency=lognormal:600000,3,chars=5")
    assert (options.latency, options.chars) == ("lognormal:600000,3", 5)
    draws = [options.latency_ms(random.Random(i)) for i in range(200)]
    assert max(draws) == bounds_sim.MAX_SIM_LATENCY_MS  # a long tail is cut at the ceiling


def test_a_workers_own_sim_endpoint_is_held_to_the_same_bounds(settings: Settings) -> None:
    # Decode checks the built-in sim: name; a kind = "sim" endpoint under another name is
    # refused when the call resolves it, before any text is built (provider.config).
    custom = settings.model_copy(
        update={"providers": settings.providers | {"fast": Endpoint(kind="sim")}}
    )
    with pytest.raises(ConfigError, match="chars=100000000000 must be between"):
        resolve_model("fast:default,chars=100000000000", custom)
    assert resolve_model("fast:default,chars=10", custom).endpoint.kind == "sim"


@pytest.mark.parametrize(
    ("model", "fields"),
    [
        (AskInput, {"question": "q", "temperature": 2.5}),
        (Profile, {"n": 4, "k": 2, "t": 1, "m": 2, "generate_temperature": 9}),
        (Profile, {"n": 4, "k": 2, "t": 1, "m": 2, "lambda": 1e6}),
    ],
)
def test_temperatures_and_lambda_have_ceilings(model: type, fields: dict[str, object]) -> None:
    with pytest.raises(ValidationError, match="less than or equal to"):
        model.model_validate(fields)


def test_a_recording_over_the_bound_is_refused_before_it_is_read(tmp_path: Path) -> None:
    from activities.providers.replay import read_recording

    recording = tmp_path / "raw-events.jsonl"
    with recording.open("wb") as file:  # sparse: costs no disk
        file.truncate(bounds.MAX_RECORDING_BYTES + 1)
    with pytest.raises(ConfigError, match="over the 268435456 bytes"):
        read_recording(recording)
    recording.write_bytes(b'{"call_key": "k"}\n')
    assert read_recording(recording) == [b'{"call_key": "k"}']


def test_who_decided_a_gate_is_a_short_printable_name() -> None:
    gate = {"step": "ship", "decision": "approve", "token": "0-abc"}
    assert decode_json(ResolveGateInput, json.dumps(gate)).by is None  # optional
    name = "a" * bounds.MAX_DECIDER_CHARS
    assert decode_json(ResolveGateInput, json.dumps(gate | {"by": name})).by == name
    for bad, needle in [
        (name + "a", "by: String should have at most 128 characters"),
        ("ada\nGATE: PASS", "by: String should match pattern"),
        ("", "by: String should have at least 1 character"),
    ]:
        with pytest.raises(InputInvalid) as info:
            decode_json(ResolveGateInput, json.dumps(gate | {"by": bad}))
        assert needle in info.value.message


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"judges": ["sim:a"]}, "judges: List should have at least 2 items"),
        ({"judges": [f"sim:j{i}" for i in range(10)]}, "judges: List should have at most 9 items"),
        ({"judges": ["sim:a", "sim:a"]}, "judge sim:a is named twice"),
        (
            {"judges": ["sim:a", "sim:b"], "models": {"judge": "sim:c"}},
            "give either judges (a panel) or models.judge (one judge), not both",
        ),
        ({"judge_orders": "three"}, "judge_orders: Input should be 'one' or 'both'"),
        ({"bootstrap_resamples": 10_001}, "bootstrap_resamples: Input should be less than or"),
        ({"bootstrap_resamples": -1}, "bootstrap_resamples: Input should be greater than or"),
        ({"write_interval_s": 86_401}, "write_interval_s: Input should be less than or"),
        ({"write_interval_s": -1}, "write_interval_s: Input should be greater than or"),
    ],
)
def test_judging_fields_past_their_bounds_are_refused_at_decode(
    fields: dict[str, Any], needle: str
) -> None:
    with pytest.raises(InputInvalid) as info:
        decode_json(TournamentInput, json.dumps({"task": "t", **fields}))
    assert needle in info.value.message
