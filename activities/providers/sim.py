"""The simulated provider: deterministic, free, labelled simulated everywhere.

Model names carry options after commas: ``sim:default,accuracy=0.95,latency=uniform:5-20,
invalid_json_rate=0.1,chars=600``. Every output is a pure function of ``(seed, call key)``
and the prompt: a generated candidate hides its quality ``q ~ N(0, 1)`` in a visible trailer
``[sim q=0.731 id=g0-c3]``; the judge reads the trailers of the two candidates in its prompt
(A first) and picks A with ``P = sigmoid(beta * (qA - qB))``, beta calibrated to the accuracy;
a mutant gets ``q = parent q + |N(0.3, 0.2)|``. A model with ``family=F`` writes ``family=F``
into its candidates' trailers; a judge with ``position_bias=P`` picks A with probability P
regardless of quality, one with ``length_bias=P`` picks the longer of the two with probability P,
and one with ``self_preference=P`` and ``family=F`` picks, with probability P, the candidate
whose trailer alone names F (drawn from a stream of their own, so a judge without them answers
exactly as before). A writer with ``chars=LOW-HIGH`` draws each answer's length between the two.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
from typing import Any

from activities import sim_math
from activities.errors import ConfigError
from activities.providers.base import CallContext
from activities.sim_math import parse_trailers, trailer_families
from workflows.model_types import ModelRequest, ModelResponse, Usage
from workflows.sim_options import SimOptions, SimOptionsError

__all__ = [
    "INLINE_OUTPUT_CHARS",
    "INLINE_PROMPT_CHARS",
    "SimOptions",
    "SimProvider",
    "sim_options",
    "simulate",
]

INLINE_OUTPUT_CHARS = 2_000
INLINE_PROMPT_CHARS = 16_000
"""A call whose output is at most ``INLINE_OUTPUT_CHARS`` and whose prompt at most
``INLINE_PROMPT_CHARS`` is simulated on the event loop: about 0.05 ms of CPU (0.1 ms at these
bounds) and a one-line append to the run's raw-event file (page cache, microseconds). A thread
hop for it cost more than the work: on a busy worker it was most of what a sim call cost
(``benchmarks/tournament_overhead``: a bare workflow's calls through ``call_model`` took 1.32x
the trivial activity's time with the hop and 1.13x without). Larger calls, and a judge whose
accuracy is not calibrated yet (a bisection, ``sim_math.is_calibrated``), still go to a
thread."""

_WORDS = [
    "consider",
    "the",
    "invariant",
    "first",
    "then",
    "verify",
    "each",
    "case",
    "carefully",
    "because",
    "the",
    "edge",
    "conditions",
    "decide",
    "correctness",
    "and",
    "a",
    "short",
    "proof",
    "keeps",
    "the",
    "answer",
    "honest",
]


@functools.lru_cache(maxsize=256)
def sim_options(model_name: str) -> SimOptions:
    """The options of ``model_name`` (``workflows/sim_options.py``), or a ConfigError.

    Remembered (frozen options, a few hundred model names): every sim call resolves and then
    simulates its model, and parsing validates a latency model each time."""
    try:
        return SimOptions.parse(model_name)
    except SimOptionsError as exc:
        raise ConfigError("model.options_invalid", str(exc)) from None


def _rng(seed: int, call_key: str, stream: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}:{call_key}:{stream}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _filler(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    length = 0
    while length < chars:
        word = rng.choice(_WORDS)
        words.append(word)
        length += len(word) + 1
    return " ".join(words)


def _candidate(heading: str, q: float, tag: str, rng: random.Random, options: SimOptions) -> str:
    family = f" family={options.family}" if options.family else ""
    chars = options.chars
    if options.chars_low is not None:  # only then drawn: a fixed length's output is unchanged
        chars = rng.randint(options.chars_low, options.chars)
    return f"{heading}\n{_filler(rng, chars)}\n[sim q={q:.3f} id={tag}{family}]"


def _biased(
    winner: str, request: ModelRequest, seed: int, call_key: str, options: SimOptions
) -> str:
    """The verdict after the judge's configured biases (position first, then self-preference)."""
    if not (options.position_bias or options.self_preference or options.length_bias):
        return winner
    rng = _rng(seed, call_key, "bias")
    if options.position_bias and rng.random() < options.position_bias:
        return "A"
    if options.length_bias:
        lengths = sim_math.candidate_lengths(request.prompt)
        if len(lengths) >= 2 and lengths[0] != lengths[1] and rng.random() < options.length_bias:
            return "A" if lengths[0] > lengths[1] else "B"
    families = [*trailer_families(request.prompt), None, None][:2]
    own = [letter for letter, f in zip("AB", families, strict=True) if f == options.family]
    if options.family and len(own) == 1 and rng.random() < options.self_preference:
        return own[0]
    return winner


def simulate(request: ModelRequest, seed: int, call_key: str, options: SimOptions) -> str:
    """The simulated output text for one call."""
    rng = _rng(seed, call_key, "output")
    task = request.prompt.strip().splitlines()[0][:120] if request.prompt.strip() else ""
    trailers = parse_trailers(request.prompt)
    tag = request.tag or call_key.replace("/", "-")
    if request.tag is None and request.role == "mutate":
        # A mutate run (ponder mutate) names no candidate and its one call's key is any Ask's:
        # the new candidate is named after the one it improves.
        tag = f"{trailers[0][1]}-mutated" if trailers else "mutated"
    if request.role == "judge":
        if rng.random() < options.invalid_json_rate:
            return "Both have merit; I lean towards the first one."
        (q_a, _), (q_b, _) = ([*trailers, (0.0, "?"), (0.0, "?")])[:2]
        p_a = sim_math.p_a_wins(q_a, q_b, sim_math.beta_for_accuracy(options.accuracy))
        winner = _biased("A" if rng.random() < p_a else "B", request, seed, call_key, options)
        loser = "B" if winner == "A" else "A"
        return json.dumps(
            {
                "feedback_a": f"Solution A {'holds up' if winner == 'A' else 'misses a case'}.",
                "feedback_b": f"Solution B {'holds up' if winner == 'B' else 'misses a case'}.",
                "winner": winner,
                "confidence": round(abs(p_a - 0.5) * 2, 3),
                "reason": f"Solution {winner} is more complete than solution {loser}.",
            }
        )
    if request.role in ("mutate", "finalize") and trailers:
        parent_q, parent_id = trailers[0]
        if request.role == "finalize":
            return _candidate(
                f"Simulated final answer from {parent_id}.", parent_q, parent_id, rng, options
            )
        q = parent_q + sim_math.mutation_gain(rng)
        return _candidate(f"Simulated improvement of {parent_id}.", q, tag, rng, options)
    q = sim_math.draw_quality(rng)
    return _candidate(f"Simulated answer to: {task}", q, tag, rng, options)


def _light(request: ModelRequest, options: SimOptions) -> bool:
    """Whether simulating ``request`` is cheap enough for the event loop (``INLINE_*``)."""
    prompt = len(request.prompt) + len(request.system or "")
    output = len(request.script) if request.script is not None else options.chars
    calibrated = request.role != "judge" or sim_math.is_calibrated(options.accuracy)
    return prompt <= INLINE_PROMPT_CHARS and output <= INLINE_OUTPUT_CHARS and calibrated


class SimProvider:
    """Records a synthetic exchange per call (``synthetic: true``, a ``sim:`` URL, no headers) in
    the run's raw events, so a simulated run can be replayed like a recorded HTTP one; the
    capture check counts it as the call's exchange, never as proof that HTTP was made."""

    kind = "sim"

    def wire_bodies(self, request: ModelRequest, ctx: CallContext) -> list[dict[str, Any]]:
        """The request as a chat completion would carry it (what wire replay keys on)."""
        messages = [{"role": "user", "content": request.prompt}]
        if request.system:
            messages.insert(0, {"role": "system", "content": request.system})
        body: dict[str, Any] = {"model": ctx.model_name, "messages": messages, "seed": request.seed}
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.max_output_tokens is not None:
            body["max_tokens"] = request.max_output_tokens
        if request.json_mode:
            body["response_format"] = {"type": "json_object"}
        return [body]

    async def request(self, request: ModelRequest, ctx: CallContext) -> ModelResponse:
        import asyncio  # here: a command resolving a sim model name (``sim_options``) needs none

        options = sim_options(ctx.model_name)
        delay = options.latency_ms(_rng(request.seed, ctx.call_key, "latency"))
        if delay:
            await asyncio.sleep(delay / 1000)

        def exchange() -> str:
            text = simulate(request, request.seed, ctx.call_key, options)
            if request.script is not None:  # a plan step's x-sim.outputs (docs/plans.md)
                text = request.script
            ctx.raw_events.append(
                {
                    "url": f"sim:{ctx.model_name}",
                    "synthetic": True,
                    "request": {"body": self.wire_bodies(request, ctx)[0]},
                    "response": {"status": 200, "body": {"text": text}},
                    "latency_ms": delay,
                }
            )
            return text

        # The event is on disk before the call ends. A large text (up to MAX_SIM_CHARS), a long
        # prompt's trailers and a new judge accuracy's calibration are CPU work that the event
        # loop (every run's) must not wait on: those go to a thread, with the append.
        text = exchange() if _light(request, options) else await asyncio.to_thread(exchange)
        return self.parse_response({"text": text}, request, ctx)

    def parse_response(self, body: Any, request: ModelRequest, ctx: CallContext) -> ModelResponse:
        text = body["text"]
        prompt_chars = len(request.prompt) + len(request.system or "")
        return ModelResponse(
            text=text,
            model=ctx.model_name,
            provider=ctx.provider_name,
            usage=Usage(
                input_tokens=prompt_chars // 4,
                output_tokens=len(text) // 4,
                cache_miss_tokens=prompt_chars // 4,
            ),
            usd=0.0,  # free, and says so itself: billing needs no sim special case
            simulated=True,
        )
