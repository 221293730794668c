"""The simulated provider's options (``sim:default,accuracy=0.95,chars=600``) and their bounds.

Pure, so workflow input is checked at decode: a ``sim:`` model whose options do not parse or
pass a ceiling is ``input.invalid`` before any activity runs, and the sim provider parses the
same way (a worker's own ``kind = "sim"`` endpoint under another name is refused there, as
``provider.config``). The ceilings keep one simulated call small and short: its text at most
``MAX_SIM_CHARS`` characters, its latency at most ``MAX_SIM_LATENCY_MS``.

The judge's biases, for measuring them (``workflows/tournament/judge_stats.py``):
``position_bias=P`` (0 to 1) picks the first presented candidate with probability P whatever
the qualities; ``self_preference=P`` (0 to 1) picks, with probability P, the one candidate of a
pair whose trailer names the judge's own ``family=`` (a name like ``claude``: letters, digits,
``_`` and ``-``, at most 32 characters). A generated or mutated candidate's trailer names its
model's ``family=`` when it has one. ``length_bias=P`` (0 to 1) picks, with probability P, the
longer of the two candidates; ``chars=LOW-HIGH`` on the model that writes them gives candidates
of varying length to measure it with.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator

__all__ = [
    "MAX_SIM_ACCURACY",
    "MAX_SIM_CHARS",
    "MAX_SIM_LATENCY_MS",
    "MAX_SIM_SIGMA",
    "SIM_PROVIDER",
    "ModelSpec",
    "SimOptions",
    "SimOptionsError",
    "check_model_spec",
]

SIM_PROVIDER = "sim"
"""The built-in simulated endpoint's name: the specs decode checks."""
MAX_SIM_CHARS = 100_000
"""``chars=``: the filler text of one simulated answer."""
MAX_SIM_LATENCY_MS = 600_000.0
"""Every latency number (``fixed:MS``, ``uniform:A-B``, a lognormal's median), and every draw."""
MAX_SIM_SIGMA = 3.0
"""A lognormal latency's sigma."""
MAX_SIM_ACCURACY = 0.999
"""``accuracy=`` is in (0.5, 0.999]: closer to 1 the judge's beta has no finite calibration."""

_FAMILY = re.compile(r"[a-z][a-z0-9_-]{0,31}")
_OPTION_NAMES = (
    "accuracy=, latency=, invalid_json_rate=, chars=, position_bias=, self_preference=, "
    "length_bias=, family="
)
_LATENCY_FORMS = "0, fixed:MS, uniform:A-B or lognormal:MEDIAN_MS,SIGMA"


class SimOptionsError(ValueError):
    """A sim model option that does not parse or passes its ceiling; the message says the fix."""


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise SimOptionsError(f"sim {what} {text!r} needs a number") from None
    if not math.isfinite(value):
        raise SimOptionsError(f"sim {what} {text!r} must be a finite number")
    return value


def _ms(text: str, what: str) -> float:
    value = _number(text, what)
    if not 0.0 <= value <= MAX_SIM_LATENCY_MS:
        raise SimOptionsError(
            f"sim latency {what} {text} ms must be between 0 and {MAX_SIM_LATENCY_MS:.0f} ms "
            "(10 minutes): lower it"
        )
    return value


