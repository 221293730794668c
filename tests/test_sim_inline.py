"""Which sim calls are simulated on the event loop and which in a thread (``activities/providers/
sim.py``): only those whose work is small and bounded stay on the loop."""

from __future__ import annotations

from activities import sim_math
from activities.providers import sim
from activities.providers.sim import INLINE_OUTPUT_CHARS, INLINE_PROMPT_CHARS, sim_options
from workflows.model_types import ModelRequest


def request(prompt: str = "Write a function.", **fields: object) -> ModelRequest:
    return ModelRequest(model="sim:default", prompt=prompt, **fields)  # type: ignore[arg-type]


def test_a_default_call_stays_on_the_loop() -> None:
    options = sim_options("default")
    assert options.chars <= INLINE_OUTPUT_CHARS
    assert sim._light(request(), options)
    assert sim._light(request("x" * INLINE_PROMPT_CHARS), options)


def test_large_work_goes_to_a_thread() -> None:
    options = sim_options("default")
    assert not sim._light(request("x" * (INLINE_PROMPT_CHARS + 1)), options)
    assert not sim._light(request("q", system="s" * INLINE_PROMPT_CHARS), options)
    assert not sim._light(request(), sim_options(f"default,chars={INLINE_OUTPUT_CHARS + 1}"))
    assert not sim._light(request(script="y" * (INLINE_OUTPUT_CHARS + 1)), options)
    assert sim._light(request(script="short"), sim_options("default,chars=90000"))


def test_a_judge_is_calibrated_in_a_thread_first() -> None:
    options = sim_options("default,accuracy=0.8123")
    judge = request(role="judge")
    assert not sim._light(judge, options)  # the bisection for a new accuracy
    sim_math.beta_for_accuracy(options.accuracy)  # what the first call computes
    assert sim._light(judge, options)
    assert sim._light(request(), sim_options("default,accuracy=0.777"))  # not a judge
