"""CEL's ``string()`` converts scalars only, in the worker's evaluator process (a real child).

cel-python alone gives ``string(list or map)`` its Python repr (``"[1, 2]"``), so a check could
pass or fail on how Python prints a value; the evaluator refuses it. A mutation that removed the
list/map guard once got past the suite: these cases fail when it is gone.
"""

from __future__ import annotations

from activities.plan.cel import CelEvaluator


async def test_string_of_a_list_or_a_map_is_an_error_and_of_a_scalar_a_string(
    evaluator: CelEvaluator,
) -> None:
    texts = [
        "string(result.l)",
        "string(result.m)",
        "result.l.string()",
        "string([1, 2])",
        "string(result.n)",
        "string(result.s)",
    ]
    result = await evaluator.evaluate(
        texts, {"result": {"l": [1, 2], "m": {"k": 1}, "n": 7, "s": "x"}}
    )
    outcomes = [(o.ok, o.value) for o in result.outcomes]
    assert outcomes[:4] == [(False, None)] * 4
    for outcome in result.outcomes[:4]:
        assert "string() takes a scalar" in (outcome.error or "")
    assert outcomes[4:] == [(True, "7"), (True, "x")]