@dataclass(frozen=True)
class SimOptions:
    accuracy: float = 0.85
    latency: str = "0"
    invalid_json_rate: float = 0.0
    chars: int = 400
    """The filler of one answer; with ``chars=LOW-HIGH`` the longest one drawn."""
    chars_low: int | None = None
    """``chars=LOW-HIGH``: each answer's filler is drawn between the two (None: all ``chars``)."""
    position_bias: float = 0.0
    self_preference: float = 0.0
    length_bias: float = 0.0
    family: str | None = None

    @classmethod
    def parse(cls, model_name: str) -> SimOptions:
        """The options of ``model_name`` (what follows ``sim:``), or :class:`SimOptionsError`."""
        _, *parts = model_name.split(",")
        values: dict[str, Any] = {}
        previous = ""
        for part in parts:
            key, sep, value = part.partition("=")
            if not sep and previous == "latency":  # lognormal:MEDIAN,SIGMA holds a comma
                values["latency"] += f",{part}"
                continue
            if not sep or key not in cls.__dataclass_fields__:
                raise SimOptionsError(
                    f"sim model option {part!r} is not one of {_OPTION_NAMES}: fix the model spec"
                )
            values[key] = value
            previous = key
        options = cls(
            accuracy=_number(values.get("accuracy", str(cls.accuracy)), "accuracy"),
            latency=values.get("latency", cls.latency),
            invalid_json_rate=_number(
                values.get("invalid_json_rate", str(cls.invalid_json_rate)), "invalid_json_rate"
            ),
            chars=_chars_range(values.get("chars", str(cls.chars)))[1],
            chars_low=_chars_range(values.get("chars", str(cls.chars)))[0],
            position_bias=_probability(values, "position_bias"),
            self_preference=_probability(values, "self_preference"),
            length_bias=_probability(values, "length_bias"),
            family=_family(values.get("family")),
        )
        if not 0.5 < options.accuracy <= MAX_SIM_ACCURACY:
            raise SimOptionsError(
                f"sim accuracy={options.accuracy:g} must be above 0.5 and at most "
                f"{MAX_SIM_ACCURACY}: fix the model spec"
            )
        if not 0.0 <= options.invalid_json_rate <= 1.0:
            raise SimOptionsError(
                f"sim invalid_json_rate={options.invalid_json_rate:g} must be between 0 and 1"
            )
        options.latency_ms(random.Random(0))  # validate the latency model now
        return options

    def latency_ms(self, rng: random.Random) -> float:
        """One call's simulated latency, at most ``MAX_SIM_LATENCY_MS``."""
        kind, _, args = self.latency.partition(":")
        if kind == "0" and not args:
            return 0.0
        if kind == "fixed":
            return _ms(args, "fixed")
        if kind == "uniform" and args.count("-") == 1:
            low, high = (_ms(x, "uniform bound") for x in args.split("-"))
            if low > high:
                raise SimOptionsError(f"sim latency uniform:{args}: give the lower bound first")
            return rng.uniform(low, high)
        if kind == "lognormal" and args.count(",") == 1:
            median_text, sigma_text = args.split(",")
            median = _ms(median_text, "lognormal median")
            sigma = _number(sigma_text, "lognormal sigma")
            if not 0.0 <= sigma <= MAX_SIM_SIGMA:
                raise SimOptionsError(
                    f"sim lognormal sigma {sigma_text} must be between 0 and {MAX_SIM_SIGMA:g}"
                )
            return min(median * rng.lognormvariate(0.0, sigma), MAX_SIM_LATENCY_MS)
        raise SimOptionsError(f"sim latency {self.latency!r} is not {_LATENCY_FORMS}")


def _probability(values: dict[str, Any], name: str) -> float:
    """A judge bias knob: a probability, 0 (the default: no bias) to 1."""
    value = _number(values.get(name, "0"), name)
    if not 0.0 <= value <= 1.0:
        raise SimOptionsError(f"sim {name}={value:g} must be between 0 and 1: fix the model spec")
    return value


def _family(text: str | None) -> str | None:
    if text is not None and not _FAMILY.fullmatch(text):
        raise SimOptionsError(
            f"sim family={text!r} must be a lower-case name (a letter, then letters, digits, "
            "'_' or '-'; at most 32 characters), e.g. family=claude"
        )
    return text


def _chars(text: str) -> int:
    try:
        chars = int(text)
    except ValueError:
        raise SimOptionsError(f"sim chars {text!r} needs a whole number") from None
    if not 0 <= chars <= MAX_SIM_CHARS:
        raise SimOptionsError(
            f"sim chars={text} must be between 0 and {MAX_SIM_CHARS} characters: lower it"
        )
    return chars


def _chars_range(text: str) -> tuple[int | None, int]:
    """``chars=N`` (every answer's filler N characters) or ``chars=LOW-HIGH`` (each drawn
    between them)."""
    low, dash, high = text.partition("-")
    if not (dash and low):  # "-1" is a (refused) number, not a range
        return None, _chars(text)
    lo, hi = _chars(low), _chars(high)
    if lo > hi:
        raise SimOptionsError(f"sim chars={text}: LOW-HIGH needs LOW <= HIGH")
    return lo, hi


def check_model_spec(spec: str) -> str:
    """``spec``, if it is not a ``sim:`` model whose options are refused (a ValueError says why:
    pydantic reports it as the field's error)."""
    provider, _, model = spec.partition(":")
    if provider.strip() == SIM_PROVIDER:
        SimOptions.parse(model)
    return spec


ModelSpec = Annotated[str, AfterValidator(check_model_spec)]
"""A ``provider:model`` field of workflow input: ``sim:`` options are checked at decode."""
