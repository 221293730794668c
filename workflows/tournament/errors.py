"""The one tournament error and its closed list of codes.

```
TournamentError(code, message)     a domain refusal or failure of a tournament run
    profile.invalid                a profile field breaks a rule (n, k, t, m, lambda, temperatures)
    profile.too_large              the run's history would pass half of Temporal's limits
    rank.k_required                rank mode k-regular without rank.k
    rank.k_invalid                 rank.k cannot form a k-regular schedule over n candidates
    rank.max_calls_required        all-pairs over 100 pairs without a large enough rank.max_calls
    rank.max_calls_exceeded        the rank block needs more calls than its rank.max_calls
    budget.planned_calls_exceeded  the plan's nominal calls exceed max_calls (preflight)
    budget.unpriced_model          max_usd with a model that has no price
    budget.exhausted               a limit was reached with on_budget_exhausted="fail"
    prompts.unknown_variable       a prompt override names a {variable} its role does not have
    judge.persistent_invalid_json  every attempt of one judge call returned unparseable output
    run.id_invalid                 the run id breaks [A-Za-z0-9][A-Za-z0-9._-]*, <= 128 chars
    run.id_in_use                  a live run already has this id
    provider.<failure class>       a model call failed (prefix family, e.g. provider.auth)
```

The code travels as ``ApplicationError.type`` when a workflow fails for a domain reason. Messages
name the field, the rule it broke and the fix, in one line. A ``PonderError`` (the one error
model, ``workflows.errors``): ``str()`` is ``code: message``, as saved histories have it.
"""

from __future__ import annotations

import re

from workflows.errors import PonderError

__all__ = [
    "BUDGET_EXHAUSTED",
    "BUDGET_PLANNED_CALLS_EXCEEDED",
    "BUDGET_UNPRICED_MODEL",
    "CODES",
    "JUDGE_PERSISTENT_INVALID_JSON",
    "PROFILE_INVALID",
    "PROFILE_TOO_LARGE",
    "PROMPTS_UNKNOWN_VARIABLE",
    "PROVIDER_PREFIX",
    "RANK_K_INVALID",
    "RANK_K_REQUIRED",
    "RANK_MAX_CALLS_EXCEEDED",
    "RANK_MAX_CALLS_REQUIRED",
    "RUN_ID_INVALID",
    "RUN_ID_IN_USE",
    "TournamentError",
    "is_known_code",
    "provider_code",
]

PROFILE_INVALID = "profile.invalid"
PROFILE_TOO_LARGE = "profile.too_large"
RANK_K_REQUIRED = "rank.k_required"
RANK_K_INVALID = "rank.k_invalid"
RANK_MAX_CALLS_REQUIRED = "rank.max_calls_required"
RANK_MAX_CALLS_EXCEEDED = "rank.max_calls_exceeded"
BUDGET_PLANNED_CALLS_EXCEEDED = "budget.planned_calls_exceeded"
BUDGET_UNPRICED_MODEL = "budget.unpriced_model"
BUDGET_EXHAUSTED = "budget.exhausted"
PROMPTS_UNKNOWN_VARIABLE = "prompts.unknown_variable"
JUDGE_PERSISTENT_INVALID_JSON = "judge.persistent_invalid_json"
RUN_ID_INVALID = "run.id_invalid"
RUN_ID_IN_USE = "run.id_in_use"
PROVIDER_PREFIX = "provider."
_PROVIDER_CODE = re.compile(r"provider\.[a-z][a-z0-9_]*")

CODES: frozenset[str] = frozenset(
    {
        PROFILE_INVALID,
        PROFILE_TOO_LARGE,
        RANK_K_REQUIRED,
        RANK_K_INVALID,
        RANK_MAX_CALLS_REQUIRED,
        RANK_MAX_CALLS_EXCEEDED,
        BUDGET_PLANNED_CALLS_EXCEEDED,
        BUDGET_UNPRICED_MODEL,
        BUDGET_EXHAUSTED,
        PROMPTS_UNKNOWN_VARIABLE,
        JUDGE_PERSISTENT_INVALID_JSON,
        RUN_ID_INVALID,
        RUN_ID_IN_USE,
    }
)


def is_known_code(code: str) -> bool:
    """True for a code of the closed list or a ``provider.<class>`` code."""
    return code in CODES or _PROVIDER_CODE.fullmatch(code) is not None


def provider_code(failure_class: str) -> str:
    """The code of a provider failure class, e.g. ``auth`` -> ``provider.auth``."""
    code = f"{PROVIDER_PREFIX}{failure_class}"
    if not is_known_code(code):
        raise ValueError(
            f"provider failure class {failure_class!r} is not a lower-case word: "
            "use letters, digits and underscores"
        )
    return code


class TournamentError(PonderError):
    """A tournament refusal or failure with a stable code from the closed list."""

    def __init__(self, code: str, message: str) -> None:
        # An unlisted code is a bug in the caller, not a user mistake: refuse it loudly so the
        # documented list stays the whole truth.
        if not is_known_code(code):
            raise ValueError(f"unknown tournament error code {code!r}: add it to errors.CODES")
        super().__init__(code, message)
